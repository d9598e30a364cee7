// SPDX-License-Identifier: Apache-2.0
/*
 * model_host.c - the host domain of the model: host_info (kept whole),
 * host_sample batches (CPU and memory of the machine, the process and its
 * cgroup) and the system_start/stop windows with their snapshots.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

/* Fills a host sample from an object (system_start/stop snapshot). */
static void sample_from_object(gpufl__model_host_sample_t *s, const json_t *o) {
    double d;
    s->ts_ns = gpufl__model_int_or_unknown(json_object_get(o, "ts_ns"));
    s->cpu_pct = gpufl__reader_num(json_object_get(o, "cpu_pct"), &d) == 0 ? d : -1;
    s->proc_cpu_pct = gpufl__reader_num(json_object_get(o, "proc_cpu_pct"), &d) == 0 ? d : -1;
    s->cg_cpu_pct = gpufl__reader_num(json_object_get(o, "cg_cpu_pct"), &d) == 0 ? d : -1;
    s->cg_cpu_limit_cores =
        gpufl__reader_num(json_object_get(o, "cg_cpu_limit_cores"), &d) == 0 ? d : -1;
    s->mem_used_bytes = gpufl__model_int_or_unknown(json_object_get(o, "mem_used_bytes"));
    s->mem_total_bytes = gpufl__model_int_or_unknown(json_object_get(o, "mem_total_bytes"));
    s->proc_rss_bytes = gpufl__model_int_or_unknown(json_object_get(o, "proc_rss_bytes"));
    s->cg_mem_used_bytes = gpufl__model_int_or_unknown(json_object_get(o, "cg_mem_used_bytes"));
    s->cg_mem_limit_bytes = gpufl__model_int_or_unknown(json_object_get(o, "cg_mem_limit_bytes"));
}

static int on_window(gpufl__model_t *m, const gpufl__reader_pos_t *pos, const char *type,
                     json_t *rec, int is_stop) {
    int64_t ts;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, type, "no integer ts_ns");
    gpufl__model_note_ts(m, ts);
    int rc;
    gpufl__model_window_t *w = gpufl__model_append_row(ROWS(m, windows, max_windows), &rc);
    if (!w) return rc;
    w->ts_ns = ts;
    w->is_stop = is_stop;
    w->tid = gpufl__model_int_or_unknown(json_object_get(rec, "tid"));
    w->active = gpufl__model_int_or_unknown(json_object_get(rec, "active"));
    if (gpufl__model_name_member(m, rec, &w->name_id, &w->name)) return GPUFL_ENOMEM;
    json_t *snap = json_object_get(rec, "snapshot");
    if (json_is_object(snap)) {
        w->has_snapshot = 1;
        sample_from_object(&w->snapshot, snap);
    }
    return 0;
}

static int on_host_sample(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    enum {
        TS,
        CPU,
        PROC_CPU,
        MEM_USED,
        MEM_TOTAL,
        RSS,
        CG_MEM,
        CG_MEM_LIMIT,
        CG_CPU,
        CG_CPU_LIMIT,
        NCOL
    };
    static const char *const names[NCOL] = {
        "ts_ns",           "cpu_pct",           "proc_cpu_pct",      "mem_used_bytes",
        "mem_total_bytes", "proc_rss_bytes",    "cg_mem_used_bytes", "cg_mem_limit_bytes",
        "cg_cpu_pct",      "cg_cpu_limit_cores"};
    static const int is_real[NCOL] = {[CPU] = 1, [PROC_CPU] = 1, [CG_CPU] = 1, [CG_CPU_LIMIT] = 1};
    json_t *cols[NCOL];
    size_t rows;
    char why[160];
    /* Only the time is required: a column missing means "unknown". */
    if (gpufl__reader_columns(rec, names, cols, NCOL, 1, &rows, why, sizeof why))
        return gpufl__model_bad_line(m, pos, "host_sample", "%s", why);
    size_t start = m->n_samples;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        int64_t iv[NCOL];
        double dv[NCOL];
        for (int c = 0; c < NCOL; c++) {
            json_t *cell = cols[c] ? json_array_get(cols[c], r) : NULL;
            int rc = is_real[c] ? gpufl__reader_num(cell, &dv[c]) : gpufl__reader_int(cell, &iv[c]);
            if (rc < 0 || (c == TS && rc != 0)) {
                m->n_samples = start;
                return gpufl__model_bad_line(m, pos, "host_sample", "row %zu: %s is not a%s", r,
                                             names[c], is_real[c] ? " number" : "n integer");
            }
            if (rc == 1) { /* null: unknown */
                iv[c] = GPUFL_MODEL_UNKNOWN;
                dv[c] = GPUFL_MODEL_UNKNOWN;
            }
        }
        if (iv[TS] < lo) lo = iv[TS];
        if (iv[TS] > hi) hi = iv[TS];
        int rc = gpufl__model_reserve((void **)&m->samples, &m->samples_alloc, m->n_samples,
                                      sizeof *m->samples, m->limits.max_samples);
        if (rc < 0) return rc;
        if (rc) {
            over++;
            continue;
        }
        gpufl__model_host_sample_t *s = &m->samples[m->n_samples++];
        s->ts_ns = iv[TS];
        s->cpu_pct = dv[CPU];
        s->proc_cpu_pct = dv[PROC_CPU];
        s->cg_cpu_pct = dv[CG_CPU];
        s->cg_cpu_limit_cores = dv[CG_CPU_LIMIT];
        s->mem_used_bytes = iv[MEM_USED];
        s->mem_total_bytes = iv[MEM_TOTAL];
        s->proc_rss_bytes = iv[RSS];
        s->cg_mem_used_bytes = iv[CG_MEM];
        s->cg_mem_limit_bytes = iv[CG_MEM_LIMIT];
    }
    m->samples_over_cap += over;
    if (rows) gpufl__model_note_ts(m, lo), gpufl__model_note_ts(m, hi);
    return 0;
}

static int on_host_info(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    (void)pos;
    return gpufl__model_keep_first(&m->host_info, rec);
}

static int on_system_start(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    return on_window(m, pos, "system_start", rec, 0);
}

static int on_system_stop(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    return on_window(m, pos, "system_stop", rec, 1);
}

const gpufl__model_handler_t gpufl__model_host_handlers[] = {
    {"host_info", on_host_info, NULL},
    {"host_sample", on_host_sample, NULL},
    {"system_start", on_system_start, NULL},
    {"system_stop", on_system_stop, NULL},
    {NULL, NULL, NULL},
};
