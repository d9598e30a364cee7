// SPDX-License-Identifier: Apache-2.0
/*
 * model.c - builds the session model from the records the reader hands over.
 *
 * Batch lines are applied row by row straight into the model's arrays (no
 * allocation per row, columns looked up once per line); a line with a bad
 * cell is rolled back whole, reported and skipped. Scope begins and ends are
 * joined after everything is read, so their order across lines, threads and
 * segments does not matter; so are kernel rows and their kernel_config
 * records. Then the instances are grouped into scope paths and every
 * kernel, copy and memset is attributed to the path of its scope instance.
 */
#include "analysis/model.h"
#include "analysis/model_internal.h"
#include "analysis/compat.h"

#include "core/demangle.h"
#include "util/error.h"
#include "core/ops.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_ROWS     ((size_t)16 << 20)
#define DEFAULT_MAX_RECORDS  ((size_t)1 << 20)
#define DEFAULT_MAX_WARNINGS ((size_t)1000)
#define DEFAULT_MAX_GPUS     ((size_t)1024)
#define MAX_SOURCE_COSTS     ((size_t)64)

/* ---------------------------------------------------------------------- */
/* Small helpers                                                            */
/* ---------------------------------------------------------------------- */

/* Makes room for one more element. Returns 0, 1 when the cap is reached (the
 * caller counts the row), or GPUFL_ENOMEM. */
int gpufl__model_reserve(void **data, size_t *alloc, size_t n, size_t elem, size_t max) {
    if (n < *alloc) return 0;
    if (n >= max) return 1;
    size_t grown = *alloc ? *alloc * 2 : 64;
    if (grown > max) grown = max;
    void *p = realloc(*data, grown * elem);
    if (!p) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for %zu model rows", grown);
    *data = p;
    *alloc = grown;
    return 0;
}

/* Appends a zeroed row to a and returns it. Returns NULL with *rc = 0 when
 * the cap is reached (the row is counted in over_cap), or with *rc =
 * GPUFL_ENOMEM. */
void *gpufl__model_append_row(row_array_t a, int *rc) {
    *rc = gpufl__model_reserve(a.data, a.alloc, *a.n, a.elem, a.cap);
    if (*rc) {
        if (*rc > 0) (*a.over_cap)++, *rc = 0;
        return NULL;
    }
    void *row = (char *)*a.data + (*a.n)++ * a.elem;
    memset(row, 0, a.elem);
    return row;
}

const char *gpufl__model_pool_str(gpufl_model_t *m, const char *s, size_t len) {
    const char *out;
    if (gpufl__strpool_add(&m->strings, s, len, &out)) return NULL;
    return out;
}

/* A string member of obj copied into the model, "" when absent; NULL only
 * when out of memory. */
const char *gpufl__model_member_str(gpufl_model_t *m, const json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v)) return "";
    return gpufl__model_pool_str(m, json_string_value(v), json_string_length(v));
}

/* The "name" member of rec, written as a string or as a dict id (then
 * resolved after loading): sets *id (0 for a string) and *out ("" until
 * resolved). Returns 0 or GPUFL_ENOMEM. */
static int name_member(gpufl_model_t *m, const json_t *rec, int64_t *id, const char **out) {
    json_t *name = json_object_get(rec, "name");
    *id = json_is_integer(name) ? (int64_t)json_integer_value(name) : 0;
    *out = *id ? "" : gpufl__model_member_str(m, rec, "name");
    return *out ? 0 : GPUFL_ENOMEM;
}

const char *gpufl__model_json_str(const json_t *obj, const char *key) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

void gpufl__model_note_ts(gpufl_model_t *m, int64_t ts) {
    if (ts < 0) return;
    if (m->first_ts_ns == GPUFL_MODEL_UNKNOWN || ts < m->first_ts_ns) m->first_ts_ns = ts;
    if (ts > m->last_ts_ns) m->last_ts_ns = ts;
}

void gpufl__model_warn(gpufl_model_t *m, const char *file, uint64_t line, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (gpufl__model_reserve((void **)&m->warnings, &m->warnings_alloc, m->n_warnings,
                             sizeof *m->warnings, m->limits.max_warnings) != 0) {
        m->warnings_over_cap++;
        return;
    }
    gpufl_model_warning_t *w = &m->warnings[m->n_warnings];
    w->file = gpufl__model_pool_str(m, file, strlen(file));
    w->message = gpufl__model_pool_str(m, msg, strlen(msg));
    w->line = line;
    if (!w->file || !w->message) {
        m->warnings_over_cap++;
        return;
    }
    m->n_warnings++;
}

static void on_warn(void *user, const gpufl_reader_pos_t *pos, const char *message) {
    gpufl__model_warn(user, pos->name, pos->line, "%s", message);
}

/* Reports a bad line and tells the reader it was corrupt. */
int gpufl__model_bad_line(gpufl_model_t *m, const gpufl_reader_pos_t *pos, const char *type,
                          const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gpufl__model_warn(m, pos->name, pos->line, "%s: %s", type, msg);
    return 2;
}

static int64_t int_or_unknown(const json_t *v) {
    int64_t x;
    return gpufl__reader_int(v, &x) == 0 ? x : GPUFL_MODEL_UNKNOWN;
}

/* ---------------------------------------------------------------------- */
/* Single records                                                           */
/* ---------------------------------------------------------------------- */

static int on_header(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    gpufl_model_header_t *h = &m->header;
    const char *sid = gpufl__model_json_str(rec, "session_id");
    if (h->present) {
        if (sid && strcmp(sid, h->session_id) != 0)
            gpufl__model_warn(m, pos->name, pos->line, "header: session id %s, but %s elsewhere",
                              sid, h->session_id);
        return 0;
    }
    h->session_id = gpufl__model_member_str(m, rec, "session_id");
    h->app_name = gpufl__model_member_str(m, rec, "app_name");
    h->hostname = gpufl__model_member_str(m, rec, "hostname");
    h->clock = gpufl__model_member_str(m, rec, "clock");
    h->gpufl_version = gpufl__model_member_str(m, rec, "gpufl_version");
    if (!h->session_id || !h->app_name || !h->hostname || !h->clock || !h->gpufl_version)
        return GPUFL_ENOMEM;
    h->pid = int_or_unknown(json_object_get(rec, "pid"));
    h->epoch_unix_us = int_or_unknown(json_object_get(rec, "epoch_unix_us"));
    int64_t epoch;
    h->epoch_ns = gpufl__reader_int(json_object_get(rec, "epoch_ns"), &epoch) == 0 && epoch >= 0
                      ? (uint64_t)epoch
                      : 0;
    h->present = 1;
    return 0;
}

/* Keeps the first record of a kind whole (options, capabilities, host_info,
 * trace_stats). */
static int keep_record(json_t **slot, json_t *rec) {
    if (!*slot) *slot = json_incref(rec);
    return 0;
}

/* Fills a host sample from an object (system_start/stop snapshot). */
static void sample_from_object(gpufl_model_host_sample_t *s, const json_t *o) {
    double d;
    s->ts_ns = int_or_unknown(json_object_get(o, "ts_ns"));
    s->cpu_pct = gpufl__reader_num(json_object_get(o, "cpu_pct"), &d) == 0 ? d : -1;
    s->proc_cpu_pct = gpufl__reader_num(json_object_get(o, "proc_cpu_pct"), &d) == 0 ? d : -1;
    s->cg_cpu_pct = gpufl__reader_num(json_object_get(o, "cg_cpu_pct"), &d) == 0 ? d : -1;
    s->cg_cpu_limit_cores =
        gpufl__reader_num(json_object_get(o, "cg_cpu_limit_cores"), &d) == 0 ? d : -1;
    s->mem_used_bytes = int_or_unknown(json_object_get(o, "mem_used_bytes"));
    s->mem_total_bytes = int_or_unknown(json_object_get(o, "mem_total_bytes"));
    s->proc_rss_bytes = int_or_unknown(json_object_get(o, "proc_rss_bytes"));
    s->cg_mem_used_bytes = int_or_unknown(json_object_get(o, "cg_mem_used_bytes"));
    s->cg_mem_limit_bytes = int_or_unknown(json_object_get(o, "cg_mem_limit_bytes"));
}

static int on_window(gpufl_model_t *m, const gpufl_reader_pos_t *pos, const char *type, json_t *rec,
                     int is_stop) {
    int64_t ts;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, type, "no integer ts_ns");
    gpufl__model_note_ts(m, ts);
    int rc;
    gpufl_model_window_t *w = gpufl__model_append_row(ROWS(m, windows, max_windows), &rc);
    if (!w) return rc;
    w->ts_ns = ts;
    w->is_stop = is_stop;
    w->tid = int_or_unknown(json_object_get(rec, "tid"));
    w->active = int_or_unknown(json_object_get(rec, "active"));
    if (name_member(m, rec, &w->name_id, &w->name)) return GPUFL_ENOMEM;
    json_t *snap = json_object_get(rec, "snapshot");
    if (json_is_object(snap)) {
        w->has_snapshot = 1;
        sample_from_object(&w->snapshot, snap);
    }
    return 0;
}

static gpufl_model_level_t level_of(const char *s) {
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) return (gpufl_model_level_t)i;
    if (strcmp(s, "warning") == 0) return GPUFL_MODEL_LEVEL_WARN;
    return GPUFL_MODEL_LEVEL_UNKNOWN;
}

static int on_event(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t ts;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "event", "no integer ts_ns");
    gpufl__model_note_ts(m, ts);
    int rc;
    gpufl_model_event_t *e = gpufl__model_append_row(ROWS(m, events, max_events), &rc);
    if (!e) return rc;
    e->ts_ns = ts;
    e->file = pos->file;
    e->level_name = gpufl__model_member_str(m, rec, "level");
    e->code = gpufl__model_member_str(m, rec, "code");
    e->message = gpufl__model_member_str(m, rec, "message");
    if (!e->level_name || !e->code || !e->message) return GPUFL_ENOMEM;
    e->level = level_of(e->level_name);
    return 0;
}

static int on_drops(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t ts;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "drops", "no integer ts_ns");
    gpufl__model_note_ts(m, ts);
    gpufl_model_drops_t *d = &m->drops;
    if (d->present && ts < d->ts_ns) return 0; /* counters are cumulative: keep the latest */
    d->present = 1;
    d->ts_ns = ts;
    d->records = int_or_unknown(json_object_get(rec, "records"));
    d->threads_unbuffered = int_or_unknown(json_object_get(rec, "threads_unbuffered"));
    d->names_truncated = int_or_unknown(json_object_get(rec, "names_truncated"));
    d->unbalanced_ends = int_or_unknown(json_object_get(rec, "unbalanced_ends"));
    d->depth_overflow = int_or_unknown(json_object_get(rec, "depth_overflow"));
    json_decref(d->rec);
    d->rec = json_incref(rec);
    return 0;
}

static int on_session_end(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t ts;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "session_end", "no integer ts_ns");
    gpufl__model_note_ts(m, ts);
    gpufl_model_session_end_t *e = &m->session_end;
    e->files++;
    if (e->present && ts < e->ts_ns) return 0;
    e->present = 1;
    e->ts_ns = ts;
    e->duration_ns = int_or_unknown(json_object_get(rec, "duration_ns"));
    json_decref(e->rec);
    e->rec = json_incref(rec);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Batches                                                                  */
/* ---------------------------------------------------------------------- */

/* Reads cell `row` of an integer column; absent columns give def. */
static int cell_int(json_t *col, size_t row, int64_t def, int64_t *out) {
    if (!col) {
        *out = def;
        return 0;
    }
    return gpufl__reader_int(json_array_get(col, row), out) == 0 ? 0 : -1;
}

