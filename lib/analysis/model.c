/*
 * model.c - builds the session model from the records the reader hands over.
 *
 * Batch lines are applied row by row straight into the model's arrays (no
 * allocation per row, columns looked up once per line); a line with a bad
 * cell is rolled back whole, reported and skipped. Scope begins and ends are
 * joined after everything is read, so their order across lines, threads and
 * segments does not matter.
 */
#include "analysis/model.h"

#include "core/error.h"

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

/* A scope_end row, kept until the join. */
typedef struct scope_end_row {
    int64_t ts_ns, tid, id;
    int64_t implicit;
} scope_end_row_t;

typedef struct load_state {
    scope_end_row_t *ends;
    size_t n_ends, ends_alloc;
    uint64_t scope_ids_duplicate;
    uint64_t scopes_backwards; /* end before begin */
} load_state_t;

/* ---------------------------------------------------------------------- */
/* Small helpers                                                            */
/* ---------------------------------------------------------------------- */

/* Makes room for one more element. Returns 0, 1 when the cap is reached (the
 * caller counts the row), or GPUFL_ENOMEM. */
static int reserve(void **data, size_t *alloc, size_t n, size_t elem, size_t max) {
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

static const char *pool_str(gpufl_model_t *m, const char *s, size_t len) {
    const char *out;
    if (gpufl__strpool_add(&m->strings, s, len, &out)) return NULL;
    return out;
}

/* A string member of obj copied into the model, "" when absent; NULL only
 * when out of memory. */
static const char *member_str(gpufl_model_t *m, const json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v)) return "";
    return pool_str(m, json_string_value(v), json_string_length(v));
}

const char *gpufl__model_json_str(const json_t *obj, const char *key) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void note_ts(gpufl_model_t *m, int64_t ts) {
    if (ts < 0) return;
    if (m->first_ts_ns == GPUFL_MODEL_UNKNOWN || ts < m->first_ts_ns) m->first_ts_ns = ts;
    if (ts > m->last_ts_ns) m->last_ts_ns = ts;
}

static void add_warning(gpufl_model_t *m, const char *file, uint64_t line, const char *fmt, ...)
    GPUFL__PRINTF(4, 5);

static void add_warning(gpufl_model_t *m, const char *file, uint64_t line, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (reserve((void **)&m->warnings, &m->warnings_alloc, m->n_warnings, sizeof *m->warnings,
                m->limits.max_warnings) != 0) {
        m->warnings_over_cap++;
        return;
    }
    gpufl_model_warning_t *w = &m->warnings[m->n_warnings];
    w->file = pool_str(m, file, strlen(file));
    w->message = pool_str(m, msg, strlen(msg));
    w->line = line;
    if (!w->file || !w->message) {
        m->warnings_over_cap++;
        return;
    }
    m->n_warnings++;
}

static void on_warn(void *user, const gpufl_reader_pos_t *pos, const char *message) {
    add_warning(user, pos->name, pos->line, "%s", message);
}

/* Reports a bad line and tells the reader it was corrupt. */
static int bad_line(gpufl_model_t *m, const gpufl_reader_pos_t *pos, const char *type,
                    const char *fmt, ...) GPUFL__PRINTF(4, 5);

static int bad_line(gpufl_model_t *m, const gpufl_reader_pos_t *pos, const char *type,
                    const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    add_warning(m, pos->name, pos->line, "%s: %s", type, msg);
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
            add_warning(m, pos->name, pos->line, "header: session id %s, but %s elsewhere", sid,
                        h->session_id);
        return 0;
    }
    h->session_id = member_str(m, rec, "session_id");
    h->app_name = member_str(m, rec, "app_name");
    h->hostname = member_str(m, rec, "hostname");
    h->clock = member_str(m, rec, "clock");
    h->gpufl_version = member_str(m, rec, "gpufl_version");
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

