// SPDX-License-Identifier: Apache-2.0
// cupti_check.cu - the CUPTI activity module on a real GPU: starts it before
// any CUDA call, runs known work (kernels on two streams, copies in every
// direction, a memset, syncs), stops, and checks what came back: counts,
// durations against CUDA events, the shared clock, copy sizes and kinds.
// Exit 0 when every check passes; prints one line per check.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <cstdarg>
#include <string>
#include <vector>

extern "C" {
#include "nvidia/cupti.h"
}

namespace {

struct Seen {
    std::vector<gpufl__cupti_kernel_t> kernels;
    std::vector<gpufl__cupti_copy_t> copies;
    std::vector<gpufl__cupti_sync_t> syncs;
    std::vector<std::string> names;
    int memsets = 0;
    unsigned long long dropped = 0;
};

void on_kernel(void *u, const gpufl__cupti_kernel_t *k) {
    Seen *s = static_cast<Seen *>(u);
    s->kernels.push_back(*k);
    s->names.push_back(k->name ? k->name : "");
}
void on_copy(void *u, const gpufl__cupti_copy_t *c) {
    static_cast<Seen *>(u)->copies.push_back(*c);
}
void on_memset(void *u, const gpufl__cupti_memset_t *) { static_cast<Seen *>(u)->memsets++; }
void on_sync(void *u, const gpufl__cupti_sync_t *s) { static_cast<Seen *>(u)->syncs.push_back(*s); }
void on_dropped(void *u, uint64_t n) { static_cast<Seen *>(u)->dropped += n; }

__global__ void spin(float *x, int iters) {
    float v = x[threadIdx.x];
    for (int i = 0; i < iters; ++i) v = v * 0.999f + 0.001f;
    x[threadIdx.x] = v;
}

int failures = 0;
void check(const char *what, bool ok, const char *fmt, ...) {
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    printf("%s  %s: %s\n", ok ? "PASS" : "FAIL", what, detail);
    failures += !ok;
}

int64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

} // namespace

int main() {
    char why[256];
    gpufl__cupti_t *c = nullptr;
    if (gpufl__cupti_open(&c, nullptr, why, sizeof why) != 0) {
        printf("FAIL  open: %s\n", why);
        return 1;
    }
    gpufl__cupti_config_t cfg = {sizeof cfg, 0, 0, GPUFL_CUPTI_SYNC};
    if (gpufl__cupti_start(c, &cfg, why, sizeof why) != 0) {
        printf("FAIL  start: %s\n", why);
        return 1;
    }
    printf("INFO  library %s, CUPTI API %u, shared clock %d\n", gpufl__cupti_library(c),
           gpufl__cupti_api_version(c), gpufl__cupti_shared_clock(c));

    float *d = nullptr, *h = nullptr, *pinned = nullptr;
    const size_t n = 1 << 20;
    cudaMalloc(&d, n * sizeof(float));
    h = (float *)calloc(n, sizeof(float));
    cudaMallocHost(&pinned, n * sizeof(float));
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);

    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);               // pageable HtoD
    cudaMemcpyAsync(pinned, d, n * sizeof(float), cudaMemcpyDeviceToHost, s1); // pinned DtoH
    cudaMemcpyAsync(d + n / 2, d, n / 2 * sizeof(float), cudaMemcpyDeviceToDevice, s1);
    cudaMemsetAsync(d, 0, n * sizeof(float), s2);
    cudaDeviceSynchronize();

    int64_t before_launch = mono_ns();
    cudaEventRecord(e0, s1);
    spin<<<1, 256, 0, s1>>>(d, 2000000); // a ~ms-long kernel to time against events
    cudaEventRecord(e1, s1);
    for (int i = 0; i < 50; ++i) spin<<<4, 128, 0, (i & 1) ? s1 : s2>>>(d, 1000);
    cudaStreamSynchronize(s1);
    cudaStreamSynchronize(s2);
    cudaEventSynchronize(e1);
    float event_ms = 0;
    cudaEventElapsedTime(&event_ms, e0, e1);
    cudaError_t err = cudaGetLastError();

    Seen seen;
    gpufl__cupti_sink_t sink = {};
    sink.kernel = on_kernel;
    sink.copy = on_copy;
    sink.memset = on_memset;
    sink.sync = on_sync;
    sink.dropped = on_dropped;
    gpufl__cupti_stop(c, &sink, &seen);

    check("CUDA calls", err == cudaSuccess, "%s", cudaGetErrorString(err));
    check("kernel records", seen.kernels.size() == 51, "%zu of 51", seen.kernels.size());
    check("no drops", seen.dropped == 0, "%llu dropped", seen.dropped);
    if (!seen.kernels.empty()) {
        const gpufl__cupti_kernel_t &k = seen.kernels[0];
        double ms = (k.end_ns - k.start_ns) / 1e6;
        check("long kernel duration vs CUDA events",
              ms > 0 && ms <= event_ms && event_ms - ms < 0.05 * event_ms + 0.02,
              "%.4f ms (events %.4f ms)", ms, event_ms);
        check("launch configuration",
              k.grid_x == 1 && k.block_x == 256 && k.registers_per_thread > 0,
              "grid %d block %d regs %u", k.grid_x, k.block_x, k.registers_per_thread);
        check(
            "shared clock", k.start_ns >= before_launch && k.start_ns - before_launch < 1000000000,
            "kernel start - CPU time before launch = %.3f ms", (k.start_ns - before_launch) / 1e6);
        check("kernel name", seen.names[0].find("spin") != std::string::npos, "%s",
              seen.names[0].c_str());
        int streams[2] = {0, 0};
        for (auto &kk : seen.kernels) streams[kk.stream_id % 2]++;
        printf("INFO  kernels per stream parity: %d / %d\n", streams[0], streams[1]);
    }
    int htod = 0, dtoh = 0, dtod = 0;
    for (auto &cp : seen.copies) {
        if (cp.copy_kind == 1 && cp.bytes == n * sizeof(float) && cp.src_kind == 1) htod++;
        if (cp.copy_kind == 2 && cp.bytes == n * sizeof(float) && cp.dst_kind == 2) dtoh++;
        if (cp.copy_kind == 8 && cp.bytes == n / 2 * sizeof(float)) dtod++;
    }
    check("copies", htod == 1 && dtoh == 1 && dtod == 1 && seen.copies.size() == 3,
          "%zu records: HtoD pageable %d, DtoH pinned %d, DtoD %d", seen.copies.size(), htod, dtoh,
          dtod);
    check("memset", seen.memsets == 1, "%d", seen.memsets);
    int stream_syncs = 0, ctx_syncs = 0, event_syncs = 0;
    for (auto &sy : seen.syncs) {
        stream_syncs += sy.type == 3;
        ctx_syncs += sy.type == 4;
        event_syncs += sy.type == 1;
    }
    check("syncs", stream_syncs == 2 && ctx_syncs >= 1 && event_syncs == 1,
          "%zu records: stream %d, context %d, event %d", seen.syncs.size(), stream_syncs,
          ctx_syncs, event_syncs);
    gpufl__cupti_stats_t st;
    gpufl__cupti_stats(&st, c);
    printf("INFO  buffers given %llu completed %llu drained %llu refused %llu, records %llu\n",
           (unsigned long long)st.buffers_given, (unsigned long long)st.buffers_completed,
           (unsigned long long)st.buffers_drained, (unsigned long long)st.buffers_refused,
           (unsigned long long)st.records);
    gpufl__cupti_close(c);
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
