// SPDX-License-Identifier: Apache-2.0
/*
 * wire.c - the batch tables of the log format and the encoders of rows,
 * batches, dict lines and file headers. Every sink that writes NDJSON (the
 * session files, the in-memory ring) encodes through these, so their lines
 * are the same bytes.
 */
#include "core/wire.h"

#include "util/error.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_log.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCOLS(a) ((int)(sizeof a / sizeof a[0]))
#define TABLE(var, name, cols, key)                                                                \
    const gpufl__wire_table_t var = {name, cols, NCOLS(cols), key, 1, NULL}
/* A record type past its first version (docs/log-format.md says what changed). */
#define TABLE_V(var, name, cols, key, v)                                                           \
    const gpufl__wire_table_t var = {name, cols, NCOLS(cols), key, v, NULL}
/* A record type written as compact lines: its version and encodings are codes's. */
#define TABLE_CODED(var, name, cols, v, codes)                                                     \
    const gpufl__wire_table_t var = {name, cols, NCOLS(cols), GPUFL_WIRE_NOT_GAUGE, v, &codes}

/* ---------------- scope.log ---------------- */

static const gpufl__col_def_t begin_cols[] = {
    {"ts_ns", GPUFL_COL_INT},     {"tid", GPUFL_COL_INT},     {"id", GPUFL_COL_INT},
    {"parent", GPUFL_COL_INT},    {"depth", GPUFL_COL_INT},   {"name", GPUFL_COL_DICT},
    {"tag", GPUFL_COL_DICT},      {"path", GPUFL_COL_DICT},   {"repeat", GPUFL_COL_INT},
    {"warmup", GPUFL_COL_INT},    {"source", GPUFL_COL_INT},  {"domain", GPUFL_COL_DICT},
    {"category", GPUFL_COL_DICT}, {"payload", GPUFL_COL_DICT}};
static const gpufl__col_def_t end_cols[] = {{"ts_ns", GPUFL_COL_INT},
                                            {"tid", GPUFL_COL_INT},
                                            {"id", GPUFL_COL_INT},
                                            {"implicit", GPUFL_COL_INT}};
TABLE(gpufl__wire_scope_begin, "scope_begin", begin_cols, GPUFL_WIRE_NOT_GAUGE);
TABLE(gpufl__wire_scope_end, "scope_end", end_cols, GPUFL_WIRE_NOT_GAUGE);

/* ---------------- system.log ---------------- */

static const gpufl__col_def_t host_cols[] = {{"ts_ns", GPUFL_COL_INT},
                                             {"cpu_pct", GPUFL_COL_PCT},
                                             {"proc_cpu_pct", GPUFL_COL_PCT},
                                             {"mem_used_bytes", GPUFL_COL_OPT},
                                             {"mem_total_bytes", GPUFL_COL_OPT},
                                             {"proc_rss_bytes", GPUFL_COL_OPT},
                                             {"cg_mem_used_bytes", GPUFL_COL_OPT},
                                             {"cg_mem_limit_bytes", GPUFL_COL_OPT},
                                             {"cg_cpu_pct", GPUFL_COL_PCT},
                                             {"cg_cpu_limit_cores", GPUFL_COL_FIX2}};
TABLE(gpufl__wire_host_sample, "host_sample", host_cols, GPUFL_WIRE_GAUGE_ONE);

/* ---------------- device.log: telemetry ---------------- */

