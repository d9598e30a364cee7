// SPDX-License-Identifier: Apache-2.0
/*
 * writer.c - append-only, line-atomic session files with rotation, and the
 * column-wise batch encoder.
 */
#include "core/writer.h"

#include "util/error.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Pending lines beyond this are dropped (and counted) if the disk refuses them. */
#define PENDING_MAX_BYTES ((size_t)64 << 20)

static void put_header(gpufl_writer_t *f) {
    const gpufl_session_ident_t *id = f->ident;
    char epoch[24];
    gpufl_buf_t *b = &f->out;
    gpufl__buf_record(b, "header");
    gpufl__buf_kv_str(b, "format", "gpufl-log");
    gpufl__buf_kv_str(b, "file", f->name);
    gpufl__buf_kv_i64(b, "segment", f->segment);
    gpufl__buf_kv_str(b, "session_id", id->session_id);
    gpufl__buf_kv_str(b, "app_name", id->app_name);
    gpufl__buf_kv_i64(b, "pid", id->pid);
    gpufl__buf_kv_str(b, "hostname", id->hostname);
    snprintf(epoch, sizeof epoch, "%lld", (long long)id->epoch_ns);
    gpufl__buf_kv_str(b, "epoch_ns", epoch);
    gpufl__buf_kv_i64(b, "epoch_unix_us", id->epoch_unix_us);
    gpufl__buf_kv_str(b, "clock", "monotonic");
    gpufl__buf_kv_str(b, "gpufl_version", gpufl_version());
    gpufl__buf_puts(b, "}\n");
}

static int open_segment(gpufl_writer_t *f) {
    char path[4200];
    if (f->segment == 0)
        snprintf(path, sizeof path, "%s/%s.log", f->dir, f->name);
    else
        snprintf(path, sizeof path, "%s/%s.log.%d", f->dir, f->name, f->segment);
    f->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (f->fd < 0)
        return gpufl__set_error(GPUFL_EIO, "cannot create log file '%s': %s", path,
                                strerror(errno));
    f->bytes = 0;
    f->broken_line = 0;
    if (f->dict_written) memset(f->dict_written, 0, f->dict_written_cap);
    put_header(f);
    return 0;
}

int gpufl__writer_open(gpufl_writer_t *f, const char *dir, const char *name,
                       const gpufl_session_ident_t *ident, uint64_t rotate_bytes,
                       int sync_each_write) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    pthread_mutex_init(&f->lock, NULL);
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->ident = ident;
    f->rotate_bytes = rotate_bytes;
    f->sync_each_write = sync_each_write;
    gpufl__buf_init(&f->out, PENDING_MAX_BYTES);
    int rc = open_segment(f);
    if (rc == 0) rc = gpufl__writer_flush(f);
    return rc;
}

/* Writes p[0..n), finishing partial writes; *done says how far it got. */
static int write_all(gpufl_writer_t *f, const char *p, size_t n, size_t *done) {
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(f->fd, p + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
        f->bytes += (uint64_t)w;
        f->bytes_total += (uint64_t)w;
        f->broken_line = p[off - 1] != '\n';
    }
    if (done) *done = off;
    return off == n ? 0 : -1;
}

static void rotate(gpufl_writer_t *f) {
    char next[64];
    snprintf(next, sizeof next, "%s.log.%d", f->name, f->segment + 1);
    gpufl__buf_record(&f->out, "segment_end");
    gpufl__buf_kv_str(&f->out, "next", next);
    gpufl__buf_puts(&f->out, "}\n");
    write_all(f, f->out.data, f->out.len, NULL);
    close(f->fd);
    f->fd = -1;
    f->out.len = 0;
    f->segment++;
    if (open_segment(f) != 0) { /* tried again at every flush */
        f->reopen = 1;
        f->write_errors++;
        gpufl__warn("%s", gpufl_last_error());
    }
}