/* Keeps the first record of a kind whole (options, capabilities, host_info). */
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
        return bad_line(m, pos, type, "no integer ts_ns");
    note_ts(m, ts);
    int rc = reserve((void **)&m->windows, &m->windows_alloc, m->n_windows, sizeof *m->windows,
                     m->limits.max_windows);
    if (rc < 0) return rc;
    if (rc) {
        m->windows_over_cap++;
        return 0;
    }
    gpufl_model_window_t *w = &m->windows[m->n_windows];
    memset(w, 0, sizeof *w);
    w->ts_ns = ts;
    w->is_stop = is_stop;
    w->tid = int_or_unknown(json_object_get(rec, "tid"));
    w->active = int_or_unknown(json_object_get(rec, "active"));
    json_t *name = json_object_get(rec, "name");
    if (json_is_integer(name)) { /* a dict id: resolved after loading */
        w->name_id = (int64_t)json_integer_value(name);
        w->name = "";
    } else {
        w->name = member_str(m, rec, "name");
        if (!w->name) return GPUFL_ENOMEM;
    }
    json_t *snap = json_object_get(rec, "snapshot");
    if (json_is_object(snap)) {
        w->has_snapshot = 1;
        sample_from_object(&w->snapshot, snap);
    }
    m->n_windows++;
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
        return bad_line(m, pos, "event", "no integer ts_ns");
    note_ts(m, ts);
    int rc = reserve((void **)&m->events, &m->events_alloc, m->n_events, sizeof *m->events,
                     m->limits.max_events);
    if (rc < 0) return rc;
    if (rc) {
        m->events_over_cap++;
        return 0;
    }
    gpufl_model_event_t *e = &m->events[m->n_events];
    e->ts_ns = ts;
    e->file = pos->file;
    e->level_name = member_str(m, rec, "level");
    e->code = member_str(m, rec, "code");
    e->message = member_str(m, rec, "message");
    if (!e->level_name || !e->code || !e->message) return GPUFL_ENOMEM;
    e->level = level_of(e->level_name);
    m->n_events++;
    return 0;
}

static int on_drops(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t ts;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return bad_line(m, pos, "drops", "no integer ts_ns");
    note_ts(m, ts);
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
        return bad_line(m, pos, "session_end", "no integer ts_ns");
    note_ts(m, ts);
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
        return bad_line(m, pos, "scope_begin", "%s", why);
    size_t start = m->n_scopes;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        int64_t v[NCOL];
        for (int c = 0; c < NCOL; c++) {
            if (cell_int(cols[c], r, 0, &v[c]) != 0) {
                m->n_scopes = start;
                return bad_line(m, pos, "scope_begin", "row %zu: %s is not an integer", r,
                                names[c]);
            }
        }
        if (v[ID] <= 0) {
            m->n_scopes = start;
            return bad_line(m, pos, "scope_begin", "row %zu: id %lld is not positive", r,
                            (long long)v[ID]);
        }
        if (v[TS] < lo) lo = v[TS];
        if (v[TS] > hi) hi = v[TS];
        int rc = reserve((void **)&m->scopes, &m->scopes_alloc, m->n_scopes, sizeof *m->scopes,
                         m->limits.max_scopes);
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
    }
    m->scopes_over_cap += over;
    if (rows) note_ts(m, lo), note_ts(m, hi);
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
        return bad_line(m, pos, "scope_end", "%s", why);
    size_t start = st->n_ends;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        int64_t v[NCOL];
        for (int c = 0; c < NCOL; c++) {
            if (cell_int(cols[c], r, 0, &v[c]) != 0) {
                st->n_ends = start;
                return bad_line(m, pos, "scope_end", "row %zu: %s is not an integer", r, names[c]);
            }
        }
        if (v[TS] < lo) lo = v[TS];
        if (v[TS] > hi) hi = v[TS];
        int rc = reserve((void **)&st->ends, &st->ends_alloc, st->n_ends, sizeof *st->ends,
                         m->limits.max_scopes);
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
    if (rows) note_ts(m, lo), note_ts(m, hi);
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
        return bad_line(m, pos, "host_sample", "%s", why);
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
                return bad_line(m, pos, "host_sample", "row %zu: %s is not a%s", r, names[c],
                                is_real[c] ? " number" : "n integer");
            }
            if (rc == 1) { /* null: unknown */
                iv[c] = GPUFL_MODEL_UNKNOWN;
                dv[c] = GPUFL_MODEL_UNKNOWN;
            }
        }
        if (iv[TS] < lo) lo = iv[TS];
        if (iv[TS] > hi) hi = iv[TS];
        int rc = reserve((void **)&m->samples, &m->samples_alloc, m->n_samples, sizeof *m->samples,
                         m->limits.max_samples);
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
    if (rows) note_ts(m, lo), note_ts(m, hi);
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
    int rc =
        reserve((void **)&m->gpus, &m->gpus_alloc, m->n_gpus, sizeof *m->gpus, m->limits.max_gpus);
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
        return bad_line(m, pos, "gpu_info", "no device number");
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
            add_warning(m, pos->name, pos->line,
                        "gpu_info: device %lld described again as %s, first as %s (first kept)",
                        (long long)device, uuid, g->uuid);
        return 0;
    }
    g->has_info = 1;
    g->name = member_str(m, rec, "name");
    g->uuid = member_str(m, rec, "uuid");
    g->pci_bus_id = member_str(m, rec, "pci_bus_id");
    g->compute_capability = member_str(m, rec, "compute_capability");
    g->driver_version = member_str(m, rec, "driver_version");
    g->nvml_version = member_str(m, rec, "nvml_version");
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
        return bad_line(m, pos, "gpu_legend", "throttle_reasons is not an object");
    const char *key;
    json_t *v;
    json_object_foreach(names, key, v) {
        char *end;
        if (!json_is_string(v) || *key < '0' || *key > '9') continue;
        unsigned long bit = strtoul(key, &end, 10);
        if (*end || bit >= GPUFL_MODEL_THROTTLE_BITS) continue; /* not a bit we can hold */
        const char *name = pool_str(m, json_string_value(v), json_string_length(v));
        if (!name) return GPUFL_ENOMEM;
        m->throttle_names[bit] = name;
    }
    m->has_legend = 1;
    return 0;
}

