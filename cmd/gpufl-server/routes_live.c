// SPDX-License-Identifier: Apache-2.0
/*
 * routes_live.c - GET /api/v1/live: Server-Sent Events of this process's ingest, scoped to the
 * caller's workspace. Ingest publishes into a bounded queue per client (the oldest dropped and
 * counted, never waiting on a client); a client with nothing to send is suspended in
 * libmicrohttpd and holds no thread; a heartbeat comment goes out every 15 s.
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BLOCK_BYTES 4096
#define DEVICES_MAX 64 /* devices whose latest sample one window's event lists */
/* The kernel's send buffer of a live connection: without it, autotuning lets a client that
 * stops reading pin megabytes there before the bounded queue ever drops an event. */
#define SOCKET_SEND_BYTES (64 * 1024)

typedef struct client {
    struct client *next;
    gpufl__live_t *live;
    int64_t workspace_id;
    struct MHD_Connection *mc;
    char **queue; /* ring of queue_max events */
    size_t head, n;
    uint64_t dropped; /* events dropped since the last `dropped` event */
    int suspended, heartbeat;
    char *out; /* the event being written, and how far */
    size_t out_len, out_at;
} client_t;

struct gpufl__live {
    pthread_mutex_t lock;
    client_t *clients;
    int n_clients, closing;
    size_t queue_max;
    long heartbeat_ms;
    pthread_t beat;
    pthread_cond_t beat_cond;
    int beat_running;
};

int gpufl__live_clients(gpufl__live_t *live) {
    if (!live) return 0;
    pthread_mutex_lock(&live->lock);
    int n = live->n_clients;
    pthread_mutex_unlock(&live->lock);
    return n;
}

/* Under live->lock. */
static void wake(client_t *c) {
    if (!c->suspended) return;
    c->suspended = 0;
    MHD_resume_connection(c->mc);
}

static void *beat_main(void *arg) {
    gpufl__live_t *l = arg;
    pthread_mutex_lock(&l->lock);
    while (!l->closing) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += l->heartbeat_ms / 1000;
        until.tv_nsec += (l->heartbeat_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&l->beat_cond, &l->lock, &until);
        for (client_t *c = l->clients; c && !l->closing; c = c->next) {
            c->heartbeat = 1;
            wake(c);
        }
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* Test hooks (docs/server.md): a shorter heartbeat and a smaller queue. */
static long env_long(const char *name, long fallback, long lo, long hi) {
    const char *v = getenv(name);
    long n = v && *v ? strtol(v, NULL, 10) : fallback;
    return n < lo || n > hi ? fallback : n;
}

int gpufl__live_create(gpufl__live_t **out) {
    gpufl__live_t *l = calloc(1, sizeof *l);
    if (!l) return GPUFL_ENOMEM;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->beat_cond, NULL);
    l->heartbeat_ms = env_long("GPUFL_SERVER_TEST_LIVE_HEARTBEAT_MS",
                               GPUFL__LIVE_HEARTBEAT_S * 1000L, 10, 3600000);
    l->queue_max =
        (size_t)env_long("GPUFL_SERVER_TEST_LIVE_QUEUE", GPUFL__LIVE_QUEUE_MAX, 1, 1 << 16);
    if (pthread_create(&l->beat, NULL, beat_main, l) != 0) {
        gpufl__live_destroy(l);
        return GPUFL_ETHREAD;
    }
    l->beat_running = 1;
    *out = l;
    return 0;
}

void gpufl__live_close(gpufl__live_t *l) {
    if (!l) return;
    pthread_mutex_lock(&l->lock);
    l->closing = 1;
    for (client_t *c = l->clients; c; c = c->next) wake(c);
    pthread_cond_signal(&l->beat_cond);
    pthread_mutex_unlock(&l->lock);
    if (l->beat_running) pthread_join(l->beat, NULL);
    l->beat_running = 0;
}

void gpufl__live_destroy(gpufl__live_t *l) {
    if (!l) return;
    gpufl__live_close(l);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->beat_cond);
    free(l);
}

/* Queues one event for every client of the workspace, dropping a full queue's oldest. */
static void publish(gpufl__live_t *l, int64_t workspace_id, const char *event, json_t *data) {
    char *text = json_dumps(data, JSON_COMPACT);
    json_decref(data);
    if (!text) return;
    size_t n = strlen(event) + strlen(text) + 32;
    pthread_mutex_lock(&l->lock);
    for (client_t *c = l->clients; c; c = c->next) {
        if (c->workspace_id != workspace_id) continue;
        char *e = malloc(n);
        if (!e) break;
        snprintf(e, n, "event: %s\ndata: %s\n\n", event, text);
        if (c->n == l->queue_max) {
            free(c->queue[c->head]);
            c->head = (c->head + 1) % l->queue_max;
            c->n--;
            c->dropped++;
        }
        c->queue[(c->head + c->n++) % l->queue_max] = e;
        wake(c);
    }
    pthread_mutex_unlock(&l->lock);
    free(text);
}

