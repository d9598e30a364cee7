// SPDX-License-Identifier: Apache-2.0
/*
 * writer.h - one session log file (device, scope or system) and its batches.
 *
 * Lines are encoded into a pending buffer and reach the file with one
 * write() of whole lines, on a file opened O_APPEND: a process killed at any
 * moment leaves every complete line intact. Past log_rotate_bytes the file
 * continues in a numbered segment that starts with its own header and dict.
 *
 * A log file is used by the collector thread; the few records written from
 * application threads (system_start/stop) take its lock first.
 */
#ifndef GPUFL_CORE_WRITER_H
#define GPUFL_CORE_WRITER_H

#include "core/intern.h"
#include "util/jsonw.h"

#include <pthread.h>
#include <stdint.h>

#define GPUFL_BATCH_MAX_ROWS 4096
#define GPUFL_BATCH_MAX_COLS 32

/* What a header needs; shared by the session's three files. */
typedef struct gpufl_session_ident {
    char session_id[64];
    char app_name[256];
    char hostname[256];
    int pid;
    int64_t epoch_ns;      /* CLOCK_MONOTONIC at init */
    int64_t epoch_unix_us; /* wall clock at the same moment */
} gpufl_session_ident_t;

typedef struct gpufl_writer {
    pthread_mutex_t lock;
    int fd;
    char dir[4096];
    char name[16]; /* "scope" */
    int segment;
    uint64_t bytes; /* in the current segment */
    uint64_t rotate_bytes;
    int sync_each_write; /* flush_logs_always */
    int broken_line;     /* the last write stopped inside a line */
    int reopen;          /* a new segment could not be created: retried at each flush */
    size_t record_start; /* where the record being encoded began in out */
    const gpufl_session_ident_t *ident;
    gpufl_buf_t out;       /* complete lines waiting for write() */
    uint8_t *dict_written; /* per dict id: already in this segment */
    size_t dict_written_cap;
    uint64_t bytes_total;
    uint64_t write_errors;
    uint64_t
        batches_lost; /* lines lost: did not fit the pending buffer, or cut by a failed write */
    char last_error[256];
} gpufl_writer_t;

/* Creates <dir>/<name>.log with O_EXCL and writes its header line. */
int gpufl__writer_open(gpufl_writer_t *f, const char *dir, const char *name,
                       const gpufl_session_ident_t *ident, uint64_t rotate_bytes,
                       int sync_each_write);
/* Writes what is pending and closes; accepts a file never opened (fd < 0). */
void gpufl__writer_close(gpufl_writer_t *f);
/* Writes the pending lines (rotating first when the segment is full).
 * Returns 0 or GPUFL_EIO; on error the lines stay pending up to the buffer
 * cap, then are dropped and counted. Caller holds f->lock. */
int gpufl__writer_flush(gpufl_writer_t *f);
/* Emits a dict line for the ids in ids[0..n) not yet in this segment and
 * returns how many were new (moved to the front of ids). Caller holds lock. */
size_t gpufl__writer_dict(gpufl_writer_t *f, const gpufl_intern_t *dict, uint32_t *ids, size_t n);
/* Begins a single-line record of `type`; finish it with gpufl__writer_end_record. */
gpufl_buf_t *gpufl__writer_record(gpufl_writer_t *f, const char *type);
void gpufl__writer_end_record(gpufl_writer_t *f);

/* ---- batches: rows of int64 or percentage cells, written column by column ---- */

typedef enum gpufl_col_kind {
    GPUFL_COL_INT = 0,  /* integer */
    GPUFL_COL_DICT = 1, /* integer dict id (0 = none), written to the dict first */
    GPUFL_COL_PCT = 2,  /* double with one decimal; negative = null */
    GPUFL_COL_OPT = 3,  /* integer, negative = null */
    GPUFL_COL_FIX2 = 4  /* double with two decimals; negative = null */
} gpufl_col_kind_t;

typedef struct gpufl_col_def {
    const char *name;
    gpufl_col_kind_t kind;
} gpufl_col_def_t;

typedef union gpufl_cell {
    int64_t i;
    double d;
} gpufl_cell_t;

typedef struct gpufl_batch {
    const char *type;
    int version; /* the "v" of its lines: 1 from init, set after it for a later one */
    const gpufl_col_def_t *cols;
    int ncols;
    size_t rows;
    gpufl_cell_t *cells; /* rows x ncols, row-major; GPUFL_BATCH_MAX_ROWS rows */
    uint32_t *dict_ids;  /* scratch: the dict ids one batch uses */
} gpufl_batch_t;

int gpufl__batch_init(gpufl_batch_t *b, const char *type, const gpufl_col_def_t *cols, int ncols);
void gpufl__batch_fini(gpufl_batch_t *b);
/* The next row to fill (ncols cells), or NULL when the batch is full. */
static inline gpufl_cell_t *gpufl__batch_row(gpufl_batch_t *b) {
    if (b->rows >= GPUFL_BATCH_MAX_ROWS) return NULL;
    return &b->cells[b->rows++ * (size_t)b->ncols];
}
/* The next row to fill; when the batch is full, it is first encoded into f
 * (taking f->lock). NULL only when encoding freed no row. */
gpufl_cell_t *gpufl__batch_next(gpufl_batch_t *b, gpufl_writer_t *f, const gpufl_intern_t *dict);
/* Writes one cell as JSON according to its column kind. */
void gpufl__buf_put_cell(gpufl_buf_t *b, gpufl_col_kind_t kind, const gpufl_cell_t *cell);
/* Encodes the batch (and the dict lines it needs) into f's pending lines and
 * empties it. Caller holds f->lock. */
void gpufl__batch_encode(gpufl_batch_t *b, gpufl_writer_t *f, const gpufl_intern_t *dict);

#endif
