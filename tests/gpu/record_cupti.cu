// SPDX-License-Identifier: Apache-2.0
// record_cupti.cu - records real CUPTI activity buffers on a GPU machine for
// the fake libcupti to replay in CI (tests/fakes/fake_cupti.c, "replay").
//
// It enables the activity kinds gpufl's Trace engine reads, runs known work
// (kernels of two kinds on two streams, copies in every direction from
// pinned and pageable memory, a memset, stream/event/device syncs, a graph
// launch, stream-ordered allocations) and writes every completed buffer as
// it came from CUPTI. Kernel records hold a pointer to their name in
// CUPTI's memory; the file carries each name with the offset of its record
// so the replay can point it at a copy.
//
// File layout (little-endian):
//   "GPUFLCUPTI1\n"  u32 cupti_api_version  u32 buffer_count
//   per buffer: u64 valid_bytes, the bytes, u32 name_count,
//               per name: u64 record_offset, u32 length, the name's bytes
// Usage: record_cupti OUTPUT.bin ; writes OUTPUT.bin.json with the count of
// each kind recorded (what a replay must deliver) and prints it.
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <ctime>
#include <vector>

#define CHECK_CUPTI(call)                                                                          \
    do {                                                                                           \
        CUptiResult r_ = (call);                                                                   \
        if (r_ != CUPTI_SUCCESS) {                                                                 \
            const char *m_ = "";                                                                   \
            cuptiGetResultString(r_, &m_);                                                         \
            std::fprintf(stderr, "%s failed: %s\n", #call, m_);                                    \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

struct Buffer {
    std::vector<uint8_t> bytes;
    std::vector<std::pair<uint64_t, std::string>> names;
};

static std::vector<Buffer> buffers;
static int counts[64];

// The clock gpufl gives CUPTI, so the recorded times are what gpufl sees.
static uint64_t CUPTIAPI monotonic_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *size = 1 << 20;
    *buffer = static_cast<uint8_t *>(aligned_alloc(8, *size));
    *max_records = 0;
}

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t valid) {
    Buffer b;
    b.bytes.assign(buffer, buffer + valid);
    CUpti_Activity *record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind < 64) counts[record->kind]++;
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            auto *k = reinterpret_cast<CUpti_ActivityKernel10 *>(record);
            b.names.emplace_back(reinterpret_cast<uint8_t *>(record) - buffer,
                                 k->name ? k->name : "");
        }
    }
    if (valid > 0) buffers.push_back(std::move(b));
    std::free(buffer);
}

__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

template <int N> __global__ void stencil(const float *in, float *out, int n) {
    __shared__ float tile[N];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x % N] = i < n ? in[i] : 0.f;
    __syncthreads();
    if (i < n) out[i] = tile[(threadIdx.x + 1) % N] + tile[threadIdx.x % N];
}

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: record_cupti OUTPUT.bin\n");
        return 2;
    }
    CHECK_CUPTI(cuptiActivityRegisterCallbacks(requested, completed));
    CHECK_CUPTI(cuptiActivityRegisterTimestampCallback(monotonic_ns));
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                        CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                        CUPTI_ACTIVITY_KIND_MEMORY2};
    for (CUpti_ActivityKind k : kinds) CHECK_CUPTI(cuptiActivityEnable(k));

    const int n = 1 << 20;
    float *d, *d2, *pinned, *pageable = new float[n]();
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&d2, n * sizeof(float));
    cudaMallocHost(&pinned, n * sizeof(float));
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    cudaEvent_t done;
    cudaEventCreate(&done);

    cudaMemcpy(d, pageable, n * sizeof(float), cudaMemcpyHostToDevice);         // pageable HtoD
    cudaMemcpyAsync(d2, pinned, n * sizeof(float), cudaMemcpyHostToDevice, s1); // pinned HtoD
    cudaMemcpyAsync(d2, d, n * sizeof(float), cudaMemcpyDeviceToDevice, s1);
    cudaMemsetAsync(d, 0, n * sizeof(float), s2);
    for (int i = 0; i < 6; ++i) {
        scale<<<n / 256, 256, 0, s1>>>(d2, 1.0001f, n);
        stencil<128><<<n / 128, 128, 0, s2>>>(d2, d, n);
    }
    cudaEventRecord(done, s2);
    cudaEventSynchronize(done);
    cudaStreamSynchronize(s1);
    cudaMemcpyAsync(pinned, d, n * sizeof(float), cudaMemcpyDeviceToHost, s1);
    cudaMemcpy(pageable, d, n * sizeof(float), cudaMemcpyDeviceToHost);

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
    scale<<<n / 256, 256, 0, s1>>>(d, 0.5f, n);
    stencil<64><<<n / 64, 64, 0, s1>>>(d, d2, n);
    cudaStreamEndCapture(s1, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphLaunch(exec, s1);

    float *pool;
    cudaMallocAsync(&pool, 4 << 20, s2);
    cudaMemsetAsync(pool, 1, 4 << 20, s2);
    cudaFreeAsync(pool, s2);
    cudaDeviceSynchronize();

    CHECK_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    for (CUpti_ActivityKind k : kinds) cuptiActivityDisable(k);

    uint32_t version = 0;
    cuptiGetVersion(&version);
    FILE *f = std::fopen(argv[1], "wb");
    if (!f) {
        std::perror(argv[1]);
        return 1;
    }
    uint32_t count = static_cast<uint32_t>(buffers.size());
    std::fwrite("GPUFLCUPTI1\n", 1, 12, f);
    std::fwrite(&version, 4, 1, f);
    std::fwrite(&count, 4, 1, f);
    for (const Buffer &b : buffers) {
        uint64_t valid = b.bytes.size();
        uint32_t names = static_cast<uint32_t>(b.names.size());
        std::fwrite(&valid, 8, 1, f);
        std::fwrite(b.bytes.data(), 1, valid, f);
        std::fwrite(&names, 4, 1, f);
        for (const auto &nm : b.names) {
            uint64_t offset = nm.first;
            uint32_t length = static_cast<uint32_t>(nm.second.size());
            std::fwrite(&offset, 8, 1, f);
            std::fwrite(&length, 4, 1, f);
            std::fwrite(nm.second.data(), 1, length, f);
        }
    }
    std::fclose(f);
    // What the replay must deliver, beside the file.
    std::string side = std::string(argv[1]) + ".json";
    FILE *j = std::fopen(side.c_str(), "w");
    if (j) {
        std::fprintf(j,
                     "{\"cupti_api_version\": %u, \"buffers\": %u, \"kernels\": %d, "
                     "\"copies\": %d, \"memsets\": %d, \"syncs\": %d, \"allocs\": %d}\n",
                     version, count, counts[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
                     counts[CUPTI_ACTIVITY_KIND_MEMCPY], counts[CUPTI_ACTIVITY_KIND_MEMSET],
                     counts[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION],
                     counts[CUPTI_ACTIVITY_KIND_MEMORY2]);
        std::fclose(j);
    }
    std::printf("recorded %u buffers, CUPTI API %u: kernels %d, copies %d, memsets %d, syncs %d, "
                "memory %d\n",
                count, version, counts[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
                counts[CUPTI_ACTIVITY_KIND_MEMCPY], counts[CUPTI_ACTIVITY_KIND_MEMSET],
                counts[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION], counts[CUPTI_ACTIVITY_KIND_MEMORY2]);
    return 0;
}