static int has_clients(gpufl__live_t *l, int64_t workspace_id) {
    int any = 0;
    pthread_mutex_lock(&l->lock);
    for (client_t *c = l->clients; c && !any; c = c->next) any = c->workspace_id == workspace_id;
    pthread_mutex_unlock(&l->lock);
    return any;
}

void gpufl__live_session_state(gpufl__live_t *l, int64_t workspace_id, const char *session_id,
                               const char *state) {
    if (!l || !has_clients(l, workspace_id)) return;
    publish(l, workspace_id, "session",
            json_pack("{s:s,s:s}", "session_id", session_id, "state", state));
}

static json_t *cell_json(const gpufl__cell_t *c) {
    switch (c->kind) {
    case GPUFL__CELL_INT: return json_integer((json_int_t)c->u.i);
    case GPUFL__CELL_REAL: return json_real(c->u.r);
    case GPUFL__CELL_TEXT: return json_stringn(c->u.t.s, c->u.t.len);
    default: return json_null();
    }
}

/* The latest row of each device among a gpu_sample rowset's rows, replacing older ones. */
static void latest_samples(const gpufl__rowset_t *rs, int64_t *devices, json_t **latest,
                           size_t *n) {
    size_t cols = rs->table->n_columns, device_col = cols;
    for (size_t k = 0; k < cols; k++)
        if (!strcmp(rs->table->columns[k].name, "device")) device_col = k;
    size_t last[DEVICES_MAX], slot[DEVICES_MAX], m = 0;
    for (size_t r = 0; r < rs->n_rows && device_col < cols; r++) {
        const gpufl__cell_t *d = &rs->cells[r * cols + device_col];
        int64_t dev = d->kind == GPUFL__CELL_INT ? d->u.i : -1;
        size_t j = 0;
        while (j < *n && devices[j] != dev) j++;
        if (j == *n && *n == DEVICES_MAX) continue;
        if (j == *n) {
            devices[(*n)++] = dev;
            latest[j] = NULL;
        }
        size_t i = 0;
        while (i < m && slot[i] != j) i++;
        if (i == m) slot[m++] = j;
        last[i] = r;
    }
    for (size_t i = 0; i < m; i++) {
        json_t *o = json_object();
        for (size_t k = 0; k < cols; k++)
            json_object_set_new(o, rs->table->columns[k].name,
                                cell_json(&rs->cells[last[i] * cols + k]));
        json_decref(latest[slot[i]]);
        latest[slot[i]] = o;
    }
}

/* The window's gpu_sample rows as one `sample` event: the latest row of each device. The
 * rows are read again from the window's rows source, one rowset at a time. */
static void publish_samples(gpufl__live_t *l, const gpufl__window_t *w) {
    const gpufl__rows_source_t *src = &w->rows_source;
    if (!src->next || (src->begin && src->begin(src->arg) != 0)) return;
    int64_t devices[DEVICES_MAX];
    json_t *latest[DEVICES_MAX];
    size_t n = 0;
    int any = 0;
    const gpufl__rowset_t *rs;
    while (src->next(src->arg, &rs) == 0 && rs) {
        if (strcmp(rs->table->name, "gpu_sample") != 0 || !rs->n_rows) continue;
        latest_samples(rs, devices, latest, &n);
        any = 1;
    }
    if (!any) return;
    json_t *list = json_array();
    for (size_t j = 0; j < n; j++) json_array_append_new(list, latest[j] ? latest[j] : json_null());
    publish(l, w->workspace_id, "sample",
            json_pack("{s:s,s:I,s:o}", "session_id", w->session_id, "epoch_unix_us",
                      (json_int_t)w->facts.epoch_unix_us, "devices", list));
}

static int count_rows(void *arg, int n, const char *const *v, const char *const *names) {
    (void)n, (void)names;
    *(long *)arg = v[0] ? strtol(v[0], NULL, 10) : 0;
    return 0;
}

