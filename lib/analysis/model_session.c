// SPDX-License-Identifier: Apache-2.0
/*
 * model_session.c - the session domain of the model: the records that say
 * what the session is and how it went (header, options, capabilities,
 * event, drops, source_cost, session_end). Mostly one record each, kept
 * whole or as a few fields; counters that are cumulative keep the latest.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SOURCE_COSTS ((size_t)64)

static int on_header(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    gpufl__model_header_t *h = &m->header;
    const char *sid = gpufl__model_json_str(rec, "session_id");
    if (h->present) {
        if (sid && strcmp(sid, h->session_id) != 0)
            gpufl__model_warn(m, pos->name, pos->line, "header: session id %s, but %s elsewhere",
                              sid, h->session_id);
        return 0;
    }
    h->session_id = gpufl__model_member_str(m, rec, "session_id");
    h->app_name = gpufl__model_member_str(m, rec, "app_name");
    h->hostname = gpufl__model_member_str(m, rec, "hostname");
    h->clock = gpufl__model_member_str(m, rec, "clock");
    h->gpufl_version = gpufl__model_member_str(m, rec, "gpufl_version");
    if (!h->session_id || !h->app_name || !h->hostname || !h->clock || !h->gpufl_version)
        return GPUFL_ENOMEM;
    h->pid = gpufl__model_int_or_unknown(json_object_get(rec, "pid"));
    h->epoch_unix_us = gpufl__model_int_or_unknown(json_object_get(rec, "epoch_unix_us"));
    int64_t epoch;
    h->epoch_ns = gpufl__reader_int(json_object_get(rec, "epoch_ns"), &epoch) == 0 && epoch >= 0
                      ? (uint64_t)epoch
                      : 0;
    h->present = 1;
    return 0;
}

static gpufl__model_level_t level_of(const char *s) {
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) return (gpufl__model_level_t)i;
    if (strcmp(s, "warning") == 0) return GPUFL_MODEL_LEVEL_WARN;
    return GPUFL_MODEL_LEVEL_UNKNOWN;
}

static int on_event(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t ts;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "event", "no integer ts_ns");
    gpufl__model_note_ts(m, ts);
    int rc;
    gpufl__model_event_t *e = gpufl__model_append_row(ROWS(m, events, max_events), &rc);
    if (!e) return rc;
    e->ts_ns = ts;
    e->file = pos->file;
    e->level_name = gpufl__model_member_str(m, rec, "level");
    e->code = gpufl__model_member_str(m, rec, "code");
    e->message = gpufl__model_member_str(m, rec, "message");
    if (!e->level_name || !e->code || !e->message) return GPUFL_ENOMEM;
    e->level = level_of(e->level_name);
    return 0;
}

static int on_drops(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t ts;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "drops", "no integer ts_ns");
    gpufl__model_note_ts(m, ts);
    gpufl__model_drops_t *d = &m->drops;
    if (d->present && ts < d->ts_ns) return 0; /* counters are cumulative: keep the latest */
    d->present = 1;
    d->ts_ns = ts;
    d->records = gpufl__model_int_or_unknown(json_object_get(rec, "records"));
    d->threads_unbuffered = gpufl__model_int_or_unknown(json_object_get(rec, "threads_unbuffered"));
    d->names_truncated = gpufl__model_int_or_unknown(json_object_get(rec, "names_truncated"));
    d->unbalanced_ends = gpufl__model_int_or_unknown(json_object_get(rec, "unbalanced_ends"));
    d->depth_overflow = gpufl__model_int_or_unknown(json_object_get(rec, "depth_overflow"));
    json_decref(d->rec);
    d->rec = json_incref(rec);
    return 0;
}

static int on_session_end(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t ts;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "session_end", "no integer ts_ns");
    gpufl__model_note_ts(m, ts);
    gpufl__model_session_end_t *e = &m->session_end;
    e->files++;
    if (e->present && ts < e->ts_ns) return 0;
    e->present = 1;
    e->ts_ns = ts;
    e->duration_ns = gpufl__model_int_or_unknown(json_object_get(rec, "duration_ns"));
    json_decref(e->rec);
    e->rec = json_incref(rec);
    return 0;
}

/* One entry per source; a later record of the same source replaces it. */
static int on_source_cost(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    const char *source = gpufl__model_json_str(rec, "source");
    if (!source || !*source) return gpufl__model_bad_line(m, pos, "source_cost", "no source name");
    gpufl__model_source_cost_t *c = NULL;
    for (size_t i = 0; i < m->n_source_costs && !c; i++)
        if (strcmp(m->source_costs[i].source, source) == 0) c = &m->source_costs[i];
    if (!c) {
        int rc = gpufl__model_reserve((void **)&m->source_costs, &m->source_costs_alloc,
                                      m->n_source_costs, sizeof *m->source_costs, MAX_SOURCE_COSTS);
        if (rc < 0) return rc;
        if (rc) return 0; /* more sources than any writer has: not kept */
        c = &m->source_costs[m->n_source_costs];
        c->source = gpufl__model_member_str(m, rec, "source");
        if (!c->source) return GPUFL_ENOMEM;
        m->n_source_costs++;
    }
    c->file = pos->file;
    c->samples = gpufl__model_nonneg_or_unknown(json_object_get(rec, "samples"));
    c->total_ns = gpufl__model_nonneg_or_unknown(json_object_get(rec, "total_ns"));
    c->mean_ns = gpufl__model_nonneg_or_unknown(json_object_get(rec, "mean_ns"));
    return 0;
}

static int on_options(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    (void)pos;
    return gpufl__model_keep_first(&m->options, rec);
}

static int on_capabilities(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    (void)pos;
    return gpufl__model_keep_first(&m->capabilities, rec);
}

const gpufl__model_handler_t gpufl__model_session_handlers[] = {
    {"header", on_header, NULL},
    {"options", on_options, NULL},
    {"capabilities", on_capabilities, NULL},
    {"event", on_event, NULL},
    {"drops", on_drops, NULL},
    {"source_cost", on_source_cost, NULL},
    {"session_end", on_session_end, NULL},
    {NULL, NULL, NULL},
};