static int on_scope_begin(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    enum { TS, TID, ID, PARENT, DEPTH, NAME, TAG, PATH, REPEAT, WARMUP, NCOL };
    static const char *const names[NCOL] = {"ts_ns", "tid", "id",   "parent", "depth",
                                            "name",  "tag", "path", "repeat", "warmup"};
    json_t *cols[NCOL];
    size_t rows;
    char why[160];
    if (gpufl__reader_columns(rec, names, cols, NCOL, REPEAT, &rows, why, sizeof why))
        return gpufl__model_bad_line(m, pos, "scope_begin", "%s", why);
    size_t start = m->n_scopes;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        int64_t v[NCOL];
        for (int c = 0; c < NCOL; c++) {
            if (cell_int(cols[c], r, 0, &v[c]) != 0) {
                m->n_scopes = start;
                return gpufl__model_bad_line(m, pos, "scope_begin", "row %zu: %s is not an integer",
                                             r, names[c]);
            }
        }
        if (v[ID] <= 0) {
            m->n_scopes = start;
            return gpufl__model_bad_line(m, pos, "scope_begin", "row %zu: id %lld is not positive",
                                         r, (long long)v[ID]);
        }
        if (v[TS] < lo) lo = v[TS];
        if (v[TS] > hi) hi = v[TS];
        int rc = gpufl__model_reserve((void **)&m->scopes, &m->scopes_alloc, m->n_scopes,
                                      sizeof *m->scopes, m->limits.max_scopes);
        if (rc < 0) return rc;
        if (rc) {
            over++;
            continue;
        }
        gpufl_model_scope_t *s = &m->scopes[m->n_scopes++];
        s->id = v[ID];
        s->parent = v[PARENT];
        s->tid = v[TID];
        s->begin_ns = v[TS];
        s->end_ns = GPUFL_MODEL_UNKNOWN;
        s->name_id = v[NAME];
        s->tag_id = v[TAG];
        s->path_id = v[PATH];
        s->name = s->tag = s->path = NULL;
        s->depth = (int32_t)v[DEPTH];
        s->repeat = (int32_t)v[REPEAT];
        s->warmup = (int32_t)v[WARMUP];
        s->open = 1;
        s->implicit = 0;
        s->lost = 0;
    }
    m->scopes_over_cap += over;
    if (rows) gpufl__model_note_ts(m, lo), gpufl__model_note_ts(m, hi);
    return 0;
}

static int on_scope_end(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    enum { TS, TID, ID, IMPLICIT, NCOL };
    static const char *const names[NCOL] = {"ts_ns", "tid", "id", "implicit"};
    load_state_t *st = m->load_state;
    json_t *cols[NCOL];
    size_t rows;
    char why[160];
    if (gpufl__reader_columns(rec, names, cols, NCOL, IMPLICIT, &rows, why, sizeof why))
        return gpufl__model_bad_line(m, pos, "scope_end", "%s", why);
    size_t start = st->n_ends;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        int64_t v[NCOL];
        for (int c = 0; c < NCOL; c++) {
            if (cell_int(cols[c], r, 0, &v[c]) != 0) {
                st->n_ends = start;
                return gpufl__model_bad_line(m, pos, "scope_end", "row %zu: %s is not an integer",
                                             r, names[c]);
            }
        }
        if (v[TS] < lo) lo = v[TS];
        if (v[TS] > hi) hi = v[TS];
        int rc = gpufl__model_reserve((void **)&st->ends, &st->ends_alloc, st->n_ends,
                                      sizeof *st->ends, m->limits.max_scopes);
        if (rc < 0) return rc;
        if (rc) {
            over++;
            continue;
        }
        scope_end_row_t *e = &st->ends[st->n_ends++];
        e->ts_ns = v[TS];
        e->tid = v[TID];
        e->id = v[ID];
        e->implicit = v[IMPLICIT];
    }
    m->scope_ends_over_cap += over;
    if (rows) gpufl__model_note_ts(m, lo), gpufl__model_note_ts(m, hi);
    return 0;
}

static int on_host_sample(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
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
        gpufl_model_host_sample_t *s = &m->samples[m->n_samples++];
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

/* ---------------------------------------------------------------------- */
/* GPU records                                                              */
/* ---------------------------------------------------------------------- */

/* A value column: negative means unknown, like null. */
static int64_t nonneg_or_unknown(const json_t *v) {
    int64_t x = int_or_unknown(v);
    return x >= 0 ? x : GPUFL_MODEL_UNKNOWN;
}

/* Reads a device number (0 .. INT32_MAX). Returns 0 or -1. */
static int device_number(const json_t *v, int64_t *out) {
    return gpufl__reader_int(v, out) == 0 && *out >= 0 && *out <= INT32_MAX ? 0 : -1;
}

/* The entry of device, created (has_info 0, all unknown) when new. Returns
 * 0, 1 when the device cap is reached, or GPUFL_ENOMEM. */
static int gpu_slot(gpufl_model_t *m, int64_t device, gpufl_model_gpu_t **out) {
    size_t idx;
    if (gpufl__idmap_get(&m->gpu_index, (uint64_t)device + 1, &idx)) {
        *out = &m->gpus[idx];
        return 0;
    }
    int rc = gpufl__model_reserve((void **)&m->gpus, &m->gpus_alloc, m->n_gpus, sizeof *m->gpus,
                                  m->limits.max_gpus);
    if (rc) return rc;
    if (gpufl__idmap_put(&m->gpu_index, (uint64_t)device + 1, m->n_gpus, NULL) < 0)
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the device index");
    gpufl_model_gpu_t *g = &m->gpus[m->n_gpus++];
    memset(g, 0, sizeof *g);
    g->device = device;
    g->nvml_index = g->mig_index = GPUFL_MODEL_UNKNOWN;
    g->name = g->uuid = g->pci_bus_id = g->compute_capability = "";
    g->driver_version = g->nvml_version = "";
    g->sm_count = g->mem_total_bytes = g->cuda_driver_version = GPUFL_MODEL_UNKNOWN;
    g->mig_mode = g->gpm_supported = g->nvlink_links = GPUFL_MODEL_UNKNOWN;
    g->power_limit_mw = GPUFL_MODEL_UNKNOWN;
    g->procs_ts_ns = g->procs_count = g->procs_peak = GPUFL_MODEL_UNKNOWN;
    *out = g;
    return 0;
}

static int on_gpu_info(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t device;
    if (device_number(json_object_get(rec, "device"), &device))
        return gpufl__model_bad_line(m, pos, "gpu_info", "no device number");
    gpufl_model_gpu_t *g;
    int rc = gpu_slot(m, device, &g);
    if (rc < 0) return rc;
    if (rc) {
        m->gpus_over_cap++;
        return 0;
    }
    if (g->has_info) {
        const char *uuid = gpufl__model_json_str(rec, "uuid");
        if (uuid && strcmp(uuid, g->uuid) != 0)
            gpufl__model_warn(
                m, pos->name, pos->line,
                "gpu_info: device %lld described again as %s, first as %s (first kept)",
                (long long)device, uuid, g->uuid);
        return 0;
    }
    g->has_info = 1;
    g->name = gpufl__model_member_str(m, rec, "name");
    g->uuid = gpufl__model_member_str(m, rec, "uuid");
    g->pci_bus_id = gpufl__model_member_str(m, rec, "pci_bus_id");
    g->compute_capability = gpufl__model_member_str(m, rec, "compute_capability");
    g->driver_version = gpufl__model_member_str(m, rec, "driver_version");
    g->nvml_version = gpufl__model_member_str(m, rec, "nvml_version");
    if (!g->name || !g->uuid || !g->pci_bus_id || !g->compute_capability || !g->driver_version ||
        !g->nvml_version)
        return GPUFL_ENOMEM;
    g->nvml_index = nonneg_or_unknown(json_object_get(rec, "nvml_index"));
    g->mig_index = nonneg_or_unknown(json_object_get(rec, "mig_index"));
    g->sm_count = nonneg_or_unknown(json_object_get(rec, "sm_count"));
    g->mem_total_bytes = nonneg_or_unknown(json_object_get(rec, "mem_total_bytes"));
    g->cuda_driver_version = nonneg_or_unknown(json_object_get(rec, "cuda_driver_version"));
    g->mig_mode = nonneg_or_unknown(json_object_get(rec, "mig_mode"));
    g->gpm_supported = nonneg_or_unknown(json_object_get(rec, "gpm_supported"));
    g->nvlink_links = nonneg_or_unknown(json_object_get(rec, "nvlink_links"));
    g->power_limit_mw = nonneg_or_unknown(json_object_get(rec, "power_limit_mw"));
    return 0;
}

/* Bit names merge over records: a later name for a bit replaces the earlier. */
static int on_gpu_legend(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    json_t *names = json_object_get(rec, "throttle_reasons");
    if (!json_is_object(names))
        return gpufl__model_bad_line(m, pos, "gpu_legend", "throttle_reasons is not an object");
    const char *key;
    json_t *v;
    json_object_foreach(names, key, v) {
        char *end;
        if (!json_is_string(v) || *key < '0' || *key > '9') continue;
        unsigned long bit = strtoul(key, &end, 10);
        if (*end || bit >= GPUFL_MODEL_THROTTLE_BITS) continue; /* not a bit we can hold */
        const char *name = gpufl__model_pool_str(m, json_string_value(v), json_string_length(v));
        if (!name) return GPUFL_ENOMEM;
        m->throttle_names[bit] = name;
    }
    m->has_legend = 1;
    return 0;
}

static int on_gpu_processes(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t ts, device;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "gpu_processes", "no integer ts_ns");
    if (device_number(json_object_get(rec, "device"), &device))
        return gpufl__model_bad_line(m, pos, "gpu_processes", "no device number");
    json_t *pids = json_object_get(rec, "pid"), *used = json_object_get(rec, "used_bytes");
    if (!json_is_array(pids))
        return gpufl__model_bad_line(m, pos, "gpu_processes", "pid is not an array");
    size_t n = json_array_size(pids);
    if (used && !json_is_array(used))
        return gpufl__model_bad_line(m, pos, "gpu_processes", "used_bytes is not an array");
    if (used && json_array_size(used) != n)
        return gpufl__model_bad_line(m, pos, "gpu_processes", "pid has %zu entries, used_bytes %zu",
                                     n, json_array_size(used));
    int64_t v;
    for (size_t i = 0; i < n; i++) {
        if (gpufl__reader_int(json_array_get(pids, i), &v) != 0)
            return gpufl__model_bad_line(m, pos, "gpu_processes", "pid %zu is not an integer", i);
        if (used && gpufl__reader_int(json_array_get(used, i), &v) < 0)
            return gpufl__model_bad_line(m, pos, "gpu_processes",
                                         "used_bytes %zu is not an integer", i);
    }
    int64_t count = nonneg_or_unknown(json_object_get(rec, "count"));
    if (count < (int64_t)n) count = (int64_t)n; /* absent, or fewer than listed */
    gpufl__model_note_ts(m, ts);
    gpufl_model_gpu_t *g;
    int rc = gpu_slot(m, device, &g);
    if (rc < 0) return rc;
    if (rc) {
        m->gpus_over_cap++;
        return 0;
    }
    g->procs_records++;
    if (count > g->procs_peak) g->procs_peak = count;
    if (g->procs_ts_ns != GPUFL_MODEL_UNKNOWN && ts < g->procs_ts_ns) return 0; /* older */
    g->procs_ts_ns = ts;
    g->procs_count = count;
    g->n_procs = n < GPUFL_MODEL_GPU_PROCS_MAX ? n : GPUFL_MODEL_GPU_PROCS_MAX;
    for (size_t i = 0; i < g->n_procs; i++) {
        gpufl__reader_int(json_array_get(pids, i), &g->procs[i].pid);
        g->procs[i].used_bytes =
            used ? nonneg_or_unknown(json_array_get(used, i)) : GPUFL_MODEL_UNKNOWN;
    }
    return 0;
}

/* The gpu_sample columns: name, kind and where the value goes in a row. */
enum { GCOL_I64, GCOL_I32, GCOL_REAL };
enum { GCOL_TS = 0, GCOL_DEVICE = 1, GCOL_REQUIRED = 2 }; /* the first two: never unknown */
typedef struct gpu_col {
    int kind;
    size_t offset;
} gpu_col_t;

#define GCOL(kind, field)                                                                          \
    { kind, offsetof(gpufl_model_gpu_sample_t, field) }
static const char *const gpu_col_names[] = {"ts_ns",
                                            "device",
                                            "gpu_util_pct",
                                            "mem_util_pct",
                                            "mem_used_bytes",
                                            "mem_free_bytes",
                                            "mem_total_bytes",
                                            "temp_gpu_c",
                                            "temp_mem_c",
                                            "power_mw",
                                            "power_limit_mw",
                                            "energy_mj",
                                            "clock_sm_mhz",
                                            "clock_gfx_mhz",
                                            "clock_mem_mhz",
                                            "fan_pct",
                                            "pcie_tx_bytes_per_s",
                                            "pcie_rx_bytes_per_s",
                                            "throttle_reasons",
                                            "ecc_sbe_volatile",
                                            "ecc_dbe_volatile",
                                            "nvlink_tx_bytes_per_s",
                                            "nvlink_rx_bytes_per_s",
                                            "sm_active_pct",
                                            "sm_occupancy_pct",
                                            "tensor_active_pct",
                                            "dram_bw_util_pct"};
