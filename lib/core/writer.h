// SPDX-License-Identifier: Apache-2.0
/*
 * writer.h - one session log file (device, scope or system) and its batches.
 *
 * Lines are encoded into a pending buffer and reach the file with one
 * write() of whole lines, on a file opened O_APPEND: a process killed at any
 * moment leaves every complete line intact. Past log_rotate_bytes the file
 * continues in a numbered segment that starts with its own header and dict;
 * with a rotation interval, also once a segment holding data is that old
 * (a window a shipper can take while the session runs).
 *
 * A log file is used by the collector thread; the few records written from
 * application threads (system_start/stop) take its lock first.
 */
#ifndef GPUFL_CORE_WRITER_H
#define GPUFL_CORE_WRITER_H

#include "util/intern.h"
#include "core/wire.h"
#include "util/jsonw.h"

#include <pthread.h>
#include <stdint.h>

typedef struct gpufl__writer {
    pthread_mutex_t lock;
    int fd;
    char dir[4096];
    char name[16]; /* "scope" */
    int segment;
    uint64_t bytes; /* in the current segment */
    uint64_t rotate_bytes;
    int64_t rotate_ns;        /* 0: on size only */
    int64_t segment_start_ns; /* CLOCK_MONOTONIC when the segment was opened */
    uint64_t header_bytes;    /* what the segment holds before any data */
    int sync_each_write; /* flush_logs_always */
    int broken_line;     /* the last write stopped inside a line */
    int reopen;          /* a new segment could not be created: retried at each flush */
    size_t record_start; /* where the record being encoded began in out */
    const gpufl__session_ident_t *ident;
    gpufl__buf_t out;      /* complete lines waiting for write() */
    uint8_t *dict_written; /* per dict id: already in this segment */
    size_t dict_written_cap;
    uint64_t bytes_total;
    uint64_t write_errors;
    uint64_t
        batches_lost; /* lines lost: did not fit the pending buffer, or cut by a failed write */
    char last_error[256];
} gpufl__writer_t;

/* Creates <dir>/<name>.log with O_EXCL and writes its header line. */
int gpufl__writer_open(gpufl__writer_t *f, const char *dir, const char *name,
                       const gpufl__session_ident_t *ident, uint64_t rotate_bytes,
                       int sync_each_write);
/* Also starts a new segment once the current one holds data and is
 * interval_ns old (0: on size only). Before the first flush. */
void gpufl__writer_rotate_every(gpufl__writer_t *f, int64_t interval_ns);
/* Writes what is pending and closes; accepts a file never opened (fd < 0). */
void gpufl__writer_close(gpufl__writer_t *f);
/* Writes the pending lines (rotating first when the segment is full).
 * Returns 0 or GPUFL_EIO; on error the lines stay pending up to the buffer
 * cap, then are dropped and counted. Caller holds f->lock. */
int gpufl__writer_flush(gpufl__writer_t *f);
/* Emits a dict line for the ids in ids[0..n) not yet in this segment and
 * returns how many were new (moved to the front of ids). Caller holds lock. */
size_t gpufl__writer_dict(gpufl__writer_t *f, const gpufl__intern_t *dict, uint32_t *ids, size_t n);
/* Begins a single-line record of `type`; finish it with gpufl__writer_end_record. */
gpufl__buf_t *gpufl__writer_record(gpufl__writer_t *f, const char *type);
void gpufl__writer_end_record(gpufl__writer_t *f);

/* Appends a record line (after a dict line for the ids it names that are
 * not yet in this segment); a line that does not fit is dropped whole and
 * counted. Caller holds f->lock. */
void gpufl__writer_put_line(gpufl__writer_t *f, const gpufl__intern_t *dict,
                            const gpufl__line_t *line);
/* Encodes the batch (and the dict lines it needs) into f's pending lines;
 * gpufl__batch_encode also empties it. Caller holds f->lock. */
void gpufl__writer_put_batch(gpufl__writer_t *f, const gpufl__intern_t *dict,
                             const gpufl__batch_t *b);
void gpufl__batch_encode(gpufl__batch_t *b, gpufl__writer_t *f, const gpufl__intern_t *dict);

#endif
