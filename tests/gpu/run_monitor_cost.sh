#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: the CPU time and peak RSS of gpufl-monitor
# (--interval-ms 1000) and of `nvidia-smi dmon -d 1` (the same interval), side
# by side for the same DURATION_S seconds, from /proc/<pid>/stat and status.
# Usage: tests/gpu/run_monitor_cost.sh OUT_DIR [DURATION_S]   (needs .devbin/)
set -uo pipefail
if [[ "${1:-}" == "--help" || $# -lt 1 ]]; then
  sed -n '3,7p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -ge 1 ]] && exit 0 || exit 2
fi
cd "$(dirname "$0")/../.." || exit 1
out=$1 duration=${2:-30}
mkdir -p "$out"
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: not a GPU machine"; exit 77; }
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
logs=$(mktemp -d)
.devbin/gpufl-monitor --interval-ms 1000 --log-path "$logs" --listen 127.0.0.1:19465 \
  2>"$out/cost_monitor_stderr.txt" &
mon=$!
nvidia-smi dmon -d 1 >"$out/cost_dmon.txt" 2>&1 &
dmon=$!
sleep 3 # both past their start-up
m0=$(ticks $mon) d0=$(ticks $dmon) t0=$(date +%s.%N)
sleep "$duration"
m1=$(ticks $mon) d1=$(ticks $dmon) t1=$(date +%s.%N)
mhwm=$(awk '/VmHWM/ {print $2}' /proc/$mon/status) mrss=$(awk '/VmRSS/ {print $2}' /proc/$mon/status)
dhwm=$(awk '/VmHWM/ {print $2}' /proc/$dmon/status) drss=$(awk '/VmRSS/ {print $2}' /proc/$dmon/status)
kill -TERM $mon; wait $mon; mexit=$?
kill $dmon; wait $dmon 2>/dev/null
python3 - "$hz" "$t0" "$t1" "$m0" "$m1" "$d0" "$d1" "$mrss" "$mhwm" "$drss" "$dhwm" "$mexit" <<'PY' | tee "$out/cost.txt"
import sys
hz, t0, t1 = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
m0, m1, d0, d1 = (float(x) for x in sys.argv[4:8])
mrss, mhwm, drss, dhwm, mexit = (int(x) for x in sys.argv[8:13])
wall = t1 - t0
for name, a, b, rss, hwm in (("gpufl-monitor", m0, m1, mrss, mhwm), ("nvidia-smi dmon", d0, d1, drss, dhwm)):
    print(f"{name:16s} CPU {100 * (b - a) / hz / wall:.3f} % of one core over {wall:.1f} s, "
          f"RSS {rss / 1024:.2f} MiB, peak {hwm / 1024:.2f} MiB")
print(f"gpufl-monitor exit {mexit}")
PY
