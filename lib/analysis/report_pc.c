// SPDX-License-Identifier: Apache-2.0
/*
 * report_pc.c - the report's PC sampling section: how sampling ran (period,
 * samples counted and recorded, what was lost), how precisely the samples
 * reached scopes (pc_attrib.c), and the stall reasons per kernel, per scope
 * and per source line with the SASS of its hottest instructions. Computed
 * once here and rendered here in every format, from the same cells.
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

/* The top reasons of a by_reason vector into row. */
static void top_reasons(const gpufl__model_t *m, const double *by_reason,
                        gpufl__report_pc_row_t *row) {
    row->n_top = 0;
    for (size_t r = 0; r < m->n_pc_reasons; r++) {
        if (by_reason[r] <= 0) continue;
        size_t i = row->n_top;
        while (i > 0 && row->top[i - 1].samples < by_reason[r]) i--;
        if (i >= GPUFL_REPORT_PC_TOP_REASONS) continue;
        size_t kept =
            row->n_top < GPUFL_REPORT_PC_TOP_REASONS ? row->n_top : GPUFL_REPORT_PC_TOP_REASONS - 1;
        memmove(&row->top[i + 1], &row->top[i], (kept - i) * sizeof row->top[0]);
        row->top[i] = (gpufl__report_pc_share_t){r, by_reason[r]};
        if (row->n_top < GPUFL_REPORT_PC_TOP_REASONS) row->n_top++;
    }
}

static const char *slot_label(const gpufl__model_t *m, size_t slot) {
    if (slot < m->n_scope_paths) return m->scope_paths[slot].path;
    if (slot == GPUFL_MODEL_PC_SLOT_NO_SCOPE(m)) return "(no scope)";
    if (slot == GPUFL_MODEL_PC_SLOT_UNKNOWN_SCOPE(m)) return "(unknown scope)";
    return "(unattributed)";
}

static int cmp_row(const void *a, const void *b) {
    const gpufl__report_pc_row_t *x = a, *y = b;
    if (x->samples != y->samples) return x->samples > y->samples ? -1 : 1;
    return strcmp(x->label, y->label);
}

static int build_scopes(const gpufl__model_t *m, gpufl__report_pc_t *pc) {
    size_t slots = 0;
    for (size_t i = 0; i < m->n_pc_scopes; i++)
        if (!i || m->pc_scopes[i].slot != m->pc_scopes[i - 1].slot) slots++;
    if (!slots) return 0;
    pc->scopes = calloc(slots, sizeof *pc->scopes);
    double *v = calloc(m->n_pc_reasons ? m->n_pc_reasons : 1, sizeof *v);
    if (!pc->scopes || !v) {
        free(v);
        return oom();
    }
    for (size_t i = 0, j; i < m->n_pc_scopes; i = j) {
        gpufl__report_pc_row_t *row = &pc->scopes[pc->n_scopes++];
        row->label = slot_label(m, m->pc_scopes[i].slot);
        memset(v, 0, m->n_pc_reasons * sizeof *v);
        for (j = i; j < m->n_pc_scopes && m->pc_scopes[j].slot == m->pc_scopes[i].slot; j++) {
            v[m->pc_scopes[j].reason] += m->pc_scopes[j].samples;
            row->samples += m->pc_scopes[j].samples;
        }
        top_reasons(m, v, row);
    }
    free(v);
    qsort(pc->scopes, pc->n_scopes, sizeof *pc->scopes, cmp_row);
    pc->scopes_total = pc->n_scopes;
    if (pc->n_scopes > GPUFL_REPORT_PC_ROWS_MAX) pc->n_scopes = GPUFL_REPORT_PC_ROWS_MAX;
    return 0;
}

static void build_lines(const gpufl__model_t *m, gpufl__report_pc_t *pc) {
    const gpufl__pc_profile_t *p = &pc->profile;
    for (size_t i = 0; i < p->n_lines && pc->n_lines < GPUFL_REPORT_PC_ROWS_MAX; i++) {
        gpufl__report_pc_line_t *l = &pc->lines[pc->n_lines++];
        l->line = &p->lines[i];
        l->function = p->functions[l->line->fn].name;
        l->reason = gpufl__pc_top_reason(m, l->line->by_reason, 0);
        for (size_t k = 0;
             l->line->file && k < p->n_insns && l->n_hot < GPUFL_REPORT_PC_HOT_PC_SAMPLING; k++)
            if (p->insns[k].line == i) l->hot[l->n_hot++] = &p->insns[k];
    }
}

