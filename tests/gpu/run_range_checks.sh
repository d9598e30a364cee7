#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: the RangeProfiler engine against Nsight Compute.
# tests/gpu/pcs_kernels runs each reference kernel of known_kernels.cuh
# (divergent, strided, stream_triad, fma_chains) N launches inside each of
# R scopes of its name (PCS_KERNELS_SCOPES=R, after a warm-up launch of each
# outside any scope): under gpufl with engine RangeProfiler and
# GPUFL_FLUSH_INTERVAL_MS=1 and GPUFL_RANGE_PROFILER_SWITCH_PCT=100 (every
# scope end decodes; the engine keeps a metric group for 4 ranges, the first
# 3 settling, then switches with no limit, so each kernel's 64 scopes are 16
# visits of 4 that cover GH100's 9 groups, give or take the empty
# engine_start range that shifts the visits across kernels; the checker
# sets the settling ranges aside and fails a group not seen), then twice
# under ncu with GPUFL_DISABLED=1, R = 1 and the same
# metrics plus the references: kernel replay of M launches (--ncu-launches,
# default 5; ncu replays each launch alone, in as many passes as it needs,
# ncu.csv), and range replay of one cudaProfilerStart/Stop range of the same
# N launches per kernel (PCS_KERNELS_PROFILER_RANGES=1, ncu_range.csv: the
# range replayed whole, back-to-back launches with L2 warm after the first,
# as ours). check_range_fidelity.py then prints per scope ours against both
# per launch (derived SM throughput and L2 hit rate across groups) and
# whether each is within 5 %: range replay decides the counters that depend
# on what L2 holds across launches (L2 lookups and sectors, DRAM bytes and
# throughput, the L2 hit rate), kernel replay the rest; without range rows
# (ncu failed) kernel replay decides all. gpufl report (report.txt,
# report.json) and the session's engine records follow. --scopes 1 is the
# older one-range run (N default 20, the default flush interval: one
# collection, group 0). A range's elapsed time also holds the idle time
# around its first and last kernels (about 0.1 ms), so N (default 40) is
# large enough for that to be small against its kernels' time.
# PCS_KERNELS_SCOPE_GAP_MS (default 2) is the pause before each scope when there are several.
# --clean-l2 sets PCS_KERNELS_CLEAN_L2=1 in all three runs: before each
# kernel's first scope, a read pass over twice L2's size writes back what
# the kernels before left dirty (ncu's kernel replay is then limited to the
# four kernels by name, so that it runs the pass unprofiled).
# Needs .devbin from tests/gpu/build_for_device.sh (pcs_kernels, libgpufl, gpufl).
# Usage: tests/gpu/run_range_checks.sh OUTDIR [--scopes R (64)] [--launches N (40; 20 with R = 1)]
#                                      [--ncu-launches M (5)] [--tolerance-pct P] [--clean-l2]
set -uo pipefail
if [[ $# -lt 1 || $1 == --help || $1 == -h ]]; then
  sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
out=$1; shift
scopes=64
launches=
ncu_launches=5
tolerance=5
clean_l2=no
while [[ $# -gt 0 ]]; do
  case $1 in
    --scopes) scopes=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --ncu-launches) ncu_launches=$2; shift 2 ;;
    --tolerance-pct) tolerance=$2; shift 2 ;;
    --clean-l2) clean_l2=yes; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $scopes =~ ^[1-9][0-9]*$ ]] || { echo "--scopes needs a positive count" >&2; exit 2; }
[[ -n $launches ]] || { ((scopes > 1)) && launches=40 || launches=20; }
cd "$(dirname "$0")/../.." || exit 1
clean=()
[[ $clean_l2 == yes ]] && clean=(PCS_KERNELS_CLEAN_L2=1)
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"; out=$(cd "$out" && pwd)
session_of() { sed -n 's/.*"session":"\([^"]*\)".*/\1/p' "$1"; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv 2>&1
  (ncu --version 2>&1 || echo "no ncu") | tail -1
  echo "scopes per kernel: $scopes, launches per scope: $launches, clean L2: $clean_l2"
} | tee "$out/machine.txt"

echo "=== gpufl, engine RangeProfiler, $scopes scopes of $launches launches per kernel"
flush=()
((scopes > 1)) && flush=(GPUFL_FLUSH_INTERVAL_MS=1 GPUFL_RANGE_PROFILER_SWITCH_PCT=100)
env "${flush[@]}" "${clean[@]}" PCS_KERNELS_SCOPES="$scopes" GPUFL_PROFILING_ENGINE=RangeProfiler \
  GPUFL_BACKEND=Nvidia timeout 120 .devbin/pcs_kernels "$out/logs" "$launches" \
  > "$out/range.txt" 2> "$out/range.err"
echo "pcs_kernels rc=$?"; cat "$out/range.txt"; tail -5 "$out/range.err"
session=$(session_of "$out/range.txt")
[[ -n $session ]] || { echo "no session in $out/range.txt"; exit 1; }

echo "=== ncu kernel replay, GPUFL_DISABLED=1, one scope of $ncu_launches launches per kernel"
metrics=$(python3 tests/gpu/check_range_fidelity.py "$session" --metrics) || exit 1
echo "metrics: $metrics"
# The L2 pass is no kernel of the comparison: it runs unprofiled (see the top).
only=()
[[ $clean_l2 == yes ]] && only=(--kernel-name 'regex:^(divergent|strided|stream_triad|fma_chains)$')
env GPUFL_DISABLED=1 "${clean[@]}" PCS_KERNELS_SCOPES=1 timeout 360 ncu --csv --page raw \
  --print-units base --cache-control none --clock-control none "${only[@]}" \
  --metrics "$metrics" .devbin/pcs_kernels "$out/ncu-logs" "$ncu_launches" \
  > "$out/ncu.csv" 2> "$out/ncu.err"
echo "ncu rc=$?"; tail -3 "$out/ncu.err"

echo "=== ncu range replay, GPUFL_DISABLED=1, one range of $launches launches per kernel"
env GPUFL_DISABLED=1 "${clean[@]}" PCS_KERNELS_SCOPES=1 PCS_KERNELS_PROFILER_RANGES=1 \
  timeout 360 ncu --replay-mode range --csv --page raw --print-units base --cache-control none \
  --clock-control none --metrics "$metrics" .devbin/pcs_kernels "$out/ncu-range-logs" "$launches" \
  > "$out/ncu_range.csv" 2> "$out/ncu_range.err"
echo "ncu range replay rc=$?"; tail -3 "$out/ncu_range.err"
ranged=()
if grep -q '"range"' "$out/ncu_range.csv"; then
  ranged=(--ncu-range "$out/ncu_range.csv" --ncu-range-launches "$launches")
else
  echo "no ranges in $out/ncu_range.csv: kernel replay is the only reference"
fi

echo "=== per scope: ours against ncu, per launch"
python3 tests/gpu/check_range_fidelity.py "$session" "$out/ncu.csv" "${ranged[@]}" \
  --launches-per-scope "$launches" --tolerance-pct "$tolerance" | tee "$out/fidelity.txt"
rc=${PIPESTATUS[0]}
.devbin/gpufl report "$session" > "$out/report.txt" 2>&1
.devbin/gpufl report --format json "$session" > "$out/report.json" 2> "$out/report-json.err"
echo "gpufl report --format json rc=$?"
grep -h '"range_profiler\|"capabilities' "$session/device.log" > "$out/engine_records.jsonl"
echo "fidelity rc=$rc (0: all within ${tolerance} % of the deciding reference, every group seen)"
exit "$rc"
