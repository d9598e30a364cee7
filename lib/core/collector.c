// SPDX-License-Identifier: Apache-2.0
/*
 * collector.c - the session's background thread: rings in, log lines out.
 *
 * Each pass snapshots every ring's head, takes a clock anchor, and turns the
 * records up to the snapshot into rows. Scope paths are rebuilt here from
 * each thread's begin/end order, so the hot path never touches a string
 * table. Counters of lost records are written as `drops` lines whenever they
 * change, and as warnings the first time.
 */
#include "core/collector.h"
#include "core/flight_recorder.h"

#include "core/clock.h"
#include "core/sink_ndjson.h"
#include "util/error.h"
#include "util/log.h"
#include "core/scope.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_BYTES   4096
#define POLL_MIN_NS      1000000LL   /* 1 ms when rings fill fast */
#define POLL_MAX_NS      100000000LL /* 100 ms when idle */
#define DICT_MAX_STRINGS (1u << 20)
#define DICT_MAX_BYTES   ((size_t)64 << 20)

typedef struct open_scope {
    uint64_t id;
    uint32_t path; /* dict id */
} open_scope_t;

/* What the collector knows about one ring's thread. */
typedef struct thread_view {
    uint32_t depth;
    open_scope_t stack[GPUFL_SCOPE_STACK_MAX];
} thread_view_t;

typedef struct counters {
    uint64_t records, dropped, unbalanced, truncated, depth_overflow, unbuffered;
} counters_t;

struct gpufl__collector {
    const gpufl__settings_t *settings;
    gpufl__ring_pool_t *pool;
    gpufl__session_ident_t ident;
    gpufl__ndjson_sink_t ndjson;  /* the session files: the first sink, unless... */
    gpufl__ring_sink_t *flight;   /* ...a flight recorder keeps the rows in memory instead */
    gpufl__flight_watch_t *watch; /* its insight conditions, when it has some */
    gpufl__fanout_t sinks;
    gpufl__intern_t *dict;
    thread_view_t *threads; /* one per ring in the pool */
    uint64_t *heads;        /* drain_all's snapshot, one per ring */
    int *states;
    gpufl__batch_t begins, ends;
    gpufl__source_t sources[GPUFL_MAX_SOURCES];
    int nsources;
    int open_scopes;
    int write_forced; /* the write pass running now was asked for: sources write all they hold */
    atomic_int windows_open;

    counters_t retired; /* from rings that were handed back mid-session */
    counters_t written; /* as of the last drops line */
    uint64_t path_truncated;
    uint64_t records_taken;
    int warned_drop, warned_unbalanced, warned_unbuffered, warned_write;

    int64_t poll_ns, next_write_ns, flush_interval_ns;

    pthread_t thread;
    int thread_running;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    int stopping;
    uint64_t flush_requested, flush_completed;
    gpufl_stats_t published;
};

/* ---------------- records to rows ---------------- */

/* Copies the text that follows record `at` (name and tag) into buf. */
static size_t read_text(gpufl__ring_t *r, uint64_t at, const gpufl__rec_t *rec, char *buf) {
    size_t total = (size_t)rec->name_len + rec->tag_len;
    size_t n = total < GPUFL_REC_INLINE_TEXT ? total : GPUFL_REC_INLINE_TEXT;
    memcpy(buf, rec->text, n);
    for (uint64_t k = 1; n < total; k++) {
        size_t chunk = total - n < sizeof(gpufl__rec_t) ? total - n : sizeof(gpufl__rec_t);
        memcpy(buf + n, gpufl__ring_at(r, at + k), chunk);
        n += chunk;
    }
    return total;
}

static gpufl__cell_t *next_row(gpufl__collector_t *c, gpufl__batch_t *b) {
    return gpufl__collector_row(c, GPUFL_FILE_SCOPE, b);
}

