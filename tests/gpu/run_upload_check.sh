#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: a PyTorch loop recorded by gpufl (Trace with CPU stacks), uploaded by
# `gpufl upload` to a gpufl-server started there (SQLite), then the server's insights and report
# against `gpufl insights` and `gpufl report` on the same logs, byte for byte. Writes under OUT_DIR.
# Usage: tests/gpu/run_upload_check.sh OUT_DIR   (needs .devbin/ from build_for_device.sh)
set -uo pipefail
if [[ "${1:-}" == "--help" || $# -ne 1 ]]; then
  sed -n '3,6p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -eq 1 ]] && exit 0 || exit 2
fi
cd "$(dirname "$0")/../.." || exit 1
out=$1
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/.devbin/python:$PWD/tests/gpu
work=$(mktemp -d)
session=$(python3 tests/gpu/upload_workload.py "$work/logs" 30 2>"$out/workload_stderr.txt" | tail -1)
echo "session: $session" | tee "$out/upload.txt"
db=$work/server.db
.devbin/gpufl-server --db "sqlite:$db" admin workspace create gpu >>"$out/upload.txt" 2>&1
.devbin/gpufl-server --db "sqlite:$db" admin key create --workspace gpu --role admin >"$work/key"
port=18080
.devbin/gpufl-server --db "sqlite:$db" --listen 127.0.0.1:$port --quiet-s 2 2>"$out/server_stderr.txt" &
srv=$!
for i in $(seq 50); do curl -s -o /dev/null "127.0.0.1:$port/healthz" && break; sleep 0.1; done
.devbin/gpufl upload --server "http://127.0.0.1:$port" --api-key-file "$work/key" "$session" \
  >>"$out/upload.txt" 2>&1
echo "upload exit $?" >>"$out/upload.txt"
sid=$(basename "$session")
key=$(cat "$work/key")
# The report is built once the session is complete (upload sends session-complete).
for i in $(seq 100); do
  code=$(curl -s -o "$out/server_insights.json" -w '%{http_code}' -H "Authorization: Bearer $key" \
    "127.0.0.1:$port/api/v1/sessions/$sid/insights?format=json")
  [[ $code == 200 ]] && break
  sleep 0.2
done
curl -s -H "Authorization: Bearer $key" "127.0.0.1:$port/api/v1/sessions/$sid/insights?format=text" \
  >"$out/server_insights.txt"
curl -s -H "Authorization: Bearer $key" "127.0.0.1:$port/api/v1/sessions/$sid/report?format=text" \
  >"$out/server_report.txt"
curl -s -H "Authorization: Bearer $key" "127.0.0.1:$port/api/v1/sessions/$sid/kernels?limit=5" \
  >"$out/server_kernels.json"
kill -TERM $srv; wait $srv
.devbin/gpufl insights --format json "$session" >"$out/cli_insights.json"
.devbin/gpufl insights "$session" >"$out/cli_insights.txt"
.devbin/gpufl report "$session" >"$out/cli_report.txt"
tar czf "$out/session.tgz" -C "$(dirname "$session")" "$sid"
for f in insights.json insights.txt report.txt; do
  if cmp -s "$out/server_$f" "$out/cli_$f"; then
    echo "PASS  server $f equals gpufl's ($(wc -c <"$out/cli_$f") bytes)"
  else
    echo "FAIL  server $f differs from gpufl's"; diff "$out/server_$f" "$out/cli_$f" | head -20
  fi
done | tee "$out/compare.txt"
grep -c '"severity"' "$out/cli_insights.json" | sed 's/^/insights in the CLI json: /' | tee -a "$out/compare.txt"
