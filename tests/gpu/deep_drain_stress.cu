// SPDX-License-Identifier: Apache-2.0
// deep_drain_stress.cu - Deep's periodic PC-sampling drain against first
// launches, on the GPU machine. Under Deep, SASS metrics patch each function
// at its first launch, inside the launch call, and a GetData of PC samples
// made meanwhile crashed inside CUPTI (docs/design/sass-metrics.md). This
// program makes as many first launches as it can while the collector drains:
// 512 distinct kernels (one template instantiated 512 times), launched for
// the first time from THREADS host threads at once, each thread its own
// share, then R more rounds of all of them so that samples keep coming.
// Run it with GPUFL_PROFILING_ENGINE=Deep and GPUFL_PC_SAMPLING_DRAIN_MS=10
// (a drain every 10 ms, ten times the default) against the library as built
// (drains pass the launch gate) and against the diagnosis build without the
// gate (-DGPUFL_DIAGNOSE_DEEP_UNGATED): tests/gpu/run_deep_drain.sh.
// Prints one JSON line: kernels, threads, rounds, seconds, session.
// Usage: deep_drain_stress LOG_DIR [THREADS (4)] [ROUNDS (3)]
#include <cuda_runtime.h>
#include <gpufl/gpufl.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

static const char *const kProgram = "deep_drain_stress";
#include "cuda_check.cuh"

static const int kKernels = 512;
static const int kN = 1 << 16; // floats each kernel updates

// Each instantiation is its own function, so its first launch is patched.
// The loop's length varies with I so that the functions differ in code too.
template <int I> __global__ void work(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int j = 0; j < 32 + I % 13; ++j) v = v * 0.999f + (float)(I + j);
    x[i] = v;
}

typedef void (*kernel_t)(float *, int);

template <int... I>
static std::array<kernel_t, sizeof...(I)> table(std::integer_sequence<int, I...>) {
    return {&work<I>...};
}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: deep_drain_stress LOG_DIR [THREADS] [ROUNDS]\n");
        return 2;
    }
    int threads = argc > 2 ? std::atoi(argv[2]) : 4;
    int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
    if (threads < 1 || threads > 64 || rounds < 0) {
        std::fprintf(stderr, "deep_drain_stress: THREADS 1..64, ROUNDS >= 0\n");
        return 2;
    }
    static const std::array<kernel_t, kKernels> kernels =
        table(std::make_integer_sequence<int, kKernels>{});
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "deep_drain_stress";
    o.log_path = argv[1];
    int rc = gpufl_init(&o); // the engine comes from GPUFL_PROFILING_ENGINE
    if (rc != 0 && rc != GPUFL_EDISABLED) {
        std::fprintf(stderr, "deep_drain_stress: init failed: %s\n", gpufl_last_error());
        return 1;
    }
    float *x = nullptr;
    CHECK(cudaMalloc(&x, (size_t)kN * threads * sizeof(float)));
    CHECK(cudaMemset(x, 0, (size_t)kN * threads * sizeof(float)));
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            cudaStream_t s;
            CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
            float *mine = x + (size_t)kN * t;
            int n = kN;
            void *args[] = {&mine, &n};
            // First launches: thread t takes kernels t, t + threads, ...;
            // then every kernel, rounds times.
            for (int r = -1; r < rounds; ++r)
                for (int k = r < 0 ? t : 0; k < kKernels; k += r < 0 ? threads : 1)
                    CHECK(cudaLaunchKernel((const void *)kernels[k], dim3(kN / 256), dim3(256),
                                           args, 0, s));
            CHECK(cudaStreamSynchronize(s));
            CHECK(cudaStreamDestroy(s));
        });
    for (auto &th : pool) th.join();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(cudaFree(x));
    char dir[4096] = "";
    gpufl_session_dir(dir, sizeof dir);
    gpufl_shutdown();
    std::printf(
        "{\"kernels\":%d,\"threads\":%d,\"rounds\":%d,\"seconds\":%.3f,\"session\":\"%s\"}\n",
        kKernels, threads, rounds, seconds, dir);
    return 0;
}