static uint32_t path_of(gpufl__collector_t *c, uint32_t parent_path, const char *name,
                        size_t name_len) {
    char path[PATH_MAX_BYTES];
    size_t parent_len = 0, n = 0;
    const char *parent = parent_path ? gpufl__intern_str(c->dict, parent_path, &parent_len) : NULL;
    if (parent) {
        if (parent_len > PATH_MAX_BYTES - 2) parent_len = PATH_MAX_BYTES - 2;
        memcpy(path, parent, parent_len);
        path[parent_len] = '/';
        n = parent_len + 1;
    }
    if (n + name_len > PATH_MAX_BYTES) {
        name_len = PATH_MAX_BYTES - n;
        c->path_truncated++;
    }
    memcpy(path + n, name, name_len);
    return gpufl__intern(c->dict, path, n + name_len);
}

/* Brings the collector's copy of a thread's stack to the depth the thread
 * itself had. They part when an end record was dropped (full ring): the
 * thread closed the scope, the collector never heard of it. Those scopes
 * stay open in the log; the drops line counts the lost records. */
static void align_depth(gpufl__collector_t *c, thread_view_t *t, uint32_t depth) {
    if (t->depth > depth) {
        c->open_scopes -= (int)(t->depth - depth);
        t->depth = depth;
    }
    /* Deeper than we know (only after lost records): stand-ins, so paths
     * keep their true depth. */
    while (t->depth < depth && t->depth < GPUFL_SCOPE_STACK_MAX) {
        uint32_t parent = t->depth ? t->stack[t->depth - 1].path : 0;
        t->stack[t->depth++] = (open_scope_t){0, path_of(c, parent, "(lost)", 6)};
        c->open_scopes++;
    }
}

/* An NVTX range's columns: source, domain, category and payload (row[10..13]);
 * its tag text is the domain and the category's name, so it has no tag. */
static void nvtx_columns(gpufl__collector_t *c, gpufl__ring_t *r, uint64_t at,
                         const gpufl__rec_t *rec, const char *text, gpufl__cell_t *row) {
    const gpufl__rec_nvtx_t *nv = (const gpufl__rec_nvtx_t *)gpufl__ring_at(r, at + rec->extra);
    const char *domain = text + rec->name_len;
    size_t domain_len = nv->domain_len <= rec->tag_len ? nv->domain_len : rec->tag_len;
    size_t category_len = rec->tag_len - domain_len;
    row[10].i = rec->flags & GPUFL_REC_FLAG_DETACHED ? GPUFL__SCOPE_SOURCE_NVTX_START_END
                                                     : GPUFL__SCOPE_SOURCE_NVTX_PUSH_POP;
    row[11].i = domain_len ? gpufl__intern(c->dict, domain, domain_len) : 0;
    char number[32];
    if (category_len)
        row[12].i = gpufl__intern(c->dict, domain + domain_len, category_len);
    else if (nv->category)
        row[12].i = gpufl__intern(c->dict, number,
                                  (size_t)snprintf(number, sizeof number, "%u", nv->category));
    else
        row[12].i = 0;
    int n = 0;
    switch (nv->payload_kind) {
    case GPUFL_NVTX_PAYLOAD_INT:
        n = snprintf(number, sizeof number, "%lld", (long long)nv->payload.i);
        break;
    case GPUFL_NVTX_PAYLOAD_UINT:
        n = snprintf(number, sizeof number, "%llu", (unsigned long long)nv->payload.u);
        break;
    case GPUFL_NVTX_PAYLOAD_REAL:
        /* NaN and infinities have no JSON number: kept as their names */
        n = snprintf(number, sizeof number, "%.17g", nv->payload.f);
        break;
    default: break;
    }
    row[13].i = n > 0 ? gpufl__intern(c->dict, number, (size_t)n) : 0;
}

/* An NVTX start/end range: on no thread's stack (it may end on another
 * thread), so a top-level scope of its own whatever the thread had open. */