static const gpufl__col_def_t gpu_cols[] = {
    {"ts_ns", GPUFL_COL_INT},
    {"device", GPUFL_COL_INT},
    {"gpu_util_pct", GPUFL_COL_OPT},
    {"mem_util_pct", GPUFL_COL_OPT},
    {"mem_used_bytes", GPUFL_COL_OPT},
    {"mem_free_bytes", GPUFL_COL_OPT},
    {"mem_total_bytes", GPUFL_COL_OPT},
    {"temp_gpu_c", GPUFL_COL_OPT},
    {"temp_mem_c", GPUFL_COL_OPT},
    {"power_mw", GPUFL_COL_OPT},
    {"power_limit_mw", GPUFL_COL_OPT},
    {"energy_mj", GPUFL_COL_OPT},
    {"clock_sm_mhz", GPUFL_COL_OPT},
    {"clock_gfx_mhz", GPUFL_COL_OPT},
    {"clock_mem_mhz", GPUFL_COL_OPT},
    {"fan_pct", GPUFL_COL_OPT},
    {"pcie_tx_bytes_per_s", GPUFL_COL_OPT},
    {"pcie_rx_bytes_per_s", GPUFL_COL_OPT},
    {"throttle_reasons", GPUFL_COL_OPT},
    {"ecc_sbe_volatile", GPUFL_COL_OPT},
    {"ecc_dbe_volatile", GPUFL_COL_OPT},
    {"nvlink_tx_bytes_per_s", GPUFL_COL_OPT},
    {"nvlink_rx_bytes_per_s", GPUFL_COL_OPT},
    {"sm_active_pct", GPUFL_COL_PCT},
    {"sm_occupancy_pct", GPUFL_COL_PCT},
    {"tensor_active_pct", GPUFL_COL_PCT},
    {"dram_bw_util_pct", GPUFL_COL_PCT},
};
TABLE(gpufl__wire_gpu_sample, "gpu_sample", gpu_cols, 1 /* device */);

/* ---------------- device.log: traced work ---------------- */

/* Columns shared by the activity batches, then each batch's own. */
#define TIMES                                                                                      \
    {"start_ns", GPUFL_COL_INT}, { "end_ns", GPUFL_COL_INT }
#define SCOPE                                                                                      \
    { "scope", GPUFL_COL_OPT }
static const gpufl__col_def_t kernel_cols[] = {TIMES,
                                               {"device", GPUFL_COL_INT},
                                               {"context", GPUFL_COL_INT},
                                               {"stream", GPUFL_COL_INT},
                                               {"correlation", GPUFL_COL_INT},
                                               {"name", GPUFL_COL_DICT},
                                               {"grid_x", GPUFL_COL_INT},
                                               {"grid_y", GPUFL_COL_INT},
                                               {"grid_z", GPUFL_COL_INT},
                                               {"block_x", GPUFL_COL_INT},
                                               {"block_y", GPUFL_COL_INT},
                                               {"block_z", GPUFL_COL_INT},
                                               {"registers", GPUFL_COL_INT},
                                               {"static_smem_bytes", GPUFL_COL_INT},
                                               {"dynamic_smem_bytes", GPUFL_COL_INT},
                                               {"local_bytes_per_thread", GPUFL_COL_INT},
                                               {"graph_id", GPUFL_COL_INT},
                                               {"graph_node", GPUFL_COL_INT},
                                               {"demangled", GPUFL_COL_DICT},
                                               SCOPE,
                                               {"config", GPUFL_COL_OPT},
                                               {"external_kind", GPUFL_COL_OPT},
                                               {"external_id", GPUFL_COL_OPT},
                                               {"launch_ns", GPUFL_COL_OPT},
                                               {"tid", GPUFL_COL_OPT},
                                               {"stack", GPUFL_COL_OPT}};
static const gpufl__col_def_t copy_cols[] = {TIMES,
                                             {"device", GPUFL_COL_INT},
                                             {"stream", GPUFL_COL_INT},
                                             {"correlation", GPUFL_COL_INT},
                                             {"bytes", GPUFL_COL_INT},
                                             {"copy_kind", GPUFL_COL_INT},
                                             {"src_kind", GPUFL_COL_INT},
                                             {"dst_kind", GPUFL_COL_INT},
                                             {"async", GPUFL_COL_INT},
                                             SCOPE};
