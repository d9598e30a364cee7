// SPDX-License-Identifier: Apache-2.0
/*
 * metrics.c - the server's own /metrics in Prometheus text format 0.0.4: requests by route and
 * status, a latency histogram per route, windows by outcome, rows and bytes ingested, store
 * errors, the 429 bound's depth and live clients. Counters live in this process only.
 */
#include "server.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUTES_MAX 64 /* route slots; a route past them is counted as route="other" */
#define CODES_MAX  16 /* distinct statuses counted per route; more go to code="other" */
#define TEXT_MAX   (1 << 20)
#define N_BUCKETS  (sizeof buckets_s / sizeof buckets_s[0])

static const double buckets_s[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

typedef struct route_stat {
    const char *method, *pattern; /* the route table's strings; NULL: no route matched */
    int used;
    unsigned codes[CODES_MAX];
    uint64_t code_counts[CODES_MAX], other_codes;
    uint64_t bucket_counts[N_BUCKETS], count;
    double sum_s;
} route_stat_t;

static struct {
    pthread_mutex_t lock;
    route_stat_t routes[ROUTES_MAX];
    route_stat_t other;
    uint64_t windows[GPUFL__WINDOW_RANGE + 1]; /* by gpufl__window_outcome_t */
    uint64_t rows, bytes, store_errors;
} m = {.lock = PTHREAD_MUTEX_INITIALIZER};

static route_stat_t *route_of(const char *method, const char *pattern) {
    for (size_t i = 0; i < ROUTES_MAX; i++) {
        route_stat_t *r = &m.routes[i];
        if (r->used && r->method == method && r->pattern == pattern) return r;
        if (!r->used) {
            r->used = 1;
            r->method = method;
            r->pattern = pattern;
            return r;
        }
    }
    return &m.other;
}

void gpufl__metrics_request(const char *method, const char *pattern, unsigned status,
                            double seconds) {
    pthread_mutex_lock(&m.lock);
    route_stat_t *r = route_of(method, pattern);
    size_t i = 0;
    while (i < CODES_MAX && r->codes[i] && r->codes[i] != status) i++;
    if (i < CODES_MAX) {
        r->codes[i] = status;
        r->code_counts[i]++;
    } else {
        r->other_codes++;
    }
    for (size_t b = 0; b < N_BUCKETS; b++)
        if (seconds <= buckets_s[b]) r->bucket_counts[b]++;
    r->count++;
    r->sum_s += seconds;
    pthread_mutex_unlock(&m.lock);
}

void gpufl__metrics_window(gpufl__window_outcome_t outcome, int rc, int64_t rows, int64_t bytes) {
    pthread_mutex_lock(&m.lock);
    if (rc != 0) {
        m.store_errors++;
    } else if (outcome >= GPUFL__WINDOW_STORED && outcome <= GPUFL__WINDOW_RANGE) {
        m.windows[outcome]++;
        if (outcome == GPUFL__WINDOW_STORED) {
            m.rows += (uint64_t)rows;
            m.bytes += (uint64_t)bytes;
        }
    }
    pthread_mutex_unlock(&m.lock);
}

/* ---- rendering ---------------------------------------------------------------------------- */

typedef struct text {
    char *s;
    size_t len, cap;
    int full;
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || t->full) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8192;
        while (cap < t->len + (size_t)n + 1) cap *= 2;
        char *p = cap <= TEXT_MAX ? realloc(t->s, cap) : NULL;
        if (!p) {
            t->full = 1;
            return;
        }
        t->s = p;
        t->cap = cap;
    }
    memcpy(t->s + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
}