static void on_begin_detached(gpufl__collector_t *c, gpufl__ring_t *r, uint64_t at,
                              const gpufl__rec_t *rec, int64_t ts) {
    char text[2 * GPUFL_TEXT_MAX + sizeof(gpufl__rec_t)];
    read_text(r, at, rec, text);
    uint32_t name = gpufl__intern(c->dict, text, rec->name_len);
    gpufl__cell_t *row = next_row(c, &c->begins);
    row[0].i = ts;
    row[1].i = r->tid;
    row[2].i = (int64_t)rec->scope_id;
    row[3].i = 0;
    row[4].i = 1;
    row[5].i = name;
    row[6].i = 0;
    row[7].i = name;
    row[8].i = row[9].i = 0;
    nvtx_columns(c, r, at, rec, text, row);
}

static void on_begin(gpufl__collector_t *c, gpufl__ring_t *r, uint64_t at, const gpufl__rec_t *rec,
                     int64_t ts) {
    char text[2 * GPUFL_TEXT_MAX + sizeof(gpufl__rec_t)];
    if (rec->flags & GPUFL_REC_FLAG_DETACHED) {
        on_begin_detached(c, r, at, rec, ts);
        return;
    }
    int nvtx = (rec->flags & GPUFL_REC_FLAG_NVTX) != 0;
    thread_view_t *t = &c->threads[r->index];
    align_depth(c, t, rec->depth);
    read_text(r, at, rec, text);
    uint32_t name = gpufl__intern(c->dict, text, rec->name_len);
    uint32_t tag =
        rec->tag_len && !nvtx ? gpufl__intern(c->dict, text + rec->name_len, rec->tag_len) : 0;
    const open_scope_t *parent = t->depth ? &t->stack[t->depth - 1] : NULL;
    uint32_t path = path_of(c, parent ? parent->path : 0, text, rec->name_len);

    gpufl__cell_t *row = next_row(c, &c->begins);
    row[0].i = ts;
    row[1].i = r->tid;
    row[2].i = (int64_t)rec->scope_id;
    row[3].i = parent ? (int64_t)parent->id : 0;
    row[4].i = t->depth + 1;
    row[5].i = name;
    row[6].i = tag;
    row[7].i = path;
    row[8].i = rec->repeat;
    row[9].i = rec->warmup;
    if (nvtx)
        nvtx_columns(c, r, at, rec, text, row);
    else
        row[10].i = row[11].i = row[12].i = row[13].i = 0;
    if (t->depth < GPUFL_SCOPE_STACK_MAX)
        t->stack[t->depth++] = (open_scope_t){rec->scope_id, path};
    c->open_scopes++;
}

static void on_end(gpufl__collector_t *c, gpufl__ring_t *r, const gpufl__rec_t *rec, int64_t ts) {
    if (rec->flags & GPUFL_REC_FLAG_DETACHED) { /* the end of a start/end range: no stack */
        gpufl__cell_t *row = next_row(c, &c->ends);
        row[0].i = ts;
        row[1].i = r->tid;
        row[2].i = (int64_t)rec->scope_id;
        row[3].i = 0;
        return;
    }
    thread_view_t *t = &c->threads[r->index];
    align_depth(c, t, (uint32_t)rec->depth + 1);
    uint32_t pos = t->depth;
    while (pos > 0 && t->stack[pos - 1].id != rec->scope_id) pos--;
    if (pos == 0) return; /* its begin was dropped: nothing to close */
    c->open_scopes -= (int)(t->depth - pos + 1);
    t->depth = pos - 1;

    gpufl__cell_t *row = next_row(c, &c->ends);
    row[0].i = ts;
    row[1].i = r->tid;
    row[2].i = (int64_t)rec->scope_id;
    row[3].i = (rec->flags & GPUFL_REC_FLAG_IMPLICIT) != 0;
}