static const gpufl__col_def_t memset_cols[] = {TIMES,
                                               {"device", GPUFL_COL_INT},
                                               {"stream", GPUFL_COL_INT},
                                               {"correlation", GPUFL_COL_INT},
                                               {"bytes", GPUFL_COL_INT},
                                               {"memory_kind", GPUFL_COL_INT},
                                               SCOPE};
static const gpufl__col_def_t sync_cols[] = {TIMES,
                                             {"sync_type", GPUFL_COL_INT},
                                             {"context", GPUFL_COL_INT},
                                             {"stream", GPUFL_COL_OPT},
                                             {"event", GPUFL_COL_OPT},
                                             {"correlation", GPUFL_COL_INT},
                                             SCOPE,
                                             {"tid", GPUFL_COL_OPT},
                                             {"stack", GPUFL_COL_OPT}};
static const gpufl__col_def_t alloc_cols[] = {
    {"ts_ns", GPUFL_COL_INT},       {"op", GPUFL_COL_INT},
    {"memory_kind", GPUFL_COL_INT}, {"device", GPUFL_COL_INT},
    {"address", GPUFL_COL_INT},     {"bytes", GPUFL_COL_INT},
    {"stream", GPUFL_COL_OPT},      {"correlation", GPUFL_COL_INT},
    {"async", GPUFL_COL_INT},       SCOPE};
static const gpufl__col_def_t graph_cols[] = {{"ts_ns", GPUFL_COL_INT},
                                              {"tid", GPUFL_COL_INT},
                                              {"correlation", GPUFL_COL_INT},
                                              {"graph_exec", GPUFL_COL_OPT},
                                              SCOPE};
static const gpufl__col_def_t launch_cols[] = {
    {"ts_ns", GPUFL_COL_INT},         {"tid", GPUFL_COL_OPT},         {"context", GPUFL_COL_OPT},
    {"correlation", GPUFL_COL_INT},   {"config", GPUFL_COL_OPT},      SCOPE,
    {"external_kind", GPUFL_COL_OPT}, {"external_id", GPUFL_COL_OPT}, {"stack", GPUFL_COL_OPT}};
/* Compact lines (util/colcode.c); the kinds and types of copy, memset and sync are gpufl's
 * own values (gpufl_log.h, since v 2), not a vendor's numbers. */
TABLE_CODED(gpufl__wire_kernel, "kernel", kernel_cols, 2, gpufl__colcode_kernel);
_Static_assert(NCOLS(kernel_cols) == GPUFL_KCOL_COUNT, "wire.h's kernel columns");
TABLE_CODED(gpufl__wire_copy, "copy", copy_cols, 3, gpufl__colcode_copy);
TABLE_CODED(gpufl__wire_memset, "memset", memset_cols, 3, gpufl__colcode_memset);
TABLE_CODED(gpufl__wire_sync, "sync", sync_cols, 3, gpufl__colcode_sync);
TABLE_V(gpufl__wire_alloc, "alloc", alloc_cols, GPUFL_WIRE_NOT_GAUGE, GPUFL_LOG_VALUES_VERSION);
TABLE(gpufl__wire_graph_launch, "graph_launch", graph_cols, GPUFL_WIRE_NOT_GAUGE);
TABLE(gpufl__wire_launch, "launch", launch_cols, GPUFL_WIRE_NOT_GAUGE);

/* ---------------- device.log: instruction-level engines ---------------- */

static const gpufl__col_def_t pc_sample_cols[] = {
    {"t0_ns", GPUFL_COL_INT},  {"t1_ns", GPUFL_COL_INT},     {"context", GPUFL_COL_INT},
    {"cubin", GPUFL_COL_DICT}, {"function", GPUFL_COL_DICT}, {"demangled", GPUFL_COL_DICT},
    {"pc", GPUFL_COL_INT},     {"reason", GPUFL_COL_DICT},   {"samples", GPUFL_COL_INT}};
