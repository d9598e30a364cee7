// SPDX-License-Identifier: Apache-2.0
/*
 * routes_export.c - GET /api/v1/sessions/{id}/export?format=perfetto|chrome: the session's
 * stored lines fed to libgpufl-analysis (report.c) and exported as `gpufl export -o -` writes
 * them, byte for byte, so the dashboard's download opens in Perfetto UI or chrome://tracing.
 */
#include "report.h"
#include "server.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An export held in memory before it is sent: past this the answer is 413 and the CLI is the
 * way (a 1 M-kernel session's Perfetto trace is about 60 MiB). */
#define EXPORT_BYTES_MAX ((long)512 << 20)

typedef struct {
    gpufl_export_format_t format;
    char *body;
    size_t len;
    int too_big;
} export_t;

/* The export goes to a temporary file first: the cap holds before anything is in memory. */
static int export_model(gpufl_analysis_t *a, void *arg) {
    export_t *x = arg;
    FILE *tmp = tmpfile();
    if (!tmp) return gpufl__store_fail(GPUFL_EIO, "export: no temporary file");
    gpufl_export_options_t opt;
    memset(&opt, 0, sizeof opt);
    opt.size = sizeof opt;
    opt.format = x->format;
    opt.out = tmp; /* path NULL: the stream, never split, as `gpufl export -o -` */
    gpufl_export_result_t res;
    int rc = gpufl_analysis_export(&res, a, &opt);
    gpufl_export_result_fini(&res);
    long size = 0;
    if (!rc && (fflush(tmp) || (size = ftell(tmp)) < 0))
        rc = gpufl__store_fail(GPUFL_EIO, "export: the temporary file failed");
    if (!rc && size > EXPORT_BYTES_MAX) {
        x->too_big = 1;
    } else if (!rc) {
        x->body = malloc((size_t)size + 1);
        if (!x->body) {
            rc = GPUFL_ENOMEM;
        } else {
            rewind(tmp);
            if (size && fread(x->body, 1, (size_t)size, tmp) != (size_t)size)
                rc = gpufl__store_fail(GPUFL_EIO, "export: the temporary file failed");
            x->body[size] = '\0';
            x->len = (size_t)size;
        }
    }
    fclose(tmp);
    return rc;
}

void gpufl__route_sessions_export(gpufl__request_t *req, gpufl__reply_t *rep) {
    const char *f = MHD_lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND, "format");
    export_t x = {0};
    /* A CTF trace is a directory of files, not one body to send. */
    if (!f || gpufl_export_format_parse(f, &x.format) != 0 || x.format == GPUFL_EXPORT_CTF) {
        gpufl__query_bad_param(rep, "format", "format: expected perfetto or chrome");
        return;
    }
    int rc = gpufl__report_with_model(req->server, req->who.workspace_id, req->params[0],
                                      export_model, &x);
    if (rc) {
        free(x.body);
        gpufl__query_store_error(rep, rc);
        return;
    }
    if (x.too_big) {
        gpufl__reply_error(rep, 413,
                           "the export is larger than the server sends (512 MiB): run"
                           " `gpufl export` on the session's files");
        return;
    }
    rep->status = 200;
    rep->raw = x.body;
    rep->raw_len = x.len;
    rep->content_type =
        x.format == GPUFL_EXPORT_CHROME ? "application/json" : "application/octet-stream";
    /* The browser saves it as a file (the dashboard names it session id + the CLI's ending). */
    rep->header_name = "Content-Disposition";
    rep->header_value = "attachment";
}
