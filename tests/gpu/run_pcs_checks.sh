#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: the PcSampling engine's checks against references.
#   fidelity   tests/gpu/pcs_kernels under PcSampling, then the same program
#              under ncu without gpufl; check_pc_fidelity.py compares the
#              dominant stall of each kernel and the sample count the period
#              predicts at the SM clock nvidia-smi reports during the run.
#   overhead   bench/gpu/pcs_overhead.py: GEMM and transformer training loops,
#              untraced, Trace and PcSampling, interleaved rounds.
#   nvdisasm   nvdisasm's help and its output on a cubin built with
#              -lineinfo (for the SASS parser's fixtures).
#   study      the same kernels under Trace (the cost of the first launches
#              without sampling), divergent alone for 2000 launches, and ncu
#              on it without clock control: what moves its stall mix.
# Session logs are packed as OUTDIR/sessions.tar.gz.
# Usage: tests/gpu/run_pcs_checks.sh OUTDIR [--only fidelity,overhead,nvdisasm,study] [--rounds N]
set -uo pipefail
if [[ $# -lt 1 || $1 == --help || $1 == -h ]]; then
 sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
out=$1; shift
only=fidelity,overhead,nvdisasm
rounds=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --only) only=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/../.." || exit 1
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"; out=$(cd "$out" && pwd)
want() { [[ ,$only, == *,$1,* ]]; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv 2>&1
  (ncu --version 2>&1 || echo "no ncu") | tail -1
  (nvdisasm --version 2>&1 || echo "no nvdisasm on PATH") | tail -1
} | tee "$out/machine.txt"
status=0

if want fidelity; then
  echo "=== fidelity"
  # The SM clock while the kernels run, sampled every 100 ms.
  nvidia-smi --query-gpu=clocks.sm,utilization.gpu --format=csv,noheader,nounits -lms 100 \
    > "$out/clocks.csv" 2>&1 &
  smi=$!
  GPUFL_PROFILING_ENGINE=PcSampling GPUFL_BACKEND=Nvidia GPUFL_ENABLE_DEBUG_OUTPUT=1 \
    timeout 300 .devbin/pcs_kernels "$out/logs" 200 > "$out/pcs_kernels.txt" 2> "$out/pcs_kernels.err"
  echo "pcs_kernels rc=$?"; cat "$out/pcs_kernels.txt"; tail -5 "$out/pcs_kernels.err"
  # The same run under Trace: the kernels' GPU time for the expected counts.
  GPUFL_PROFILING_ENGINE=Trace GPUFL_BACKEND=Nvidia \
    timeout 300 .devbin/pcs_kernels "$out/logs" 200 > "$out/pcs_kernels_trace.txt" 2>&1
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  times=$(sed -n 's/.*"session":"\([^"]*\)".*/\1/p' "$out/pcs_kernels_trace.txt")
  clock=$(awk -F', ' '$2 > 90 {print $1}' "$out/clocks.csv" | sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : 0)}')
  if [[ -z $clock || $clock == 0 ]]; then # the run was too short for a busy sample
    clock=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1)
    echo "no busy clock sample: taking the maximum SM clock"
  fi
  echo "median SM clock under load: $clock MHz"
  session=$(sed -n 's/.*"session":"\([^"]*\)".*/\1/p' "$out/pcs_kernels.txt")
  # ncu on the same program without gpufl: one launch of each kernel.
  GPUFL_DISABLED=1 timeout 300 ncu --csv --metrics \
    'regex:^smsp__(pcsamp_warps_issue_stalled|average_warps_issue_stalled)_.*' \
    -k 'regex:divergent|strided|stream_triad|fma_chains' \
    .devbin/pcs_kernels /tmp/ncu-logs 1 > "$out/ncu.csv" 2> "$out/ncu.err"
  echo "ncu rc=$? ($(wc -l < "$out/ncu.csv") lines)"; tail -3 "$out/ncu.err"
  timeout 120 python3 tests/gpu/check_pc_fidelity.py "$session" "$out/ncu.csv" --clock-mhz "$clock" \
    --times "$times" \
    > "$out/fidelity.json" 2>&1
  rc=$?; echo "fidelity rc=$rc"; cat "$out/fidelity.json" | head -120
  [[ $rc == 0 ]] || status=1
  .devbin/gpufl report "$session" > "$out/report.txt" 2>&1; echo "report rc=$?"
  .devbin/gpufl insights "$session" > "$out/insights.txt" 2>&1; echo "insights rc=$?"
