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
 *
 * This file is the core: the helpers every domain uses, the dispatch of a
 * record to its handler by type name (each domain's file registers its
 * types in a table: model_session.c, model_host.c, model_scope.c,
 * model_gpu.c, model_trace.c, model_stack.c, model_pc.c, model_sass_metrics.c,
 * model_range.c), the steps after reading, and create / finish / destroy.
 * Lookups on a loaded model are model_query.c's.
 */
#include "analysis/model.h"
#include "analysis/model_internal.h"
#include "analysis/compat.h"

#include "util/error.h"

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

const char *gpufl__model_pool_str(gpufl__model_t *m, const char *s, size_t len) {
    const char *out;
    if (gpufl__strpool_add(&m->strings, s, len, &out)) return NULL;
    return out;
}

/* A string member of obj copied into the model, "" when absent; NULL only
 * when out of memory. */
const char *gpufl__model_member_str(gpufl__model_t *m, const json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v)) return "";
    return gpufl__model_pool_str(m, json_string_value(v), json_string_length(v));
}

/* The "name" member of rec, written as a string or as a dict id (then
 * resolved after loading): sets *id (0 for a string) and *out ("" until
 * resolved). Returns 0 or GPUFL_ENOMEM. */
int gpufl__model_name_member(gpufl__model_t *m, const json_t *rec, int64_t *id, const char **out) {
    json_t *name = json_object_get(rec, "name");
    *id = json_is_integer(name) ? (int64_t)json_integer_value(name) : 0;
    *out = *id ? "" : gpufl__model_member_str(m, rec, "name");
    return *out ? 0 : GPUFL_ENOMEM;
}

const char *gpufl__model_json_str(const json_t *obj, const char *key) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

void gpufl__model_note_ts(gpufl__model_t *m, int64_t ts) {
    if (ts < 0) return;
    if (m->first_ts_ns == GPUFL_MODEL_UNKNOWN || ts < m->first_ts_ns) m->first_ts_ns = ts;
    if (ts > m->last_ts_ns) m->last_ts_ns = ts;
}

void gpufl__model_warn(gpufl__model_t *m, const char *file, uint64_t line, const char *fmt, ...) {
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
    gpufl__model_warning_t *w = &m->warnings[m->n_warnings];
    w->file = gpufl__model_pool_str(m, file, strlen(file));
    w->message = gpufl__model_pool_str(m, msg, strlen(msg));
    w->line = line;
    if (!w->file || !w->message) {
        m->warnings_over_cap++;
        return;
    }
    m->n_warnings++;
}

static void on_warn(void *user, const gpufl__reader_pos_t *pos, const char *message) {
    gpufl__model_warn(user, pos->name, pos->line, "%s", message);
}

/* Reports a bad line and tells the reader it was corrupt. */
int gpufl__model_bad_line(gpufl__model_t *m, const gpufl__reader_pos_t *pos, const char *type,
                          const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gpufl__model_warn(m, pos->name, pos->line, "%s: %s", type, msg);
    return 2;
}

int64_t gpufl__model_int_or_unknown(const json_t *v) {
    int64_t x;
    return gpufl__reader_int(v, &x) == 0 ? x : GPUFL_MODEL_UNKNOWN;
}

/* Keeps the first record of a kind whole (options, capabilities, host_info,
 * trace_stats). */
