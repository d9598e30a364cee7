// SPDX-License-Identifier: Apache-2.0
// in_loop_sync.cu - the anti-pattern the in-loop sync insight exists for: a
// training-style loop that launches kernels and then synchronizes the stream
// on every iteration. Runs a Trace session with enable_stack_trace and prints
// one JSON line with what the checker needs: this file, the line of the
// synchronization call, the function it is in, the number of calls and the
// host time they blocked as measured here with clock_gettime (an independent
// reference for the sync rows' durations), and the session directory.
// Built with -g so that the line can be found through DWARF.
// Usage: in_loop_sync LOG_DIR [STEPS]
#include <cuda_runtime.h>
#include <gpufl/gpufl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

__global__ void step_kernel(float *x, int iters) {
    float v = x[blockIdx.x * blockDim.x + threadIdx.x];
    for (int i = 0; i < iters; ++i) v = v * 0.9999f + 0.0001f;
    x[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

static long long now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int sync_line;           // the line of the cudaStreamSynchronize below
static long long blocked_ns;    // time spent in it, measured here
static long long launch_errors; // launches or syncs that failed

// One training step: four kernels, then a sync that waits for all of them.
__attribute__((noinline)) static void train_step(cudaStream_t stream, float *x) {
    for (int k = 0; k < 4; ++k) step_kernel<<<132, 256, 0, stream>>>(x, 20000);
    launch_errors += cudaGetLastError() != cudaSuccess;
    long long t0 = now_ns();
    sync_line = __LINE__ + 1;
    launch_errors += cudaStreamSynchronize(stream) != cudaSuccess;
    blocked_ns += now_ns() - t0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        std::fprintf(stderr, "usage: in_loop_sync LOG_DIR [STEPS [trace|pcsampling]]\n");
        return 2;
    }
    int steps = argc >= 3 ? std::atoi(argv[2]) : 50;
    int pcsampling = argc == 4 && std::strcmp(argv[3], "pcsampling") == 0;
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "in_loop_sync";
    o.log_path = argv[1];
    o.profiling_engine = pcsampling ? GPUFL_ENGINE_PC_SAMPLING : GPUFL_ENGINE_TRACE;
    o.enable_stack_trace = 1;
    if (gpufl_init(&o) != 0) {
        std::fprintf(stderr, "in_loop_sync: init failed: %s\n", gpufl_last_error());
        return 1;
    }
    float *x;
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaMalloc(&x, 132 * 256 * sizeof(float));
    cudaMemsetAsync(x, 0, 132 * 256 * sizeof(float), stream);
    for (int step = 0; step < steps; ++step) train_step(stream, x);
    cudaFree(x);
    cudaStreamDestroy(stream);
    char dir[4096] = "";
    gpufl_session_dir(dir, sizeof dir);
    gpufl_shutdown();
    std::printf("{\"file\":\"%s\",\"line\":%d,\"function\":\"train_step\",\"calls\":%d,"
                "\"blocked_ns\":%lld,\"errors\":%lld,\"session\":\"%s\"}\n",
                __FILE__, sync_line, steps, blocked_ns, launch_errors, dir);
    return launch_errors ? 1 : 0;
}