/* A count of pc_sampling_stats, or -1 when absent or not a count. */
static int64_t stats_count(const gpufl__model_t *m, const char *key) {
    int64_t v;
    return m->pc_stats && gpufl__reader_int(json_object_get(m->pc_stats, key), &v) == 0 && v >= 0
               ? v
               : -1;
}

/* When CUPTI's hardware buffer first filled, from the windows, and what
 * came after it; the restarts and records left out from pc_sampling_stats. */
static void build_full(const gpufl__model_t *m, gpufl__report_pc_t *pc) {
    pc->full_at_ns = pc->windows_end_ns = -1;
    pc->recorded_after_full = 0;
    pc->restarts = stats_count(m, "restarts");
    pc->implausible = stats_count(m, "implausible_records");
    int64_t full_end = -1;
    for (size_t w = 0; w < m->n_pc_windows; w++) {
        const gpufl__model_pc_window_t *x = &m->pc_windows[w];
        if (x->t1_ns > pc->windows_end_ns) pc->windows_end_ns = x->t1_ns;
        if (x->buffer_full > 0 && (pc->full_at_ns < 0 || x->t0_ns < pc->full_at_ns)) {
            pc->full_at_ns = x->t0_ns;
            full_end = x->t1_ns;
        }
    }
    for (size_t w = 0; full_end >= 0 && w < m->n_pc_windows; w++) {
        const gpufl__model_pc_window_t *x = &m->pc_windows[w];
        if (x->t0_ns >= full_end && x->recorded > 0) pc->recorded_after_full += x->recorded;
    }
}

/* The accounting: pc_sampling_stats when written, else the windows summed. */
static void build_counts(const gpufl__model_t *m, gpufl__report_pc_t *pc) {
    int64_t *f[] = {&pc->samples,     &pc->recorded, &pc->dropped, &pc->non_user,
                    &pc->buffer_full, &pc->drains,   &pc->lost,    &pc->unplaced};
    static const char *const keys[] = {"samples",     "recorded", "dropped", "non_user",
                                       "buffer_full", "drains",   "lost",    "unplaced"};
    enum { COUNTS = sizeof f / sizeof f[0] };
    for (size_t i = 0; i < COUNTS; i++) *f[i] = -1;
    build_full(m, pc);
    if (m->pc_stats) {
        pc->from_stats = 1;
        for (size_t i = 0; i < COUNTS; i++) *f[i] = stats_count(m, keys[i]);
        return;
    }
    if (!m->n_pc_windows) return;
    for (size_t i = 0; i < COUNTS; i++) *f[i] = 0;
    for (size_t w = 0; w < m->n_pc_windows; w++) {
        const gpufl__model_pc_window_t *x = &m->pc_windows[w];
        const int64_t v[] = {x->samples,     x->recorded, x->dropped, x->non_user,
                             x->buffer_full, x->drains,   x->lost,    x->unplaced};
        for (size_t i = 0; i < COUNTS; i++)
            if (*f[i] >= 0) *f[i] = v[i] >= 0 ? *f[i] + v[i] : -1;
    }
}

int gpufl__report_build_pc(const gpufl__model_t *m, gpufl__report_pc_t *pc) {
    memset(pc, 0, sizeof *pc);
    pc->period_min = pc->period_max = pc->worker_sleep_ms = -1;
    pc->shown = m->n_pc_contexts || m->n_pc_samples || m->pc_stats;
    if (!pc->shown) return 0;
    for (size_t i = 0; i < m->n_pc_contexts; i++) {
        const gpufl__model_pc_context_t *c = &m->pc_contexts[i];
        pc->contexts++;
        if (*c->error) {
            pc->failed++;
            if (!pc->error) pc->error = c->error;
            continue;
        }
        if (c->late) pc->late++;
        if (c->period >= 0 && (pc->period_min < 0 || c->period < pc->period_min))
            pc->period_min = c->period;
        if (c->period > pc->period_max) pc->period_max = c->period;
        if (c->worker_sleep_ms > pc->worker_sleep_ms) pc->worker_sleep_ms = c->worker_sleep_ms;
    }
    build_counts(m, pc);
    int rc = gpufl__pc_profile_build(m, &pc->profile);
    if (rc) return rc;
    const gpufl__pc_profile_t *p = &pc->profile;
    size_t nk =
        p->n_functions < GPUFL_REPORT_PC_ROWS_MAX ? p->n_functions : GPUFL_REPORT_PC_ROWS_MAX;
    if (nk && !(pc->kernels = calloc(nk, sizeof *pc->kernels))) return oom();
    for (size_t i = 0; i < nk; i++) {
        pc->kernels[i].label = p->functions[i].name;
        pc->kernels[i].samples = p->functions[i].samples;
        top_reasons(m, p->functions[i].by_reason, &pc->kernels[i]);
    }
    pc->n_kernels = nk;
    rc = build_scopes(m, pc);
    if (rc) return rc;
    if (p->n_lines && !(pc->lines = calloc(GPUFL_REPORT_PC_ROWS_MAX, sizeof *pc->lines)))
        return oom();
    if (pc->lines) build_lines(m, pc);
    return 0;
}

