// SPDX-License-Identifier: Apache-2.0
/*
 * sass_profile.c - sums the sass_metric rows up per function, source line
 * and instruction (see sass_profile.h). The model keeps the rows sorted by
 * (cubin, function, pc, context), so one pass makes the functions and
 * instructions; each function's instructions are then sorted by source
 * line and grouped. O(n log n) in rows.
 */
#include "analysis/sass_profile.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

static int oom(void) {
    return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the SASS metrics profile");
}

/* ---------------------------------------------------------------------- */
/* Counts                                                                   */
/* ---------------------------------------------------------------------- */

static void counts_add_row(gpufl__sass_counts_t *c, const gpufl__model_sass_metric_t *r) {
    if (r->inst >= 0) {
        c->inst += (double)r->inst;
        if (r->thread_inst >= 0) {
            c->thread_base += (double)r->inst;
            c->thread_inst += (double)r->thread_inst;
        }
        if (r->sectors > 0 && r->inst > 0) {
            c->requests += (double)r->inst;
            c->request_sectors += (double)r->sectors;
        }
    }
    if (r->sectors >= 0) {
        c->sectors += (double)r->sectors;
        if (r->sectors_ideal >= 0) {
            c->ideal_base += (double)r->sectors;
            c->ideal += (double)r->sectors_ideal;
        }
    }
}

static void counts_add(gpufl__sass_counts_t *c, const gpufl__sass_counts_t *x) {
    c->inst += x->inst;
    c->thread_base += x->thread_base;
    c->thread_inst += x->thread_inst;
    c->requests += x->requests;
    c->request_sectors += x->request_sectors;
    c->sectors += x->sectors;
    c->ideal_base += x->ideal_base;
    c->ideal += x->ideal;
}

double gpufl__sass_thread_efficiency(const gpufl__sass_counts_t *c) {
    return c->thread_base > 0 ? c->thread_inst / (32 * c->thread_base) : -1;
}

double gpufl__sass_idle_lanes(const gpufl__sass_counts_t *c) {
    if (c->thread_base <= 0) return -1;
    double idle = 32 * c->thread_base - c->thread_inst;
    return idle > 0 ? idle : 0;
}

double gpufl__sass_sectors_per_request(const gpufl__sass_counts_t *c) {
    return c->requests > 0 ? c->request_sectors / c->requests : -1;
}

double gpufl__sass_coalescing(const gpufl__sass_counts_t *c) {
    return c->ideal_base > 0 ? c->ideal / c->ideal_base : -1;
}

/* The ideal sectors of the requests: their sectors scaled by the
 * coalescing of the rows that count the ideal (the same rows where every
 * metric was counted). */
double gpufl__sass_ideal_per_request(const gpufl__sass_counts_t *c) {
    double spr = gpufl__sass_sectors_per_request(c), eff = gpufl__sass_coalescing(c);
    return spr >= 0 && eff >= 0 ? spr * eff : -1;
}

double gpufl__sass_excess_sectors(const gpufl__sass_counts_t *c) {
    if (c->ideal_base <= 0) return c->sectors > 0 ? -1 : 0;
    return c->ideal_base > c->ideal ? c->ideal_base - c->ideal : 0;
}

double gpufl__sass_rank_value(const gpufl__sass_counts_t *c, gpufl__sass_rank_t by) {
    double v =
        by == GPUFL_SASS_BY_IDLE_LANES ? gpufl__sass_idle_lanes(c) : gpufl__sass_excess_sectors(c);
    return v > 0 ? v : 0;
}

/* ---------------------------------------------------------------------- */
/* Building                                                                 */
/* ---------------------------------------------------------------------- */

static int same_function(const gpufl__model_sass_metric_t *x, const gpufl__model_sass_metric_t *y) {
    return x->cubin == y->cubin && x->function == y->function;
}

/* An instruction with its source line, while lines are made. */
typedef struct keyed_insn {
    const char *file; /* NULL without line info */
    int32_t line;
    gpufl__sass_insn_t insn;
} keyed_insn_t;

