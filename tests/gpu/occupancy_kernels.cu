// SPDX-License-Identifier: Apache-2.0
// occupancy_kernels.cu - the reference workload of the occupancy check
// (tests/gpu/compare_ncu.py): kernels with deliberately different resource use
// (block sizes 32..1024, register pressure, static and dynamic shared memory,
// local memory, a cooperative and a cudaLaunchKernelEx cluster launch), each
// launched once inside a gpufl Trace session, so the kernel_config records
// gpufl writes can be compared with what Nsight Compute reports for the same
// launches.
//
// Usage: occupancy_kernels LOG_DIR
// Prints, per launch, one "launch ..." line of key=value pairs with what the
// CUDA runtime says about the function and its occupancy (a third reference),
// then "session_dir=...". Runs the same under ncu, where gpufl may lose CUPTI
// (it records why and goes on). Exit 0 when every launch succeeded; any CUDA
// error is fatal and printed with the launch it belongs to.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <gpufl/gpufl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cg = cooperative_groups;

// The kernels are extern "C++" globals with simple mangled names, so the
// names CUPTI and ncu report stay short and identical.

// Light: a few registers, no shared memory. With 32 threads the SM's block
// limit decides; launched again with 96 threads for a second config.
__global__ void occ_light(float *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x * 0.5f;
}

// 1024 threads, few registers: the warp limit decides (2 blocks per SM).
__global__ void occ_full_block(float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = out[i] * 2.0f + 1.0f;
}

// Keeps `Live` values alive across a loop so the compiler needs about that
// many registers; the rotation makes every value depend on the others.
template <int Live> __device__ float keep_live(const float *in, int n, int rounds) {
    float v[Live];
#pragma unroll
    for (int i = 0; i < Live; ++i) v[i] = in[(threadIdx.x * 7 + i * 131) % n];
    for (int r = 0; r < rounds; ++r) {
        float first = v[0];
#pragma unroll
        for (int i = 0; i < Live - 1; ++i) v[i] = fmaf(v[i], v[i + 1], 0.25f * v[(i + 3) % Live]);
        v[Live - 1] = fmaf(v[Live - 1], first, 0.5f);
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < Live; ++i) s += v[i] * (float)(i + 1);
    return s;
}

// 1024 threads and 40 registers (capped with __maxnreg__): the register
// file decides (one block per SM, half the warps).
__global__ void __maxnreg__(40) occ_regs_1024(const float *in, float *out, int n, int rounds) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = keep_live<32>(in, n, rounds);
}

// About 80 registers with 128 threads: a register limit that is not a power
// of two.
__global__ void occ_regs_mid(const float *in, float *out, int n, int rounds) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = keep_live<64>(in, n, rounds);
}

// 256 threads and well over 128 registers: register-limited at one block.
__global__ void __launch_bounds__(256, 1)
    occ_regs_heavy(const float *in, float *out, int n, int rounds) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = keep_live<160>(in, n, rounds);
}

// 48 KiB of static shared memory, the most a block may declare statically.
__global__ void occ_static_smem_48k(float *out) {
    __shared__ float tile[12288];
    for (int i = threadIdx.x; i < 12288; i += blockDim.x) tile[i] = (float)i;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 97) % 12288];
}

// 8 KiB of static shared memory with 64 threads: shared memory limits at a
// count that is not a power of two.
__global__ void occ_static_smem_8k(float *out) {
    __shared__ float tile[2048];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) tile[i] = (float)i;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 31) % 2048];
}

// Dynamic shared memory only; its size comes from the launch.
__global__ void occ_dynamic_smem(float *out, int floats) {
    extern __shared__ float dyn[];
    for (int i = threadIdx.x; i < floats; i += blockDim.x) dyn[i] = (float)i;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = dyn[(threadIdx.x * 13) % floats];
}

// A large per-thread array indexed at run time lives in local memory.
__global__ void occ_local_memory(float *out, int pick) {
    float scratch[512];
    for (int i = 0; i < 512; ++i) scratch[i] = (float)(i ^ threadIdx.x);
    out[blockIdx.x * blockDim.x + threadIdx.x] = scratch[(pick + threadIdx.x) & 511];
}

// Launched cooperatively: every block waits for all the others once.
__global__ void occ_cooperative(float *out) {
    cg::grid_group grid = cg::this_grid();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = (float)i;
    grid.sync();
    out[i] += out[(i + blockDim.x) % (gridDim.x * blockDim.x)];
}

// Launched with cudaLaunchKernelEx in clusters of two blocks, with dynamic
// shared memory.
__global__ void occ_cluster(float *out, int floats) {
    extern __shared__ float dyn[];
    for (int i = threadIdx.x; i < floats; i += blockDim.x) dyn[i] = (float)(i + blockIdx.x);
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = dyn[threadIdx.x % floats];
}

namespace {

void fail_cuda(cudaError_t e, const char *what, const char *label) {
    std::fprintf(stderr, "FAIL  %s (%s): %s: %s\n", what, label, cudaGetErrorName(e),
                 cudaGetErrorString(e));
    std::exit(1);
}

#define CHECK(call, label)                                                                         \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) fail_cuda(e_, #call, label);                                        \
    } while (0)

int sm_count = 0;
int launches = 0; // launches described, printed at the end

