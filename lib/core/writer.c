// SPDX-License-Identifier: Apache-2.0
/*
 * writer.c - append-only, line-atomic session files with rotation, and the
 * column-wise batch encoder.
 */
#include "core/writer.h"

#include "core/clock.h"

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

static void put_header(gpufl__writer_t *f) {
    gpufl__wire_header(&f->out, f->ident, f->name, f->segment);
}

static int open_segment(gpufl__writer_t *f) {
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
    size_t before = f->out.len;
    put_header(f);
    f->header_bytes = f->out.len - before;
    f->segment_start_ns = gpufl__mono_ns();
    return 0;
}

int gpufl__writer_open(gpufl__writer_t *f, const char *dir, const char *name,
                       const gpufl__session_ident_t *ident, uint64_t rotate_bytes,
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

void gpufl__writer_rotate_every(gpufl__writer_t *f, int64_t interval_ns) {
    f->rotate_ns = interval_ns > 0 ? interval_ns : 0;
}

/* A segment is sealed on time only once it holds more than its header, so
 * a file nothing is written to stays one segment. */
static int window_due(const gpufl__writer_t *f) {
    return f->rotate_ns > 0 && f->fd >= 0 && f->bytes > f->header_bytes &&
           gpufl__mono_ns() - f->segment_start_ns >= f->rotate_ns;
}

/* Writes p[0..n), finishing partial writes; *done says how far it got. */
static int write_all(gpufl__writer_t *f, const char *p, size_t n, size_t *done) {
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

static void rotate(gpufl__writer_t *f) {
    char next[64];
    snprintf(next, sizeof next, "%s.log.%d", f->name, f->segment + 1);
    gpufl__wire_segment_end(&f->out, next);
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

int gpufl__writer_flush(gpufl__writer_t *f) {
    int rc = 0;
    size_t done = 0;
    if (f->fd < 0 && f->reopen && open_segment(f) == 0) f->reopen = 0;
    if (f->fd < 0 || f->out.len == 0) goto check_window;
    /* A line cut short by an earlier failed write is closed first, so the
     * damage stays inside that one line. */
    if (f->broken_line && write_all(f, "\n", 1, NULL) != 0) goto record_write_error;
    if (write_all(f, f->out.data, f->out.len, &done) != 0) goto record_write_error;
    f->out.len = 0;
    if (f->sync_each_write) fdatasync(f->fd);
    if (f->bytes >= f->rotate_bytes || window_due(f)) rotate(f);
    goto clear_overflow;
check_window:
    if (window_due(f)) rotate(f);
    goto clear_overflow;
record_write_error:
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
clear_overflow:
    f->out.overflow = 0;
    return rc;
}

void gpufl__writer_close(gpufl__writer_t *f) {
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

gpufl__buf_t *gpufl__writer_record(gpufl__writer_t *f, const char *type) {
    f->record_start = f->out.len;
    gpufl__buf_record(&f->out, type);
    return &f->out;
}

void gpufl__writer_end_record(gpufl__writer_t *f) {
    gpufl__buf_puts(&f->out, "}\n");
    if (f->out.overflow) { /* all or nothing: never half a line */
        f->out.len = f->record_start;
        f->out.overflow = 0;
        f->batches_lost++;
    }
}

/* Marks id as written in this segment; returns 1 if it was not yet. */
static int dict_mark(gpufl__writer_t *f, uint32_t id) {
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

size_t gpufl__writer_dict(gpufl__writer_t *f, const gpufl__intern_t *dict, uint32_t *ids,
                          size_t n) {
    size_t fresh = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] != 0 && dict_mark(f, ids[i]))
            ids[fresh++] = ids[i]; /* the new ones, at the front, to unmark on failure */
    if (fresh) gpufl__wire_dict_line(&f->out, ids, fresh, gpufl__wire_intern_str, dict);
    return fresh;
}

/* Undoes dict_mark for ids whose dict line was rolled back. */
static void dict_unmark(gpufl__writer_t *f, const uint32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < f->dict_written_cap) f->dict_written[ids[i]] = 0;
}

void gpufl__writer_put_line(gpufl__writer_t *f, const gpufl__intern_t *dict,
                            const gpufl__line_t *line) {
    uint32_t ids[GPUFL_LINE_DICT_MAX];
    size_t start = f->out.len, fresh = 0;
    if (line->buf.len == 0) { /* it did not fit its own cap */
        f->batches_lost++;
        return;
    }
    if (line->ndict) {
        memcpy(ids, line->dict_ids, line->ndict * sizeof ids[0]);
        fresh = gpufl__writer_dict(f, dict, ids, line->ndict);
    }
    gpufl__buf_put(&f->out, line->buf.data, line->buf.len);
    if (f->out.overflow) { /* all or nothing: never half a line */
        f->out.len = start;
        f->out.overflow = 0;
        dict_unmark(f, ids, fresh);
        f->batches_lost++;
    }
}

void gpufl__writer_put_batch(gpufl__writer_t *f, const gpufl__intern_t *dict,
                             const gpufl__batch_t *b) {
    size_t n, fresh = 0;
    if (b->rows == 0) return;
    gpufl__buf_t *o = &f->out;
    size_t start = o->len;
    /* One dict line ahead of the batch defines every new string it uses. */
    n = gpufl__wire_batch_ids(b, 0, b->rows, b->dict_ids);
    if (n) fresh = gpufl__writer_dict(f, dict, b->dict_ids, n);
    gpufl__wire_batch_line(o, b, 0, b->rows);
    if (o->overflow) { /* never leave half a line: batch and dict are lost and counted */
        o->len = start;
        o->overflow = 0;
        dict_unmark(f, b->dict_ids, fresh);
        f->batches_lost++;
    }
}

void gpufl__batch_encode(gpufl__batch_t *b, gpufl__writer_t *f, const gpufl__intern_t *dict) {
    gpufl__writer_put_batch(f, dict, b);
    b->rows = 0;
}