/* Drains ring r up to head; returns how many records it held. */
static uint64_t drain_ring(gpufl__collector_t *c, gpufl__ring_t *r, uint64_t head) {
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t n = head - tail;
    int64_t epoch = c->ident.epoch_ns;
    while (tail < head) {
        const gpufl__rec_t *rec = gpufl__ring_at(r, tail);
        int64_t ts = gpufl__clock_ticks_to_ns(rec->ticks) - epoch;
        switch (rec->kind) {
        case GPUFL_REC_SCOPE_BEGIN: on_begin(c, r, tail, rec, ts); break;
        case GPUFL_REC_SCOPE_END: on_end(c, r, rec, ts); break;
        default: break;
        }
        c->records_taken++;
        tail += 1 + rec->extra;
    }
    atomic_store_explicit(&r->tail, tail, memory_order_release);
    return n;
}

/* A ring whose thread exited: keep its counters, then free it for reuse. */
static void retire_ring(gpufl__collector_t *c, gpufl__ring_t *r) {
    c->retired.dropped += atomic_exchange(&r->dropped, 0);
    c->retired.unbalanced += atomic_exchange(&r->unbalanced_ends, 0);
    c->retired.truncated += atomic_exchange(&r->truncated, 0);
    c->retired.depth_overflow += atomic_exchange(&r->depth_overflow, 0);
    c->open_scopes -= (int)c->threads[r->index].depth;
    c->threads[r->index].depth = 0;
    atomic_store_explicit(&r->generation, 0, memory_order_relaxed);
    atomic_store_explicit(&r->state, GPUFL_RING_FREE, memory_order_release);
}

/* Returns the fullest ring's fill before draining, as a fraction. */
static double drain_all(gpufl__collector_t *c) {
    uint64_t *heads = c->heads; /* per ring; kept off the stack: shutdown may run on a small one */
    int *states = c->states;
    double fullest = 0;
    uint32_t count = c->pool->count;
    for (uint32_t i = 0; i < count; i++) {
        gpufl__ring_t *r = &c->pool->rings[i];
        states[i] = atomic_load_explicit(&r->state, memory_order_acquire);
        heads[i] =
            states[i] == GPUFL_RING_FREE ? 0 : atomic_load_explicit(&r->head, memory_order_acquire);
    }
    /* Every record below the snapshot was written before this anchor. */
    gpufl__clock_anchor();
    for (uint32_t i = 0; i < count; i++) {
        gpufl__ring_t *r = &c->pool->rings[i];
        if (states[i] == GPUFL_RING_FREE) continue;
        uint64_t n = drain_ring(c, r, heads[i]);
        double fill = (double)n / (double)(c->pool->capacity);
        if (fill > fullest) fullest = fill;
        /* A ring orphaned before the head snapshot holds nothing newer. */
        if (states[i] == GPUFL_RING_ORPHANED) retire_ring(c, r);
    }
    return fullest;
}

/* ---------------- counters, drops and events ---------------- */

static counters_t current_counters(gpufl__collector_t *c) {
    counters_t k = c->retired;
    for (uint32_t i = 0; i < c->pool->count; i++) {
        gpufl__ring_t *r = &c->pool->rings[i];
        k.dropped += atomic_load_explicit(&r->dropped, memory_order_relaxed);
        k.unbalanced += atomic_load_explicit(&r->unbalanced_ends, memory_order_relaxed);
        k.truncated += atomic_load_explicit(&r->truncated, memory_order_relaxed);
        k.depth_overflow += atomic_load_explicit(&r->depth_overflow, memory_order_relaxed);
    }
    k.unbalanced += gpufl__scope_stray_ends();
    k.unbuffered = gpufl__scope_threads_unbuffered();
    k.truncated += c->path_truncated + gpufl__intern_overflows(c->dict);
    return k;
}

void gpufl__collector_event(gpufl__collector_t *c, enum gpufl__file_id id, const char *level,
                            const char *code, const char *message) {
    gpufl__line_t l;
    gpufl__wire_event(&l, gpufl__collector_session_ns(c, gpufl__mono_ns()), level, code, message);
    gpufl__collector_record(c, id, &l);
}

