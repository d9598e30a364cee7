// SPDX-License-Identifier: Apache-2.0
/*
 * kernel_events.h - kernel GPU times from CUDA events recorded around each
 * launch in gpufl's own driver-API callbacks, without CUPTI's activity kinds
 * (PcSampling's `events` candidate, docs/design/pcs-with-trace.md).
 *
 * Contract
 * - Events come from a pool made per context at its first timed launch
 *   (GPUFL_KERNEL_EVENTS_PAIRS pairs and one anchor, on the launching
 *   thread, once): the anchor is recorded on the context's legacy stream and
 *   waited for, which gives the host time (session clock) of one GPU
 *   moment; a kernel's start is the anchor's host time plus the events'
 *   elapsed time from the anchor. A launch finds a free pair or goes untimed
 *   (counted); so do launches on a stream being captured into a graph (an
 *   event would become a graph node) and launches on a context whose pool is
 *   being made, or past GPUFL_KERNEL_EVENTS_CONTEXTS contexts.
 * - What a pair times: from the moment the stream reaches the first event to
 *   the moment it reaches the second. Work of other streams running between
 *   them is not excluded, and a kernel waiting behind earlier work of its own
 *   stream is timed from when that work ended: on concurrent streams the
 *   times overlap as the kernels did.
 * - Threads: begin and end on application threads inside the launch
 *   callbacks (no lock; atomics); read and release on the collector thread.
 * - Events are left to their context at destroy: destroying an event after
 *   the application destroyed its context is undefined, and a context's
 *   destruction frees its events.
 */
#ifndef GPUFL_NVIDIA_KERNEL_EVENTS_H
#define GPUFL_NVIDIA_KERNEL_EVENTS_H

#include "nvidia/cuda.h"

#include <stddef.h>
#include <stdint.h>

#define GPUFL_KERNEL_EVENTS_PAIRS    4096 /* launches timed at once per context */
#define GPUFL_KERNEL_EVENTS_CONTEXTS 8

typedef struct gpufl__kernel_events gpufl__kernel_events_t;

typedef struct gpufl__kernel_events_stats {
    uint64_t timed;    /* pairs whose times were read */
    uint64_t untimed;  /* launches without a pair (none free, capture, no pool) */
    uint64_t failures; /* driver calls that failed (the launch went untimed) */
} gpufl__kernel_events_stats_t;

/* Needs the driver's event functions: GPUFL_ENOTSUP with why otherwise. */
int gpufl__kernel_events_create(gpufl__kernel_events_t **out, gpufl__cuda_t *cuda, char *why,
                                size_t why_size);
void gpufl__kernel_events_destroy(gpufl__kernel_events_t *e);

/* Enter callback of a kernel launch on context (current on the thread) and
 * stream (the launch's handle; per_thread: the call's _ptsz form): records
 * the pair's first event. Returns a handle for end and read, 0 untimed. */
uint32_t gpufl__kernel_events_begin(gpufl__kernel_events_t *e, void *context, void *stream,
                                    int per_thread);
/* Exit callback of the same launch: records the second event, or (launched
 * = 0: the launch failed) gives the pair up. */
void gpufl__kernel_events_end(gpufl__kernel_events_t *e, uint32_t handle, void *stream,
                              int per_thread, int launched);

/* Collector: 1 and the kernel's start and end (CLOCK_MONOTONIC ns) once
 * both events are done; 0 not yet (wait = 1 waits for the GPU); -1 never
 * (the launch failed, or a driver call did). Release the handle after 1 or
 * -1. */
int gpufl__kernel_events_read(gpufl__kernel_events_t *e, uint32_t handle, int wait,
                              int64_t *start_ns, int64_t *end_ns);
void gpufl__kernel_events_release(gpufl__kernel_events_t *e, uint32_t handle);

void gpufl__kernel_events_stats(gpufl__kernel_events_stats_t *out, const gpufl__kernel_events_t *e);

#endif
