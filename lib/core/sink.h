// SPDX-License-Identifier: Apache-2.0
/*
 * sink.h - where rows go: a table of operations per sink, and the fan-out
 * the collector owns that hands every row to every attached sink.
 *
 * Sources fill typed rows (wire.h) and give them to the collector; it calls
 * each sink in the order attached. The NDJSON session files are always the
 * first sink; the in-memory ring (a flight recorder's window) and the
 * latest-value gauges (a /metrics endpoint's) are attached on demand. A sink
 * that fails does not stop the others: its failures are counted and said
 * once through gpufl__log.
 *
 * Threads: rows come from the collector thread; records also from
 * application threads (system_start/stop), so a sink's record and batch
 * must be safe against each other. Attaching is safe while rows flow.
 */
#ifndef GPUFL_CORE_SINK_H
#define GPUFL_CORE_SINK_H

#include "core/channel.h"
#include "core/wire.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* The operations of a sink; each returns 0 or a negative GPUFL_E* (counted
 * as a failure of that sink). Only batch is required. */
typedef struct gpufl__sink_ops {
    const char *name;
    /* One single-line record (its dict ids defined before it, if the sink
     * keeps dict lines). dict: the session's strings, readable during the
     * call only when it names dict ids (then on the collector thread). */
    int (*record)(void *self, enum gpufl__file_id channel, const gpufl__line_t *line,
                  const gpufl__intern_t *dict);
    /* The rows of b (b->rows of them); the sink copies what it keeps. */
    int (*batch)(void *self, enum gpufl__file_id channel, const gpufl__batch_t *b,
                 const gpufl__intern_t *dict);
    /* What the sink buffers goes where it goes (a file: write()). */
    int (*flush)(void *self);
    /* No rows after this; the sink's owner frees it (the ring is read after). */
    void (*close)(void *self);
} gpufl__sink_ops_t;

#define GPUFL__SINKS_MAX 8

typedef struct gpufl__sink {
    const gpufl__sink_ops_t *ops;
    void *self;
    atomic_uint_fast64_t failures;
    atomic_int warned;
} gpufl__sink_t;

/* The records that describe the session (gpufl__line_t.describes) the
 * fan-out keeps for sinks attached later, at most this many bytes; past it
 * they are counted and a later attach says how many it could not give. */
#define GPUFL__KEPT_MAX_BYTES ((size_t)1 << 20)

typedef struct gpufl__kept_line gpufl__kept_line_t;

typedef struct gpufl__fanout {
    const gpufl__intern_t *dict; /* the session's, which dict columns name */
    gpufl__sink_t sinks[GPUFL__SINKS_MAX];
    atomic_int count; /* entries below count are complete */
    atomic_int closed;
    /* Attaching, and the records kept for it: a describing record is kept
     * and handed to the sinks under this lock, so a sink attached meanwhile
     * gets it once, from the replay or from the fan-out. Rows never take it. */
    pthread_mutex_t lock;
    gpufl__kept_line_t *kept, *kept_tail;
    size_t kept_bytes;
    uint64_t kept_left_out; /* describing records past GPUFL__KEPT_MAX_BYTES */
} gpufl__fanout_t;

void gpufl__fanout_init(gpufl__fanout_t *f, const gpufl__intern_t *dict);
/* Frees the kept records; after close, when no thread uses f any more. */
void gpufl__fanout_fini(gpufl__fanout_t *f);
/* Adds a sink: it first gets the records kept so far that describe the
 * session (in the order written, through its record operation), then
 * every row from now on. GPUFL_EINVAL without ops->batch, GPUFL_ENOMEM past
 * GPUFL__SINKS_MAX, GPUFL_EINVAL once closed. */
int gpufl__fanout_attach(gpufl__fanout_t *f, const gpufl__sink_ops_t *ops, void *self);
void gpufl__fanout_record(gpufl__fanout_t *f, enum gpufl__file_id channel,
                          const gpufl__line_t *line);
/* Gives b's rows to every sink, then empties b. */
void gpufl__fanout_batch(gpufl__fanout_t *f, enum gpufl__file_id channel, gpufl__batch_t *b);
void gpufl__fanout_flush(gpufl__fanout_t *f);
/* Closes every sink, once. */
void gpufl__fanout_close(gpufl__fanout_t *f);
/* Failures of all sinks so far. */
uint64_t gpufl__fanout_failures(gpufl__fanout_t *f);

/* ---- the sinks gpufl has (sink_ndjson.c, sink_ring.c, sink_gauges.c) ---- */

/* The session files: today's NDJSON output (writer.h), three files. */
typedef struct gpufl__ndjson_sink gpufl__ndjson_sink_t;
extern const gpufl__sink_ops_t gpufl__ndjson_sink_ops;

/* The in-memory ring: the newest rows up to a cap of bytes (their encoded
 * lines and the dict strings they name), oldest evicted first; the records
 * that describe the session are pinned (up to a quarter of the cap). Reads
 * and dumps work on a snapshot: the collector never waits for them. */
