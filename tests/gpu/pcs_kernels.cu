// SPDX-License-Identifier: Apache-2.0
// pc_sampling_kernels.cu - the reference kernels of known_kernels.cuh (divergent,
// strided, stream_triad, fma_chains) under gpufl, for the fidelity checks of
// the deep engines (PC sampling against ncu's warp states; later SASS
// metrics and the range profiler). Each kernel runs in a loop inside a scope
// of its name, under the engine GPUFL_PROFILING_ENGINE names (or none with
// GPUFL_DISABLED=1, the way ncu runs it).
// Prints one JSON line per kernel: name, launches, mean ms (cudaEvent).
// With PCS_KERNELS_LATE=1 the program creates its context and launches each
// kernel once before gpufl_init (a late init: modules loaded, kernels run).
// With PCS_KERNELS_SCOPES=R (default 1) the LAUNCHES launches run inside
// each of R consecutive scopes of the kernel's name (R x LAUNCHES launches
// per kernel; the line adds scopes and launches_per_scope), so that the
// RangeProfiler's rotating metric groups each get ranges of every kernel;
// when R > 1 each kernel is first launched once outside any scope and
// synchronized, a warm-up that keeps module load and first-launch costs out
// of the ranges; then an empty scope "engine_start" (an engine that starts
// on a context at its first scope, RangeProfiler's ~1 s and its first
// collection, does so there), and 2 ms of host sleep before each kernel
// scope, outside it: with GPUFL_FLUSH_INTERVAL_MS=1 (a collection ends at
// the first range end after the interval) every kernel scope then ends a
// collection of its own, however short its launches (the engine keeps a
// metric group for 4 ranges, the first 3 settling).
// With PCS_KERNELS_PROFILER_RANGES=1 each scope is also a cudaProfilerStart
// / cudaProfilerStop range, which ncu --replay-mode range measures as one:
// the reference for a range (gaps and overlapping kernels included) where
// ncu's default, kernel replay, measures each launch alone.
// With PCS_KERNELS_CLEAN_L2=1, before each kernel's first scope (outside any
// scope and profiler range) one read-only pass over a scratch buffer twice
// the size of L2, then a device synchronize: the pass evicts, and so writes
// back, the dirty lines the kernels before left in L2 (stream_triad writes
// 256 MiB), so that a range does not pay for another kernel's write-back
// (DRAM writes and L2 misses it did not cause). The pass is a kernel of
// its own, l2_clean_read, which no scope or profiler range holds; ncu's
// kernel replay must be told to leave it out (its save and restore of memory
// around a profiled launch would dirty L2 again).
// With PCS_KERNELS_SETTLE=K (and R > 1), K launches of one kernel right after
// engine_start, outside any scope, then a device synchronize: the kernel is
// PCS_KERNELS_SETTLE_KERNEL (a name above, "nop" for an empty kernel of one
// block, "memset" for a 4-byte cudaMemsetAsync) or else each measured kernel in
// turn. They take the launches that follow the range profiler's start, which
// write back what L2 holds dirty (docs/design/range-profiler.md, "Settling"),
// out of the first scopes.
// Usage: [PCS_KERNELS_SCOPES=R] pc_sampling_kernels LOG_DIR [LAUNCHES] [only-kernel]
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <gpufl/gpufl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

static const char *const kProgram = "pcs_kernels";
#include "cuda_check.cuh"

static const size_t kN = 64u << 20; // floats per array (256 MiB)

#include "known_kernels.cuh"

// Reads every 16 bytes of the scratch buffer once. The buffer is zeroed, so
// the store never happens; it is there so that the loads, whose result it
// depends on, cannot be removed as dead code.
extern "C" __global__ void l2_clean_read(uint4 *scratch, size_t n) {
    unsigned bits = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = scratch[i];
        bits |= v.x | v.y | v.z | v.w;
    }
    if (bits != 0) scratch[0].x = bits;
}

