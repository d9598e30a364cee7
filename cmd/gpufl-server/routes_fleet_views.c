// SPDX-License-Identifier: Apache-2.0
/*
 * routes_fleet_views.c - the fleet page's views of one workspace over a wall-clock range: the
 * GPU x time heatmap (gpu_sample means per bucket, and whether a process held the GPU), the
 * health events (XID, ECC increments, throttle spans, GPU lost) and GPU time and energy per
 * process, job or user. Session clocks become wall clocks through each session's epoch_unix_us.
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY_US         (86400LL * 1000000LL)
#define POINTS_DEF     720
#define POINTS_MAX     2000
#define DEVICES_MAX    4096    /* session devices one answer considers; past it "truncated" */
#define LISTINGS_MAX   1000000 /* gpu_processes lines read for one answer */
#define EVENTS_MAX     10000   /* health events one answer lists */
#define USAGE_ROWS_MAX 10000
#define LEGEND_BITS    64

/* One gpu_processes line: who held the device from ts_ns on. share[k] is pid[k]'s part of the
 * device's time and energy: its sm_util_pct over the listing's sum, equal parts without one. */
typedef struct listing {
    int64_t ts_ns;
    size_t n;
    int64_t *pid;
    double *share;
} listing_t;

/* One device of one session. */
typedef struct fdev {
    struct fsession *s;
    int64_t device;
    char *uuid, *name; /* from gpu_info; uuid NULL when the session named none */
    int gpu;           /* index into the answer's GPUs (heatmap), -1 until placed */
    listing_t *listings;
    size_t n_listings, cap_listings;
    int64_t last_ts_ns; /* newest sample seen in range (heatmap) */
} fdev_t;

typedef struct fsession {
    char *id, *hostname, *job_id;
    int64_t epoch_us;
    char *legend[LEGEND_BITS]; /* throttle_reasons bit -> name (gpu_legend) */
    json_t *procs;             /* pid (decimal) -> process_info line */
} fsession_t;

typedef struct fleet {
    gpufl__request_t *req;
    int64_t from_us, to_us;
    fsession_t *sessions;
    size_t n_sessions, cap_sessions;
    fdev_t *devs;
    size_t n_devs, cap_devs;
    size_t listings;
    int truncated;
    json_t *lost; /* gpu_lost events, read with the lines */
    json_t *xids;
} fleet_t;

/* ---- the range and the workspace's sessions, devices and record lines --------------------- */

static const char *arg(gpufl__request_t *req, const char *name) {
    return MHD_lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND, name);
}