void gpufl__live_window(gpufl__server_t *s, const gpufl__window_t *w) {
    gpufl__live_t *l = s->live;
    if (!l || !has_clients(l, w->workspace_id)) return;
    /* The session is new when this is its only window (committed: the count sees it) and
     * this its first slice. */
    char ws[32];
    snprintf(ws, sizeof ws, "%" PRId64, w->workspace_id);
    const char *p[] = {ws, w->session_id};
    long windows = 0;
    if (w->offset == 0 &&
        s->ops->query(s->store,
                      "SELECT COUNT(*) FROM windows WHERE workspace_id = ? AND "
                      "session_id = ?",
                      p, 2, count_rows, &windows) == 0 &&
        windows == 1)
        gpufl__live_session_state(l, w->workspace_id, w->session_id, "new");
    publish(l, w->workspace_id, "window",
            json_pack("{s:s,s:s,s:I,s:I,s:s}", "session_id", w->session_id, "channel", w->channel,
                      "sequence", (json_int_t)w->sequence, "rows", (json_int_t)w->rows, "window",
                      "stored"));
    publish_samples(l, w);
    if (w->facts.end_ns >= 0) gpufl__live_session_state(l, w->workspace_id, w->session_id, "ended");
}

/* ---- the stream ------------------------------------------------------------------------------ */

/* Under lock: the next text to write, or NULL when there is none. */
static char *next_text(client_t *c) {
    gpufl__live_t *l = c->live;
    char small[96];
    if (c->dropped) {
        snprintf(small, sizeof small, "event: dropped\ndata: {\"count\":%llu}\n\n",
                 (unsigned long long)c->dropped);
        c->dropped = 0;
        return strdup(small);
    }
    if (c->n) {
        char *e = c->queue[c->head];
        c->head = (c->head + 1) % l->queue_max;
        c->n--;
        return e;
    }
    if (c->heartbeat) {
        c->heartbeat = 0;
        return strdup(": heartbeat\n\n");
    }
    return NULL;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    client_t *c = cls;
    (void)pos;
    size_t written = 0;
    pthread_mutex_lock(&c->live->lock);
    while (written < max) {
        if (!c->out) {
            c->out = next_text(c);
            if (!c->out) break;
            c->out_len = strlen(c->out);
            c->out_at = 0;
        }
        size_t k = c->out_len - c->out_at;
        if (k > max - written) k = max - written;
        memcpy(buf + written, c->out + c->out_at, k);
        written += k;
        c->out_at += k;
        if (c->out_at == c->out_len) {
            free(c->out);
            c->out = NULL;
        }
    }
    if (!written && c->live->closing) {
        pthread_mutex_unlock(&c->live->lock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (!written) {
        /* Nothing to send: off the event loop until publish, a heartbeat or close wakes it. */
        c->suspended = 1;
        MHD_suspend_connection(c->mc);
    }
    pthread_mutex_unlock(&c->live->lock);
    return (ssize_t)written;
}

static void client_free(void *cls) {
    client_t *c = cls;
    gpufl__live_t *l = c->live;
    pthread_mutex_lock(&l->lock);
    for (client_t **p = &l->clients; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    l->n_clients--;
    while (c->n) {
        free(c->queue[c->head]);
        c->head = (c->head + 1) % l->queue_max;
        c->n--;
    }
    pthread_mutex_unlock(&l->lock);
    free(c->out);
    free(c->queue);
    free(c);
}

void gpufl__live_route(gpufl__request_t *req, gpufl__reply_t *rep) {
    gpufl__live_t *l = req->server->live;
    client_t *c = calloc(1, sizeof *c);
    if (c) c->queue = calloc(l->queue_max, sizeof *c->queue);
    if (!c || !c->queue) {
        if (c) free(c);
        gpufl__reply_error(rep, 500, "out of memory");
        return;
    }
    c->live = l;
    c->workspace_id = req->who.workspace_id;
    c->mc = req->connection;
    c->heartbeat = 1; /* a first comment, so the client sees the stream open at once */
    pthread_mutex_lock(&l->lock);
    int full = l->n_clients >= GPUFL__LIVE_CLIENTS_MAX || l->closing;
    if (!full) {
        c->next = l->clients;
        l->clients = c;
        l->n_clients++;
    }
    pthread_mutex_unlock(&l->lock);
    if (full) {
        free(c->queue);
        free(c);
        gpufl__reply_error(rep, 503, "too many live clients on this server: retry later");
        rep->header_name = "Retry-After";
        rep->header_value = "5";
        return;
    }
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BLOCK_BYTES, reader, c, client_free);
    if (!r) {
        client_free(c);
        gpufl__reply_error(rep, 500, "out of memory");
        return;
    }
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(req->connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    int sndbuf = SOCKET_SEND_BYTES;
    if (info) setsockopt(info->connect_fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_queue_response(req->connection, 200, r);
    MHD_destroy_response(r);
    rep->status = 200;
    rep->streamed = 1;
}
