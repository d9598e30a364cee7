// SPDX-License-Identifier: Apache-2.0
/*
 * report_sass_metrics.c - the report's SASS metrics section: how counting ran and
 * what was lost, then the exact per-instruction counts per kernel function
 * (warp instructions, thread efficiency, global requests and sectors
 * against their coalesced ideal), the most divergent and the least
 * coalesced source lines with their SASS. Computed once here and rendered
 * here in every format, from the same cells, as report_pc.c does.
 */
#include "analysis/report.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define CELL GPUFL_REPORT_CELL

static int oom(void) { return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report"); }

/* ---------------------------------------------------------------------- */
/* Building                                                                 */
/* ---------------------------------------------------------------------- */

typedef struct rank_ctx {
    const gpufl__sass_profile_t *p;
    gpufl__sass_rank_t by;
} rank_ctx_t;

/* Lines by the measure, most first; ties by function name, then file
 * ("(no line info)" last) and line. */
static int cmp_line(const void *a, const void *b, void *arg) {
    const rank_ctx_t *rc = arg;
    const gpufl__sass_line_t *x = &rc->p->lines[*(const size_t *)a];
    const gpufl__sass_line_t *y = &rc->p->lines[*(const size_t *)b];
    double vx = gpufl__sass_rank_value(&x->counts, rc->by);
    double vy = gpufl__sass_rank_value(&y->counts, rc->by);
    if (vx != vy) return vx > vy ? -1 : 1;
    int c = strcmp(rc->p->functions[x->fn].name, rc->p->functions[y->fn].name);
    if (c) return c;
    if (x->fn != y->fn) return x->fn < y->fn ? -1 : 1;
    if (!x->file != !y->file) return x->file ? -1 : 1;
    if (x->file && (c = strcmp(x->file, y->file))) return c;
    return (x->line > y->line) - (x->line < y->line);
}

/* The instructions of line l that lose most by `by` (ties: lower pc). */
static void worst_insns(const gpufl__sass_profile_t *p, gpufl__sass_rank_t by,
                        gpufl__report_sass_metrics_line_t *out) {
    const gpufl__sass_line_t *l = out->line;
    for (size_t i = l->first_insn; i < l->first_insn + l->n_insns; i++) {
        const gpufl__sass_insn_t *in = &p->insns[i];
        double v = gpufl__sass_rank_value(&in->counts, by);
        if (v <= 0) continue;
        size_t k = out->n_insns;
        while (k > 0 && gpufl__sass_rank_value(&out->insns[k - 1]->counts, by) < v) k--;
        if (k >= GPUFL_REPORT_SASS_METRICS_INSNS) continue;
        size_t kept = out->n_insns < GPUFL_REPORT_SASS_METRICS_INSNS
                          ? out->n_insns
                          : GPUFL_REPORT_SASS_METRICS_INSNS - 1;
        memmove(&out->insns[k + 1], &out->insns[k], (kept - k) * sizeof out->insns[0]);
        out->insns[k] = in;
        if (out->n_insns < GPUFL_REPORT_SASS_METRICS_INSNS) out->n_insns++;
    }
}

/* The lines that lose anything by `by`, the worst first, into out. */
static int rank_lines(const gpufl__sass_profile_t *p, gpufl__sass_rank_t by,
                      gpufl__report_sass_metrics_line_t *out, size_t *n, size_t *total) {
    size_t *idx = p->n_lines ? malloc(p->n_lines * sizeof *idx) : NULL;
    if (p->n_lines && !idx) return oom();
    size_t k = 0;
    for (size_t i = 0; i < p->n_lines; i++)
        if (gpufl__sass_rank_value(&p->lines[i].counts, by) > 0) idx[k++] = i;
    rank_ctx_t ctx = {p, by};
    if (k > 1) qsort_r(idx, k, sizeof *idx, cmp_line, &ctx);
    *total = k;
    *n = k < GPUFL_REPORT_SASS_METRICS_ROWS_MAX ? k : GPUFL_REPORT_SASS_METRICS_ROWS_MAX;
    for (size_t i = 0; i < *n; i++) {
        out[i].line = &p->lines[idx[i]];
        out[i].function = p->functions[out[i].line->fn].name;
        worst_insns(p, by, &out[i]);
    }
    free(idx);
    return 0;
}

int gpufl__report_build_sass_metrics(const gpufl__model_t *m, gpufl__report_sass_metrics_t *s) {
    memset(s, 0, sizeof *s);
    s->shown = m->n_sass_metrics > 0;
    if (!s->shown) return 0;
    for (size_t i = 0; i < m->n_sass_metrics_contexts; i++) {
        const gpufl__model_sass_metrics_context_t *c = &m->sass_metrics_contexts[i];
        s->contexts++;
        if (*c->error) {
            s->failed++;
            if (!s->error) s->error = c->error;
            continue;
        }
        s->late += c->late != 0;
        s->lazy += c->lazy != 0;
        if (!s->chip) {
            s->chip = c->chip;
            s->metrics = c->metrics;
        }
    }
    s->stats = m->sass_metrics_stats;
    int rc = gpufl__sass_profile_build(m, &s->profile);
    if (rc) return rc;
    const gpufl__sass_profile_t *p = &s->profile;
    s->n_kernels = p->n_functions < GPUFL_REPORT_SASS_METRICS_ROWS_MAX
                       ? p->n_functions
                       : GPUFL_REPORT_SASS_METRICS_ROWS_MAX;
    rc =
        rank_lines(p, GPUFL_SASS_BY_IDLE_LANES, s->divergent, &s->n_divergent, &s->divergent_total);
    if (!rc)
        rc = rank_lines(p, GPUFL_SASS_BY_EXCESS_SECTORS, s->uncoalesced, &s->n_uncoalesced,
                        &s->uncoalesced_total);
    return rc;
}

void gpufl__report_free_sass_metrics(gpufl__report_sass_metrics_t *s) {
    gpufl__sass_profile_free(&s->profile);
    memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------------- */
/* Cells shared by the formats                                              */
/* ---------------------------------------------------------------------- */

/* v with `decimals` decimals, "-" when unknown (< 0). */
static void num_cell(char *buf, size_t size, double v, int decimals) {
    if (v < 0)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.*f", decimals, v);
}

static void pct_cell(char *buf, size_t size, double fraction) {
    if (fraction < 0)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.1f%%", 100 * fraction);
}

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

/* The counters of sass_metrics_stats the report shows. */
enum {
    ST_CONTEXTS,
    ST_READS,
    ST_RECORDS,
    ST_ROWS,
    ST_FUNCTIONS,
    ST_DROPPED,
    ST_LOST,
    ST_ERRORS,
    ST_CUBINS,
    ST_CUBINS_OVER_CAP,
    ST_SASS_FUNCTIONS,
    ST_SASS_FAILED,
    N_STATS
};
static const char *const stat_keys[N_STATS] = {[ST_CONTEXTS] = "contexts",
                                               [ST_READS] = "reads",
                                               [ST_RECORDS] = "records",
                                               [ST_ROWS] = "rows",
                                               [ST_FUNCTIONS] = "functions",
                                               [ST_DROPPED] = "dropped",
                                               [ST_LOST] = "lost",
                                               [ST_ERRORS] = "errors",
                                               [ST_CUBINS] = "cubins",
                                               [ST_CUBINS_OVER_CAP] = "cubins_over_cap",
                                               [ST_SASS_FUNCTIONS] = "sass_functions",
                                               [ST_SASS_FAILED] = "sass_failed"};

/* The "label: value" fields of the section, n of them. */
#define SASSM_FIELDS 5
static size_t fields(const gpufl__report_sass_metrics_t *s, const char *label[SASSM_FIELDS],
                     char value[SASSM_FIELDS][480]) {
    const gpufl__sass_profile_t *p = &s->profile;
    size_t n = 0, k = 0;
    char chip[80] = "";
    if (s->chip && *s->chip) snprintf(chip, sizeof chip, "%s, ", s->chip);
    label[n] = "contexts";
    snprintf(value[n++], 480,
             "%zu counted (%s%zu with lazy patching), %zu failed, %zu started late%s%s",
             s->contexts - s->failed, chip, s->lazy, s->failed, s->late, s->error ? ": " : "",
             s->error ? s->error : "");
    label[n] = "metrics";
    value[n][0] = '\0';
    for (size_t i = 0; s->metrics && i < json_array_size(s->metrics); i++)
        gpufl__report_cat(value[n], 480, &k, "%s%s", i ? ", " : "",
                          json_string_value(json_array_get(s->metrics, i)));
    if (!k) snprintf(value[n], 480, "not said (no sass_metrics record names them)");
    n++;
    label[n] = "counts";
    snprintf(value[n++], 480,
             "exact per instruction from patched code (kernels ran slower while counted), read "
             "once per context and summed over contexts: %zu row%s of %zu context%s, %zu "
             "instruction%s of %zu function%s",
             p->rows, plural(p->rows), p->contexts, plural(p->contexts), p->n_insns,
             plural(p->n_insns), p->n_functions, plural(p->n_functions));
    char eff[32] = "not counted", mem[200] = "global sectors not counted";
    if (p->counted[1]) pct_cell(eff, sizeof eff, gpufl__sass_thread_efficiency(&p->total));
    if (p->counted[2]) {
        char spr[32], ideal[32], coal[32];
        num_cell(spr, sizeof spr, gpufl__sass_sectors_per_request(&p->total), 1);
        num_cell(ideal, sizeof ideal, gpufl__sass_ideal_per_request(&p->total), 1);
        pct_cell(coal, sizeof coal, gpufl__sass_coalescing(&p->total));
        snprintf(mem, sizeof mem,
                 "%.0f global requests, %.0f sectors (%s per request, %s ideal, coalescing "
                 "efficiency %s)",
                 p->total.requests, p->total.sectors, spr, ideal, coal);
    }
    label[n] = "totals";
    snprintf(value[n++], 480, "%.0f warp instructions, thread efficiency %s; %s", p->total.inst,
             eff, mem);
    label[n] = "losses";
    if (!s->stats) {
        snprintf(value[n++], 480,
                 "unknown: no sass_metrics_stats record (the session did not end cleanly)");
        return n;
    }
    int64_t v[N_STATS];
    char c[N_STATS][24];
    for (size_t i = 0; i < N_STATS; i++) {
        v[i] = gpufl__report_stat_count(s->stats, stat_keys[i]);
        gpufl__report_fmt_count(c[i], sizeof c[i], v[i]);
    }
    double ms;
    char read[48] = "";
    if (gpufl__reader_num(json_object_get(s->stats, "read_ms"), &ms) == 0 && ms >= 0)
        snprintf(read, sizeof read, "; reading took %.1f ms", ms);
    char sass[160] = "";
    if (v[ST_SASS_FUNCTIONS] >= 0 && v[ST_SASS_FAILED] >= 0 && v[ST_CUBINS_OVER_CAP] >= 0)
        snprintf(sass, sizeof sass,
                 "; SASS of %s functions, %s not disassembled (no line info), %s modules past "
                 "the cubin cap",
                 c[ST_SASS_FUNCTIONS], c[ST_SASS_FAILED], c[ST_CUBINS_OVER_CAP]);
    snprintf(value[n++], 480,
             "%s reads of %s contexts, %s records, %s rows written; %s records dropped by "
             "CUPTI, %s lost (no memory), %s failed CUPTI calls%s%s",
             c[ST_READS], c[ST_CONTEXTS], c[ST_RECORDS], c[ST_ROWS], c[ST_DROPPED], c[ST_LOST],
             c[ST_ERRORS], read, sass);
    return n;
}

/* The cells of a function's row; counted: which metrics the session
 * counts (requests need inst and sectors). */
static void kernel_cells(const gpufl__sass_function_t *f, const int counted[4], char c[7][CELL]) {
    const gpufl__sass_counts_t *x = &f->counts;
    snprintf(c[0], CELL, "%s", f->name);
    num_cell(c[1], CELL, counted[0] ? x->inst : -1, 0);
    pct_cell(c[2], CELL, gpufl__sass_thread_efficiency(x));
    num_cell(c[3], CELL, counted[0] && counted[2] ? x->requests : -1, 0);
    num_cell(c[4], CELL, gpufl__sass_sectors_per_request(x), 1);
    num_cell(c[5], CELL, gpufl__sass_ideal_per_request(x), 1);
    pct_cell(c[6], CELL, gpufl__sass_coalescing(x));
}

static void line_label(const gpufl__sass_line_t *l, char *buf, size_t size) {
    if (!l->file) {
        snprintf(buf, size, "(no line info)");
        return;
    }
    const char *base = strrchr(l->file, '/');
    snprintf(buf, size, "%s:%d", base ? base + 1 : l->file, l->line);
}

/* The figures of a line or instruction by the measure: divergence: warp
 * inst, idle lanes, thread efficiency; coalescing: requests, sectors per
 * request, ideal per request, excess sectors. Returns the cells filled. */
static size_t figure_cells(const gpufl__sass_counts_t *x, gpufl__sass_rank_t by, char c[][CELL]) {
    if (by == GPUFL_SASS_BY_IDLE_LANES) {
        snprintf(c[0], CELL, "%.0f", x->inst);
        num_cell(c[1], CELL, gpufl__sass_idle_lanes(x), 0);
        pct_cell(c[2], CELL, gpufl__sass_thread_efficiency(x));
        return 3;
    }
    snprintf(c[0], CELL, "%.0f", x->requests);
    num_cell(c[1], CELL, gpufl__sass_sectors_per_request(x), 1);
    num_cell(c[2], CELL, gpufl__sass_ideal_per_request(x), 1);
    num_cell(c[3], CELL, gpufl__sass_excess_sectors(x), 0);
    return 4;
}

static size_t line_cells(const gpufl__report_sass_metrics_line_t *l, gpufl__sass_rank_t by,
                         char c[][CELL]) {
    line_label(l->line, c[0], CELL);
    snprintf(c[1], CELL, "%s", l->function);
    return 2 + figure_cells(&l->line->counts, by, c + 2);
}

static size_t insn_cells(const gpufl__sass_insn_t *in, gpufl__sass_rank_t by, char c[][CELL]) {
    snprintf(c[0], CELL, "  +0x%04x", in->pc);
    snprintf(c[1], CELL, "%s", in->text ? in->text : "(no SASS)");
    return 2 + figure_cells(&in->counts, by, c + 2);
}

/* The tables of lines: heads, alignment and title per measure. */
static const char *const divergent_heads[] = {"line", "kernel / SASS", "warp inst", "idle lanes",
                                              "thread eff"};
static const char *const uncoalesced_heads[] = {"line",        "kernel / SASS", "requests",
                                                "sectors/req", "ideal/req",     "excess sectors"};
static const char *const kernel_heads[] = {"kernel",      "warp inst", "thread eff", "requests",
                                           "sectors/req", "ideal/req", "coalescing"};

/* Why a table of lines is empty. */
static const char *empty_why(const gpufl__report_sass_metrics_t *s, gpufl__sass_rank_t by) {
    const gpufl__sass_profile_t *p = &s->profile;
    if (by == GPUFL_SASS_BY_IDLE_LANES)
        return p->counted[1] ? "No divergence: every counted warp instruction ran with all 32 "
                               "threads active."
                             : "Not known: thread_inst was not counted "
                               "(smsp__sass_thread_inst_executed).";
    if (!p->counted[2] || !p->counted[3])
        return "Not known: sectors or sectors_ideal were not counted "
               "(smsp__sass_sectors_mem_global, smsp__sass_sectors_mem_global_ideal).";
    return p->total.sectors > 0 ? "No excess: every counted global access was coalesced."
                                : "No global memory access was counted.";
}

/* ---------------------------------------------------------------------- */
/* Text                                                                     */
/* ---------------------------------------------------------------------- */

static void text_lines(FILE *out, const gpufl__report_sass_metrics_t *s, gpufl__sass_rank_t by) {
    const gpufl__report_sass_metrics_line_t *lines =
        by == GPUFL_SASS_BY_IDLE_LANES ? s->divergent : s->uncoalesced;
    size_t n = by == GPUFL_SASS_BY_IDLE_LANES ? s->n_divergent : s->n_uncoalesced;
    if (!n) {
        fprintf(out, "  %s\n", empty_why(s, by));
        return;
    }
    size_t rows = 1;
    for (size_t i = 0; i < n; i++) rows += 1 + lines[i].n_insns;
    gpufl__report_cells_t *cells = calloc(rows, sizeof *cells);
    if (!cells) return;
    const char *const *heads = by == GPUFL_SASS_BY_IDLE_LANES ? divergent_heads : uncoalesced_heads;
    size_t ncol = by == GPUFL_SASS_BY_IDLE_LANES ? 5 : 6;
    for (size_t c = 0; c < ncol; c++) snprintf(cells[0][c], CELL, "%s", heads[c]);
    size_t k = 1;
    for (size_t i = 0; i < n; i++) {
        line_cells(&lines[i], by, cells[k++]);
        for (size_t h = 0; h < lines[i].n_insns; h++) insn_cells(lines[i].insns[h], by, cells[k++]);
    }
    gpufl__report_text_table(out, rows, ncol, cells,
                             by == GPUFL_SASS_BY_IDLE_LANES ? "llrrr" : "llrrrr");
    free(cells);
}

void gpufl__report_text_sass_metrics(const gpufl__report_t *r, FILE *out) {
    const gpufl__report_sass_metrics_t *s = &r->sass_metrics;
    if (!s->shown) return;
    fprintf(out, "\nSASS metrics\n");
    const char *label[SASSM_FIELDS];
    char value[SASSM_FIELDS][480];
    size_t nf = fields(s, label, value);
    for (size_t i = 0; i < nf; i++) fprintf(out, "  %-18s %s\n", label[i], value[i]);
    const gpufl__sass_profile_t *p = &s->profile;
    fprintf(out, "\n  Per kernel (top %zu of %zu by warp instructions)\n\n", s->n_kernels,
            p->n_functions);
    gpufl__report_cells_t *cells = calloc(s->n_kernels + 1, sizeof *cells);
    if (!cells) return;
    for (size_t c = 0; c < 7; c++) snprintf(cells[0][c], CELL, "%s", kernel_heads[c]);
    for (size_t i = 0; i < s->n_kernels; i++)
        kernel_cells(&p->functions[i], p->counted, cells[i + 1]);
    gpufl__report_text_table(out, s->n_kernels + 1, 7, cells, "lrrrrrr");
    free(cells);
    fprintf(out,
            "\n  Most divergent source lines (top %zu of %zu by idle lanes: 32 x warp instructions "
            "- thread instructions; +0x..: instructions by offset in their function)\n\n",
            s->n_divergent, s->divergent_total);
    text_lines(out, s, GPUFL_SASS_BY_IDLE_LANES);
    fprintf(out,
            "\n  Least coalesced source lines (top %zu of %zu by excess sectors: sectors - "
            "ideal sectors)\n\n",
            s->n_uncoalesced, s->uncoalesced_total);
    text_lines(out, s, GPUFL_SASS_BY_EXCESS_SECTORS);
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                     */
/* ---------------------------------------------------------------------- */

static json_t *jnum(double v) { return v < 0 ? json_null() : json_real(v); }
static json_t *jpct(double fraction) {
    return fraction < 0 ? json_null() : json_real(100 * fraction);
}
/* A count, null when unknown (< 0) or not counted in the session. */
static json_t *jcount(double v, int counted) {
    return v < 0 || !counted ? json_null() : json_integer((json_int_t)v);
}

/* The figures of counts into o (the members shared by kernels, lines and
 * instructions); counted: which metrics some row of the session counts. */
static void json_counts(json_t *o, const gpufl__sass_counts_t *x, const int counted[4]) {
    json_object_set_new(o, "warp_inst", jcount(x->inst, counted[0]));
    json_object_set_new(o, "thread_inst", jcount(x->thread_inst, counted[1]));
    json_object_set_new(o, "thread_efficiency_pct", jpct(gpufl__sass_thread_efficiency(x)));
    json_object_set_new(o, "idle_lanes", jcount(gpufl__sass_idle_lanes(x), 1));
    json_object_set_new(o, "requests", jcount(x->requests, counted[0] && counted[2]));
    json_object_set_new(o, "sectors", jcount(x->sectors, counted[2]));
    json_object_set_new(o, "sectors_ideal", jcount(x->ideal, counted[3]));
    json_object_set_new(o, "sectors_per_request", jnum(gpufl__sass_sectors_per_request(x)));
    json_object_set_new(o, "ideal_sectors_per_request", jnum(gpufl__sass_ideal_per_request(x)));
    json_object_set_new(o, "coalescing_efficiency_pct", jpct(gpufl__sass_coalescing(x)));
    json_object_set_new(o, "excess_sectors", jcount(gpufl__sass_excess_sectors(x), counted[3]));
}

static json_t *json_lines(const gpufl__report_sass_metrics_line_t *lines, size_t n,
                          const int counted[4]) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        const gpufl__sass_line_t *l = lines[i].line;
        json_t *o = json_object(), *sass = json_array();
        json_object_set_new(o, "kernel", json_string(lines[i].function));
        json_object_set_new(o, "file", l->file ? json_string(l->file) : json_null());
        json_object_set_new(o, "line", l->file ? json_integer(l->line) : json_null());
        json_counts(o, &l->counts, counted);
        for (size_t h = 0; sass && h < lines[i].n_insns; h++) {
            const gpufl__sass_insn_t *in = lines[i].insns[h];
            json_t *x = json_object();
            json_object_set_new(x, "pc", json_integer(in->pc));
            json_object_set_new(x, "sass", in->text ? json_string(in->text) : json_null());
            json_counts(x, &in->counts, counted);
            json_array_append_new(sass, x);
        }
        json_object_set_new(o, "sass", sass);
        json_array_append_new(a, o);
    }
    return a;
}

json_t *gpufl__report_json_sass_metrics(const gpufl__report_t *r) {
    const gpufl__report_sass_metrics_t *s = &r->sass_metrics;
    const gpufl__sass_profile_t *p = &s->profile;
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "contexts", json_integer((json_int_t)s->contexts));
    json_object_set_new(o, "contexts_failed", json_integer((json_int_t)s->failed));
    json_object_set_new(o, "contexts_late", json_integer((json_int_t)s->late));
    json_object_set_new(o, "contexts_lazy", json_integer((json_int_t)s->lazy));
    json_object_set_new(o, "error", s->error ? json_string(s->error) : json_null());
    json_object_set_new(o, "chip", s->chip && *s->chip ? json_string(s->chip) : json_null());
    json_object_set_new(o, "metrics", s->metrics ? json_deep_copy(s->metrics) : json_array());
    json_t *st = gpufl__report_json_stats(s->stats, stat_keys, N_STATS);
    double ms;
    if (s->stats)
        json_object_set_new(st, "read_ms",
                            gpufl__reader_num(json_object_get(s->stats, "read_ms"), &ms) == 0 &&
                                    ms >= 0
                                ? json_real(ms)
                                : json_null());
    json_object_set_new(o, "stats", st);
    json_object_set_new(o, "rows", json_integer((json_int_t)p->rows));
    json_object_set_new(o, "row_contexts", json_integer((json_int_t)p->contexts));
    json_object_set_new(o, "instructions", json_integer((json_int_t)p->n_insns));
    json_object_set_new(o, "functions", json_integer((json_int_t)p->n_functions));
    json_t *total = json_object();
    json_counts(total, &p->total, p->counted);
    json_object_set_new(o, "total", total);
    json_t *kernels = json_array();
    for (size_t i = 0; kernels && i < s->n_kernels; i++) {
        const gpufl__sass_function_t *f = &p->functions[i];
        json_t *x = json_object();
        json_object_set_new(x, "kernel", json_string(f->name));
        json_object_set_new(x, "mangled", json_string(f->mangled));
        json_counts(x, &f->counts, p->counted);
        json_array_append_new(kernels, x);
    }
    json_object_set_new(o, "kernels", kernels);
    json_object_set_new(o, "more_kernels",
                        json_integer((json_int_t)(p->n_functions - s->n_kernels)));
    json_object_set_new(o, "divergent_lines", json_lines(s->divergent, s->n_divergent, p->counted));
    json_object_set_new(o, "uncoalesced_lines",
                        json_lines(s->uncoalesced, s->n_uncoalesced, p->counted));
    return o;
}