static int64_t now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* from and to (unix µs); default the last 24 h. 0, or -1 with rep set to 400. */
static int range_args(gpufl__request_t *req, gpufl__reply_t *rep, int64_t *from, int64_t *to) {
    int64_t now = now_us();
    if (gpufl__query_int_arg(req, rep, "to", 1, INT64_MAX / 2, now, to)) return -1;
    if (gpufl__query_int_arg(req, rep, "from", 0, INT64_MAX / 2, *to - DAY_US, from)) return -1;
    if (*from >= *to) {
        gpufl__query_bad_param(rep, "from", "from: must be before to");
        return -1;
    }
    return 0;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static int grow(void **p, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return 0;
    size_t c = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, c * size);
    if (!q) return GPUFL_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static fsession_t *session_of(fleet_t *f, const char *id) {
    for (size_t i = f->n_sessions; i-- > 0;)
        if (!strcmp(f->sessions[i].id, id)) return &f->sessions[i];
    return NULL;
}

static fdev_t *dev_of(fleet_t *f, const fsession_t *s, int64_t device) {
    for (size_t i = 0; i < f->n_devs; i++)
        if (f->devs[i].s == s && f->devs[i].device == device) return &f->devs[i];
    return NULL;
}

/* The device's entry, made when first named. NULL past DEVICES_MAX (truncated) or no memory. */
static fdev_t *dev_add(fleet_t *f, fsession_t *s, int64_t device) {
    fdev_t *d = dev_of(f, s, device);
    if (d) return d;
    if (f->n_devs >= DEVICES_MAX) {
        f->truncated = 1;
        return NULL;
    }
    if (grow((void **)&f->devs, &f->cap_devs, f->n_devs, sizeof *f->devs)) return NULL;
    d = &f->devs[f->n_devs++];
    *d = (fdev_t){.s = s, .device = device, .gpu = -1, .last_ts_ns = -1};
    return d;
}

static int session_row(void *arg_, int n, const char *const *v, const char *const *names) {
    (void)names;
    fleet_t *f = arg_;
    if (n < 4 || !v[0] || !v[2]) return 0;
    if (grow((void **)&f->sessions, &f->cap_sessions, f->n_sessions, sizeof *f->sessions))
        return GPUFL_ENOMEM;
    fsession_t *s = &f->sessions[f->n_sessions++];
    *s = (fsession_t){.id = strdup(v[0]),
                      .hostname = dup_or_null(v[1]),
                      .epoch_us = strtoll(v[2], NULL, 10),
                      .job_id = dup_or_null(v[3]),
                      .procs = json_object()};
    return s->id ? 0 : GPUFL_ENOMEM;
}

static int64_t int_of(json_t *o, const char *key, int64_t def) {
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

static void read_listing(fleet_t *f, fsession_t *s, json_t *doc) {
    fdev_t *d = dev_add(f, s, int_of(doc, "device", -1));
    if (!d) return;
    if (f->listings >= LISTINGS_MAX) {
        f->truncated = 1;
        return;
    }
    json_t *pids = json_object_get(doc, "pid"), *util = json_object_get(doc, "sm_util_pct");
    size_t n = json_array_size(pids);
    if (grow((void **)&d->listings, &d->cap_listings, d->n_listings, sizeof *d->listings)) return;
    listing_t *l = &d->listings[d->n_listings];
    *l = (listing_t){.ts_ns = int_of(doc, "ts_ns", 0), .n = n};
    l->pid = calloc(n ? n : 1, sizeof *l->pid);
    l->share = calloc(n ? n : 1, sizeof *l->share);
    if (!l->pid || !l->share) {
        free(l->pid);
        free(l->share);
        return;
    }
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        l->pid[k] = json_integer_value(json_array_get(pids, k));
        json_t *u = json_array_get(util, k);
        l->share[k] = json_is_number(u) ? json_number_value(u) : 0;
        sum += l->share[k] > 0 ? l->share[k] : 0;
    }
    for (size_t k = 0; k < n; k++)
        l->share[k] = sum > 0 ? (l->share[k] > 0 ? l->share[k] / sum : 0) : 1.0 / (double)n;
    d->n_listings++;
    f->listings++;
}

/* A health event of a session's device at ts_ns (session clock): the skeleton every kind has. */
static json_t *event_at(fleet_t *f, const fsession_t *s, int64_t device, int64_t ts_ns,
                        const char *kind, const char *detail) {
    fdev_t *d = dev_of(f, s, device);
    return json_pack("{s:I,s:o,s:o,s:I,s:s,s:s,s:s}", "unix_us",
                     (json_int_t)(s->epoch_us + ts_ns / 1000), "uuid",
                     d && d->uuid ? json_string(d->uuid) : json_null(), "hostname",
                     s->hostname ? json_string(s->hostname) : json_null(), "device",
                     (json_int_t)device, "session_id", s->id, "kind", kind, "detail", detail);
}

static int in_range(const fleet_t *f, const fsession_t *s, int64_t ts_ns) {
    int64_t at = s->epoch_us + ts_ns / 1000;
    return at >= f->from_us && at < f->to_us;
}

/* A device log's records the views need (gpu_info, gpu_legend, gpu_processes, process_info,
 * xid, gpu_lost events), in the order the library wrote them. */
static int record_row(void *arg_, int n, const char *const *v, const char *const *names) {
    (void)names;
    fleet_t *f = arg_;
    if (n < 3 || !v[0] || !v[1] || !v[2]) return 0;
    fsession_t *s = session_of(f, v[0]);
    json_t *doc = s ? json_loads(v[2], 0, NULL) : NULL;
    if (!doc) return 0;
    const char *type = v[1];
    if (!strcmp(type, "gpu_info")) {
        fdev_t *d = dev_add(f, s, int_of(doc, "device", -1));
        if (d && !d->uuid) {
            d->uuid = dup_or_null(json_string_value(json_object_get(doc, "uuid")));
            d->name = dup_or_null(json_string_value(json_object_get(doc, "name")));
        }
    } else if (!strcmp(type, "gpu_legend")) {
        const char *bit;
        json_t *name;
        json_object_foreach(json_object_get(doc, "throttle_reasons"), bit, name) {
            long b = strtol(bit, NULL, 10);
            if (b >= 0 && b < LEGEND_BITS && json_is_string(name) && !s->legend[b])
                s->legend[b] = strdup(json_string_value(name));
        }
    } else if (!strcmp(type, "gpu_processes")) {
        read_listing(f, s, doc);
    } else if (!strcmp(type, "process_info")) {
        char pid[32];
        snprintf(pid, sizeof pid, "%" PRId64, int_of(doc, "pid", 0));
        json_object_set(s->procs, pid, doc);
    } else if (!strcmp(type, "xid") && in_range(f, s, int_of(doc, "ts_ns", 0))) {
        char detail[64];
        int64_t code = int_of(doc, "code", -1);
        snprintf(detail, sizeof detail, "XID %" PRId64, code);
        json_t *e =
            event_at(f, s, int_of(doc, "device", -1), int_of(doc, "ts_ns", 0), "xid", detail);
        if (e) json_object_set_new(e, "code", json_integer(code));
        if (e) json_array_append_new(f->xids, e);
    } else if (!strcmp(type, "event") && json_string_value(json_object_get(doc, "code")) &&
               !strcmp(json_string_value(json_object_get(doc, "code")), "gpu_lost") &&
               in_range(f, s, int_of(doc, "ts_ns", 0))) {
        /* The library names the device in the message: "GPU <n> (<uuid>) stopped ...". */
        const char *msg = json_string_value(json_object_get(doc, "message"));
        msg = msg ? msg : "";
        int device = -1;
        if (sscanf(msg, "GPU %d", &device) != 1) device = -1;
        json_t *e = event_at(f, s, device, int_of(doc, "ts_ns", 0), "gpu_lost", msg);
        if (e) json_array_append_new(f->lost, e);
    }
    json_decref(doc);
    return 0;
}

static void fleet_fini(fleet_t *f) {
    for (size_t i = 0; i < f->n_devs; i++) {
        fdev_t *d = &f->devs[i];
        for (size_t k = 0; k < d->n_listings; k++) {
            free(d->listings[k].pid);
            free(d->listings[k].share);
        }
        free(d->listings);
        free(d->uuid);
        free(d->name);
    }
    for (size_t i = 0; i < f->n_sessions; i++) {
        fsession_t *s = &f->sessions[i];
        free(s->id);
        free(s->hostname);
        free(s->job_id);
        for (int b = 0; b < LEGEND_BITS; b++) free(s->legend[b]);
        json_decref(s->procs);
    }
    free(f->devs);
    free(f->sessions);
    json_decref(f->lost);
    json_decref(f->xids);
}

static int query(fleet_t *f, const char *sql, const char *const *p, size_t n,
                 int (*row)(void *, int, const char *const *, const char *const *), void *arg_) {
    gpufl__server_t *srv = f->req->server;
    return srv->ops->query(srv->store, sql, p, n, row, arg_);
}

/* The workspace's sessions that may hold rows in [from, to) and their devices' records. The
 * parameters every later query takes: workspace, from, to. */
static int fleet_load(fleet_t *f, gpufl__request_t *req, int64_t from, int64_t to, char p[3][32]) {
    *f = (fleet_t){
        .req = req, .from_us = from, .to_us = to, .lost = json_array(), .xids = json_array()};
    snprintf(p[0], 32, "%" PRId64, req->who.workspace_id);
    snprintf(p[1], 32, "%" PRId64, from);
    snprintf(p[2], 32, "%" PRId64, to);
    const char *params[] = {p[0], p[2], p[1]};
    /* A session that began before `to` and did not end before `from` (end unknown: live). */
    static const char *const sessions_sql =
        "SELECT session_id, hostname, epoch_unix_us, job_id FROM sessions WHERE workspace_id = "
        "? AND epoch_unix_us IS NOT NULL AND epoch_unix_us < CAST(? AS BIGINT) AND (end_ns IS "
        "NULL OR epoch_unix_us + end_ns / 1000 >= CAST(? AS BIGINT)) ORDER BY session_id";
    int rc = query(f, sessions_sql, params, 3, session_row, f);
    if (rc == 0)
        rc = query(f,
                   "SELECT l.session_id, l.type, l.body FROM lines l JOIN sessions s ON "
                   "s.workspace_id = l.workspace_id AND s.session_id = l.session_id WHERE "
                   "l.workspace_id = ? AND s.epoch_unix_us < CAST(? AS BIGINT) AND (s.end_ns IS "
                   "NULL OR s.epoch_unix_us + s.end_ns / 1000 >= CAST(? AS BIGINT)) AND "
                   "l.channel = 'device' AND l.type IN ('gpu_info', 'gpu_legend', "
                   "'gpu_processes', 'process_info', 'xid', 'event') ORDER BY l.session_id, "
                   "l.sequence, l.line_no",
                   params, 3, record_row, f);
    return rc;
}

/* The rows of gpu_sample in [from, to) of the loaded sessions: the FROM and WHERE every view's
 * sample query shares (parameters: workspace, from, to). */
#define SAMPLES_IN_RANGE                                                                           \
    " FROM sessions s JOIN gpu_sample g ON g.workspace_id = s.workspace_id AND g.session_id = "    \
    "s.session_id WHERE s.workspace_id = ? AND s.epoch_unix_us IS NOT NULL AND g.ts_ns >= "        \
    "(CAST(? AS BIGINT) - s.epoch_unix_us) * 1000 AND g.ts_ns < (CAST(? AS BIGINT) - "             \
    "s.epoch_unix_us) * 1000"

/* The listing in force at ts_ns: the newest at or before it; NULL before the first. */
static const listing_t *listing_at(const fdev_t *d, int64_t ts_ns) {
    size_t lo = 0, hi = d->n_listings;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->listings[mid].ts_ns <= ts_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &d->listings[lo - 1] : NULL;
}

static int by_ts(const void *a, const void *b) {
    const listing_t *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

static void sort_listings(fleet_t *f) {
    for (size_t i = 0; i < f->n_devs; i++)
        if (f->devs[i].n_listings) /* a device without listings has no array (qsort wants one) */
            qsort(f->devs[i].listings, f->devs[i].n_listings, sizeof(listing_t), by_ts);
}

/* A view's answer: body (NULL when it could not be built) on success, else the store error. */
static void finish(gpufl__reply_t *rep, int rc, json_t *body) {
    if (rc == 0 && !body) rc = GPUFL_ENOMEM;
    if (rc != 0) {
        json_decref(body);
        gpufl__query_store_error(rep, rc);
        return;
    }
    rep->status = 200;
    rep->json = body;
}

/* ---- GET /api/v1/fleet/heatmap ------------------------------------------------------------- */

typedef struct cells {
    double *util_sum, *sm_sum;
    int64_t *util_n, *sm_n, *samples;
    unsigned char *held;
} cells_t;

typedef struct heat {
    fleet_t *f;
    int64_t points, bucket_us;
    json_t *gpus;   /* the answer's GPU objects, in order of first sample */
    cells_t *cells; /* per GPU */
    size_t n_gpus, cap_gpus;
    fsession_t *last_s; /* the session of the last row: rows come grouped by session */
} heat_t;

static int heat_gpu(heat_t *h, fdev_t *d) {
    if (d->gpu >= 0) return d->gpu;
    /* A uuid seen in several sessions (a monitor restarted) is one row. */
    for (size_t i = 0; d->uuid && i < h->f->n_devs; i++) {
        fdev_t *o = &h->f->devs[i];
        if (o->gpu >= 0 && o->uuid && !strcmp(o->uuid, d->uuid)) return d->gpu = o->gpu;
    }
    if (grow((void **)&h->cells, &h->cap_gpus, h->n_gpus, sizeof *h->cells)) return -1;
    cells_t *c = &h->cells[h->n_gpus];
    size_t p = (size_t)h->points;
    *c = (cells_t){calloc(p, sizeof(double)),  calloc(p, sizeof(double)),
                   calloc(p, sizeof(int64_t)), calloc(p, sizeof(int64_t)),
                   calloc(p, sizeof(int64_t)), calloc(p, 1)};
    if (!c->util_sum || !c->sm_sum || !c->util_n || !c->sm_n || !c->samples || !c->held) {
        free(c->util_sum), free(c->sm_sum), free(c->util_n), free(c->sm_n), free(c->samples);
        free(c->held);
        return -1;
    }
    json_array_append_new(h->gpus,
                          json_pack("{s:o,s:o,s:o,s:I,s:s}", "uuid",
                                    d->uuid ? json_string(d->uuid) : json_null(), "name",
                                    d->name ? json_string(d->name) : json_null(), "hostname",
                                    d->s->hostname ? json_string(d->s->hostname) : json_null(),
                                    "device", (json_int_t)d->device, "session_id", d->s->id));
    return d->gpu = (int)h->n_gpus++;
}

/* session, device, bucket, samples, util sum and count, sm_active sum and count, newest ts. */
static int heat_row(void *arg_, int n, const char *const *v, const char *const *names) {
    (void)names;
    heat_t *h = arg_;
    if (n < 8 || !v[0] || !v[1] || !v[2]) return 0;
    fsession_t *s = h->last_s && !strcmp(h->last_s->id, v[0]) ? h->last_s : session_of(h->f, v[0]);
    if (!s) return 0;
    h->last_s = s;
    fdev_t *d = dev_add(h->f, s, strtoll(v[1], NULL, 10));
    int64_t b = strtoll(v[2], NULL, 10);
    if (!d || b < 0 || b >= h->points) return 0;
    int g = heat_gpu(h, d);
    if (g < 0) return GPUFL_ENOMEM;
    cells_t *c = &h->cells[g];
    c->samples[b] += strtoll(v[3], NULL, 10);
    c->util_sum[b] += v[4] ? strtod(v[4], NULL) : 0;
    c->util_n[b] += v[5] ? strtoll(v[5], NULL, 10) : 0;
    c->sm_sum[b] += v[6] ? strtod(v[6], NULL) : 0;
    c->sm_n[b] += v[7] ? strtoll(v[7], NULL, 10) : 0;
    if (n > 8 && v[8]) {
        int64_t ts = strtoll(v[8], NULL, 10);
        if (ts > d->last_ts_ns) d->last_ts_ns = ts;
    }
    return 0;
}

/* Marks the buckets a listing with processes overlaps, from each listing to the next (the
 * last: to the device's newest sample in range). */
static void heat_held(heat_t *h, fdev_t *d) {
    if (d->gpu < 0) return;
    cells_t *c = &h->cells[d->gpu];
    int64_t from = h->f->from_us, epoch = d->s->epoch_us;
    for (size_t k = 0; k < d->n_listings; k++) {
        const listing_t *l = &d->listings[k];
        if (!l->n) continue;
        int64_t a = epoch + l->ts_ns / 1000;
        int64_t z = k + 1 < d->n_listings ? epoch + d->listings[k + 1].ts_ns / 1000
                                          : epoch + d->last_ts_ns / 1000 + 1;
        if (z <= from || a >= h->f->to_us) continue;
        int64_t b0 = a < from ? 0 : (a - from) / h->bucket_us;
        int64_t b1 = (z - 1 - from) / h->bucket_us;
        for (int64_t b = b0; b <= b1 && b < h->points; b++) c->held[b] = 1;
    }
}

/* One decimal: the colour scale needs no more, and it keeps the answer small (a whole value
 * goes as an integer; the answer is written with 4 significant digits, see below). */
static json_t *mean_array(const double *sum, const int64_t *n, int64_t points) {
    json_t *a = json_array();
    for (int64_t b = 0; b < points; b++) {
        double m = n[b] ? round(sum[b] / (double)n[b] * 10) / 10 : 0;
        json_array_append_new(a, !n[b]           ? json_null()
                                 : m == floor(m) ? json_integer((json_int_t)m)
                                                 : json_real(m));
    }
    return a;
}

/* The heatmap's answer as text: its means have one decimal below 1000, so 4 significant
 * digits write them exactly ("72.8", not "72.799999999999997": the largest answer of the
 * fleet page would be twice the size). */
static void finish_heatmap(gpufl__reply_t *rep, int rc, json_t *body) {
    finish(rep, rc, body);
    if (rep->status != 200) return;
    char *text = json_dumps(rep->json, JSON_COMPACT | JSON_REAL_PRECISION(4));
    if (!text) return; /* http.c writes rep->json then */
    json_decref(rep->json);
    rep->json = NULL;
    rep->raw = text;
    rep->raw_len = strlen(text);
    rep->content_type = "application/json";
}

/* The coarsest rollup level whose slots fit in a bucket of raw_us, -1 for none (the raw rows
 * are read then: a range of at most points x 10 s). */
static int rollup_level(int64_t raw_us) {
    int k = -1;
    for (int i = 0; i < GPUFL__ROLLUP_LEVELS; i++)
        if (gpufl__rollup_levels_s[i] * 1000000 <= raw_us) k = i;
    return k;
}

void gpufl__fleet_heatmap(gpufl__request_t *req, gpufl__reply_t *rep) {
    int64_t from, to, points;
    if (range_args(req, rep, &from, &to)) return;
    if (gpufl__query_int_arg(req, rep, "points", 1, POINTS_MAX, POINTS_DEF, &points)) return;
    if (to - from < points) points = to - from; /* a bucket is at least 1 µs */
    int64_t bucket_us = (to - from + points - 1) / points;
    /* From a rollup, buckets are whole slots: from snaps down and to up to the slot and the
     * bucket up to whole slots; the widened range may take one point more than asked. */
    int level = rollup_level(bucket_us);
    int64_t lus = level >= 0 ? gpufl__rollup_levels_s[level] * 1000000 : 1;
    if (level >= 0) {
        from = from / lus * lus;
        to = (to + lus - 1) / lus * lus;
        bucket_us = (bucket_us + lus - 1) / lus * lus;
        points = (to - from + bucket_us - 1) / bucket_us;
        to = from + points * bucket_us;
    }
    fleet_t f;
    char p[3][32];
    int rc = fleet_load(&f, req, from, to, p);
    heat_t h = {.f = &f, .points = points, .bucket_us = bucket_us, .gpus = json_array()};
    char bucket[32], ls[32], lo[32], hi[32], lu[32];
    snprintf(bucket, sizeof bucket, "%" PRId64, h.bucket_us);
    snprintf(lu, sizeof lu, "%" PRId64, lus);
    snprintf(ls, sizeof ls, "%" PRId64, level >= 0 ? gpufl__rollup_levels_s[level] : 0);
    snprintf(lo, sizeof lo, "%" PRId64, from / lus);
    snprintf(hi, sizeof hi, "%" PRId64, to / lus);
    if (rc == 0 && level >= 0) {
        const char *params[] = {lu, p[1], bucket, p[0], ls, lo, hi};
        rc = query(&f,
                   "SELECT session_id, device, (slot * CAST(? AS BIGINT) - CAST(? AS BIGINT)) / "
                   "CAST(? AS BIGINT) AS b, SUM(samples), SUM(util_sum), SUM(util_n), SUM(sm_sum), "
                   "SUM(sm_n), MAX(last_ts_ns) FROM gpu_rollup WHERE workspace_id = ? AND level_s "
                   "= CAST(? AS INTEGER) AND slot >= CAST(? AS BIGINT) AND slot < CAST(? AS "
                   "BIGINT) GROUP BY session_id, device, b ORDER BY session_id, device, b",
                   params, 7, heat_row, &h);
    } else if (rc == 0) {
        const char *params[] = {p[1], bucket, p[0], p[1], p[2]};
        rc = query(&f,
                   "SELECT g.session_id, g.device, (s.epoch_unix_us + g.ts_ns / 1000 - CAST(? AS "
                   "BIGINT)) / CAST(? AS BIGINT) AS b, COUNT(*), SUM(g.gpu_util_pct), "
                   "COUNT(g.gpu_util_pct), SUM(g.sm_active_pct), COUNT(g.sm_active_pct), "
                   "MAX(g.ts_ns)" SAMPLES_IN_RANGE " GROUP BY g.session_id, g.device, b ORDER BY "
                   "g.session_id, g.device, b",
                   params, 5, heat_row, &h);
    }
    if (rc == 0) {
        sort_listings(&f);
        for (size_t i = 0; i < f.n_devs; i++) heat_held(&h, &f.devs[i]);
        for (size_t g = 0; g < h.n_gpus; g++) {
            cells_t *c = &h.cells[g];
            json_t *gpu = json_array_get(h.gpus, g), *held = json_array();
            for (int64_t b = 0; b < points; b++)
                json_array_append_new(held, c->held[b]      ? json_integer(1)
                                            : c->samples[b] ? json_integer(0)
                                                            : json_null());
            json_object_set_new(gpu, "gpu_util_pct", mean_array(c->util_sum, c->util_n, points));
            json_object_set_new(gpu, "sm_active_pct", mean_array(c->sm_sum, c->sm_n, points));
            json_object_set_new(gpu, "held", held);
        }
    }
    for (size_t g = 0; g < h.n_gpus; g++) {
        cells_t *c = &h.cells[g];
        free(c->util_sum), free(c->sm_sum), free(c->util_n), free(c->sm_n), free(c->samples);
        free(c->held);
    }
    free(h.cells);
    int truncated = f.truncated;
    fleet_fini(&f);
    finish_heatmap(rep, rc,
                   json_pack("{s:I,s:I,s:I,s:I,s:o,s:o,s:b}", "from_unix_us", (json_int_t)from,
                             "to_unix_us", (json_int_t)to, "points", (json_int_t)points,
                             "bucket_us", (json_int_t)h.bucket_us, "rollup_s",
                             level >= 0 ? json_integer(gpufl__rollup_levels_s[level]) : json_null(),
                             "gpus", h.gpus, "truncated", truncated));
}

/* ---- GET /api/v1/fleet/health -------------------------------------------------------------- */

/* Throttle reasons that are not throttling: the clocks are low because nothing runs, or set
 * so by the administrator. */
static int not_throttling(const char *name) {
    return !strcmp(name, "gpu_idle") || !strcmp(name, "applications_clocks_setting") ||
           !strcmp(name, "display_clock_setting");
}

typedef struct health {
    fleet_t *f;
    json_t *events;
    fsession_t *s;
    int64_t device;
    int64_t since[LEGEND_BITS]; /* ts_ns a reason's open span began, -1 when none is open */
    uint64_t on;                /* reasons set at the last change */
} health_t;

static void span_close(health_t *h, int bit, int64_t end_ns) {
    const char *name = h->s->legend[bit];
    char fallback[32];
    if (!name) snprintf(fallback, sizeof fallback, "bit %d", bit);
    name = name ? name : fallback;
    if (!not_throttling(name)) {
        json_t *e = event_at(h->f, h->s, h->device, h->since[bit], "throttle", name);
        if (e) {
            json_object_set_new(e, "reason", json_string(name));
            json_object_set_new(e, "end_unix_us",
                                json_integer((json_int_t)(h->s->epoch_us + end_ns / 1000)));
            json_array_append_new(h->events, e);
        }
    }
    h->since[bit] = -1;
}

/* The reasons that changed at ts_ns: a set bit opens a span, a cleared one closes it. */
static void throttle_change(health_t *h, uint64_t now, int64_t ts_ns) {
    for (int bit = 0; bit < LEGEND_BITS; bit++) {
        uint64_t m = (uint64_t)1 << bit;
        if ((now & m) && !(h->on & m))
            h->since[bit] = ts_ns;
        else if (!(now & m) && (h->on & m) && h->since[bit] >= 0)
            span_close(h, bit, ts_ns);
    }
    h->on = now;
}

static void ecc_event(health_t *h, int64_t ts_ns, const char *kind, const char *now,
                      const char *before) {
    if (!now || !before) return;
    int64_t n = strtoll(now, NULL, 10), b = strtoll(before, NULL, 10);
    if (n <= b) return;
    char detail[96];
    snprintf(detail, sizeof detail, "+%" PRId64 " %s ECC errors (%" PRId64 " since boot)", n - b,
             !strcmp(kind, "ecc_sbe") ? "corrected" : "uncorrected", n);
    json_t *e = event_at(h->f, h->s, h->device, ts_ns, kind, detail);
    if (!e) return;
    json_object_set_new(e, "count", json_integer((json_int_t)(n - b)));
    json_array_append_new(h->events, e);
}

/* The newest sample of the last device closes what is still open (the range ends there). */
static void device_end(health_t *h, int64_t last_ns) {
    if (!h->s) return;
    for (int bit = 0; bit < LEGEND_BITS; bit++)
        if (h->since[bit] >= 0) span_close(h, bit, last_ns);
    h->on = 0;
}

/* session, device, ts, throttle, sbe, dbe, previous throttle, sbe, dbe, next ts. */
static int health_row(void *arg_, int n, const char *const *v, const char *const *names) {
    (void)names;
    health_t *h = arg_;
    if (n < 10 || !v[0] || !v[1] || !v[2]) return 0;
    int64_t device = strtoll(v[1], NULL, 10), ts = strtoll(v[2], NULL, 10);
    if (!h->s || strcmp(h->s->id, v[0]) || h->device != device) {
        h->s = session_of(h->f, v[0]);
        h->device = device;
        h->on = 0;
        for (int bit = 0; bit < LEGEND_BITS; bit++) h->since[bit] = -1;
        if (!h->s) return 0;
    }
    if (!h->s) return 0;
    throttle_change(h, v[3] ? strtoull(v[3], NULL, 10) : 0, ts);
    ecc_event(h, ts, "ecc_sbe", v[4], v[7]);
    ecc_event(h, ts, "ecc_dbe", v[5], v[8]);
    if (!v[9]) device_end(h, ts);
    return 0;
}

static int by_time(const void *a, const void *b) {
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "unix_us"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "unix_us"));
    return (x > y) - (x < y);
}

