#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: the launch-bound workload only, many short rounds
# of untraced, minimal CUPTI tracer, gpufl Trace, gpufl Trace with CPU stacks
# (enable_stack_trace), and gpufl Trace without one
# part (the external-id look; with the diagnosis builds of
# tests/gpu/build_for_device.sh, the work at the driver calls, or the joining
# and writing of records), and the added cost of each as the median over rounds of
# (variant - untraced in the same round), with quartiles. More rounds than
# run_trace_overhead.sh in the same time, for a host whose launch loop is noisy.
set -uo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  echo "usage: bench/gpu/paired_launch_overhead.sh [ROUNDS]   (default 15; needs .devbin/trace_overhead)"
  echo "  VARIANTS=\"untraced trace ...\" picks the variants (default: all, trace-stacks included:"
  echo "  Trace with enable_stack_trace; trace-before: Trace in the build of bench/gpu/build_before.sh)"
  exit 0
fi
rounds=${1:-15}
cd "$(dirname "$0")/../.." || exit 1
bin=.devbin/trace_overhead
[[ -x $bin ]] || { echo "FAIL  $bin not found: run tests/gpu/build_for_device.sh first"; exit 1; }
runs=${TMPDIR:-/tmp}/paired_launch_overhead_runs.txt
for ((r = 1; r <= rounds; r++)); do
  for v in ${VARIANTS:-untraced minimal trace trace-stacks trace-external trace-no-notes trace-no-rows}; do
    env=() cfg=$v run=$bin
    case $v in
      trace-external) cfg=trace; env=(GPUFL_ENABLE_EXTERNAL_CORRELATION=0) ;;
      trace-stacks) cfg=trace; env=(GPUFL_ENABLE_STACK_TRACE=1) ;;
      trace-no-notes) cfg=trace; run=${bin}_no_notes ;;
      trace-no-rows) cfg=trace; run=${bin}_no_rows ;;
      trace-before) cfg=trace; run=${bin}_before ;;
    esac
    [[ -x $run ]] || continue
    env "${env[@]}" "$run" "$cfg" --workload launch --reps 3 --round "$r" \
      --log-dir /tmp/gpufl-paired 2>/dev/null | grep 'kind=run' | sed "s/^/variant=$v /"
    rm -rf /tmp/gpufl-paired
  done
done > "$runs"
echo "runs: $runs"
python3 - "$runs" <<'PY'
import collections, re, statistics, sys
per = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    v = re.search(r"variant=(\S+)", line).group(1)
    r = int(re.search(r"round=(\d+)", line).group(1))
    per[r][v].append(float(re.search(r"us_per_kernel=([\d.]+)", line).group(1)))
order = ["minimal", "trace", "trace-before", "trace-stacks", "trace-external", "trace-no-notes", "trace-no-rows"]
seen = {v for d in per.values() for v in d}
variants = [v for v in order if v in seen]
added = {v: [] for v in variants}
for r, d in sorted(per.items()):
    if not d["untraced"]:
        continue
    base = statistics.median(d["untraced"])
    for v in variants:
        if d[v]:
            added[v].append(statistics.median(d[v]) - base)
for v in variants:
    x = sorted(added[v])
    if not x:
        print(f"{v:16s} no runs")
        continue
    n = len(x)
    print(f"{v:16s} rounds {n}  added median {statistics.median(x):.3f} us/kernel  "
          f"quartiles {x[n // 4]:.3f} .. {x[(3 * n) // 4]:.3f}")
if added.get("minimal") and added.get("trace"):
    print(f"trace/minimal added ratio {statistics.median(added['trace']) / statistics.median(added['minimal']):.2f}")
if added.get("trace-before") and added.get("trace"):
    print(f"trace/trace-before added ratio {statistics.median(added['trace']) / statistics.median(added['trace-before']):.3f}")
base = [statistics.median(d["untraced"]) for d in per.values() if d["untraced"]]
print(f"untraced per-round median us/kernel: median {statistics.median(base):.3f}, "
      f"range {min(base):.3f}..{max(base):.3f}")
PY