static const gpufl__col_def_t pc_window_cols[] = {
    {"t0_ns", GPUFL_COL_INT},    {"t1_ns", GPUFL_COL_INT},   {"context", GPUFL_COL_INT},
    {"drains", GPUFL_COL_INT},   {"samples", GPUFL_COL_INT}, {"recorded", GPUFL_COL_INT},
    {"non_user", GPUFL_COL_INT}, {"dropped", GPUFL_COL_INT}, {"buffer_full", GPUFL_COL_INT},
    {"pcs_left", GPUFL_COL_INT}, {"lost", GPUFL_COL_INT},    {"unplaced", GPUFL_COL_INT}};
static const gpufl__col_def_t sass_metric_cols[] = {
    {"ts_ns", GPUFL_COL_INT},        {"context", GPUFL_COL_INT},     {"cubin", GPUFL_COL_DICT},
    {"function", GPUFL_COL_DICT},    {"demangled", GPUFL_COL_DICT},  {"pc", GPUFL_COL_INT},
    {"inst", GPUFL_COL_OPT},         {"thread_inst", GPUFL_COL_OPT}, {"sectors", GPUFL_COL_OPT},
    {"sectors_ideal", GPUFL_COL_OPT}};
TABLE(gpufl__wire_pc_sample, "pc_sample", pc_sample_cols, GPUFL_WIRE_NOT_GAUGE);
TABLE(gpufl__wire_pc_window, "pc_window", pc_window_cols, GPUFL_WIRE_NOT_GAUGE);
TABLE(gpufl__wire_sass_metric, "sass_metric", sass_metric_cols, GPUFL_WIRE_NOT_GAUGE);

const gpufl__wire_table_t *const gpufl__wire_tables[] = {
    &gpufl__wire_scope_begin,  &gpufl__wire_scope_end,   &gpufl__wire_host_sample,
    &gpufl__wire_gpu_sample,   &gpufl__wire_kernel,      &gpufl__wire_copy,
    &gpufl__wire_memset,       &gpufl__wire_sync,        &gpufl__wire_alloc,
    &gpufl__wire_graph_launch, &gpufl__wire_launch,      &gpufl__wire_pc_sample,
    &gpufl__wire_pc_window,    &gpufl__wire_sass_metric, NULL};

const gpufl__wire_table_t *gpufl__wire_table(const char *type) {
    for (int i = 0; gpufl__wire_tables[i]; i++)
        if (strcmp(gpufl__wire_tables[i]->type, type) == 0) return gpufl__wire_tables[i];
    return NULL;
}

/* ---------------- batches ---------------- */

int gpufl__batch_init(gpufl__batch_t *b, const char *type, const gpufl__col_def_t *cols,
                      int ncols) {
    memset(b, 0, sizeof *b);
    b->type = type;
    b->version = 1;
    b->cols = cols;
    b->ncols = ncols;
    if (ncols < 1 || ncols > GPUFL_BATCH_MAX_COLS)
        return gpufl__set_error(GPUFL_EINVAL, "a %s batch has %d columns (1..%d)", type, ncols,
                                GPUFL_BATCH_MAX_COLS);
    int dict_cols = 0;
    for (int c = 0; c < ncols; c++) dict_cols += cols[c].kind == GPUFL_COL_DICT;
    b->cells = malloc((size_t)GPUFL_BATCH_MAX_ROWS * (size_t)ncols * sizeof *b->cells);
    b->dict_ids = malloc((size_t)GPUFL_BATCH_MAX_ROWS * (size_t)(dict_cols + 1) * sizeof(uint32_t));
    if (!b->cells || !b->dict_ids) {
        gpufl__batch_fini(b);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a %s batch", type);
    }
    return 0;
}