void gpufl__fleet_health(gpufl__request_t *req, gpufl__reply_t *rep) {
    int64_t from, to;
    if (range_args(req, rep, &from, &to)) return;
    fleet_t f;
    char p[3][32];
    int rc = fleet_load(&f, req, from, to, p);
    health_t h = {.f = &f, .events = json_array()};
    const char *params[] = {p[0], p[1], p[2]};
    /* Only the rows where something changed (and each device's last) leave the database. */
    if (rc == 0)
        rc = query(&f,
                   "SELECT session_id, device, ts_ns, thr, sbe, dbe, pthr, psbe, pdbe, nts FROM "
                   "(SELECT g.session_id, g.device, g.ts_ns, g.throttle_reasons AS thr, "
                   "g.ecc_sbe_volatile AS sbe, g.ecc_dbe_volatile AS dbe, LAG(g.throttle_reasons) "
                   "OVER w AS pthr, LAG(g.ecc_sbe_volatile) OVER w AS psbe, "
                   "LAG(g.ecc_dbe_volatile) OVER w AS pdbe, LEAD(g.ts_ns) OVER w AS "
                   "nts" SAMPLES_IN_RANGE " WINDOW w AS (PARTITION BY g.session_id, g.device "
                   "ORDER BY g.ts_ns)) x WHERE COALESCE(thr, 0) <> COALESCE(pthr, 0) OR sbe > psbe "
                   "OR dbe > pdbe OR nts IS NULL ORDER BY session_id, device, ts_ns",
                   params, 3, health_row, &h);
    int truncated = f.truncated;
    if (rc == 0) {
        json_array_extend(h.events, f.xids);
        json_array_extend(h.events, f.lost);
        size_t n = json_array_size(h.events);
        json_t **all = malloc((n ? n : 1) * sizeof *all);
        if (!all) rc = GPUFL_ENOMEM;
        for (size_t i = 0; all && i < n; i++) all[i] = json_incref(json_array_get(h.events, i));
        if (all) qsort(all, n, sizeof *all, by_time);
        json_array_clear(h.events);
        for (size_t i = 0; all && i < n; i++) {
            if (i < EVENTS_MAX) json_array_append(h.events, all[i]);
            json_decref(all[i]);
        }
        truncated |= n > EVENTS_MAX;
        free(all);
    }
    fleet_fini(&f);
    finish(rep, rc,
           json_pack("{s:I,s:I,s:o,s:b}", "from_unix_us", (json_int_t)from, "to_unix_us",
                     (json_int_t)to, "events", h.events, "truncated", truncated));
}

