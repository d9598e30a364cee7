#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: the tracing-overhead benchmark (trace_overhead.cu),
# one process per configuration, alternating untraced, monitor, trace, minimal
# round after round so that their figures are side by side, then the summary
# with the targets (summarize_overhead.py). Expects .devbin/ from
# tests/gpu/build_for_device.sh.
set -uo pipefail

usage() {
  cat <<EOF
usage: bench/gpu/run_trace_overhead.sh OUTDIR [--rounds N] [--reps N] [--keep-logs] [--with-pcsampling]
  OUTDIR        where runs.txt (every result line), summary.txt, stderr and the
                capability records of each gpufl session go
  --rounds N    rounds of the configurations (default 5, at least 5 for the summary)
  --reps N      timed runs of each workload inside each process (default 3)
  --keep-logs   keep the gpufl session logs (tens of MB per Trace run) under OUTDIR/logs
  --with-pcsampling  also the PcSampling engine in each round (its cost on each launch)
Exit status: 0 when every target passes, 1 when one fails or a run failed.
EOF
}

if [[ $# -lt 1 ]]; then usage >&2; exit 2; fi
if [[ $1 == --help || $1 == -h ]]; then usage; exit 0; fi
out=$1
shift
rounds=5 reps=3 keep=0 configs="untraced monitor trace minimal"
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --keep-logs) keep=1; shift ;;
    --with-pcsampling) configs="$configs pcsampling"; shift ;;
    *) usage >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/../.." || exit 1
bin=.devbin/trace_overhead
if [[ ! -x $bin ]]; then
  echo "FAIL  $bin not found: run tests/gpu/build_for_device.sh on the development machine first"
  exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ $keep == 1 ]]; then logs=$out/logs; else logs=$(mktemp -d /tmp/gpufl-overhead.XXXXXX); fi
mkdir -p "$logs"
runs=$out/runs.txt
: > "$runs"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>&1
  echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "rounds=$rounds reps=$reps"
} | tee "$out/machine.txt"

# One iteration count for every process, so compute-bound runs do the same work.
cal=$("$bin" calibrate 2>>"$out/stderr.txt")
echo "calibrate: $cal"
iters=$(sed -n 's/.*compute_iters=\([0-9]*\).*/\1/p' <<<"$cal")
if [[ -z $iters ]]; then
  echo "FAIL  calibration printed no compute_iters (stderr: $out/stderr.txt)"
  exit 1
fi
echo "kind=calibration $cal" >> "$runs"

failed=0
for ((r = 1; r <= rounds; r++)); do
  for cfg in $configs; do
    dir=$logs/$cfg-$r
    mkdir -p "$dir"
    # Not pinned to cores: pinning (measured, 4 cores) crowds Trace's extra
    # threads (collector, samplers) onto the launching thread's cores.
    "$bin" "$cfg" --round "$r" --reps "$reps" --compute-iters "$iters" --log-dir "$dir" \
      > "$out/last.txt" 2>> "$out/stderr-$cfg.txt"
    rc=$?
    cat "$out/last.txt" >> "$runs"
    echo "kind=exit config=$cfg round=$r rc=$rc" >> "$runs"
    grep -E '^(FAIL|kind=run)' "$out/last.txt" | sed "s/^/[$r $cfg] /" | cut -c1-160
    [[ $rc == 0 ]] || { failed=1; echo "[$r $cfg] exited $rc"; }
    # Keep the capability record and the session end of each gpufl session.
    for f in "$dir"/*/device.log; do
      [[ -f $f ]] && grep -hE '"type":"(capabilities|session_end|event)"' "$f" \
        | sed "s/^/$cfg-$r: /" >> "$out/sessions.txt"
    done
    [[ $keep == 1 ]] || rm -rf "$dir"
  done
done
rm -f "$out/last.txt"
[[ $keep == 1 ]] || rmdir "$logs" 2>/dev/null

python3 bench/gpu/summarize_overhead.py "$runs" | tee "$out/summary.txt"
status=${PIPESTATUS[0]}
[[ $failed == 0 ]] || echo "some runs failed: see $runs and $out/stderr-*.txt"
[[ $status == 0 && $failed == 0 ]]
