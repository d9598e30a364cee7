#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpufl-monitor's /metrics through Prometheus's own tools, on the synthetic
# snapshots of tests/unit/mon_fixture.h: `promtool check metrics` (parse and
# lint) on the text format 0.0.4, and the OpenMetrics 1.0 text through the
# strict parser of python3-prometheus-client (promtool parses 0.0.4 only).
# Exit 77 (skipped) without promtool: Debian's prometheus package ships it.
set -u
tool=$1
python=${GPUFL_PYTHON3:-/usr/bin/python3}
if ! command -v promtool >/dev/null; then
    echo "promtool not installed (Debian package prometheus): check skipped"
    exit 77
fi
fail=0
for snap in full host; do
    out=$("$tool" --render "$snap" | promtool check metrics 2>&1)
    if [[ $? != 0 || -n $out ]]; then
        echo "FAIL: promtool on text 0.0.4 ($snap):"
        echo "$out"
        fail=1
    fi
done
# dcgm-exporter's names break Prometheus's naming rules on purpose (camelCase
# labels, a counter without _total): those lint lines are expected, no other.
out=$("$tool" --render full --dcgm | promtool check metrics 2>&1)
rc=$?
other=$(grep -v '^DCGM_' <<<"$out")
if [[ $rc != 0 && $rc != 3 ]] || [[ -n $other ]]; then
    echo "FAIL: promtool on text 0.0.4 with --dcgm-compat (rc $rc):"
    echo "$other"
    fail=1
fi
if "$python" -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then
    for args in "full --dcgm" "host"; do
        # shellcheck disable=SC2086
        if ! "$tool" --render $args --openmetrics | "$python" -c '
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse
families = list(parse(sys.stdin.read()))
assert families, "no family"
'; then
            echo "FAIL: OpenMetrics parser ($args)"
            fail=1
        fi
    done
else
    echo "python3-prometheus-client not installed: OpenMetrics parse skipped"
fi
[[ $fail == 0 ]] && echo "promtool check metrics: text 0.0.4 clean; OpenMetrics parsed"
exit $fail
