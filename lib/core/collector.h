// SPDX-License-Identifier: Apache-2.0
/*
 * collector.h - the one background thread of a session.
 *
 * It drains the per-thread rings, rebuilds each thread's scope paths,
 * interns names, batches rows, polls the sources (host sampler now; NVML and
 * CUPTI later) and appends everything to the session files at least every
 * flush_interval_ms. Its pass interval adapts to how full the rings get.
 */
#ifndef GPUFL_CORE_COLLECTOR_H
#define GPUFL_CORE_COLLECTOR_H

#include "core/cost.h"
#include "core/options.h"
#include "core/ring.h"
#include "core/sink.h"

typedef struct gpufl__collector gpufl__collector_t;

/* A data source driven by the collector thread. */
typedef struct gpufl__source {
    const char *name;
    void *self;
    /* Every pass; now_ns is CLOCK_MONOTONIC. */
    void (*poll)(gpufl__collector_t *c, void *self, int64_t now_ns);
    /* How long until the source needs its next poll (ns), INT64_MAX if idle. */
    int64_t (*due_in)(void *self, int64_t now_ns);
    /* Encode what is batched into the files (caller holds no file lock). */
    void (*flush)(gpufl__collector_t *c, void *self);
    /* Optional: the last records of the session (its cost), before session_end. */
    void (*finish)(gpufl__collector_t *c, void *self);
} gpufl__source_t;

#define GPUFL_MAX_SOURCES 8

/* Creates the session files in dir and the collector state; no thread yet.
 * With settings->flight_recorder_s > 0, no file and dir is not used: the
 * rows go to a ring (gpufl__collector_flight_recorder) instead. */
int gpufl__collector_create(gpufl__collector_t **out, const gpufl__settings_t *settings,
                            gpufl__ring_pool_t *pool, const char *dir,
                            const gpufl__session_ident_t *ident);
int gpufl__collector_add_source(gpufl__collector_t *c, const gpufl__source_t *source);
/* Starts the thread. */
int gpufl__collector_start(gpufl__collector_t *c);
/* Stops the thread after a last full pass, writes session_end to every file,
 * closes them and frees everything. Accepts NULL. *final_stats gets the
 * session's last counters when not NULL. */
void gpufl__collector_destroy(gpufl__collector_t *c, gpufl_stats_t *final_stats);
/* Waits until everything recorded before the call is written. */
int gpufl__collector_flush(gpufl__collector_t *c);
void gpufl__collector_stats(gpufl_stats_t *out, gpufl__collector_t *c);

/* ---- rows to the sinks (sink.h); the collector's thread unless said ---- */

/* Hands a finished record line to every sink and frees it. Any thread. */
void gpufl__collector_record(gpufl__collector_t *c, enum gpufl__file_id channel,
                             gpufl__line_t *line);
/* Hands b's rows to every sink and empties b. */
void gpufl__collector_batch(gpufl__collector_t *c, enum gpufl__file_id channel, gpufl__batch_t *b);
/* The next row of b to fill; a full b goes to the sinks first. */
gpufl__cell_t *gpufl__collector_row(gpufl__collector_t *c, enum gpufl__file_id channel,
                                    gpufl__batch_t *b);
/* Attaches one more sink (it gets every row from now on). Any thread. */
int gpufl__collector_attach_sink(gpufl__collector_t *c, const gpufl__sink_ops_t *ops, void *self);
/* Lines of channel's file lost so far (no room, cut by a failed write): a
 * record written once (a stack, an op name) is written again after it grows. */
uint64_t gpufl__collector_lines_lost(gpufl__collector_t *c, enum gpufl__file_id channel);

/* The flight recorder's ring (flight_recorder_s > 0), NULL otherwise. Its
 * reads and dumps are safe while rows flow; it lives as long as c. */
gpufl__ring_sink_t *gpufl__collector_flight_recorder(gpufl__collector_t *c);

const gpufl__intern_t *gpufl__collector_dict(gpufl__collector_t *c);
/* Session time (ns since the epoch) of a CLOCK_MONOTONIC reading. */
int64_t gpufl__collector_session_ns(const gpufl__collector_t *c, int64_t mono_ns);
/* Scopes open across all threads, as far as the collector has seen. */
int gpufl__collector_open_scopes(const gpufl__collector_t *c);
/* For a source's flush: whether this write pass was asked for (gpufl_flush, shutdown,
 * flush_logs_always), when a source writes every row it holds back. */
int gpufl__collector_write_forced(const gpufl__collector_t *c);
/* System windows (system_start/stop) open now; any thread may change it. */
void gpufl__collector_windows_add(gpufl__collector_t *c, int delta);
/* 1 while a scope or a system window is open: sampling sources run then. */
int gpufl__collector_sampling_active(const gpufl__collector_t *c);
/* Writes a source_cost record: how much a source's samples cost. */
/* parts: NULL, or nparts (name, mean ns) pairs, written as "parts". */
void gpufl__collector_source_cost(gpufl__collector_t *c, enum gpufl__file_id id, const char *source,
                                  const gpufl__cost_t *cost, const gpufl__cost_part_t *parts,
                                  int nparts);
/* Writes an `event` record (warnings met while recording) to file id. */
void gpufl__collector_event(gpufl__collector_t *c, enum gpufl__file_id id, const char *level,
                            const char *code, const char *message);

#endif
