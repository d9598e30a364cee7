#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: the SassMetrics and Deep engines against
# references, and the range profiler probe.
#   fidelity  tests/gpu/pcs_kernels under SassMetrics, then under ncu without
#             gpufl; check_sass_fidelity.py compares warp instructions, thread
#             efficiency, sectors and sectors per request per kernel (5 %).
#   deep      pcs_kernels under Deep and under PcSampling: the dominant stall
#             of each kernel with and without the patched code, and the
#             SASS metrics of the Deep run against ncu.
#   late      pcs_kernels with PCS_KERNELS_LATE=1 (context, modules and
#             kernels before gpufl_init) under Deep: what a late init gives.
#   range     the range profiler probe and ncu on its kernels.
#   overhead  bench/gpu/pcs_overhead.py with --deep-engines.
# Usage: tests/gpu/run_sassm_checks.sh OUTDIR [--only fidelity,deep,late,range,overhead]
#                                      [--rounds N] [--steps N]
set -uo pipefail
if [[ $# -lt 1 || $1 == --help || $1 == -h ]]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
out=$1; shift
only=fidelity,deep,late,range
rounds=2
steps=20
while [[ $# -gt 0 ]]; do
  case $1 in
    --only) only=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/../.." || exit 1
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"; out=$(cd "$out" && pwd)
want() { [[ ,$only, == *,$1,* ]]; }
session_of() { sed -n 's/.*"session":"\([^"]*\)".*/\1/p' "$1"; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv 2>&1
  (ncu --version 2>&1 || echo "no ncu") | tail -1
} | tee "$out/machine.txt"
hw=$(python3 -c 'import sys; sys.path.insert(0, "tests/gpu"); import check_sass_fidelity as c; print(c.HW_METRICS)')
if want fidelity || want deep; then
  GPUFL_DISABLED=1 timeout 300 ncu --csv --print-units base --metrics "$hw" \
    .devbin/pcs_kernels "$out/ncu-logs" 2 > "$out/ncu_sass.csv" 2> "$out/ncu_sass.err"
  echo "ncu rc=$?"
fi
if want fidelity; then
  echo "=== fidelity"
  GPUFL_PROFILING_ENGINE=SassMetrics GPUFL_BACKEND=Nvidia \
    timeout 300 .devbin/pcs_kernels "$out/logs" 20 > "$out/sassm.txt" 2> "$out/sassm.err"
  echo "pcs_kernels rc=$?"; cat "$out/sassm.txt"; tail -5 "$out/sassm.err"
  python3 tests/gpu/check_sass_fidelity.py "$(session_of "$out/sassm.txt")" "$out/ncu_sass.csv" \
    --markdown "$out/fidelity.md" | tee "$out/fidelity.jsonl"
  .devbin/gpufl report "$(session_of "$out/sassm.txt")" > "$out/report_sassm.txt" 2>&1
  .devbin/gpufl insights "$(session_of "$out/sassm.txt")" > "$out/insights_sassm.txt" 2>&1
fi
if want deep; then
  echo "=== deep"
  GPUFL_PROFILING_ENGINE=Deep GPUFL_BACKEND=Nvidia \
    timeout 300 .devbin/pcs_kernels "$out/logs" 100 > "$out/deep.txt" 2> "$out/deep.err"
  echo "deep rc=$?"; cat "$out/deep.txt"; tail -5 "$out/deep.err"
  GPUFL_PROFILING_ENGINE=PcSampling GPUFL_BACKEND=Nvidia \
    timeout 300 .devbin/pcs_kernels "$out/logs" 100 > "$out/pcs.txt" 2> "$out/pcs.err"
  echo "pcs rc=$?"; cat "$out/pcs.txt"
  python3 tests/gpu/check_sass_fidelity.py "$(session_of "$out/deep.txt")" "$out/ncu_sass.csv" \
    --deep-session "$(session_of "$out/deep.txt")" --pcs-session "$(session_of "$out/pcs.txt")" \
    --markdown "$out/deep.md" | tee "$out/deep.jsonl"
  .devbin/gpufl report "$(session_of "$out/deep.txt")" > "$out/report_deep.txt" 2>&1
fi
if want late; then
  echo "=== late"
  PCS_KERNELS_LATE=1 GPUFL_PROFILING_ENGINE=Deep GPUFL_BACKEND=Nvidia \
    timeout 300 .devbin/pcs_kernels "$out/logs" 20 > "$out/late.txt" 2> "$out/late.err"
  echo "late rc=$?"; cat "$out/late.txt"; tail -5 "$out/late.err"
  python3 tests/gpu/check_sass_fidelity.py "$(session_of "$out/late.txt")" "$out/ncu_sass.csv" \
    | tee "$out/late.jsonl"
fi
if want range; then
  echo "=== range"
  mkdir -p "$out/rp"
  timeout 200 .devbin/range_profiler_probe > "$out/rp/probe.jsonl" 2> "$out/rp/probe.err"
  echo "probe rc=$?"
  timeout 300 ncu --csv --page raw --print-units base --cache-control none --clock-control none \
    --log-file "$out/rp/ncu.csv" \
    --metrics sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,gpu__time_duration.sum \
    .devbin/range_profiler_probe --ncu-mode > "$out/rp/ncu_mode.jsonl" 2> "$out/rp/ncu.err"
  echo "ncu rc=$?"
  python3 tests/gpu/compare_range_ncu.py "$out/rp/probe.jsonl" "$out/rp/ncu.csv" \
    > "$out/rp/compare.txt" 2>&1
  python3 tests/gpu/compare_range_ncu.py "$out/rp/probe.jsonl" "$out/rp/ncu.csv" \
    --phase user_replay_all > "$out/rp/compare_replay.txt" 2>&1
  tail -30 "$out/rp/compare.txt"
fi
if want overhead; then
  echo "=== overhead"
  python3 bench/gpu/pcs_overhead.py --rounds "$rounds" --steps "$steps" --deep-engines \
    --workloads gemm,transformer --log-root "$out/overhead-logs" \
    --markdown "$out/overhead.md" > "$out/overhead.jsonl" 2> "$out/overhead.err"
  echo "overhead rc=$?"; cat "$out/overhead.md"
fi
tar -czf "$out/sessions.tar.gz" -C "$out" logs 2>/dev/null
rm -rf "$out/logs" "$out/ncu-logs" "$out/overhead-logs"
exit 0