/* ---------------------------------------------------------------------- */
/* Markdown and HTML                                                        */
/* ---------------------------------------------------------------------- */

static void doc_row(const gpufl__report_emitter_t *e, size_t ncol, char c[][CELL]) {
    const char *cp[GPUFL_REPORT_TABLE_COLS];
    for (size_t i = 0; i < ncol; i++) cp[i] = c[i];
    e->row(e->out, ncol, cp);
}

static void doc_lines(const gpufl__report_emitter_t *e, const gpufl__report_sass_metrics_t *s,
                      gpufl__sass_rank_t by) {
    int div = by == GPUFL_SASS_BY_IDLE_LANES;
    const gpufl__report_sass_metrics_line_t *lines = div ? s->divergent : s->uncoalesced;
    size_t n = div ? s->n_divergent : s->n_uncoalesced;
    e->heading(e->out, 3, div ? "Most divergent source lines" : "Least coalesced source lines");
    if (!n) {
        e->para(e->out, empty_why(s, by));
        return;
    }
    e->table_begin(e->out, div ? 5 : 6, div ? divergent_heads : uncoalesced_heads,
                   div ? "llrrr" : "llrrrr");
    for (size_t i = 0; i < n; i++) {
        char c[6][CELL];
        doc_row(e, line_cells(&lines[i], by, c), c);
        for (size_t h = 0; h < lines[i].n_insns; h++)
            doc_row(e, insn_cells(lines[i].insns[h], by, c), c);
    }
    e->table_end(e->out);
}

void gpufl__report_doc_sass_metrics(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    const gpufl__report_sass_metrics_t *s = &r->sass_metrics;
    if (!s->shown) return;
    FILE *o = e->out;
    e->heading(o, 2, "SASS metrics");
    const char *label[SASSM_FIELDS];
    char value[SASSM_FIELDS][480];
    size_t nf = fields(s, label, value);
    e->fields_begin(o);
    for (size_t i = 0; i < nf; i++) e->field(o, label[i], value[i]);
    e->fields_end(o);
    e->heading(o, 3, "Per kernel");
    e->table_begin(o, 7, kernel_heads, "lrrrrrr");
    for (size_t i = 0; i < s->n_kernels; i++) {
        char c[7][CELL];
        kernel_cells(&s->profile.functions[i], s->profile.counted, c);
        doc_row(e, 7, c);
    }
    e->table_end(o);
    doc_lines(e, s, GPUFL_SASS_BY_IDLE_LANES);
    doc_lines(e, s, GPUFL_SASS_BY_EXCESS_SECTORS);
}