/* ---- GET /api/v1/fleet/usage --------------------------------------------------------------- */

typedef struct usage {
    fleet_t *f;
    const char *group;
    json_t *rows; /* key -> {gpu_ns, energy_uj, ...} */
    fsession_t *s;
    fdev_t *d;
    int64_t prev_ts, prev_energy_mj, prev_power_mw;
    int have_prev;
} usage_t;

/* The group a process of a session falls in, and the row's descriptive fields. */
static json_t *usage_row_for(usage_t *u, int64_t pid) {
    char spid[32], key[512];
    snprintf(spid, sizeof spid, "%" PRId64, pid);
    json_t *info = json_object_get(u->d->s->procs, spid);
    const char *user = json_string_value(json_object_get(info, "user"));
    const char *job = json_string_value(json_object_get(info, "slurm_job_id"));
    const char *comm = json_string_value(json_object_get(info, "comm"));
    const char *host = u->d->s->hostname ? u->d->s->hostname : "";
    if (!strcmp(u->group, "job"))
        snprintf(key, sizeof key, "j:%s", job ? job : "");
    else if (!strcmp(u->group, "user"))
        snprintf(key, sizeof key, "u:%s", user ? user : "");
    else
        snprintf(key, sizeof key, "p:%s:%" PRId64, host, pid);
    json_t *row = json_object_get(u->rows, key);
    if (row) return row;
    if (json_object_size(u->rows) >= USAGE_ROWS_MAX) {
        u->f->truncated = 1;
        return NULL;
    }
    if (!strcmp(u->group, "job"))
        row = json_pack("{s:o}", "job_id", job ? json_string(job) : json_null());
    else if (!strcmp(u->group, "user"))
        row = json_pack("{s:o}", "user", user ? json_string(user) : json_null());
    else
        row = json_pack("{s:s,s:I,s:o,s:o,s:o}", "hostname", host, "pid", (json_int_t)pid, "comm",
                        comm ? json_string(comm) : json_null(), "user",
                        user ? json_string(user) : json_null(), "job_id",
                        job ? json_string(job) : json_null());
    if (!row) return NULL;
    json_object_set_new(row, "gpu_ns", json_real(0));
    json_object_set_new(row, "energy_mj", json_real(0));
    json_object_set_new(row, "gpus", json_object()); /* uuids, counted at the end */
    json_object_set_new(u->rows, key, row);
    return row;
}

