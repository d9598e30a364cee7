// SPDX-License-Identifier: Apache-2.0
/*
 * nvtx_shared.c - NVTX through NVTX_INJECTION64_PATH: a program linked with
 * libgpufl.so and built against the toolkit's NVTX headers makes its first
 * NVTX call after gpufl_init, which pointed the variable at libgpufl.so.
 * Kernels come from the fake libcupti. run_nvtx_report_test.sh then checks
 * `gpufl report` on the session. Usage: LOG_PATH FAKE_CUPTI FAKE_CUDA.
 */
#include <gpufl/gpufl.h>

#include <cuda.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint32_t (*fake_call)(uint32_t cbid, const void *params, const char *symbol);
static int (*fake_add_record)(const char *json);
static CUfunction (*fake_function)(int, int, int, int, int);

static int resolve(void *handle, const char *name, void *slot) {
    void *p = dlsym(handle, name);
    if (!p) {
        fprintf(stderr, "nvtx_shared: the fake lacks %s\n", name);
        return -1;
    }
    memcpy(slot, &p, sizeof p);
    return 0;
}

/* A kernel of 1 us launched now, with its activity record (shorter than the time between
 * launches here: kernels of one stream do not overlap). */
static int launch(CUfunction f, const char *name) {
    cuLaunchKernel_params p = {.f = f,
                               .gridDimX = 8,
                               .gridDimY = 1,
                               .gridDimZ = 1,
                               .blockDimX = 128,
                               .blockDimY = 1,
                               .blockDimZ = 1};
    uint32_t corr = fake_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, name);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long ns = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
    char json[384];
    snprintf(json, sizeof json,
             "{\"kind\": 10, \"start\": %lld, \"end\": %lld, \"name\": \"%s\", "
             "\"correlationId\": %u, \"streamId\": 7, \"gridX\": 8, \"gridY\": 1, \"gridZ\": 1, "
             "\"blockX\": 128, \"blockY\": 1, \"blockZ\": 1}",
             ns, ns + 1000, name, corr);
    return fake_add_record(json);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s LOG_PATH FAKE_CUPTI FAKE_CUDA\n", argv[0]);
        return 2;
    }
    unsetenv("NVTX_INJECTION64_PATH");
    setenv("GPUFL_CUPTI_LIBRARY", argv[2], 1);
    setenv("GPUFL_CUDA_LIBRARY", argv[3], 1);
    unsetenv("GPUFL_FAKE_CUPTI");
    void *cupti = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    void *cuda = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    if (!cupti || !cuda || resolve(cupti, "fake_cupti_call", &fake_call) ||
        resolve(cupti, "fake_cupti_add_record", &fake_add_record) ||
        resolve(cuda, "fake_cuda_function", &fake_function))
        return 3;

    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "nvtx_shared";
    o.log_path = argv[1];
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.backend = GPUFL_BACKEND_NVIDIA;
    if (gpufl_init(&o) != 0) {
        fprintf(stderr, "nvtx_shared: init: %s\n", gpufl_last_error());
        return 3;
    }
    /* gpufl_init named libgpufl.so for NVTX. */
    const char *var = getenv("NVTX_INJECTION64_PATH");
    Dl_info self;
    char a[PATH_MAX], b[PATH_MAX];
    if (!var || !dladdr((void *)gpufl_init, &self) || !realpath(var, a) ||
        !realpath(self.dli_fname, b) || strcmp(a, b) != 0) {
        fprintf(stderr, "nvtx_shared: NVTX_INJECTION64_PATH is %s, not libgpufl.so\n",
                var ? var : "unset");
        return 1;
    }
    CUfunction f = fake_function(32, 0, 0, 1024, 8);
    int rc = 0;
    nvtxDomainHandle_t d = nvtxDomainCreateA("loader");
    for (int step = 0; step < 3; step++) {
        nvtxRangePushA("train_step");
        rc |= launch(f, "_Z7forwardv");
        nvtxEventAttributes_t e = {0};
        e.version = NVTX_VERSION;
        e.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        e.messageType = NVTX_MESSAGE_TYPE_ASCII;
        e.message.ascii = "fetch";
        nvtxDomainRangePushEx(d, &e);
        rc |= launch(f, "_Z5fetchv");
        nvtxDomainRangePop(d);
        nvtxRangePop();
    }
    nvtxRangeId_t r = nvtxRangeStartA("epoch");
    rc |= launch(f, "_Z4tailv");
    nvtxRangeEnd(r);
    gpufl_shutdown();
    return rc ? 1 : 0;
}
