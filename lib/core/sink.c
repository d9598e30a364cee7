// SPDX-License-Identifier: Apache-2.0
/*
 * sink.c - the fan-out: every row and record to every attached sink, in the
 * order attached. A failing sink is counted and said once; the others go on.
 * With only the session files attached this is one indirect call per batch
 * (a batch holds up to 4096 rows) or per record. The few records that
 * describe the session are also kept (capped) and given to a sink attached
 * later, first, so what it holds can be read as a session of its own.
 */
#include "core/sink.h"

#include "util/error.h"
#include "util/log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const channel_names[GPUFL_FILE_COUNT] = {"device", "scope", "system"};

const char *gpufl__channel_name(enum gpufl__file_id channel) {
    return (unsigned)channel < GPUFL_FILE_COUNT ? channel_names[channel] : "?";
}

/* A describing record as written: the line, then its type. */
struct gpufl__kept_line {
    gpufl__kept_line_t *next;
    enum gpufl__file_id channel;
    size_t len;
    char data[];
};

void gpufl__fanout_init(gpufl__fanout_t *f, const gpufl__intern_t *dict) {
    memset(f, 0, sizeof *f);
    f->dict = dict;
    atomic_init(&f->count, 0);
    atomic_init(&f->closed, 0);
    pthread_mutex_init(&f->lock, NULL);
}

void gpufl__fanout_fini(gpufl__fanout_t *f) {
    for (gpufl__kept_line_t *k = f->kept, *next; k; k = next) {
        next = k->next;
        free(k);
    }
    f->kept = f->kept_tail = NULL;
    f->kept_bytes = 0;
    pthread_mutex_destroy(&f->lock);
}

static void failed(gpufl__sink_t *s, const char *what, int rc);

/* Gives the new sink s every kept record. Lock held. */
static void replay(gpufl__fanout_t *f, gpufl__sink_t *s) {
    if (!s->ops->record) return;
    for (const gpufl__kept_line_t *k = f->kept; k; k = k->next) {
        gpufl__line_t l = {.type = k->data + k->len, .describes = 1};
        l.buf = (gpufl__buf_t){(char *)k->data, k->len, k->len, k->len, 0};
        int rc = s->ops->record(s->self, k->channel, &l, f->dict);
        if (rc < 0) failed(s, l.type, rc);
    }
    if (f->kept_left_out)
        gpufl__warn("sink %s: %llu records that describe the session passed the %zu bytes kept "
                    "for sinks attached later; it did not get them",
                    s->ops->name, (unsigned long long)f->kept_left_out, GPUFL__KEPT_MAX_BYTES);
}

int gpufl__fanout_attach(gpufl__fanout_t *f, const gpufl__sink_ops_t *ops, void *self) {
    int rc = 0;
    if (!ops || !ops->batch)
        return gpufl__set_error(GPUFL_EINVAL, "a sink needs at least a batch operation");
    pthread_mutex_lock(&f->lock);
    int n = atomic_load_explicit(&f->count, memory_order_relaxed);
    if (atomic_load(&f->closed)) {
        rc = gpufl__set_error(GPUFL_EINVAL, "sink %s: the session's sinks are closed", ops->name);
    } else if (n == GPUFL__SINKS_MAX) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "too many sinks (limit %d)", GPUFL__SINKS_MAX);
    } else {
        gpufl__sink_t *s = &f->sinks[n];
        s->ops = ops;
        s->self = self;
        atomic_init(&s->failures, 0);
        atomic_init(&s->warned, 0);
        replay(f, s);
        /* The entry is complete before a reader of count can see it. */
        atomic_store_explicit(&f->count, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* Copies a describing record for sinks attached later. Lock held. */
static void keep(gpufl__fanout_t *f, enum gpufl__file_id channel, const gpufl__line_t *line) {
    size_t type_len = strlen(line->type) + 1;
    size_t bytes = sizeof(gpufl__kept_line_t) + line->buf.len + type_len;
    gpufl__kept_line_t *k = NULL;
    if (f->kept_bytes + bytes <= GPUFL__KEPT_MAX_BYTES) k = malloc(bytes);
    if (!k) {
        f->kept_left_out++;
        return;
    }
    k->next = NULL;
    k->channel = channel;
    k->len = line->buf.len;
    memcpy(k->data, line->buf.data, line->buf.len);
    memcpy(k->data + line->buf.len, line->type, type_len);
    if (f->kept_tail)
        f->kept_tail->next = k;
    else
        f->kept = k;
    f->kept_tail = k;
    f->kept_bytes += bytes;
}

static void failed(gpufl__sink_t *s, const char *what, int rc) {
    atomic_fetch_add_explicit(&s->failures, 1, memory_order_relaxed);
    if (atomic_exchange(&s->warned, 1)) return;
    gpufl__warn("sink %s failed (%s: %s); its later failures are counted, not said", s->ops->name,
                what, gpufl_strerror(rc));
}

#define EACH_SINK(f, s)                                                                            \
    for (gpufl__sink_t *s = (f)->sinks,                                                            \
                       *s##_end =                                                                  \
                           (f)->sinks + atomic_load_explicit(&(f)->count, memory_order_acquire);   \
         s < s##_end; s++)

static void record_to_sinks(gpufl__fanout_t *f, enum gpufl__file_id channel,
                            const gpufl__line_t *line) {
    EACH_SINK(f, s) {
        int rc = s->ops->record ? s->ops->record(s->self, channel, line, f->dict) : 0;
        if (rc < 0) failed(s, line->type, rc);
    }
}

void gpufl__fanout_record(gpufl__fanout_t *f, enum gpufl__file_id channel,
                          const gpufl__line_t *line) {
    if (!line->describes || line->ndict != 0 || line->buf.len == 0) {
        record_to_sinks(f, channel, line);
        return;
    }
    pthread_mutex_lock(&f->lock);
    keep(f, channel, line);
    record_to_sinks(f, channel, line);
    pthread_mutex_unlock(&f->lock);
}

void gpufl__fanout_batch(gpufl__fanout_t *f, enum gpufl__file_id channel, gpufl__batch_t *b) {
    if (b->rows == 0) return;
    EACH_SINK(f, s) {
        int rc = s->ops->batch(s->self, channel, b, f->dict);
        if (rc < 0) failed(s, b->type, rc);
    }
    b->rows = 0;
}

void gpufl__fanout_flush(gpufl__fanout_t *f) {
    EACH_SINK(f, s) {
        int rc = s->ops->flush ? s->ops->flush(s->self) : 0;
        if (rc < 0) failed(s, "flush", rc);
    }
}

void gpufl__fanout_close(gpufl__fanout_t *f) {
    if (atomic_exchange(&f->closed, 1)) return;
    EACH_SINK(f, s) {
        if (s->ops->close) s->ops->close(s->self);
    }
}

uint64_t gpufl__fanout_failures(gpufl__fanout_t *f) {
    uint64_t n = 0;
    EACH_SINK(f, s) { n += atomic_load_explicit(&s->failures, memory_order_relaxed); }
    return n;
}