int gpufl__writer_flush(gpufl_writer_t *f) {
    int rc = 0;
    size_t done = 0;
    if (f->fd < 0 && f->reopen && open_segment(f) == 0) f->reopen = 0;
    if (f->fd < 0 || f->out.len == 0) goto out;
    /* A line cut short by an earlier failed write is closed first, so the
     * damage stays inside that one line. */
    if (f->broken_line && write_all(f, "\n", 1, NULL) != 0) goto fail;
    if (write_all(f, f->out.data, f->out.len, &done) != 0) goto fail;
    f->out.len = 0;
    if (f->sync_each_write) fdatasync(f->fd);
    if (f->bytes >= f->rotate_bytes) rotate(f);
    goto out;
fail:
    f->write_errors++;
    snprintf(f->last_error, sizeof f->last_error, "write to %.150s/%s.log failed: %s", f->dir,
             f->name, strerror(errno));
    if (f->write_errors == 1) gpufl__warn("%s", f->last_error);
    /* What reached the file is not sent again. The rest of a line that was
     * cut is lost (it could only follow its head): the next write resumes at
     * the next line. */
    if (done > 0 && f->out.data[done - 1] != '\n') {
        char *nl = memchr(f->out.data + done, '\n', f->out.len - done);
        done = nl ? (size_t)(nl - f->out.data) + 1 : f->out.len;
        f->batches_lost++;
    }
    memmove(f->out.data, f->out.data + done, f->out.len - done);
    f->out.len -= done;
    /* Keep the lines for the next try unless they pile up. */
    if (f->out.len > PENDING_MAX_BYTES / 2) {
        f->out.len = 0;
        f->batches_lost++;
    }
    rc = GPUFL_EIO;
out:
    f->out.overflow = 0;
    return rc;
}

void gpufl__writer_close(gpufl_writer_t *f) {
    if (f->fd >= 0) {
        pthread_mutex_lock(&f->lock);
        gpufl__writer_flush(f);
        if (f->sync_each_write) fsync(f->fd);
        close(f->fd);
        f->fd = -1;
        pthread_mutex_unlock(&f->lock);
    }
    gpufl__buf_fini(&f->out);
    free(f->dict_written);
    f->dict_written = NULL;
    pthread_mutex_destroy(&f->lock);
}

gpufl_buf_t *gpufl__writer_record(gpufl_writer_t *f, const char *type) {
    f->record_start = f->out.len;
    gpufl__buf_record(&f->out, type);
    return &f->out;
}

void gpufl__writer_end_record(gpufl_writer_t *f) {
    gpufl__buf_puts(&f->out, "}\n");
    if (f->out.overflow) { /* all or nothing: never half a line */
        f->out.len = f->record_start;
        f->out.overflow = 0;
        f->batches_lost++;
    }
}

/* Marks id as written in this segment; returns 1 if it was not yet. */
static int dict_mark(gpufl_writer_t *f, uint32_t id) {
    if (id >= f->dict_written_cap) {
        size_t cap = f->dict_written_cap ? f->dict_written_cap : 1024;
        while (cap <= id) cap *= 2;
        uint8_t *p = realloc(f->dict_written, cap);
        if (!p) return 1; /* writing a dict entry twice is harmless */
        memset(p + f->dict_written_cap, 0, cap - f->dict_written_cap);
        f->dict_written = p;
        f->dict_written_cap = cap;
    }
    if (f->dict_written[id]) return 0;
    f->dict_written[id] = 1;
    return 1;
}

size_t gpufl__writer_dict(gpufl_writer_t *f, const gpufl_intern_t *dict, uint32_t *ids, size_t n) {
    size_t start = f->out.len, fresh = 0;
    gpufl__buf_record(&f->out, "dict");
    gpufl__buf_puts(&f->out, ",\"id\":[");
    gpufl_buf_t strs;
    gpufl__buf_init(&strs, PENDING_MAX_BYTES);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *s;
        if (ids[i] == 0 || !dict_mark(f, ids[i])) continue;
        ids[fresh++] = ids[i]; /* the new ones, at the front, to unmark on failure */
        s = gpufl__intern_str(dict, ids[i], &len);
        if (!s) continue;
        if (strs.len) {
            gpufl__buf_putc(&f->out, ',');
            gpufl__buf_putc(&strs, ',');
        }
        gpufl__buf_put_i64(&f->out, ids[i]);
        gpufl__buf_put_str(&strs, s, len);
    }
    if (strs.len) {
        gpufl__buf_puts(&f->out, "],\"str\":[");
        gpufl__buf_put(&f->out, strs.data, strs.len);
        gpufl__buf_puts(&f->out, "]}\n");
    } else {
        f->out.len = start;
    }
    if (strs.overflow) f->out.overflow = 1;
    gpufl__buf_fini(&strs);
    return fresh;
}

/* Undoes dict_mark for ids whose dict line was rolled back. */
static void dict_unmark(gpufl_writer_t *f, const uint32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < f->dict_written_cap) f->dict_written[ids[i]] = 0;
}

