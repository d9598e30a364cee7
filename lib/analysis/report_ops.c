// SPDX-License-Identifier: Apache-2.0
/*
 * report_ops.c - the report's framework operations section: the GPU time of
 * the kernels each framework operation launched (gpufl_ops.h, gpufl.torch),
 * with its calls and kernels, and what no operation claimed. Computed once
 * here and rendered here in every format, from the same cells.
 */
#include "analysis/report.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define CELL    GPUFL_REPORT_CELL
#define N_CELLS 6

typedef struct tagged {
    const char *op;
    int64_t call;
    double ns;
} tagged_t;

static int cmp_tagged(const void *a, const void *b) {
    const tagged_t *x = a, *y = b;
    int c = strcmp(x->op, y->op);
    if (c) return c;
    return (x->call > y->call) - (x->call < y->call);
}

static int cmp_row(const void *a, const void *b) {
    const gpufl__report_op_row_t *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns) return x->gpu_ns > y->gpu_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

int gpufl__report_build_ops(const gpufl__model_t *m, gpufl__report_ops_t *s) {
    memset(s, 0, sizeof *s);
    tagged_t *t = malloc((m->n_kernels ? m->n_kernels : 1) * sizeof *t);
    if (!t) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    size_t n = 0;
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[i];
        double ns = (double)(k->end_ns - k->start_ns);
        const char *op = gpufl__model_op_name(m, k->external_kind, k->external_id);
        if (op) {
            t[n++] = (tagged_t){op, k->external_id, ns};
        } else {
            s->untagged++;
            s->untagged_ns += ns;
        }
    }
    s->shown = n > 0;
    if (!s->shown) {
        free(t);
        return 0;
    }
    qsort(t, n, sizeof *t, cmp_tagged);
    s->rows = malloc(n * sizeof *s->rows); /* at most one row per kernel */
    if (!s->rows) {
        free(t);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    }
    for (size_t i = 0; i < n; i++) { /* sorted: one run of rows per operation, by call */
        int first = i == 0 || strcmp(t[i].op, t[i - 1].op) != 0;
        if (first) s->rows[s->total++] = (gpufl__report_op_row_t){t[i].op, 0, 0, 0};
        gpufl__report_op_row_t *row = &s->rows[s->total - 1];
        row->kernels++;
        row->gpu_ns += t[i].ns;
        if (first || t[i].call != t[i - 1].call) row->calls++;
    }
    free(t);
    qsort(s->rows, s->total, sizeof *s->rows, cmp_row);
    s->n_rows = s->total < GPUFL_REPORT_OPS_ROWS_MAX ? s->total : GPUFL_REPORT_OPS_ROWS_MAX;
    return 0;
}