static const gpu_col_t gpu_cols[] = {
    GCOL(GCOL_I64, ts_ns),
    GCOL(GCOL_I32, device),
    GCOL(GCOL_I32, gpu_util_pct),
    GCOL(GCOL_I32, mem_util_pct),
    GCOL(GCOL_I64, mem_used_bytes),
    GCOL(GCOL_I64, mem_free_bytes),
    GCOL(GCOL_I64, mem_total_bytes),
    GCOL(GCOL_I32, temp_gpu_c),
    GCOL(GCOL_I32, temp_mem_c),
    GCOL(GCOL_I64, power_mw),
    GCOL(GCOL_I64, power_limit_mw),
    GCOL(GCOL_I64, energy_mj),
    GCOL(GCOL_I32, clock_sm_mhz),
    GCOL(GCOL_I32, clock_gfx_mhz),
    GCOL(GCOL_I32, clock_mem_mhz),
    GCOL(GCOL_I32, fan_pct),
    GCOL(GCOL_I64, pcie_tx_bytes_per_s),
    GCOL(GCOL_I64, pcie_rx_bytes_per_s),
    GCOL(GCOL_I64, throttle_reasons),
    GCOL(GCOL_I64, ecc_sbe_volatile),
    GCOL(GCOL_I64, ecc_dbe_volatile),
    GCOL(GCOL_I64, nvlink_tx_bytes_per_s),
    GCOL(GCOL_I64, nvlink_rx_bytes_per_s),
    GCOL(GCOL_REAL, sm_active_pct),
    GCOL(GCOL_REAL, sm_occupancy_pct),
    GCOL(GCOL_REAL, tensor_active_pct),
    GCOL(GCOL_REAL, dram_bw_util_pct),
};
#undef GCOL
#define GPU_NCOL (sizeof gpu_cols / sizeof gpu_cols[0])
_Static_assert(sizeof gpu_col_names / sizeof gpu_col_names[0] == GPU_NCOL,
               "a name and a slot for every gpu_sample column");

/* Only ts_ns and device are required: a missing column means "unknown". */
static int on_gpu_sample(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    json_t *cols[GPU_NCOL];
    size_t rows;
    char why[160];
    if (gpufl__reader_columns(rec, gpu_col_names, cols, GPU_NCOL, GCOL_REQUIRED, &rows, why,
                              sizeof why))
        return gpufl__model_bad_line(m, pos, "gpu_sample", "%s", why);
    size_t start = m->n_gpu_samples;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        gpufl_model_gpu_sample_t row;
        for (size_t c = 0; c < GPU_NCOL; c++) {
            json_t *cell = cols[c] ? json_array_get(cols[c], r) : NULL;
            char *slot = (char *)&row + gpu_cols[c].offset;
            int real = gpu_cols[c].kind == GCOL_REAL;
            double d = GPUFL_MODEL_UNKNOWN;
            int64_t x = GPUFL_MODEL_UNKNOWN;
            int rc = real ? gpufl__reader_num(cell, &d) : gpufl__reader_int(cell, &x);
            if (rc < 0 || (c < GCOL_REQUIRED && rc != 0)) {
                m->n_gpu_samples = start;
                return gpufl__model_bad_line(m, pos, "gpu_sample", "row %zu: %s is not a%s", r,
                                             gpu_col_names[c], real ? " number" : "n integer");
            }
            if (real) {
                if (d < 0) d = GPUFL_MODEL_UNKNOWN;
                memcpy(slot, &d, sizeof d);
                continue;
            }
            if (c >= GCOL_REQUIRED && x < 0) x = GPUFL_MODEL_UNKNOWN; /* negative: unknown */
            if (gpu_cols[c].kind == GCOL_I64) {
                memcpy(slot, &x, sizeof x);
                continue;
            }
            if (x > INT32_MAX || (c == GCOL_DEVICE && x < 0)) {
                m->n_gpu_samples = start;
                return gpufl__model_bad_line(m, pos, "gpu_sample",
                                             "row %zu: %s %lld is out of range", r,
                                             gpu_col_names[c], (long long)x);
            }
            int32_t x32 = (int32_t)x;
            memcpy(slot, &x32, sizeof x32);
        }
        if (row.ts_ns < lo) lo = row.ts_ns;
        if (row.ts_ns > hi) hi = row.ts_ns;
        int rc =
            gpufl__model_reserve((void **)&m->gpu_samples, &m->gpu_samples_alloc, m->n_gpu_samples,
                                 sizeof *m->gpu_samples, m->limits.max_gpu_samples);
        if (rc < 0) return rc;
        if (rc) {
            over++;
            continue;
        }
        m->gpu_samples[m->n_gpu_samples++] = row;
    }
    m->gpu_samples_over_cap += over;
    if (rows) gpufl__model_note_ts(m, lo), gpufl__model_note_ts(m, hi);
    return 0;
}

/* One entry per source; a later record of the same source replaces it. */
static int on_source_cost(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    const char *source = gpufl__model_json_str(rec, "source");
    if (!source || !*source) return gpufl__model_bad_line(m, pos, "source_cost", "no source name");
    gpufl_model_source_cost_t *c = NULL;
    for (size_t i = 0; i < m->n_source_costs && !c; i++)
        if (strcmp(m->source_costs[i].source, source) == 0) c = &m->source_costs[i];
    if (!c) {
        int rc = gpufl__model_reserve((void **)&m->source_costs, &m->source_costs_alloc,
                                      m->n_source_costs, sizeof *m->source_costs, MAX_SOURCE_COSTS);
        if (rc < 0) return rc;
        if (rc) return 0; /* more sources than any writer has: not kept */
        c = &m->source_costs[m->n_source_costs];
        c->source = gpufl__model_member_str(m, rec, "source");
        if (!c->source) return GPUFL_ENOMEM;
        m->n_source_costs++;
    }
    c->file = pos->file;
    c->samples = nonneg_or_unknown(json_object_get(rec, "samples"));
    c->total_ns = nonneg_or_unknown(json_object_get(rec, "total_ns"));
    c->mean_ns = nonneg_or_unknown(json_object_get(rec, "mean_ns"));
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Trace records                                                            */
/* ---------------------------------------------------------------------- */

/* A decimal string too long for int64 (an id a framework made up). */
static int big_decimal(const json_t *cell) {
    if (!json_is_string(cell)) return 0;
    const char *s = json_string_value(cell);
    size_t len = json_string_length(cell);
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return len >= 19;
}

/* The cells of one trace batch: JSON arrays, or the reader's column view of
 * a batch it scanned without jansson (view set). */
typedef struct trace_src {
    json_t *cols[TRACE_COLS_MAX];
    const gpufl_reader_column_t *view_cols[TRACE_COLS_MAX];
    const gpufl_reader_batch_t *view;
} trace_src_t;

/* Reads cell (r, c) as gpufl__reader_int does; *big is set for a decimal
 * string past int64. */
static int trace_cell(const trace_src_t *src, int c, size_t r, int64_t *out, int *big) {
    *big = 0;
    if (src->view) {
        const gpufl_reader_column_t *col = src->view_cols[c];
        if (!col || col->is_null[r]) return 1;
        *out = col->values[r];
        return 0;
    }
    json_t *cell = src->cols[c] ? json_array_get(src->cols[c], r) : NULL;
    int rc = gpufl__reader_int(cell, out);
    if (rc < 0) *big = big_decimal(cell);
    return rc;
}

/* Reads row r of a batch into v. Returns 0, or -1 with why set. */
static int trace_row(const trace_cols_t *t, const trace_src_t *src, size_t r, int64_t *v, char *why,
                     size_t why_size) {
    for (int c = 0; c < t->ncol; c++) {
        int big;
        int rc = trace_cell(src, c, r, &v[c], &big);
        if (c >= t->n_required && (rc == 1 || (rc < 0 && big))) {
            v[c] = GPUFL_MODEL_UNKNOWN;
            continue;
        }
        if (rc != 0) {
            snprintf(why, why_size, "row %zu: %s is not an integer", r, t->names[c]);
            return -1;
        }
        if (v[c] < 0 || (t->max[c] && v[c] > t->max[c])) {
            snprintf(why, why_size, "row %zu: %s %lld is out of range", r, t->names[c],
                     (long long)v[c]);
            return -1;
        }
    }
    if (!t->instant && v[1] < v[0]) {
        snprintf(why, why_size, "row %zu: end_ns %lld is before start_ns %lld", r, (long long)v[1],
                 (long long)v[0]);
        return -1;
    }
    return 0;
}

/* Looks up the columns of a scanned batch as gpufl__reader_columns does (the
 * scanner only accepts columns of one length). Returns 0, or -1 with why. */
static int view_columns(const gpufl_reader_batch_t *b, const trace_cols_t *t, trace_src_t *src,
                        size_t *rows, char *why, size_t why_size) {
    for (int c = 0; c < t->ncol; c++) {
        src->view_cols[c] = gpufl__reader_batch_column(b, t->names[c]);
        if (!src->view_cols[c] && c < t->n_required) {
            snprintf(why, why_size, "column \"%s\" missing", t->names[c]);
            return -1;
        }
    }
    src->view = b;
    *rows = b->rows;
    return 0;
}

/* Loads the rows of a trace batch (kernel, copy, memset), from rec or from
 * the scanned batch view, each row checked by trace_row and handed to fill.
 * A bad row rolls the whole line back; rows past the cap are counted. */
int gpufl__model_load_rows(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec,
                           const gpufl_reader_batch_t *view, const trace_cols_t *t, row_array_t a,
                           void (*fill)(void *row, const int64_t *v)) {
    trace_src_t src;
    size_t rows;
    char why[160];
    src.view = NULL;
    if (view ? view_columns(view, t, &src, &rows, why, sizeof why)
             : gpufl__reader_columns(rec, t->names, src.cols, (size_t)t->ncol,
                                     (size_t)t->n_required, &rows, why, sizeof why))
        return gpufl__model_bad_line(m, pos, t->type, "%s", why);
    size_t start = *a.n;
    uint64_t over_start = *a.over_cap;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        int64_t v[TRACE_COLS_MAX];
        if (trace_row(t, &src, r, v, why, sizeof why)) {
            *a.n = start;
            *a.over_cap = over_start;
            return gpufl__model_bad_line(m, pos, t->type, "%s", why);
        }
        if (v[0] < lo) lo = v[0];
        if (v[t->instant ? 0 : 1] > hi) hi = v[t->instant ? 0 : 1];
        int rc;
        void *row = gpufl__model_append_row(a, &rc);
        if (row)
            fill(row, v);
        else if (rc)
            return rc;
    }
    if (rows) gpufl__model_note_ts(m, lo), gpufl__model_note_ts(m, hi);
    return 0;
}

/* A scope column: 0 (never a scope id) reads as none, like null. */
static int64_t scope_id(int64_t v) { return v > 0 ? v : GPUFL_MODEL_UNKNOWN; }

enum kernel_col {
    K_START,
    K_END,
    K_DEVICE,
    K_STREAM,
    K_CORR,
    K_NAME,
    K_GX,
    K_GY,
    K_GZ,
    K_BX,
    K_BY,
    K_BZ,
    K_REGS,
    K_SSMEM,
    K_DSMEM,
    K_LOCAL, /* optional from here on: older logs lack them */
    K_GRAPH,
    K_GRAPH_NODE,
    K_DEMANGLED,
    K_SCOPE,
    K_CONFIG,
    K_EXT_KIND,
    K_EXT_ID,
    K_LAUNCH,
    K_TID,
    K_STACK,
    K_NCOL
};

