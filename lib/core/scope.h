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