void gpufl__report_free_pc(gpufl__report_pc_t *pc) {
    gpufl__pc_profile_free(&pc->profile);
    free(pc->kernels);
    free(pc->scopes);
    free(pc->lines);
    memset(pc, 0, sizeof *pc);
}

/* ---------------------------------------------------------------------- */
/* Cells shared by the formats                                              */
/* ---------------------------------------------------------------------- */

static double pct(double part, double whole) { return whole > 0 ? 100 * part / whole : 0; }

static void count_cell(char *buf, size_t size, int64_t v) {
    if (v < 0)
        snprintf(buf, size, "?");
    else
        snprintf(buf, size, "%lld", (long long)v);
}

/* The "label: value" fields of the section, n of them. */
#define PC_FIELDS 12 /* every field below shown at once */
static size_t fields(const gpufl__report_t *r, const char *label[PC_FIELDS],
                     char value[PC_FIELDS][400]) {
    const gpufl__report_pc_t *pc = &r->pc;
    const gpufl__model_t *m = r->m;
    size_t n = 0;
    char a[32], b[64], c[32], d[32], e[32];
    label[n] = "contexts";
    if (pc->period_min < 0)
        snprintf(b, sizeof b, "period unknown");
    else if (pc->period_min == pc->period_max)
        snprintf(b, sizeof b, "period 2^%lld cycles", (long long)pc->period_min);
    else
        snprintf(b, sizeof b, "periods 2^%lld..2^%lld cycles", (long long)pc->period_min,
                 (long long)pc->period_max);
    snprintf(value[n++], 400, "%zu sampled (%s, continuous), %zu failed, %zu started late%s%s",
             pc->contexts - pc->failed, b, pc->failed, pc->late, pc->error ? ": " : "",
             pc->error ? pc->error : "");
    count_cell(a, sizeof a, pc->samples);
    count_cell(b, sizeof b, pc->recorded);
    label[n] = "samples";
    if (pc->samples > 0 && pc->recorded >= 0)
        snprintf(value[n++], 400, "%s taken, %s recorded by PC (coverage %.1f%%)%s", a, b,
                 pct((double)pc->recorded, (double)pc->samples),
                 pc->from_stats ? "" : " (from pc_window rows)");
    else
        snprintf(value[n++], 400, "%s taken, %s recorded by PC%s", a, b,
                 pc->from_stats ? "" : " (from pc_window rows)");
    count_cell(a, sizeof a, pc->dropped);
    count_cell(b, sizeof b, pc->non_user);
    count_cell(c, sizeof c, pc->buffer_full);
    count_cell(d, sizeof d, pc->drains);
    label[n] = "not recorded";
    snprintf(value[n++], 400,
             "%s dropped by the hardware, %s in driver-internal kernels; %s of %s drains found "
             "the buffer full (samples lost uncounted)",
             a, b, c, d);
    if (pc->full_at_ns >= 0) {
        count_cell(a, sizeof a, pc->recorded_after_full);
        b[0] = '\0';
        if (pc->restarts >= 0)
            snprintf(b, sizeof b, " (sampling restarted %lld times)", (long long)pc->restarts);
        label[n] = "buffer full";
        snprintf(value[n++], 400,
                 "CUPTI's hardware buffer was first full at %.1f s (the windows end at %.1f s); "
                 "%s samples recorded after it%s%s",
                 (double)pc->full_at_ns / 1e9, (double)pc->windows_end_ns / 1e9, a, b,
                 pc->recorded_after_full > 0
                     ? ""
                     : ": the stall mix is of the time before it only (a longer "
                       "GPUFL_PC_SAMPLING_PERIOD, or GPUFL_PC_SAMPLING_RESTART=1)");
    }
    if (pc->lost > 0) {
        count_cell(a, sizeof a, pc->lost);
        label[n] = "not kept";
        snprintf(value[n++], 400, "%s samples gpufl could not keep (no memory)", a);
    }
    if (pc->samples >= 0 && pc->recorded > pc->samples) {
        label[n] = "inconsistent";
        snprintf(value[n++], 400,
                 "CUPTI's records hold more samples than it counted: some of their counts are "
                 "wrong, and the stall mix with them");
    }
    if (pc->implausible > 0) {
        label[n] = "left out";
        snprintf(value[n++], 400,
                 "%lld PC records CUPTI gave with more samples than the GPU takes in the time "
                 "(not counts)",
                 (long long)pc->implausible);
    }
    if (pc->unplaced > 0) {
        count_cell(a, sizeof a, pc->unplaced);
        label[n] = "unplaced";
        snprintf(value[n++], 400,
                 "%s samples in records CUPTI gave with neither a function nor a module (left out "
                 "of the stall mix)",
                 a);
    }
    const gpufl__model_pc_attrib_t *at = &m->pc_attrib;
    double total = at->exact + at->split + at->fallback + at->unattributed;
    label[n] = "to scopes";
    if (at->by_launch > 0) /* no kernel rows: given through launch rows (host times) */
        snprintf(value[n++], 400,
                 "%.0f samples by time: %.1f%% exact, %.1f%% split between scopes, %.1f%% by the "
                 "kernel's session launches (no launch in the window), %.1f%% unattributed (no "
                 "kernel or launch rows); %.1f%% through launch rows (host times of the launch "
                 "calls: this engine does not time kernels)",
                 total, pct(at->exact, total), pct(at->split, total), pct(at->fallback, total),
                 pct(at->unattributed, total), pct(at->by_launch, total));
    else
        snprintf(value[n++], 400,
                 "%.0f samples by time: %.1f%% exact, %.1f%% split between scopes, %.1f%% by the "
                 "kernel's session time (no launch in the window), %.1f%% unattributed (no "
                 "kernel rows)",
                 total, pct(at->exact, total), pct(at->split, total), pct(at->fallback, total),
                 pct(at->unattributed, total));
    label[n] = "decode latency";
    if (pc->worker_sleep_ms >= 0)
        snprintf(e, sizeof e, "%lld ms", (long long)pc->worker_sleep_ms);
    else
        snprintf(e, sizeof e, "%d ms (assumed)", GPUFL_MODEL_PC_WORKER_SLEEP_MS);
    snprintf(value[n++], 400,
             "%s: samples may belong to kernels that ended that long before "
             "their window",
             e);
    label[n] = "reasons";
    snprintf(value[n++], 400,
             "CUPTI's warp states, prefix smsp__pcsamp_warps_issue_stalled_ "
             "left out; selected = the warp issued (not a stall)");
    if (gpufl__model_sass_counted(m)) {
        label[n] = "caution";
        snprintf(value[n++], 400,
                 "SASS metrics were counted in this session (engine Deep): the samples are of the "
                 "instrumented kernels, whose stall mix is the instrumentation's (mostly wait) and "
                 "most of whose samples CUPTI counts as non-user; take stall reasons from a "
                 "PcSampling run");
    }
    return n;
}