static int cmp_keyed(const void *a, const void *b) {
    const keyed_insn_t *x = a, *y = b;
    if (!x->file != !y->file) return x->file ? -1 : 1; /* "(no line info)" last */
    if (x->file) {
        int c = strcmp(x->file, y->file);
        if (c) return c;
        if (x->line != y->line) return x->line < y->line ? -1 : 1;
    }
    return (x->insn.pc > y->insn.pc) - (x->insn.pc < y->insn.pc);
}

static int same_line(const keyed_insn_t *x, const keyed_insn_t *y) {
    if (!x->file || !y->file) return !x->file && !y->file;
    return x->line == y->line && strcmp(x->file, y->file) == 0;
}

static int cmp_function(const void *a, const void *b) {
    const gpufl__sass_function_t *x = a, *y = b;
    if (x->counts.inst != y->counts.inst) return x->counts.inst > y->counts.inst ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->cubin != y->cubin) return x->cubin < y->cubin ? -1 : 1;
    return (x->function > y->function) - (x->function < y->function);
}

/* The instructions of the rows [i, end) of one function into keys (from
 * *nk on), each with its line from the function's sass record. */
static void function_insns(const gpufl__model_t *m, gpufl__sass_profile_t *p, size_t i, size_t end,
                           keyed_insn_t *keys, size_t *nk) {
    gpufl__sass_function_t *f = &p->functions[p->n_functions - 1];
    const gpufl__model_sass_t *sass = gpufl__model_sass_find(m, f->cubin, f->function);
    f->has_sass = sass && sass->n > 0;
    for (size_t j; i < end; i = j) {
        const gpufl__model_sass_metric_t *r = &m->sass_metrics[i];
        keyed_insn_t *k = &keys[(*nk)++];
        memset(k, 0, sizeof *k);
        k->insn.pc = r->pc;
        for (j = i; j < end && m->sass_metrics[j].pc == r->pc; j++)
            counts_add_row(&k->insn.counts, &m->sass_metrics[j]);
        const gpufl__model_sass_insn_t *si = gpufl__model_sass_insn(m, sass, r->pc);
        k->insn.text = si ? si->text : NULL;
        if (si && si->line > 0 && *si->file) {
            k->file = si->file;
            k->line = si->line;
            f->has_lines = 1;
        }
        counts_add(&f->counts, &k->insn.counts);
    }
}

/* Groups one function's instructions keys[from, to) into lines. */
static void function_lines(gpufl__sass_profile_t *p, keyed_insn_t *keys, size_t from, size_t to) {
    gpufl__sass_function_t *f = &p->functions[p->n_functions - 1];
    qsort(keys + from, to - from, sizeof *keys, cmp_keyed);
    f->first_line = p->n_lines;
    for (size_t i = from; i < to; i++) {
        if (i == from || !same_line(&keys[i - 1], &keys[i])) {
            gpufl__sass_line_t *l = &p->lines[p->n_lines++];
            memset(l, 0, sizeof *l);
            l->fn = p->n_functions - 1;
            l->file = keys[i].file;
            l->line = keys[i].line;
            l->first_insn = p->n_insns;
            if (l->file) p->has_sass_lines = 1;
        }
        gpufl__sass_line_t *l = &p->lines[p->n_lines - 1];
        p->insns[p->n_insns++] = keys[i].insn;
        l->n_insns++;
        counts_add(&l->counts, &keys[i].insn.counts);
    }
    f->n_lines = p->n_lines - f->first_line;
}

static void note_row(gpufl__sass_profile_t *p, const gpufl__model_sass_metric_t *r) {
    const int64_t v[4] = {r->inst, r->thread_inst, r->sectors, r->sectors_ideal};
    for (int c = 0; c < 4; c++)
        if (v[c] >= 0) p->counted[c] = 1;
    counts_add_row(&p->total, r);
}