static void add_real(json_t *o, const char *key, double x) {
    json_real_set(json_object_get(o, key), json_real_value(json_object_get(o, key)) + x);
}

/* One sample interval (prev_ts, ts] of the current device: its length and energy go to the
 * processes of the listing in force at its start, by their shares. */
static void usage_interval(usage_t *u, int64_t ts, const char *energy, const char *power) {
    int64_t dt = ts - u->prev_ts;
    double mj;
    if (energy && u->prev_energy_mj >= 0 && strtoll(energy, NULL, 10) >= u->prev_energy_mj)
        mj = (double)(strtoll(energy, NULL, 10) - u->prev_energy_mj);
    else if (power)
        mj = strtod(power, NULL) * (double)dt / 1e9; /* mW x s = mJ */
    else
        mj = 0;
    const listing_t *l = listing_at(u->d, u->prev_ts);
    for (size_t k = 0; l && k < l->n; k++) {
        json_t *row = usage_row_for(u, l->pid[k]);
        if (!row) continue;
        add_real(row, "gpu_ns", (double)dt * l->share[k]);
        add_real(row, "energy_mj", mj * l->share[k]);
        json_object_set_new(json_object_get(row, "gpus"), u->d->uuid ? u->d->uuid : u->d->s->id,
                            json_true());
    }
}