/* Cells of a kernel or scope row: label, samples, share, top reasons. */
static void row_cells(const gpufl__report_t *r, const gpufl__report_pc_row_t *row,
                      char c[4][CELL]) {
    snprintf(c[0], CELL, "%s", row->label);
    snprintf(c[1], CELL, "%.0f", row->samples);
    snprintf(c[2], CELL, "%.1f%%", pct(row->samples, r->pc.profile.samples));
    size_t n = 0;
    c[3][0] = '\0';
    for (size_t i = 0; i < row->n_top; i++)
        gpufl__report_cat(c[3], CELL, &n, "%s%s %.1f%%", i ? ", " : "",
                          r->m->pc_reasons[row->top[i].reason].short_name,
                          pct(row->top[i].samples, row->samples));
}

static void line_label(const gpufl__report_pc_line_t *l, char *buf, size_t size) {
    if (l->line->file) {
        const char *base = strrchr(l->line->file, '/');
        snprintf(buf, size, "%s:%d", base ? base + 1 : l->line->file, l->line->line);
    } else {
        snprintf(buf, size, "+0x%x", l->line->pc);
    }
}

/* Cells of a source line: line, kernel, samples, share, dominant reason. */
static void line_cells(const gpufl__report_t *r, const gpufl__report_pc_line_t *l,
                       char c[5][CELL]) {
    line_label(l, c[0], CELL);
    snprintf(c[1], CELL, "%s", l->function);
    snprintf(c[2], CELL, "%.0f", l->line->samples);
    snprintf(c[3], CELL, "%.1f%%", pct(l->line->samples, r->pc.profile.samples));
    if (l->reason >= 0)
        snprintf(c[4], CELL, "%s %.1f%%", r->m->pc_reasons[l->reason].short_name,
                 pct(l->line->by_reason[l->reason], l->line->samples));
    else
        snprintf(c[4], CELL, "-");
}

