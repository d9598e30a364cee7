// SPDX-License-Identifier: Apache-2.0
// demo_gpu.cu - the demo where a GPU exists: a small training-style CUDA
// program traced by gpufl's Trace engine with CPU stacks on, then its report.
//
// It is written to show what gpufl finds, so it carries the habits a real loop
// picks up: pageable host buffers, a synchronization in every step, a kernel
// with few warps per SM. The report then has kernels with their occupancy, a
// scope tree with GPU time per scope, and insights that name this file's lines.
// Exits 77 (the "skipped" code of test drivers) when no CUDA device is usable,
// so scripts/demo.sh can fall back to the CPU demo.
#include "demo_args.h"

#include <cuda_runtime.h>
#include <gpufl/gpufl.hpp>

#include <cstdio>
#include <string>
#include <vector>

constexpr int kDim = 2048; // square matrices of kDim x kDim floats (16 MiB each)
constexpr int kTile = 16;  // the matmul's shared-memory tile
constexpr int kBatchMiB = 64;

// C = A x B, one 16x16 tile of C per block, through shared memory.
__global__ void matmul_tiled(const float *a, const float *b, float *c, int n) {
    __shared__ float ta[kTile][kTile];
    __shared__ float tb[kTile][kTile];
    int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < n; t += kTile) {
        ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < kTile; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
}

__global__ void bias_relu(float *x, const float *bias, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n * n) x[i] = fmaxf(x[i] + bias[i % n], 0.f);
}

// One block of 32 threads per row: the block limit, not the warps, caps
// this kernel's occupancy (50 % on Hopper), which the report's limiter shows.
__global__ void row_loss(const float *x, float *loss, int n) {
    float s = 0.f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) s += x[blockIdx.x * n + j];
    atomicAdd(loss, s / (n * n));
}

__global__ void sgd_update(float *w, const float *grad, float lr, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n * n) w[i] -= lr * grad[i];
}

namespace {

int failures; // CUDA calls that failed; any makes the demo exit non-zero

void check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return;
    ++failures;
    std::fprintf(stderr, "gpufl_demo_gpu: %s: %s\n", what, cudaGetErrorString(e));
}

const char usage[] =
    "usage: gpufl_demo_gpu [--log-path DIR] [--steps N]\n"
    "Runs a small CUDA training loop under gpufl's Trace engine (CPU stacks on) and\n"
    "prints the gpufl report. Exits 77 when no CUDA device can be used.\n"
    "  --log-path DIR  where session logs go (default: gpufl_demo.log)\n"
    "  --steps N       training steps (default: 50)\n";

} // namespace

int main(int argc, char **argv) {
    gpufl::InitOptions opts;
    opts.app_name = "gpufl_demo";
    opts.profiling_engine = gpufl::ProfilingEngine::Trace;
    opts.enable_stack_trace = true;
    opts.continuous_system_sampling = true;
    opts.system_sample_rate_ms = 20;
    int steps = 50;
    int rc = demo_parse_args(argc, argv, "gpufl_demo_gpu", usage, opts, &steps);
    if (rc >= 0) return rc;
    int devices = 0;
    cudaError_t probe = cudaGetDeviceCount(&devices);
    if (probe != cudaSuccess || devices == 0) {
        std::printf("gpufl_demo_gpu: no usable CUDA device (%s)\n",
                    probe != cudaSuccess ? cudaGetErrorString(probe) : "none found");
        return 77;
    }
    if (!gpufl::init(opts))
        std::fprintf(stderr, "gpufl_demo_gpu: gpufl is off; running unprofiled\n");

    const size_t mat_bytes = sizeof(float) * kDim * kDim, bias_bytes = sizeof(float) * kDim;
    const size_t batch_bytes = size_t(kBatchMiB) << 20;
    float *w, *x, *y, *grad, *bias, *loss, *batch;
    check(cudaMalloc(&w, mat_bytes), "cudaMalloc");
    check(cudaMalloc(&x, mat_bytes), "cudaMalloc");
    check(cudaMalloc(&y, mat_bytes), "cudaMalloc");
    check(cudaMalloc(&grad, mat_bytes), "cudaMalloc");
    check(cudaMalloc(&bias, bias_bytes), "cudaMalloc");
    check(cudaMalloc(&loss, sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&batch, batch_bytes), "cudaMalloc");
    if (failures) return 1;

    // Pageable host memory (std::vector): the copies take the slow, staged path.
    std::vector<float> host(batch_bytes / sizeof(float), 0.5f);
    GFL_SCOPE("load_data") {
        check(cudaMemcpy(batch, host.data(), batch_bytes, cudaMemcpyHostToDevice), "copy batch");
        check(cudaMemcpy(w, host.data(), mat_bytes, cudaMemcpyHostToDevice), "copy weights");
        check(cudaMemcpy(x, host.data(), mat_bytes, cudaMemcpyHostToDevice), "copy inputs");
        check(cudaMemcpy(bias, host.data(), bias_bytes, cudaMemcpyHostToDevice), "copy bias");
    }

    const dim3 tiles(kDim / kTile, kDim / kTile), tile(kTile, kTile);
    const int flat_blocks = (kDim * kDim + 255) / 256;
    float h_loss = 0.f;
    for (int step = 0; step < steps; ++step) {
        gpufl::ScopedMonitor train("train_step", "step=" + std::to_string(step));
        GFL_SCOPE("forward_pass") {
            matmul_tiled<<<tiles, tile>>>(x, w, y, kDim);
            bias_relu<<<flat_blocks, 256>>>(y, bias, kDim);
            check(cudaMemsetAsync(loss, 0, sizeof(float)), "memset loss");
            row_loss<<<kDim, 32>>>(y, loss, kDim);
        }
        GFL_SCOPE("backward_pass") {
            matmul_tiled<<<tiles, tile>>>(y, w, grad, kDim);
            matmul_tiled<<<tiles, tile>>>(x, grad, y, kDim);
        }
        GFL_SCOPE("optimizer_step") {
            sgd_update<<<flat_blocks, 256>>>(w, grad, 1e-7f, kDim);
            check(cudaGetLastError(), "kernel launch");
            // Waiting for the whole step before reading the loss back: the
            // synchronization the sync insights point at, once per step.
            check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
            check(cudaMemcpy(&h_loss, loss, sizeof(float), cudaMemcpyDeviceToHost), "copy loss");
        }
    }
    GFL_SCOPE("evaluate") {
        matmul_tiled<<<tiles, tile>>>(x, w, y, kDim);
        check(cudaMemcpy(host.data(), y, mat_bytes, cudaMemcpyDeviceToHost), "copy outputs");
    }

    for (float *p : {w, x, y, grad, bias, loss, batch}) check(cudaFree(p), "cudaFree");
    gpufl::shutdown();
    gpufl::generateReport();
    std::printf("gpufl_demo_gpu: %d steps, last loss %.4g\n", steps, static_cast<double>(h_loss));
    return failures ? 1 : 0;
}