static void fill_kernel(void *row, const int64_t *v) {
    gpufl_model_kernel_t *k = row;
    k->start_ns = v[K_START];
    k->end_ns = v[K_END];
    k->stream = v[K_STREAM];
    k->correlation = v[K_CORR];
    k->name_id = v[K_NAME];
    k->demangled_id = v[K_DEMANGLED] > 0 ? v[K_DEMANGLED] : 0;
    k->name = k->demangled = NULL;
    k->static_smem_bytes = v[K_SSMEM];
    k->dynamic_smem_bytes = v[K_DSMEM];
    k->local_bytes_per_thread = v[K_LOCAL];
    k->graph_id = v[K_GRAPH];
    k->graph_node = v[K_GRAPH_NODE];
    k->scope = scope_id(v[K_SCOPE]);
    k->config = v[K_CONFIG] > 0 ? v[K_CONFIG] : GPUFL_MODEL_UNKNOWN;
    k->external_kind = v[K_EXT_KIND];
    k->external_id = v[K_EXT_ID];
    k->launch_ns = v[K_LAUNCH];
    k->tid = v[K_TID];
    k->stack = v[K_STACK] > 0 ? v[K_STACK] : GPUFL_MODEL_UNKNOWN;
    k->device = (int32_t)v[K_DEVICE];
    k->grid_x = (int32_t)v[K_GX];
    k->grid_y = (int32_t)v[K_GY];
    k->grid_z = (int32_t)v[K_GZ];
    k->block_x = (int32_t)v[K_BX];
    k->block_y = (int32_t)v[K_BY];
    k->block_z = (int32_t)v[K_BZ];
    k->registers = (int32_t)v[K_REGS];
}

static int on_kernel(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec,
                     const gpufl_reader_batch_t *view) {
    static const char *const names[K_NCOL] = {"start_ns",
                                              "end_ns",
                                              "device",
                                              "stream",
                                              "correlation",
                                              "name",
                                              "grid_x",
                                              "grid_y",
                                              "grid_z",
                                              "block_x",
                                              "block_y",
                                              "block_z",
                                              "registers",
                                              "static_smem_bytes",
                                              "dynamic_smem_bytes",
                                              "local_bytes_per_thread",
                                              "graph_id",
                                              "graph_node",
                                              "demangled",
                                              "scope",
                                              "config",
                                              "external_kind",
                                              "external_id",
                                              "launch_ns",
                                              "tid",
                                              "stack"};
    static const int64_t max[K_NCOL] = {
        [K_DEVICE] = INT32_MAX, [K_GX] = INT32_MAX, [K_GY] = INT32_MAX, [K_GZ] = INT32_MAX,
        [K_BX] = INT32_MAX,     [K_BY] = INT32_MAX, [K_BZ] = INT32_MAX, [K_REGS] = INT32_MAX};
    static const trace_cols_t t = {"kernel", names, max, K_NCOL, K_LOCAL, 0};
    return gpufl__model_load_rows(m, pos, rec, view, &t, ROWS(m, kernels, max_kernels),
                                  fill_kernel);
}

enum copy_col { C_START, C_END, C_DEVICE, C_BYTES, C_KIND, C_SRC, C_DST, C_SCOPE, C_NCOL };

static void fill_copy(void *row, const int64_t *v) {
    gpufl_model_copy_t *c = row;
    c->start_ns = v[C_START];
    c->end_ns = v[C_END];
    c->bytes = v[C_BYTES];
    c->device = (int32_t)v[C_DEVICE];
    c->copy_kind = (int32_t)v[C_KIND];
    c->src_kind = (int32_t)v[C_SRC];
    c->dst_kind = (int32_t)v[C_DST];
    c->scope = scope_id(v[C_SCOPE]);
}

static int on_copy(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec,
                   const gpufl_reader_batch_t *view) {
    static const char *const names[C_NCOL] = {"start_ns",  "end_ns",   "device",   "bytes",
                                              "copy_kind", "src_kind", "dst_kind", "scope"};
    static const int64_t max[C_NCOL] = {
        [C_DEVICE] = INT32_MAX, [C_KIND] = INT32_MAX, [C_SRC] = INT32_MAX, [C_DST] = INT32_MAX};
    static const trace_cols_t t = {"copy", names, max, C_NCOL, C_SCOPE, 0};
    size_t first = m->n_copies;
    int rc = gpufl__model_load_rows(m, pos, rec, view, &t, ROWS(m, copies, max_copies), fill_copy);
    gpufl__compat_copies(m, first, rec, view);
    return rc;
}

enum memset_col { M_START, M_END, M_DEVICE, M_BYTES, M_KIND, M_SCOPE, M_NCOL };

static void fill_memset(void *row, const int64_t *v) {
    gpufl_model_memset_t *s = row;
    s->start_ns = v[M_START];
    s->end_ns = v[M_END];
    s->bytes = v[M_BYTES];
    s->scope = scope_id(v[M_SCOPE]);
    s->device = (int32_t)v[M_DEVICE];
    s->memory_kind = (int32_t)v[M_KIND];
}

static int on_memset(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec,
                     const gpufl_reader_batch_t *view) {
    static const char *const names[M_NCOL] = {"start_ns", "end_ns",      "device",
                                              "bytes",    "memory_kind", "scope"};
    static const int64_t max[M_NCOL] = {[M_DEVICE] = INT32_MAX, [M_KIND] = INT32_MAX};
    static const trace_cols_t t = {"memset", names, max, M_NCOL, M_SCOPE, 0};
    size_t first = m->n_memsets;
    int rc =
        gpufl__model_load_rows(m, pos, rec, view, &t, ROWS(m, memsets, max_memsets), fill_memset);
    gpufl__compat_memsets(m, first, rec, view);
    return rc;
}

enum sync_col {
    S_START,
    S_END,
    S_TYPE,
    S_TID,
    S_CORR,
    S_STREAM,
    S_EVENT,
    S_SCOPE,
    S_STACK,
    S_NCOL
};

static void fill_sync(void *row, const int64_t *v) {
    gpufl_model_sync_t *s = row;
    s->start_ns = v[S_START];
    s->end_ns = v[S_END];
    s->sync_type = (int32_t)v[S_TYPE];
    s->tid = v[S_TID];
    s->correlation = v[S_CORR];
    s->stream = v[S_STREAM];
    s->event = v[S_EVENT];
    s->scope = scope_id(v[S_SCOPE]);
    s->stack = v[S_STACK] > 0 ? v[S_STACK] : GPUFL_MODEL_UNKNOWN;
}

static int on_sync(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec,
                   const gpufl_reader_batch_t *view) {
    static const char *const names[S_NCOL] = {"start_ns", "end_ns",      "sync_type",
                                              "tid",      "correlation", "stream",
                                              "event",    "scope",       "stack"};
    static const int64_t max[S_NCOL] = {[S_TYPE] = INT32_MAX};
    static const trace_cols_t t = {"sync", names, max, S_NCOL, S_TID, 0};
    size_t first = m->n_syncs;
    int rc = gpufl__model_load_rows(m, pos, rec, view, &t, ROWS(m, syncs, max_syncs), fill_sync);
    gpufl__compat_syncs(m, first, rec, view);
    return rc;
}

enum launch_col {
    L_TS,
    L_CORR,
    L_TID, /* optional from here on: null where unknown */
    L_CONTEXT,
    L_CONFIG,
    L_SCOPE,
    L_EXT_KIND,
    L_EXT_ID,
    L_STACK,
    L_NCOL
};

static void fill_launch(void *row, const int64_t *v) {
    gpufl_model_launch_t *l = row;
    l->ts_ns = v[L_TS];
    l->tid = (int32_t)v[L_TID];
    l->correlation = v[L_CORR];
    l->context = (int32_t)v[L_CONTEXT];
    l->config = v[L_CONFIG] > 0 ? (int32_t)v[L_CONFIG] : GPUFL_MODEL_UNKNOWN;
    l->config_index = GPUFL_MODEL_UNKNOWN;
    l->scope = scope_id(v[L_SCOPE]);
    l->external_kind = (int32_t)v[L_EXT_KIND];
    l->external_id = v[L_EXT_ID];
    l->stack = v[L_STACK] > 0 ? v[L_STACK] : GPUFL_MODEL_UNKNOWN;
}

/* launch rows (engines that time no kernels): ids that pass int32 (thread ids, CUPTI's
 * context ids, kernel_config ids never do) make the line malformed. */
static int on_launch(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec,
                     const gpufl_reader_batch_t *view) {
    static const char *const names[L_NCOL] = {"ts_ns",         "correlation", "tid",
                                              "context",       "config",      "scope",
                                              "external_kind", "external_id", "stack"};
    static const int64_t max[L_NCOL] = {[L_TID] = INT32_MAX,
                                        [L_CONTEXT] = INT32_MAX,
                                        [L_CONFIG] = INT32_MAX,
                                        [L_EXT_KIND] = INT32_MAX};
    static const trace_cols_t t = {"launch", names, max, L_NCOL, L_TID, 1};
    return gpufl__model_load_rows(m, pos, rec, view, &t, ROWS(m, launches, max_launches),
                                  fill_launch);
}

const char *gpufl__model_sync_name(int32_t sync_type) {
    switch (sync_type) {
    case GPUFL_MODEL_SYNC_EVENT: return "cudaEventSynchronize";
    case GPUFL_MODEL_SYNC_WAIT_EVENT: return "cudaStreamWaitEvent";
    case GPUFL_MODEL_SYNC_STREAM: return "cudaStreamSynchronize";
    case GPUFL_MODEL_SYNC_CONTEXT: return "cudaDeviceSynchronize";
    default: return "synchronization";
    }
}

/* An address written as "0x..." hex (or a plain integer): 0 and *out, or -1. */
static int hex_member(const json_t *rec, const char *key, uint64_t *out) {
    json_t *v = json_object_get(rec, key);
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (!json_is_string(v)) return -1;
    const char *str = json_string_value(v);
    if (strncmp(str, "0x", 2) != 0 || str[2] == '\0') return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(str + 2, &end, 16);
    if (*end != '\0' || errno) return -1;
    *out = x;
    return 0;
}

/* Modules whose frames are not the application's: CUDA, gpufl, the C and C++
 * runtimes, the loader, and the Python interpreter's own code. Matched
 * against the file name's start. */
static int runtime_module(const char *path) {
    static const char *const prefixes[] = {
        "libcuda.",  "libcudart", "libcupti",   "libgpufl", "libnvidia-", "libc.so",
        "libc-",     "libstdc++", "libgcc_s",   "ld-linux", "libpthread", "libdl.",
        "libm.so",   "libunwind", "libpython3", "python3",  "libtorch",   "libc10",
        "libcublas", "libcudnn",  "libnccl",    "libdw.",   "libelf."};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (*base == '\0') return 1; /* no module: not known to be the application's */
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    return 0;
}

static int on_frame(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t id;
    if (gpufl__reader_int(json_object_get(rec, "id"), &id) != 0 || id <= 0)
        return gpufl__model_bad_line(m, pos, "frame", "no positive integer id");
    size_t seen;
    if (gpufl__idmap_get(&m->frame_index, (uint64_t)id, &seen)) return 0; /* first kept */
    int rc;
    gpufl_model_frame_t *f = gpufl__model_append_row(ROWS(m, frames, max_frames), &rc);
    if (!f) return rc;
    f->id = id;
    if (hex_member(rec, "pc", &f->pc)) f->pc = 0;
    if (hex_member(rec, "offset", &f->offset)) f->offset = 0;
    f->module = gpufl__model_member_str(m, rec, "module");
    f->function = gpufl__model_member_str(m, rec, "function");
    f->file = gpufl__model_member_str(m, rec, "file");
    f->source = gpufl__model_member_str(m, rec, "source");
    f->language = gpufl__model_member_str(m, rec, "language");
    if (!f->module || !f->function || !f->file || !f->source || !f->language) return GPUFL_ENOMEM;
    int64_t line;
    f->line = gpufl__reader_int(json_object_get(rec, "line"), &line) == 0 && line > 0 ? line : 0;
    /* An interpreted frame is the application's unless its interpreter
     * said it is library code (absent: not known to be the application's). */
    f->user =
        *f->language ? json_is_false(json_object_get(rec, "library")) : !runtime_module(f->module);
    if (gpufl__idmap_put(&m->frame_index, (uint64_t)id, m->n_frames - 1, NULL) < 0)
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the frame index");
    return 0;
}