int gpufl__model_keep_first(json_t **slot, json_t *rec) {
    if (!*slot) *slot = json_incref(rec);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Dispatch                                                                 */
/* ---------------------------------------------------------------------- */

/* The record types of every domain: one table each, looked up by name. A
 * new domain is one more entry here; a new record type one more entry in
 * its domain's table. */
static const gpufl__model_handler_t *const domains[] = {
    gpufl__model_trace_handlers, /* the high-rate types first */
    gpufl__model_scope_handlers, gpufl__model_gpu_handlers,          gpufl__model_host_handlers,
    gpufl__model_pc_handlers,    gpufl__model_sass_metrics_handlers, gpufl__model_session_handlers,
    gpufl__model_stack_handlers, gpufl__model_range_handlers,
};

static const gpufl__model_handler_t *handler_of(const char *type) {
    for (size_t d = 0; d < sizeof domains / sizeof domains[0]; d++)
        for (const gpufl__model_handler_t *h = domains[d]; h->type; h++)
            if (h->type[0] == type[0] && strcmp(h->type, type) == 0) return h;
    return NULL;
}

/* The types whose batches the reader may scan without jansson (see
 * reader.h): those with a rows handler, NULL-terminated. */
static const char *const *scanned_types(void) {
    static const char *types[64];
    static int built;
    if (!built) { /* the same on every call: a race writes the same values */
        size_t n = 0;
        for (size_t d = 0; d < sizeof domains / sizeof domains[0]; d++)
            for (const gpufl__model_handler_t *h = domains[d]; h->type; h++)
                if (h->rows && n + 1 < sizeof types / sizeof types[0]) types[n++] = h->type;
        types[n] = NULL;
        built = 1;
    }
    return types;
}

static int on_record(void *user, const gpufl__reader_pos_t *pos, const char *type, json_t *rec) {
    gpufl__model_t *m = user;
    const gpufl__model_handler_t *h = handler_of(type);
    if (!h) return 1; /* unknown types are skipped */
    if (!gpufl__compat_known(type, json_integer_value(json_object_get(rec, "v")))) {
        m->unknown_versions++;
        return 1;
    }
    return h->record ? h->record(m, pos, rec) : h->rows(m, pos, rec, NULL);
}

static int on_batch(void *user, const gpufl__reader_pos_t *pos, const gpufl__reader_batch_t *b) {
    gpufl__model_t *m = user;
    const gpufl__model_handler_t *h = handler_of(b->type);
    if (!h || !h->rows) return 1;
    if (!gpufl__compat_known(b->type, b->version)) {
        m->unknown_versions++;
        return 1;
    }
    return h->rows(m, pos, NULL, b);
}

/* ---------------------------------------------------------------------- */
/* After reading                                                          */
/* ---------------------------------------------------------------------- */

const char *gpufl__model_resolve(gpufl__model_t *m, int64_t id) {
    const char *s = gpufl__dict_get(&m->dict, id);
    if (s) return s;
    m->undefined_ids++;
    return "?";
}

static void summarize(gpufl__model_t *m) {
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
        {m->processes_over_cap, "process_info records", GPUFL_MODEL_MAX_PROCESSES},
        {m->xids_over_cap, "xid records", GPUFL_MODEL_MAX_XIDS},
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
    const gpufl__model_gpu_work_t *u = &m->gpu_unknown_scope.self;
    if (u->kernels + u->copies + u->memsets)
        gpufl__model_warn(
            m, "", 0,
            "%llu kernel, copy or memset rows name a scope id that scope.log does not have",
            (unsigned long long)(u->kernels + u->copies + u->memsets));
    if (m->gpus_over_cap)
        gpufl__model_warn(m, "", 0, "%llu GPU records name devices past the cap of %zu devices",
                          (unsigned long long)m->gpus_over_cap, m->limits.max_gpus);
}

/* ---------------------------------------------------------------------- */
/* Public                                                                   */
/* ---------------------------------------------------------------------- */

static void set_limits(gpufl__model_limits_t *out, const gpufl__model_limits_t *in) {
    gpufl__model_limits_t d = {0};
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

static const gpufl__reader_ops_t *reader_ops(void) {
    static gpufl__reader_ops_t ops = {.record = on_record,
                                      .warn = on_warn,
                                      .batch = on_batch,
                                      .damaged = gpufl__model_on_damaged};
    ops.batch_types = scanned_types();
    return &ops;
}

int gpufl__model_create(gpufl__model_t **out, const gpufl__model_limits_t *limits) {
    *out = NULL;
    gpufl__model_t *m = calloc(1, sizeof *m);
    load_state_t *st = calloc(1, sizeof *st);
    if (!m || !st) {
        free(m);
        free(st);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a session model");
    }
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
    m->load_state = st;
    *out = m;
    return 0;
}

void gpufl__model_reader_init(gpufl__model_t *m, gpufl__reader_t *r, int follow_segments) {
    gpufl__reader_limits_t rl = {.max_line_bytes = m->limits.max_line_bytes};
    gpufl__reader_init(r, reader_ops(), m, &m->dict, &rl, &m->read, follow_segments);
}

static void free_load_state(gpufl__model_t *m) {
    load_state_t *st = m->load_state;
    if (!st) return;
    free(st->ends);
    free(st->salvaged);
    free(st);
    m->load_state = NULL;
}

int gpufl__model_finish(gpufl__model_t *m) {
    if (!m->load_state)
        return gpufl__set_error(GPUFL_EINVAL, "the session model is already finished");
    int rc = gpufl__model_finish_scopes(m);
    if (rc == 0) rc = gpufl__model_finish_gpus(m);
    if (rc == 0) rc = gpufl__model_finish_paths(m);
    if (rc == 0) gpufl__model_finish_stacks(m);
    if (rc == 0) rc = gpufl__model_finish_pc(m);
    if (rc == 0) gpufl__model_finish_sass_metrics(m);
    if (rc == 0) rc = gpufl__model_finish_trace(m);
    if (rc == 0) rc = gpufl__model_attribute_pc(m);
    if (rc == 0) summarize(m);
    free_load_state(m);
    return rc;
}

int gpufl__model_load_limits(gpufl__model_t **out, const char *session_dir,
                             const gpufl__model_limits_t *limits) {
    gpufl__model_t *m;
    *out = NULL;
    int rc = gpufl__model_create(&m, limits);
    if (rc) return rc;
    gpufl__reader_limits_t rl = {.max_line_bytes = m->limits.max_line_bytes,
                                 .progress = limits ? limits->progress : NULL,
                                 .progress_user = limits ? limits->progress_user : NULL};
    rc = gpufl__reader_read_session(session_dir, reader_ops(), m, &m->dict, &rl, &m->read);
    if (rc == 0) rc = gpufl__model_finish(m);
    if (rc) {
        gpufl__model_destroy(m);
        return rc;
    }
    *out = m;
    return 0;
}

int gpufl__model_load(gpufl__model_t **out, const char *session_dir) {
    return gpufl__model_load_limits(out, session_dir, NULL);
}

void gpufl__model_destroy(gpufl__model_t *m) {
    if (!m) return;
    free_load_state(m);
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
    free(m->processes);
    free(m->xids);
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
    gpufl__model_free_sass_metrics(m);
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