static int on_gpu_processes(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t ts, device;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return bad_line(m, pos, "gpu_processes", "no integer ts_ns");
    if (device_number(json_object_get(rec, "device"), &device))
        return bad_line(m, pos, "gpu_processes", "no device number");
    json_t *pids = json_object_get(rec, "pid"), *used = json_object_get(rec, "used_bytes");
    if (!json_is_array(pids)) return bad_line(m, pos, "gpu_processes", "pid is not an array");
    size_t n = json_array_size(pids);
    if (used && !json_is_array(used))
        return bad_line(m, pos, "gpu_processes", "used_bytes is not an array");
    if (used && json_array_size(used) != n)
        return bad_line(m, pos, "gpu_processes", "pid has %zu entries, used_bytes %zu", n,
                        json_array_size(used));
    int64_t v;
    for (size_t i = 0; i < n; i++) {
        if (gpufl__reader_int(json_array_get(pids, i), &v) != 0)
            return bad_line(m, pos, "gpu_processes", "pid %zu is not an integer", i);
        if (used && gpufl__reader_int(json_array_get(used, i), &v) < 0)
            return bad_line(m, pos, "gpu_processes", "used_bytes %zu is not an integer", i);
    }
    int64_t count = nonneg_or_unknown(json_object_get(rec, "count"));
    if (count < (int64_t)n) count = (int64_t)n; /* absent, or fewer than listed */
    note_ts(m, ts);
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
        return bad_line(m, pos, "gpu_sample", "%s", why);
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
                return bad_line(m, pos, "gpu_sample", "row %zu: %s is not a%s", r, gpu_col_names[c],
                                real ? " number" : "n integer");
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
                return bad_line(m, pos, "gpu_sample", "row %zu: %s %lld is out of range", r,
                                gpu_col_names[c], (long long)x);
            }
            int32_t x32 = (int32_t)x;
            memcpy(slot, &x32, sizeof x32);
        }
        if (row.ts_ns < lo) lo = row.ts_ns;
        if (row.ts_ns > hi) hi = row.ts_ns;
        int rc = reserve((void **)&m->gpu_samples, &m->gpu_samples_alloc, m->n_gpu_samples,
                         sizeof *m->gpu_samples, m->limits.max_gpu_samples);
        if (rc < 0) return rc;
        if (rc) {
            over++;
            continue;
        }
        m->gpu_samples[m->n_gpu_samples++] = row;
    }
    m->gpu_samples_over_cap += over;
    if (rows) note_ts(m, lo), note_ts(m, hi);
    return 0;
}