static void family(text_t *t, const char *name, const char *type, const char *help) {
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static const char *route_label(const route_stat_t *r) { return r->pattern ? r->pattern : "none"; }
static const char *method_label(const route_stat_t *r) { return r->method ? r->method : "none"; }

static void render_requests(text_t *t) {
    family(t, "gpufl_server_requests_total", "counter",
           "HTTP requests answered, by route (the route table's pattern) and status.");
    for (size_t i = 0; i <= ROUTES_MAX; i++) {
        const route_stat_t *r = i < ROUTES_MAX ? &m.routes[i] : &m.other;
        if (!r->used && !r->count) continue;
        const char *route = i < ROUTES_MAX ? route_label(r) : "other";
        for (size_t k = 0; k < CODES_MAX && r->codes[k]; k++)
            put(t, "gpufl_server_requests_total{method=\"%s\",route=\"%s\",code=\"%u\"} %llu\n",
                method_label(r), route, r->codes[k], (unsigned long long)r->code_counts[k]);
        if (r->other_codes)
            put(t, "gpufl_server_requests_total{method=\"%s\",route=\"%s\",code=\"other\"} %llu\n",
                method_label(r), route, (unsigned long long)r->other_codes);
    }
    family(t, "gpufl_server_request_duration_seconds", "histogram",
           "Time from a request's first byte to its answer, by route.");
    for (size_t i = 0; i <= ROUTES_MAX; i++) {
        const route_stat_t *r = i < ROUTES_MAX ? &m.routes[i] : &m.other;
        if (!r->count) continue;
        const char *route = i < ROUTES_MAX ? route_label(r) : "other";
        const char *meth = method_label(r);
        for (size_t b = 0; b < N_BUCKETS; b++)
            put(t,
                "gpufl_server_request_duration_seconds_bucket{method=\"%s\",route=\"%s\","
                "le=\"%g\"} %llu\n",
                meth, route, buckets_s[b], (unsigned long long)r->bucket_counts[b]);
        put(t,
            "gpufl_server_request_duration_seconds_bucket{method=\"%s\",route=\"%s\",le=\"+Inf\"}"
            " %llu\n",
            meth, route, (unsigned long long)r->count);
        put(t, "gpufl_server_request_duration_seconds_sum{method=\"%s\",route=\"%s\"} %.6f\n", meth,
            route, r->sum_s);
        put(t, "gpufl_server_request_duration_seconds_count{method=\"%s\",route=\"%s\"} %llu\n",
            meth, route, (unsigned long long)r->count);
    }
}

static void render(text_t *t, const gpufl__server_t *s) {
    static const char *const outcomes[] = {"", "stored", "duplicate", "conflict", "range"};
    pthread_mutex_lock(&m.lock);
    render_requests(t);
    family(t, "gpufl_server_windows_total", "counter",
           "Windows (and slices of windows) answered by the stream route, by outcome (store "
           "errors excluded).");
    for (int o = GPUFL__WINDOW_STORED; o <= GPUFL__WINDOW_RANGE; o++)
        put(t, "gpufl_server_windows_total{outcome=\"%s\"} %llu\n", outcomes[o],
            (unsigned long long)m.windows[o]);
    family(t, "gpufl_server_ingested_rows_total", "counter",
           "Records of the windows stored (a batch line counts its rows).");
    put(t, "gpufl_server_ingested_rows_total %llu\n", (unsigned long long)m.rows);
    family(t, "gpufl_server_ingested_bytes_total", "counter",
           "Decompressed bytes of the windows stored.");
    put(t, "gpufl_server_ingested_bytes_total %llu\n", (unsigned long long)m.bytes);
    family(t, "gpufl_server_store_errors_total", "counter",
           "Windows the store failed to take (answered 500 or 503).");
    put(t, "gpufl_server_store_errors_total %llu\n", (unsigned long long)m.store_errors);
    pthread_mutex_unlock(&m.lock);
    family(t, "gpufl_server_windows_in_progress", "gauge",
           "Windows being parsed or stored now: the queue the 429 answer bounds.");
    put(t, "gpufl_server_windows_in_progress %d\n",
        atomic_load(&((gpufl__server_t *)s)->windows_busy));
    family(t, "gpufl_server_windows_in_progress_max", "gauge",
           "The bound past which windows are answered 429 (--max-windows).");
    put(t, "gpufl_server_windows_in_progress_max %d\n", s->settings->max_windows);
    family(t, "gpufl_server_live_clients", "gauge", "Server-Sent Events clients connected now.");
    put(t, "gpufl_server_live_clients %d\n", gpufl__live_clients(s->live));
}

void gpufl__metrics_route(gpufl__request_t *req, gpufl__reply_t *rep) {
    text_t t = {0};
    render(&t, req->server);
    if (t.full || !t.s) {
        free(t.s);
        gpufl__reply_error(rep, 500, "the metrics text is past its cap");
        return;
    }
    rep->status = 200;
    rep->raw = t.s;
    rep->content_type = "text/plain; version=0.0.4; charset=utf-8";
}
