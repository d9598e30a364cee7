// SPDX-License-Identifier: Apache-2.0
/*
 * bench_scope_ab.c - two builds of libgpufl in one process, timed batch by
 * batch: scope begin+end through build A, through build B, and two TSC reads,
 * in rotating order. On a shared VM the cost of the scope code (not of the
 * TSC reads) moves with what the host runs beside it, from one moment to the
 * next; batches a few microseconds apart see the same moment, runs seconds
 * apart do not. Each build is dlopen()ed on its own (RTLD_LOCAL) with its own
 * session; both are called through function pointers, as a call through the
 * GOT.
 */
#include <gpufl/gpufl.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define BATCH   2000 /* 4000 records: half the default ring */
#define BATCHES 400

typedef struct lib {
    const char *path;
    void (*options_init_sized)(gpufl_options_t *, size_t);
    int (*init)(const gpufl_options_t *);
    gpufl_scope_t (*begin_n)(const char *, size_t, const char *, size_t, int32_t, int32_t);
    void (*end)(gpufl_scope_t);
    void (*flush)(void);
    int (*get_stats)(gpufl_stats_t *);
    void (*shutdown)(void);
    const char *(*last_error)(void);
    uint64_t *live;
} lib_t;

static int load(lib_t *l, const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "bench_scope_ab: %s\n", dlerror());
        return -1;
    }
    l->path = path;
    /* Object to function pointer through memcpy: ISO C has no cast for it. */
    struct {
        const char *name;
        void *slot;
        size_t size;
    } syms[] = {
        {"gpufl_options_init_sized", &l->options_init_sized, sizeof l->options_init_sized},
        {"gpufl_init", &l->init, sizeof l->init},
        {"gpufl_scope_begin_n", &l->begin_n, sizeof l->begin_n},
        {"gpufl_scope_end", &l->end, sizeof l->end},
        {"gpufl_flush", &l->flush, sizeof l->flush},
        {"gpufl_get_stats", &l->get_stats, sizeof l->get_stats},
        {"gpufl_shutdown", &l->shutdown, sizeof l->shutdown},
        {"gpufl_last_error", &l->last_error, sizeof l->last_error},
        {"gpufl_internal_live_generation", &l->live, sizeof l->live},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p) {
            fprintf(stderr, "bench_scope_ab: %s has no %s\n", path, syms[i].name);
            return -1;
        }
        memcpy(syms[i].slot, &p, syms[i].size);
    }
    return 0;
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* What GFL_SCOPE does, through the pointers. */
static __attribute__((noinline)) double scope_batch(const lib_t *l) {
    double t0 = now_ns();
    for (int i = 0; i < BATCH; i++) {
        gpufl_scope_t s = __atomic_load_n(l->live, __ATOMIC_RELAXED)
                              ? l->begin_n("bench_scope", 11, NULL, 0, 0, 0)
                              : 0;
        __asm__ volatile("" ::: "memory");
        if (s) l->end(s);
    }
    return (now_ns() - t0) / BATCH;
}

static __attribute__((noinline)) double floor_batch(void) {
    unsigned long long sink = 0;
    double t0 = now_ns();
    for (int i = 0; i < BATCH; i++) {
#if defined(__x86_64__)
        sink += __rdtsc();
        __asm__ volatile("" ::: "memory");
        sink += __rdtsc();
#endif
    }
    double t = (now_ns() - t0) / BATCH;
    __asm__ volatile("" ::"r"(sink));
    return t;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

int main(int argc, char **argv) {
    if (argc < 3 || !strcmp(argv[1], "--help")) {
        puts("usage: bench_scope_ab LIBGPUFL_A LIBGPUFL_B [LOG_DIR]\n"
             "Times scope begin+end through two builds of libgpufl and two rdtsc, batch by "
             "batch in one process.");
        return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 2;
    }
    lib_t lib[2];
    for (int k = 0; k < 2; k++) {
        if (load(&lib[k], argv[1 + k])) return 1;
        gpufl_options_t o;
        lib[k].options_init_sized(&o, sizeof o);
        o.app_name = "bench_scope_ab";
        o.log_path = argc > 3 ? argv[3] : "/tmp/gpufl-bench-scope-ab";
        if (lib[k].init(&o) != 0) {
            fprintf(stderr, "bench_scope_ab: init of %s failed: %s\n", lib[k].path,
                    lib[k].last_error());
            return 1;
        }
    }
    static double t[3][BATCHES], ratio[3][BATCHES];
    for (int pass = 0; pass < 2; pass++) { /* the first warms the rings and dictionaries */
        for (int b = 0; b < BATCHES; b++) {
            for (int j = 0; j < 3; j++) {
                int which = (b + j) % 3; /* rotate the order */
                t[which][b] = which == 2 ? floor_batch() : scope_batch(&lib[which]);
                if (which < 2) lib[which].flush();
            }
            ratio[0][b] = t[0][b] / t[2][b];
            ratio[1][b] = t[1][b] / t[2][b];
            ratio[2][b] = t[1][b] / t[0][b];
        }
    }
    unsigned long long dropped[2];
    for (int k = 0; k < 2; k++) {
        gpufl_stats_t s;
        memset(&s, 0, sizeof s);
        s.size = sizeof s;
        lib[k].flush();
        lib[k].get_stats(&s);
        dropped[k] = (unsigned long long)s.records_dropped;
        lib[k].shutdown();
    }
    printf("scope begin+end, two builds in one process (median of %d batches of %d; "
           "ratios are medians of per-batch ratios)\n",
           BATCHES, BATCH);
    printf("  A %-40s : %6.2f ns   ratio to floor %.3f   dropped %llu\n", lib[0].path,
           median(t[0], BATCHES), median(ratio[0], BATCHES), dropped[0]);
    printf("  B %-40s : %6.2f ns   ratio to floor %.3f   dropped %llu\n", lib[1].path,
           median(t[1], BATCHES), median(ratio[1], BATCHES), dropped[1]);
    printf("  two rdtsc (floor)%26s : %6.2f ns\n", "", median(t[2], BATCHES));
    printf("  B / A                                       : %.3f\n", median(ratio[2], BATCHES));
    return dropped[0] || dropped[1] ? 1 : 0;
}
