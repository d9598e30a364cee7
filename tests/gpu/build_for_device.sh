#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds, on the development VM, the static programs the GPU checks run on the
# GPU machine (which has no jansson): they go to .devbin/, which git ignores
# and the device tool carries. Also a libgpufl.so for the Python checks
# (ctypes) and the libgpufl-analysis.so.0 that gpufl_report_write() loads,
# with libjansson.so.4 beside them: Debian's libjansson.a is not
# position-independent, so it cannot be linked into a shared object; the
# libraries find the copy through their RUNPATH ($ORIGIN).
set -euo pipefail
cd "$(dirname "$0")/../.."
# The GPU machine has no libpq: the device build's gpufl-server is the SQLite one.
cmake -S . -B build/device -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFL_BUILD_TESTS=OFF \
  -DGPUFL_SERVER_POSTGRESQL=OFF >/dev/null
cmake --build build/device -j "$(nproc)" --target gpufl_static gpufl_analysis_static gpufl_python \
  gpufl_server >/dev/null
mkdir -p .devbin
# The Python package (abi3: loads in the GPU machine's Python 3.12), for the
# PyTorch checks (run_torch_checks.sh); its libjansson.so.4 is copied below.
rm -rf .devbin/python && mkdir -p .devbin/python && cp -r build/device/python/gpufl .devbin/python/
libs=(build/device/lib/libgpufl.a /usr/lib/x86_64-linux-gnu/libjansson.a -lz -lpthread -ldl -lm)
cc -O2 -std=c11 -D_GNU_SOURCE -I include tests/gpu/monitor_session.c -o .devbin/monitor_session "${libs[@]}"
cc -O2 -std=c11 -D_GNU_SOURCE -I include -I lib bench/bench_stacks.c -o .devbin/bench_stacks "${libs[@]}"
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cuda_inc=$(dirname "$nvcc")/../include
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include -I lib -I "$cuda_inc" tests/gpu/cupti_check.cu \
    -o .devbin/cupti_check "${libs[@]}" -cudart static
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include tests/gpu/trace_session.cu \
    -o .devbin/trace_session "${libs[@]}" -cudart static
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include tests/gpu/occupancy_kernels.cu \
    -o .devbin/occupancy_kernels "${libs[@]}" -cudart static
  # NVTX ranges as scopes (run_nvtx_check.sh): NVTX finds the static libgpufl by its pointer.
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include -I "$cuda_inc" tests/gpu/nvtx_check.cu \
    -o .devbin/nvtx_check "${libs[@]}" -cudart static
  # The gpufl command-line tool, for `gpufl info` and reports on the GPU machine
  # (public headers only; both libraries).
  cc -O2 -std=c11 -D_GNU_SOURCE -I include -I cmd/common cmd/gpufl/*.c cmd/common/flags.c \
    -o .devbin/gpufl \
    build/device/lib/libgpufl-analysis.a "${libs[@]}"
  # A CUDA program that knows nothing of gpufl, for `gpufl trace` (docs/trace.md).
  "$nvcc" -O2 -std=c++17 -arch=sm_90 tests/gpu/plain_kernels.cu -o .devbin/plain_kernels \
    -cudart static
  # The minimal CUPTI tracer in the benchmark links libcupti (the toolkit puts
  # it in lib64, older ones in extras/CUPTI/lib64).
  cuda_root=$(dirname "$nvcc")/..
  cupti_dir=$cuda_root/lib64
  [[ -e $cupti_dir/libcupti.so ]] || cupti_dir=$cuda_root/extras/CUPTI/lib64
  cupti_link=(-L "$cupti_dir" -lcupti -Xlinker -rpath
              -Xlinker /usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64)
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include bench/gpu/trace_overhead.cu \
    -o .devbin/trace_overhead "${libs[@]}" -cudart static "${cupti_link[@]}"
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include tests/gpu/trace_faults.cu \
    -o .devbin/trace_faults "${libs[@]}" -cudart static
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include -I lib tests/gpu/occupancy_sweep.cu \
    -o .devbin/occupancy_sweep "${libs[@]}" -cudart static
  # Built with -g: the insight must find its synchronization line through DWARF.
  # Source paths relative to the repository, where the check runs on the GPU
  # machine, so that the source line's text can be read there.
  "$nvcc" -O2 -g -std=c++17 -arch=sm_90 -I include tests/gpu/in_loop_sync.cu \
    -Xcompiler -fdebug-prefix-map="$PWD"=. \
    -o .devbin/in_loop_sync "${libs[@]}" -cudart static
  # Overhead diagnosis: the benchmark against two builds of the library with
  # one of gpufl's own parts taken out (see bench/gpu/diagnose_overhead.sh).
  for part in NO_NOTES NO_ROWS; do
    dir=build/device-diagnose-${part,,}
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFL_BUILD_TESTS=OFF \
      -DCMAKE_C_FLAGS="-DGPUFL_DIAGNOSE_$part" >/dev/null
    cmake --build "$dir" -j "$(nproc)" --target gpufl_static >/dev/null
    "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include bench/gpu/trace_overhead.cu \
      -o ".devbin/trace_overhead_${part,,}" "$dir/lib/libgpufl.a" \
      /usr/lib/x86_64-linux-gnu/libjansson.a -lz -lpthread -ldl -lm -cudart static "${cupti_link[@]}"
  done
  # A program of tests/gpu over a diagnosis build of the library
  # (-DGPUFL_DIAGNOSE_$1): .devbin/$2_$3 from tests/gpu/$2.cu.
  over_diagnosis() {
    local dir=build/device-diagnose-${1,,}
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFL_BUILD_TESTS=OFF \
      -DCMAKE_C_FLAGS="-DGPUFL_DIAGNOSE_$1" >/dev/null
    cmake --build "$dir" -j "$(nproc)" --target gpufl_static >/dev/null
    "$nvcc" -O2 -lineinfo -std=c++17 -arch=sm_90 -I include "tests/gpu/$2.cu" \
      -o ".devbin/$2_$3" "$dir/lib/libgpufl.a" \
      /usr/lib/x86_64-linux-gnu/libjansson.a -lz -lpthread -ldl -lm -cudart static
  }
  # Deep's drains against first launches (run_deep_drain.sh): as built, and
  # without the launch gate, as Deep was when CUPTI crashed.
  "$nvcc" -O2 -lineinfo -std=c++17 -arch=sm_90 -I include tests/gpu/deep_drain_stress.cu \
    -o .devbin/deep_drain_stress "${libs[@]}" -cudart static
  over_diagnosis DEEP_UNGATED deep_drain_stress ungated
  # PC sampling with CUPTI's activity kinds on, as under Trace (the study in
  # tests/gpu/run_pcs_checks.sh): what activity tracing does to the samples.
  over_diagnosis PCS_WITH_ACTIVITY pcs_kernels with_activity
  # The range profiler with CUPTI's activity kinds on, as before it turned
  # them off: what the kernel timestamps CUPTI adds do to the counters
  # (docs/gpu-results/2026-11-22-range-profiler.md).
  over_diagnosis RP_WITH_ACTIVITY pcs_kernels rp_with_activity
  # The library without gpufl's work in the launch callbacks, for the
  # overhead diagnosis of bench/gpu/pcs_overhead.py --alt-library.
  cc -shared -o .devbin/libgpufl_no_notes.so -Wl,-soname,libgpufl.so \
    -Wl,--whole-archive build/device-diagnose-no_notes/lib/libgpufl.a -Wl,--no-whole-archive \
    -ljansson -lz -lpthread -ldl -lm -Wl,--no-undefined -Wl,-z,nodelete -Wl,-rpath,'$ORIGIN'
  # The PC Sampling API probe (docs/design/pc-sampling.md): CUPTI and the
  # driver API directly, no gpufl.
  "$nvcc" -O2 -std=c++17 -arch=sm_90 tests/gpu/pc_sampling_probe.cu -o .devbin/pc_sampling_probe \
    -L "$cupti_dir" -L "$cuda_root/lib64/stubs" -lcupti -lcuda -cudart static \
    -Xlinker -rpath -Xlinker /usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
  # The SASS Metrics API probe (docs/design/sass-metrics.md): CUPTI and the
  # driver API directly, no gpufl; line info for later source correlation.
  "$nvcc" -O2 -lineinfo -std=c++17 -arch=sm_90 tests/gpu/sass_metrics_probe.cu -o .devbin/sass_metrics_probe \
    -L "$cupti_dir" -L "$cuda_root/lib64/stubs" -lcupti -lcuda -cudart static \
    -Xlinker -rpath -Xlinker /usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
  # The Range Profiler API probe (docs/design/range-profiler.md): CUPTI and
  # the driver API directly, no gpufl. The host API (config images,
  # evaluation) is in libcupti too, which loads libnvperf_host.so itself at run
  # time: nothing more to link.
  "$nvcc" -O2 -lineinfo -std=c++17 -arch=sm_90 tests/gpu/range_profiler_probe.cu -o .devbin/range_profiler_probe \
    -L "$cupti_dir" -L "$cuda_root/lib64/stubs" -lcupti -lcuda -cudart static \
    -Xlinker -rpath -Xlinker /usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
  # Call orders of the SASS Metrics API, one sequence per process.
  "$nvcc" -O2 -lineinfo -std=c++17 -arch=sm_90 tests/gpu/sass_metrics_seq.cu -o .devbin/sass_metrics_seq \
    -L "$cupti_dir" -L "$cuda_root/lib64/stubs" -lcupti -lcuda -cudart static \
    -Xlinker -rpath -Xlinker /usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
  # Kernels of known behaviour for the deep engines' fidelity checks, with
  # line info for the SASS-to-source map; and cubins for nvdisasm's output.
  # (tests/gpu/run_pcs_candidates.sh runs pcs_kernels, trace_overhead, gpufl and,
  # through bench/gpu/pcs_overhead.py, libgpufl.so: all built here.)
  "$nvcc" -O2 -lineinfo -std=c++17 -arch=sm_90 -I include tests/gpu/pcs_kernels.cu \
    -o .devbin/pcs_kernels "${libs[@]}" -cudart static
  "$nvcc" -cubin -lineinfo -arch=sm_90 tests/gpu/pcs_kernels.cu -I include -o .devbin/pcs_kernels.cubin
  # The zero-code checks (run_zero_code_checks.sh): an ordinary CUDA program
  # with NVTX ranges, as is (for `gpufl trace`) and wrapped in gpufl_init.
  "$nvcc" -O2 -std=c++17 -arch=sm_90 tests/gpu/zero_code_program.cu \
    -o .devbin/zero_code_program -cudart static -ldl
  "$nvcc" -O2 -std=c++17 -arch=sm_90 -I include -DGPUFL_IN_PROCESS tests/gpu/zero_code_program.cu \
    -o .devbin/zero_code_program_inproc "${libs[@]}" -cudart static
  # The recorder of CUPTI buffers for the fake's replay uses CUPTI directly.
  "$nvcc" -O2 -std=c++17 -arch=sm_90 tests/gpu/record_cupti.cu -o .devbin/record_cupti \
    -cudart static "${cupti_link[@]}"
fi
cc -shared -o .devbin/libgpufl.so -Wl,-soname,libgpufl.so \
  -Wl,--whole-archive build/device/lib/libgpufl.a -Wl,--no-whole-archive \
  -ljansson -lz -lpthread -ldl -lm -Wl,--no-undefined -Wl,-z,nodelete -Wl,-rpath,'$ORIGIN'
cc -shared -o .devbin/libgpufl-analysis.so.0 -Wl,-soname,libgpufl-analysis.so.0 \
  -Wl,--whole-archive build/device/lib/libgpufl-analysis.a -Wl,--no-whole-archive \
  -L .devbin -l:libgpufl.so -ljansson -lpthread -lm -Wl,--no-undefined -Wl,-rpath,'$ORIGIN'
cp -L /usr/lib/x86_64-linux-gnu/libjansson.so.4 .devbin/
# The injection library of `gpufl trace` (lib/inject/inject.c) over that libgpufl.so, beside
# .devbin/gpufl, which finds it there: `.devbin/gpufl trace -- PROGRAM` on the GPU machine.
cc -shared -fPIC -O2 -std=c11 -D_GNU_SOURCE -fvisibility=hidden -I include -I lib \
  lib/inject/inject.c -o .devbin/libgpufl_inject.so -L .devbin -l:libgpufl.so -lpthread \
  -Wl,--no-undefined -Wl,-z,nodelete -Wl,-rpath,'$ORIGIN'
# gpufl-monitor, for run_monitor_check.sh, with its HTTP library beside it
# (the checks put .devbin on LD_LIBRARY_PATH).
cmake --build build/device -j "$(nproc)" --target gpufl_monitor >/dev/null
cp build/device/cmd/gpufl-monitor/gpufl-monitor .devbin/
cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 .devbin/
# gpufl-server (SQLite), for run_upload_check.sh, with libsodium, which the machine lacks.
cp build/device/cmd/gpufl-server/gpufl-server .devbin/
cp -L /usr/lib/x86_64-linux-gnu/libsodium.so.23 .devbin/
# A fault handler that prints the native backtrace (the GPU machine has no debugger).
cc -shared -fPIC -O1 -g -o .devbin/libsegv_trace.so tests/gpu/segv_trace.c
# Loaded at run time for CPU stacks (walking, and DWARF lines), in case the GPU
# machine lacks them; the checks put .devbin on LD_LIBRARY_PATH.
for lib in libunwind.so.8 libdw.so.1 libelf.so.1; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib" .devbin/
done
echo "built: $(ls .devbin)"