void gpufl__collector_source_cost(gpufl__collector_t *c, enum gpufl__file_id id, const char *source,
                                  const gpufl__cost_t *cost, const gpufl__cost_part_t *parts,
                                  int nparts) {
    gpufl__line_t l;
    gpufl__wire_source_cost(&l, source, cost, parts, nparts);
    gpufl__collector_record(c, id, &l);
}

/* The first time a kind of loss happens, say so once, in the log and to the user. */
static void warn_once(gpufl__collector_t *c, int *warned, uint64_t count, const char *code,
                      const char *message) {
    if (*warned || count == 0) return;
    *warned = 1;
    gpufl__warn("%s", message);
    gpufl__collector_event(c, GPUFL_FILE_SCOPE, "warn", code, message);
}

static void write_drops(gpufl__collector_t *c, int64_t now_ns, int always) {
    counters_t k = current_counters(c);
    warn_once(c, &c->warned_drop, k.dropped, "records_dropped",
              "scope records dropped because a thread's ring was full; raise "
              "ring_capacity_records or open fewer scopes");
    warn_once(c, &c->warned_unbalanced, k.unbalanced, "unbalanced_scope_end",
              "a scope end matched no open scope on its thread (ended twice, on another "
              "thread, or after a new session began); it was ignored");
    warn_once(c, &c->warned_unbuffered, k.unbuffered, "threads_unbuffered",
              "more threads recorded scopes than the ring pool holds; their records were "
              "dropped (raise memory_cap_bytes)");
    if (!always && memcmp(&k, &c->written, sizeof k) == 0) return;
    gpufl__wire_drops_t d = {gpufl__collector_session_ns(c, now_ns),
                             k.dropped,
                             k.unbuffered,
                             k.truncated,
                             k.unbalanced,
                             k.depth_overflow};
    gpufl__line_t l;
    gpufl__wire_drops(&l, &d);
    gpufl__collector_record(c, GPUFL_FILE_SCOPE, &l);
    c->written = k;
}

static void publish_stats(gpufl__collector_t *c) {
    counters_t k = current_counters(c);
    uint64_t bytes = 0, errors = 0;
    for (int i = 0; i < c->ndjson.files_open; i++) {
        gpufl__writer_t *f = &c->ndjson.files[i];
        pthread_mutex_lock(&f->lock);
        bytes += f->bytes_total;
        errors += f->write_errors + f->batches_lost;
        pthread_mutex_unlock(&f->lock);
    }
    pthread_mutex_lock(&c->mu);
    c->published.records_written = c->records_taken;
    c->published.records_dropped = k.dropped;
    c->published.threads_unbuffered = k.unbuffered;
    c->published.unbalanced_ends = k.unbalanced;
    c->published.names_truncated = k.truncated;
    c->published.bytes_written = bytes;
    c->published.write_errors = errors;
    pthread_mutex_unlock(&c->mu);
    if (errors && !c->warned_write) {
        c->warned_write = 1;
        gpufl__warn("log lines were lost (%llu: disk errors or full buffers); see write_errors in "
                    "session_end",
                    (unsigned long long)errors);
    }
}

/* ---------------- the pass and the thread ---------------- */

static void write_files(gpufl__collector_t *c, int64_t now_ns, int forced) {
    c->write_forced = forced;
    gpufl__collector_batch(c, GPUFL_FILE_SCOPE, &c->begins);
    gpufl__collector_batch(c, GPUFL_FILE_SCOPE, &c->ends);
    for (int i = 0; i < c->nsources; i++)
        if (c->sources[i].flush) c->sources[i].flush(c, c->sources[i].self);
    write_drops(c, now_ns, 0);
    gpufl__fanout_flush(&c->sinks);
    c->next_write_ns = now_ns + c->flush_interval_ns;
}

/* Bytes waiting in the files' buffers: written early past EARLY_WRITE_BYTES,
 * so a long flush interval never lets them reach the buffers' cap. */
#define EARLY_WRITE_BYTES ((size_t)4 << 20)

