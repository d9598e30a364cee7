// SPDX-License-Identifier: Apache-2.0
/*
 * model_sass_metrics.c - loads the SASS metrics records (sass_metrics,
 * sass_metric, sass_metrics_stats) into the model (docs/log-format.md,
 * "SASS metrics"); the sass records they share with PC sampling are
 * model_pc.c's.
 *
 * A sass_metric row holds the exact counts of one instruction on one
 * context since counting started there, and the engine reads a context
 * once, so the rows of different contexts add up. Should a context be read
 * twice all the same, its later row holds everything the earlier one did:
 * after loading only the latest read of each (context, cubin, function, pc)
 * is kept, and the replaced rows are counted and said.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SASSM_CONTEXTS ((size_t)65536)

/* ---------------------------------------------------------------------- */
/* sass_metrics (sass_metrics_stats is kept whole: gpufl__model_keep_last) */
/* ---------------------------------------------------------------------- */

static int on_sass_metrics(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t context, ts;
    int rc = gpufl__model_context_head(m, pos, "sass_metrics", rec, "metrics", &context, &ts);
    if (rc) return rc;
    json_t *metrics = json_object_get(rec, "metrics");
    for (size_t i = 0; json_is_array(metrics) && i < json_array_size(metrics); i++)
        if (!json_is_string(json_array_get(metrics, i)))
            return gpufl__model_bad_line(m, pos, "sass_metrics", "metrics[%zu] is not a string", i);
    if (gpufl__model_sass_metrics_context(m, context)) {
        gpufl__model_warn(m, pos->name, pos->line,
                          "sass_metrics: context %lld started again (the first record kept)",
                          (long long)context);
        return 0;
    }
    rc = gpufl__model_reserve((void **)&m->sass_metrics_contexts, &m->sass_metrics_contexts_alloc,
                              m->n_sass_metrics_contexts, sizeof *m->sass_metrics_contexts,
                              MAX_SASSM_CONTEXTS);
    if (rc) return rc < 0 ? rc : 0;
    gpufl__model_sass_metrics_context_t *c = &m->sass_metrics_contexts[m->n_sass_metrics_contexts];
    memset(c, 0, sizeof *c);
    c->ts_ns = ts;
    c->context = context;
    c->device = gpufl__model_count(json_object_get(rec, "device"));
    c->enable_ms = gpufl__model_ms(json_object_get(rec, "enable_ms"));
    c->lazy = json_is_true(json_object_get(rec, "lazy"));
    c->late = json_is_true(json_object_get(rec, "late"));
    c->chip = gpufl__model_member_str(m, rec, "chip");
    c->error = gpufl__model_member_str(m, rec, "error");
    if (!c->chip || !c->error)
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for sass_metrics");
    c->metrics = json_is_array(metrics) ? json_incref(metrics) : NULL;
    m->n_sass_metrics_contexts++;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* sass_metric                                                              */
/* ---------------------------------------------------------------------- */

enum sass_metrics_col {
    S_TS,
    S_CONTEXT,
    S_FUNCTION,
    S_PC,
    S_CUBIN, /* optional from here on; the counts are null where not counted */
    S_DEMANGLED,
    S_INST,
    S_THREAD_INST,
    S_SECTORS,
    S_SECTORS_IDEAL,
    S_NCOL
};

static void fill_sass_metric(void *row, const int64_t *v) {
    gpufl__model_sass_metric_t *r = row;
    r->ts_ns = v[S_TS];
    r->context = (uint32_t)v[S_CONTEXT];
    r->function = (uint32_t)v[S_FUNCTION];
    r->pc = (uint32_t)v[S_PC];
    r->cubin = v[S_CUBIN] > 0 ? (uint32_t)v[S_CUBIN] : 0;
    r->demangled = v[S_DEMANGLED] > 0 ? (uint32_t)v[S_DEMANGLED] : r->function;
    r->inst = v[S_INST];
    r->thread_inst = v[S_THREAD_INST];
    r->sectors = v[S_SECTORS];
    r->sectors_ideal = v[S_SECTORS_IDEAL];
}

static int on_sass_metric(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                          const gpufl__reader_batch_t *view) {
    static const char *const names[S_NCOL] = {"ts_ns",   "context",      "function", "pc",
                                              "cubin",   "demangled",    "inst",     "thread_inst",
                                              "sectors", "sectors_ideal"};
    static const int64_t max[S_NCOL] = {[S_CONTEXT] = UINT32_MAX,
                                        [S_FUNCTION] = UINT32_MAX,
                                        [S_PC] = UINT32_MAX,
                                        [S_CUBIN] = UINT32_MAX,
                                        [S_DEMANGLED] = UINT32_MAX};
    static const trace_cols_t t = {"sass_metric", names, max, S_NCOL, S_CUBIN, 1};
    size_t start = m->n_sass_metrics;
    uint64_t over = m->sass_metrics_over_cap;
    int rc = gpufl__model_load_rows(m, pos, rec, view, &t, ROWS(m, sass_metrics, max_sass_metrics),
                                    fill_sass_metric);
    if (rc) return rc;
    for (size_t i = start; i < m->n_sass_metrics; i++) {
        gpufl__model_sass_metric_t *r = &m->sass_metrics[i];
        if (r->function == 0) {
            m->n_sass_metrics = start;
            m->sass_metrics_over_cap = over;
            return gpufl__model_bad_line(m, pos, "sass_metric",
                                         "row %zu: function is 0 (no dict id)", i - start);
        }
        r->seq = (uint32_t)i;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* After reading                                                            */
/* ---------------------------------------------------------------------- */

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b))

static int same_place(const gpufl__model_sass_metric_t *x, const gpufl__model_sass_metric_t *y) {
    return x->cubin == y->cubin && x->function == y->function && x->pc == y->pc &&
           x->context == y->context;
}

/* (cubin, function, pc, context), then the order of reading: the latest
 * read of a place comes last. */
static int cmp_sass_metric(const void *a, const void *b) {
    const gpufl__model_sass_metric_t *x = a, *y = b;
    int c;
    if ((c = CMP(x->cubin, y->cubin)) || (c = CMP(x->function, y->function)) ||
        (c = CMP(x->pc, y->pc)) || (c = CMP(x->context, y->context)) ||
        (c = CMP(x->ts_ns, y->ts_ns)))
        return c;
    return CMP(x->seq, y->seq);
}

void gpufl__model_finish_sass_metrics(gpufl__model_t *m) {
    if (m->n_sass_metrics > 1)
        qsort(m->sass_metrics, m->n_sass_metrics, sizeof *m->sass_metrics, cmp_sass_metric);
    size_t kept = 0;
    for (size_t i = 0; i < m->n_sass_metrics; i++) {
        if (kept && same_place(&m->sass_metrics[kept - 1], &m->sass_metrics[i])) {
            m->sass_metrics[kept - 1] = m->sass_metrics[i];
            m->sass_metrics_replaced++;
            continue;
        }
        m->sass_metrics[kept++] = m->sass_metrics[i];
    }
    m->n_sass_metrics = kept;
    if (m->sass_metrics_replaced)
        gpufl__model_warn(m, "", 0,
                          "%llu sass_metric rows were read again later on their context (the "
                          "latest read kept: counts are cumulative on a context)",
                          (unsigned long long)m->sass_metrics_replaced);
}

void gpufl__model_free_sass_metrics(gpufl__model_t *m) {
    for (size_t i = 0; i < m->n_sass_metrics_contexts; i++)
        json_decref(m->sass_metrics_contexts[i].metrics);
    free(m->sass_metrics_contexts);
    free(m->sass_metrics);
    json_decref(m->sass_metrics_stats);
}

const gpufl__model_sass_metrics_context_t *
gpufl__model_sass_metrics_context(const gpufl__model_t *m, int64_t context) {
    for (size_t i = 0; i < m->n_sass_metrics_contexts; i++)
        if (m->sass_metrics_contexts[i].context == context) return &m->sass_metrics_contexts[i];
    return NULL;
}

int gpufl__model_sass_counted(const gpufl__model_t *m) {
    for (size_t i = 0; i < m->n_sass_metrics_contexts; i++)
        if (!*m->sass_metrics_contexts[i].error) return 1;
    return 0;
}

static int on_sass_metrics_stats(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    (void)pos;
    return gpufl__model_keep_last(&m->sass_metrics_stats, rec);
}

const gpufl__model_handler_t gpufl__model_sass_metrics_handlers[] = {
    {"sass_metrics", on_sass_metrics, NULL},
    {"sass_metric", NULL, on_sass_metric},
    {"sass_metrics_stats", on_sass_metrics_stats, NULL},
    {NULL, NULL, NULL},
};
