// SPDX-License-Identifier: Apache-2.0
/*
 * exposition.c - a minimal stand-in for the Prometheus/OpenMetrics
 * exposition (readings.h): a few gpufl_* families with HELP and TYPE, the
 * energy counter, and the scrape counter, so the daemon and its tests run.
 * The full exposition (every family, the DCGM twins) replaces this file.
 */
#include "monitor.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const double mon_sample_buckets[12] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                       0.01,   0.025,   0.05,   0.1,   0.25,   1.0};

static int find(const mon_value_t *cols, int n, const char *name, double *v) {
    for (int i = 0; i < n; i++)
        if (cols[i].present && strcmp(cols[i].column, name) == 0) {
            *v = cols[i].value;
            return 1;
        }
    return 0;
}

void mon_counters_advance(mon_device_t *cur, const mon_device_t *prev) {
    double e0, e1;
    memset(&cur->counters, 0, sizeof cur->counters);
    if (!prev) return;
    cur->counters = prev->counters;
    if (find(prev->cols, prev->ncols, "energy_mj", &e0) &&
        find(cur->cols, cur->ncols, "energy_mj", &e1) && e1 >= e0)
        cur->counters.energy_joules += (e1 - e0) / 1000.0;
}

void mon_counters_xid(mon_device_t *d, unsigned code) {
    for (int i = 0; i < d->counters.nxids; i++)
        if (d->counters.xids[i].code == code) {
            d->counters.xids[i].count++;
            return;
        }
    if (d->counters.nxids == MON_MAX_XIDS) {
        d->counters.xid_overflow++;
        return;
    }
    d->counters.xids[d->counters.nxids].code = code;
    d->counters.xids[d->counters.nxids++].count = 1;
}

static int put(mon_buf_t *out, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) return -1;
    return mon_buf_put(out, line, (size_t)n);
}

static int gpu_family(mon_buf_t *out, const mon_snapshot_t *s, const char *name, const char *type,
                      const char *help, const char *column, double scale) {
    int rc = put(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (int i = 0; rc == 0 && i < s->ndevices; i++) {
        const mon_device_t *d = &s->devices[i];
        double v;
        if (!find(d->cols, d->ncols, column, &v)) continue;
        rc = put(out, "%s{gpu=\"%d\",uuid=\"%s\",hostname=\"%s\"} %.17g\n", name, d->index, d->uuid,
                 s->hostname, v * scale);
    }
    return rc;
}

int mon_render_metrics(mon_buf_t *out, const mon_snapshot_t *s, int openmetrics, int dcgm_compat) {
    double v;
    (void)dcgm_compat;
    int rc = gpu_family(out, s, "gpufl_gpu_utilization_ratio", "gauge", "GPU busy time, 0..1.",
                        "gpu_util_pct", 0.01);
    if (rc == 0)
        rc = gpu_family(out, s, "gpufl_gpu_memory_used_bytes", "gauge", "Device memory used.",
                        "mem_used_bytes", 1);
    if (rc == 0)
        rc = gpu_family(out, s, "gpufl_gpu_power_watts", "gauge", "Power draw.", "power_mw", 0.001);
    if (rc == 0)
        rc = put(out, "# HELP gpufl_host_memory_used_bytes Host memory used.\n"
                      "# TYPE gpufl_host_memory_used_bytes gauge\n");
    if (rc == 0 && find(s->host, s->host_ncols, "mem_used_bytes", &v))
        rc = put(out, "gpufl_host_memory_used_bytes{hostname=\"%s\"} %.17g\n", s->hostname, v);
    if (rc == 0)
        rc = put(out,
                 "# HELP gpufl_monitor_scrapes_total Scrapes of /metrics.\n"
                 "# TYPE gpufl_monitor_scrapes_total counter\n"
                 "gpufl_monitor_scrapes_total %llu\n",
                 (unsigned long long)s->self.scrapes_total);
    if (rc == 0 && openmetrics) rc = put(out, "# EOF\n");
    return rc;
}

const char *mon_metrics_content_type(int openmetrics) {
    return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                       : "text/plain; version=0.0.4; charset=utf-8";
}