static size_t pending_bytes(gpufl__collector_t *c) {
    size_t n = 0;
    for (int i = 0; i < c->ndjson.files_open; i++) {
        pthread_mutex_lock(&c->ndjson.files[i].lock);
        n += c->ndjson.files[i].out.len;
        pthread_mutex_unlock(&c->ndjson.files[i].lock);
    }
    return n;
}

static void one_pass(gpufl__collector_t *c, int force_write) {
    double fullest = drain_all(c);
    int64_t now = gpufl__mono_ns();
    for (int i = 0; i < c->nsources; i++) c->sources[i].poll(c, c->sources[i].self, now);
    if (force_write || now >= c->next_write_ns || pending_bytes(c) > EARLY_WRITE_BYTES)
        write_files(c, now, force_write);
    publish_stats(c);

    /* Pass more often while rings fill, less when idle. */
    int64_t idle_max = c->flush_interval_ns < POLL_MAX_NS ? c->flush_interval_ns : POLL_MAX_NS;
    if (fullest > 0.125 && c->poll_ns > POLL_MIN_NS)
        c->poll_ns /= 2;
    else if (fullest < 0.02 && c->poll_ns < idle_max)
        c->poll_ns *= 2;
    if (c->poll_ns < POLL_MIN_NS) c->poll_ns = POLL_MIN_NS;
    if (c->poll_ns > idle_max) c->poll_ns = idle_max;
}

static int64_t next_wait_ns(gpufl__collector_t *c) {
    int64_t wait = c->poll_ns, now = gpufl__mono_ns();
    for (int i = 0; i < c->nsources; i++) {
        int64_t due = c->sources[i].due_in ? c->sources[i].due_in(c->sources[i].self, now) : wait;
        if (due < wait) wait = due;
    }
    return wait > 0 ? wait : 0;
}

static void *collector_main(void *arg) {
    gpufl__collector_t *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        if (c->flush_requested == c->flush_completed) {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            int64_t ns = until.tv_nsec + next_wait_ns(c);
            until.tv_sec += ns / 1000000000;
            until.tv_nsec = ns % 1000000000;
            pthread_cond_timedwait(&c->wake, &c->mu, &until);
        }
        uint64_t flush_target = c->flush_requested;
        int stopping = c->stopping;
        pthread_mutex_unlock(&c->mu);
        if (stopping) {
            pthread_mutex_lock(&c->mu);
            break;
        }
        one_pass(c, flush_target != c->flush_completed || c->settings->flush_logs_always);
        pthread_mutex_lock(&c->mu);
        c->flush_completed = flush_target;
        pthread_cond_broadcast(&c->done);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---------------- lifecycle ---------------- */

/* Flight-recorder mode: no file; every channel to one ring that holds the
 * last flight_recorder_s seconds, at most flight_recorder_bytes. */
static int flight_recorder_create(gpufl__collector_t *c, const gpufl__settings_t *settings) {
    int rc = gpufl__ring_sink_create(&c->flight, (size_t)settings->flight_recorder_bytes, 0);
    if (rc) return rc;
    gpufl__ring_sink_set_window(c->flight, (int64_t)settings->flight_recorder_s * 1000000000, NULL);
    rc = gpufl__fanout_attach(&c->sinks, &gpufl__ring_sink_ops, c->flight);
    gpufl__flight_conditions_t conditions;
    if (rc || (rc = gpufl__flight_conditions_parse(settings->flight_recorder_trigger, &conditions)))
        return rc;
    if (conditions.n == 0) return 0;
    rc = gpufl__flight_watch_create(&c->watch, &conditions, settings->flight_recorder_s);
    return rc ? rc : gpufl__fanout_attach(&c->sinks, &gpufl__flight_watch_ops, c->watch);
}

int gpufl__collector_create(gpufl__collector_t **out, const gpufl__settings_t *settings,
                            gpufl__ring_pool_t *pool, const char *dir,
                            const gpufl__session_ident_t *ident) {
    int rc;
    gpufl__collector_t *c = calloc(1, sizeof *c);
    if (!c) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the collector");
    c->settings = settings;
    c->pool = pool;
    c->ident = *ident;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&c->done, NULL);
    c->flush_interval_ns = (int64_t)settings->flush_interval_ms * 1000000;
    c->poll_ns = POLL_MIN_NS * 8;
    c->next_write_ns = gpufl__mono_ns() + c->flush_interval_ns;

    c->dict = gpufl__intern_create(DICT_MAX_STRINGS, DICT_MAX_BYTES);
    c->threads = calloc(pool->count, sizeof *c->threads);
    c->heads = calloc(pool->count, sizeof *c->heads);
    c->states = calloc(pool->count, sizeof *c->states);
    if (!c->dict || !c->threads || !c->heads || !c->states) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for the collector");
        goto destroy_collector;
    }
    if ((rc = gpufl__batch_init_table(&c->begins, &gpufl__wire_scope_begin)) ||
        (rc = gpufl__batch_init_table(&c->ends, &gpufl__wire_scope_end)))
        goto destroy_collector;
    gpufl__fanout_init(&c->sinks, c->dict);
    if (settings->flight_recorder_s > 0) {
        rc = flight_recorder_create(c, settings);
        if (rc) goto destroy_collector;
        *out = c;
        return 0;
    }
    if ((rc = gpufl__ndjson_sink_open(&c->ndjson, dir, &c->ident,
                                      (uint64_t)settings->log_rotate_bytes,
                                      settings->flush_logs_always)) ||
        (rc = gpufl__fanout_attach(&c->sinks, &gpufl__ndjson_sink_ops, &c->ndjson)))
        goto destroy_collector;
    for (int i = 0; i < c->ndjson.files_open; i++)
        gpufl__writer_rotate_every(&c->ndjson.files[i],
                                   (int64_t)settings->log_rotate_interval_ms * 1000000);
    *out = c;
    return 0;
