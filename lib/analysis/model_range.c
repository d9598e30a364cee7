// SPDX-License-Identifier: Apache-2.0
/*
 * model_range.c - loads the range profiler records (range_profiler,
 * range_metrics, range_profiler_stats) into the model (docs/log-format.md,
 * "Range profiler"). A range_metrics record is one profiled scope's
 * counters, those of one metric group; the names are CUPTI's and kept as
 * written, known or not.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define MAX_RANGE_CONTEXTS ((size_t)65536)

static const gpufl__model_range_context_t *range_context(const gpufl__model_t *m, int64_t context) {
    for (size_t i = 0; i < m->n_range_contexts; i++)
        if (m->range_contexts[i].context == context) return &m->range_contexts[i];
    return NULL;
}

/* 0 when a is absent, null or an array of strings; else the line is bad
 * (what names a in the message). */
static int check_names(gpufl__model_t *m, const gpufl__reader_pos_t *pos, const json_t *a,
                       const char *what) {
    if (!a || json_is_null(a)) return 0;
    if (!json_is_array(a))
        return gpufl__model_bad_line(m, pos, "range_profiler", "%s is not an array", what);
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!json_is_string(json_array_get(a, i)))
            return gpufl__model_bad_line(m, pos, "range_profiler", "%s[%zu] is not a string", what,
                                         i);
    return 0;
}

/* groups: absent, null, or an array of arrays of strings. */
static int check_groups(gpufl__model_t *m, const gpufl__reader_pos_t *pos, const json_t *groups) {
    if (!groups || json_is_null(groups)) return 0;
    if (!json_is_array(groups))
        return gpufl__model_bad_line(m, pos, "range_profiler", "groups is not an array");
    for (size_t i = 0; i < json_array_size(groups); i++) {
        const json_t *g = json_array_get(groups, i);
        if (!json_is_array(g))
            return gpufl__model_bad_line(m, pos, "range_profiler", "groups[%zu] is not an array",
                                         i);
        char what[40];
        snprintf(what, sizeof what, "groups[%zu]", i);
        int rc = check_names(m, pos, g, what);
        if (rc) return rc;
    }
    return 0;
}

/* range_profiler_stats is kept whole: gpufl__model_keep_last. */
static int on_range_profiler(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t context, ts;
    int rc = gpufl__model_context_head(m, pos, "range_profiler", rec, "metrics", &context, &ts);
    if (rc) return rc;
    json_t *metrics = json_object_get(rec, "metrics");
    json_t *groups = json_object_get(rec, "groups");
    json_t *sm_of = json_object_get(rec, "sm_throughput_of");
    if ((rc = check_names(m, pos, metrics, "metrics")) || (rc = check_groups(m, pos, groups)) ||
        (rc = check_names(m, pos, sm_of, "sm_throughput_of")))
        return rc;
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
    gpufl__model_range_context_t *c = &m->range_contexts[m->n_range_contexts];
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
    c->groups = json_array_size(groups) ? json_incref(groups) : NULL; /* [] as absent */
    c->n_groups = c->groups ? json_array_size(groups) : 1;
    c->sm_throughput_of = json_is_array(sm_of) ? json_incref(sm_of) : NULL;
    m->n_range_contexts++;
    return 0;
}

/* A required integer member >= 0 into *out; else the line is bad. */
static int need_int(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec, const char *key,
                    int64_t *out) {
    if (gpufl__reader_int(json_object_get(rec, key), out) != 0 || *out < 0)
        return gpufl__model_bad_line(m, pos, "range_metrics", "no integer %s", key);
    return 0;
}

static int on_range_metrics(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    gpufl__model_range_t r = {.tid = GPUFL_MODEL_UNKNOWN};
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
    if (gpufl__reader_int(json_object_get(rec, "group"), &r.group) < 0 || r.group < 0)
        return gpufl__model_bad_line(m, pos, "range_metrics", "group is not an integer >= 0");
    json_t *settling = json_object_get(rec, "settling");
    if (settling && !json_is_boolean(settling))
        return gpufl__model_bad_line(m, pos, "range_metrics", "settling is not a boolean");
    r.settling = json_is_true(settling);
    const gpufl__model_range_context_t *c = range_context(m, r.context);
    if (c && (uint64_t)r.group >= c->n_groups)
        return gpufl__model_bad_line(m, pos, "range_metrics",
                                     "group %lld is past context %lld's last group (%zu)",
                                     (long long)r.group, (long long)r.context, c->n_groups - 1);
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

void gpufl__model_free_range(gpufl__model_t *m) {
    for (size_t i = 0; i < m->n_range_contexts; i++) {
        json_decref(m->range_contexts[i].metrics);
        json_decref(m->range_contexts[i].left_out);
        json_decref(m->range_contexts[i].groups);
        json_decref(m->range_contexts[i].sm_throughput_of);
    }
    free(m->range_contexts);
    for (size_t i = 0; i < m->n_ranges; i++) json_decref(m->ranges[i].metrics);
    free(m->ranges);
    json_decref(m->range_stats);
}

static int on_range_profiler_stats(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    (void)pos;
    return gpufl__model_keep_last(&m->range_stats, rec);
}

const gpufl__model_handler_t gpufl__model_range_handlers[] = {
    {"range_profiler", on_range_profiler, NULL},
    {"range_metrics", on_range_metrics, NULL},
    {"range_profiler_stats", on_range_profiler_stats, NULL},
    {NULL, NULL, NULL},
};