/* session, device, ts, energy_mj, power_mw, in that order. */
static int usage_row(void *arg_, int n, const char *const *v, const char *const *names) {
    (void)names;
    usage_t *u = arg_;
    if (n < 5 || !v[0] || !v[1] || !v[2]) return 0;
    int64_t device = strtoll(v[1], NULL, 10), ts = strtoll(v[2], NULL, 10);
    if (!u->d || strcmp(u->d->s->id, v[0]) || u->d->device != device) {
        fsession_t *s = session_of(u->f, v[0]);
        u->d = s ? dev_of(u->f, s, device) : NULL;
        u->have_prev = 0;
    }
    if (!u->d) return 0; /* no listing ever: nobody to charge */
    if (u->have_prev) usage_interval(u, ts, v[3], v[4]);
    u->prev_ts = ts;
    u->prev_energy_mj = v[3] ? strtoll(v[3], NULL, 10) : -1;
    u->have_prev = 1;
    return 0;
}

static int by_gpu_time(const void *a, const void *b) {
    double x = json_real_value(json_object_get(*(json_t *const *)a, "gpu_seconds"));
    double y = json_real_value(json_object_get(*(json_t *const *)b, "gpu_seconds"));
    return (x < y) - (x > y);
}

static json_t *usage_list(json_t *rows) {
    size_t n = json_object_size(rows), i = 0;
    json_t **all = malloc((n ? n : 1) * sizeof *all);
    json_t *list = json_array();
    if (!all) return list;
    const char *key;
    json_t *row;
    json_object_foreach(rows, key, row) {
        double ns = json_real_value(json_object_get(row, "gpu_ns"));
        double mj = json_real_value(json_object_get(row, "energy_mj"));
        json_object_set_new(
            row, "gpus", json_integer((json_int_t)json_object_size(json_object_get(row, "gpus"))));
        json_object_del(row, "gpu_ns");
        json_object_del(row, "energy_mj");
        json_object_set_new(row, "gpu_seconds", json_real(round(ns / 1e6) / 1e3));
        json_object_set_new(row, "gpu_hours", json_real(ns / 3.6e12));
        json_object_set_new(row, "energy_j", json_real(round(mj) / 1e3));
        json_object_set_new(row, "energy_kwh", json_real(mj / 3.6e9));
        all[i++] = row;
    }
    qsort(all, n, sizeof *all, by_gpu_time);
    for (i = 0; i < n; i++) json_array_append(list, all[i]);
    free(all);
    return list;
}