int gpufl__batch_init_table(gpufl__batch_t *b, const gpufl__wire_table_t *table) {
    int rc = gpufl__batch_init(b, table->type, table->cols, table->ncols);
    b->table = table;
    b->version = table->version;
    b->codes = table->codes;
    if (rc == 0 && b->codes) {
        b->keys = malloc(sizeof *b->keys);
        b->code_last = malloc(2 * GPUFL_BATCH_MAX_ROWS * sizeof *b->code_last);
        /* 4 slots a row: a line's keys never make the map grow */
        if (!b->keys || !b->code_last ||
            gpufl__colcode_keys_init(b->keys, 4 * GPUFL_BATCH_MAX_ROWS) != 0) {
            free(b->keys);
            b->keys = NULL;
            gpufl__batch_fini(b);
            return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a %s batch", table->type);
        }
    }
    return rc;
}

void gpufl__batch_fini(gpufl__batch_t *b) {
    free(b->cells);
    free(b->dict_ids);
    if (b->keys) gpufl__colcode_keys_fini(b->keys);
    free(b->keys);
    free(b->code_last);
    b->cells = NULL;
    b->dict_ids = NULL;
    b->keys = NULL;
    b->code_last = NULL;
}

void gpufl__buf_put_cell(gpufl__buf_t *b, gpufl__col_kind_t kind, const gpufl__cell_t *cell) {
    switch (kind) {
    case GPUFL_COL_PCT: gpufl__buf_put_fixed(b, cell->d, 1); break;
    case GPUFL_COL_FIX2: gpufl__buf_put_fixed(b, cell->d, 2); break;
    case GPUFL_COL_OPT:
        if (cell->i < 0)
            gpufl__buf_put(b, "null", 4);
        else
            gpufl__buf_put_i64(b, cell->i);
        break;
    default: gpufl__buf_put_i64(b, cell->i); break;
    }
}

size_t gpufl__wire_batch_ids(const gpufl__batch_t *b, size_t r0, size_t r1, uint32_t *ids) {
    size_t n = 0;
    for (int c = 0; c < b->ncols; c++) {
        if (b->cols[c].kind != GPUFL_COL_DICT) continue;
        for (size_t r = r0; r < r1; r++) ids[n++] = (uint32_t)b->cells[r * b->ncols + c].i;
    }
    return n;
}

/* Writes cells [r0, r1) of column c (stride ncols) as an array, digits straight in where the
 * kind allows (room reserved once). */
static void put_column(gpufl__buf_t *o, const gpufl__batch_t *b, int c, size_t r0, size_t r1) {
    size_t rows = r1 - r0;
    gpufl__col_kind_t kind = b->cols[c].kind;
    const gpufl__cell_t *cell = &b->cells[r0 * b->ncols + c];
    gpufl__buf_putc(o, '[');
    if ((kind == GPUFL_COL_INT || kind == GPUFL_COL_DICT) &&
        gpufl__buf_reserve(o, rows * 21) == 0) {
        char *p = o->data + o->len;
        for (size_t r = 0; r < rows; r++, cell += b->ncols) {
            if (r) *p++ = ',';
            p = gpufl__fmt_i64(p, cell->i);
        }
        o->len = (size_t)(p - o->data);
    } else {
        for (size_t r = 0; r < rows; r++, cell += b->ncols) {
            if (r) gpufl__buf_putc(o, ',');
            gpufl__buf_put_cell(o, kind, cell);
        }
    }
    gpufl__buf_putc(o, ']');
}

static int col_index(const gpufl__batch_t *b, const char *name) {
    for (int c = 0; c < b->ncols; c++)
        if (strcmp(b->cols[c].name, name) == 0) return c;
    return -1;
}

static int is_null_cell(gpufl__col_kind_t kind, const gpufl__cell_t *cell) {
    return kind == GPUFL_COL_OPT && cell->i < 0;
}

