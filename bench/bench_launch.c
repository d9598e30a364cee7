// SPDX-License-Identifier: Apache-2.0
/*
 * bench_launch.c - the cost of gpufl's driver-API callback at a kernel
 * launch, on the fake CUPTI and libcuda of the tests (no GPU needed): a
 * launch loop over 128 functions and 3 block sizes, as a framework makes
 * them, timed per call under engines Monitor (no subscription: the fake's
 * own cost), Trace and PcSampling. The difference is gpufl's work at the
 * call (scope, configuration lookup, launch note, launch row), enter and
 * exit callbacks together.
 *
 * Usage: bench_launch FAKE_CUPTI FAKE_CUDA [LAUNCHES]
 */
#include <gpufl/gpufl.h>

#include <cuda.h>
#include <cupti.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef uint32_t (*call_fn)(uint32_t, const void *, const char *);

/* ns per launch call for one engine, one session. */
static double run(gpufl_engine_t engine, call_fn call, CUfunction *f, long n) {
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "bench_launch";
    o.log_path = "/tmp/gpufl-bench-launch";
    o.backend = GPUFL_BACKEND_NVIDIA;
    o.profiling_engine = engine;
    if (gpufl_init(&o) != 0) {
        fprintf(stderr, "bench_launch: init failed: %s\n", gpufl_last_error());
        exit(1);
    }
    cuLaunchKernel_params p = {
        .gridDimX = 132, .gridDimY = 1, .gridDimZ = 1, .blockDimY = 1, .blockDimZ = 1};
    double t0 = seconds();
    for (long i = 0; i < n; i++) {
        p.f = f[i % 128];
        p.blockDimX = 128u << (i % 3);
        call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "kernel");
    }
    double ns = (seconds() - t0) / (double)n * 1e9;
    gpufl_shutdown();
    return ns;
}

int main(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[1], "--help") == 0) {
        printf("usage: bench_launch FAKE_CUPTI FAKE_CUDA [LAUNCHES]\n"
               "  the libraries are the test fakes (build/tests/fakes/cupti/libcupti.so,\n"
               "  build/tests/fakes/libfake_cuda.so); LAUNCHES defaults to 2000000\n");
        return argc < 3 ? 2 : 0;
    }
    long n = argc > 3 ? atol(argv[3]) : 2000000;
    void *cupti = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL), *cuda = dlopen(argv[2], RTLD_NOW);
    if (cupti == NULL || cuda == NULL) {
        fprintf(stderr, "bench_launch: %s\n", dlerror());
        return 1;
    }
    call_fn call;
    void (*set_context)(CUcontext);
    CUfunction (*function)(int, int, int, int, int);
    void *sym[3] = {dlsym(cupti, "fake_cupti_call"), dlsym(cupti, "fake_cupti_set_context"),
                    dlsym(cuda, "fake_cuda_function")};
    if (!sym[0] || !sym[1] || !sym[2]) {
        fprintf(stderr, "bench_launch: these are not gpufl's test fakes\n");
        return 1;
    }
    memcpy(&call, &sym[0], sizeof call);
    memcpy(&set_context, &sym[1], sizeof set_context);
    memcpy(&function, &sym[2], sizeof function);
    setenv("GPUFL_CUPTI_LIBRARY", argv[1], 1);
    setenv("GPUFL_CUDA_LIBRARY", argv[2], 1);
    set_context((CUcontext)(uintptr_t)0x1234);
    CUfunction f[128];
    for (int i = 0; i < 128; i++) f[i] = function(32, 0, 0, 1024, 8);
    /* Side by side, twice, so that drift shows. */
    const gpufl_engine_t engines[] = {GPUFL_ENGINE_MONITOR, GPUFL_ENGINE_TRACE,
                                      GPUFL_ENGINE_PC_SAMPLING};
    const char *names[] = {"Monitor", "Trace", "PcSampling"};
    for (int round = 0; round < 2; round++)
        for (int e = 0; e < 3; e++)
            printf("round %d  %-10s %7.1f ns per launch call\n", round, names[e],
                   run(engines[e], call, f, n));
    return 0;
}