/* An operation name (gpufl_ops.h): the first record for an index is kept. */
static int on_op(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t index;
    if (gpufl__reader_int(json_object_get(rec, "index"), &index) != 0 || index <= 0 ||
        index > GPUFL_OPS_MAX)
        return gpufl__model_bad_line(m, pos, "op", "no index in 1..%d", GPUFL_OPS_MAX);
    if (!json_is_string(json_object_get(rec, "name")))
        return gpufl__model_bad_line(m, pos, "op", "no name");
    if ((size_t)index > m->n_op_names) {
        size_t n = m->n_op_names ? m->n_op_names : 64;
        while (n < (size_t)index) n *= 2;
        const char **grown = realloc(m->op_names, n * sizeof *grown);
        if (grown == NULL) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for op names");
        memset(grown + m->n_op_names, 0, (n - m->n_op_names) * sizeof *grown);
        m->op_names = grown;
        m->n_op_names = n;
    }
    if (m->op_names[index - 1] != NULL) return 0;
    m->op_names[index - 1] = gpufl__model_member_str(m, rec, "name");
    return m->op_names[index - 1] ? 0 : GPUFL_ENOMEM;
}

const char *gpufl__model_op_name(const gpufl_model_t *m, int64_t external_kind,
                                 int64_t external_id) {
    if (external_kind != GPUFL_MODEL_EXTERNAL_OPS || external_id <= 0) return NULL;
    uint64_t index = (uint64_t)external_id >> GPUFL_OPS_CALL_BITS;
    return index >= 1 && index <= m->n_op_names ? m->op_names[index - 1] : NULL;
}

/* A stack's frame ids are kept as ids until every frame record is read
 * (stack_frames holds ids then), and turned into indices after reading. */
static int on_stack(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t id;
    if (gpufl__reader_int(json_object_get(rec, "id"), &id) != 0 || id <= 0)
        return gpufl__model_bad_line(m, pos, "stack", "no positive integer id");
    json_t *frames = json_object_get(rec, "frames");
    if (!json_is_array(frames))
        return gpufl__model_bad_line(m, pos, "stack", "frames is not an array");
    size_t depth = json_array_size(frames);
    if (depth > GPUFL_MODEL_STACK_DEPTH_MAX)
        return gpufl__model_bad_line(m, pos, "stack", "%zu frames (at most %d)", depth,
                                     GPUFL_MODEL_STACK_DEPTH_MAX);
    for (size_t i = 0; i < depth; i++) {
        int64_t f;
        if (gpufl__reader_int(json_array_get(frames, i), &f) != 0 || f <= 0)
            return gpufl__model_bad_line(m, pos, "stack", "frame %zu is not a positive integer id",
                                         i);
    }
    size_t seen;
    if (gpufl__idmap_get(&m->stack_index, (uint64_t)id, &seen)) return 0; /* first kept */
    int rc;
    gpufl_model_stack_t *s = gpufl__model_append_row(ROWS(m, stacks, max_stacks), &rc);
    if (!s) return rc;
    for (size_t i = 0; i < depth && !rc; i++) /* reserve makes room for one more */
        rc = gpufl__model_reserve((void **)&m->stack_frames, &m->stack_frames_alloc,
                                  m->n_stack_frames + i, sizeof *m->stack_frames,
                                  SIZE_MAX / sizeof *m->stack_frames);
    if (rc) {
        m->n_stacks--;
        return rc < 0 ? rc : GPUFL_ENOMEM;
    }
    s->id = id;
    s->first = m->n_stack_frames;
    s->depth = depth;
    for (size_t i = 0; i < depth; i++) {
        int64_t f;
        gpufl__reader_int(json_array_get(frames, i), &f);
        m->stack_frames[m->n_stack_frames++] = (size_t)f;
    }
    if (gpufl__idmap_put(&m->stack_index, (uint64_t)id, m->n_stacks - 1, NULL) < 0)
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the stack index");
    return 0;
}

/* One record per launch configuration; a second record for an id is
 * counted and skipped (the writer never repeats one). */
