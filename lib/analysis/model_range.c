/*
 * model_range.c - loads the range profiler records (range_profiler,
 * range_metrics, range_profiler_stats) into the model (docs/log-format.md,
 * "Range profiler"). A range_metrics record is one profiled scope's
 * counters; the names are CUPTI's and kept as written, known or not.
 */
#include "analysis/model_internal.h"

#include "core/error.h"

#include <stdlib.h>
#include <string.h>

#define MAX_RANGE_CONTEXTS ((size_t)65536)

static const gpufl_model_range_context_t *range_context(const gpufl_model_t *m, int64_t context) {
    for (size_t i = 0; i < m->n_range_contexts; i++)
        if (m->range_contexts[i].context == context) return &m->range_contexts[i];
    return NULL;
}

/* range_profiler_stats is kept whole: gpufl__model_keep_last. */
int gpufl__model_on_range_profiler(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    int64_t context, ts;
    int rc = gpufl__model_context_head(m, pos, "range_profiler", rec, "metrics", &context, &ts);
    if (rc) return rc;
    json_t *metrics = json_object_get(rec, "metrics");
    for (size_t i = 0; json_is_array(metrics) && i < json_array_size(metrics); i++)
        if (!json_is_string(json_array_get(metrics, i)))
            return gpufl__model_bad_line(m, pos, "range_profiler", "metrics[%zu] is not a string",
                                         i);
    json_t *left_out = json_object_get(rec, "left_out");
    if (left_out && !json_is_object(left_out) && !json_is_null(left_out))
        return gpufl__model_bad_line(m, pos, "range_profiler", "left_out is not an object");
    if (range_context(m, context)) {
        gpufl__model_warn(m, pos->name, pos->line,
                          "range_profiler: context %lld started again (the first record kept)",
                          (long long)context);
        return 0;
    }
    rc = gpufl__model_reserve((void **)&m->range_contexts, &m->range_contexts_alloc,
                              m->n_range_contexts, sizeof *m->range_contexts, MAX_RANGE_CONTEXTS);
    if (rc) return rc < 0 ? rc : 0;
    gpufl_model_range_context_t *c = &m->range_contexts[m->n_range_contexts];
    memset(c, 0, sizeof *c);
    c->ts_ns = ts;
    c->context = context;
    c->device = gpufl__model_count(json_object_get(rec, "device"));
    c->max_ranges = gpufl__model_count(json_object_get(rec, "max_ranges"));
    c->enable_ms = gpufl__model_ms(json_object_get(rec, "enable_ms"));
    c->chip = gpufl__model_member_str(m, rec, "chip");
    c->error = gpufl__model_member_str(m, rec, "error");
    if (!c->chip || !c->error)
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for range_profiler");
    c->metrics = json_is_array(metrics) ? json_incref(metrics) : NULL;
    c->left_out = json_is_object(left_out) ? json_incref(left_out) : NULL;
    m->n_range_contexts++;
    return 0;
}

/* A required integer member >= 0 into *out; else the line is bad. */
static int need_int(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec, const char *key,
                    int64_t *out) {
    if (gpufl__reader_int(json_object_get(rec, key), out) != 0 || *out < 0)
        return gpufl__model_bad_line(m, pos, "range_metrics", "no integer %s", key);
    return 0;
}

int gpufl__model_on_range_metrics(gpufl_model_t *m, const gpufl_reader_pos_t *pos, json_t *rec) {
    gpufl_model_range_t r = {.tid = GPUFL_MODEL_UNKNOWN};
    int rc;
    if ((rc = need_int(m, pos, rec, "ts_ns", &r.ts_ns)) ||
        (rc = need_int(m, pos, rec, "start_ns", &r.start_ns)) ||
        (rc = need_int(m, pos, rec, "context", &r.context)) ||
        (rc = need_int(m, pos, rec, "scope", &r.scope)) ||
        (rc = need_int(m, pos, rec, "path", &r.path_id)))
        return rc;
    if (r.ts_ns < r.start_ns)
        return gpufl__model_bad_line(m, pos, "range_metrics", "ts_ns before start_ns");
    if (r.path_id == 0) return gpufl__model_bad_line(m, pos, "range_metrics", "path is 0");
    json_t *metrics = json_object_get(rec, "metrics");
    if (!json_is_object(metrics))
        return gpufl__model_bad_line(m, pos, "range_metrics", "metrics is not an object");
    const char *key;
    json_t *v;
    json_object_foreach(metrics, key, v) {
        if (!json_is_number(v) && !json_is_null(v))
            return gpufl__model_bad_line(m, pos, "range_metrics", "metric %s is not a number", key);
    }
    int64_t tid;
    if (gpufl__reader_int(json_object_get(rec, "tid"), &tid) == 0 && tid >= 0) r.tid = tid;
    gpufl__model_note_ts(m, r.start_ns);
    gpufl__model_note_ts(m, r.ts_ns);
    rc = gpufl__model_reserve((void **)&m->ranges, &m->ranges_alloc, m->n_ranges, sizeof *m->ranges,
                              GPUFL_MODEL_MAX_RANGES);
    if (rc > 0) m->ranges_over_cap++;
    if (rc) return rc < 0 ? rc : 0;
    r.path = gpufl__model_resolve(m, r.path_id);
    r.metrics = json_incref(metrics);
    m->ranges[m->n_ranges++] = r;
    return 0;
}

void gpufl__model_free_range(gpufl_model_t *m) {
    for (size_t i = 0; i < m->n_range_contexts; i++) {
        json_decref(m->range_contexts[i].metrics);
        json_decref(m->range_contexts[i].left_out);
    }
    free(m->range_contexts);
    for (size_t i = 0; i < m->n_ranges; i++) json_decref(m->ranges[i].metrics);
    free(m->ranges);
    json_decref(m->range_stats);
}
