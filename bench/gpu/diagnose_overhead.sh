#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: splits the Trace engine's launch overhead into its
# parts. The launch-bound workload of trace_overhead.cu under the minimal
# CUPTI tracer with one more CUPTI feature at a time (activity kinds, the
# synchronization kind, a callback subscriber, a timestamp callback), and
# under gpufl Trace with its parts switched off one at a time (the
# external-id look by its option; the work at the driver calls and the
# joining and writing of records by diagnosis builds of the library),
# alternating round after round, each pinned to the same four CPU cores. Prints min
# and median us/kernel per variant.
set -uo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  echo "usage: bench/gpu/diagnose_overhead.sh [ROUNDS]   (default 5; needs .devbin/trace_overhead)"
  exit 0
fi
rounds=${1:-5}
cd "$(dirname "$0")/../.." || exit 1
bin=.devbin/trace_overhead
[[ -x $bin ]] || { echo "FAIL  $bin not found: run tests/gpu/build_for_device.sh first"; exit 1; }
variants=(untraced minimal minimal+kinds minimal+sync minimal+callbacks minimal+peek
          minimal+timestamp trace trace-external trace-no-notes trace-no-rows)
for ((r = 1; r <= rounds; r++)); do
  for v in "${variants[@]}"; do
    env=() cfg=$v run=$bin
    case $v in
      minimal+*) cfg=minimal; env=(TRACE_OVERHEAD_MINIMAL_EXTRA=${v#minimal+}) ;;
      trace-external) cfg=trace; env=(GPUFL_ENABLE_EXTERNAL_CORRELATION=0) ;;
      # Builds of the library without one part (tests/gpu/build_for_device.sh):
      # no work at the driver calls; records counted but not joined or written.
      trace-no-notes) cfg=trace; run=${bin}_no_notes ;;
      trace-no-rows) cfg=trace; run=${bin}_no_rows ;;
    esac
    # Each variant on the same four cores: the launch loop's time moves less
    # (fair among the CUPTI variants; see run_trace_overhead.sh for Trace).
    env "${env[@]}" taskset -c 2-5 "$run" "$cfg" --workload launch --reps 3 --round "$r" \
      --log-dir /tmp/gpufl-diagnose 2>/dev/null | grep 'kind=run' | sed "s/^/variant=$v /"
    rm -rf /tmp/gpufl-diagnose
  done
done | tee "${TMPDIR:-/tmp}/diagnose_overhead_runs.txt" | python3 -c '
import re, statistics, sys
runs = {}
for line in sys.stdin:
    v = re.search(r"variant=(\S+)", line).group(1)
    runs.setdefault(v, []).append(float(re.search(r"us_per_kernel=([\d.]+)", line).group(1)))
base = runs.get("untraced", [0])
print("%-22s%5s%8s%8s%12s%12s" % ("variant", "runs", "min", "median", "added(min)", "added(med)"))
for v, xs in runs.items():
    print(f"{v:<22}{len(xs):>5}{min(xs):>8.3f}{statistics.median(xs):>8.3f}"
          f"{min(xs) - min(base):>12.3f}{statistics.median(xs) - statistics.median(base):>12.3f}")
'