fi

if want study; then
  echo "=== study"
  # Each kernel alone, without (the engine) and with CUPTI's activity kinds
  # (a diagnosis build): where CUPTI's non-user samples come from.
  for bin in pcs_kernels pcs_kernels_with_activity; do
    for k in divergent strided stream_triad fma_chains; do
      GPUFL_PROFILING_ENGINE=PcSampling GPUFL_BACKEND=Nvidia GPUFL_ENABLE_DEBUG_OUTPUT=1 \
        timeout 60 .devbin/$bin "$out/logs" 500 $k > "$out/alone_${bin}_$k.txt" \
        2> "$out/alone_${bin}_$k.err"
      s=$(sed -n 's/.*"session":"\([^"]*\)".*/\1/p' "$out/alone_${bin}_$k.txt")
      echo "$bin $k $(grep -o '"mean_ms":[0-9.]*' "$out/alone_${bin}_$k.txt")" \
        "$(grep -o '"samples":[0-9]*,"recorded":[0-9]*,"non_user":[0-9]*' "$s/device.log" | tail -1)"
    done
  done
  GPUFL_PROFILING_ENGINE=Trace GPUFL_BACKEND=Nvidia \
    timeout 120 .devbin/pcs_kernels "$out/logs" 200 > "$out/study_trace.txt" 2>&1
  echo "trace rc=$?"; cat "$out/study_trace.txt" | grep kernel
  GPUFL_PROFILING_ENGINE=PcSampling GPUFL_BACKEND=Nvidia GPUFL_ENABLE_DEBUG_OUTPUT=1 \
    timeout 120 .devbin/pcs_kernels "$out/logs" 2000 divergent > "$out/study_divergent.txt" \
    2> "$out/study_divergent.err"
  echo "divergent rc=$?"; grep kernel "$out/study_divergent.txt"
  s2=$(sed -n 's/.*"session":"\([^"]*\)".*/\1/p' "$out/study_divergent.txt")
  GPUFL_DISABLED=1 timeout 200 ncu --csv --clock-control none -c 3 --metrics \
    'regex:^smsp__pcsamp_warps_issue_stalled_.*' -k divergent \
    .devbin/pcs_kernels /tmp/ncu-logs 3 divergent > "$out/ncu_divergent_noclock.csv" 2>&1
  echo "ncu rc=$?"
  timeout 120 python3 tests/gpu/check_pc_fidelity.py "$s2" "$out/ncu_divergent_noclock.csv" \
    --clock-mhz 1980 > "$out/study_fidelity.json" 2>&1
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d["kernels"]["divergent"]), d["accounting"])' "$out/study_fidelity.json"
fi
tar -czf "$out/sessions.tar.gz" -C "$out" logs 2>/dev/null && rm -rf "$out/logs"

if want nvdisasm; then
  echo "=== nvdisasm"
  mkdir -p "$out/nvdisasm"
  nvdisasm --help > "$out/nvdisasm/help.txt" 2>&1
  for c in .devbin/*.cubin; do
    [[ -e $c ]] || continue
    b=$(basename "$c" .cubin)
    nvdisasm -c -g "$c" > "$out/nvdisasm/$b.g.txt" 2>&1
    nvdisasm -c -gi "$c" > "$out/nvdisasm/$b.gi.txt" 2>&1
    nvdisasm -c "$c" > "$out/nvdisasm/$b.plain.txt" 2>&1
    echo "$b: $(wc -l < "$out/nvdisasm/$b.g.txt") lines"
  done
  tar -czf "$out/nvdisasm.tar.gz" -C "$out" nvdisasm && rm -rf "$out/nvdisasm"
fi

if want overhead; then
  echo "=== overhead"
  timeout 560 python3 bench/gpu/pcs_overhead.py --rounds "$rounds" --periods 16 \
    --log-root "$out/overhead-logs" \
    --markdown "$out/overhead.md" > "$out/overhead.jsonl" 2> "$out/overhead.err"
  tar -czf "$out/overhead-logs.tar.gz" -C "$out" overhead-logs && rm -rf "$out/overhead-logs"
  echo "overhead rc=$?"; cat "$out/overhead.md"; tail -3 "$out/overhead.err"
fi
exit $status