typedef struct gpufl__ring_sink gpufl__ring_sink_t;
extern const gpufl__sink_ops_t gpufl__ring_sink_ops;
typedef struct gpufl__ring_sink_stats {
    uint64_t kept_rows, kept_lines, kept_bytes;
    uint64_t evicted_rows, evicted_lines, evicted_bytes;
    uint64_t pinned_lines, pinned_bytes; /* describing records, never evicted */
    uint64_t aged_rows, aged_lines, aged_bytes; /* older than the window (not the cap) */
    /* What recording costs: every byte of rows that reached the ring (kept, evicted or aged
     * out since), and the time from the oldest kept line's arrival to the read (0: none
     * kept), which the kept bytes cover. */
    uint64_t in_bytes;
    int64_t span_ns;
} gpufl__ring_sink_stats_t;
/* cap_bytes: what the ring may hold (>= 4 KiB); rows_per_line: rows of a
 * batch kept per line, the unit of eviction (0: 256). */
int gpufl__ring_sink_create(gpufl__ring_sink_t **out, size_t cap_bytes, size_t rows_per_line);
void gpufl__ring_sink_destroy(gpufl__ring_sink_t *r);
/* Keeps only the lines that reached the ring within window_ns of now (0:
 * no window, the cap alone), now read from now_ns (NULL: CLOCK_MONOTONIC;
 * a test passes its own). The older ones leave, oldest first, as lines
 * come, at a read and at a dump; pinned records stay. Any thread. */
typedef int64_t (*gpufl__ring_sink_clock_fn)(void);
void gpufl__ring_sink_set_window(gpufl__ring_sink_t *r, int64_t window_ns,
                                 gpufl__ring_sink_clock_fn now_ns);
void gpufl__ring_sink_stats(gpufl__ring_sink_stats_t *out, gpufl__ring_sink_t *r);
/* Calls fn for each kept line of channel, pinned ones first, then oldest
 * first (type, rows: 0 for a record, the line with its '\n'); stops when fn
 * returns non-zero. fn runs without the ring's lock: rows keep coming. */
typedef int (*gpufl__ring_sink_visit_fn)(void *ctx, const char *type, size_t rows, const char *line,
                                         size_t len);
void gpufl__ring_sink_each(gpufl__ring_sink_t *r, enum gpufl__file_id channel,
                           gpufl__ring_sink_visit_fn fn, void *ctx);
/* Appends channel's kept lines as a log file: a header, then each line
 * after a dict line for the strings it names not yet defined. 0, or
 * GPUFL_ENOMEM when out overflowed its cap. */
int gpufl__ring_sink_dump(gpufl__ring_sink_t *r, const gpufl__session_ident_t *ident,
                          enum gpufl__file_id channel, gpufl__buf_t *out);
/* Writes the three files of a session into dir (which must exist), each
 * ending with what tail (optional) appends to out for its channel. */
typedef void (*gpufl__ring_sink_tail_fn)(void *ctx, enum gpufl__file_id channel, gpufl__buf_t *out);
int gpufl__ring_sink_dump_dir(gpufl__ring_sink_t *r, const gpufl__session_ident_t *ident,
                              const char *dir, gpufl__ring_sink_tail_fn tail, void *ctx);

/* For a fatal signal's handler, which may take no lock it could wait on
 * forever and may not allocate: takes the ring's lock, trying for at most
 * wait_ns (the thread that crashed may hold it), 1 when held. */
int gpufl__ring_sink_lock_bounded(gpufl__ring_sink_t *r, int64_t wait_ns);
void gpufl__ring_sink_unlock(gpufl__ring_sink_t *r);
/* What a handler writes a channel with, all allocated before the crash. */
typedef struct gpufl__ring_sink_raw {
    int fd;
    gpufl__buf_t *scratch; /* a dict line at a time: max == cap, so it never allocates */
    uint8_t *defined;      /* one byte per dict id below ndefined */
    size_t ndefined;
    uint64_t lines, rows, bytes, left_out; /* written; skipped (dict line past the scratch) */
    int write_failed;
} gpufl__ring_sink_raw_t;
/* With the lock held (gpufl__ring_sink_lock_bounded): writes channel's kept
 * lines to w->fd as gpufl__ring_sink_dump would, with only write() and no
 * allocation; lines older than the window are skipped, not freed. Then
 * *stats (optional) as gpufl__ring_sink_stats would say, with nothing aged
 * out. Async-signal-safe. */
void gpufl__ring_sink_write_locked(gpufl__ring_sink_t *r, enum gpufl__file_id channel,
                                   gpufl__ring_sink_raw_t *w, gpufl__ring_sink_stats_t *stats);

/* Latest-value gauges: for each gauge table (wire.h: host_sample, and
 * gpu_sample per device), the newest value of each column. Written by the
 * collector thread, read by any thread without ever making it wait. */
typedef struct gpufl__gauge_sink gpufl__gauge_sink_t;
extern const gpufl__sink_ops_t gpufl__gauge_sink_ops;
#define GPUFL_GAUGE_INSTANCES_MAX 16 /* devices per table */
int gpufl__gauge_sink_create(gpufl__gauge_sink_t **out);
void gpufl__gauge_sink_destroy(gpufl__gauge_sink_t *g);
/* Copies the newest row of table's instance (its ncols cells) into cells
 * and its update count into *updates (optional). 0; GPUFL_ENOTFOUND when
 * none came yet (or not a gauge table); GPUFL_EIO when writes kept
 * overlapping the read for long (try again later). */
int gpufl__gauge_sink_read(gpufl__gauge_sink_t *g, const gpufl__wire_table_t *table, int instance,
                           gpufl__cell_t *cells, uint64_t *updates);
/* Rows that named an instance past GPUFL_GAUGE_INSTANCES_MAX. */
uint64_t gpufl__gauge_sink_ignored(gpufl__gauge_sink_t *g);

#endif
