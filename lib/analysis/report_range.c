/*
 * report_range.c - the report's hardware counters section (engine
 * RangeProfiler): one row per profiled scope with the counters gpufl asks
 * CUPTI for, the metrics the chip could not fit and the profiler's losses.
 * Metrics the report does not know are shown by name. Computed once here
 * and rendered here in every format, from the same cells, as report_pc.c.
 */
#include "analysis/report.h"

#include "core/error.h"

#include <stdlib.h>
#include <string.h>

#define CELL GPUFL_REPORT_CELL

/* The metrics given a column, in column order after the scope path. */
enum col_kind { K_NS, K_PCT, K_RATIO, K_BYTES };
static const struct {
    const char *metric, *json;
    enum col_kind kind;
} columns[] = {
    {"gpu__time_duration.sum", "gpu_time_ns", K_NS},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy_pct", K_PCT},
    {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "sm_active_pct", K_PCT},
    {"sm__inst_executed.avg.per_cycle_active", "inst_per_active_cycle", K_RATIO},
    {"l1tex__t_sector_hit_rate.pct", "l1_hit_pct", K_PCT},
    {"dram__bytes_read.sum", "dram_read_bytes", K_BYTES},
    {"dram__bytes_write.sum", "dram_write_bytes", K_BYTES},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram_throughput_pct", K_PCT},
    {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor_pipe_pct",
     K_PCT},
};
#define N_COLUMNS (sizeof columns / sizeof columns[0])
#define N_CELLS   (N_COLUMNS + 1)

static int known(const char *metric) {
    for (size_t i = 0; i < N_COLUMNS; i++)
        if (strcmp(columns[i].metric, metric) == 0) return 1;
    return 0;
}

/* The counters of range_profiler_stats the report shows. */
static const char *const stat_keys[] = {"ranges",        "nested", "concurrent", "no_context",
                                        "over_capacity", "lost",   "errors"};
#define N_STATS (sizeof stat_keys / sizeof stat_keys[0])

/* ---------------------------------------------------------------------- */
/* Building                                                                 */
/* ---------------------------------------------------------------------- */

static int cmp_range(const void *a, const void *b) {
    const gpufl_model_range_t *x = *(const gpufl_model_range_t *const *)a;
    const gpufl_model_range_t *y = *(const gpufl_model_range_t *const *)b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    if (x->context != y->context) return x->context < y->context ? -1 : 1;
    return (x->scope > y->scope) - (x->scope < y->scope);
}

int gpufl__report_build_range(const gpufl_model_t *m, gpufl_report_range_t *s) {
    memset(s, 0, sizeof *s);
    s->shown = m->n_ranges > 0;
    if (!s->shown) return 0;
    for (size_t i = 0; i < m->n_range_contexts; i++) {
        const gpufl_model_range_context_t *c = &m->range_contexts[i];
        s->contexts++;
        if (*c->error) {
            s->failed++;
            if (!s->error) s->error = c->error;
        } else if (!s->chip) {
            s->chip = c->chip;
            s->metrics = c->metrics;
            s->left_out = c->left_out;
        }
    }
    s->stats = m->range_stats;
    s->rows = malloc(m->n_ranges * sizeof *s->rows);
    if (!s->rows) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    for (size_t i = 0; i < m->n_ranges; i++) s->rows[i] = &m->ranges[i];
    qsort(s->rows, m->n_ranges, sizeof *s->rows, cmp_range);
    s->total = m->n_ranges;
    s->n_rows = s->total < GPUFL_REPORT_RANGE_ROWS_MAX ? s->total : GPUFL_REPORT_RANGE_ROWS_MAX;
    return 0;
}

