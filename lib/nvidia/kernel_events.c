// SPDX-License-Identifier: Apache-2.0
/*
 * kernel_events.c - CUDA event pairs around kernel launches, read back by
 * the collector into GPU start and end times (kernel_events.h).
 */
#include "nvidia/kernel_events.h"

#include "core/clock.h"
#include "util/error.h"
#include "util/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pair's state. */
enum { PAIR_FREE, PAIR_TAKEN, PAIR_STARTED, PAIR_ENDED, PAIR_FAILED };

/* A pool's state. */
enum { POOL_EMPTY, POOL_MAKING, POOL_READY, POOL_BROKEN };

typedef struct pool {
    _Atomic(void *) context;
    atomic_int state;
    void *anchor;
    int64_t anchor_ns; /* host time of the anchor (CLOCK_MONOTONIC) */
    void *start[GPUFL_KERNEL_EVENTS_PAIRS], *end[GPUFL_KERNEL_EVENTS_PAIRS];
    atomic_uchar pair[GPUFL_KERNEL_EVENTS_PAIRS];
    atomic_uint hint; /* where the next search for a free pair starts */
    /* Pairs free or about to be: a launch that finds none left is untimed at
     * once, never searches the whole pool (that cost 20 us a launch once the
     * collector fell behind). */
    atomic_int free_pairs;
} pool_t;

struct gpufl__kernel_events {
    gpufl__cuda_t *cuda;
    pool_t pools[GPUFL_KERNEL_EVENTS_CONTEXTS];
    _Atomic uint64_t timed, untimed, failures;
};

/* The per-thread default stream's handle (cuda.h: CU_STREAM_PER_THREAD). */
#define STREAM_PER_THREAD ((void *)0x2)

int gpufl__kernel_events_create(gpufl__kernel_events_t **out, gpufl__cuda_t *cuda, char *why,
                                size_t why_size) {
    *out = NULL;
    if (!gpufl__cuda_events_available(cuda)) {
        snprintf(why, why_size, "%s",
                 cuda ? "the driver lacks the CUDA event functions" : "no libcuda: no CUDA events");
        return GPUFL_ENOTSUP;
    }
    gpufl__kernel_events_t *e = calloc(1, sizeof *e);
    if (e == NULL) {
        snprintf(why, why_size, "out of memory for the event pools");
        return GPUFL_ENOMEM;
    }
    e->cuda = cuda;
    *out = e;
    return 0;
}

void gpufl__kernel_events_destroy(gpufl__kernel_events_t *e) { free(e); }

/* Makes the pool of the current context: its events, and the anchor waited
 * for. Once per context, on the first launching thread. */
static int make_pool(gpufl__kernel_events_t *e, pool_t *p) {
    for (int i = 0; i < GPUFL_KERNEL_EVENTS_PAIRS; i++)
        if (gpufl__cuda_event_create(e->cuda, &p->start[i]) ||
            gpufl__cuda_event_create(e->cuda, &p->end[i]))
            return -1;
    if (gpufl__cuda_event_create(e->cuda, &p->anchor) ||
        gpufl__cuda_event_record(e->cuda, p->anchor, NULL) ||
        gpufl__cuda_event_done(e->cuda, p->anchor, 1) != 1)
        return -1;
    p->anchor_ns = gpufl__mono_ns();
    atomic_store(&p->free_pairs, GPUFL_KERNEL_EVENTS_PAIRS);
    return 0;
}

/* The pool of context, made at its first use; NULL when there is none to
 * use now. */
static pool_t *pool_of(gpufl__kernel_events_t *e, void *context, int *index) {
    for (int i = 0; i < GPUFL_KERNEL_EVENTS_CONTEXTS; i++) {
        pool_t *p = &e->pools[i];
        void *owner = atomic_load(&p->context);
        if (owner == context) {
            *index = i;
            return atomic_load(&p->state) == POOL_READY ? p : NULL;
        }
        if (owner != NULL) continue;
        void *expected = NULL;
        if (!atomic_compare_exchange_strong(&p->context, &expected, context)) {
            if (expected == context) i--; /* another thread took it for this context: look again */
            continue;
        }
        atomic_store(&p->state, POOL_MAKING);
        int ok = make_pool(e, p) == 0;
        if (!ok) {
            atomic_fetch_add(&e->failures, 1);
            gpufl__debug("kernel events: no pool for context %p: %s", context, gpufl_last_error());
        }
        atomic_store(&p->state, ok ? POOL_READY : POOL_BROKEN);
        *index = i;
        return ok ? p : NULL;
    }
    return NULL;
}

