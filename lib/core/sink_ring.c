// SPDX-License-Identifier: Apache-2.0
/*
 * sink_ring.c - the in-memory ring: the newest lines of a session up to a
 * cap of bytes, what a flight recorder keeps. Batches are kept in lines of
 * at most rows_per_line rows (the unit of eviction), each with the dict
 * strings it names copied in, so a dump needs nothing of the session (its
 * intern table is the collector's alone) and defines every string it uses.
 * The records that describe the session (options, devices, frames...) are
 * pinned, up to a quarter of the cap, so a dump still says what ran where.
 * With a window (the flight recorder's N seconds), a line older than the
 * window when it reached the ring is dropped too: aged out, counted apart
 * from what the cap evicts.
 *
 * Threads: one mutex, held only to add a line or to take a snapshot of the
 * kept lines (a reference to each, counted). A dump or a visit encodes and
 * writes from its snapshot with the lock released, so however slow its
 * destination, the collector never waits on it; a line evicted meanwhile is
 * freed by the last of the ring and the snapshots to let it go (the ring's
 * memory may pass its cap by what running dumps still hold).
 */
#include "core/sink.h"

#include "core/clock.h"
#include "util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_ROWS_PER_LINE 256
#define MIN_CAP_BYTES         4096
#define DUMP_MAX_BYTES        ((size_t)1 << 30)

/* One kept line. data: ids[nids], lens[nids], the strings, the line, the type. */
typedef struct entry {
    struct entry *next;
    atomic_int refs; /* the ring's own, and one per snapshot holding it */
    enum gpufl__file_id channel;
    size_t rows; /* 0 for a record */
    size_t nids, strs_len, line_len, bytes;
    int64_t kept_ns; /* the ring's clock when the line arrived */
    char data[];
} entry_t;

/* Oldest first. */
typedef struct entry_list {
    entry_t *head, *tail;
} entry_list_t;

struct gpufl__ring_sink {
    pthread_mutex_t lock;
    size_t cap_bytes, rows_per_line;
    entry_list_t pinned, lines; /* pinned: describing records, never evicted */
    gpufl__ring_sink_stats_t stats;
    int64_t window_ns;                /* 0: lines leave by the cap only */
    gpufl__ring_sink_clock_fn now_ns; /* the monotonic clock, or a test's */
    uint32_t max_id;
    uint32_t *ids;     /* scratch: a line's dict ids, GPUFL_BATCH_MAX_COLS per row */
    gpufl__buf_t line; /* scratch: a batch line */
};

static const uint32_t *entry_ids(const entry_t *e) {
    return (const uint32_t *)(const void *)e->data;
}
static const uint32_t *entry_lens(const entry_t *e) { return entry_ids(e) + e->nids; }
static const char *entry_strs(const entry_t *e) { return (const char *)(entry_lens(e) + e->nids); }
static const char *entry_line(const entry_t *e) { return entry_strs(e) + e->strs_len; }
static const char *entry_type(const entry_t *e) { return entry_line(e) + e->line_len; }

static void entry_release(entry_t *e) {
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) free(e);
}

int gpufl__ring_sink_create(gpufl__ring_sink_t **out, size_t cap_bytes, size_t rows_per_line) {
    *out = NULL;
    if (cap_bytes < MIN_CAP_BYTES)
        return gpufl__set_error(GPUFL_EINVAL, "a ring sink needs at least %d bytes (got %zu)",
                                MIN_CAP_BYTES, cap_bytes);
    if (rows_per_line > GPUFL_BATCH_MAX_ROWS)
        return gpufl__set_error(GPUFL_EINVAL, "rows_per_line %zu is above %d", rows_per_line,
                                GPUFL_BATCH_MAX_ROWS);
    gpufl__ring_sink_t *r = calloc(1, sizeof *r);
    size_t per_line = rows_per_line ? rows_per_line : DEFAULT_ROWS_PER_LINE;
    uint32_t *ids = malloc(per_line * GPUFL_BATCH_MAX_COLS * sizeof *ids);
    if (!r || !ids) {
        free(r);
        free(ids);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a ring sink");
    }
    pthread_mutex_init(&r->lock, NULL);
    r->cap_bytes = cap_bytes;
    r->rows_per_line = per_line;
    r->now_ns = gpufl__mono_ns;
    r->ids = ids;
    gpufl__buf_init(&r->line, cap_bytes);
    *out = r;
    return 0;
}

