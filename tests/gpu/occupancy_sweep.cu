// SPDX-License-Identifier: Apache-2.0
// occupancy_sweep.cu - gpufl's own occupancy breakdown (lib/nvidia/occupancy.c,
// through lib/nvidia/cuda.c) against the driver's
// cuOccupancyMaxActiveBlocksPerMultiprocessor on a real GPU, over kernels of
// many register and shared-memory footprints times block sizes, dynamic
// shared memory sizes and carveouts. Prints the disagreements and a total
// line; exit 0 when every shape agrees.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
extern "C" {
#include "nvidia/cuda.h"
#include <gpufl/gpufl.h>
}

template <int R, int S> __global__ void __maxnreg__(R) kern(float *out, int n) {
    __shared__ float buf[S > 0 ? S / 4 : 1];
    extern __shared__ float dyn[];
    constexpr int N = R > 40 ? R - 12 : 24;
    float v[N];
#pragma unroll
    for (int i = 0; i < N; i++) v[i] = out[threadIdx.x + i * n];
    for (int k = 0; k < n; k++)
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = v[i] * v[(i + 7) % N] + v[(i + 3) % N];
    if (S > 0) buf[threadIdx.x % (S > 0 ? S / 4 : 1)] = v[0];
    dyn[0] = v[1];
    __syncthreads();
    float s = 0;
#pragma unroll
    for (int i = 0; i < N; i++) s += v[i] * (float)i;
    out[threadIdx.x] = s + (S > 0 ? buf[(threadIdx.x + 1) % (S / 4)] : 0) + dyn[1];
}

typedef void (*kfn)(float *, int);
#define K(R) kern<R, 0>, kern<R, 1000>, kern<R, 16384>, kern<R, 49152>
static kfn kernels[] = {K(24), K(32),  K(40),  K(56),  K(64),  K(72),  K(80),
                        K(96), K(128), K(152), K(168), K(200), K(232), K(255)};

int main() {
    if (cudaFree(0) != cudaSuccess) {
        printf("no device\n");
        return 1;
    }
    gpufl__cuda_t *c;
    char why[256];
    if (gpufl__cuda_open(&c, why, sizeof why) != 0) {
        printf("open: %s\n", why);
        return 1;
    }
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    printf("device %s cc %d.%d driver %d\n", p.name, p.major, p.minor,
           gpufl__cuda_driver_version(c));
    const int blocks[] = {1,   31,  32,  33,  64,  96,  128, 160, 192,
                          224, 256, 320, 384, 512, 640, 768, 896, 1024};
    const int dyns[] = {0, 1, 1024, 20000, 49152, 102400, 150000, 200000, 231424, 232448};
    const int carves[] = {-1, 0, 10, 25, 33, 50, 66, 75, 90, 100};
    long total = 0, agree = 0, errors = 0, refused = 0, shown = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        CUfunction f;
        cudaGetFuncBySymbol((cudaFunction_t *)&f, (const void *)kernels[ki]);
        cudaFuncAttributes a;
        cudaFuncGetAttributes(&a, kernels[ki]);
        cudaFuncSetAttribute(kernels[ki], cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)(p.sharedMemPerBlockOptin - a.sharedSizeBytes));
        printf("kernel %zu: regs %d static %zu local %zu maxthreads %d\n", ki, a.numRegs,
               a.sharedSizeBytes, a.localSizeBytes, a.maxThreadsPerBlock);
        for (int carve : carves) {
            cudaFuncSetAttribute(kernels[ki], cudaFuncAttributePreferredSharedMemoryCarveout,
                                 carve);
            for (int b : blocks) {
                if (b > a.maxThreadsPerBlock) continue;
                for (int d : dyns) {
                    if ((size_t)d + a.sharedSizeBytes > p.sharedMemPerBlockOptin) continue;
                    gpufl__kernel_occupancy_t o;
                    total++;
                    if (gpufl__cuda_kernel_occupancy(&o, c, f, b, (size_t)d) != 0) {
                        errors++;
                        if (shown++ < 40) printf("ERROR %s\n", gpufl_last_error());
                        continue;
                    }
                    if (o.computed_status != 0) refused++;
                    if (o.agrees) {
                        agree++;
                        continue;
                    }
                    if (shown++ < 60)
                        printf("DISAGREE kernel %zu regs %d static %d carve %d block %d dyn %d: "
                               "driver %d ours %d (w %d r %d s %d b %d) cfg %d status %d\n",
                               ki, o.kernel.registers_per_thread, o.kernel.static_smem_bytes,
                               o.kernel.carveout_pct, b, d, o.driver_blocks_per_sm,
                               o.computed.blocks_per_sm, o.computed.limit_warps,
                               o.computed.limit_registers, o.computed.limit_smem,
                               o.computed.limit_blocks, o.computed.smem_config_bytes,
                               o.computed_status);
                }
            }
        }
    }
    printf("total %ld agree %ld disagree %ld errors %ld computation refused %ld\n", total, agree,
           total - agree - errors, errors, refused);
    gpufl__cuda_close(c);
    return total > 0 && agree == total ? 0 : 1;
}
