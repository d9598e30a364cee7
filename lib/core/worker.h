// SPDX-License-Identifier: Apache-2.0
/*
 * worker.h - a thread that runs one call at a time for a caller who will not
 * wait for it past a deadline (an NVML call that may hang). A worker still
 * inside its call at stop is left to finish and frees itself when it returns.
 */
#ifndef GPUFL_CORE_WORKER_H
#define GPUFL_CORE_WORKER_H

#include <stdint.h>

typedef struct gpufl__worker gpufl__worker_t;
typedef void gpufl__worker_fn(void *arg);

/* Starts a worker that runs fn(arg) on each post. arg is the worker's from
 * here on: free_arg(arg) runs when the worker ends (at stop, or when an
 * abandoned call returns). The caller may read and write arg only while the
 * worker is idle. */
int gpufl__worker_start(gpufl__worker_t **out, gpufl__worker_fn *fn, void *arg,
                        void (*free_arg)(void *));
/* Whether the last call returned (then arg is the caller's until the next post). */
int gpufl__worker_idle(gpufl__worker_t *w);
/* Runs fn(arg) once more; the worker must be idle. */
void gpufl__worker_post(gpufl__worker_t *w);
/* Waits until the call returns or CLOCK_MONOTONIC reaches deadline_ns:
 * 1 when it returned, 0 when it is still running. */
int gpufl__worker_wait(gpufl__worker_t *w, int64_t deadline_ns);
/* Ends the worker: joined when idle (returns 0), else left to finish its
 * call and free itself and arg (returns 1). w is gone either way. */
int gpufl__worker_stop(gpufl__worker_t *w);

#endif
