// SPDX-License-Identifier: Apache-2.0
/*
 * model_trace.c - the trace domain of the model: kernel, copy, memset, sync
 * and launch batches, kernel_config records, trace_stats and op names.
 *
 * Batch lines are applied row by row straight into the model's arrays (no
 * allocation per row, columns looked up once per line), from the JSON tree
 * or from the reader's scanned column view; a line with a bad cell is
 * rolled back whole, reported and skipped. Each row type is an enum of its
 * columns, a fill function and an on_<type> below: the place to map wire
 * values of older logs.
 */
#include "analysis/model_internal.h"
#include "analysis/compat.h"

#include "util/demangle.h"
#include "util/error.h"

#include <gpufl/gpufl_log.h>
#include <gpufl/gpufl_ops.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Loading integer batches                                                */
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
    const gpufl__reader_column_t *view_cols[TRACE_COLS_MAX];
    const gpufl__reader_batch_t *view;
} trace_src_t;

/* Reads cell (r, c) as gpufl__reader_int does; *big is set for a decimal
 * string past int64. */
static int trace_cell(const trace_src_t *src, int c, size_t r, int64_t *out, int *big) {
    *big = 0;
    if (src->view) {
        const gpufl__reader_column_t *col = src->view_cols[c];
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
static int view_columns(const gpufl__reader_batch_t *b, const trace_cols_t *t, trace_src_t *src,
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
int gpufl__model_load_rows(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                           const gpufl__reader_batch_t *view, const trace_cols_t *t, row_array_t a,
                           void (*fill)(void *row, const int64_t *v)) {
    trace_src_t src;
    size_t rows;
    char why[160];
    src.view = NULL;
    int decoded = view ? 0 : gpufl__compat_line(rec, why, sizeof why);
    if (decoded < -1) return decoded;
    if (decoded) return gpufl__model_bad_line(m, pos, t->type, "%s", why);
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

/* ---------------------------------------------------------------------- */
/* Rows                                                                   */
/* ---------------------------------------------------------------------- */

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
    gpufl__model_kernel_t *k = row;
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

static int on_kernel(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                     const gpufl__reader_batch_t *view) {
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
    gpufl__model_copy_t *c = row;
    c->start_ns = v[C_START];
    c->end_ns = v[C_END];
    c->bytes = v[C_BYTES];
    c->device = (int32_t)v[C_DEVICE];
    c->copy_kind = (int32_t)v[C_KIND];
    c->src_kind = (int32_t)v[C_SRC];
    c->dst_kind = (int32_t)v[C_DST];
    c->scope = scope_id(v[C_SCOPE]);
}

static int on_copy(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                   const gpufl__reader_batch_t *view) {
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
    gpufl__model_memset_t *s = row;
    s->start_ns = v[M_START];
    s->end_ns = v[M_END];
    s->bytes = v[M_BYTES];
    s->scope = scope_id(v[M_SCOPE]);
    s->device = (int32_t)v[M_DEVICE];
    s->memory_kind = (int32_t)v[M_KIND];
}

static int on_memset(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                     const gpufl__reader_batch_t *view) {
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
    gpufl__model_sync_t *s = row;
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

static int on_sync(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                   const gpufl__reader_batch_t *view) {
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
    gpufl__model_launch_t *l = row;
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
static int on_launch(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                     const gpufl__reader_batch_t *view) {
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

/* An operation name (gpufl_ops.h): the first record for an index is kept. */
static int on_op(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
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

const char *gpufl__model_op_name(const gpufl__model_t *m, int64_t external_kind,
                                 int64_t external_id) {
    if (external_kind != GPUFL_MODEL_EXTERNAL_OPS || external_id <= 0) return NULL;
    uint64_t index = (uint64_t)external_id >> GPUFL_LOG_OP_CALL_BITS;
    return index >= 1 && index <= m->n_op_names ? m->op_names[index - 1] : NULL;
}

/* One record per launch configuration; a second record for an id is
 * counted and skipped (the writer never repeats one). */
static int on_kernel_config(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t id, device;
    if (gpufl__reader_int(json_object_get(rec, "id"), &id) != 0 || id <= 0)
        return gpufl__model_bad_line(m, pos, "kernel_config", "no positive integer id");
    json_t *dev = json_object_get(rec, "device");
    if (!dev || json_is_null(dev))
        device = GPUFL_MODEL_UNKNOWN;
    else if (gpufl__model_device_number(dev, &device))
        return gpufl__model_bad_line(m, pos, "kernel_config", "device is not a device number");
    size_t seen;
    if (gpufl__idmap_get(&m->config_index, (uint64_t)id, &seen)) {
        m->configs_duplicate++;
        return 0;
    }
    int rc;
    gpufl__model_kernel_config_t *c = gpufl__model_append_row(ROWS(m, configs, max_configs), &rc);
    if (!c) return rc;
    c->id = id;
    c->device = (int32_t)device;
    c->ts_ns = gpufl__model_int_or_unknown(json_object_get(rec, "ts_ns"));
    gpufl__model_note_ts(m, c->ts_ns);
    c->limiter = gpufl__model_member_str(m, rec, "limiter");
    c->occupancy_why = gpufl__model_member_str(m, rec, "occupancy_unknown");
    if (!c->limiter || !c->occupancy_why || gpufl__model_name_member(m, rec, &c->name_id, &c->name))
        return GPUFL_ENOMEM;
    static const struct {
        const char *key;
        size_t offset;
    } ints[] = {
#define CFG_INT(field) {#field, offsetof(gpufl__model_kernel_config_t, field)}
        CFG_INT(block_threads), CFG_INT(dynamic_smem_bytes),     CFG_INT(static_smem_bytes),
        CFG_INT(registers),     CFG_INT(local_bytes_per_thread), CFG_INT(max_threads_per_block),
        CFG_INT(blocks_per_sm), CFG_INT(active_warps),           CFG_INT(max_warps),
        CFG_INT(limit_warps),   CFG_INT(limit_registers),        CFG_INT(limit_smem),
        CFG_INT(limit_blocks),
#undef CFG_INT
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int64_t v = gpufl__model_nonneg_or_unknown(json_object_get(rec, ints[i].key));
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
/* After reading                                                          */
/* ---------------------------------------------------------------------- */

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
static const char *config_demangled(gpufl__model_t *m, const name_pair_t *pairs, size_t n,
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
static int collect_names(gpufl__model_t *m, name_pair_t **pairs, size_t *n) {
    gpufl__idmap_t seen;
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
            const gpufl__model_pc_sample_t *r = &m->pc_samples[i];
            id = r->function;
            name = gpufl__model_str(m, r->function);
            d = gpufl__model_str(m, r->demangled);
        } else {
            const gpufl__model_kernel_t *k = &m->kernels[i - m->n_pc_samples];
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
static int finish_launches(gpufl__model_t *m) {
    name_pair_t *pairs = NULL;
    size_t n = 0;
    int rc = m->n_configs ? collect_names(m, &pairs, &n) : 0;
    for (size_t i = 0; i < m->n_configs && !rc; i++) {
        gpufl__model_kernel_config_t *c = &m->configs[i];
        c->demangled = config_demangled(m, pairs, n, c->name);
        if (!c->demangled) rc = GPUFL_ENOMEM;
    }
    free(pairs);
    for (size_t i = 0; i < m->n_launches && !rc; i++) {
        gpufl__model_launch_t *l = &m->launches[i];
        const gpufl__model_kernel_config_t *c = gpufl__model_config_find(m, l->config);
        if (c)
            l->config_index = (int32_t)(c - m->configs);
        else if (l->config > 0)
            m->configs_missing++;
    }
    return rc;
}

int gpufl__model_finish_trace(gpufl__model_t *m) { return finish_launches(m); }

static int on_trace_stats(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    (void)pos;
    return gpufl__model_keep_first(&m->trace_stats, rec);
}

const gpufl__model_handler_t gpufl__model_trace_handlers[] = {
    {"kernel", NULL, on_kernel},
    {"copy", NULL, on_copy},
    {"memset", NULL, on_memset},
    {"sync", NULL, on_sync},
    {"launch", NULL, on_launch},
    {"kernel_config", on_kernel_config, NULL},
    {"trace_stats", on_trace_stats, NULL},
    {"op", on_op, NULL},
    {NULL, NULL, NULL},
};
