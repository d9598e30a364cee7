#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: the Trace engine's checks against references, one
# after the other, continuing past failures: the trace_session check, the
# occupancy comparison with Nsight Compute (compare_ncu.py), the kernel
# comparison with torch.profiler (compare_torch.py), the two-profilers
# scenarios (compare_torch.py --coexist), the in-loop sync insight on a real
# program (check_in_loop_sync.py) and the cost of a stack capture
# (bench_stacks). Logs and tables go under OUTDIR; a
# summary is printed at the end. Expects .devbin/ from
# tests/gpu/build_for_device.sh. About 3-5 minutes on an H100.
set -uo pipefail

usage() {
  cat <<EOF
usage: tests/gpu/run_trace_checks.sh OUTDIR [--only NAME[,NAME...]]
  OUTDIR   where each check's output (NAME.txt) and files (NAME/) go, and summary.txt
  --only   run only these checks: trace_session, trace_faults, occupancy_sweep, record_cupti,
           compare_ncu, compare_torch, coexist, in_loop_sync, stack_cost
Exit status: 0 when every check passed, 1 otherwise, 77 when this is no GPU machine.
EOF
}
if [[ $# -lt 1 ]]; then usage >&2; exit 2; fi
if [[ $1 == --help || $1 == -h ]]; then usage; exit 0; fi
out=$1
shift
only=trace_session,trace_faults,occupancy_sweep,record_cupti,compare_ncu,compare_torch,coexist,in_loop_sync,stack_cost
while [[ $# -gt 0 ]]; do
  case $1 in
    --only) only=$2; shift 2 ;;
    *) usage >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/../.." || exit 1
# libunwind and libdw (CPU stacks) from .devbin when the machine lacks them.
export LD_LIBRARY_PATH=$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! command -v nvidia-smi >/dev/null; then
  echo "no nvidia-smi: not a GPU machine"
  exit 77
fi
for f in .devbin/trace_session .devbin/occupancy_kernels .devbin/libgpufl.so; do
  [[ -e $f ]] || { echo "FAIL  $f not found: run tests/gpu/build_for_device.sh first"; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  (ncu --version 2>&1 || echo "no ncu on PATH") | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 \
    | tail -1
} | tee "$out/machine.txt"

names=() codes=() secs=() results=()
# check NAME TIMEOUT_S COMMAND...: runs one check, its output to OUTDIR/NAME.txt.
check() {
  local name=$1 limit=$2
  shift 2
  [[ ,$only, == *,$name,* ]] || return 0
  echo
  echo "=== $name: $*"
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  tail -n 60 "$out/$name.txt"
  [[ $rc == 124 || $rc == 137 ]] && echo "TIMEOUT after ${limit}s" | tee -a "$out/$name.txt"
  names+=("$name") codes+=("$rc") secs+=($((SECONDS - t0)))
  results+=("$(grep -E '^(RESULT|FAIL)|failed$' "$out/$name.txt" | tail -1 | cut -c1-100)")
}

check trace_session 120 .devbin/trace_session "$out/trace_session"
check trace_faults 300 python3 tests/gpu/check_trace_faults.py .devbin/trace_faults "$out/trace_faults"
check occupancy_sweep 300 .devbin/occupancy_sweep
check record_cupti 60 .devbin/record_cupti "$out/h100-cuda13.cupti"
check compare_ncu 300 python3 tests/gpu/compare_ncu.py --out "$out/compare_ncu"
check compare_torch 300 python3 tests/gpu/compare_torch.py --out "$out/compare_torch"
check coexist 300 python3 tests/gpu/compare_torch.py --coexist --out "$out/coexist"
check in_loop_sync 180 python3 tests/gpu/check_in_loop_sync.py .devbin/in_loop_sync .devbin/gpufl \
  "$out/in_loop_sync"
check stack_cost 120 .devbin/bench_stacks

status=0
lines=()
for i in "${!names[@]}"; do
  verdict=PASS
  [[ ${codes[$i]} == 0 ]] || { verdict=FAIL; status=1; }
  lines+=("$(printf '%-4s  %-14s exit %-3s %4ss  %s' "$verdict" "${names[$i]}" "${codes[$i]}" \
    "${secs[$i]}" "${results[$i]}")")
done
{
  echo
  echo "=== summary ($(date -u +%H:%M:%SZ)) ==="
  printf '%s\n' "${lines[@]}"
  echo "outputs: $out/<check>.txt"
} | tee "$out/summary.txt"
exit $status