/* Cells of one hot instruction of a line. */
static void insn_cells(const gpufl__report_t *r, const gpufl__report_pc_line_t *l,
                       const gpufl__pc_insn_t *in, char c[5][CELL]) {
    snprintf(c[0], CELL, "  +0x%04x", in->pc);
    snprintf(c[1], CELL, "%s", in->text ? in->text : "(no SASS)");
    snprintf(c[2], CELL, "%.0f", in->samples);
    snprintf(c[3], CELL, "%.1f%%", pct(in->samples, l->line->samples));
    snprintf(c[4], CELL, "%s", r->m->pc_reasons[in->reason].short_name);
}

/* ---------------------------------------------------------------------- */
/* Text                                                                     */
/* ---------------------------------------------------------------------- */

static void text_rows(FILE *out, const gpufl__report_t *r, const char *head,
                      const gpufl__report_pc_row_t *rows, size_t n) {
    gpufl__report_cells_t *cells = calloc(n + 1, sizeof *cells);
    if (!cells) return;
    static const char *const heads[4] = {NULL, "samples", "share", "top reasons"};
    snprintf(cells[0][0], CELL, "%s", head);
    for (int c = 1; c < 4; c++) snprintf(cells[0][c], CELL, "%s", heads[c]);
    for (size_t i = 0; i < n; i++) row_cells(r, &rows[i], cells[i + 1]);
    gpufl__report_text_table(out, n + 1, 4, cells, "lrrl");
    free(cells);
}

void gpufl__report_text_pc(const gpufl__report_t *r, FILE *out) {
    const gpufl__report_pc_t *pc = &r->pc;
    if (!pc->shown) return;
    fprintf(out, "\nPC sampling\n");
    const char *label[PC_FIELDS];
    char value[PC_FIELDS][400];
    size_t nf = fields(r, label, value);
    for (size_t i = 0; i < nf; i++) fprintf(out, "  %-18s %s\n", label[i], value[i]);
    if (!pc->profile.n_functions) return;
    fprintf(out, "\n  Stall reasons per kernel (top %zu of %zu by samples)\n\n", pc->n_kernels,
            pc->profile.n_functions);
    text_rows(out, r, "kernel", pc->kernels, pc->n_kernels);
    fprintf(out, "\n  Stall reasons per scope (samples given to scopes by time)\n\n");
    text_rows(out, r, "scope", pc->scopes, pc->n_scopes);
    if (pc->scopes_total > pc->n_scopes)
        fprintf(out, "  ... and %zu more\n", pc->scopes_total - pc->n_scopes);
    fprintf(out,
            "\n  Most-stalled source lines (top %zu of %zu; +0x..: instructions by offset in "
            "their function)%s\n\n",
            pc->n_lines, pc->profile.n_lines,
            pc->profile.has_sass_lines ? "" : "; no sass line info: by instruction");
    size_t rows = 1;
    for (size_t i = 0; i < pc->n_lines; i++) rows += 1 + pc->lines[i].n_hot;
    gpufl__report_cells_t *cells = calloc(rows, sizeof *cells);
    if (!cells) return;
    static const char *const heads[5] = {"line", "kernel / SASS", "samples", "share", "reason"};
    for (int c = 0; c < 5; c++) snprintf(cells[0][c], CELL, "%s", heads[c]);
    size_t k = 1;
    for (size_t i = 0; i < pc->n_lines; i++) {
        line_cells(r, &pc->lines[i], cells[k++]);
        for (size_t h = 0; h < pc->lines[i].n_hot; h++)
            insn_cells(r, &pc->lines[i], pc->lines[i].hot[h], cells[k++]);
    }
    gpufl__report_text_table(out, rows, 5, cells, "llrrl");
    free(cells);
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                     */
/* ---------------------------------------------------------------------- */

static json_t *jcount(int64_t v) { return v < 0 ? json_null() : json_integer(v); }

static json_t *jrows(const gpufl__report_t *r, const gpufl__report_pc_row_t *rows, size_t n,
                     const char *key) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *o = json_object(), *top = json_array();
        json_object_set_new(o, key, json_string(rows[i].label));
        json_object_set_new(o, "samples", json_real(rows[i].samples));
        for (size_t t = 0; top && t < rows[i].n_top; t++) {
            json_t *x = json_object();
            json_object_set_new(x, "reason",
                                json_string(r->m->pc_reasons[rows[i].top[t].reason].short_name));
            json_object_set_new(x, "samples", json_real(rows[i].top[t].samples));
            json_array_append_new(top, x);
        }
        json_object_set_new(o, "top_reasons", top);
        json_array_append_new(a, o);
    }
    return a;
}

