#!/usr/bin/env bash
# Runs on the GPU machine: the RangeProfiler engine against Nsight Compute.
# tests/gpu/pcs_kernels runs each reference kernel of known_kernels.cuh
# (divergent, strided, stream_triad, fma_chains) LAUNCHES times inside a
# scope of its name: once under gpufl with engine RangeProfiler (each scope
# one CUPTI user range), once under ncu with GPUFL_DISABLED=1 and the same
# metrics (ncu replays each launch: the multi-pass ones too).
# check_range_fidelity.py then prints per scope ours against ncu and whether
# each is within 5 %; gpufl report and the session's engine records follow.
# Needs .devbin from tests/gpu/build_for_device.sh (pcs_kernels, libgpufl, gpufl).
# Usage: tests/gpu/run_range_checks.sh OUTDIR [--launches N] [--tolerance-pct P]
set -uo pipefail
if [[ $# -lt 1 || $1 == --help || $1 == -h ]]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
out=$1; shift
launches=20
tolerance=5
while [[ $# -gt 0 ]]; do
  case $1 in
    --launches) launches=$2; shift 2 ;;
    --tolerance-pct) tolerance=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/../.." || exit 1
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"; out=$(cd "$out" && pwd)
session_of() { sed -n 's/.*"session":"\([^"]*\)".*/\1/p' "$1"; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv 2>&1
  (ncu --version 2>&1 || echo "no ncu") | tail -1
} | tee "$out/machine.txt"

echo "=== gpufl, engine RangeProfiler"
GPUFL_PROFILING_ENGINE=RangeProfiler GPUFL_BACKEND=Nvidia \
  timeout 300 .devbin/pcs_kernels "$out/logs" "$launches" > "$out/range.txt" 2> "$out/range.err"
echo "pcs_kernels rc=$?"; cat "$out/range.txt"; tail -5 "$out/range.err"
session=$(session_of "$out/range.txt")

echo "=== ncu, GPUFL_DISABLED=1"
metrics=$(python3 tests/gpu/check_range_fidelity.py "$session" --metrics)
GPUFL_DISABLED=1 timeout 600 ncu --csv --page raw --print-units base --cache-control none \
  --clock-control none --metrics "$metrics" \
  .devbin/pcs_kernels "$out/ncu-logs" "$launches" > "$out/ncu.csv" 2> "$out/ncu.err"
echo "ncu rc=$?"; tail -3 "$out/ncu.err"

echo "=== per scope: ours against ncu"
python3 tests/gpu/check_range_fidelity.py "$session" "$out/ncu.csv" \
  --tolerance-pct "$tolerance" | tee "$out/fidelity.txt"
rc=${PIPESTATUS[0]}
.devbin/gpufl report "$session" > "$out/report.txt" 2>&1
grep -h '"range_profiler\|"capabilities' "$session/device.log" > "$out/engine_records.jsonl"
echo "fidelity rc=$rc (0: all within ${tolerance} %)"
exit "$rc"
