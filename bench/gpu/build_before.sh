#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the launch benchmark (bench/gpu/trace_overhead.cu, today's source)
# against libgpufl as it was at an earlier commit, into
# .devbin/trace_overhead_before, so that paired_launch_overhead.sh can time
# the build before a change and the build after it alternately, in one call.
# Usage: bench/gpu/build_before.sh COMMIT   (run after tests/gpu/build_for_device.sh)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help || $# -ne 1 ]]; then
  echo "usage: bench/gpu/build_before.sh COMMIT"
  echo "  builds .devbin/trace_overhead_before against libgpufl at COMMIT (RelWithDebInfo, as"
  echo "  build_for_device.sh builds today's); paired_launch_overhead.sh's variant trace-before runs it"
  [[ $# -eq 1 ]] && exit 0 || exit 2
fi
cd "$(dirname "$0")/../.."
commit=$(git rev-parse --verify "$1^{commit}") || { echo "build_before: no commit '$1'" >&2; exit 2; }
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[[ -x $nvcc ]] || { echo "build_before: nvcc not found (CUDA toolkit at /usr/local/cuda?)" >&2; exit 1; }
src=build/before-src
dir=build/before
rm -rf "$src" && mkdir -p "$src"
git archive "$commit" | tar -x -C "$src"
echo "build_before: libgpufl at ${commit:0:12}"
cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFL_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)" --target gpufl_static >/dev/null
cuda_root=$(dirname "$nvcc")/..
cupti_dir=$cuda_root/lib64
[[ -e $cupti_dir/libcupti.so ]] || cupti_dir=$cuda_root/extras/CUPTI/lib64
mkdir -p .devbin
# Today's benchmark source with the earlier commit's public header: the
# program is the same in both builds, only the library differs.
"$nvcc" -O2 -std=c++17 -arch=sm_90 -I "$src/include" bench/gpu/trace_overhead.cu \
  -o .devbin/trace_overhead_before "$dir/lib/libgpufl.a" /usr/lib/x86_64-linux-gnu/libjansson.a \
  -lpthread -ldl -lm -cudart static -L "$cupti_dir" -lcupti -Xlinker -rpath \
  -Xlinker /usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
echo "$commit" >.devbin/trace_overhead_before.commit
echo "build_before: .devbin/trace_overhead_before"
