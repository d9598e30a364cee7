// SPDX-License-Identifier: Apache-2.0
/*
 * otlp.c - --otlp-endpoint: each snapshot pushed to <endpoint>/v1/metrics as
 * OTLP/HTTP JSON under the OpenTelemetry hardware semantic conventions'
 * names where they define one (hw.gpu.*, hw.power, hw.energy, hw.temperature,
 * hw.errors, system.*; process.*, container.* and k8s.* attributes) and
 * gpufl.* for the rest (clocks, GPM ratios, throttle time, per-process
 * readings), with libcurl.
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

/* A device metric read from one gpu_sample column: value x scale. */
typedef struct column_metric {
    const char *name, *unit, *kind, *description, *column;
    double scale;
    const char *attr_key, *attr_value; /* one more attribute, or NULL */
} column_metric_t;

/* The semantic conventions' hw.* names where they define one; gpufl.* for
 * the readings they do not cover (clocks, GPM ratios). */
static const column_metric_t column_metrics[] = {
    {"hw.gpu.utilization", "1", "gauge", "Fraction of time a kernel ran (gpu_util_pct).",
     "gpu_util_pct", 0.01, "hw.gpu.task", "general"},
    {"hw.gpu.memory.usage", "By", "updown", "Device memory in use (mem_used_bytes).",
     "mem_used_bytes", 1, NULL, NULL},
    {"hw.gpu.memory.limit", "By", "updown", "Device memory in all (mem_total_bytes).",
     "mem_total_bytes", 1, NULL, NULL},
    {"hw.power", "W", "gauge", "Power draw (power_mw).", "power_mw", 0.001, NULL, NULL},
    {"hw.temperature", "Cel", "gauge", "GPU die temperature (temp_gpu_c).", "temp_gpu_c", 1, NULL,
     NULL},
    {"gpufl.gpu.clock.sm", "Hz", "gauge", "SM clock (clock_sm_mhz).", "clock_sm_mhz", 1e6, NULL,
     NULL},
    {"gpufl.gpu.clock.memory", "Hz", "gauge", "Memory clock (clock_mem_mhz).", "clock_mem_mhz", 1e6,
     NULL, NULL},
    {"gpufl.gpu.sm.active", "1", "gauge", "Fraction of cycles an SM had a warp resident (GPM).",
     "sm_active_pct", 0.01, NULL, NULL},
    {"gpufl.gpu.sm.occupancy", "1", "gauge", "Resident warps over the SMs' maximum (GPM).",
     "sm_occupancy_pct", 0.01, NULL, NULL},
    {"gpufl.gpu.tensor.active", "1", "gauge",
     "Fraction of cycles the tensor pipes were busy (GPM).", "tensor_active_pct", 0.01, NULL, NULL},
    {"gpufl.gpu.dram.active", "1", "gauge", "Device memory bandwidth used over its peak (GPM).",
     "dram_bw_util_pct", 0.01, NULL, NULL},
};
#define N_COLUMN_METRICS (sizeof column_metrics / sizeof column_metrics[0])

/* The metrics that are not one column each, after the column metrics. */
enum {
    M_MEM_UTIL = N_COLUMN_METRICS,
    M_ENERGY,
    M_IO,
    M_ERRORS,
    M_THROTTLE,
    M_PROC_MEM,
    M_PROC_SM,
    M_PROC_MEM_UTIL,
    M_HOST_CPU,
    M_HOST_MEM,
    M_HOST_MEM_LIMIT,
    M_COUNT
};

/* Name, unit, kind and description of the metrics after the column ones, in enum order. */
static const metric_t other_metrics[M_COUNT - N_COLUMN_METRICS] = {
    {"hw.gpu.memory.utilization", "1", "gauge",
     "Fraction of device memory in use (mem_used_bytes / mem_total_bytes).", NULL},
    {"hw.energy", "J", "sum", "Energy used since the monitor started (energy_mj).", NULL},
    {"hw.gpu.io", "By", "sum", "Bytes moved over PCIe and NVLink since the monitor started.", NULL},
    {"hw.errors", "{error}", "sum", "XID errors per code since the monitor started.", NULL},
    {"gpufl.gpu.throttle.time", "s", "sum", "Time each clock event (throttle) reason was active.",
     NULL},
    {"gpufl.process.gpu.memory.usage", "By", "updown",
     "Device memory a process uses (NVML's process list).", NULL},
    {"gpufl.process.gpu.sm.utilization", "1", "gauge",
     "Fraction of the last interval a kernel of the process ran.", NULL},
    {"gpufl.process.gpu.memory.utilization", "1", "gauge",
     "Fraction of the last interval the process used memory.", NULL},
    {"system.cpu.utilization", "1", "gauge", "Host CPU busy time over all cores.", NULL},
    {"system.memory.usage", "By", "updown", "Host memory in use.", NULL},
    {"system.memory.limit", "By", "updown", "Host memory in all.", NULL},
};

/* A process's attributes: the semantic conventions' process.*, container.*
 * and k8s.* names, and the device it runs on. */
static json_t *process_attrs(const mon_device_t *d, const mon_process_t *p) {
    json_t *a = json_array();
    json_array_append_new(a, attr("hw.id", d->uuid));
    json_array_append_new(a, json_pack("{s:s, s:{s:I}}", "key", "process.pid", "value", "intValue",
                                       (json_int_t)p->pid));
    if (p->comm[0]) json_array_append_new(a, attr("process.executable.name", p->comm));
    if (p->user[0]) json_array_append_new(a, attr("process.owner", p->user));
    if (p->container[0]) json_array_append_new(a, attr("container.id", p->container));
    if (p->pod_uid[0]) json_array_append_new(a, attr("k8s.pod.uid", p->pod_uid));
    if (p->slurm_job[0]) json_array_append_new(a, attr("gpufl.slurm.job_id", p->slurm_job));
    return a;
}

