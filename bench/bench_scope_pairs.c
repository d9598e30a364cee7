// SPDX-License-Identifier: Apache-2.0
/*
 * bench_scope_pairs.c - a fixed number of GFL_SCOPE begin+end pairs in one
 * function, for bench/scope_instructions.sh to count the instructions they
 * execute under callgrind: a figure that, unlike time, a shared and noisy
 * machine does not move.
 */
#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>

#define PAIRS   2000 /* 4000 records: half the default ring */
#define BATCHES 50

/* The counted function: only the scopes and their loop run in it. */
static __attribute__((noinline)) void bench_scope_pairs_batch(void) {
    for (int i = 0; i < PAIRS; i++) {
        GFL_SCOPE("bench_scope") { __asm__ volatile("" ::: "memory"); }
    }
}

int main(int argc, char **argv) {
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "bench_scope_pairs";
    o.log_path = argc > 1 ? argv[1] : "/tmp/gpufl-bench-scope-pairs";
    if (gpufl_init(&o) != 0) {
        fprintf(stderr, "bench_scope_pairs: init failed: %s\n", gpufl_last_error());
        return 1;
    }
    for (int b = 0; b < BATCHES; b++) {
        bench_scope_pairs_batch();
        gpufl_flush(); /* the collector drains, outside the counted function */
    }
    gpufl_stats_t stats = {.size = sizeof stats};
    gpufl_get_stats(&stats);
    gpufl_shutdown();
    printf("pairs: %d, records dropped: %llu\n", PAIRS * BATCHES,
           (unsigned long long)stats.records_dropped);
    return stats.records_dropped == 0 ? 0 : 1;
}
