// SPDX-License-Identifier: Apache-2.0
/*
 * export_trace.c - the entry point of the trace exporters: checks the
 * options, builds the timeline once (export_timeline.c) and hands it to the
 * writer of the format asked for (export_chrome.c, export_perfetto.c); a
 * CTF trace needs no timeline (export_ctf.c).
 */
#include "analysis/export_trace.h"
#include "analysis/export_timeline.h"

#include "util/error.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Options of callers built before `overwrite` was appended end here. */
#define OPTIONS_MIN_BYTES offsetof(gpufl_export_options_t, overwrite)

int gpufl_export_format_parse(const char *name, gpufl_export_format_t *out) {
    if (name && strcmp(name, "chrome") == 0) {
        *out = GPUFL_EXPORT_CHROME;
        return 0;
    }
    if (name && strcmp(name, "perfetto") == 0) {
        *out = GPUFL_EXPORT_PERFETTO;
        return 0;
    }
    if (name && strcmp(name, "ctf") == 0) {
        *out = GPUFL_EXPORT_CTF;
        return 0;
    }
    return GPUFL_EINVAL;
}

const char *gpufl_export_extension(gpufl_export_format_t format) {
    switch (format) {
    case GPUFL_EXPORT_PERFETTO: return ".perfetto-trace";
    case GPUFL_EXPORT_CTF: return ".ctf";
    default: return ".trace.json";
    }
}

void gpufl_export_result_fini(gpufl_export_result_t *res) {
    if (!res) return;
    for (size_t i = 0; i < res->n_files; i++) free(res->files[i]);
    free(res->files);
    memset(res, 0, sizeof *res);
}

int gpufl__export_write(gpufl_export_result_t *res, const gpufl__model_t *m,
                        const gpufl_export_options_t *opt) {
    gpufl_export_result_t local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    if (!m || !opt || opt->size < OPTIONS_MIN_BYTES)
        return gpufl__set_error(GPUFL_EINVAL, "export: no model or options (or options too old)");
    if (opt->format != GPUFL_EXPORT_CHROME && opt->format != GPUFL_EXPORT_PERFETTO &&
        opt->format != GPUFL_EXPORT_CTF)
        return gpufl__set_error(GPUFL_EINVAL, "export: unknown format %d", (int)opt->format);
    if (opt->path && *opt->path == '\0')
        return gpufl__set_error(GPUFL_EINVAL, "export: empty output path");
    if (opt->format == GPUFL_EXPORT_CTF) {
        int overwrite = opt->size >= offsetof(gpufl_export_options_t, overwrite) + sizeof(int) &&
                        opt->overwrite;
        int rc = gpufl__export_ctf(res, m, opt, overwrite);
        if (opt->progress && rc == 0) opt->progress(opt->progress_user, 1.0);
        if (res == &local) gpufl_export_result_fini(&local);
        return rc;
    }

    gpufl__export_timeline_t tl;
    int rc = gpufl__export_timeline_build(m, &tl);
    if (rc) return rc;
    rc = opt->format == GPUFL_EXPORT_CHROME ? gpufl__export_chrome(res, &tl, opt)
                                            : gpufl__export_perfetto(res, &tl, opt);
    res->clipped = tl.clipped;
    res->no_launch = tl.no_launch;
    res->tracks = tl.n_tracks;
    if (opt->progress && rc == 0) opt->progress(opt->progress_user, 1.0);
    gpufl__export_timeline_fini(&tl);
    if (res == &local) gpufl_export_result_fini(&local);
    return rc;
}