static void *stream_of(void *stream, int per_thread) {
    return stream == NULL && per_thread ? STREAM_PER_THREAD : stream;
}

uint32_t gpufl__kernel_events_begin(gpufl__kernel_events_t *e, void *context, void *stream,
                                    int per_thread) {
    int index = 0;
    pool_t *p = e && context ? pool_of(e, context, &index) : NULL;
    stream = stream_of(stream, per_thread);
    if (p == NULL || gpufl__cuda_stream_capturing(e->cuda, stream)) goto untimed;
    if (atomic_fetch_sub(&p->free_pairs, 1) <= 0) goto none_free;
    /* Pairs are taken in the order of the hint and mostly given back in that
     * order, so the search usually ends at its first look. */
    uint32_t from = atomic_fetch_add(&p->hint, 1);
    for (uint32_t k = 0; k < GPUFL_KERNEL_EVENTS_PAIRS; k++) {
        uint32_t i = (from + k) % GPUFL_KERNEL_EVENTS_PAIRS;
        unsigned char expected = PAIR_FREE;
        if (!atomic_compare_exchange_strong(&p->pair[i], &expected, PAIR_TAKEN)) continue;
        if (gpufl__cuda_event_record(e->cuda, p->start[i], stream) != 0) {
            atomic_fetch_add(&e->failures, 1);
            atomic_store(&p->pair[i], PAIR_FREE);
            goto none_free;
        }
        atomic_store(&p->pair[i], PAIR_STARTED);
        return ((uint32_t)index * GPUFL_KERNEL_EVENTS_PAIRS + i) + 1;
    }
none_free: /* the count taken above goes back */
    atomic_fetch_add(&p->free_pairs, 1);
untimed:
    if (e) atomic_fetch_add(&e->untimed, 1);
    return 0;
}

static pool_t *pair_of(const gpufl__kernel_events_t *e, uint32_t handle, uint32_t *i) {
    uint32_t n = handle - 1;
    *i = n % GPUFL_KERNEL_EVENTS_PAIRS;
    return (pool_t *)&e->pools[n / GPUFL_KERNEL_EVENTS_PAIRS];
}

void gpufl__kernel_events_end(gpufl__kernel_events_t *e, uint32_t handle, void *stream,
                              int per_thread, int launched) {
    if (e == NULL || handle == 0) return;
    uint32_t i;
    pool_t *p = pair_of(e, handle, &i);
    int ok = launched &&
             gpufl__cuda_event_record(e->cuda, p->end[i], stream_of(stream, per_thread)) == 0;
    if (launched && !ok) atomic_fetch_add(&e->failures, 1);
    atomic_store(&p->pair[i], ok ? PAIR_ENDED : PAIR_FAILED);
}

int gpufl__kernel_events_read(gpufl__kernel_events_t *e, uint32_t handle, int wait,
                              int64_t *start_ns, int64_t *end_ns) {
    uint32_t i;
    pool_t *p = pair_of(e, handle, &i);
    int state = atomic_load(&p->pair[i]);
    if (state == PAIR_FAILED) return -1;
    if (state != PAIR_ENDED) return wait ? -1 : 0; /* the exit callback never came */
    int done = gpufl__cuda_event_done(e->cuda, p->end[i], wait);
    if (done == 0) return 0;
    int64_t from_anchor, length;
    if (done < 0 || gpufl__cuda_event_elapsed_ns(e->cuda, &from_anchor, p->anchor, p->start[i]) ||
        gpufl__cuda_event_elapsed_ns(e->cuda, &length, p->start[i], p->end[i])) {
        atomic_fetch_add(&e->failures, 1);
        return -1;
    }
    *start_ns = p->anchor_ns + from_anchor;
    *end_ns = *start_ns + length;
    atomic_fetch_add(&e->timed, 1);
    return 1;
}

void gpufl__kernel_events_release(gpufl__kernel_events_t *e, uint32_t handle) {
    if (e == NULL || handle == 0) return;
    uint32_t i;
    pool_t *p = pair_of(e, handle, &i);
    atomic_store(&p->pair[i], PAIR_FREE);
    atomic_fetch_add(&p->free_pairs, 1);
}

void gpufl__kernel_events_stats(gpufl__kernel_events_stats_t *out,
                                const gpufl__kernel_events_t *e) {
    memset(out, 0, sizeof *out);
    if (e == NULL) return;
    out->timed = atomic_load(&e->timed);
    out->untimed = atomic_load(&e->untimed);
    out->failures = atomic_load(&e->failures);
}
