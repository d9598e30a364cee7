#!/usr/bin/env bash
# Builds, on the development VM, the static programs the GPU checks run on the
# GPU machine (which has no jansson): they go to .devbin/, which git ignores
# and the device tool carries.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build/device -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFL_BUILD_TESTS=OFF >/dev/null
cmake --build build/device -j "$(nproc)" --target gpufl_static >/dev/null
mkdir -p .devbin
libs=(build/device/lib/libgpufl.a /usr/lib/x86_64-linux-gnu/libjansson.a -lpthread -ldl -lm)
cc -O2 -std=c11 -D_GNU_SOURCE -I include tests/gpu/monitor_session.c -o .devbin/monitor_session "${libs[@]}"
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cuda_inc=$(dirname "$nvcc")/../include
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include -I lib -I "$cuda_inc" tests/gpu/cupti_check.cu \
    -o .devbin/cupti_check "${libs[@]}" -cudart static
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include tests/gpu/trace_session.cu \
    -o .devbin/trace_session "${libs[@]}" -cudart static
fi
echo "built: $(ls .devbin)"