void gpufl__report_free_ops(gpufl__report_ops_t *s) {
    free(s->rows);
    memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------------- */
/* Cells shared by the formats                                              */
/* ---------------------------------------------------------------------- */

static const char *const heads[N_CELLS] = {"operation", "calls",    "kernels",
                                           "GPU time",  "per call", "share"};
static const char *const aligns = "lrrrrr";

static double share(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

/* Shares are of all kernel time: the report's kernel_ns. */
static void row_cells(const gpufl__report_t *r, const gpufl__report_op_row_t *o,
                      char c[N_CELLS][CELL]) {
    snprintf(c[0], CELL, "%s", o->name);
    gpufl__report_fmt_count(c[1], CELL, (int64_t)o->calls);
    gpufl__report_fmt_count(c[2], CELL, (int64_t)o->kernels);
    gpufl__report_fmt_ns(c[3], CELL, o->gpu_ns);
    gpufl__report_fmt_ns(c[4], CELL, o->calls ? o->gpu_ns / (double)o->calls : 0);
    snprintf(c[5], CELL, "%.1f%%", share(o->gpu_ns, r->kernel_ns));
}

static void note(const gpufl__report_t *r, char *buf, size_t size) {
    const gpufl__report_ops_t *s = &r->ops;
    char untagged[CELL], kernels[CELL];
    gpufl__report_fmt_ns(untagged, sizeof untagged, s->untagged_ns);
    gpufl__report_fmt_count(kernels, sizeof kernels, (int64_t)s->untagged);
    snprintf(buf, size,
             "Kernel time per operation that launched it (%zu of %zu operations; share of all "
             "kernel time). Without an operation: %s kernels, %s (%.1f%%).",
             s->n_rows, s->total, kernels, untagged, share(s->untagged_ns, r->kernel_ns));
}

/* ---------------------------------------------------------------------- */
/* Text                                                                     */
/* ---------------------------------------------------------------------- */

void gpufl__report_text_ops(const gpufl__report_t *r, FILE *out) {
    const gpufl__report_ops_t *s = &r->ops;
    if (!s->shown) return;
    char line[600];
    note(r, line, sizeof line);
    fprintf(out, "\nGPU time per framework operation\n  %s\n\n", line);
    gpufl__report_cells_t *cells = calloc(s->n_rows + 1, sizeof *cells);
    if (!cells) return;
    for (size_t c = 0; c < N_CELLS; c++) snprintf(cells[0][c], CELL, "%s", heads[c]);
    for (size_t i = 0; i < s->n_rows; i++) row_cells(r, &s->rows[i], cells[i + 1]);
    gpufl__report_text_table(out, s->n_rows + 1, N_CELLS, cells, aligns);
    free(cells);
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                     */
/* ---------------------------------------------------------------------- */

json_t *gpufl__report_json_ops(const gpufl__report_t *r) {
    const gpufl__report_ops_t *s = &r->ops;
    json_t *o = json_object(), *rows = json_array();
    if (!o || !rows) {
        json_decref(o);
        json_decref(rows);
        return NULL;
    }
    for (size_t i = 0; i < s->n_rows; i++) {
        const gpufl__report_op_row_t *op = &s->rows[i];
        json_t *row = json_object();
        if (!row) break;
        json_object_set_new(row, "name", json_string(op->name));
        json_object_set_new(row, "calls", json_integer((json_int_t)op->calls));
        json_object_set_new(row, "kernels", json_integer((json_int_t)op->kernels));
        json_object_set_new(row, "gpu_ns", json_real(op->gpu_ns));
        json_object_set_new(row, "share_pct", json_real(share(op->gpu_ns, r->kernel_ns)));
        json_array_append_new(rows, row);
    }
    json_object_set_new(o, "operations", rows);
    json_object_set_new(o, "more_operations", json_integer((json_int_t)(s->total - s->n_rows)));
    json_object_set_new(o, "untagged_kernels", json_integer((json_int_t)s->untagged));
    json_object_set_new(o, "untagged_ns", json_real(s->untagged_ns));
    json_object_set_new(o, "kernel_ns", json_real(r->kernel_ns));
    return o;
}

/* ---------------------------------------------------------------------- */
/* Markdown and HTML                                                        */
/* ---------------------------------------------------------------------- */

void gpufl__report_doc_ops(const gpufl__report_emitter_t *e, const gpufl__report_t *r) {
    const gpufl__report_ops_t *s = &r->ops;
    if (!s->shown) return;
    FILE *o = e->out;
    char line[600];
    e->heading(o, 2, "GPU time per framework operation");
    note(r, line, sizeof line);
    e->para(o, line);
    e->table_begin(o, N_CELLS, heads, aligns);
    for (size_t i = 0; i < s->n_rows; i++) {
        char c[N_CELLS][CELL];
        const char *cp[N_CELLS];
        row_cells(r, &s->rows[i], c);
        for (size_t k = 0; k < N_CELLS; k++) cp[k] = c[k];
        e->row(o, N_CELLS, cp);
    }
    e->table_end(o);
}