destroy_collector:
    gpufl__collector_destroy(c, NULL);
    return rc;
}

int gpufl__collector_add_source(gpufl__collector_t *c, const gpufl__source_t *source) {
    if (c->nsources == GPUFL_MAX_SOURCES)
        return gpufl__set_error(GPUFL_ENOMEM, "too many sources (limit %d)", GPUFL_MAX_SOURCES);
    c->sources[c->nsources++] = *source;
    return 0;
}

int gpufl__collector_start(gpufl__collector_t *c) {
    int err = pthread_create(&c->thread, NULL, collector_main, c);
    if (err)
        return gpufl__set_error(GPUFL_ETHREAD, "cannot start the collector thread: %s",
                                strerror(err));
    c->thread_running = 1;
    return 0;
}

static void write_session_end(gpufl__collector_t *c, int64_t now_ns) {
    gpufl_stats_t s = {.size = sizeof s};
    gpufl__collector_stats(&s, c);
    /* The files' own last line, like their header: what reached each file. */
    for (int i = 0; i < c->ndjson.files_open; i++) {
        gpufl__writer_t *f = &c->ndjson.files[i];
        pthread_mutex_lock(&f->lock);
        gpufl__wire_session_end_t e = {gpufl__collector_session_ns(c, now_ns), s.records_written,
                                       s.records_dropped, s.bytes_written + f->out.len,
                                       s.write_errors};
        gpufl__line_t l = {.type = "session_end"};
        gpufl__buf_init(&l.buf, (size_t)4096);
        gpufl__wire_session_end(&l.buf, &e);
        gpufl__writer_put_line(f, c->dict, &l);
        gpufl__line_fini(&l);
        pthread_mutex_unlock(&f->lock);
    }
}

