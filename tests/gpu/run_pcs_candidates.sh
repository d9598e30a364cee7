#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: PcSampling's candidates for keeping Trace's kernel
# times, copies and syncs beside PC sampling (GPUFL_PC_SAMPLING_TRACE: late,
# the default, none, kernels, all, alternate, events; docs/design/pcs-with-trace.md),
# measured side by side in one call. Steps, each bounded by a timeout, a failure
# recorded and the script going on:
#   refs      tests/gpu/pcs_kernels under Trace (the kernels' GPU times) and
#             under ncu without gpufl (the reference stall mix).
#   kernels   the same program under PcSampling in each mode: per kernel the
#             share of samples that keep their PC, the stall mix and its
#             largest difference from `none`, the dominant stall against
#             ncu's (check_pc_fidelity.py), kernel durations against Trace's.
#   launch    bench/gpu/trace_overhead's launch-bound loop of empty kernels:
#             time per launch, untraced, Trace and PcSampling in each mode,
#             alternated in rounds.
#   train     bench/gpu/pcs_overhead.py: the transformer training loop's step
#             time, untraced, Trace and PcSampling in each mode, alternated in
#             one call (each step synchronized).
# Writes OUT/summary.md (one table per step) and OUT/summary.json (every
# figure), the raw outputs beside them, and the session logs packed into
# OUT/sessions.tar.gz. About 8 minutes on an H100 with --rounds 2; the whole
# run keeps within --budget seconds (default 570, for a 10-minute call): a
# step's timeout is cut to what is left, and a step with under 20 s left is
# skipped (recorded).
# Usage: tests/gpu/run_pcs_candidates.sh OUT [--rounds N] [--only refs,kernels,launch,train]
#        [--modes late,none,kernels,all,alternate,events] [--budget SECONDS]
set -uo pipefail
if [[ $# -lt 1 || $1 == --help || $1 == -h ]]; then
  sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
out=$1; shift
rounds=2
only=refs,kernels,launch,train
modes=late,none,kernels,all,alternate,events
budget=570
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/../.." || exit 1
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"; out=$(cd "$out" && pwd)
logs=$out/logs
mkdir -p "$logs"
want() { [[ ,$only, == *,$1,* ]]; }
IFS=, read -r -a mode_list <<< "$modes"
# alternate's windows in the short kernel runs (a few seconds): several of each.
export GPUFL_PC_SAMPLING_SAMPLE_MS=${GPUFL_PC_SAMPLING_SAMPLE_MS:-200}
export GPUFL_PC_SAMPLING_TRACE_MS=${GPUFL_PC_SAMPLING_TRACE_MS:-50}
t_all=$(date +%s)
failures=()
exec 3>&1 # the steps' own lines go here, not into the file a step's output is redirected to
# step NAME SECONDS CMD...: runs CMD under a timeout, says how long it took
# and records a failure (and goes on).
step() {
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s) left=$(( budget - ($(date +%s) - t_all) ))
  if (( left < 20 )); then
    echo "--- $name: skipped, ${left} s of the budget left" >&3; failures+=("$name skipped"); return 1
  fi
  (( limit > left - 10 )) && limit=$(( left - 10 ))
  timeout -s QUIT -k 10 "$limit" "$@"
  local rc=$?
  echo "--- $name: rc=$rc in $(( $(date +%s) - t0 )) s (total $(( $(date +%s) - t_all )) s)" >&3
  [[ $rc == 0 ]] || failures+=("$name rc=$rc")
  return $rc
}
session_of() { sed -n 's/.*"session":"\([^"]*\)".*/\1/p' "$1" | tail -1; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1
  (ncu --version 2>&1 || echo "no ncu") | tail -1
  echo "modes: $modes; rounds: $rounds; alternate windows: ${GPUFL_PC_SAMPLING_SAMPLE_MS} ms" \
       "sampling, ${GPUFL_PC_SAMPLING_TRACE_MS} ms tracing"
} | tee "$out/machine.txt"

if want refs; then
  echo "=== refs"
  step refs_trace 120 env GPUFL_PROFILING_ENGINE=Trace GPUFL_BACKEND=Nvidia .devbin/pcs_kernels "$logs" 200 > "$out/kernels_trace.txt" 2> "$out/kernels_trace.err"
  cat "$out/kernels_trace.txt"
  step refs_ncu 240 env GPUFL_DISABLED=1 ncu --csv --metrics \
    'regex:^smsp__(pcsamp_warps_issue_stalled|average_warps_issue_stalled)_.*' \
    -k 'regex:divergent|strided|stream_triad|fma_chains' \
    .devbin/pcs_kernels /tmp/ncu-logs 1 > "$out/ncu.csv" 2> "$out/ncu.err"
  echo "ncu: $(wc -l < "$out/ncu.csv") lines"; tail -2 "$out/ncu.err"
fi

if want kernels; then
  echo "=== kernels"
  # The SM clock while the kernels run, sampled every 100 ms (the sample
  # count the period predicts needs it).
  nvidia-smi --query-gpu=clocks.sm,utilization.gpu --format=csv,noheader,nounits -lms 100 \
    > "$out/clocks.csv" 2>&1 &
  smi=$!
  for mode in "${mode_list[@]}"; do
    step "kernels_$mode" 120 env GPUFL_PC_SAMPLING_TRACE="$mode" GPUFL_PROFILING_ENGINE=PcSampling \
      GPUFL_BACKEND=Nvidia .devbin/pcs_kernels "$logs" 200 \
      > "$out/kernels_$mode.txt" 2> "$out/kernels_$mode.err"
    cat "$out/kernels_$mode.txt"; tail -3 "$out/kernels_$mode.err"
  done
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  clock=$(awk -F', ' '$2 > 90 {print $1}' "$out/clocks.csv" | sort -n |
          awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : 0)}')
  [[ -n $clock && $clock != 0 ]] ||
    clock=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1)
  echo "median SM clock under load: $clock MHz" | tee -a "$out/machine.txt"
  trace_session=$(session_of "$out/kernels_trace.txt")
  for mode in "${mode_list[@]}"; do
    s=$(session_of "$out/kernels_$mode.txt")
    [[ -n $s ]] || { failures+=("kernels_$mode: no session"); continue; }
    step "fidelity_$mode" 120 python3 tests/gpu/check_pc_fidelity.py "$s" "$out/ncu.csv" \
      --clock-mhz "$clock" ${trace_session:+--times "$trace_session"} > "$out/fidelity_$mode.json" 2>&1
    echo "$mode: $(grep -c '"agree": true' "$out/fidelity_$mode.json") of 4 dominant stalls agree"
    step "report_$mode" 120 .devbin/gpufl insights "$s" > "$out/insights_$mode.txt" 2>&1
  done