void gpufl__fleet_usage(gpufl__request_t *req, gpufl__reply_t *rep) {
    int64_t from, to;
    if (range_args(req, rep, &from, &to)) return;
    const char *group = arg(req, "group") ? arg(req, "group") : "process";
    if (strcmp(group, "process") && strcmp(group, "job") && strcmp(group, "user")) {
        gpufl__query_bad_param(rep, "group", "group: expected process, job or user");
        return;
    }
    fleet_t f;
    char p[3][32];
    int rc = fleet_load(&f, req, from, to, p);
    usage_t u = {.f = &f, .group = group, .rows = json_object()};
    const char *params[] = {p[0], p[1], p[2]};
    if (rc == 0) {
        sort_listings(&f);
        rc = query(&f,
                   "SELECT g.session_id, g.device, g.ts_ns, g.energy_mj, "
                   "g.power_mw" SAMPLES_IN_RANGE " ORDER BY g.session_id, g.device, g.ts_ns",
                   params, 3, usage_row, &u);
    }
    int truncated = f.truncated;
    json_t *list = rc == 0 ? usage_list(u.rows) : NULL;
    json_decref(u.rows);
    fleet_fini(&f);
    finish(rep, rc,
           rc ? NULL
              : json_pack("{s:I,s:I,s:s,s:o,s:b}", "from_unix_us", (json_int_t)from, "to_unix_us",
                          (json_int_t)to, "group", group, "rows", list, "truncated", truncated));
}