/* 1 when rows [r0, r1) of column c hold one value (a compact line's scalar). */
static int same_value(const gpufl__batch_t *b, int c, size_t r0, size_t r1) {
    const gpufl__cell_t *first = &b->cells[r0 * b->ncols + c];
    for (size_t r = r0 + 1; r < r1; r++)
        if (memcmp(&b->cells[r * b->ncols + c], first, sizeof *first) != 0) return 0;
    return 1;
}

/* A DELTA, AFTER, FROM_PREV or HIGH_KEYED column, as gpufl__colcode_decode reads it back (the
 * running base per key value where the code has a key; a key column the table lacks is null
 * on every row); nulls stay null. */
static void put_relative(gpufl__buf_t *o, const gpufl__batch_t *b, int c,
                         const gpufl__colcode_t *code, int ref, size_t r0, size_t r1) {
    int key = code->key ? col_index(b, code->key) : -1;
    int key2 = code->key2 ? col_index(b, code->key2) : -1;
    int64_t *last = b->code_last, lo = 0; /* HIGH_KEYED: last holds high bits, lo the low */
    gpufl__colcode_keys_reset(b->keys);
    last[0] = 0;
    gpufl__buf_putc(o, '[');
    for (size_t r = r0; r < r1; r++) {
        const gpufl__cell_t *cell = &b->cells[r * b->ncols + c];
        int64_t slot = 0;
        if (code->key) { /* the map has room for every row's key: it never fails */
            int64_t k = 0;
            int k_null = 1;
            if (key >= 0) {
                const gpufl__cell_t *kc = &b->cells[r * b->ncols + key];
                k = kc->i, k_null = is_null_cell(b->cols[key].kind, kc);
            }
            if (code->key2) {
                const gpufl__cell_t *kc = key2 >= 0 ? &b->cells[r * b->ncols + key2] : NULL;
                k = gpufl__colcode_key_pair(k, k_null, kc ? kc->i : 0,
                                            kc ? is_null_cell(b->cols[key2].kind, kc) : 1);
                k_null = 0;
            }
            slot = gpufl__colcode_keys_put(b->keys, k, k_null, (uint32_t)(r - r0));
            if (slot == (int64_t)(r - r0)) last[slot] = 0;
        }
        if (r > r0) gpufl__buf_putc(o, ',');
        int64_t v = cell->i, rv = ref >= 0 ? b->cells[r * b->ncols + ref].i : 0, out;
        if (is_null_cell(b->cols[c].kind, cell)) {
            gpufl__buf_put(o, "null", 4);
        } else {
            switch (code->kind) {
            case GPUFL_CODE_AFTER: /* a duration, less the key's last one if keyed */
                out = (v - rv) - (code->key ? last[slot] : 0), last[slot] = v - rv;
                break;
            case GPUFL_CODE_FROM_PREV: out = v - last[slot]; break;
            case GPUFL_CODE_HIGH_KEYED: /* wraps as the decoder's overflow check expects */
                out = (int64_t)((uint64_t)v - (uint64_t)gpufl__colcode_join(last[slot], lo));
                gpufl__colcode_split(v, &last[slot], &lo);
                break;
            default: out = v - last[slot], last[slot] = v; break;
            }
            gpufl__buf_put_i64(o, out);
        }
        /* the key's next row starts from this row's reference (an end) */
        if (code->kind == GPUFL_CODE_FROM_PREV &&
            !is_null_cell(b->cols[ref].kind, &b->cells[r * b->ncols + ref]))
            last[slot] = rv;
    }
    gpufl__buf_putc(o, ']');
}

/* A KEYED column: per key, in order of first appearance, the value of its rows where they
 * agree (and it is not negative: -n marks an exception), else -n and its n rows' values; the
 * plain column (which reads the same) past GPUFL_COLCODE_MAX_KEYS keys or unless that is
 * fewer entries than rows. */
