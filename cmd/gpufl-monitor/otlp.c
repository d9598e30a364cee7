// SPDX-License-Identifier: Apache-2.0
/*
 * otlp.c - --otlp-endpoint: each snapshot pushed to <endpoint>/v1/metrics as
 * OTLP/HTTP JSON under the OpenTelemetry hardware semantic conventions'
 * names (hw.gpu.*, hw.power, hw.energy, hw.temperature), with libcurl.
 *
 * The push runs on its own thread behind a queue of one snapshot: the
 * sampling thread only copies into the slot (the newest wins, a snapshot
 * replaced before it was sent is counted as dropped), so a slow or dead
 * collector never delays sampling or a scrape. A failed request is not
 * retried as such: the next interval's snapshot carries the same counters.
 */
#include "exposition.h"
#include "monitor.h"

#include <gpufl/gpufl.h>

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mon_otlp {
    char url[2048];
    long timeout_ms;
    int64_t start_unix_ns; /* the sums' startTimeUnixNano */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int pending, stopping; /* under lock */
    mon_snapshot_t slot;   /* the pending snapshot, under lock */
    mon_snapshot_t work;   /* the push thread's own copy */
    atomic_uint_fast64_t ok, error, dropped;
};

/* ---------------- the OTLP JSON ---------------- */

static json_t *attr(const char *key, const char *value) {
    return json_pack("{s:s, s:{s:s}}", "key", key, "value", "stringValue", value);
}

static json_t *nanos(int64_t ns) {
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)ns);
    return json_string(text);
}

/* One metric under construction: its data points accumulate over devices. */
typedef struct metric {
    const char *name, *unit, *kind; /* kind: "gauge", "sum" (cumulative), "updown" */
    const char *description;
    json_t *points;
} metric_t;

static void point(metric_t *m, const mon_otlp_t *o, int64_t ts_ns, json_t *attrs, double v) {
    json_t *p = json_pack("{s:o, s:o, s:f}", "timeUnixNano", nanos(ts_ns), "attributes", attrs,
                          "asDouble", v);
    if (strcmp(m->kind, "gauge") != 0)
        json_object_set_new(p, "startTimeUnixNano", nanos(o->start_unix_ns));
    json_array_append_new(m->points, p);
}

static json_t *metric_json(metric_t *m) {
    json_t *j = json_pack("{s:s, s:s, s:s}", "name", m->name, "unit", m->unit, "description",
                          m->description);
    if (strcmp(m->kind, "gauge") == 0)
        json_object_set_new(j, "gauge", json_pack("{s:o}", "dataPoints", m->points));
    else /* AGGREGATION_TEMPORALITY_CUMULATIVE = 2 */
        json_object_set_new(j, "sum",
                            json_pack("{s:o, s:i, s:b}", "dataPoints", m->points,
                                      "aggregationTemporality", 2, "isMonotonic",
                                      strcmp(m->kind, "sum") == 0));
    m->points = NULL;
    return j;
}

/* The device's attributes; hw.gpu.task and hw.type are added per metric. */
static json_t *device_attrs(const mon_device_t *d, const char *extra_key, const char *extra) {
    json_t *a = json_array();
    json_array_append_new(a, attr("hw.id", d->uuid));
    json_array_append_new(a, attr("hw.name", d->model));
    json_array_append_new(a, attr("hw.vendor", "NVIDIA"));
    json_array_append_new(a, attr("hw.type", "gpu"));
    if (d->pci_bus_id[0]) json_array_append_new(a, attr("gpufl.pci_bus_id", d->pci_bus_id));
    if (d->mig_instance >= 0 && d->mig_profile[0])
        json_array_append_new(a, attr("gpufl.mig_profile", d->mig_profile));
    if (extra_key) json_array_append_new(a, attr(extra_key, extra));
    return a;
}

static int col(const mon_device_t *d, const char *column, double *v) {
    const mon_value_t *x = mon_value_find(d->cols, d->ncols, column);
    if (x) *v = x->value;
    return x != NULL;
}

enum { M_UTIL, M_MEM_USAGE, M_MEM_LIMIT, M_MEM_UTIL, M_POWER, M_ENERGY, M_TEMP, M_COUNT };

