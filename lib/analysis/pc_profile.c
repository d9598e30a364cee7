// SPDX-License-Identifier: Apache-2.0
/*
 * pc_profile.c - sums the pc_sample rows up per function, source line and
 * instruction (see pc_profile.h). One sort of the rows by (function, cubin,
 * pc, reason), then two passes: O(n log n) in rows.
 */
#include "analysis/pc_profile.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

static int oom(void) { return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the PC profile"); }

static int cmp_row(const void *a, const void *b, void *rows) {
    const gpufl__model_pc_sample_t *x = (const gpufl__model_pc_sample_t *)rows + *(const size_t *)a;
    const gpufl__model_pc_sample_t *y = (const gpufl__model_pc_sample_t *)rows + *(const size_t *)b;
    if (x->function != y->function) return x->function < y->function ? -1 : 1;
    if (x->cubin != y->cubin) return x->cubin < y->cubin ? -1 : 1;
    if (x->pc != y->pc) return x->pc < y->pc ? -1 : 1;
    return (x->reason > y->reason) - (x->reason < y->reason);
}

static int same_insn(const gpufl__model_pc_sample_t *x, const gpufl__model_pc_sample_t *y) {
    return x->function == y->function && x->cubin == y->cubin && x->pc == y->pc;
}

/* Sort state for lines: the key of each instruction. */
typedef struct line_key {
    size_t fn;
    const char *file;
    int32_t line;
    uint32_t pc;
    size_t insn;
} line_key_t;

static int cmp_line_key(const void *a, const void *b) {
    const line_key_t *x = a, *y = b;
    if (x->fn != y->fn) return x->fn < y->fn ? -1 : 1;
    if (!x->file != !y->file) return x->file ? -1 : 1;
    if (x->file) {
        int c = strcmp(x->file, y->file);
        if (c) return c;
        if (x->line != y->line) return x->line < y->line ? -1 : 1;
    }
    return (x->pc > y->pc) - (x->pc < y->pc);
}

static int same_line(const line_key_t *x, const line_key_t *y) {
    if (x->fn != y->fn || !x->file != !y->file) return 0;
    if (!x->file) return x->pc == y->pc;
    return x->line == y->line && strcmp(x->file, y->file) == 0;
}

static int cmp_text(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

static int cmp_function(const void *a, const void *b) {
    const gpufl__pc_function_t *x = a, *y = b;
    if (x->samples != y->samples) return x->samples > y->samples ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->function > y->function) - (x->function < y->function);
}

static int cmp_line(const void *a, const void *b, void *fns) {
    const gpufl__pc_line_t *x = a, *y = b;
    const gpufl__pc_function_t *f = fns;
    if (x->samples != y->samples) return x->samples > y->samples ? -1 : 1;
    int c = strcmp(f[x->fn].name, f[y->fn].name);
    if (c) return c;
    if ((c = cmp_text(x->file, y->file))) return c;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    return (x->pc > y->pc) - (x->pc < y->pc);
}

static int cmp_insn(const void *a, const void *b) {
    const gpufl__pc_insn_t *x = a, *y = b;
    if (x->samples != y->samples) return x->samples > y->samples ? -1 : 1;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    return (x->pc > y->pc) - (x->pc < y->pc);
}

/* Functions and instructions from the sorted rows; insn_of[i]: the
 * instruction of row order[i]. */
static void first_pass(const gpufl__model_t *m, gpufl__pc_profile_t *p, const size_t *order,
                       size_t *insn_of, line_key_t *keys) {
    size_t nr = p->n_reasons, n = m->n_pc_samples;
    const gpufl__model_sass_t *sass = NULL;
    for (size_t i = 0, j; i < n; i = j) {
        const gpufl__model_pc_sample_t *r = &m->pc_samples[order[i]];
        if (!p->n_functions || p->functions[p->n_functions - 1].function != r->function) {
            gpufl__pc_function_t *f = &p->functions[p->n_functions];
            f->function = r->function;
            f->mangled = gpufl__model_str(m, r->function);
            f->name = gpufl__model_str(m, r->demangled);
            if (!f->mangled) f->mangled = "?";
            if (!f->name || !*f->name) f->name = f->mangled;
            f->by_reason = p->pool + p->n_functions * nr;
            f->id = p->n_functions;
            p->n_functions++;
            sass = gpufl__model_sass_find(m, r->cubin, r->function);
        } else if (i && m->pc_samples[order[i - 1]].cubin != r->cubin) {
            sass = gpufl__model_sass_find(m, r->cubin, r->function);
        }
        gpufl__pc_function_t *f = &p->functions[p->n_functions - 1];
        gpufl__pc_insn_t *in = &p->insns[p->n_insns];
        memset(in, 0, sizeof *in);
        in->pc = r->pc;
        double best = -1, run = 0;
        for (j = i; j < n && same_insn(&m->pc_samples[order[j]], r); j++) {
            const gpufl__model_pc_sample_t *s = &m->pc_samples[order[j]];
            insn_of[j] = p->n_insns;
            in->samples += s->samples;
            f->samples += s->samples;
            f->by_reason[s->reason] += s->samples;
            run += s->samples;
            if (j + 1 == n || m->pc_samples[order[j + 1]].reason != s->reason ||
                !same_insn(&m->pc_samples[order[j + 1]], r)) {
                if (run > best) best = run, in->reason = s->reason;
                run = 0;
            }
        }
        const gpufl__model_sass_insn_t *si = gpufl__model_sass_insn(m, sass, r->pc);
        in->text = si ? si->text : NULL;
        keys[p->n_insns] = (line_key_t){p->n_functions - 1, si && si->line > 0 ? si->file : NULL,
                                        si ? si->line : 0, r->pc, p->n_insns};
        p->n_insns++;
    }
}

int gpufl__pc_profile_build(const gpufl__model_t *m, gpufl__pc_profile_t *p) {
    memset(p, 0, sizeof *p);
    size_t n = m->n_pc_samples, nr = m->n_pc_reasons;
    p->n_reasons = nr;
    if (!n) return 0;
    size_t *order = malloc(n * sizeof *order);
    size_t *insn_of = malloc(n * sizeof *insn_of);
    line_key_t *keys = malloc(n * sizeof *keys);
    size_t *line_of = malloc(n * sizeof *line_of);
    p->functions = calloc(n, sizeof *p->functions);
    p->insns = calloc(n, sizeof *p->insns);
    p->lines = calloc(n, sizeof *p->lines);
    /* by_reason of functions and lines: at most one of each per row */
    p->pool =
        nr && n <= SIZE_MAX / 2 / nr / sizeof(double) ? calloc(2 * n * nr, sizeof(double)) : NULL;
    int rc = 0;
    if (!order || !insn_of || !keys || !line_of || !p->functions || !p->insns || !p->lines ||
        !p->pool) {
        rc = oom();
        goto free_temp;
    }
    for (size_t i = 0; i < n; i++) order[i] = i;
    qsort_r(order, n, sizeof *order, cmp_row, m->pc_samples);
    first_pass(m, p, order, insn_of, keys);
    /* Lines: instructions grouped by (function, file, line). */
    qsort(keys, p->n_insns, sizeof *keys, cmp_line_key);
    double *line_pool = p->pool + n * nr;
    for (size_t i = 0; i < p->n_insns; i++) {
        if (!i || !same_line(&keys[i - 1], &keys[i])) {
            gpufl__pc_line_t *l = &p->lines[p->n_lines];
            l->fn = keys[i].fn;
            l->file = keys[i].file;
            l->line = keys[i].line;
            l->pc = keys[i].pc;
            l->by_reason = line_pool + p->n_lines * nr;
            l->id = p->n_lines;
            if (l->file) p->has_sass_lines = 1;
            p->n_lines++;
        }
        line_of[keys[i].insn] = p->n_lines - 1;
    }
    for (size_t i = 0; i < p->n_insns; i++) p->insns[i].line = line_of[i];
    for (size_t i = 0; i < n; i++) {
        const gpufl__model_pc_sample_t *s = &m->pc_samples[order[i]];
        gpufl__pc_line_t *l = &p->lines[line_of[insn_of[i]]];
        l->samples += s->samples;
        l->by_reason[s->reason] += s->samples;
        p->samples += s->samples;
    }
    /* Sorted for showing: lines (by their functions' names, still in the
     * first order), then the instructions' line indices, then functions
     * and the lines' function indices, then instructions. */
    qsort_r(p->lines, p->n_lines, sizeof *p->lines, cmp_line, p->functions);
    for (size_t i = 0; i < p->n_lines; i++) line_of[p->lines[i].id] = i;
    for (size_t i = 0; i < p->n_insns; i++) p->insns[i].line = line_of[p->insns[i].line];
    qsort(p->functions, p->n_functions, sizeof *p->functions, cmp_function);
    for (size_t i = 0; i < p->n_functions; i++) line_of[p->functions[i].id] = i;
    for (size_t i = 0; i < p->n_lines; i++) p->lines[i].fn = line_of[p->lines[i].fn];
    qsort(p->insns, p->n_insns, sizeof *p->insns, cmp_insn);
    rc = 0;
free_temp:
    free(order);
    free(insn_of);
    free(keys);
    free(line_of);
    return rc;
}

void gpufl__pc_profile_free(gpufl__pc_profile_t *p) {
    if (!p) return;
    free(p->functions);
    free(p->lines);
    free(p->insns);
    free(p->pool);
    memset(p, 0, sizeof *p);
}

long gpufl__pc_top_reason(const gpufl__model_t *m, const double *by_reason, int skip_issued) {
    long best = -1;
    for (size_t r = 0; r < m->n_pc_reasons; r++) {
        if (skip_issued && m->pc_reasons[r].issued) continue;
        if (by_reason[r] > 0 && (best < 0 || by_reason[r] > by_reason[best])) best = (long)r;
    }
    return best;
}

const gpufl__pc_line_t *gpufl__pc_hottest_line(const gpufl__pc_profile_t *p, size_t fn,
                                               uint32_t reason) {
    const gpufl__pc_line_t *best = NULL;
    for (size_t i = 0; i < p->n_lines; i++) { /* sorted: the first of a tie wins */
        const gpufl__pc_line_t *l = &p->lines[i];
        if (l->fn == fn && l->by_reason[reason] > 0 &&
            (!best || l->by_reason[reason] > best->by_reason[reason]))
            best = l;
    }
    return best;
}