void gpufl__collector_destroy(gpufl__collector_t *c, gpufl_stats_t *final_stats) {
    if (!c) return;
    if (c->thread_running) {
        pthread_mutex_lock(&c->mu);
        c->stopping = 1;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
        /* The hot path is detached: this last pass sees everything. */
        one_pass(c, 1);
        for (int i = 0; i < c->nsources; i++)
            if (c->sources[i].finish) c->sources[i].finish(c, c->sources[i].self);
        int64_t now = gpufl__mono_ns();
        write_drops(c, now, 1);
        publish_stats(c);
        write_session_end(c, now);
        gpufl__fanout_flush(&c->sinks);
        publish_stats(c); /* last: counts every byte written, before the locks go */
    }
    if (final_stats) gpufl__collector_stats(final_stats, c);
    gpufl__fanout_close(&c->sinks); /* the session files among them */
    gpufl__fanout_fini(&c->sinks);
    gpufl__ndjson_sink_close(&c->ndjson); /* when open failed before the attach */
    gpufl__ring_sink_destroy(c->flight);
    gpufl__flight_watch_destroy(c->watch);
    gpufl__batch_fini(&c->begins);
    gpufl__batch_fini(&c->ends);
    gpufl__intern_destroy(c->dict);
    free(c->threads);
    free(c->heads);
    free(c->states);
    pthread_cond_destroy(&c->wake);
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int gpufl__collector_flush(gpufl__collector_t *c) {
    pthread_mutex_lock(&c->mu);
    uint64_t target = ++c->flush_requested;
    pthread_cond_signal(&c->wake);
    while (c->flush_completed < target && !c->stopping) pthread_cond_wait(&c->done, &c->mu);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

void gpufl__collector_stats(gpufl_stats_t *out, gpufl__collector_t *c) {
    size_t size = out->size;
    pthread_mutex_lock(&c->mu);
    gpufl_stats_t s = c->published;
    pthread_mutex_unlock(&c->mu);
    s.size = size;
    if (size > sizeof s || size == 0) size = sizeof s;
    memcpy(out, &s, size);
    out->size = size;
}

void gpufl__collector_record(gpufl__collector_t *c, enum gpufl__file_id channel,
                             gpufl__line_t *line) {
    gpufl__fanout_record(&c->sinks, channel, line);
    gpufl__line_fini(line);
}

void gpufl__collector_batch(gpufl__collector_t *c, enum gpufl__file_id channel, gpufl__batch_t *b) {
    gpufl__fanout_batch(&c->sinks, channel, b);
}

gpufl__cell_t *gpufl__collector_row(gpufl__collector_t *c, enum gpufl__file_id channel,
                                    gpufl__batch_t *b) {
    gpufl__cell_t *row = gpufl__batch_row(b);
    if (row) return row;
    gpufl__fanout_batch(&c->sinks, channel, b);
    return gpufl__batch_row(b);
}

int gpufl__collector_attach_sink(gpufl__collector_t *c, const gpufl__sink_ops_t *ops, void *self) {
    return gpufl__fanout_attach(&c->sinks, ops, self);
}

uint64_t gpufl__collector_lines_lost(gpufl__collector_t *c, enum gpufl__file_id channel) {
    if ((int)channel >= c->ndjson.files_open) return 0; /* no files: a flight recorder */
    gpufl__writer_t *f = &c->ndjson.files[channel];
    pthread_mutex_lock(&f->lock);
    uint64_t lost = f->batches_lost;
    pthread_mutex_unlock(&f->lock);
    return lost;
}

gpufl__ring_sink_t *gpufl__collector_flight_recorder(gpufl__collector_t *c) { return c->flight; }

const gpufl__intern_t *gpufl__collector_dict(gpufl__collector_t *c) { return c->dict; }

int64_t gpufl__collector_session_ns(const gpufl__collector_t *c, int64_t mono_ns) {
    return mono_ns - c->ident.epoch_ns;
}

int gpufl__collector_open_scopes(const gpufl__collector_t *c) { return c->open_scopes; }

int gpufl__collector_write_forced(const gpufl__collector_t *c) { return c->write_forced; }

void gpufl__collector_windows_add(gpufl__collector_t *c, int delta) {
    atomic_fetch_add(&c->windows_open, delta);
}

int gpufl__collector_sampling_active(const gpufl__collector_t *c) {
    return c->open_scopes > 0 || atomic_load(&c->windows_open) > 0;
}