/* The snapshot as an ExportMetricsServiceRequest; NULL when out of memory. */
static char *render(const mon_otlp_t *o, const mon_snapshot_t *s) {
    metric_t ms[M_COUNT] = {
        {"hw.gpu.utilization", "1", "gauge", "Fraction of time a kernel ran (gpu_util_pct).", NULL},
        {"hw.gpu.memory.usage", "By", "updown", "Device memory in use (mem_used_bytes).", NULL},
        {"hw.gpu.memory.limit", "By", "updown", "Device memory in all (mem_total_bytes).", NULL},
        {"hw.gpu.memory.utilization", "1", "gauge",
         "Fraction of device memory in use (mem_used_bytes / mem_total_bytes).", NULL},
        {"hw.power", "W", "gauge", "Power draw (power_mw).", NULL},
        {"hw.energy", "J", "sum", "Energy used since the monitor started (energy_mj).", NULL},
        {"hw.temperature", "Cel", "gauge", "GPU die temperature (temp_gpu_c).", NULL},
    };
    int64_t ts = s->ts_unix_ms * 1000000;
    for (int k = 0; k < M_COUNT; k++) ms[k].points = json_array();
    for (int i = 0; i < s->ndevices && i < MON_MAX_DEVICES; i++) {
        const mon_device_t *d = &s->devices[i];
        double v, total;
        if (d->lost) continue;
        if (col(d, "gpu_util_pct", &v))
            point(&ms[M_UTIL], o, ts, device_attrs(d, "hw.gpu.task", "general"), v / 100);
        if (col(d, "mem_used_bytes", &v))
            point(&ms[M_MEM_USAGE], o, ts, device_attrs(d, NULL, NULL), v);
        if (col(d, "mem_total_bytes", &total)) {
            point(&ms[M_MEM_LIMIT], o, ts, device_attrs(d, NULL, NULL), total);
            if (col(d, "mem_used_bytes", &v) && total > 0)
                point(&ms[M_MEM_UTIL], o, ts, device_attrs(d, NULL, NULL), v / total);
        }
        if (col(d, "power_mw", &v))
            point(&ms[M_POWER], o, ts, device_attrs(d, NULL, NULL), v / 1000);
        if (col(d, "energy_mj", &v) || col(d, "power_mw", &v))
            point(&ms[M_ENERGY], o, ts, device_attrs(d, NULL, NULL), d->counters.energy_joules);
        if (col(d, "temp_gpu_c", &v)) point(&ms[M_TEMP], o, ts, device_attrs(d, NULL, NULL), v);
    }
    json_t *metrics = json_array();
    for (int k = 0; k < M_COUNT; k++) {
        if (json_array_size(ms[k].points) == 0) {
            json_decref(ms[k].points);
            continue;
        }
        json_array_append_new(metrics, metric_json(&ms[k]));
    }
    json_t *resource_attrs = json_array();
    json_array_append_new(resource_attrs, attr("service.name", "gpufl-monitor"));
    json_array_append_new(resource_attrs, attr("host.name", s->hostname));
    json_t *req =
        json_pack("{s:[{s:{s:o}, s:[{s:{s:s, s:s}, s:o}]}]}", "resourceMetrics", "resource",
                  "attributes", resource_attrs, "scopeMetrics", "scope", "name", "gpufl-monitor",
                  "version", gpufl_version(), "metrics", metrics);
    if (!req) return NULL;
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    return text;
}

/* ---------------- the push thread ---------------- */

static size_t discard(char *p, size_t size, size_t n, void *user) {
    (void)p;
    (void)user;
    return size * n; /* the collector's answer body is not needed */
}

/* One POST; 1 when the collector answered 2xx within the timeout. */
static int post(mon_otlp_t *o, CURL *curl, const char *body) {
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, o->url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, o->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, o->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L); /* a thread of a daemon that owns its signals */
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    return rc == CURLE_OK && status >= 200 && status < 300;
}

static void *push_main(void *arg) {
    mon_otlp_t *o = arg;
    CURL *curl = curl_easy_init();
    for (;;) {
        pthread_mutex_lock(&o->lock);
        while (!o->pending && !o->stopping) pthread_cond_wait(&o->wake, &o->lock);
        if (o->stopping) {
            pthread_mutex_unlock(&o->lock);
            break;
        }
        memcpy(&o->work, &o->slot, sizeof o->work);
        o->pending = 0;
        pthread_mutex_unlock(&o->lock);
        char *body = render(o, &o->work);
        int ok = curl && body && post(o, curl, body);
        free(body);
        atomic_fetch_add(ok ? &o->ok : &o->error, 1);
    }
    if (curl) curl_easy_cleanup(curl);
    return NULL;
}

int mon_otlp_start(mon_otlp_t **out, const char *endpoint, int interval_ms, char *why,
                   size_t size) {
    *out = NULL;
    mon_otlp_t *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    size_t n = strlen(endpoint);
    while (n > 0 && endpoint[n - 1] == '/') n--; /* "http://c:4318/" and "http://c:4318" alike */
    if (n + sizeof "/v1/metrics" > sizeof o->url) {
        snprintf(why, size, "the OTLP endpoint URL is too long");
        free(o);
        return -1;
    }
    snprintf(o->url, sizeof o->url, "%.*s/v1/metrics", (int)n, endpoint);
    /* A request may take at most one interval (from 0.5 s to 10 s): a hanging
     * collector costs one export per interval, never a growing backlog. */
    o->timeout_ms = interval_ms < 500 ? 500 : interval_ms > 10000 ? 10000 : interval_ms;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    o->start_unix_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        snprintf(why, size, "cannot initialise libcurl");
        free(o);
        return -1;
    }
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->wake, NULL);
    if (pthread_create(&o->thread, NULL, push_main, o) != 0) {
        snprintf(why, size, "cannot start the OTLP push thread");
        pthread_cond_destroy(&o->wake);
        pthread_mutex_destroy(&o->lock);
        curl_global_cleanup();
        free(o);
        return -1;
    }
    *out = o;
    return 0;
}

void mon_otlp_offer(mon_otlp_t *o, const mon_snapshot_t *s) {
    if (!o) return;
    pthread_mutex_lock(&o->lock);
    if (o->pending) atomic_fetch_add(&o->dropped, 1); /* the collector is behind: newest wins */
    memcpy(&o->slot, s, sizeof o->slot);
    o->pending = 1;
    pthread_cond_signal(&o->wake);
    pthread_mutex_unlock(&o->lock);
}

void mon_otlp_counts(mon_otlp_t *o, mon_self_t *self) {
    if (!o) return;
    self->otlp_exports_ok = atomic_load(&o->ok);
    self->otlp_exports_error = atomic_load(&o->error);
    self->otlp_dropped = atomic_load(&o->dropped);
}

/* Waits for a request in flight (at most its timeout), then frees o. */
void mon_otlp_stop(mon_otlp_t *o) {
    if (!o) return;
    pthread_mutex_lock(&o->lock);
    o->stopping = 1;
    pthread_cond_signal(&o->wake);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->thread, NULL);
    pthread_cond_destroy(&o->wake);
    pthread_mutex_destroy(&o->lock);
    curl_global_cleanup();
    free(o);
}
