// SPDX-License-Identifier: Apache-2.0
/*
 * inject.c - libgpufl_inject.so, what `gpufl trace` names in CUDA_INJECTION64_PATH: the
 * driver calls InitializeInjection from cuInit, and a session starts from the GPUFL_*
 * variables (gpufl_init(NULL) reads them); an exit handler ends it.
 *
 * It uses libgpufl.so's public API only, plus the process mark of core/trace_marker.h, which
 * tells it (and every copy of libgpufl in the process) who holds the session: the program's
 * own init may run before cuInit, or after, and both ways give one session. Through its
 * dependency on libgpufl.so, a dlsym on this library's handle also finds the NVTX entry point
 * libgpufl exports, so NVTX_INJECTION64_PATH may name this library too.
 */
#include "core/trace_marker.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define INJECT_EXPORT __attribute__((visibility("default")))

INJECT_EXPORT int InitializeInjection(void);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int exit_handler_registered; /* once per program image; a forked child inherits it */

/* At exit: the session this image's injection started, ended. A program
 * that joined it and shut down earlier left it running for this. In a
 * forked child that never started its own, the mark names the parent:
 * nothing to do. */
static void end_injected(void) {
    if (gpufl__trace_state() != GPUFL_TRACE_INJECTED) return;
    gpufl__trace_mark(GPUFL_TRACE_ENDING); /* shutdown then ends it, joined or not */
    gpufl_shutdown();
}

/* Called by the CUDA driver inside cuInit, once per process that initializes
 * CUDA. Nothing here needs an initialized driver: the session loads NVML and
 * CUPTI, subscribes and enables activity kinds, as CUPTI's own injection
 * clients do at this point; contexts reach it later through CUPTI's
 * callbacks. Any failure leaves the program running untraced (libgpufl said
 * why). Returns 1: the driver goes on either way. */
int InitializeInjection(void) {
    /* Called again from inside the session's start (a driver that re-enters its
     * injection): this thread holds the lock, and the mark already says starting. */
    if (gpufl__trace_state() >= GPUFL_TRACE_STARTING) return 1;
    pthread_mutex_lock(&lock);
    gpufl__trace_state_t state = gpufl__trace_state();
    if (state >= GPUFL_TRACE_STARTING || gpufl_is_active()) {
        /* Already injected in this image, or the program's own init came first and its
         * session is this process's one: stand down quietly. */
        pthread_mutex_unlock(&lock);
        return 1;
    }
    gpufl__trace_mark(GPUFL_TRACE_STARTING);
    if (gpufl_init(NULL) != 0) {
        gpufl__trace_mark(GPUFL_TRACE_OTHER);
    } else if (!exit_handler_registered) {
        exit_handler_registered = 1;
        atexit(end_injected);
    }
    pthread_mutex_unlock(&lock);
    return 1;
}
