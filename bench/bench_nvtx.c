// SPDX-License-Identifier: Apache-2.0
/*
 * bench_nvtx.c - what an NVTX range costs under gpufl (docs/nvtx.md, "Cost"):
 * push+pop pairs recorded by gpufl under a Trace session (over the test
 * fakes), NVTX with no tool (a module that cannot be injected), and a gpufl
 * scope, in alternating batches in one process; then the same NVTX calls
 * with gpufl injected but no session. Prints the median ns per pair of each
 * and their ratios. Usage: FAKE_CUPTI FAKE_CUDA PLAIN_MODULE [LOG_PATH].
 */
#include <gpufl/gpufl.h>

#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAIRS  2000 /* per batch: 6000 ring records at most, under the 8192 of a ring */
#define ROUNDS 41

enum { PLAIN, NVTX_GPUFL, SCOPE, KINDS };
static const char *const kind_names[KINDS] = {"NVTX, no tool", "NVTX, gpufl capturing",
                                              "gpufl scope"};

static void (*plain_pairs)(int);

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static __attribute__((noinline)) void nvtx_pairs(int n) {
    for (int i = 0; i < n; i++) {
        nvtxRangePushA("bench_range");
        __asm__ volatile("" ::: "memory");
        nvtxRangePop();
    }
}

static __attribute__((noinline)) void scope_pairs(int n) {
    for (int i = 0; i < n; i++) {
        gpufl_scope_t s = gpufl_scope_begin("bench_range", NULL);
        __asm__ volatile("" ::: "memory");
        gpufl_scope_end(s);
    }
}

static double batch_ns(int kind) {
    int64_t t0 = now_ns();
    if (kind == PLAIN)
        plain_pairs(PAIRS);
    else if (kind == NVTX_GPUFL)
        nvtx_pairs(PAIRS);
    else
        scope_pairs(PAIRS);
    return (double)(now_ns() - t0) / PAIRS;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s FAKE_CUPTI FAKE_CUDA PLAIN_MODULE [LOG_PATH]\n", argv[0]);
        return 2;
    }
    void *plain = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    void *sym = plain ? dlsym(plain, "bench_nvtx_plain_pairs") : NULL;
    if (!sym) {
        fprintf(stderr, "bench_nvtx: %s\n", dlerror());
        return 2;
    }
    memcpy(&plain_pairs, &sym, sizeof sym);
    unsetenv("NVTX_INJECTION64_PATH");
    setenv("GPUFL_CUPTI_LIBRARY", argv[1], 1);
    setenv("GPUFL_CUDA_LIBRARY", argv[2], 1);
    unsetenv("GPUFL_FAKE_CUPTI");

    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "bench_nvtx";
    o.log_path = argc > 4 ? argv[4] : "/tmp/gpufl-bench-nvtx";
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.backend = GPUFL_BACKEND_NVIDIA;
    if (gpufl_init(&o) != 0) {
        fprintf(stderr, "bench_nvtx: init: %s\n", gpufl_last_error());
        return 1;
    }
    /* Warm up: NVTX's first call loads gpufl (NVTX_INJECTION64_PATH, set by init). */
    for (int k = 0; k < KINDS; k++) batch_ns(k), gpufl_flush();
    static double v[KINDS][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int j = 0; j < KINDS; j++) {
            int k = (r + j) % KINDS; /* rotate the order: no kind always runs first */
            v[k][r] = batch_ns(k);
            gpufl_flush(); /* the collector drains, outside the timed batch */
        }
    gpufl_stats_t stats = {.size = sizeof stats};
    gpufl_get_stats(&stats);
    gpufl_shutdown();

    /* gpufl injected, no session: the callbacks return at once. */
    static double idle[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        idle[r % 2][r] = batch_ns(r % 2 ? NVTX_GPUFL : PLAIN);
        idle[(r + 1) % 2][r] = batch_ns((r + 1) % 2 ? NVTX_GPUFL : PLAIN);
    }

    double med[KINDS];
    printf("bench_nvtx: %d batches of %d push+pop pairs each, median ns per pair\n", ROUNDS, PAIRS);
    for (int k = 0; k < KINDS; k++) {
        med[k] = median(v[k], ROUNDS);
        printf("  %-32s %8.1f ns\n", kind_names[k], med[k]);
    }
    double idle_plain = median(idle[0], ROUNDS), idle_gpufl = median(idle[1], ROUNDS);
    printf("  %-32s %8.1f ns\n", "NVTX, no tool (after the session)", idle_plain);
    printf("  %-32s %8.1f ns\n", "NVTX, gpufl injected, no session", idle_gpufl);
    printf("ratios: capturing / gpufl scope %.2f; capturing - no tool %.1f ns; "
           "injected idle - no tool %.1f ns\n",
           med[NVTX_GPUFL] / med[SCOPE], med[NVTX_GPUFL] - med[PLAIN], idle_gpufl - idle_plain);
    printf("records dropped: %llu, written: %llu\n", (unsigned long long)stats.records_dropped,
           (unsigned long long)stats.records_written);
    /* Each pair of NVTX ranges and of scopes is a begin and an end record. */
    uint64_t want = (uint64_t)(ROUNDS + 1) * PAIRS * 4;
    if (stats.records_written < want) {
        fprintf(stderr,
                "bench_nvtx: %llu records, not the %llu of captured ranges: is the "
                "Trace engine running (fake libcupti path)?\n",
                (unsigned long long)stats.records_written, (unsigned long long)want);
        return 1;
    }
    return stats.records_dropped == 0 ? 0 : 1;
}