json_t *gpufl__report_json_pc(const gpufl__report_t *r) {
    const gpufl__report_pc_t *pc = &r->pc;
    const gpufl__model_t *m = r->m;
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "contexts", json_integer((json_int_t)pc->contexts));
    json_object_set_new(o, "contexts_failed", json_integer((json_int_t)pc->failed));
    json_object_set_new(o, "contexts_late", json_integer((json_int_t)pc->late));
    json_object_set_new(o, "error", pc->error ? json_string(pc->error) : json_null());
    json_object_set_new(o, "period_min", jcount(pc->period_min));
    json_object_set_new(o, "period_max", jcount(pc->period_max));
    json_object_set_new(o, "worker_sleep_ms", jcount(pc->worker_sleep_ms));
    json_object_set_new(o, "counts_from",
                        json_string(pc->from_stats ? "pc_sampling_stats" : "pc_window"));
    json_object_set_new(o, "samples", jcount(pc->samples));
    json_object_set_new(o, "recorded", jcount(pc->recorded));
    json_object_set_new(o, "dropped", jcount(pc->dropped));
    json_object_set_new(o, "non_user", jcount(pc->non_user));
    json_object_set_new(o, "buffer_full", jcount(pc->buffer_full));
    json_object_set_new(o, "drains", jcount(pc->drains));
    json_object_set_new(o, "lost", jcount(pc->lost));
    json_object_set_new(o, "unplaced", jcount(pc->unplaced));
    json_object_set_new(o, "restarts", jcount(pc->restarts));
    json_object_set_new(o, "implausible_records", jcount(pc->implausible));
    json_object_set_new(o, "buffer_first_full_s",
                        pc->full_at_ns >= 0 ? json_real((double)pc->full_at_ns / 1e9)
                                            : json_null());
    json_object_set_new(o, "recorded_after_full",
                        pc->full_at_ns >= 0 ? json_integer(pc->recorded_after_full) : json_null());
    json_object_set_new(o, "instrumented", json_boolean(gpufl__model_sass_counted(m)));
    json_object_set_new(o, "coverage_pct",
                        pc->samples > 0 && pc->recorded >= 0
                            ? json_real(pct((double)pc->recorded, (double)pc->samples))
                            : json_null());
    json_t *at = json_object();
    json_object_set_new(at, "exact", json_real(m->pc_attrib.exact));
    json_object_set_new(at, "split", json_real(m->pc_attrib.split));
    json_object_set_new(at, "fallback", json_real(m->pc_attrib.fallback));
    json_object_set_new(at, "unattributed", json_real(m->pc_attrib.unattributed));
    json_object_set_new(at, "by_launch", json_real(m->pc_attrib.by_launch));
    json_object_set_new(o, "attribution", at);
    json_t *reasons = json_array();
    for (size_t i = 0; reasons && i < m->n_pc_reasons; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "reason", json_string(m->pc_reasons[i].short_name));
        json_object_set_new(x, "name", json_string(m->pc_reasons[i].name));
        json_object_set_new(x, "stall", json_boolean(!m->pc_reasons[i].issued));
        json_array_append_new(reasons, x);
    }
    json_object_set_new(o, "reasons", reasons);
    json_object_set_new(o, "kernels", jrows(r, pc->kernels, pc->n_kernels, "kernel"));
    json_object_set_new(o, "scopes", jrows(r, pc->scopes, pc->n_scopes, "scope"));
    json_t *lines = json_array();
    for (size_t i = 0; lines && i < pc->n_lines; i++) {
        const gpufl__report_pc_line_t *l = &pc->lines[i];
        json_t *x = json_object(), *hot = json_array();
        json_object_set_new(x, "kernel", json_string(l->function));
        json_object_set_new(x, "file", l->line->file ? json_string(l->line->file) : json_null());
        json_object_set_new(x, "line", l->line->file ? json_integer(l->line->line) : json_null());
        json_object_set_new(x, "pc", l->line->file ? json_null() : json_integer(l->line->pc));
        json_object_set_new(x, "samples", json_real(l->line->samples));
        json_object_set_new(x, "reason",
                            l->reason >= 0 ? json_string(m->pc_reasons[l->reason].short_name)
                                           : json_null());
        json_object_set_new(x, "reason_samples",
                            json_real(l->reason >= 0 ? l->line->by_reason[l->reason] : 0));
        for (size_t h = 0; hot && h < l->n_hot; h++) {
            json_t *y = json_object();
            json_object_set_new(y, "pc", json_integer(l->hot[h]->pc));
            json_object_set_new(y, "sass",
                                l->hot[h]->text ? json_string(l->hot[h]->text) : json_null());
            json_object_set_new(y, "samples", json_real(l->hot[h]->samples));
            json_object_set_new(y, "reason",
                                json_string(m->pc_reasons[l->hot[h]->reason].short_name));
            json_array_append_new(hot, y);
        }
        json_object_set_new(x, "hot_pcs", hot);
        json_array_append_new(lines, x);
    }
    json_object_set_new(o, "lines", lines);
    return o;
}

