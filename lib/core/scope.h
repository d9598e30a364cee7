// SPDX-License-Identifier: Apache-2.0
/*
 * scope.h - the hot path: scope begin/end into the calling thread's ring.
 *
 * The session attaches a ring pool and a generation number; a generation of
 * 0 means no session runs and every hot-path call returns at once.
 */
#ifndef GPUFL_CORE_SCOPE_H
#define GPUFL_CORE_SCOPE_H

#include "core/ring.h"

#include <gpufl/gpufl.h>

/* Nonzero while a session runs: its generation. */
/* gpufl_internal_live_generation (gpufl.h): nonzero while a session runs. */

/* Makes the hot path record into pool for session `generation` (nonzero). */
void gpufl__scope_attach(gpufl__ring_pool_t *pool, uint64_t generation);
/* Stops recording: later hot-path calls do nothing. */
void gpufl__scope_detach(void);
/* While a copy forwards (core/forward.h, on = 1): the inline wrappers call in although no
 * session runs here. */
void gpufl__scope_forwarding(int on);
/* Unbalanced ends from threads that own no ring in this session. */
uint64_t gpufl__scope_stray_ends(void);
/* Threads that found no free ring in this session. */
uint64_t gpufl__scope_threads_unbuffered(void);
/* The calling thread's OS thread id (cached per thread after the first call). */
int32_t gpufl__thread_id(void);
/* In a forked child (its only thread): forgets the parent's thread state. */
void gpufl__scope_after_fork_child(void);
/* The innermost open scope id of the calling thread, 0 when none. */
uint64_t gpufl__scope_current(void);

/* An NVTX range's attributes (the NVTX source fills them; core never
 * includes NVTX's headers). Strings need not be NUL-terminated. */
typedef struct gpufl__nvtx_attr {
    const char *domain; /* NULL or "" for NVTX's default domain */
    size_t domain_len;
    const char *category_name; /* NULL when the category has no name */
    size_t category_name_len;
    uint32_t category;    /* 0 for none */
    uint8_t payload_kind; /* enum gpufl__nvtx_payload (ring.h) */
    int64_t payload_i;    /* INT, or UINT's bits */
    double payload_f;     /* REAL */
} gpufl__nvtx_attr_t;

/* scope_begin's `source` column (docs/log-format.md). */
enum gpufl__scope_source {
    GPUFL__SCOPE_SOURCE_GPUFL = 0,
    GPUFL__SCOPE_SOURCE_NVTX_PUSH_POP = 1,
    GPUFL__SCOPE_SOURCE_NVTX_START_END = 2
};

/* Longest NVTX domain and category names kept, in bytes (longer are cut and
 * counted as truncated). */
#define GPUFL_NVTX_NAME_MAX 256

/* Opens an NVTX range on the calling thread as a scope. detached = 0: a
 * push/pop range, on the thread's stack of open scopes like
 * gpufl_scope_begin (so GPU work launched inside it is its); end it with
 * gpufl_scope_end. detached = 1: a start/end range, on no stack (it may end
 * on another thread); end it with gpufl__scope_end_detached. Returns its
 * scope id, 0 when nothing was recorded (no session, ring full). Hot path:
 * no lock, no allocation, no system call after the thread's first record. */
uint64_t gpufl__scope_begin_nvtx(const char *name, size_t name_len, const gpufl__nvtx_attr_t *a,
                                 int detached);
/* Ends the detached range `id` on the calling thread (any thread). */
void gpufl__scope_end_detached(uint64_t id);
/* The running session's generation, 0 when none runs. */
uint64_t gpufl__scope_generation(void);

/* An engine that follows scopes on their own threads (the RangeProfiler
 * engine turns them into CUPTI ranges). begin runs after a scope opened,
 * with its id, name (not NUL-terminated) and depth (0 outermost); end runs
 * once per scope closed, innermost first, with the depth it had. Both run
 * on the scope's thread, outside any gpufl lock, and must not block for
 * long. While none is set the hot path pays one load and a branch. */
typedef struct gpufl__scope_observer {
    void (*begin)(void *user, uint64_t id, const char *name, size_t name_len, uint32_t depth);
    void (*end)(void *user, uint64_t id, uint32_t depth);
    void *user;
} gpufl__scope_observer_t;
/* Sets (or with NULL clears) the observer. Clearing waits, 2 s at most, for
 * calls already inside it to return; returns 0, or -1 when some did not. */
int gpufl__scope_observe(const gpufl__scope_observer_t *o);

#endif
