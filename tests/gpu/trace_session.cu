// SPDX-License-Identifier: Apache-2.0
// trace_session.cu - a gpufl session with the Trace engine on a real GPU:
// known work (51 kernels on two streams, three copies, a memset, syncs)
// inside a scope, then the session's device.log is read back and checked.
// Usage: trace_session LOG_DIR; prints one line per check, exit 0 when all pass.
#include <cuda_runtime.h>
#include <gpufl/gpufl.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

__global__ void spin(float *x, int iters) {
    float v = x[threadIdx.x];
    for (int i = 0; i < iters; ++i) v = v * 0.999f + 0.001f;
    x[threadIdx.x] = v;
}

static int count(const std::string &text, const std::string &what) {
    int n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: trace_session LOG_DIR\n");
        return 2;
    }
    gpufl::InitOptions o;
    o.app_name = "trace_session";
    o.log_path = argv[1];
    o.profiling_engine = gpufl::ProfilingEngine::Trace;
    o.system_sample_rate_ms = 100;
    if (!gpufl::init(o)) std::printf("FAIL  init: %s\n", gpufl_last_error());

    const size_t n = 1 << 20;
    float *d, *pinned, *h = new float[n]();
    cudaMalloc(&d, n * sizeof(float));
    cudaMallocHost(&pinned, n * sizeof(float));
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    GFL_SCOPE("gpu_work") {
        cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
        cudaMemcpyAsync(pinned, d, n * sizeof(float), cudaMemcpyDeviceToHost, s1);
        cudaMemcpyAsync(d + n / 2, d, n / 2 * sizeof(float), cudaMemcpyDeviceToDevice, s1);
        cudaMemsetAsync(d, 0, n * sizeof(float), s2);
        for (int i = 0; i < 51; ++i) spin<<<4, 128, 0, (i & 1) ? s1 : s2>>>(d, 1000);
        cudaStreamSynchronize(s1);
        cudaStreamSynchronize(s2);
        cudaDeviceSynchronize();
    }
    char dir[4096];
    gpufl_session_dir(dir, sizeof dir);
    gpufl::shutdown();

    std::ifstream in(std::string(dir) + "/device.log");
    std::string line, caps, all;
    int kernels = 0, copies = 0, memsets = 0, syncs = 0;
    while (std::getline(in, line)) {
        all += line + "\n";
        if (line.find("\"type\":\"capabilities\"") != std::string::npos) caps = line;
        auto rows = [&](const char *type) {
            if (line.find(std::string("{\"type\":\"") + type + "\"") != 0) return 0;
            size_t a = line.find("\"start_ns\":["), b = line.find(']', a);
            return count(line.substr(a, b - a), ",") + 1;
        };
        kernels += rows("kernel");
        copies += rows("copy");
        memsets += rows("memset");
        syncs += rows("sync");
    }
    int failures = 0;
    auto check = [&](const char *what, bool ok, const std::string &detail) {
        std::printf("%s  %s: %s\n", ok ? "PASS" : "FAIL", what, detail.c_str());
        failures += !ok;
    };
    check("engine", caps.find("\"engine\":\"Trace\"") != std::string::npos, caps.substr(0, 200));
    check("kernel rows", kernels == 51, std::to_string(kernels) + " of 51");
    check("copy rows", copies == 3, std::to_string(copies) + " of 3");
    check("memset rows", memsets == 1, std::to_string(memsets) + " of 1");
    check("sync rows", syncs == 3, std::to_string(syncs) + " of 3 (2 stream, 1 context)");
    check("kernel name", all.find("spin") != std::string::npos, "a dict entry holds spin");
    check("no drops", all.find("cupti_records_dropped") == std::string::npos, "no drop event");
    std::printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