static int on_kernel_config(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t id, device;
    if (gpufl__reader_int(json_object_get(rec, "id"), &id) != 0 || id <= 0)
        return gpufl__model_bad_line(m, pos, "kernel_config", "no positive integer id");
    json_t *dev = json_object_get(rec, "device");
    if (!dev || json_is_null(dev))
        device = GPUFL_MODEL_UNKNOWN;
    else if (device_number(dev, &device))
        return gpufl__model_bad_line(m, pos, "kernel_config", "device is not a device number");
    size_t seen;
    if (gpufl__idmap_get(&m->config_index, (uint64_t)id, &seen)) {
        m->configs_duplicate++;
        return 0;
    }
    int rc;
    gpufl_model_kernel_config_t *c = gpufl__model_append_row(ROWS(m, configs, max_configs), &rc);
    if (!c) return rc;
    c->id = id;
    c->device = (int32_t)device;
    c->ts_ns = int_or_unknown(json_object_get(rec, "ts_ns"));
    gpufl__model_note_ts(m, c->ts_ns);
    c->limiter = gpufl__model_member_str(m, rec, "limiter");
    c->occupancy_why = gpufl__model_member_str(m, rec, "occupancy_unknown");
    if (!c->limiter || !c->occupancy_why || name_member(m, rec, &c->name_id, &c->name))
        return GPUFL_ENOMEM;
    static const struct {
        const char *key;
        size_t offset;
    } ints[] = {
#define CFG_INT(field) {#field, offsetof(gpufl_model_kernel_config_t, field)}
        CFG_INT(block_threads), CFG_INT(dynamic_smem_bytes),     CFG_INT(static_smem_bytes),
        CFG_INT(registers),     CFG_INT(local_bytes_per_thread), CFG_INT(max_threads_per_block),
        CFG_INT(blocks_per_sm), CFG_INT(active_warps),           CFG_INT(max_warps),
        CFG_INT(limit_warps),   CFG_INT(limit_registers),        CFG_INT(limit_smem),
        CFG_INT(limit_blocks),
#undef CFG_INT
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int64_t v = nonneg_or_unknown(json_object_get(rec, ints[i].key));
        memcpy((char *)c + ints[i].offset, &v, sizeof v);
    }
    double occ;
    c->occupancy = gpufl__reader_num(json_object_get(rec, "occupancy"), &occ) == 0 && occ >= 0
                       ? occ
                       : GPUFL_MODEL_UNKNOWN;
    json_t *agrees = json_object_get(rec, "breakdown_agrees");
    c->breakdown_agrees = json_is_boolean(agrees) ? json_is_true(agrees) : GPUFL_MODEL_UNKNOWN;
    if (gpufl__idmap_put(&m->config_index, (uint64_t)id, m->n_configs - 1, NULL) < 0)
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the kernel_config index");
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Dispatch                                                                 */
/* ---------------------------------------------------------------------- */

static int on_record(void *user, const gpufl_reader_pos_t *pos, const char *type, json_t *rec) {
    gpufl_model_t *m = user;
    enum {
        HEADER,
        OPTIONS,
        CAPABILITIES,
        HOST_INFO,
        SCOPE_BEGIN,
        SCOPE_END,
        HOST_SAMPLE,
        SYSTEM_START,
        SYSTEM_STOP,
        EVENT,
        DROPS,
        SESSION_END,
        GPU_INFO,
        GPU_LEGEND,
        GPU_SAMPLE,
        GPU_PROCESSES,
        SOURCE_COST,
        KERNEL,
        COPY,
        MEMSET,
        KERNEL_CONFIG,
        TRACE_STATS,
        SYNC,
        FRAME,
        STACK,
        PC_SAMPLING,
        PC_SAMPLE,
        PC_WINDOW,
        PC_STATS,
        SASS,
        LAUNCH,
        SASS_METRICS,
        SASS_METRIC,
        SASSM_STATS,
        RANGE_PROFILER,
        RANGE_METRICS,
        RANGE_STATS,
        OP,
        NTYPES
    };
    static const char *const types[NTYPES] = {"header",
                                              "options",
                                              "capabilities",
                                              "host_info",
                                              "scope_begin",
                                              "scope_end",
                                              "host_sample",
                                              "system_start",
                                              "system_stop",
                                              "event",
                                              "drops",
                                              "session_end",
                                              "gpu_info",
                                              "gpu_legend",
                                              "gpu_sample",
                                              "gpu_processes",
                                              "source_cost",
                                              "kernel",
                                              "copy",
                                              "memset",
                                              "kernel_config",
                                              "trace_stats",
                                              "sync",
                                              "frame",
                                              "stack",
                                              "pc_sampling",
                                              "pc_sample",
                                              "pc_window",
                                              "pc_sampling_stats",
                                              "sass",
                                              "launch",
                                              "sass_metrics",
                                              "sass_metric",
                                              "sass_metrics_stats",
                                              "range_profiler",
                                              "range_metrics",
                                              "range_profiler_stats",
                                              "op"};
    int t = 0;
    while (t < NTYPES && strcmp(type, types[t]) != 0) t++;
    if (t == NTYPES) return 1; /* unknown types are skipped */
    if (!gpufl__compat_known(type, json_integer_value(json_object_get(rec, "v")))) {
        m->unknown_versions++;
        return 1;
    }
    switch (t) {
    case HEADER: return on_header(m, pos, rec);
    case OPTIONS: return keep_record(&m->options, rec);
    case CAPABILITIES: return keep_record(&m->capabilities, rec);
    case HOST_INFO: return keep_record(&m->host_info, rec);
    case SCOPE_BEGIN: return on_scope_begin(m, pos, rec);
    case SCOPE_END: return on_scope_end(m, pos, rec);
    case HOST_SAMPLE: return on_host_sample(m, pos, rec);
    case SYSTEM_START: return on_window(m, pos, type, rec, 0);
    case SYSTEM_STOP: return on_window(m, pos, type, rec, 1);
    case EVENT: return on_event(m, pos, rec);
    case DROPS: return on_drops(m, pos, rec);
    case SESSION_END: return on_session_end(m, pos, rec);
    case GPU_INFO: return on_gpu_info(m, pos, rec);
    case GPU_LEGEND: return on_gpu_legend(m, pos, rec);
    case GPU_SAMPLE: return on_gpu_sample(m, pos, rec);
    case GPU_PROCESSES: return on_gpu_processes(m, pos, rec);
    case SOURCE_COST: return on_source_cost(m, pos, rec);
    case KERNEL: return on_kernel(m, pos, rec, NULL);
    case COPY: return on_copy(m, pos, rec, NULL);
    case MEMSET: return on_memset(m, pos, rec, NULL);
    case KERNEL_CONFIG: return on_kernel_config(m, pos, rec);
    case TRACE_STATS: return keep_record(&m->trace_stats, rec);
    case SYNC: return on_sync(m, pos, rec, NULL);
    case FRAME: return on_frame(m, pos, rec);
    case STACK: return on_stack(m, pos, rec);
    case PC_SAMPLING: return gpufl__model_on_pc_sampling(m, pos, rec);
    case PC_SAMPLE: return gpufl__model_on_pc_sample(m, pos, rec, NULL);
    case PC_WINDOW: return gpufl__model_on_pc_window(m, pos, rec, NULL);
    case PC_STATS: return gpufl__model_keep_last(&m->pc_stats, rec);
    case SASS: return gpufl__model_on_sass(m, pos, rec);
    case LAUNCH: return on_launch(m, pos, rec, NULL);
    case SASS_METRICS: return gpufl__model_on_sass_metrics(m, pos, rec);
    case SASS_METRIC: return gpufl__model_on_sass_metric(m, pos, rec, NULL);
    case SASSM_STATS: return gpufl__model_keep_last(&m->sassm_stats, rec);
    case RANGE_PROFILER: return gpufl__model_on_range_profiler(m, pos, rec);
    case RANGE_METRICS: return gpufl__model_on_range_metrics(m, pos, rec);
    case RANGE_STATS: return gpufl__model_keep_last(&m->range_stats, rec);
    case OP: return on_op(m, pos, rec);
    default: return 1;
    }
}

/* Batches the reader scanned without jansson (see reader.h). */
static const char *const scanned_types[] = {
    "kernel", "copy", "memset", "sync", "pc_sample", "pc_window", "launch", "sass_metric", NULL};

static int on_batch(void *user, const gpufl_reader_pos_t *pos, const gpufl_reader_batch_t *b) {
    gpufl_model_t *m = user;
    if (!gpufl__compat_known(b->type, b->version)) {
        m->unknown_versions++;
        return 1;
    }
    if (strcmp(b->type, "kernel") == 0) return on_kernel(m, pos, NULL, b);
    if (strcmp(b->type, "copy") == 0) return on_copy(m, pos, NULL, b);
    if (strcmp(b->type, "memset") == 0) return on_memset(m, pos, NULL, b);
    if (strcmp(b->type, "sync") == 0) return on_sync(m, pos, NULL, b);
    if (strcmp(b->type, "launch") == 0) return on_launch(m, pos, NULL, b);
    if (strcmp(b->type, "pc_sample") == 0) return gpufl__model_on_pc_sample(m, pos, NULL, b);
    if (strcmp(b->type, "pc_window") == 0) return gpufl__model_on_pc_window(m, pos, NULL, b);
    if (strcmp(b->type, "sass_metric") == 0) return gpufl__model_on_sass_metric(m, pos, NULL, b);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* After reading                                                            */
/* ---------------------------------------------------------------------- */

const char *gpufl__model_resolve(gpufl_model_t *m, int64_t id) {
    const char *s = gpufl__dict_get(&m->dict, id);
    if (s) return s;
    m->undefined_ids++;
    return "?";
}

static int join_scopes(gpufl_model_t *m) {
    load_state_t *st = m->load_state;
    for (size_t i = 0; i < m->n_scopes; i++) {
        int rc = gpufl__idmap_put(&m->scope_index, (uint64_t)m->scopes[i].id, i, NULL);
        if (rc < 0) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the scope index");
        if (rc == 1) st->scope_ids_duplicate++;
    }
    for (size_t i = 0; i < st->n_ends; i++) {
        const scope_end_row_t *e = &st->ends[i];
        size_t idx;
        if (e->id <= 0 || !gpufl__idmap_get(&m->scope_index, (uint64_t)e->id, &idx)) {
            m->scope_ends_unmatched++;
            int rc = gpufl__model_add_lost_scope(m, e);
            if (rc) return rc;
            continue;
        }
        gpufl_model_scope_t *s = &m->scopes[idx];
        if (!s->open) {
            m->scope_ends_duplicate++;
            continue;
        }
        s->open = 0;
        s->end_ns = e->ts_ns;
        s->implicit = e->implicit != 0;
        if (s->end_ns < s->begin_ns) st->scopes_backwards++;
    }
    m->n_open_scopes = 0;
    for (size_t i = 0; i < m->n_scopes; i++) {
        gpufl_model_scope_t *s = &m->scopes[i];
        s->name = gpufl__model_resolve(m, s->name_id);
        s->tag = gpufl__model_resolve(m, s->tag_id);
        s->path = gpufl__model_resolve(m, s->path_id);
        if (s->open) m->n_open_scopes++;
    }
    return gpufl__model_name_lost_scopes(m);
}

static int cmp_gpu(const void *a, const void *b) {
    int64_t x = ((const gpufl_model_gpu_t *)a)->device, y = ((const gpufl_model_gpu_t *)b)->device;
    return x < y ? -1 : x > y;
}

/* Gives the device of a row an entry. *last: the device of the previous row
 * (rows of one device often come in runs). */
static int note_device(gpufl_model_t *m, int64_t d, int64_t *last) {
    if (d == *last) return 0;
    gpufl_model_gpu_t *g;
    int rc = gpu_slot(m, d, &g);
    if (rc < 0) return rc;
    if (rc) {
        m->gpus_over_cap++; /* its rows stay, with no device entry */
        return 0;
    }
    *last = d;
    return 0;
}

/* Gives every device a sample, kernel, copy or memset names an entry, then
 * sorts the devices by number and rebuilds the index. Resolves kernel names
 * and counts kernel rows whose config id no kernel_config record has. */
static int finish_gpus(gpufl_model_t *m) {
    int64_t last = -1;
    int rc = 0;
    for (size_t i = 0; i < m->n_gpu_samples && !rc; i++)
        rc = note_device(m, m->gpu_samples[i].device, &last);
    for (size_t i = 0; i < m->n_kernels && !rc; i++) {
        gpufl_model_kernel_t *k = &m->kernels[i];
        k->name = gpufl__model_resolve(m, k->name_id);
        k->demangled = k->demangled_id ? gpufl__model_resolve(m, k->demangled_id) : k->name;
        if (k->config > 0 && !gpufl__model_config_find(m, k->config)) m->configs_missing++;
        rc = note_device(m, k->device, &last);
    }
    for (size_t i = 0; i < m->n_copies && !rc; i++) rc = note_device(m, m->copies[i].device, &last);
    for (size_t i = 0; i < m->n_memsets && !rc; i++)
        rc = note_device(m, m->memsets[i].device, &last);
    for (size_t i = 0; i < m->n_configs; i++)
        if (m->configs[i].name_id)
            m->configs[i].name = gpufl__model_resolve(m, m->configs[i].name_id);
    if (rc) return rc;
    if (m->n_gpus < 2) return 0;
    qsort(m->gpus, m->n_gpus, sizeof *m->gpus, cmp_gpu);
    gpufl__idmap_fini(&m->gpu_index);
    gpufl__idmap_init(&m->gpu_index);
    for (size_t i = 0; i < m->n_gpus; i++)
        if (gpufl__idmap_put(&m->gpu_index, (uint64_t)m->gpus[i].device + 1, i, NULL) < 0)
            return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the device index");
    return 0;
}

/* A mangled name and its demangled form, as some row of the log gave them. */
typedef struct name_pair {
    const char *name, *demangled;
} name_pair_t;

static int cmp_name_pair(const void *a, const void *b) {
    return strcmp(((const name_pair_t *)a)->name, ((const name_pair_t *)b)->name);
}

/* The demangled form of a config's name: as pc_sample or kernel rows of the
 * same function wrote it (the recording process demangled it), else from
 * this process's demangler, else the name itself. */
static const char *config_demangled(gpufl_model_t *m, const name_pair_t *pairs, size_t n,
                                    const char *name) {
    name_pair_t key = {name, NULL};
    const name_pair_t *p = n ? bsearch(&key, pairs, n, sizeof *pairs, cmp_name_pair) : NULL;
    if (p) return p->demangled;
    char *d = *name ? gpufl__demangle(name) : NULL;
    if (!d) return name;
    const char *s = gpufl__model_pool_str(m, d, strlen(d));
    free(d);
    return s;
}

/* The distinct (mangled, demangled) names of pc_sample and kernel rows, by
 * dict id of the mangled name, into *pairs (sorted by name). */
static int collect_names(gpufl_model_t *m, name_pair_t **pairs, size_t *n) {
    gpufl_idmap_t seen;
    gpufl__idmap_init(&seen);
    size_t alloc = 0;
    int64_t last = 0;
    int rc = 0;
    *pairs = NULL;
    *n = 0;
    for (size_t i = 0; i < m->n_pc_samples + m->n_kernels && !rc; i++) {
        int64_t id;
        const char *name, *d;
        if (i < m->n_pc_samples) {
            const gpufl_model_pc_sample_t *r = &m->pc_samples[i];
            id = r->function;
            name = gpufl__model_str(m, r->function);
            d = gpufl__model_str(m, r->demangled);
        } else {
            const gpufl_model_kernel_t *k = &m->kernels[i - m->n_pc_samples];
            id = k->name_id;
            name = k->name;
            d = k->demangled;
        }
        if (id <= 0 || !name || !d || id == last) continue; /* rows of one name come in runs */
        last = id;
        int put = gpufl__idmap_put(&seen, (uint64_t)id, *n, NULL);
        if (put < 0 || (put == 0 && gpufl__model_reserve((void **)pairs, &alloc, *n, sizeof **pairs,
                                                         SIZE_MAX / 2)))
            rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for kernel names");
        else if (put == 0)
            (*pairs)[(*n)++] = (name_pair_t){name, d};
    }
    gpufl__idmap_fini(&seen);
    if (!rc && *n > 1) qsort(*pairs, *n, sizeof **pairs, cmp_name_pair);
    return rc;
}

/* Names every kernel_config record in full (demangled too) and joins launch
 * rows with their records, counting the ids no record has. */
static int finish_launches(gpufl_model_t *m) {
    name_pair_t *pairs = NULL;
    size_t n = 0;
    int rc = m->n_configs ? collect_names(m, &pairs, &n) : 0;
    for (size_t i = 0; i < m->n_configs && !rc; i++) {
        gpufl_model_kernel_config_t *c = &m->configs[i];
        c->demangled = config_demangled(m, pairs, n, c->name);
        if (!c->demangled) rc = GPUFL_ENOMEM;
    }
    free(pairs);
    for (size_t i = 0; i < m->n_launches && !rc; i++) {
        gpufl_model_launch_t *l = &m->launches[i];
        const gpufl_model_kernel_config_t *c = gpufl__model_config_find(m, l->config);
        if (c)
            l->config_index = (int32_t)(c - m->configs);
        else if (l->config > 0)
            m->configs_missing++;
    }
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Scope paths                                                              */
/* ---------------------------------------------------------------------- */

static int cmp_scope_path_tag(const void *a, const void *b) {
    const gpufl_model_scope_t *x = *(const gpufl_model_scope_t *const *)a;
    const gpufl_model_scope_t *y = *(const gpufl_model_scope_t *const *)b;
    int c = strcmp(x->path, y->path);
    if (c) return c;
    c = strcmp(x->tag, y->tag);
    if (c) return c;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The index of the first len bytes of path in the sorted paths, or -1. */
static long path_find(const gpufl_model_t *m, const char *path, size_t len) {
    size_t lo = 0, hi = m->n_scope_paths;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strncmp(m->scope_paths[mid].path, path, len);
        if (c == 0 && m->scope_paths[mid].path[len] != '\0') c = 1;
        if (c == 0) return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The enclosing path of path i: the path of a parent instance, else the
 * longest existing '/' prefix. */
static long path_parent(const gpufl_model_t *m, size_t i, int64_t parent_scope) {
    const gpufl_model_scope_t *p = gpufl__model_scope_find(m, parent_scope);
    if (p) {
        long k = path_find(m, p->path, strlen(p->path));
        if (k >= 0 && (size_t)k != i) return k;
    }
    const char *path = m->scope_paths[i].path;
    size_t len = strlen(path);
    while (len > 0) {
        while (len > 0 && path[len - 1] != '/') len--;
        if (len == 0) break;
        len--; /* drop the '/' */
        long k = path_find(m, path, len);
        if (k >= 0) return k;
    }
    return -1;
}

/* Adds one instance to its path's host figures. */
static void path_add(gpufl_model_scope_path_t *p, const gpufl_model_scope_t *s) {
    if (s->lost) { /* an end without its begin: no time to add */
        p->lost++;
        return;
    }
    if (s->open) {
        p->open++;
        return;
    }
    /* in double: any two int64 times from a damaged log may differ by more than int64 holds */
    double d = s->end_ns > s->begin_ns ? (double)s->end_ns - (double)s->begin_ns : 0.0;
    if (p->calls == 0 || d < p->min_ns) p->min_ns = d;
    if (p->calls == 0 || d > p->max_ns) p->max_ns = d;
    p->calls++;
    p->total_ns += d;
    p->implicit += s->implicit;
    if (s->repeat > 0) {
        p->bench_total_ns += d;
        p->bench_iters += s->repeat;
    }
}

/* Links the paths to their parents (dropping links that would form a
 * cycle) and sets their depths. parent_scope: a parent instance per path. */
static int link_paths(gpufl_model_t *m, const int64_t *parent_scope) {
    gpufl_model_scope_path_t *p = m->scope_paths;
    size_t n = m->n_scope_paths;
    for (size_t i = 0; i < n; i++) p[i].parent = path_parent(m, i, parent_scope[i]);
    for (size_t i = 0; i < n; i++) {
        long k = p[i].parent;
        size_t steps = 0;
        while (k >= 0 && steps <= n) k = p[k].parent, steps++;
        if (steps > n) p[i].parent = -1;
    }
    uint8_t *known = calloc(n, 1);
    if (!known) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the scope paths");
    for (size_t i = 0; i < n; i++) {
        size_t steps = 0;
        long k = (long)i;
        while (k >= 0 && !known[k]) steps++, k = p[k].parent;
        size_t d = (k >= 0 ? p[k].depth + 1 : 0) + steps - 1;
        for (k = (long)i; k >= 0 && !known[k]; k = p[k].parent) p[k].depth = d--, known[k] = 1;
    }
    free(known);
    return 0;
}

/* Groups the scope instances into paths, sorted by path; lost scopes (an
 * end without a begin) whose path is known keep their place in the tree. */
static int build_paths(gpufl_model_t *m) {
    size_t n = m->n_scopes, np = 0;
    for (size_t i = 0; i < m->n_lost_scopes; i++) n += m->lost_scopes[i].path != NULL;
    if (!n) return 0;
    int rc = 0;
    int64_t *parent_scope = NULL;
    gpufl_model_scope_t **by_path = malloc(n * sizeof *by_path);
    if (!by_path) goto out_of_memory;
    for (size_t i = 0; i < m->n_scopes; i++) by_path[i] = &m->scopes[i];
    for (size_t i = 0, k = m->n_scopes; i < m->n_lost_scopes; i++)
        if (m->lost_scopes[i].path) by_path[k++] = &m->lost_scopes[i];
    qsort(by_path, n, sizeof *by_path, cmp_scope_path_tag);
    for (size_t i = 0; i < n; i++) np += i == 0 || strcmp(by_path[i - 1]->path, by_path[i]->path);
    m->scope_paths = calloc(np, sizeof *m->scope_paths);
    parent_scope = calloc(np, sizeof *parent_scope);
    if (!m->scope_paths || !parent_scope) goto out_of_memory;
    m->n_scope_paths = np;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        gpufl_model_scope_t *s = by_path[i];
        gpufl_model_scope_path_t *p = k ? &m->scope_paths[k - 1] : NULL;
        if (!p || strcmp(p->path, s->path) != 0) {
            p = &m->scope_paths[k++];
            p->path = s->path;
            p->name = s->name;
            if (*s->tag) p->tags = 1;
        } else if (*s->tag && strcmp(by_path[i - 1]->tag, s->tag) != 0) {
            p->tags++;
        }
        s->path_index = k - 1;
        if (!parent_scope[k - 1] && s->parent > 0) parent_scope[k - 1] = s->parent;
        path_add(p, s);
    }
    /* When a name could not be resolved, show the last part of the path. */
    for (size_t i = 0; i < np; i++) {
        gpufl_model_scope_path_t *p = &m->scope_paths[i];
        if (strcmp(p->name, "?") == 0 && strcmp(p->path, "?") != 0) {
            const char *slash = strrchr(p->path, '/');
            p->name = slash ? slash + 1 : p->path;
        }
    }
    rc = link_paths(m, parent_scope);
    goto free_temp;
out_of_memory:
    rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for the scope paths");
free_temp:
    free(by_path);
    free(parent_scope);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* GPU time per scope                                                       */
/* ---------------------------------------------------------------------- */

/* Where a kernel's time is listed: slot n_scope_paths is no scope, the one
 * after it an unknown scope. */
typedef struct kernel_ref {
    size_t slot;
    size_t rank; /* the name's place in strcmp order; equal names, equal rank */
    const char *name;
    double ns;
} kernel_ref_t;

static int cmp_kernel_ref(const void *a, const void *b) {
    const kernel_ref_t *x = a, *y = b;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sets refs[i].rank so that sorting by rank orders as strcmp on the names
 * would, comparing each distinct name string once instead of per kernel (a
 * session has few names and many kernels). */
static int rank_kernel_names(kernel_ref_t *refs, size_t n) {
    gpufl_idmap_t seen; /* name pointer -> index in names */
    const char **names = NULL;
    size_t *rank = NULL, n_names = 0, alloc = 0;
    int rc = 0;
    gpufl__idmap_init(&seen);
    for (size_t i = 0; i < n && !rc; i++) {
        size_t idx;
        rc = gpufl__idmap_put(&seen, (uint64_t)(uintptr_t)refs[i].name, n_names, &idx);
        if (rc == 1) {
            refs[i].rank = idx;
            rc = 0;
        } else if (rc == 0) {
            if (n_names == alloc) {
                size_t grown = alloc ? alloc * 2 : 64;
                const char **p = realloc(names, grown * sizeof *p);
                if (!p) {
                    rc = GPUFL_ENOMEM;
                    break;
                }
                names = p;
                alloc = grown;
            }
            refs[i].rank = n_names;
            names[n_names++] = refs[i].name;
        }
    }
    const char **sorted = rc ? NULL : malloc((n_names ? n_names : 1) * sizeof *sorted);
    rank = rc ? NULL : malloc((n_names ? n_names : 1) * sizeof *rank);
    if (!rc && (!sorted || !rank)) rc = GPUFL_ENOMEM;
    if (!rc) {
        memcpy(sorted, names, n_names * sizeof *sorted);
        qsort(sorted, n_names, sizeof *sorted, cmp_str_ptr);
        for (size_t i = 0, r = 0; i < n_names; i++) {
            if (i > 0 && strcmp(sorted[i], sorted[i - 1]) != 0) r = i;
            size_t idx;
            gpufl__idmap_get(&seen, (uint64_t)(uintptr_t)sorted[i], &idx);
            rank[idx] = r;
        }
        for (size_t i = 0; i < n; i++) refs[i].rank = rank[refs[i].rank];
    }
    free(sorted);
    free(rank);
    free(names);
    gpufl__idmap_fini(&seen);
    if (rc) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for GPU time per scope");
    return 0;
}

static gpufl_model_scope_gpu_t *gpu_of_slot(gpufl_model_t *m, size_t slot) {
    if (slot < m->n_scope_paths) return &m->scope_paths[slot].gpu;
    return slot == m->n_scope_paths ? &m->gpu_no_scope : &m->gpu_unknown_scope;
}

/* The slot of a row's scope instance id. */
static size_t gpu_slot_of(gpufl_model_t *m, int64_t scope) {
    size_t idx;
    if (scope <= 0) return m->n_scope_paths;
    m->gpu_scoped_rows++;
    if (!gpufl__idmap_get(&m->scope_index, (uint64_t)scope, &idx)) return m->n_scope_paths + 1;
    return m->scopes[idx].path_index;
}

/* Keeps the GPUFL_MODEL_TOP_KERNELS largest names, by time then name. */
static void top_insert(gpufl_model_scope_gpu_t *g, const char *name, uint64_t calls, double ns) {
    size_t i = g->n_top;
    while (i > 0 && (g->top[i - 1].total_ns < ns ||
                     (g->top[i - 1].total_ns == ns && strcmp(g->top[i - 1].name, name) > 0)))
        i--;
    if (i >= GPUFL_MODEL_TOP_KERNELS) return;
    size_t kept = g->n_top < GPUFL_MODEL_TOP_KERNELS ? g->n_top : GPUFL_MODEL_TOP_KERNELS - 1;
    memmove(&g->top[i + 1], &g->top[i], (kept - i) * sizeof g->top[0]);
    g->top[i] = (gpufl_model_top_kernel_t){name, calls, ns};
    if (g->n_top < GPUFL_MODEL_TOP_KERNELS) g->n_top++;
}

static void work_add(gpufl_model_gpu_work_t *to, const gpufl_model_gpu_work_t *w) {
    to->kernels += w->kernels;
    to->copies += w->copies;
    to->memsets += w->memsets;
    to->kernel_ns += w->kernel_ns;
    to->copy_ns += w->copy_ns;
    to->memset_ns += w->memset_ns;
}

/* Attributes every kernel, copy and memset to the scope path of its scope
 * instance, lists each path's top kernels, and adds each path's own work to
 * the totals of its ancestors. */
static int attribute_gpu(gpufl_model_t *m) {
    kernel_ref_t *refs = NULL;
    if (m->n_kernels) {
        refs = malloc(m->n_kernels * sizeof *refs);
        if (!refs) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for GPU time per scope");
    }
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl_model_kernel_t *k = &m->kernels[i];
        size_t slot = gpu_slot_of(m, k->scope);
        gpufl_model_gpu_work_t *w = &gpu_of_slot(m, slot)->self;
        double ns = (double)(k->end_ns - k->start_ns);
        w->kernels++;
        w->kernel_ns += ns;
        refs[i] = (kernel_ref_t){slot, 0, k->demangled, ns};
    }
    for (size_t i = 0; i < m->n_copies; i++) {
        gpufl_model_gpu_work_t *w = &gpu_of_slot(m, gpu_slot_of(m, m->copies[i].scope))->self;
        w->copies++;
        w->copy_ns += (double)(m->copies[i].end_ns - m->copies[i].start_ns);
    }
    for (size_t i = 0; i < m->n_memsets; i++) {
        gpufl_model_gpu_work_t *w = &gpu_of_slot(m, gpu_slot_of(m, m->memsets[i].scope))->self;
        w->memsets++;
        w->memset_ns += (double)(m->memsets[i].end_ns - m->memsets[i].start_ns);
    }
    if (refs) {
        int rc = rank_kernel_names(refs, m->n_kernels);
        if (rc) {
            free(refs);
            return rc;
        }
        qsort(refs, m->n_kernels, sizeof *refs, cmp_kernel_ref);
    }
    for (size_t i = 0, j; i < m->n_kernels; i = j) {
        double ns = 0;
        for (j = i;
             j < m->n_kernels && refs[j].slot == refs[i].slot && refs[j].rank == refs[i].rank; j++)
            ns += refs[j].ns;
        gpufl_model_scope_gpu_t *g = gpu_of_slot(m, refs[i].slot);
        g->kernel_names++;
        top_insert(g, refs[i].name, (uint64_t)(j - i), ns);
    }
    free(refs);
    for (size_t i = 0; i < m->n_scope_paths; i++)
        for (long k = (long)i; k >= 0; k = m->scope_paths[k].parent)
            work_add(&m->scope_paths[k].gpu.total, &m->scope_paths[i].gpu.self);
    work_add(&m->gpu_no_scope.total, &m->gpu_no_scope.self);
    work_add(&m->gpu_unknown_scope.total, &m->gpu_unknown_scope.self);
    return 0;
}

static void summarize(gpufl_model_t *m) {
    load_state_t *st = m->load_state;
    for (size_t i = 0; i < m->n_windows; i++)
        if (m->windows[i].name_id)
            m->windows[i].name = gpufl__model_resolve(m, m->windows[i].name_id);
    /* Counted problems, each said once with its count. */
    const struct {
        uint64_t count;
        const char *what;
    } problems[] = {
        {st->scope_ids_duplicate, "scope_begin rows repeat an id already begun (first kept)"},
        {m->scope_ends_unmatched, "scope_end rows match no scope_begin"},
        {m->scope_ends_duplicate, "scope_end rows end a scope already ended"},
        {st->scopes_backwards, "scopes end before they begin"},
        {m->undefined_ids, "references to dict ids that no dict line defines"},
        {m->unknown_versions, "records of a newer version skipped"},
    };
    for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++)
        if (problems[i].count)
            gpufl__model_warn(m, "", 0, "%llu %s", (unsigned long long)problems[i].count,
                              problems[i].what);
    const struct {
        uint64_t count;
        const char *what;
        size_t cap;
    } caps[] = {
        {m->dict.over_cap, "dict entries", m->dict.max_entries},
        {m->scopes_over_cap, "scope rows", m->limits.max_scopes},
        {m->scope_ends_over_cap, "scope_end rows", m->limits.max_scopes},
        {m->samples_over_cap, "host samples", m->limits.max_samples},
        {m->windows_over_cap, "system_start/stop records", m->limits.max_windows},
        {m->events_over_cap, "events", m->limits.max_events},
        {m->gpu_samples_over_cap, "GPU samples", m->limits.max_gpu_samples},
        {m->kernels_over_cap, "kernel rows", m->limits.max_kernels},
        {m->copies_over_cap, "copy rows", m->limits.max_copies},
        {m->memsets_over_cap, "memset rows", m->limits.max_memsets},
        {m->configs_over_cap, "kernel_config records", m->limits.max_configs},
        {m->syncs_over_cap, "sync rows", m->limits.max_syncs},
        {m->launches_over_cap, "launch rows", m->limits.max_launches},
        {m->frames_over_cap, "frame records", m->limits.max_frames},
        {m->stacks_over_cap, "stack records", m->limits.max_stacks},
        {m->pc_samples_over_cap, "pc_sample rows", m->limits.max_pc_samples},
        {m->pc_windows_over_cap, "pc_window rows", m->limits.max_pc_windows},
        {m->sass_insns_over_cap, "sass instructions", m->limits.max_sass_insns},
        {m->sass_metrics_over_cap, "sass_metric rows", m->limits.max_sass_metrics},
        {m->ranges_over_cap, "range_metrics records", GPUFL_MODEL_MAX_RANGES},
    };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        if (caps[i].count)
            gpufl__model_warn(m, "", 0, "%llu %s past the cap of %zu, not kept",
                              (unsigned long long)caps[i].count, caps[i].what, caps[i].cap);
    if (m->configs_duplicate)
        gpufl__model_warn(m, "", 0, "%llu kernel_config records repeat an id (the first kept)",
                          (unsigned long long)m->configs_duplicate);
    if (m->configs_missing)
        gpufl__model_warn(m, "", 0, "%llu %s rows name a kernel_config id that no record has",
                          (unsigned long long)m->configs_missing,
                          m->n_launches ? "kernel or launch" : "kernel");
    if (m->stacks_missing)
        gpufl__model_warn(m, "", 0, "%llu stack references name a stack or frame no record defines",
                          (unsigned long long)m->stacks_missing);
    const gpufl_model_gpu_work_t *u = &m->gpu_unknown_scope.self;
    if (u->kernels + u->copies + u->memsets)
        gpufl__model_warn(
            m, "", 0,
            "%llu kernel, copy or memset rows name a scope id that scope.log does not have",
            (unsigned long long)(u->kernels + u->copies + u->memsets));
    if (m->gpus_over_cap)
        gpufl__model_warn(m, "", 0, "%llu GPU records name devices past the cap of %zu devices",
                          (unsigned long long)m->gpus_over_cap, m->limits.max_gpus);
}

/* Turns the frame ids of stacks into indices into frames (SIZE_MAX for an
 * undefined one) and counts references to undefined stacks and frames. */
static void join_stacks(gpufl_model_t *m) {
    for (size_t i = 0; i < m->n_stack_frames; i++) {
        size_t idx;
        if (gpufl__idmap_get(&m->frame_index, (uint64_t)m->stack_frames[i], &idx)) {
            m->stack_frames[i] = idx;
        } else {
            m->stack_frames[i] = SIZE_MAX;
            m->stacks_missing++;
        }
    }
    size_t idx;
    for (size_t i = 0; i < m->n_kernels; i++)
        if (m->kernels[i].stack > 0 &&
            !gpufl__idmap_get(&m->stack_index, (uint64_t)m->kernels[i].stack, &idx))
            m->stacks_missing++;
    for (size_t i = 0; i < m->n_syncs; i++)
        if (m->syncs[i].stack > 0 &&
            !gpufl__idmap_get(&m->stack_index, (uint64_t)m->syncs[i].stack, &idx))
            m->stacks_missing++;
}

/* ---------------------------------------------------------------------- */
/* Public                                                                   */
/* ---------------------------------------------------------------------- */

static void set_limits(gpufl_model_limits_t *out, const gpufl_model_limits_t *in) {
    gpufl_model_limits_t d = {0};
    if (in) d = *in;
    out->max_scopes = d.max_scopes ? d.max_scopes : DEFAULT_MAX_ROWS;
    out->max_samples = d.max_samples ? d.max_samples : DEFAULT_MAX_ROWS;
    out->max_windows = d.max_windows ? d.max_windows : DEFAULT_MAX_RECORDS;
    out->max_events = d.max_events ? d.max_events : DEFAULT_MAX_RECORDS;
    out->max_warnings = d.max_warnings ? d.max_warnings : DEFAULT_MAX_WARNINGS;
    out->max_dict = d.max_dict;                 /* 0: the dict's default */
    out->max_string_bytes = d.max_string_bytes; /* 0: the pools' default */
    out->max_line_bytes = d.max_line_bytes;     /* 0: the reader's default */
    out->max_gpus = d.max_gpus ? d.max_gpus : DEFAULT_MAX_GPUS;
    out->max_gpu_samples = d.max_gpu_samples ? d.max_gpu_samples : DEFAULT_MAX_ROWS;
    out->max_kernels = d.max_kernels ? d.max_kernels : DEFAULT_MAX_ROWS;
    out->max_copies = d.max_copies ? d.max_copies : DEFAULT_MAX_ROWS;
    out->max_memsets = d.max_memsets ? d.max_memsets : DEFAULT_MAX_ROWS;
    out->max_configs = d.max_configs ? d.max_configs : DEFAULT_MAX_RECORDS;
    out->max_syncs = d.max_syncs ? d.max_syncs : DEFAULT_MAX_ROWS;
    out->max_launches = d.max_launches ? d.max_launches : DEFAULT_MAX_ROWS;
    out->max_frames = d.max_frames ? d.max_frames : DEFAULT_MAX_RECORDS;
    out->max_stacks = d.max_stacks ? d.max_stacks : DEFAULT_MAX_RECORDS;
    out->max_pc_samples = d.max_pc_samples ? d.max_pc_samples : (size_t)64 << 20;
    out->max_pc_windows = d.max_pc_windows ? d.max_pc_windows : DEFAULT_MAX_RECORDS;
    out->max_sass_insns = d.max_sass_insns ? d.max_sass_insns : DEFAULT_MAX_ROWS;
    out->max_sass_metrics = d.max_sass_metrics ? d.max_sass_metrics : DEFAULT_MAX_ROWS;
}

int gpufl__model_load_limits(const char *session_dir, const gpufl_model_limits_t *limits,
                             gpufl_model_t **out) {
    *out = NULL;
    gpufl_model_t *m = calloc(1, sizeof *m);
    if (!m) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a session model");
    load_state_t st;
    memset(&st, 0, sizeof st);
    set_limits(&m->limits, limits);
    gpufl__dict_init(&m->dict, m->limits.max_dict, m->limits.max_string_bytes);
    gpufl__strpool_init(&m->strings, m->limits.max_string_bytes);
    gpufl__idmap_init(&m->scope_index);
    gpufl__idmap_init(&m->gpu_index);
    gpufl__idmap_init(&m->config_index);
    gpufl__idmap_init(&m->frame_index);
    gpufl__idmap_init(&m->stack_index);
    m->first_ts_ns = m->last_ts_ns = GPUFL_MODEL_UNKNOWN;
    m->header.session_id = m->header.app_name = m->header.hostname = "";
    m->header.clock = m->header.gpufl_version = "";
    m->header.pid = m->header.epoch_unix_us = GPUFL_MODEL_UNKNOWN;
    m->load_state = &st;

    gpufl_reader_ops_t ops = {.record = on_record,
                              .warn = on_warn,
                              .batch_types = scanned_types,
                              .batch = on_batch,
                              .damaged = gpufl__model_on_damaged};
    gpufl_reader_limits_t rl = {.max_line_bytes = m->limits.max_line_bytes,
                                .progress = limits ? limits->progress : NULL,
                                .progress_user = limits ? limits->progress_user : NULL};
    int rc = gpufl__reader_read_session(session_dir, &ops, m, &m->dict, &rl, &m->read);
    if (rc == 0) rc = join_scopes(m);
    if (rc == 0) rc = finish_gpus(m);
    if (rc == 0) rc = build_paths(m);
    if (rc == 0) rc = attribute_gpu(m);
    if (rc == 0) join_stacks(m);
    if (rc == 0) rc = gpufl__model_finish_pc(m);
    if (rc == 0) gpufl__model_finish_sassm(m);
    if (rc == 0) rc = finish_launches(m);
    if (rc == 0) rc = gpufl__model_attribute_pc(m);
    if (rc == 0) summarize(m);
    free(st.ends);
    free(st.salvaged);
    m->load_state = NULL;
    if (rc) {
        gpufl__model_destroy(m);
        return rc;
    }
    *out = m;
    return 0;
}

int gpufl__model_load(const char *session_dir, gpufl_model_t **out) {
    return gpufl__model_load_limits(session_dir, NULL, out);
}

void gpufl__model_destroy(gpufl_model_t *m) {
    if (!m) return;
    json_decref(m->options);
    json_decref(m->capabilities);
    json_decref(m->host_info);
    json_decref(m->trace_stats);
    json_decref(m->drops.rec);
    json_decref(m->session_end.rec);
    free(m->scopes);
    gpufl__model_free_lost(m);
    free(m->samples);
    free(m->windows);
    free(m->events);
    free(m->warnings);
    free(m->gpus);
    free(m->gpu_samples);
    free(m->kernels);
    free(m->copies);
    free(m->memsets);
    free(m->configs);
    free(m->syncs);
    free(m->launches);
    free(m->frames);
    free(m->op_names);
    free(m->stacks);
    free(m->stack_frames);
    gpufl__model_free_pc(m);
    gpufl__model_free_sassm(m);
    gpufl__model_free_range(m);
    gpufl__idmap_fini(&m->frame_index);
    gpufl__idmap_fini(&m->stack_index);
    free(m->scope_paths);
    free(m->source_costs);
    gpufl__idmap_fini(&m->scope_index);
    gpufl__idmap_fini(&m->gpu_index);
    gpufl__idmap_fini(&m->config_index);
    gpufl__dict_fini(&m->dict);
    gpufl__strpool_fini(&m->strings);
    free(m);
}

const char *gpufl__model_str(const gpufl_model_t *m, int64_t id) {
    return gpufl__dict_get(&m->dict, id);
}

const gpufl_model_scope_t *gpufl__model_scope_find(const gpufl_model_t *m, int64_t id) {
    size_t idx;
    if (id <= 0 || !gpufl__idmap_get(&m->scope_index, (uint64_t)id, &idx)) return NULL;
    return &m->scopes[idx];
}

const gpufl_model_scope_path_t *gpufl__model_scope_path_find(const gpufl_model_t *m,
                                                             const char *path) {
    long k = path_find(m, path, strlen(path));
    return k >= 0 ? &m->scope_paths[k] : NULL;
}

const gpufl_model_kernel_config_t *gpufl__model_config_find(const gpufl_model_t *m, int64_t id) {
    size_t idx;
    if (id <= 0 || !gpufl__idmap_get(&m->config_index, (uint64_t)id, &idx)) return NULL;
    return &m->configs[idx];
}

double gpufl__model_gpu_ns(const gpufl_model_gpu_work_t *w) {
    return w->kernel_ns + w->copy_ns + w->memset_ns;
}

const gpufl_model_kernel_config_t *gpufl__model_launch_config(const gpufl_model_t *m,
                                                              const gpufl_model_launch_t *l) {
    return l->config_index >= 0 ? &m->configs[l->config_index] : NULL;
}

const char *gpufl__model_launch_name(const gpufl_model_t *m, const gpufl_model_launch_t *l) {
    const gpufl_model_kernel_config_t *c = gpufl__model_launch_config(m, l);
    return c && *c->demangled ? c->demangled : "?";
}

const gpufl_model_gpu_t *gpufl__model_gpu_find(const gpufl_model_t *m, int64_t device) {
    size_t idx;
    if (device < 0 || !gpufl__idmap_get(&m->gpu_index, (uint64_t)device + 1, &idx)) return NULL;
    return &m->gpus[idx];
}

const gpufl_model_source_cost_t *gpufl__model_source_cost(const gpufl_model_t *m,
                                                          const char *source) {
    for (size_t i = 0; i < m->n_source_costs; i++)
        if (strcmp(m->source_costs[i].source, source) == 0) return &m->source_costs[i];
    return NULL;
}

const gpufl_model_stack_t *gpufl__model_stack_find(const gpufl_model_t *m, int64_t id) {
    size_t idx;
    if (id <= 0 || !gpufl__idmap_get(&m->stack_index, (uint64_t)id, &idx)) return NULL;
    return &m->stacks[idx];
}

const gpufl_model_frame_t *gpufl__model_stack_frame(const gpufl_model_t *m,
                                                    const gpufl_model_stack_t *s, size_t i) {
    if (s == NULL || i >= s->depth) return NULL;
    size_t idx = m->stack_frames[s->first + i];
    return idx < m->n_frames ? &m->frames[idx] : NULL;
}

const gpufl_model_frame_t *gpufl__model_stack_site(const gpufl_model_t *m, int64_t stack_id) {
    const gpufl_model_stack_t *s = gpufl__model_stack_find(m, stack_id);
    const gpufl_model_frame_t *first_user = NULL;
    for (size_t i = 0; s && i < s->depth; i++) {
        const gpufl_model_frame_t *f = gpufl__model_stack_frame(m, s, i);
        if (f == NULL || !f->user) continue;
        if (f->line > 0 && *f->file) return f;
        if (first_user == NULL) first_user = f;
    }
    return first_user;
}