// Prints what the runtime says about a function and the occupancy of one
// launch configuration; compare_ncu.py reads these lines.
void describe(const char *label, const void *fn, int block, size_t dyn_smem, int grid,
              const char *how) {
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, fn), label);
    const char *name = "?"; // informative only: the checks match launches by order
    if (cudaFuncGetName(&name, fn) != cudaSuccess) {
        name = "?";
        cudaGetLastError();
    }
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, block, dyn_smem), label);
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0), label);
    ++launches;
    int warps_per_block = (block + p.warpSize - 1) / p.warpSize;
    int max_warps = p.maxThreadsPerMultiProcessor / p.warpSize;
    std::printf("launch label=%s name=%s how=%s grid=%d block=%d dynamic_smem_bytes=%zu "
                "registers=%d static_smem_bytes=%zu local_bytes_per_thread=%zu "
                "max_threads_per_block=%d blocks_per_sm=%d active_warps=%d max_warps=%d "
                "occupancy_pct=%.4f\n",
                label, name, how, grid, block, dyn_smem, a.numRegs, a.sharedSizeBytes,
                a.localSizeBytes, a.maxThreadsPerBlock, blocks, blocks * warps_per_block, max_warps,
                100.0 * blocks * warps_per_block / max_warps);
}

// One launch with <<<>>>, checked and waited for.
template <typename... Args>
void launch(const char *label, void (*kernel)(Args...), int grid, int block, size_t dyn_smem,
            Args... args) {
    if (dyn_smem > 48 * 1024)
        CHECK(cudaFuncSetAttribute(reinterpret_cast<const void *>(kernel),
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn_smem),
              label);
    describe(label, reinterpret_cast<const void *>(kernel), block, dyn_smem, grid,
             "triple_chevron");
    kernel<<<grid, block, dyn_smem>>>(args...);
    CHECK(cudaGetLastError(), label);
    CHECK(cudaDeviceSynchronize(), label);
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 2 || std::strcmp(argv[1], "--help") == 0) {
        bool help = argc == 2;
        std::fprintf(help ? stdout : stderr,
                     "usage: occupancy_kernels LOG_DIR\n"
                     "Launches kernels of different resource use once each in a gpufl Trace\n"
                     "session under LOG_DIR; prints the runtime's view of each launch.\n");
        return help ? 0 : 2;
    }
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "occupancy_kernels";
    o.log_path = argv[1];
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    // Under ncu gpufl may not get CUPTI; that is recorded, and the run goes on.
    if (gpufl_init(&o) != 0)
        std::printf("WARN  gpufl_init failed (%s): the launches run untraced\n",
                    gpufl_last_error());

    CHECK(cudaSetDevice(0), "setup");
    CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0), "setup");
    const int n = 1 << 22;
    float *in = nullptr, *out = nullptr;
    CHECK(cudaMalloc(&in, n * sizeof(float)), "setup");
    CHECK(cudaMalloc(&out, n * sizeof(float)), "setup");
    CHECK(cudaMemset(in, 0, n * sizeof(float)), "setup");

    // Grids stay small: the configurations matter here, not the work.
    launch("light_32", occ_light, 64, 32, 0, out);
    launch("light_96", occ_light, 64, 96, 0, out);
    launch("full_block_1024", occ_full_block, 8, 1024, 0, out);
    launch("regs_1024", occ_regs_1024, 4, 1024, 0, (const float *)in, out, n, 4);
    launch("regs_mid_128", occ_regs_mid, 16, 128, 0, (const float *)in, out, n, 4);
    launch("regs_heavy_256", occ_regs_heavy, 16, 256, 0, (const float *)in, out, n, 4);
    launch("static_smem_48k_128", occ_static_smem_48k, 16, 128, 0, out);
    launch("static_smem_8k_64", occ_static_smem_8k, 64, 64, 0, out);
    launch("dynamic_smem_110k_256", occ_dynamic_smem, 16, 256, (size_t)110 * 1024, out,
           110 * 1024 / 4);
    launch("dynamic_smem_200k_96", occ_dynamic_smem, 16, 96, (size_t)200 * 1024, out,
           200 * 1024 / 4);
    launch("local_memory_768", occ_local_memory, 4, 768, 0, out, 5);

    { // cooperative: all blocks must be resident at once
        const void *fn = reinterpret_cast<const void *>(occ_cooperative);
        int per_sm = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, 512, 0), "cooperative");
        int grid = per_sm * sm_count;
        describe("cooperative_512", fn, 512, 0, grid, "cooperative");
        void *args[] = {&out};
        CHECK(cudaLaunchCooperativeKernel(fn, dim3(grid), dim3(512), args, 0, nullptr),
              "cooperative");
        CHECK(cudaDeviceSynchronize(), "cooperative");
    }
    { // cudaLaunchKernelEx with a cluster dimension
        const size_t dyn = 20 * 1024;
        int floats = (int)(dyn / 4);
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = 2;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3(32);
        cfg.blockDim = dim3(128);
        cfg.dynamicSmemBytes = dyn;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        describe("cluster_ex_128", reinterpret_cast<const void *>(occ_cluster), 128, dyn, 32,
                 "launch_kernel_ex_cluster2");
        CHECK(cudaLaunchKernelEx(&cfg, occ_cluster, out, floats), "cluster");
        CHECK(cudaDeviceSynchronize(), "cluster");
    }

    CHECK(cudaFree(in), "teardown");
    CHECK(cudaFree(out), "teardown");
    char dir[4096] = "";
    if (gpufl_session_dir(dir, sizeof dir) < 0) std::snprintf(dir, sizeof dir, "none");
    gpufl_shutdown();
    std::printf("session_dir=%s\n", dir);
    std::printf("launches=%d\n", launches);
    return 0;
}