// An empty kernel, for PCS_KERNELS_SETTLE_KERNEL=nop.
extern "C" __global__ void settle_nop() {}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: [PCS_KERNELS_SCOPES=R] pcs_kernels LOG_DIR [LAUNCHES] "
                             "[only-kernel]\n");
        return 2;
    }
    int launches = argc > 2 ? std::atoi(argv[2]) : 200;
    const char *scopes_env = std::getenv("PCS_KERNELS_SCOPES");
    int scopes = scopes_env && *scopes_env ? std::atoi(scopes_env) : 1;
    if (scopes < 1) {
        std::fprintf(stderr, "pcs_kernels: PCS_KERNELS_SCOPES must be a positive count\n");
        return 2;
    }
    const char *only = argc > 3 ? argv[3] : nullptr;
    // The pause before each scope when there are several (ms, default 2):
    // the collector switches metric groups between scopes.
    const char *gap_env = std::getenv("PCS_KERNELS_SCOPE_GAP_MS");
    const int gap_ms = gap_env && *gap_env ? std::atoi(gap_env) : 2;
    const char *clean_env = std::getenv("PCS_KERNELS_CLEAN_L2");
    const bool clean_l2 = clean_env && std::strcmp(clean_env, "1") == 0;
    float *a = nullptr, *b = nullptr, *c = nullptr;
    uint4 *scratch = nullptr;
    size_t scratch_n = 0; // 16-byte words
    int sms = 0;
    auto launch = [&](int k) {
        switch (k) {
        case 0: divergent<<<sms * 16, 256>>>(a, 4096); break;
        case 1: strided<<<(unsigned)(kN / 8 / 256), 256>>>(b, a, kN); break;
        case 2: stream_triad<<<sms * 32, 256>>>(a, b, c, 3.0f, kN); break;
        case 3: fma_chains<<<sms * 16, 256>>>(a, 8192); break;
        }
    };
    auto allocate = [&] {
        CHECK(cudaMalloc(&a, kN * sizeof(float)));
        CHECK(cudaMalloc(&b, kN * sizeof(float)));
        CHECK(cudaMalloc(&c, kN * sizeof(float)));
        CHECK(cudaMemset(b, 0, kN * sizeof(float)));
        CHECK(cudaMemset(c, 0, kN * sizeof(float)));
        CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        if (clean_l2) {
            int l2_bytes = 0;
            CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0));
            if (l2_bytes <= 0) {
                std::fprintf(stderr, "pcs_kernels: the device reports no L2 size\n");
                std::exit(1);
            }
            scratch_n = 2 * (size_t)l2_bytes / sizeof(uint4);
            CHECK(cudaMalloc(&scratch, scratch_n * sizeof(uint4)));
            // Zero, for l2_clean_read's store never to happen; the lines this
            // leaves dirty are written back by the first pass like any other.
            CHECK(cudaMemset(scratch, 0, scratch_n * sizeof(uint4)));
        }
    };
    // Leaves L2 holding only clean lines of the scratch buffer (see the top).
    auto clean_l2_pass = [&] {
        l2_clean_read<<<sms * 32, 256>>>(scratch, scratch_n);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
    };
    const char *late = std::getenv("PCS_KERNELS_LATE");
    if (late && std::strcmp(late, "1") == 0) {
        allocate();
        for (int k = 0; k < 4; ++k) launch(k);
        CHECK(cudaDeviceSynchronize());
    }
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "pcs_kernels";
    o.log_path = argv[1];
    int rc = gpufl_init(&o); // the engine comes from GPUFL_PROFILING_ENGINE
    if (rc != 0 && rc != GPUFL_EDISABLED) {
        std::fprintf(stderr, "pcs_kernels: init failed: %s\n", gpufl_last_error());
        return 1;
    }
    if (a == nullptr) allocate();
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    const char *names[] = {"divergent", "strided", "stream_triad", "fma_chains"};
    if (scopes > 1) { // the warm-up, outside any scope
        for (int k = 0; k < 4; ++k)
            if (!only || std::strcmp(only, names[k]) == 0) launch(k);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        gpufl_scope_end(gpufl_scope_begin("engine_start", nullptr));
        const char *settle_env = std::getenv("PCS_KERNELS_SETTLE");
        const int settle = settle_env && *settle_env ? std::atoi(settle_env) : 0;
        const char *settle_kernel = std::getenv("PCS_KERNELS_SETTLE_KERNEL");
        int *word = nullptr;
        if (settle_kernel && std::strcmp(settle_kernel, "memset") == 0)
            CHECK(cudaMalloc(&word, sizeof *word));
        for (int i = 0; word && i < settle; ++i) CHECK(cudaMemsetAsync(word, i, sizeof *word));
        for (int i = 0; settle_kernel && std::strcmp(settle_kernel, "nop") == 0 && i < settle; ++i)
            settle_nop<<<1, 32>>>();
        for (int k = 0; k < 4 && settle > 0; ++k) {
            const bool chosen = settle_kernel && *settle_kernel
                                    ? std::strcmp(settle_kernel, names[k]) == 0
                                    : !only || std::strcmp(only, names[k]) == 0;
            for (int i = 0; chosen && i < settle; ++i) launch(k);
        }
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
    }
    const char *ranges_env = std::getenv("PCS_KERNELS_PROFILER_RANGES");
    const bool profiler_ranges = ranges_env && std::strcmp(ranges_env, "1") == 0;
    for (int k = 0; k < 4; ++k) {
        if (only && std::strcmp(only, names[k]) != 0) continue;
        float total_ms = 0;
        if (clean_l2) clean_l2_pass();
        for (int r = 0; r < scopes; ++r) {
            if (scopes > 1 && gap_ms > 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
            gpufl_scope_t scope = gpufl_scope_begin(names[k], nullptr);
            if (profiler_ranges) CHECK(cudaProfilerStart());
            CHECK(cudaEventRecord(e0));
            for (int l = 0; l < launches; ++l) launch(k);
            CHECK(cudaGetLastError());
            CHECK(cudaEventRecord(e1));
            CHECK(cudaEventSynchronize(e1));
            if (profiler_ranges) CHECK(cudaProfilerStop());
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, e0, e1));
            gpufl_scope_end(scope);
            total_ms += ms;
        }
        long total = (long)scopes * launches;
        if (scopes == 1)
            std::printf("{\"kernel\":\"%s\",\"launches\":%d,\"mean_ms\":%.4f}\n", names[k],
                        launches, total_ms / launches);
        else
            std::printf("{\"kernel\":\"%s\",\"launches\":%ld,\"scopes\":%d,"
                        "\"launches_per_scope\":%d,\"mean_ms\":%.4f}\n",
                        names[k], total, scopes, launches, total_ms / (float)total);
    }
    char dir[4096] = "";
    gpufl_session_dir(dir, sizeof dir);
    gpufl_shutdown();
    std::printf("{\"session\":\"%s\"}\n", dir);
    return 0;
}