/* hw.gpu.io's two points of one link: bytes sent and received. */
static void io_points(metric_t *m, const mon_otlp_t *o, int64_t ts, const mon_device_t *d,
                      const char *link, double tx, double rx) {
    json_t *a = device_attrs(d, "network.io.direction", "transmit");
    json_array_append_new(a, attr("gpufl.link", link));
    point(m, o, ts, a, tx);
    a = device_attrs(d, "network.io.direction", "receive");
    json_array_append_new(a, attr("gpufl.link", link));
    point(m, o, ts, a, rx);
}

static void device_points(metric_t *ms, const mon_otlp_t *o, int64_t ts, const mon_device_t *d) {
    double v, total;
    for (size_t k = 0; k < N_COLUMN_METRICS; k++) {
        const column_metric_t *c = &column_metrics[k];
        if (col(d, c->column, &v))
            point(&ms[k], o, ts, device_attrs(d, c->attr_key, c->attr_value), v * c->scale);
    }
    if (col(d, "mem_total_bytes", &total) && col(d, "mem_used_bytes", &v) && total > 0)
        point(&ms[M_MEM_UTIL], o, ts, device_attrs(d, NULL, NULL), v / total);
    if (col(d, "energy_mj", &v) || col(d, "power_mw", &v))
        point(&ms[M_ENERGY], o, ts, device_attrs(d, NULL, NULL), d->counters.energy_joules);
    const mon_counters_t *k = &d->counters;
    if (col(d, "pcie_tx_bytes_per_s", &v) || k->pcie_tx_bytes > 0)
        io_points(&ms[M_IO], o, ts, d, "pcie", k->pcie_tx_bytes, k->pcie_rx_bytes);
    if (col(d, "nvlink_tx_bytes_per_s", &v) || k->nvlink_tx_bytes > 0)
        io_points(&ms[M_IO], o, ts, d, "nvlink", k->nvlink_tx_bytes, k->nvlink_rx_bytes);
    for (int x = 0; x < k->nxids && x < MON_MAX_XIDS; x++) {
        char type[32];
        snprintf(type, sizeof type, "xid_%u", k->xids[x].code);
        point(&ms[M_ERRORS], o, ts, device_attrs(d, "error.type", type), (double)k->xids[x].count);
    }
    for (int bit = 0; bit < MON_MAX_REASONS; bit++)
        if (d->throttle_reason_names[bit] && k->throttle_seconds[bit] > 0)
            point(&ms[M_THROTTLE], o, ts,
                  device_attrs(d, "gpufl.throttle.reason", d->throttle_reason_names[bit]),
                  k->throttle_seconds[bit]);
    for (int j = 0; j < d->nprocesses && j < MON_MAX_PROCESSES; j++) {
        const mon_process_t *p = &d->processes[j];
        if (p->used_bytes >= 0)
            point(&ms[M_PROC_MEM], o, ts, process_attrs(d, p), (double)p->used_bytes);
        if (p->sm_util_pct >= 0)
            point(&ms[M_PROC_SM], o, ts, process_attrs(d, p), p->sm_util_pct / 100.0);
        if (p->mem_util_pct >= 0)
            point(&ms[M_PROC_MEM_UTIL], o, ts, process_attrs(d, p), p->mem_util_pct / 100.0);
    }
}

/* The host's readings under the semantic conventions' system.* names. */
static void host_points(metric_t *ms, const mon_otlp_t *o, int64_t ts, const mon_snapshot_t *s) {
    const mon_value_t *cpu = mon_value_find(s->host, s->host_ncols, "cpu_pct");
    const mon_value_t *used = mon_value_find(s->host, s->host_ncols, "mem_used_bytes");
    const mon_value_t *total = mon_value_find(s->host, s->host_ncols, "mem_total_bytes");
    if (cpu) point(&ms[M_HOST_CPU], o, ts, json_array(), cpu->value / 100);
    if (used) {
        json_t *a = json_array();
        json_array_append_new(a, attr("system.memory.state", "used"));
        point(&ms[M_HOST_MEM], o, ts, a, used->value);
    }
    if (total) point(&ms[M_HOST_MEM_LIMIT], o, ts, json_array(), total->value);
}

/* The snapshot as an ExportMetricsServiceRequest; NULL when out of memory. */
static char *render(const mon_otlp_t *o, const mon_snapshot_t *s) {
    metric_t ms[M_COUNT];
    for (size_t k = 0; k < N_COLUMN_METRICS; k++)
        ms[k] = (metric_t){column_metrics[k].name, column_metrics[k].unit, column_metrics[k].kind,
                           column_metrics[k].description, NULL};
    for (size_t k = N_COLUMN_METRICS; k < M_COUNT; k++) ms[k] = other_metrics[k - N_COLUMN_METRICS];
    int64_t ts = s->ts_unix_ms * 1000000;
    for (int k = 0; k < M_COUNT; k++) ms[k].points = json_array();
    for (int i = 0; i < s->ndevices && i < MON_MAX_DEVICES; i++)
        if (!s->devices[i].lost) device_points(ms, o, ts, &s->devices[i]);
    host_points(ms, o, ts, s);
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
