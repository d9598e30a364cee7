// SPDX-License-Identifier: Apache-2.0
/*
 * cost.h - what a sampling source costs: a fixed histogram of per-sample
 * durations in microseconds, for the median and p99 of the source_cost
 * record. Means alone mislead here: a driver call that waits on a lock now
 * and then moves the mean far from what a typical sample costs.
 */
#ifndef GPUFL_CORE_COST_H
#define GPUFL_CORE_COST_H

#include <stdint.h>

#define GPUFL_COST_BUCKETS 2048 /* 1 us each; the last holds everything slower */

typedef struct gpufl__cost {
    int64_t samples, total_ns;
    int64_t missed; /* samples left out: a device's call ran past the pass budget (GPU sources) */
    uint32_t bucket[GPUFL_COST_BUCKETS];
} gpufl__cost_t;

static inline void gpufl__cost_add(gpufl__cost_t *c, int64_t ns) {
    int64_t us = ns / 1000;
    c->samples++;
    c->total_ns += ns;
    c->bucket[us < GPUFL_COST_BUCKETS - 1 ? us : GPUFL_COST_BUCKETS - 1]++;
}

/* The q-quantile (0..1) in ns, to the microsecond; 0 without samples. */
static inline int64_t gpufl__cost_quantile(const gpufl__cost_t *c, double q) {
    int64_t want = (int64_t)(q * (double)(c->samples - 1)) + 1, seen = 0;
    for (int i = 0; i < GPUFL_COST_BUCKETS && c->samples > 0; i++)
        if ((seen += c->bucket[i]) >= want) return (int64_t)i * 1000 + 500;
    return 0;
}

#endif