int gpufl__sass_profile_build(const gpufl__model_t *m, gpufl__sass_profile_t *p) {
    memset(p, 0, sizeof *p);
    size_t n = m->n_sass_metrics;
    p->rows = n;
    if (!n) return 0;
    gpufl__idmap_t contexts;
    gpufl__idmap_init(&contexts);
    keyed_insn_t *keys = malloc(n * sizeof *keys);
    p->functions = calloc(n, sizeof *p->functions);
    p->lines = calloc(n, sizeof *p->lines);
    p->insns = calloc(n, sizeof *p->insns);
    size_t *to = malloc(n * sizeof *to);
    int rc = 0;
    if (!keys || !p->functions || !p->lines || !p->insns || !to) {
        rc = oom();
        goto free_temp;
    }
    for (size_t i = 0; i < n; i++) {
        note_row(p, &m->sass_metrics[i]);
        if (gpufl__idmap_put(&contexts, (uint64_t)m->sass_metrics[i].context + 1, 0, NULL) < 0) {
            rc = oom();
            goto free_temp;
        }
    }
    p->contexts = contexts.count;
    for (size_t i = 0, j; i < n; i = j) {
        const gpufl__model_sass_metric_t *r = &m->sass_metrics[i];
        for (j = i; j < n && same_function(&m->sass_metrics[j], r); j++) {
        }
        gpufl__sass_function_t *f = &p->functions[p->n_functions];
        f->cubin = r->cubin;
        f->function = r->function;
        f->mangled = gpufl__model_str(m, r->function);
        f->name = gpufl__model_str(m, r->demangled);
        if (!f->mangled) f->mangled = "?";
        if (!f->name || !*f->name) f->name = f->mangled;
        f->id = p->n_functions++;
        size_t nk = 0;
        function_insns(m, p, i, j, keys, &nk);
        function_lines(p, keys, 0, nk);
    }
    /* Functions by warp instructions; the lines follow their function. */
    qsort(p->functions, p->n_functions, sizeof *p->functions, cmp_function);
    for (size_t i = 0; i < p->n_functions; i++) to[p->functions[i].id] = i;
    for (size_t i = 0; i < p->n_lines; i++) p->lines[i].fn = to[p->lines[i].fn];
free_temp:
    free(keys);
    free(to);
    gpufl__idmap_fini(&contexts);
    return rc;
}

void gpufl__sass_profile_free(gpufl__sass_profile_t *p) {
    if (!p) return;
    free(p->functions);
    free(p->lines);
    free(p->insns);
    memset(p, 0, sizeof *p);
}

/* ---------------------------------------------------------------------- */
/* Lookups                                                                  */
/* ---------------------------------------------------------------------- */

const gpufl__sass_line_t *gpufl__sass_worst_line(const gpufl__sass_profile_t *p, size_t fn,
                                                 gpufl__sass_rank_t by) {
    const gpufl__sass_function_t *f = &p->functions[fn];
    const gpufl__sass_line_t *best = NULL;
    double best_v = 0;
    for (size_t i = f->first_line; i < f->first_line + f->n_lines; i++) {
        double v = gpufl__sass_rank_value(&p->lines[i].counts, by);
        if (p->lines[i].file && v > best_v) best = &p->lines[i], best_v = v;
    }
    return best;
}

const gpufl__sass_insn_t *gpufl__sass_worst_insn(const gpufl__sass_profile_t *p, size_t fn,
                                                 gpufl__sass_rank_t by) {
    const gpufl__sass_function_t *f = &p->functions[fn];
    const gpufl__sass_insn_t *best = NULL;
    double best_v = 0;
    for (size_t l = f->first_line; l < f->first_line + f->n_lines; l++) {
        const gpufl__sass_line_t *line = &p->lines[l];
        for (size_t i = line->first_insn; i < line->first_insn + line->n_insns; i++) {
            double v = gpufl__sass_rank_value(&p->insns[i].counts, by);
            if (v > best_v) best = &p->insns[i], best_v = v;
        }
    }
    return best;
}
