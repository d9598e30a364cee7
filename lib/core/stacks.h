// SPDX-License-Identifier: Apache-2.0
/*
 * stacks.h - CPU call stacks captured on the hot path (kernel launches and
 * synchronization calls, with enable_stack_trace) and interned per session.
 *
 * A capture walks the calling thread's stack for raw return addresses with
 * libunwind's fast trace (loaded at run time; glibc's backtrace() when it is
 * missing, several times slower), drops the leading frames that are gpufl's
 * own, and looks the addresses up in a lock-free table: a stack seen before
 * costs a hash and a probe, a new one takes the next id. Ids are dense, from
 * 1, in the order stacks were first seen; 0 means no stack.
 *
 * With an interpreter registered (interp.h, gpufl_interp.h), the native
 * frames from its machine code outward are replaced by its own frames, as
 * keys with GPUFL_INTERP_KEY_BIT set; a thread that never entered the
 * interpreter keeps its native stack and costs no interpreter walk.
 *
 * Addresses are symbolised later, off the hot path, by the collector
 * (symbols.h); interpreted frames by the interpreter's describe. Two
 * different stacks with the same 64-bit hash would share an id; the chance
 * is negligible for the few thousand stacks a session has.
 *
 * Threads: capture from any thread; get and stats from any thread.
 */
#ifndef GPUFL_CORE_STACKS_H
#define GPUFL_CORE_STACKS_H

#include <stddef.h>
#include <stdint.h>

#define GPUFL_STACK_DEPTH_MAX 64   /* frames kept per stack, innermost first */
#define GPUFL_STACKS_DEFAULT  4096 /* distinct stacks kept per session */

typedef struct gpufl__stacks gpufl__stacks_t;

typedef struct gpufl__stacks_stats {
    uint64_t captures;  /* stacks captured */
    uint64_t distinct;  /* ids given */
    uint64_t lost;      /* captures that got no id: the table was full */
    const char *walker; /* "libunwind" or "glibc backtrace" */
    /* walks of the registered interpreter's frames: those that gave frames,
     * those that gave none, and their time (it includes any wait for the
     * interpreter's lock), all and the longest */
    uint64_t interp_walks, interp_empty, interp_ns, interp_max_ns;
} gpufl__stacks_stats_t;

/*
 * A table for up to max_stacks distinct stacks (0: GPUFL_STACKS_DEFAULT).
 * Uses libunwind.so.8 when it loads ($GPUFL_LIBUNWIND_PATH overrides the
 * name), else glibc's backtrace(); note then says why ("" otherwise).
 * Returns 0 or GPUFL_ENOMEM.
 */
int gpufl__stacks_create(gpufl__stacks_t **out, size_t max_stacks, char *note, size_t note_size);
void gpufl__stacks_destroy(gpufl__stacks_t *s); /* accepts NULL */

/* The calling thread's stack, as an id (0 when the table is full). */
uint32_t gpufl__stacks_capture(gpufl__stacks_t *s);

/* The frames of stack id: *pcs (innermost first) and the count returned; 0
 * for an id not given. A frame other than the first is a return address,
 * or an interpreted frame's key (GPUFL_INTERP_KEY_BIT set). */
size_t gpufl__stacks_get(const gpufl__stacks_t *s, uint32_t id, const uintptr_t **pcs);

void gpufl__stacks_stats(gpufl__stacks_stats_t *out, const gpufl__stacks_t *s);

#endif
