// SPDX-License-Identifier: Apache-2.0
// known_kernels.cuh - the reference kernels of the deep engines' fidelity
// checks, whose behaviour is known from their source: shared by
// pc_sampling_kernels.cu (run under gpufl) and sass_metrics_probe.cu (CUPTI alone), so
// that every tool measures the same code. extern "C" keeps their names plain.
//   divergent     even and odd lanes take different arithmetic branches
//                 (thread efficiency about 0.5 in the loops);
//   strided       each thread loads one float 32 floats from its neighbour's
//                 (one 32-byte sector per thread: uncoalesced);
//   stream_triad  a coalesced triad a = b + s*c (memory bound);
//   fma_chains    four independent FMA chains per thread (compute bound).
#ifndef GPUFL_TESTS_GPU_KNOWN_KERNELS_CUH
#define GPUFL_TESTS_GPU_KNOWN_KERNELS_CUH

#include <cstddef>

extern "C" __global__ void divergent(float *out, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (float)i;
    if (threadIdx.x & 1) {
        for (int k = 0; k < iters; ++k) v = v * 1.0001f + 0.5f;
    } else {
        for (int k = 0; k < iters; ++k) v = v * 0.9999f - 0.25f;
    }
    out[i] = v;
}

extern "C" __global__ void strided(const float *in, float *out, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t j = (i * 32) % n;
    out[i] = in[j] * 2.0f;
}

extern "C" __global__ void stream_triad(float *a, const float *b, const float *c, float s,
                                        size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        a[i] = b[i] + s * c[i];
}

extern "C" __global__ void fma_chains(float *out, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = i, b = i + 1, c = i + 2, d = i + 3;
    for (int k = 0; k < iters; ++k) {
        a = a * 1.0001f + 0.5f;
        b = b * 0.9999f + 0.25f;
        c = c * 1.0002f - 0.5f;
        d = d * 0.9998f - 0.25f;
    }
    out[i] = a + b + c + d;
}

#endif