/* One entry per source; a later record of the same source replaces it. */
static int on_source_cost(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    const char *source = gpufl__model_json_str(rec, "source");
    if (!source || !*source) return bad_line(m, pos, "source_cost", "no source name");
    gpufl_model_source_cost_t *c = NULL;
    for (size_t i = 0; i < m->n_source_costs && !c; i++)
        if (strcmp(m->source_costs[i].source, source) == 0) c = &m->source_costs[i];
    if (!c) {
        int rc = reserve((void **)&m->source_costs, &m->source_costs_alloc, m->n_source_costs,
                         sizeof *m->source_costs, MAX_SOURCE_COSTS);
        if (rc < 0) return rc;
        if (rc) return 0; /* more sources than any writer has: not kept */
        c = &m->source_costs[m->n_source_costs];
        c->source = member_str(m, rec, "source");
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

#define TRACE_COLS_MAX 32 /* columns of a trace batch (kernel has 15) */

/* Reads row r of a batch whose columns are all required integers in
 * [0, max[c]] (0 in max: no upper bound). Returns 0, or -1 with why set. */
static int trace_row(json_t *const *cols, const char *const *names, const int64_t *max, int ncol,
                     size_t r, int64_t *v, char *why, size_t why_size) {
    for (int c = 0; c < ncol; c++) {
        if (cell_int(cols[c], r, 0, &v[c]) != 0) {
            snprintf(why, why_size, "row %zu: %s is not an integer", r, names[c]);
            return -1;
        }
        if (v[c] < 0 || (max[c] && v[c] > max[c])) {
            snprintf(why, why_size, "row %zu: %s %lld is out of range", r, names[c],
                     (long long)v[c]);
            return -1;
        }
    }
    if (v[1] < v[0]) { /* columns 0 and 1 are start_ns and end_ns */
        snprintf(why, why_size, "row %zu: end_ns %lld is before start_ns %lld", r, (long long)v[1],
                 (long long)v[0]);
        return -1;
    }
    return 0;
}

/* Where the rows of one trace batch type go: a growing array and its cap. */
typedef struct row_array {
    void **data;
    size_t *alloc, *n;
    size_t elem, cap;
    uint64_t *over_cap;
} row_array_t;

/* Loads the rows of a trace batch (kernel, copy): every column a required
 * integer checked by trace_row, each row handed to fill. A bad row rolls the
 * whole line back; rows past the cap are counted. */
static int load_trace_rows(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec,
                           const char *type, const char *const *names, const int64_t *max, int ncol,
                           row_array_t a, void (*fill)(void *row, const int64_t *v)) {
    json_t *cols[TRACE_COLS_MAX];
    size_t rows;
    char why[160];
    if (gpufl__reader_columns(rec, names, cols, ncol, ncol, &rows, why, sizeof why))
        return bad_line(m, pos, type, "%s", why);
    size_t start = *a.n;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        int64_t v[TRACE_COLS_MAX];
        if (trace_row(cols, names, max, ncol, r, v, why, sizeof why)) {
            *a.n = start;
            return bad_line(m, pos, type, "%s", why);
        }
        if (v[0] < lo) lo = v[0]; /* columns 0 and 1 are start_ns and end_ns */
        if (v[1] > hi) hi = v[1];
        int rc = reserve(a.data, a.alloc, *a.n, a.elem, a.cap);
        if (rc < 0) return rc;
        if (rc) {
            over++;
            continue;
        }
        fill((char *)*a.data + (*a.n)++ * a.elem, v);
    }
    *a.over_cap += over;
    if (rows) note_ts(m, lo), note_ts(m, hi);
    return 0;
}

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
    K_NCOL
};

static void fill_kernel(void *row, const int64_t *v) {
    gpufl_model_kernel_t *k = row;
    k->start_ns = v[K_START];
    k->end_ns = v[K_END];
    k->stream = v[K_STREAM];
    k->correlation = v[K_CORR];
    k->name_id = v[K_NAME];
    k->name = NULL;
    k->static_smem_bytes = v[K_SSMEM];
    k->dynamic_smem_bytes = v[K_DSMEM];
    k->device = (int32_t)v[K_DEVICE];
    k->grid_x = (int32_t)v[K_GX];
    k->grid_y = (int32_t)v[K_GY];
    k->grid_z = (int32_t)v[K_GZ];
    k->block_x = (int32_t)v[K_BX];
    k->block_y = (int32_t)v[K_BY];
    k->block_z = (int32_t)v[K_BZ];
    k->registers = (int32_t)v[K_REGS];
}