fi

if want launch; then
  echo "=== launch"
  # Rounds of each configuration in turn, so that drift falls on all.
  for ((r = 1; r <= rounds + 1; r++)); do
    for v in untraced trace "${mode_list[@]}"; do
      (( $(date +%s) - t_all < budget - 240 )) || continue # leave the training loop its time
      cfg=pcsampling; env=(GPUFL_PC_SAMPLING_TRACE=$v)
      [[ $v == untraced || $v == trace ]] && { cfg=$v; env=(); }
      env "${env[@]}" timeout -k 5 60 .devbin/trace_overhead "$cfg" --workload launch --reps 3 \
        --round "$r" --log-dir "$logs/launch" 2>>"$out/launch.err" | grep 'kind=run' |
        sed "s/^/variant=$v /"
    done
  done > "$out/launch.txt"
  echo "--- launch: $(wc -l < "$out/launch.txt") runs (total $(( $(date +%s) - t_all )) s)"
  rm -rf "$logs/launch"
fi

if want train; then
  echo "=== train"
  variants=untraced,trace
  for mode in "${mode_list[@]}"; do variants+=",pcs18+$mode"; done
  # Alternate's own windows (900 ms sampling, 100 ms tracing) in the loop.
  step train 360 env -u GPUFL_PC_SAMPLING_SAMPLE_MS -u GPUFL_PC_SAMPLING_TRACE_MS \
    python3 bench/gpu/pcs_overhead.py --rounds "$rounds" --workloads transformer \
    --variants "$variants" --steps 40 --log-root "$logs/train" --markdown "$out/train.md" \
    > "$out/train.jsonl" 2> "$out/train.err"
  cat "$out/train.md" 2>/dev/null; tail -3 "$out/train.err"
fi

step summary 120 python3 tests/gpu/summarize_pcs_candidates.py "$out" --modes "$modes"
cat "$out/summary.md" 2>/dev/null
tar -czf "$out/sessions.tar.gz" -C "$out" logs 2>/dev/null && rm -rf "$logs"
printf '%s\n' "${failures[@]}" > "$out/failures.txt"
echo "=== done in $(( $(date +%s) - t_all )) s; failures: ${#failures[@]}"
[[ ${#failures[@]} == 0 ]]
