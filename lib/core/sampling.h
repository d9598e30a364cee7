// SPDX-License-Identifier: Apache-2.0
/*
 * sampling.h - when a periodic source (host, GPU) takes a sample.
 *
 * With continuous sampling, every period from init to shutdown; otherwise
 * only while the session is active (a scope or a system window open). Each
 * active stretch begins with a silent baseline reading, so rates never
 * average over the idle time before it. Collector thread only.
 */
#ifndef GPUFL_CORE_SAMPLING_H
#define GPUFL_CORE_SAMPLING_H

#include <stdint.h>

typedef struct gpufl__sampling {
    int64_t period_ns; /* 0: no periodic samples */
    int64_t next_ns;   /* CLOCK_MONOTONIC of the next sample */
    int continuous;
    int was_active;
} gpufl__sampling_t;

enum gpufl__sampling_action { GPUFL_SAMPLE_NONE, GPUFL_SAMPLE_BASELINE, GPUFL_SAMPLE_TAKE };

static inline void gpufl__sampling_init(gpufl__sampling_t *p, int period_ms, int continuous) {
    p->period_ns = (int64_t)period_ms * 1000000;
    p->next_ns = 0;
    p->continuous = continuous;
    p->was_active = 0;
}

/* What to do at now_ns, given whether a scope or window is open. */
static inline enum gpufl__sampling_action gpufl__sampling_step(gpufl__sampling_t *p, int active,
                                                               int64_t now_ns) {
    if (p->period_ns == 0) return GPUFL_SAMPLE_NONE;
    if (!p->continuous && !active) {
        p->was_active = 0;
        return GPUFL_SAMPLE_NONE;
    }
    if (!p->was_active) {
        p->was_active = 1;
        p->next_ns = now_ns + p->period_ns;
        return GPUFL_SAMPLE_BASELINE;
    }
    if (now_ns < p->next_ns) return GPUFL_SAMPLE_NONE;
    p->next_ns += p->period_ns;
    if (p->next_ns <= now_ns) p->next_ns = now_ns + p->period_ns; /* fell behind: skip */
    return GPUFL_SAMPLE_TAKE;
}

/* Nanoseconds until the next step matters. While idle without continuous
 * sampling, one period: a scope that opens is noticed within a period. */
static inline int64_t gpufl__sampling_due_in(const gpufl__sampling_t *p, int64_t now_ns) {
    if (p->period_ns == 0) return INT64_MAX;
    return p->was_active ? p->next_ns - now_ns : p->period_ns;
}

#endif
