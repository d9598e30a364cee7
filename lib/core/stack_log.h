// SPDX-License-Identifier: Apache-2.0
/*
 * stack_log.h - the collector's side of CPU stacks: writes each captured
 * stack (stacks.h) to a log file once, before the first row that names it,
 * as a `stack` record whose frames are `frame` records, each code address
 * described once (symbols.h: module, function, file, line, source text).
 *
 * Symbolisation runs here, on the collector thread, the first time an
 * address is met; the hot path only captured raw addresses. The resolver
 * (and libdw) is loaded at init.
 *
 * Threads: the collector thread only.
 */
#ifndef GPUFL_CORE_STACK_LOG_H
#define GPUFL_CORE_STACK_LOG_H

#include "util/idmap.h"
#include "core/stacks.h"
#include "core/symbols.h"
#include "core/collector.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gpufl__stack_log {
    gpufl__stacks_t *stacks;   /* owned */
    gpufl__symbols_t *symbols; /* owned; made at the first write */
    unsigned int symbol_flags;
    int symbols_tried;
    uint8_t *written; /* by stack id: 1 once its record is written */
    size_t written_cap;
    gpufl__idmap_t frame_ids; /* pc -> frame id */
    size_t frames;           /* frame ids given */
    uint64_t lost_seen;      /* the writer's batches_lost when last looked at */
    uint64_t rewrites;       /* times lost lines made everything be written again */
    uint64_t stacks_written;
    char note[320]; /* how stacks are walked and described, when degraded; "" when not */
} gpufl__stack_log_t;

/* Makes the stack table. source: read the source lines' text too
 * (enable_source_collection). Returns 0 or GPUFL_ENOMEM. */
int gpufl__stack_log_init(gpufl__stack_log_t *sl, int source);
/* Frees everything. Accepts a zeroed struct. */
void gpufl__stack_log_fini(gpufl__stack_log_t *sl);

/*
 * The stack id for a row's `stack` column: hands stack id (its new frames
 * first) to c's sinks on channel unless done before. Returns the id, or -1
 * (null) for 0 or a stack that cannot be written. When the channel's file
 * has lost lines since the last call (gpufl__collector_lines_lost grew), any
 * of them may have been a stack or frame record: every stack is then written
 * again before a row names it, with frames under new ids.
 */
int64_t gpufl__stack_log_put(gpufl__stack_log_t *sl, gpufl__collector_t *c,
                             enum gpufl__file_id channel, uint32_t id);

#endif