/* ---------------------------------------------------------------------- */
/* Markdown and HTML                                                        */
/* ---------------------------------------------------------------------- */

static void doc_rows(const gpufl__report_emitter_t *e, const gpufl__report_t *r, const char *head,
                     const gpufl__report_pc_row_t *rows, size_t n) {
    const char *heads[4] = {head, "samples", "share", "top reasons"};
    e->table_begin(e->out, 4, heads, "lrrl");
    for (size_t i = 0; i < n; i++) {
        char c[4][CELL];
        const char *cp[4] = {c[0], c[1], c[2], c[3]};
        row_cells(r, &rows[i], c);
        e->row(e->out, 4, cp);
    }
    e->table_end(e->out);
}

void gpufl__report_doc_pc(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    const gpufl__report_pc_t *pc = &r->pc;
    if (!pc->shown) return;
    FILE *o = e->out;
    e->heading(o, 2, "PC sampling");
    const char *label[PC_FIELDS];
    char value[PC_FIELDS][400];
    size_t nf = fields(r, label, value);
    e->fields_begin(o);
    for (size_t i = 0; i < nf; i++) e->field(o, label[i], value[i]);
    e->fields_end(o);
    if (!pc->profile.n_functions) return;
    e->heading(o, 3, "Stall reasons per kernel");
    doc_rows(e, r, "kernel", pc->kernels, pc->n_kernels);
    e->heading(o, 3, "Stall reasons per scope");
    doc_rows(e, r, "scope", pc->scopes, pc->n_scopes);
    e->heading(o, 3, "Most-stalled source lines");
    static const char *const heads[5] = {"line", "kernel / SASS", "samples", "share", "reason"};
    e->table_begin(o, 5, heads, "llrrl");
    for (size_t i = 0; i < pc->n_lines; i++) {
        char c[5][CELL];
        const char *cp[5] = {c[0], c[1], c[2], c[3], c[4]};
        line_cells(r, &pc->lines[i], c);
        e->row(o, 5, cp);
        for (size_t h = 0; h < pc->lines[i].n_hot; h++) {
            insn_cells(r, &pc->lines[i], pc->lines[i].hot[h], c);
            e->row(o, 5, cp);
        }
    }
    e->table_end(o);
}