static int on_kernel(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
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
                                              "dynamic_smem_bytes"};
    static const int64_t max[K_NCOL] = {
        [K_DEVICE] = INT32_MAX, [K_GX] = INT32_MAX, [K_GY] = INT32_MAX, [K_GZ] = INT32_MAX,
        [K_BX] = INT32_MAX,     [K_BY] = INT32_MAX, [K_BZ] = INT32_MAX, [K_REGS] = INT32_MAX};
    row_array_t a = {(void **)&m->kernels, &m->kernels_alloc,     &m->n_kernels,
                     sizeof *m->kernels,   m->limits.max_kernels, &m->kernels_over_cap};
    return load_trace_rows(m, pos, rec, "kernel", names, max, K_NCOL, a, fill_kernel);
}

enum copy_col { C_START, C_END, C_DEVICE, C_BYTES, C_KIND, C_SRC, C_DST, C_NCOL };

static void fill_copy(void *row, const int64_t *v) {
    gpufl_model_copy_t *c = row;
    c->start_ns = v[C_START];
    c->end_ns = v[C_END];
    c->bytes = v[C_BYTES];
    c->device = (int32_t)v[C_DEVICE];
    c->copy_kind = (int32_t)v[C_KIND];
    c->src_kind = (int32_t)v[C_SRC];
    c->dst_kind = (int32_t)v[C_DST];
}

static int on_copy(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    static const char *const names[C_NCOL] = {"start_ns",  "end_ns",   "device",  "bytes",
                                              "copy_kind", "src_kind", "dst_kind"};
    static const int64_t max[C_NCOL] = {
        [C_DEVICE] = INT32_MAX, [C_KIND] = INT32_MAX, [C_SRC] = INT32_MAX, [C_DST] = INT32_MAX};
    row_array_t a = {(void **)&m->copies, &m->copies_alloc,     &m->n_copies,
                     sizeof *m->copies,   m->limits.max_copies, &m->copies_over_cap};
    return load_trace_rows(m, pos, rec, "copy", names, max, C_NCOL, a, fill_copy);
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
        NTYPES
    };
    static const char *const types[NTYPES] = {
        "header",        "options",     "capabilities", "host_info",   "scope_begin",
        "scope_end",     "host_sample", "system_start", "system_stop", "event",
        "drops",         "session_end", "gpu_info",     "gpu_legend",  "gpu_sample",
        "gpu_processes", "source_cost", "kernel",       "copy"};
    int t = 0;
    while (t < NTYPES && strcmp(type, types[t]) != 0) t++;
    if (t == NTYPES) return 1; /* unknown types are skipped */
    if (json_integer_value(json_object_get(rec, "v")) != 1) {
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
    case KERNEL: return on_kernel(m, pos, rec);
    case COPY: return on_copy(m, pos, rec);
    default: return 1;
    }
}

/* ---------------------------------------------------------------------- */
/* After reading                                                            */
/* ---------------------------------------------------------------------- */

static const char *resolve(gpufl_model_t *m, int64_t id) {
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
        s->name = resolve(m, s->name_id);
        s->tag = resolve(m, s->tag_id);
        s->path = resolve(m, s->path_id);
        if (s->open) m->n_open_scopes++;
    }
    return 0;
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

/* Gives every device a sample, kernel or copy names an entry, then sorts the
 * devices by number and rebuilds the index. Resolves kernel names. */