void gpufl__report_free_range(gpufl_report_range_t *s) {
    free(s->rows);
    memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------------- */
/* Cells shared by the formats                                              */
/* ---------------------------------------------------------------------- */

/* A metric of a range: 0 and its value, or -1 when absent or null. */
static int metric(const gpufl_model_range_t *g, const char *name, double *v) {
    return gpufl__reader_num(json_object_get(g->metrics, name), v) == 0 ? 0 : -1;
}

static void range_cells(const gpufl_model_range_t *g, char c[N_CELLS][CELL]) {
    snprintf(c[0], CELL, "%s", g->path);
    for (size_t i = 0; i < N_COLUMNS; i++) {
        double v;
        char *b = c[i + 1];
        if (metric(g, columns[i].metric, &v) != 0) {
            snprintf(b, CELL, "-");
            continue;
        }
        switch (columns[i].kind) {
        case K_NS: gpufl__report_fmt_ns(b, CELL, v); break;
        case K_PCT: snprintf(b, CELL, "%.1f%%", v); break;
        case K_RATIO: snprintf(b, CELL, "%.2f", v); break;
        case K_BYTES: gpufl__report_fmt_bytes(b, CELL, v); break;
        }
    }
}

/* The metrics of g without a column, "name=value, ..." ("" when none). */
static void other_metrics(const gpufl_model_range_t *g, char *buf, size_t size) {
    size_t k = 0;
    const char *name;
    json_t *v;
    buf[0] = '\0';
    json_object_foreach(g->metrics, name, v) {
        if (known(name)) continue;
        if (json_is_number(v))
            gpufl__report_cat(buf, size, &k, "%s%s=%.10g", k ? ", " : "", name,
                              json_number_value(v));
        else
            gpufl__report_cat(buf, size, &k, "%s%s=null", k ? ", " : "", name);
    }
}

/* The table's heads: the scope, then columns[].head. */
static const char *const heads[N_CELLS] = {"scope", "GPU time",   "occupancy", "SM active",
                                           "IPC",   "L1 hit",     "DRAM read", "DRAM write",
                                           "DRAM",  "tensor pipe"};
static const char *const aligns = "lrrrrrrrrr";

/* The "label: value" fields of the section. */
#define RANGE_FIELDS 4
#define FIELD_BYTES  1024
static size_t fields(const gpufl_report_range_t *s, const char *label[RANGE_FIELDS],
                     char value[RANGE_FIELDS][FIELD_BYTES]) {
    size_t n = 0, k = 0;
    label[n] = "contexts";
    snprintf(value[n++], FIELD_BYTES, "%zu profiled%s%s%s, %zu failed%s%s", s->contexts - s->failed,
             s->chip && *s->chip ? " (" : "", s->chip ? s->chip : "",
             s->chip && *s->chip ? ")" : "", s->failed, s->error ? ": " : "",
             s->error ? s->error : "");
    label[n] = "metrics";
    value[n][0] = '\0';
    for (size_t i = 0; s->metrics && i < json_array_size(s->metrics); i++)
        gpufl__report_cat(value[n], FIELD_BYTES, &k, "%s%s", i ? ", " : "",
                          json_string_value(json_array_get(s->metrics, i)));
    if (!k) snprintf(value[n], FIELD_BYTES, "not said (no range_profiler record names them)");
    n++;
    label[n] = "left out";
    k = 0;
    value[n][0] = '\0';
    const char *name;
    json_t *why;
    json_object_foreach((json_t *)s->left_out, name, why) {
        gpufl__report_cat(value[n], FIELD_BYTES, &k, "%s%s (%s)", k ? "; " : "", name,
                          json_is_string(why) ? json_string_value(why) : "no reason given");
    }
    if (!k) snprintf(value[n], FIELD_BYTES, "none");
    n++;
    label[n] = "stats";
    if (!s->stats) {
        snprintf(value[n++], FIELD_BYTES,
                 "unknown: no range_profiler_stats record (the session did not end cleanly)");
        return n;
    }
    k = 0;
    value[n][0] = '\0';
    for (size_t i = 0; i < N_STATS; i++) {
        char c[24];
        gpufl__report_fmt_count(c, sizeof c, gpufl__report_stat_count(s->stats, stat_keys[i]));
        gpufl__report_cat(value[n], FIELD_BYTES, &k, "%s%s %s", i ? ", " : "", stat_keys[i], c);
    }
    n++;
    return n;
}

static void rows_note(const gpufl_report_range_t *s, char *buf, size_t size) {
    snprintf(buf, size,
             "One row per profiled scope, by start time (%zu of %zu); values over the range's "
             "elapsed time, gaps between its kernels included.",
             s->n_rows, s->total);
}

/* ---------------------------------------------------------------------- */
/* Text                                                                     */
/* ---------------------------------------------------------------------- */

void gpufl__report_text_range(const gpufl_report_t *r, FILE *out) {
    const gpufl_report_range_t *s = &r->range;
    if (!s->shown) return;
    fprintf(out, "\nHardware counters per scope\n");
    const char *label[RANGE_FIELDS];
    char value[RANGE_FIELDS][FIELD_BYTES], note[200];
    size_t nf = fields(s, label, value);
    for (size_t i = 0; i < nf; i++) fprintf(out, "  %-18s %s\n", label[i], value[i]);
    rows_note(s, note, sizeof note);
    fprintf(out, "\n  %s\n\n", note);
    gpufl_report_cells_t *cells = calloc(s->n_rows + 1, sizeof *cells);
    if (!cells) return;
    for (size_t c = 0; c < N_CELLS; c++) snprintf(cells[0][c], CELL, "%s", heads[c]);
    for (size_t i = 0; i < s->n_rows; i++) range_cells(s->rows[i], cells[i + 1]);
    gpufl__report_text_table(out, s->n_rows + 1, N_CELLS, cells, aligns);
    free(cells);
    char other[FIELD_BYTES];
    int said = 0;
    for (size_t i = 0; i < s->n_rows; i++) {
        other_metrics(s->rows[i], other, sizeof other);
        if (!*other) continue;
        if (!said++) fprintf(out, "\n  Other metrics\n\n");
        fprintf(out, "  %s (scope %lld): %s\n", s->rows[i]->path, (long long)s->rows[i]->scope,
                other);
    }
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                     */
/* ---------------------------------------------------------------------- */

static json_t *range_json(const gpufl_model_range_t *g) {
    json_t *o = json_object(), *other = json_object();
    if (!o || !other) {
        json_decref(o);
        json_decref(other);
        return NULL;
    }
    json_object_set_new(o, "scope_path", json_string(g->path));
    json_object_set_new(o, "scope", json_integer(g->scope));
    json_object_set_new(o, "context", json_integer(g->context));
    json_object_set_new(o, "tid", g->tid < 0 ? json_null() : json_integer(g->tid));
    json_object_set_new(o, "start_ns", json_integer(g->start_ns));
    json_object_set_new(o, "end_ns", json_integer(g->ts_ns));
    for (size_t i = 0; i < N_COLUMNS; i++) {
        double v;
        json_object_set_new(o, columns[i].json,
                            metric(g, columns[i].metric, &v) == 0 ? json_real(v) : json_null());
    }
    const char *name;
    json_t *v;
    json_object_foreach(g->metrics, name, v) {
        if (!known(name))
            json_object_set_new(other, name,
                                json_is_number(v) ? json_real(json_number_value(v)) : json_null());
    }
    json_object_set_new(o, "other", other);
    return o;
}

json_t *gpufl__report_json_range(const gpufl_report_t *r) {
    const gpufl_report_range_t *s = &r->range;
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "contexts", json_integer((json_int_t)s->contexts));
    json_object_set_new(o, "contexts_failed", json_integer((json_int_t)s->failed));
    json_object_set_new(o, "error", s->error ? json_string(s->error) : json_null());
    json_object_set_new(o, "chip", s->chip && *s->chip ? json_string(s->chip) : json_null());
    json_object_set_new(o, "metrics", s->metrics ? json_deep_copy(s->metrics) : json_array());
    json_object_set_new(o, "left_out", s->left_out ? json_deep_copy(s->left_out) : json_object());
    json_object_set_new(o, "stats", gpufl__report_json_stats(s->stats, stat_keys, N_STATS));
    json_t *ranges = json_array();
    for (size_t i = 0; ranges && i < s->n_rows; i++)
        json_array_append_new(ranges, range_json(s->rows[i]));
    json_object_set_new(o, "ranges", ranges);
    json_object_set_new(o, "more_ranges", json_integer((json_int_t)(s->total - s->n_rows)));
    return o;
}

/* ---------------------------------------------------------------------- */
/* Markdown and HTML                                                        */
/* ---------------------------------------------------------------------- */

void gpufl__report_doc_range(const gpufl_report_emitter_t *e, const gpufl_report_t *r) {
    const gpufl_report_range_t *s = &r->range;
    if (!s->shown) return;
    FILE *o = e->out;
    e->heading(o, 2, "Hardware counters per scope");
    const char *label[RANGE_FIELDS];
    char value[RANGE_FIELDS][FIELD_BYTES], note[200];
    size_t nf = fields(s, label, value);
    e->fields_begin(o);
    for (size_t i = 0; i < nf; i++) e->field(o, label[i], value[i]);
    e->fields_end(o);
    rows_note(s, note, sizeof note);
    e->para(o, note);
    e->table_begin(o, N_CELLS, heads, aligns);
    for (size_t i = 0; i < s->n_rows; i++) {
        char c[N_CELLS][CELL];
        const char *cp[N_CELLS];
        range_cells(s->rows[i], c);
        for (size_t k = 0; k < N_CELLS; k++) cp[k] = c[k];
        e->row(o, N_CELLS, cp);
    }
    e->table_end(o);
    char other[FIELD_BYTES], line[FIELD_BYTES + 200];
    int said = 0;
    for (size_t i = 0; i < s->n_rows; i++) {
        other_metrics(s->rows[i], other, sizeof other);
        if (!*other) continue;
        if (!said++) e->heading(o, 3, "Other metrics");
        snprintf(line, sizeof line, "%s (scope %lld): %s", s->rows[i]->path,
                 (long long)s->rows[i]->scope, other);
        e->para(o, line);
    }
}