int gpufl__batch_init(gpufl_batch_t *b, const char *type, const gpufl_col_def_t *cols, int ncols) {
    memset(b, 0, sizeof *b);
    b->type = type;
    b->version = 1;
    b->cols = cols;
    b->ncols = ncols;
    if (ncols < 1 || ncols > GPUFL_BATCH_MAX_COLS)
        return gpufl__set_error(GPUFL_EINVAL, "a %s batch has %d columns (1..%d)", type, ncols,
                                GPUFL_BATCH_MAX_COLS);
    int dict_cols = 0;
    for (int c = 0; c < ncols; c++) dict_cols += cols[c].kind == GPUFL_COL_DICT;
    b->cells = malloc((size_t)GPUFL_BATCH_MAX_ROWS * (size_t)ncols * sizeof *b->cells);
    b->dict_ids = malloc((size_t)GPUFL_BATCH_MAX_ROWS * (size_t)(dict_cols + 1) * sizeof(uint32_t));
    if (!b->cells || !b->dict_ids) {
        gpufl__batch_fini(b);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a %s batch", type);
    }
    return 0;
}

void gpufl__batch_fini(gpufl_batch_t *b) {
    free(b->cells);
    free(b->dict_ids);
    b->cells = NULL;
    b->dict_ids = NULL;
}

gpufl_cell_t *gpufl__batch_next(gpufl_batch_t *b, gpufl_writer_t *f, const gpufl_intern_t *dict) {
    gpufl_cell_t *row = gpufl__batch_row(b);
    if (row) return row;
    pthread_mutex_lock(&f->lock);
    gpufl__batch_encode(b, f, dict);
    pthread_mutex_unlock(&f->lock);
    return gpufl__batch_row(b);
}

void gpufl__buf_put_cell(gpufl_buf_t *b, gpufl_col_kind_t kind, const gpufl_cell_t *cell) {
    switch (kind) {
    case GPUFL_COL_PCT: gpufl__buf_put_fixed(b, cell->d, 1); break;
    case GPUFL_COL_FIX2: gpufl__buf_put_fixed(b, cell->d, 2); break;
    case GPUFL_COL_OPT:
        if (cell->i < 0)
            gpufl__buf_put(b, "null", 4);
        else
            gpufl__buf_put_i64(b, cell->i);
        break;
    default: gpufl__buf_put_i64(b, cell->i); break;
    }
}

void gpufl__batch_encode(gpufl_batch_t *b, gpufl_writer_t *f, const gpufl_intern_t *dict) {
    uint32_t *ids = b->dict_ids;
    size_t n = 0, fresh = 0;
    if (b->rows == 0) return;
    gpufl_buf_t *o = &f->out;
    size_t start = o->len;
    /* One dict line ahead of the batch defines every new string it uses. */
    for (int c = 0; c < b->ncols; c++) {
        if (b->cols[c].kind != GPUFL_COL_DICT) continue;
        for (size_t r = 0; r < b->rows; r++) ids[n++] = (uint32_t)b->cells[r * b->ncols + c].i;
    }
    if (n) fresh = gpufl__writer_dict(f, dict, ids, n);
    gpufl__buf_record_v(o, b->type, b->version);
    for (int c = 0; c < b->ncols; c++) {
        gpufl__buf_key(o, b->cols[c].name);
        gpufl__buf_putc(o, '[');
        gpufl_col_kind_t kind = b->cols[c].kind;
        if ((kind == GPUFL_COL_INT || kind == GPUFL_COL_DICT) &&
            gpufl__buf_reserve(o, b->rows * 21) == 0) {
            /* The common case, room reserved once: digits straight in. */
            char *p = o->data + o->len;
            for (size_t r = 0; r < b->rows; r++) {
                if (r) *p++ = ',';
                p = gpufl__fmt_i64(p, b->cells[r * b->ncols + c].i);
            }
            o->len = (size_t)(p - o->data);
        } else {
            for (size_t r = 0; r < b->rows; r++) {
                if (r) gpufl__buf_putc(o, ',');
                gpufl__buf_put_cell(o, kind, &b->cells[r * b->ncols + c]);
            }
        }
        gpufl__buf_putc(o, ']');
    }
    gpufl__buf_puts(o, "}\n");
    if (o->overflow) { /* never leave half a line: batch and dict are lost and counted */
        o->len = start;
        o->overflow = 0;
        dict_unmark(f, ids, fresh);
        f->batches_lost++;
    }
    b->rows = 0;
}
