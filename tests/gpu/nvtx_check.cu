// SPDX-License-Identifier: Apache-2.0
// nvtx_check.cu - NVTX ranges around kernels of known duration under a Trace
// session (docs/nvtx.md): STEPS push/pop ranges "step", each holding a
// 200 us kernel and a range "forward" of domain "model" with a 400 us
// kernel, all inside one start/end range "epoch". Each kernel is timed with
// CUDA events (an independent reference). The steps are queued without a
// wait between them, behind a kernel launched before the epoch: an event
// recorded on an idle GPU takes its time at once, before the host has
// finished launching the kernel after it, and would count that host time. Linked with libgpufl.a, so NVTX
// finds gpufl through its static pre-injection pointer, no variable set.
// Prints one JSON line: the session directory and, per scope path, the
// kernels and GPU time it must show (nvtx_check.py compares).
// Usage: nvtx_check LOG_DIR [STEPS]
#include <cuda_runtime.h>
#include <gpufl/gpufl.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

static const char *kProgram = "nvtx_check";
#include "cuda_check.cuh"

__global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s LOG_DIR [STEPS]\n", argv[0]);
        return 2;
    }
    int steps = argc > 2 ? std::atoi(argv[2]) : 20;
    int clock_khz = 0;
    CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    long long short_cycles = (long long)clock_khz * 200 / 1000; // ~200 us
    long long long_cycles = (long long)clock_khz * 400 / 1000;  // ~400 us
    CHECK(cudaFree(0));
    spin<<<1, 32>>>(1000); // warm up, outside every range
    CHECK(cudaDeviceSynchronize());

    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "nvtx_check";
    o.log_path = argv[1];
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    if (gpufl_init(&o) != 0) {
        std::fprintf(stderr, "nvtx_check: init: %s\n", gpufl_last_error());
        return 1;
    }
    nvtxDomainHandle_t model = nvtxDomainCreateA("model");
    cudaEvent_t *ev = (cudaEvent_t *)std::calloc((size_t)steps * 4, sizeof *ev);
    if (ev == NULL) return 1;
    for (int i = 0; i < steps * 4; i++) CHECK(cudaEventCreate(&ev[i]));
    spin<<<1, 32>>>(long_cycles); // keeps the stream busy while the steps are queued
    nvtxRangeId_t epoch = nvtxRangeStartA("epoch");
    for (int s = 0; s < steps; s++) {
        cudaEvent_t *e = &ev[s * 4];
        nvtxRangePushA("step");
        CHECK(cudaEventRecord(e[0]));
        spin<<<1, 32>>>(short_cycles);
        CHECK(cudaEventRecord(e[1]));
        nvtxEventAttributes_t a = {};
        a.version = NVTX_VERSION;
        a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = "forward";
        a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
        a.payload.iValue = s;
        nvtxDomainRangePushEx(model, &a);
        CHECK(cudaEventRecord(e[2]));
        spin<<<1, 32>>>(long_cycles);
        CHECK(cudaEventRecord(e[3]));
        nvtxDomainRangePop(model);
        nvtxRangePop();
    }
    CHECK(cudaDeviceSynchronize());
    double step_ms = 0, forward_ms = 0;
    for (int s = 0; s < steps; s++) {
        float a_ms = 0, b_ms = 0;
        CHECK(cudaEventElapsedTime(&a_ms, ev[s * 4], ev[s * 4 + 1]));
        CHECK(cudaEventElapsedTime(&b_ms, ev[s * 4 + 2], ev[s * 4 + 3]));
        step_ms += a_ms + b_ms;
        forward_ms += b_ms;
    }
    nvtxRangeEnd(epoch);
    char dir[4096];
    if (gpufl_session_dir(dir, sizeof dir) < 0) dir[0] = '\0';
    gpufl_shutdown();
    std::printf("{\"session\": \"%s\", \"steps\": %d, \"expect\": {"
                "\"step\": {\"calls\": %d, \"kernels\": %d, \"gpu_ns\": %.0f}, "
                "\"step/forward\": {\"calls\": %d, \"kernels\": %d, \"gpu_ns\": %.0f, "
                "\"domain\": \"model\"}, "
                "\"epoch\": {\"calls\": 1, \"kernels\": %d, \"gpu_ns\": %.0f}}}\n",
                dir, steps, steps, 2 * steps, step_ms * 1e6, steps, steps, forward_ms * 1e6,
                2 * steps, step_ms * 1e6);
    return 0;
}
