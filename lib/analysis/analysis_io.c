// SPDX-License-Identifier: Apache-2.0
/*
 * analysis_io.c - the public read API's writers and listings beside the
 * handle (gpufl_analysis.h): insights and trace exports of an open session,
 * the session list of a log root, and the names of severities. Each wraps
 * the module that does the work, under the handle's lock.
 */
#include "analysis/analysis.h"
#include "analysis/export_trace.h"
#include "analysis/insights.h"
#include "analysis/sessions.h"
#include "util/error.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int gpufl_severity_parse(const char *name, gpufl_severity_t *out) {
    static const gpufl_severity_t all[] = {GPUFL_SEVERITY_LOW, GPUFL_SEVERITY_MEDIUM,
                                           GPUFL_SEVERITY_HIGH};
    for (size_t i = 0; name && out && i < sizeof all / sizeof all[0]; i++)
        if (strcasecmp(name, gpufl_severity_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    return gpufl__set_error(GPUFL_EINVAL, "unknown severity '%s' (LOW, MEDIUM or HIGH)",
                            name ? name : "(null)");
}

void gpufl_insights_options_init_sized(gpufl_insights_options_t *opts, size_t size) {
    gpufl_insights_options_t d = {sizeof d, "text", GPUFL_SEVERITY_LOW};
    if (!opts) return;
    d.size = size < sizeof d ? size : sizeof d;
    memcpy(opts, &d, d.size);
}

int gpufl_analysis_insights_write(gpufl_analysis_t *a, const gpufl_insights_options_t *opts,
                                  FILE *out) {
    gpufl_insights_options_t o;
    gpufl_insights_options_init(&o);
    if (opts) memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
    if (!a || !out) return gpufl__set_error(GPUFL_EINVAL, "insights: no handle or no stream");
    const char *format = o.format ? o.format : "text";
    int json = strcmp(format, "json") == 0;
    if (!json && strcmp(format, "text") != 0)
        return gpufl__set_error(GPUFL_EINVAL, "insights: unknown format '%s' (text or json)",
                                format);
    gpufl__insights_t in;
    memset(&in, 0, sizeof in);
    pthread_mutex_lock(&a->lock);
    /* A handle that was fed builds its model on first use, as the report and tables do. */
    int rc = gpufl__analysis_feed_model(a);
    if (!rc) rc = gpufl__insights_compute(&in, a->m);
    if (!rc)
        rc = json ? gpufl__insights_write_json(&in, o.min_severity, out)
                  : gpufl__insights_write_text(&in, o.min_severity, "", out);
    gpufl__insights_free(&in);
    pthread_mutex_unlock(&a->lock);
    return rc;
}

int gpufl_analysis_export(gpufl_export_result_t *res, gpufl_analysis_t *a,
                          const gpufl_export_options_t *opt) {
    if (res) memset(res, 0, sizeof *res);
    if (!a || !opt) return gpufl__set_error(GPUFL_EINVAL, "export: no handle or no options");
    pthread_mutex_lock(&a->lock);
    int rc = gpufl__analysis_feed_model(a);
    if (!rc) rc = gpufl__export_write(res, a->m, opt);
    pthread_mutex_unlock(&a->lock);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Session listing                                                          */
/* ---------------------------------------------------------------------- */

struct gpufl_session_list {
    gpufl__session_entry_t *entries; /* what sessions.c found */
    gpufl_session_info_t *infos;     /* the public view of each, pointing into entries */
    size_t count;
};

int gpufl_session_list_create(gpufl_session_list_t **out, const char *root) {
    if (out) *out = NULL;
    if (!out || !root) return gpufl__set_error(GPUFL_EINVAL, "sessions: out and root are required");
    gpufl_session_list_t *l = calloc(1, sizeof *l);
    if (!l) return gpufl__set_error(GPUFL_ENOMEM, "out of memory listing sessions");
    int rc = gpufl__sessions_list(&l->entries, &l->count, root);
    if (!rc && l->count && !(l->infos = calloc(l->count, sizeof *l->infos)))
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory listing sessions");
    if (rc) {
        gpufl_session_list_destroy(l);
        return rc;
    }
    for (size_t i = 0; i < l->count; i++) {
        const gpufl__session_entry_t *e = &l->entries[i];
        l->infos[i] = (gpufl_session_info_t){sizeof(gpufl_session_info_t),
                                             e->name,
                                             e->path,
                                             e->app_name,
                                             e->session_id,
                                             e->epoch_unix_us,
                                             e->duration_ns,
                                             e->size_bytes};
    }
    *out = l;
    return 0;
}

size_t gpufl_session_list_count(const gpufl_session_list_t *list) { return list ? list->count : 0; }

const gpufl_session_info_t *gpufl_session_list_get(const gpufl_session_list_t *list, size_t index) {
    return list && index < list->count ? &list->infos[index] : NULL;
}

void gpufl_session_list_destroy(gpufl_session_list_t *list) {
    if (!list) return;
    free(list->entries);
    free(list->infos);
    free(list);
}