static void put_keyed(gpufl__buf_t *o, const gpufl__batch_t *b, int c, int key, size_t r0,
                      size_t r1) {
    gpufl__col_kind_t key_kind = b->cols[key].kind, kind = b->cols[c].kind;
    /* per first row: its key's rows, negated for an exception; per row: its key's first row */
    int64_t *n_of = b->code_last, *first = b->code_last + GPUFL_BATCH_MAX_ROWS;
    size_t rows = r1 - r0, entries = 0;
    gpufl__colcode_keys_reset(b->keys);
    for (size_t r = 0; r < rows; r++) {
        const gpufl__cell_t *kc = &b->cells[(r0 + r) * b->ncols + key],
                            *cell = &b->cells[(r0 + r) * b->ncols + c];
        int64_t f =
            gpufl__colcode_keys_put(b->keys, kc->i, is_null_cell(key_kind, kc), (uint32_t)r);
        if (b->keys->count > GPUFL_COLCODE_MAX_KEYS) {
            put_column(o, b, c, r0, r1);
            return;
        }
        first[r] = f;
        if (f == (int64_t)r)
            n_of[r] = is_null_cell(kind, cell) || cell->i >= 0 ? 1 : -1;
        else if (n_of[f] > 0 &&
                 memcmp(&b->cells[(r0 + (size_t)f) * b->ncols + c], cell, sizeof *cell) == 0)
            n_of[f]++;
        else
            n_of[f] = -(n_of[f] < 0 ? -n_of[f] : n_of[f]) - 1;
    }
    for (size_t r = 0; r < rows; r++)
        if (first[r] == (int64_t)r) entries += n_of[r] > 0 ? 1 : 1 + (size_t)-n_of[r];
    if (entries >= rows) {
        put_column(o, b, c, r0, r1);
        return;
    }
    size_t n = 0;
    gpufl__buf_putc(o, '[');
    for (size_t r = 0; r < rows; r++) {
        if (first[r] != (int64_t)r) continue;
        if (n++) gpufl__buf_putc(o, ',');
        if (n_of[r] > 0) {
            gpufl__buf_put_cell(o, kind, &b->cells[(r0 + r) * b->ncols + c]);
            continue;
        }
        gpufl__buf_put_i64(o, n_of[r]);
        for (size_t q = r; q < rows; q++)
            if (first[q] == (int64_t)r) {
                gpufl__buf_putc(o, ',');
                gpufl__buf_put_cell(o, kind, &b->cells[(r0 + q) * b->ncols + c]);
            }
    }
    gpufl__buf_putc(o, ']');
}

/* One column of a compact line: a scalar where every row agrees (never the first column,
 * which gives the row count), else as its code says. */
static void put_compact(gpufl__buf_t *o, const gpufl__batch_t *b, int c, size_t r0, size_t r1) {
    const gpufl__colcode_t *code =
        gpufl__colcode_of(b->codes, b->cols[c].name, strlen(b->cols[c].name));
    if (c > 0 && r1 - r0 > 1 && same_value(b, c, r0, r1)) {
        gpufl__buf_put_cell(o, b->cols[c].kind, &b->cells[r0 * b->ncols + c]);
        return;
    }
    /* the tables declare what their codes refer to; a column without its reference (an ad hoc
     * table) is written plain, which a reader then refuses as a malformed encoding */
    int ref = code && code->ref ? col_index(b, code->ref) : -1;
    if (!code || (code->ref && ref < 0) || !b->keys)
        put_column(o, b, c, r0, r1);
    else if (code->kind == GPUFL_CODE_KEYED)
        put_keyed(o, b, c, ref, r0, r1);
    else
        put_relative(o, b, c, code, ref, r0, r1);
}

void gpufl__wire_batch_line(gpufl__buf_t *o, const gpufl__batch_t *b, size_t r0, size_t r1) {
    gpufl__buf_record_v(o, b->type, b->version);
    for (int c = 0; c < b->ncols; c++) {
        gpufl__buf_key(o, b->cols[c].name);
        if (b->codes)
            put_compact(o, b, c, r0, r1);
        else
            put_column(o, b, c, r0, r1);
    }
    gpufl__buf_puts(o, "}\n");
}