static int finish_gpus(gpufl_model_t *m) {
    int64_t last = -1;
    int rc = 0;
    for (size_t i = 0; i < m->n_gpu_samples && !rc; i++)
        rc = note_device(m, m->gpu_samples[i].device, &last);
    for (size_t i = 0; i < m->n_kernels && !rc; i++) {
        m->kernels[i].name = resolve(m, m->kernels[i].name_id);
        rc = note_device(m, m->kernels[i].device, &last);
    }
    for (size_t i = 0; i < m->n_copies && !rc; i++) rc = note_device(m, m->copies[i].device, &last);
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

static void summarize(gpufl_model_t *m) {
    load_state_t *st = m->load_state;
    for (size_t i = 0; i < m->n_windows; i++)
        if (m->windows[i].name_id) m->windows[i].name = resolve(m, m->windows[i].name_id);
    if (st->scope_ids_duplicate)
        add_warning(m, "", 0, "%llu scope_begin rows repeat an id already begun (first kept)",
                    (unsigned long long)st->scope_ids_duplicate);
    if (m->scope_ends_unmatched)
        add_warning(m, "", 0, "%llu scope_end rows match no scope_begin",
                    (unsigned long long)m->scope_ends_unmatched);
    if (m->scope_ends_duplicate)
        add_warning(m, "", 0, "%llu scope_end rows end a scope already ended",
                    (unsigned long long)m->scope_ends_duplicate);
    if (st->scopes_backwards)
        add_warning(m, "", 0, "%llu scopes end before they begin",
                    (unsigned long long)st->scopes_backwards);
    if (m->undefined_ids)
        add_warning(m, "", 0, "%llu references to dict ids that no dict line defines",
                    (unsigned long long)m->undefined_ids);
    if (m->unknown_versions)
        add_warning(m, "", 0, "%llu records of a newer version skipped",
                    (unsigned long long)m->unknown_versions);
    if (m->dict.over_cap)
        add_warning(m, "", 0, "%llu dict entries past the cap of %zu, not kept",
                    (unsigned long long)m->dict.over_cap, m->dict.max_entries);
    if (m->scopes_over_cap)
        add_warning(m, "", 0, "%llu scope rows past the cap of %zu, not kept",
                    (unsigned long long)m->scopes_over_cap, m->limits.max_scopes);
    if (m->scope_ends_over_cap)
        add_warning(m, "", 0, "%llu scope_end rows past the cap of %zu, not kept",
                    (unsigned long long)m->scope_ends_over_cap, m->limits.max_scopes);
    if (m->samples_over_cap)
        add_warning(m, "", 0, "%llu host samples past the cap of %zu, not kept",
                    (unsigned long long)m->samples_over_cap, m->limits.max_samples);
    if (m->windows_over_cap)
        add_warning(m, "", 0, "%llu system_start/stop records past the cap of %zu, not kept",
                    (unsigned long long)m->windows_over_cap, m->limits.max_windows);
    if (m->events_over_cap)
        add_warning(m, "", 0, "%llu events past the cap of %zu, not kept",
                    (unsigned long long)m->events_over_cap, m->limits.max_events);
    if (m->gpu_samples_over_cap)
        add_warning(m, "", 0, "%llu GPU samples past the cap of %zu, not kept",
                    (unsigned long long)m->gpu_samples_over_cap, m->limits.max_gpu_samples);
    if (m->kernels_over_cap)
        add_warning(m, "", 0, "%llu kernel rows past the cap of %zu, not kept",
                    (unsigned long long)m->kernels_over_cap, m->limits.max_kernels);
    if (m->copies_over_cap)
        add_warning(m, "", 0, "%llu copy rows past the cap of %zu, not kept",
                    (unsigned long long)m->copies_over_cap, m->limits.max_copies);
    if (m->gpus_over_cap)
        add_warning(m, "", 0, "%llu GPU records name devices past the cap of %zu devices",
                    (unsigned long long)m->gpus_over_cap, m->limits.max_gpus);
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
    m->first_ts_ns = m->last_ts_ns = GPUFL_MODEL_UNKNOWN;
    m->header.session_id = m->header.app_name = m->header.hostname = "";
    m->header.clock = m->header.gpufl_version = "";
    m->header.pid = m->header.epoch_unix_us = GPUFL_MODEL_UNKNOWN;
    m->load_state = &st;

    gpufl_reader_ops_t ops = {.record = on_record, .warn = on_warn};
    gpufl_reader_limits_t rl = {.max_line_bytes = m->limits.max_line_bytes};
    int rc = gpufl__reader_read_session(session_dir, &ops, m, &m->dict, &rl, &m->read);
    if (rc == 0) rc = join_scopes(m);
    if (rc == 0) rc = finish_gpus(m);
    if (rc == 0) summarize(m);
    free(st.ends);
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
    json_decref(m->drops.rec);
    json_decref(m->session_end.rec);
    free(m->scopes);
    free(m->samples);
    free(m->windows);
    free(m->events);
    free(m->warnings);
    free(m->gpus);
    free(m->gpu_samples);
    free(m->kernels);
    free(m->copies);
    free(m->source_costs);
    gpufl__idmap_fini(&m->scope_index);
    gpufl__idmap_fini(&m->gpu_index);
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