static void free_list(entry_list_t *l) {
    for (entry_t *e = l->head, *next; e; e = next) {
        next = e->next;
        entry_release(e);
    }
    l->head = l->tail = NULL;
}

void gpufl__ring_sink_destroy(gpufl__ring_sink_t *r) {
    if (!r) return;
    free_list(&r->pinned);
    free_list(&r->lines);
    gpufl__buf_fini(&r->line);
    free(r->ids);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Sorts ids[0..n), drops 0s and repeats, returns how many are left. */
static size_t unique_ids(uint32_t *ids, size_t n) {
    size_t k = 0;
    qsort(ids, n, sizeof *ids, cmp_u32);
    for (size_t i = 0; i < n; i++)
        if (ids[i] != 0 && (k == 0 || ids[k - 1] != ids[i])) ids[k++] = ids[i];
    return k;
}

/* Drops the oldest line, counted as evicted (the cap) or aged out (the window). */
static void drop_oldest(gpufl__ring_sink_t *r, int aged) {
    entry_t *e = r->lines.head;
    r->lines.head = e->next;
    if (!r->lines.head) r->lines.tail = NULL;
    r->stats.kept_lines--;
    r->stats.kept_rows -= e->rows;
    r->stats.kept_bytes -= e->bytes;
    if (aged) {
        r->stats.aged_lines++;
        r->stats.aged_rows += e->rows;
        r->stats.aged_bytes += e->bytes;
    } else {
        r->stats.evicted_lines++;
        r->stats.evicted_rows += e->rows;
        r->stats.evicted_bytes += e->bytes;
    }
    entry_release(e);
}

/* Drops the lines that arrived more than the window before now. Lock held. */
static void age_out(gpufl__ring_sink_t *r, int64_t now_ns) {
    if (r->window_ns <= 0) return;
    while (r->lines.head && now_ns - r->lines.head->kept_ns > r->window_ns) drop_oldest(r, 1);
}

void gpufl__ring_sink_set_window(gpufl__ring_sink_t *r, int64_t window_ns,
                                 gpufl__ring_sink_clock_fn now_ns) {
    pthread_mutex_lock(&r->lock);
    r->window_ns = window_ns > 0 ? window_ns : 0;
    r->now_ns = now_ns ? now_ns : gpufl__mono_ns;
    age_out(r, r->now_ns());
    pthread_mutex_unlock(&r->lock);
}

/* Keeps one line and the strings of its ids (unique, non-zero), evicting
 * the oldest lines to make room; a describing record is pinned while the
 * pinned ones take at most a quarter of the cap. Caller holds the lock. */
static int keep(gpufl__ring_sink_t *r, enum gpufl__file_id channel, const char *type, size_t rows,
                const char *line, size_t line_len, const uint32_t *ids, size_t nids,
                const gpufl__intern_t *dict, int describes) {
    size_t strs_len = 0, type_len = strlen(type) + 1;
    for (size_t i = 0; i < nids; i++) {
        size_t len = 0;
        if (gpufl__intern_str(dict, ids[i], &len)) strs_len += len;
    }
    size_t bytes = sizeof(entry_t) + 2 * nids * sizeof(uint32_t) + strs_len + line_len + type_len;
    int pin = describes && r->stats.pinned_bytes + bytes <= r->cap_bytes / 4;
    if (!pin && r->stats.pinned_bytes + bytes > r->cap_bytes) { /* no room at all: gone at once */
        r->stats.in_bytes += bytes;
        r->stats.evicted_lines++;
        r->stats.evicted_rows += rows;
        r->stats.evicted_bytes += bytes;
        return 0;
    }
    int64_t now = r->now_ns();
    age_out(r, now);
    while (r->lines.head && r->stats.pinned_bytes + r->stats.kept_bytes + bytes > r->cap_bytes)
        drop_oldest(r, 0);
    entry_t *e = malloc(bytes);
    if (!e) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a ring sink line");
    *e = (entry_t){NULL, 1, channel, rows, nids, strs_len, line_len, bytes, now};
    uint32_t *eids = (uint32_t *)(void *)e->data, *lens = eids + nids;
    char *p = (char *)(lens + nids);
    for (size_t i = 0; i < nids; i++) {
        size_t len = 0;
        const char *s = gpufl__intern_str(dict, ids[i], &len);
        eids[i] = ids[i];
        lens[i] = s ? (uint32_t)len : UINT32_MAX; /* UINT32_MAX: no string */
        if (s) memcpy(p, s, len);
        if (s) p += len;
        if (ids[i] > r->max_id) r->max_id = ids[i];
    }
    memcpy(p, line, line_len);
    memcpy(p + line_len, type, type_len);
    entry_list_t *list = pin ? &r->pinned : &r->lines;
    if (list->tail)
        list->tail->next = e;
    else
        list->head = e;
    list->tail = e;
    if (pin) {
        r->stats.pinned_lines++;
        r->stats.pinned_bytes += bytes;
        return 0;
    }
    r->stats.kept_lines++;
    r->stats.kept_rows += rows;
    r->stats.kept_bytes += bytes;
    r->stats.in_bytes += bytes;
    return 0;
}

static int ring_record(void *self, enum gpufl__file_id channel, const gpufl__line_t *line,
                       const gpufl__intern_t *dict) {
    gpufl__ring_sink_t *r = self;
    uint32_t ids[GPUFL_LINE_DICT_MAX];
    if (line->buf.len == 0) return 0; /* past its cap: no line to keep */
    memcpy(ids, line->dict_ids, line->ndict * sizeof ids[0]);
    size_t n = unique_ids(ids, line->ndict);
    pthread_mutex_lock(&r->lock);
    int rc = keep(r, channel, line->type, 0, line->buf.data, line->buf.len, ids, n, dict,
                  line->describes);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static int ring_batch(void *self, enum gpufl__file_id channel, const gpufl__batch_t *b,
                      const gpufl__intern_t *dict) {
    gpufl__ring_sink_t *r = self;
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    for (size_t r0 = 0; r0 < b->rows && rc == 0; r0 += r->rows_per_line) {
        size_t r1 = r0 + r->rows_per_line < b->rows ? r0 + r->rows_per_line : b->rows;
        size_t n = unique_ids(r->ids, gpufl__wire_batch_ids(b, r0, r1, r->ids));
        r->line.len = 0;
        gpufl__wire_batch_line(&r->line, b, r0, r1);
        if (r->line.overflow) { /* larger than the ring: counted as evicted at once */
            r->line.overflow = 0;
            r->stats.evicted_lines++;
            r->stats.evicted_rows += r1 - r0;
            r->stats.evicted_bytes += r->line.len;
            r->stats.in_bytes += r->line.len;
            continue;
        }
        rc = keep(r, channel, b->type, r1 - r0, r->line.data, r->line.len, r->ids, n, dict, 0);
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

const gpufl__sink_ops_t gpufl__ring_sink_ops = {
    .name = "ring",
    .record = ring_record,
    .batch = ring_batch,
};

/* The stats as of now_ns. Lock held. */
static void stats_at(gpufl__ring_sink_stats_t *out, const gpufl__ring_sink_t *r, int64_t now_ns) {
    *out = r->stats;
    out->span_ns = r->lines.head ? now_ns - r->lines.head->kept_ns : 0;
}

void gpufl__ring_sink_stats(gpufl__ring_sink_stats_t *out, gpufl__ring_sink_t *r) {
    pthread_mutex_lock(&r->lock);
    int64_t now = r->now_ns();
    age_out(r, now);
    stats_at(out, r, now);
    pthread_mutex_unlock(&r->lock);
}

/* The kept lines of channel, pinned first, each with a reference the
 * caller lets go with release_snapshot; *max_id: the largest dict id. */
typedef struct snapshot {
    entry_t **v;
    size_t n;
    uint32_t max_id;
} snapshot_t;

static int take_snapshot(gpufl__ring_sink_t *r, enum gpufl__file_id channel, snapshot_t *out) {
    *out = (snapshot_t){NULL, 0, 0};
    pthread_mutex_lock(&r->lock);
    age_out(r, r->now_ns());
    /* Bounded: one pointer per line the cap holds. */
    size_t most = (size_t)(r->stats.pinned_lines + r->stats.kept_lines);
    out->v = malloc((most ? most : 1) * sizeof *out->v);
    if (out->v) {
        const entry_list_t *lists[2] = {&r->pinned, &r->lines};
        for (int i = 0; i < 2; i++)
            for (entry_t *e = lists[i]->head; e; e = e->next) {
                if (e->channel != channel) continue;
                atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
                out->v[out->n++] = e;
            }
        out->max_id = r->max_id;
    }
    pthread_mutex_unlock(&r->lock);
    if (!out->v) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a ring snapshot");
    return 0;
}

static void release_snapshot(snapshot_t *s) {
    for (size_t i = 0; i < s->n; i++) entry_release(s->v[i]);
    free(s->v);
    *s = (snapshot_t){NULL, 0, 0};
}

void gpufl__ring_sink_each(gpufl__ring_sink_t *r, enum gpufl__file_id channel,
                           gpufl__ring_sink_visit_fn fn, void *ctx) {
    snapshot_t snap;
    if (take_snapshot(r, channel, &snap) != 0) return;
    for (size_t i = 0; i < snap.n; i++) {
        const entry_t *e = snap.v[i];
        if (fn(ctx, entry_type(e), e->rows, entry_line(e), e->line_len) != 0) break;
    }
    release_snapshot(&snap);
}

/* The dict line of an entry's strings not yet in this dump. */
typedef struct dump_strs {
    const entry_t *e;
    uint8_t *defined;                          /* by id */
    const gpufl__ring_sink_raw_t *defined_raw; /* a signal handler's (then defined is NULL) */
} dump_strs_t;

/* The string of dict id in e, NULL when e has none. */
static const char *entry_find_str(const entry_t *e, uint32_t id, size_t *len) {
    const uint32_t *ids = entry_ids(e), *lens = entry_lens(e);
    const char *p = entry_strs(e);
    for (size_t i = 0; i < e->nids; i++) {
        if (lens[i] == UINT32_MAX) continue;
        if (ids[i] == id) {
            *len = lens[i];
            return p;
        }
        p += lens[i];
    }
    return NULL;
}

static const char *entry_str(const void *ctx, uint32_t id, size_t *len) {
    const dump_strs_t *d = ctx;
    return d->defined[id] ? NULL : entry_find_str(d->e, id, len);
}

int gpufl__ring_sink_dump(gpufl__ring_sink_t *r, const gpufl__session_ident_t *ident,
                          enum gpufl__file_id channel, gpufl__buf_t *out) {
    snapshot_t snap;
    int rc = take_snapshot(r, channel, &snap);
    if (rc) return rc;
    gpufl__wire_header(out, ident, gpufl__channel_name(channel), 0);
    dump_strs_t d = {NULL, calloc((size_t)snap.max_id + 1, 1), NULL};
    if (!d.defined) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for a ring dump");
        goto release_snapshot;
    }
    for (size_t i = 0; i < snap.n; i++) {
        const entry_t *e = snap.v[i];
        d.e = e;
        gpufl__wire_dict_line(out, entry_ids(e), e->nids, entry_str, &d);
        for (size_t k = 0; k < e->nids; k++) d.defined[entry_ids(e)[k]] = 1;
        gpufl__buf_put(out, entry_line(e), e->line_len);
    }
    free(d.defined);
    if (out->overflow)
        rc = gpufl__set_error(GPUFL_ENOMEM, "the ring's %s lines passed the dump's cap",
                              gpufl__channel_name(channel));
release_snapshot:
    release_snapshot(&snap);
    return rc;
}

int gpufl__ring_sink_dump_dir(gpufl__ring_sink_t *r, const gpufl__session_ident_t *ident,
                              const char *dir, gpufl__ring_sink_tail_fn tail, void *ctx) {
    int rc = 0;
    for (int ch = 0; ch < GPUFL_FILE_COUNT && rc == 0; ch++) {
        char path[4200];
        gpufl__buf_t out;
        gpufl__buf_init(&out, DUMP_MAX_BYTES);
        rc = gpufl__ring_sink_dump(r, ident, (enum gpufl__file_id)ch, &out);
        if (rc == 0 && tail) tail(ctx, (enum gpufl__file_id)ch, &out);
        if (rc == 0 && out.overflow)
            rc = gpufl__set_error(GPUFL_ENOMEM, "the ring's dump passed its cap");
        snprintf(path, sizeof path, "%s/%s.log", dir, gpufl__channel_name((enum gpufl__file_id)ch));
        int fd = rc ? -1 : open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (rc == 0 && (fd < 0 || write(fd, out.data, out.len) != (ssize_t)out.len))
            rc = gpufl__set_error(GPUFL_EIO, "cannot write the ring's dump to '%s'", path);
        if (fd >= 0) close(fd);
        gpufl__buf_fini(&out);
    }
    return rc;
}

/* ---------------- from a fatal signal's handler ---------------- */

int gpufl__ring_sink_lock_bounded(gpufl__ring_sink_t *r, int64_t wait_ns) {
    /* A crash inside keep() leaves the lock held by the thread now in the
     * handler: trylock, never lock, and give up after wait_ns. */
    const struct timespec step = {0, 1000000};
    for (int64_t waited = 0;; waited += step.tv_nsec) {
        if (pthread_mutex_trylock(&r->lock) == 0) return 1;
        if (waited >= wait_ns) return 0;
        nanosleep(&step, NULL);
    }
}

void gpufl__ring_sink_unlock(gpufl__ring_sink_t *r) { pthread_mutex_unlock(&r->lock); }

static void write_all(gpufl__ring_sink_raw_t *w, const char *p, size_t n) {
    while (n > 0 && !w->write_failed) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            w->write_failed = 1;
            return;
        }
        p += k;
        n -= (size_t)k;
        w->bytes += (uint64_t)k;
    }
}

/* The dict line of an entry's strings not yet written (ids past the map:
 * written every time, which a reader takes as the same definition again). */
static const char *raw_entry_str(const void *ctx, uint32_t id, size_t *len) {
    const dump_strs_t *d = ctx;
    const gpufl__ring_sink_raw_t *w = d->defined_raw;
    return id < w->ndefined && w->defined[id] ? NULL : entry_find_str(d->e, id, len);
}

void gpufl__ring_sink_write_locked(gpufl__ring_sink_t *r, enum gpufl__file_id channel,
                                   gpufl__ring_sink_raw_t *w, gpufl__ring_sink_stats_t *stats) {
    int64_t now = r->now_ns();
    memset(w->defined, 0, w->ndefined);
    const entry_list_t *lists[2] = {&r->pinned, &r->lines};
    const entry_t *oldest = NULL;
    uint64_t old_lines = 0, old_rows = 0, old_bytes = 0; /* past the window, not aged out yet */
    for (int i = 0; i < 2; i++)
        for (const entry_t *e = lists[i]->head; e; e = e->next) {
            if (i == 1 && r->window_ns > 0 && now - e->kept_ns > r->window_ns) {
                old_lines++, old_rows += e->rows, old_bytes += e->bytes;
                continue;
            }
            if (i == 1 && !oldest) oldest = e;
            if (e->channel != channel) continue;
            dump_strs_t d = {e, NULL, w};
            w->scratch->len = 0;
            w->scratch->overflow = 0;
            gpufl__wire_dict_line(w->scratch, entry_ids(e), e->nids, raw_entry_str, &d);
            if (w->scratch->overflow) { /* its strings pass the scratch: the line is left out */
                w->left_out++;
                continue;
            }
            write_all(w, w->scratch->data, w->scratch->len);
            write_all(w, entry_line(e), e->line_len);
            for (size_t k = 0; k < e->nids; k++)
                if (entry_ids(e)[k] < w->ndefined) w->defined[entry_ids(e)[k]] = 1;
            w->lines++;
            w->rows += e->rows;
        }
    if (stats) {
        *stats = r->stats;
        stats->kept_lines -= old_lines;
        stats->kept_rows -= old_rows;
        stats->kept_bytes -= old_bytes;
        stats->aged_lines += old_lines;
        stats->aged_rows += old_rows;
        stats->aged_bytes += old_bytes;
        stats->span_ns = oldest ? now - oldest->kept_ns : 0;
    }
}
