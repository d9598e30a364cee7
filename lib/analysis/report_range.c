// SPDX-License-Identifier: Apache-2.0
/*
 * report_range.c - the report's hardware counters section (engine
 * RangeProfiler): one row per profiled scope with the counters gpufl asks
 * CUPTI for, the metrics the chip could not fit and the profiler's losses,
 * then per scope path the figures no single range holds when the metrics
 * are split into groups collected in turn (SM throughput, L2 hit rate).
 * Metrics the report does not know are shown by name. Computed once here
 * and rendered here in every format, from the same cells, as report_pc.c.
 */
#include "analysis/report.h"

#include "util/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CELL GPUFL_REPORT_CELL

#define GPU_TIME       "gpu__time_duration.sum"
#define SM_THROUGHPUT  "sm__throughput.avg.pct_of_peak_sustained_elapsed"
#define L2_HIT_RATE    "lts__t_sector_hit_rate.pct"
#define L2_LOOKUP_HIT  "lts__t_sectors_lookup_hit.sum"
#define L2_LOOKUP_MISS "lts__t_sectors_lookup_miss.sum"
#define L2_SECTORS     "lts__t_sectors.sum"

/* The metrics given a column, in column order after the scope path. */
enum col_kind { K_NS, K_PCT, K_RATIO, K_BYTES };
static const struct {
    const char *metric, *json;
    enum col_kind kind;
} columns[] = {
    {GPU_TIME, "gpu_time_ns", K_NS},
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
static const char *const stat_keys[] = {"ranges",     "settling",      "nested", "concurrent",
                                        "no_context", "over_capacity", "lost",   "errors"};
#define N_STATS (sizeof stat_keys / sizeof stat_keys[0])

/* ---------------------------------------------------------------------- */
/* Building                                                                 */
/* ---------------------------------------------------------------------- */

static int cmp_range(const void *a, const void *b) {
    const gpufl__model_range_t *x = *(const gpufl__model_range_t *const *)a;
    const gpufl__model_range_t *y = *(const gpufl__model_range_t *const *)b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    if (x->context != y->context) return x->context < y->context ? -1 : 1;
    return (x->scope > y->scope) - (x->scope < y->scope);
}

/* A metric of a range: 0 and its value, or -1 when absent or null. */
static int metric(const gpufl__model_range_t *g, const char *name, double *v) {
    return gpufl__reader_num(json_object_get(g->metrics, name), v) == 0 ? 0 : -1;
}

/* By path, group, then the order read: the sums come out the same on
 * every platform. */
static int cmp_path(const void *a, const void *b) {
    const gpufl__model_range_t *x = *(const gpufl__model_range_t *const *)a;
    const gpufl__model_range_t *y = *(const gpufl__model_range_t *const *)b;
    int c = strcmp(x->path, y->path);
    if (c) return c;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    return (x > y) - (x < y);
}

static int cmp_path_time(const void *a, const void *b) {
    const gpufl__report_range_path_t *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns) return x->gpu_ns > y->gpu_ns ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* Over the ranges rs[0..n) with metric name and a GPU time t > 0: the sums
 * of value * t, of value and of t. Returns how many ranges had them. */
static size_t timed_sums(const gpufl__model_range_t *const *rs, size_t n, const char *name,
                         double *vt, double *v_sum, double *t_sum) {
    size_t k = 0;
    *vt = *v_sum = *t_sum = 0;
    for (size_t i = 0; i < n; i++) {
        double v, t;
        if (metric(rs[i], GPU_TIME, &t) != 0 || !(t > 0) || metric(rs[i], name, &v) != 0) continue;
        *vt += v * t;
        *v_sum += v;
        *t_sum += t;
        k++;
    }
    return k;
}

/* A percentage or ratio over rs weighted by GPU time; NAN when not seen. */
static double weighted_mean(const gpufl__model_range_t *const *rs, size_t n, const char *name) {
    double vt, v, t;
    return timed_sums(rs, n, name, &vt, &v, &t) ? vt / t : NAN;
}

/* A .sum counter over rs per ns of GPU time; NAN when not seen. */
static double rate(const gpufl__model_range_t *const *rs, size_t n, const char *name) {
    double vt, v, t;
    return timed_sums(rs, n, name, &vt, &v, &t) ? v / t : NAN;
}

/* SM throughput: measured, else the largest of the metrics it is the
 * maximum of, when every one of them was seen. */
static void path_sm_throughput(const gpufl__report_range_t *s,
                               const gpufl__model_range_t *const *rs, size_t n,
                               gpufl__report_range_path_t *p) {
    p->sm_throughput_pct = weighted_mean(rs, n, SM_THROUGHPUT);
    if (!isnan(p->sm_throughput_pct)) return;
    size_t k = json_array_size(s->sm_throughput_of);
    double most = NAN;
    const char *limiter = NULL;
    for (size_t i = 0; i < k; i++) {
        const char *name = json_string_value(json_array_get(s->sm_throughput_of, i));
        double v = weighted_mean(rs, n, name);
        if (isnan(v)) return;
        if (!limiter || v > most) {
            most = v;
            limiter = name;
        }
    }
    p->sm_throughput_pct = most;
    p->sm_limiter = limiter;
}

/* L2 hit rate: measured, else the lookup hits over the sectors (which is
 * lts__t_sector_hit_rate: checked against Nsight Compute's on an H100),
 * else over the lookups (hits and misses; a miss can count more than once,
 * so this reads low where misses repeat), each from ranges of any group. */
static double path_l2_hit(const gpufl__model_range_t *const *rs, size_t n) {
    double pct = weighted_mean(rs, n, L2_HIT_RATE);
    if (!isnan(pct)) return pct;
    double hit = rate(rs, n, L2_LOOKUP_HIT), sectors = rate(rs, n, L2_SECTORS);
    /* It can pass 100 where nearly every lookup hits: Nsight Compute's
     * range replay gives 100.2 and 100.5 % on two such kernels (H100), and
     * so it is shown, not cut. */
    if (sectors > 0 && !isnan(hit)) return 100 * hit / sectors;
    double miss = rate(rs, n, L2_LOOKUP_MISS);
    return hit + miss > 0 ? 100 * hit / (hit + miss) : NAN; /* false when either is NAN */
}

/* Into use, the ranges of rs[0..n) (sorted by group) that the figures
 * take: of each group the settled ones, or all of them where every range
 * of the group is settling. Returns how many; *left counts the settling
 * ranges set aside, *used those taken. */
static size_t settled(const gpufl__model_range_t *const *rs, size_t n,
                      const gpufl__model_range_t **use, size_t *left, size_t *used) {
    size_t k = 0;
    *left = *used = 0;
    for (size_t i = 0, j; i < n; i = j) {
        size_t calm = 0;
        for (j = i; j < n && rs[j]->group == rs[i]->group; j++) calm += !rs[j]->settling;
        for (size_t q = i; q < j; q++) {
            if (calm && rs[q]->settling) {
                (*left)++;
                continue;
            }
            *used += rs[q]->settling != 0;
            use[k++] = rs[q];
        }
    }
    return k;
}

/* The figures of the ranges rs[0..n) of one path, sorted by group; use:
 * scratch of n. */
static void path_figures(const gpufl__report_range_t *s, const gpufl__model_range_t *const *rs,
                         size_t n, const gpufl__model_range_t **use,
                         gpufl__report_range_path_t *p) {
    memset(p, 0, sizeof *p);
    p->path = rs[0]->path;
    p->ranges = n;
    for (size_t i = 0; i < n; i++) {
        double t;
        p->groups_seen += i == 0 || rs[i]->group != rs[i - 1]->group;
        if (metric(rs[i], GPU_TIME, &t) == 0) p->gpu_ns += t;
    }
    size_t k = settled(rs, n, use, &p->settling_left_out, &p->settling_used);
    path_sm_throughput(s, use, k, p);
    p->l2_hit_pct = path_l2_hit(use, k);
}

/* The end of the run of ranges of byp[i]'s path. */
static size_t path_end(const gpufl__model_range_t *const *byp, size_t n, size_t i) {
    size_t j = i + 1;
    while (j < n && strcmp(byp[j]->path, byp[i]->path) == 0) j++;
    return j;
}

/* s->paths from the model's ranges, sorted in byp (scratch, n_ranges). */
static int build_paths(const gpufl__model_t *m, gpufl__report_range_t *s,
                       const gpufl__model_range_t **byp) {
    size_t n = m->n_ranges, n_paths = 0;
    for (size_t i = 0; i < n; i++) byp[i] = &m->ranges[i];
    qsort(byp, n, sizeof *byp, cmp_path);
    for (size_t i = 0; i < n; i = path_end(byp, n, i)) n_paths++;
    s->paths = malloc(n_paths * sizeof *s->paths);
    const gpufl__model_range_t **use = malloc((n ? n : 1) * sizeof *use);
    if (!s->paths || !use) {
        free(use);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    }
    for (size_t i = 0, j; i < n; i = j) {
        j = path_end(byp, n, i);
        path_figures(s, byp + i, j - i, use, &s->paths[s->paths_total++]);
    }
    free(use);
    qsort(s->paths, s->paths_total, sizeof *s->paths, cmp_path_time);
    s->n_paths =
        s->paths_total < GPUFL_REPORT_RANGE_ROWS_MAX ? s->paths_total : GPUFL_REPORT_RANGE_ROWS_MAX;
    return 0;
}

int gpufl__report_build_range(const gpufl__model_t *m, gpufl__report_range_t *s) {
    memset(s, 0, sizeof *s);
    s->shown = m->n_ranges > 0;
    if (!s->shown) return 0;
    s->n_groups = 1;
    for (size_t i = 0; i < m->n_range_contexts; i++) {
        const gpufl__model_range_context_t *c = &m->range_contexts[i];
        s->contexts++;
        if (c->n_groups > s->n_groups) s->n_groups = c->n_groups;
        if (*c->error) {
            s->failed++;
            if (!s->error) s->error = c->error;
        } else if (!s->chip) {
            s->chip = c->chip;
            s->metrics = c->metrics;
            s->left_out = c->left_out;
            s->groups = c->groups;
            s->sm_throughput_of = c->sm_throughput_of;
        }
    }
    for (size_t i = 0; i < m->n_ranges; i++) /* a group without its context's record */
        if ((uint64_t)m->ranges[i].group >= s->n_groups)
            s->n_groups = (size_t)m->ranges[i].group + 1;
    s->stats = m->range_stats;
    s->rows = malloc(m->n_ranges * sizeof *s->rows);
    if (!s->rows) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    int rc = build_paths(m, s, s->rows);
    if (rc) return rc;
    for (size_t i = 0; i < m->n_ranges; i++) {
        s->settling += m->ranges[i].settling != 0;
        if (s->n_groups > 1 && m->ranges[i].group != 0)
            s->other_groups++;
        else
            s->rows[s->total++] = &m->ranges[i];
    }
    qsort(s->rows, s->total, sizeof *s->rows, cmp_range);
    s->n_rows = s->total < GPUFL_REPORT_RANGE_ROWS_MAX ? s->total : GPUFL_REPORT_RANGE_ROWS_MAX;
    return 0;
}

void gpufl__report_free_range(gpufl__report_range_t *s) {
    free(s->rows);
    free(s->paths);
    memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------------- */
/* Cells shared by the formats                                              */
/* ---------------------------------------------------------------------- */

/* A table of the section: its heads and the cells of its row i. */
typedef struct range_table {
    size_t ncol;
    const char *const *heads;
    const char *aligns;
    void (*cells)(const gpufl__report_range_t *s, size_t i, char c[][CELL]);
} range_table_t;

/* A scope path cell, " *" after it when marked; the mark survives a path
 * longer than the cell. */
static void path_cell(char *c, const char *path, int marked) {
    snprintf(c, CELL, "%.*s%s", (int)CELL - 3, path, marked ? " *" : "");
}

static void range_cells(const gpufl__report_range_t *s, size_t row, char c[][CELL]) {
    const gpufl__model_range_t *g = s->rows[row];
    path_cell(c[0], g->path, g->settling);
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

/* The table's heads: the scope, then columns[].head. */
static const char *const heads[N_CELLS] = {"scope", "GPU time",   "occupancy", "SM active",
                                           "IPC",   "L1 hit",     "DRAM read", "DRAM write",
                                           "DRAM",  "tensor pipe"};
static const range_table_t range_table = {N_CELLS, heads, "lrrrrrrrrr", range_cells};

/* A limiter as the table shows it: "sm__" and the pct_of_peak suffix left
 * off the name. */
static void short_limiter(char *buf, size_t size, const char *name) {
    static const char prefix[] = "sm__", suffix[] = ".avg.pct_of_peak_sustained_elapsed";
    if (strncmp(name, prefix, sizeof prefix - 1) == 0) name += sizeof prefix - 1;
    size_t len = strlen(name);
    if (len > sizeof suffix - 1 && strcmp(name + len - (sizeof suffix - 1), suffix) == 0)
        len -= sizeof suffix - 1;
    snprintf(buf, size, "%.*s", (int)len, name);
}

static void pct_cell(char *buf, double pct) {
    if (isnan(pct))
        snprintf(buf, CELL, "-");
    else
        snprintf(buf, CELL, "%.1f%%", pct);
}

static void path_cells(const gpufl__report_range_t *s, size_t row, char c[][CELL]) {
    const gpufl__report_range_path_t *p = &s->paths[row];
    path_cell(c[0], p->path, p->settling_used != 0);
    snprintf(c[1], CELL, "%zu", p->ranges);
    snprintf(c[2], CELL, "%zu/%zu", p->settling_left_out, p->settling_used);
    snprintf(c[3], CELL, "%zu/%zu", p->groups_seen, s->n_groups);
    pct_cell(c[4], p->sm_throughput_pct);
    if (p->sm_limiter)
        short_limiter(c[5], CELL, p->sm_limiter);
    else
        snprintf(c[5], CELL, "-");
    pct_cell(c[6], p->l2_hit_pct);
}

static const char *const path_heads[] = {"scope",         "ranges",     "settling", "groups",
                                         "SM throughput", "SM limiter", "L2 hit"};
static const range_table_t path_table = {sizeof path_heads / sizeof path_heads[0], path_heads,
                                         "lrrrrlr", path_cells};

/* The metrics of g without a column, "name=value, ..." ("" when none). */
static void other_metrics(const gpufl__model_range_t *g, char *buf, size_t size) {
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

/* The names of a, ", "-separated, appended to buf at *k. */
static void cat_names(char *buf, size_t size, size_t *k, const json_t *a) {
    for (size_t i = 0; i < json_array_size(a); i++)
        gpufl__report_cat(buf, size, k, "%s%s", i ? ", " : "",
                          json_string_value(json_array_get(a, i)));
}

/* The "label: value" fields of the section. */
#define RANGE_FIELDS 6
#define FIELD_BYTES  1024
static size_t fields(const gpufl__report_range_t *s, const char *label[RANGE_FIELDS],
                     char value[RANGE_FIELDS][FIELD_BYTES]) {
    size_t n = 0, k = 0;
    label[n] = "contexts";
    snprintf(value[n++], FIELD_BYTES, "%zu profiled%s%s%s, %zu failed%s%s", s->contexts - s->failed,
             s->chip && *s->chip ? " (" : "", s->chip ? s->chip : "",
             s->chip && *s->chip ? ")" : "", s->failed, s->error ? ": " : "",
             s->error ? s->error : "");
    label[n] = "metrics";
    value[n][0] = '\0';
    cat_names(value[n], FIELD_BYTES, &k, s->metrics);
    if (!k) snprintf(value[n], FIELD_BYTES, "not said (no range_profiler record names them)");
    n++;
    if (s->n_groups > 1) {
        label[n] = "metric groups";
        k = 0;
        gpufl__report_cat(value[n], FIELD_BYTES, &k,
                          "%zu, one per collection: group 0, and the others in turn as the switch "
                          "budget allows; the metrics above are group 0",
                          s->n_groups);
        for (size_t i = 1; i < json_array_size(s->groups); i++) {
            gpufl__report_cat(value[n], FIELD_BYTES, &k, "; %zu: ", i);
            cat_names(value[n], FIELD_BYTES, &k, json_array_get(s->groups, i));
        }
        n++;
    }
    if (json_array_size(s->sm_throughput_of)) {
        label[n] = "SM throughput of";
        k = 0;
        gpufl__report_cat(value[n], FIELD_BYTES, &k, "the largest of ");
        cat_names(value[n], FIELD_BYTES, &k, s->sm_throughput_of);
        n++;
    }
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

#define NOTE_BYTES 800

static void rows_note(const gpufl__report_range_t *s, char *buf, size_t size) {
    size_t k = 0;
    gpufl__report_cat(buf, size, &k,
                      "One row per profiled scope%s, by start time (%zu of %zu); values over the "
                      "range's elapsed time, gaps between its kernels included.",
                      s->n_groups > 1 ? " of metric group 0" : "", s->n_rows, s->total);
    if (s->other_groups)
        gpufl__report_cat(buf, size, &k,
                          " Ranges of the other groups (%zu) are not listed: they count in the "
                          "figures per scope path.",
                          s->other_groups);
    /* Measured on an H100 (docs/design/range-profiler.md, "Settling"). */
    if (s->settling)
        gpufl__report_cat(buf, size, &k,
                          " * settling (%zu of all ranges): one of the first ranges on its "
                          "context after the profiler was configured (started, or switched "
                          "metric group); its DRAM writes may include what L2 then held dirty.",
                          s->settling);
    else if (s->stats && !json_object_get(s->stats, "settling"))
        gpufl__report_cat(buf, size, &k,
                          " This log does not mark settling ranges (an older gpufl): the first "
                          "ranges after each configuration of the profiler may include DRAM "
                          "writes of what L2 then held dirty.");
}

static void paths_note(const gpufl__report_range_t *s, char *buf, size_t size) {
    snprintf(buf, size,
             "One row per scope path, by GPU time (%zu of %zu): its ranges of every group, "
             "weighted by GPU time, less the settling ones of a group that has settled ones "
             "(settling: set aside / considered for want of settled ones, * where some were). SM "
             "throughput is sm__throughput, else the largest of the "
             "metrics it is the maximum of (SM limiter); L2 hit is lts__t_sector_hit_rate, else "
             "lookup hits / sectors, else lookup hits / (hits + misses). These combine different "
             "instances of the scope, so they assume its instances do similar work.",
             s->n_paths, s->paths_total);
}

/* ---------------------------------------------------------------------- */
/* Text                                                                     */
/* ---------------------------------------------------------------------- */

static void text_table(FILE *out, const gpufl__report_range_t *s, const range_table_t *t,
                       size_t n_rows) {
    gpufl__report_cells_t *cells = calloc(n_rows + 1, sizeof *cells);
    if (!cells) return;
    for (size_t c = 0; c < t->ncol; c++) snprintf(cells[0][c], CELL, "%s", t->heads[c]);
    for (size_t i = 0; i < n_rows; i++) t->cells(s, i, cells[i + 1]);
    gpufl__report_text_table(out, n_rows + 1, t->ncol, cells, t->aligns);
    free(cells);
}

void gpufl__report_text_range(const gpufl__report_t *r, FILE *out) {
    const gpufl__report_range_t *s = &r->range;
    if (!s->shown) return;
    fprintf(out, "\nHardware counters per scope\n");
    const char *label[RANGE_FIELDS];
    char value[RANGE_FIELDS][FIELD_BYTES], note[NOTE_BYTES];
    size_t nf = fields(s, label, value);
    for (size_t i = 0; i < nf; i++) fprintf(out, "  %-18s %s\n", label[i], value[i]);
    rows_note(s, note, sizeof note);
    fprintf(out, "\n  %s\n\n", note);
    text_table(out, s, &range_table, s->n_rows);
    char other[FIELD_BYTES];
    int said = 0;
    for (size_t i = 0; i < s->n_rows; i++) {
        other_metrics(s->rows[i], other, sizeof other);
        if (!*other) continue;
        if (!said++) fprintf(out, "\n  Other metrics\n\n");
        fprintf(out, "  %s (scope %lld): %s\n", s->rows[i]->path, (long long)s->rows[i]->scope,
                other);
    }
    paths_note(s, note, sizeof note);
    fprintf(out, "\n  Per scope path\n\n  %s\n\n", note);
    text_table(out, s, &path_table, s->n_paths);
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                     */
/* ---------------------------------------------------------------------- */

static json_t *range_json(const gpufl__model_range_t *g) {
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
    json_object_set_new(o, "settling", json_boolean(g->settling));
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

static json_t *pct_json(double pct) { return isnan(pct) ? json_null() : json_real(pct); }

static json_t *path_json(const gpufl__report_range_t *s, const gpufl__report_range_path_t *p) {
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "scope_path", json_string(p->path));
    json_object_set_new(o, "ranges", json_integer((json_int_t)p->ranges));
    json_object_set_new(o, "groups_seen", json_integer((json_int_t)p->groups_seen));
    json_object_set_new(o, "settling_left_out", json_integer((json_int_t)p->settling_left_out));
    json_object_set_new(o, "settling_used", json_integer((json_int_t)p->settling_used));
    json_object_set_new(o, "groups", json_integer((json_int_t)s->n_groups));
    json_object_set_new(o, "sm_throughput_pct", pct_json(p->sm_throughput_pct));
    json_object_set_new(o, "sm_throughput_limiter",
                        p->sm_limiter ? json_string(p->sm_limiter) : json_null());
    json_object_set_new(o, "l2_hit_pct", pct_json(p->l2_hit_pct));
    return o;
}

/* The groups as the log has them; without them, metrics as the one group. */
static json_t *groups_json(const gpufl__report_range_t *s) {
    if (s->groups) return json_deep_copy(s->groups);
    json_t *a = json_array();
    if (a && s->metrics) json_array_append_new(a, json_deep_copy(s->metrics));
    return a;
}

json_t *gpufl__report_json_range(const gpufl__report_t *r) {
    const gpufl__report_range_t *s = &r->range;
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "contexts", json_integer((json_int_t)s->contexts));
    json_object_set_new(o, "contexts_failed", json_integer((json_int_t)s->failed));
    json_object_set_new(o, "error", s->error ? json_string(s->error) : json_null());
    json_object_set_new(o, "chip", s->chip && *s->chip ? json_string(s->chip) : json_null());
    json_object_set_new(o, "metrics", s->metrics ? json_deep_copy(s->metrics) : json_array());
    json_object_set_new(o, "groups", groups_json(s));
    json_object_set_new(o, "sm_throughput_of",
                        s->sm_throughput_of ? json_deep_copy(s->sm_throughput_of) : json_array());
    json_object_set_new(o, "left_out", s->left_out ? json_deep_copy(s->left_out) : json_object());
    json_object_set_new(o, "stats", gpufl__report_json_stats(s->stats, stat_keys, N_STATS));
    json_t *ranges = json_array();
    for (size_t i = 0; ranges && i < s->n_rows; i++)
        json_array_append_new(ranges, range_json(s->rows[i]));
    json_object_set_new(o, "ranges", ranges);
    json_object_set_new(o, "more_ranges", json_integer((json_int_t)(s->total - s->n_rows)));
    json_object_set_new(o, "ranges_other_groups", json_integer((json_int_t)s->other_groups));
    json_t *scopes = json_array();
    for (size_t i = 0; scopes && i < s->n_paths; i++)
        json_array_append_new(scopes, path_json(s, &s->paths[i]));
    json_object_set_new(o, "scopes", scopes);
    json_object_set_new(o, "more_scopes", json_integer((json_int_t)(s->paths_total - s->n_paths)));
    return o;
}

/* ---------------------------------------------------------------------- */
/* Markdown and HTML                                                        */
/* ---------------------------------------------------------------------- */

static void doc_table(const gpufl__report_emitter_t *e, const gpufl__report_range_t *s,
                      const range_table_t *t, size_t n_rows) {
    e->table_begin(e->out, t->ncol, t->heads, t->aligns);
    for (size_t i = 0; i < n_rows; i++) {
        char c[GPUFL_REPORT_TABLE_COLS][CELL];
        const char *cp[GPUFL_REPORT_TABLE_COLS];
        t->cells(s, i, c);
        for (size_t k = 0; k < t->ncol; k++) cp[k] = c[k];
        e->row(e->out, t->ncol, cp);
    }
    e->table_end(e->out);
}

void gpufl__report_doc_range(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    const gpufl__report_range_t *s = &r->range;
    if (!s->shown) return;
    FILE *o = e->out;
    e->heading(o, 2, "Hardware counters per scope");
    const char *label[RANGE_FIELDS];
    char value[RANGE_FIELDS][FIELD_BYTES], note[NOTE_BYTES];
    size_t nf = fields(s, label, value);
    e->fields_begin(o);
    for (size_t i = 0; i < nf; i++) e->field(o, label[i], value[i]);
    e->fields_end(o);
    rows_note(s, note, sizeof note);
    e->para(o, note);
    doc_table(e, s, &range_table, s->n_rows);
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
    e->heading(o, 3, "Per scope path");
    paths_note(s, note, sizeof note);
    e->para(o, note);
    doc_table(e, s, &path_table, s->n_paths);
}
