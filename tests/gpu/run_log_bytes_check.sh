#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: a PyTorch loop recorded under the Trace engine (with CPU stacks) long
# enough for >= 100 000 kernels, then its device log's bytes per kernel, plain and compact, raw
# and gzipped (bench/log_bytes_of.py), and `gpufl report` on it (the compact lines read back).
# Usage: tests/gpu/run_log_bytes_check.sh OUT_DIR [STEPS] [--no-stacks]   (needs .devbin/
# from build_for_device.sh)
set -uo pipefail
if [[ "${1:-}" == "--help" || $# -lt 1 ]]; then
  sed -n '3,7p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -ge 1 ]] && exit 0 || exit 2
fi
cd "$(dirname "$0")/../.." || exit 1
out=$1
steps=${2:-3000}
stacks=${3:-}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/.devbin/python:$PWD/tests/gpu
work=$(mktemp -d)
SECONDS=0
session=$(python3 tests/gpu/upload_workload.py "$work/logs" "$steps" $stacks 2>"$out/workload_stderr.txt" |
  tail -1)
echo "session: $session ($steps steps${stacks:+, $stacks}, ${SECONDS} s)" | tee "$out/bytes.txt"
python3 bench/log_bytes_of.py "$session" >>"$out/bytes.txt" 2>&1
echo "log_bytes_of exit $?" >>"$out/bytes.txt"
.devbin/gpufl report "$session" >"$out/report.txt" 2>"$out/report_stderr.txt"
echo "report exit $?" >>"$out/bytes.txt"
head -c 400 "$session/device.log" >"$out/device_head.txt"
grep -m1 '"type":"kernel"' "$session/device.log" | head -c 3000 >"$out/kernel_line.txt"
# GPUFL_KEEP_SESSION=1: the session itself, for encoding work elsewhere
[[ ${GPUFL_KEEP_SESSION:-0} == 1 ]] &&
  tar -C "$(dirname "$session")" -cJf "$out/session.tar.xz" "$(basename "$session")"
rm -rf "$work"
