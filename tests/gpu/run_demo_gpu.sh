#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_demo_gpu.sh - the README's first command on the GPU machine: runs
# scripts/demo.sh --no-build over a build made on the development VM (the GPU
# machine has no jansson to build with), then checks the demo's session with
# check_demo.py against the program's own counts and Nsight Compute's
# theoretical occupancy. Writes demo.txt, report.{txt,json,html}, ncu.csv,
# check.txt, machine.txt and session.tgz to OUTDIR.
#
# Before, on the development VM:
#   cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DGPUFL_BUILD_TESTS=OFF \
#     -DGPUFL_BUILD_GPU_DEMO=ON -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc
#   cmake --build build/release -j; tests/gpu/build_for_device.sh (or copy
#   libjansson.so.4, libunwind.so.8, libdw.so.1, libelf.so.1 into .devbin/)
# and carry build/release and .devbin. Exits 77 where there is no GPU.
set -uo pipefail
if [[ $# -ne 1 || $1 == --help ]]; then
  echo "usage: tests/gpu/run_demo_gpu.sh OUTDIR"
  [[ ${1:-} == --help ]] && exit 0 || exit 2
fi
out=$1
cd "$(dirname "$0")/../.." || exit 1
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: not a GPU machine"; exit 77; }
mkdir -p "$out" && out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH=$PWD/build/release/lib:$PWD/.devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The build's RUNPATH and the demo's DWARF source paths name the VM's checkout.
built_in=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/release/CMakeCache.txt)
if [[ -n $built_in && ! -e $built_in ]]; then
  mkdir -p "$(dirname "$built_in")" && ln -s "$PWD" "$built_in"
fi
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  (ncu --version 2>&1 || echo "no ncu on PATH") | tail -1
} | tee "$out/machine.txt"

steps=50
rm -rf build/demo/gpufl_demo.log
scripts/demo.sh --no-build --steps "$steps" 2>&1 | tee "$out/demo.txt"
session=$(ls -1td build/demo/gpufl_demo.log/*/ 2>/dev/null | head -n 1)
[[ -n $session ]] || { echo "FAIL  the demo wrote no session"; exit 1; }
tool=build/release/cmd/gpufl/gpufl
$tool report "$session" >"$out/report.txt"
$tool report --format json "$session" >"$out/report.json"
$tool report --format html --output "$out/report.html" "$session"
tar czf "$out/session.tgz" -C "$(dirname "$session")" "$(basename "$session")"

# ncu is a CUPTI client too: gpufl is off in its run, so no number of ours
# comes from it. One step: six launches, one per kernel configuration.
metrics=sm__maximum_warps_per_active_cycle_pct,launch__occupancy_limit_warps,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_blocks,launch__registers_per_thread,launch__block_size
GPUFL_DISABLED=1 timeout 300 ncu --csv --page raw --print-kernel-base demangled --metrics "$metrics" \
  --log-file "$out/ncu.csv" build/release/examples/gpufl_demo_gpu --steps 1 \
  --log-path /tmp/gpufl-demo-ncu >/dev/null 2>/tmp/gpufl-demo-ncu.err || echo "ncu failed: $(tail -3 /tmp/gpufl-demo-ncu.err)"
python3 tests/gpu/check_demo.py "$out/report.json" "$steps" "$out/ncu.csv" | tee "$out/check.txt"
