// SPDX-License-Identifier: Apache-2.0
/*
 * ops.h - framework operation names and their per-call ids (gpufl_ops.h):
 * the process-wide name table, the hooks a tracing session attaches to push
 * and pop the ids on CUPTI's external correlation stack, and the writing of
 * new names into the session's log.
 *
 * Threads: register, push and pop from any thread. attach and detach from
 * the thread that starts and ends the session; detach waits for pushes and
 * pops in progress. write_new from the collector.
 */
#ifndef GPUFL_CORE_OPS_H
#define GPUFL_CORE_OPS_H

#include <gpufl/gpufl_log.h>
#include <gpufl/gpufl_ops.h>

#include "core/channel.h"

#include <stdint.h>

typedef struct gpufl__collector gpufl__collector_t; /* collector.h */

#define GPUFL_OPS_CALL_BITS GPUFL_LOG_OP_CALL_BITS /* an id: index << 40 | call number */

/* A tracing session's side: push an id on the calling thread's stack;
 * pop the top one, 0 or -1 when there is none. */
typedef struct gpufl__ops_hooks {
    int (*push)(void *user, uint64_t id);
    int (*pop)(void *user, uint64_t *id);
    void *user;
} gpufl__ops_hooks_t;

/* Pushes and pops go to hooks (copied) until detach. Their user pointer
 * must stay valid for the life of the process: a pop of a call that began
 * before detach still goes to the last hooks attached. */
void gpufl__ops_attach(const gpufl__ops_hooks_t *hooks);
void gpufl__ops_detach(void);

/* In a forked child: no session's hooks (the parent's are not its own). */
void gpufl__ops_after_fork_child(void);

/* Writes an `op` record for each name registered since *written (0 at a
 * session's start) and advances it; when the file lost lines since
 * *lost_seen (gpufl__collector_lines_lost), every name is written again. Returns the
 * records written. */
size_t gpufl__ops_write_new(gpufl__collector_t *c, enum gpufl__file_id channel, uint32_t *written,
                            uint64_t *lost_seen);

/* Calls whose pop found another id, or none, on the thread's stack. */
uint64_t gpufl__ops_mismatched(void);

#endif
