// SPDX-License-Identifier: Apache-2.0
// zero_code_program.cu - an ordinary CUDA program for the zero-code checks
// (run_zero_code_checks.sh): known work (kernels of three shapes on two
// streams, copies, a memset, syncs) inside NVTX ranges, and nothing of gpufl.
// Built twice: as is, for `gpufl trace -- ./zero_code_program`, and with
// -DGPUFL_IN_PROCESS, which wraps the same main in gpufl_init/gpufl_shutdown
// (Trace) so that both sessions can be compared.
// Usage: zero_code_program [--iters N] [--fault segv|abort|device] [--fault-after-ms MS]
// Prints one JSON line: {"iters":N,"loop_ms":...}. --fault ends the program
// after the loop with a host null write, abort(), or a kernel that writes an
// invalid address (then abort() on the error the next sync returns), MS
// milliseconds after the loop (default 1000: a program that crashes after a
// while, not in its first milliseconds; the recorder's rows reach its ring one
// collector pass, 250 ms, after they happen).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#ifdef GPUFL_IN_PROCESS
#include <gpufl/gpufl.h>
#endif

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                       \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

__global__ void axpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void spin(float *x, int iters) {
    float v = x[threadIdx.x];
    for (int i = 0; i < iters; ++i) v = v * 0.999f + 0.001f;
    x[threadIdx.x] = v;
}

__global__ void reduce_rows(const float *x, float *out, int cols) {
    __shared__ float part[256];
    float s = 0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[blockIdx.x * cols + c];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

__global__ void write_far(float *x) { x[(size_t)1 << 40] = 1.0f; }

int main(int argc, char **argv) {
    int iters = 200;
    const char *fault = nullptr;
    int fault_after_ms = 1000;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--fault") && i + 1 < argc)
            fault = argv[++i];
        else if (!std::strcmp(argv[i], "--fault-after-ms") && i + 1 < argc)
            fault_after_ms = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: zero_code_program [--iters N] [--fault segv|abort|device] "
                                 "[--fault-after-ms MS]\n");
            return 2;
        }
    }
#ifdef GPUFL_IN_PROCESS
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "zero_code_program";
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    if (gpufl_init(&o) != 0) std::fprintf(stderr, "gpufl_init: %s\n", gpufl_last_error());
#endif
    const int n = 1 << 22, rows = 1024, cols = 4096;
    float *x, *y, *out, *h;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&out, rows * sizeof(float)));
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 97) / 97.0f;
    cudaStream_t s1, s2;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));

    nvtxRangePushA("setup");
    CHECK(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    nvtxRangePop();

    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iters; ++it) {
        nvtxRangePushA("iteration");
        nvtxRangePushA("compute");
        axpy<<<n / 256, 256, 0, s1>>>(y, x, 0.5f, n);
        spin<<<8, 128, 0, s2>>>(y, 2000);
        reduce_rows<<<rows, 256, 0, s1>>>(y, out, cols);
        nvtxRangePop();
        nvtxRangePushA("copy_back");
        CHECK(cudaMemcpyAsync(h, out, rows * sizeof(float), cudaMemcpyDeviceToHost, s1));
        CHECK(cudaStreamSynchronize(s1));
        nvtxRangePop();
        nvtxRangePop();
    }
    CHECK(cudaDeviceSynchronize());
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"iters\":%d,\"loop_ms\":%.3f,\"checksum\":%.3f}\n", iters, ms, h[0]);
    std::fflush(stdout);

    if (fault) std::this_thread::sleep_for(std::chrono::milliseconds(fault_after_ms));
    if (fault && !std::strcmp(fault, "segv")) {
        volatile int *p = nullptr;
        *p = 1;
    } else if (fault && !std::strcmp(fault, "abort")) {
        std::abort();
    } else if (fault && !std::strcmp(fault, "device")) {
        write_far<<<1, 1>>>(x);
        CHECK(cudaDeviceSynchronize()); /* the illegal address: abort() */
    }
    cudaFree(x);
    cudaFree(y);
    cudaFree(out);
    cudaFreeHost(h);
#ifdef GPUFL_IN_PROCESS
    gpufl_shutdown();
#endif
    return 0;
}