/* ---------------- dict lines and file framing ---------------- */

const char *gpufl__wire_intern_str(const void *ctx, uint32_t id, size_t *len) {
    return gpufl__intern_str(ctx, id, len);
}

void gpufl__wire_dict_line(gpufl__buf_t *o, const uint32_t *ids, size_t n, gpufl__wire_str_fn str,
                           const void *ctx) {
    size_t start = o->len, strs_at, count = 0;
    gpufl__buf_record(o, "dict");
    gpufl__buf_puts(o, ",\"id\":[");
    for (size_t i = 0; i < n; i++) {
        size_t len;
        if (ids[i] == 0 || !str(ctx, ids[i], &len)) continue;
        if (count++) gpufl__buf_putc(o, ',');
        gpufl__buf_put_i64(o, ids[i]);
    }
    if (count == 0) {
        o->len = start;
        return;
    }
    gpufl__buf_puts(o, "],\"str\":[");
    strs_at = o->len;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *s = ids[i] ? str(ctx, ids[i], &len) : NULL;
        if (!s) continue;
        if (o->len > strs_at) gpufl__buf_putc(o, ',');
        gpufl__buf_put_str(o, s, len);
    }
    gpufl__buf_puts(o, "]}\n");
}

void gpufl__wire_header(gpufl__buf_t *b, const gpufl__session_ident_t *id, const char *file,
                        int segment) {
    char epoch[24];
    gpufl__buf_record(b, "header");
    gpufl__buf_kv_str(b, "format", "gpufl-log");
    gpufl__buf_kv_str(b, "file", file);
    gpufl__buf_kv_i64(b, "segment", segment);
    gpufl__buf_kv_str(b, "session_id", id->session_id);
    gpufl__buf_kv_str(b, "app_name", id->app_name);
    gpufl__buf_kv_i64(b, "pid", id->pid);
    gpufl__buf_kv_str(b, "hostname", id->hostname);
    *gpufl__fmt_i64(epoch, id->epoch_ns) = '\0'; /* no stdio: a fatal signal's handler calls it */
    gpufl__buf_kv_str(b, "epoch_ns", epoch);
    gpufl__buf_kv_i64(b, "epoch_unix_us", id->epoch_unix_us);
    gpufl__buf_kv_str(b, "clock", "monotonic");
    gpufl__buf_kv_str(b, "gpufl_version", gpufl_version());
    if (id->job_id[0]) {
        gpufl__buf_kv_str(b, "job_id", id->job_id);
        gpufl__buf_kv_str(b, "job_id_from", id->job_id_from);
    }
    if (id->run_id[0]) gpufl__buf_kv_str(b, "run_id", id->run_id);
    gpufl__buf_puts(b, "}\n");
}

void gpufl__wire_job_id(gpufl__session_ident_t *id, const char *(*get)(const char *name)) {
    /* The scheduler's own id first: a launcher inside a Slurm job may set the others too. */
    static const char *const vars[] = {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "GPUFL_JOB_ID"};
    id->job_id[0] = id->job_id_from[0] = '\0';
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = get(vars[i]);
        if (!v || !*v) continue;
        snprintf(id->job_id, sizeof id->job_id, "%s", v);
        snprintf(id->job_id_from, sizeof id->job_id_from, "%s", vars[i]);
        return;
    }
}

void gpufl__wire_run_id(gpufl__session_ident_t *id, const char *(*get)(const char *name)) {
    const char *v = get("GPUFL_RUN_ID");
    snprintf(id->run_id, sizeof id->run_id, "%s", v ? v : "");
}

void gpufl__wire_segment_end(gpufl__buf_t *o, const char *next) {
    gpufl__buf_record(o, "segment_end");
    gpufl__buf_kv_str(o, "next", next);
    gpufl__buf_puts(o, "}\n");
}
