// SPDX-License-Identifier: Apache-2.0
/*
 * report_loader.c - the report calls of gpufl.h (generateReport() in C++) in
 * the recording library: libgpufl-analysis computes the report, and is loaded
 * only when one is asked for, so an application carries no analysis code.
 * Looked for by GPUFL_ANALYSIS_LIBRARY, then beside libgpufl, then by soname.
 */
#include "core/session.h"
#include "util/dl.h"
#include "util/error.h"
#include "util/log.h"

#include <gpufl/gpufl_analysis.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GPUFL_ANALYSIS_SONAME
#define GPUFL_ANALYSIS_SONAME "libgpufl-analysis.so.0"
#endif

/* The public calls of libgpufl-analysis the report needs. last_error: its
 * view of gpufl_last_error(), another copy of ours when this libgpufl is
 * linked statically and the analysis brought a libgpufl.so of its own. */
typedef struct analysis_api {
    gpufl__dl_t dl;
    int (*open)(gpufl_analysis_t **out, const char *session_dir);
    int (*write)(gpufl_analysis_t *a, const gpufl_report_options_t *opts, FILE *out);
    void (*close)(gpufl_analysis_t *a);
    const char *(*last_error)(void);
} analysis_api_t;

/* "<dir of the object holding this code>/<soname>" into buf; "" when unknown. */
static void beside_us(char *buf, size_t size) {
    Dl_info info;
    buf[0] = '\0';
    if (dladdr((void *)gpufl_report_session, &info) == 0 || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    int n = snprintf(buf, size, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                     GPUFL_ANALYSIS_SONAME);
    if (n < 0 || (size_t)n >= size) buf[0] = '\0';
}

static int load(analysis_api_t *api) {
    char beside[GPUFL_DL_NAME_BYTES], why[512];
    beside_us(beside, sizeof beside);
    const char *names[] = {beside[0] ? beside : GPUFL_ANALYSIS_SONAME, GPUFL_ANALYSIS_SONAME, NULL};
    const char *override = getenv("GPUFL_ANALYSIS_LIBRARY");
    if (gpufl__dl_open(&api->dl, override, names, NULL, why, sizeof why) != 0)
        return gpufl__set_error(
            GPUFL_ENOTSUP,
            "the report needs libgpufl-analysis (%s), which is not installed beside libgpufl: "
            "%s; install it next to libgpufl or on the library path, or set "
            "GPUFL_ANALYSIS_LIBRARY",
            GPUFL_ANALYSIS_SONAME, why);
    gpufl__dl_sym_t syms[] = {
        {{"gpufl_analysis_open"}, &api->open, 1, -1},
        {{"gpufl_analysis_report_write"}, &api->write, 1, -1},
        {{"gpufl_analysis_close"}, &api->close, 1, -1},
        {{"gpufl_last_error"}, &api->last_error, 1, -1},
    };
    if (gpufl__dl_resolve(&api->dl, syms, sizeof syms / sizeof syms[0], why, sizeof why) != 0) {
        gpufl__dl_close(&api->dl);
        return gpufl__set_error(GPUFL_ENOTSUP, "the report needs a newer libgpufl-analysis: %s",
                                why);
    }
    return 0;
}

/* The text report of session_dir to out, through the loaded analysis. */
static int report_to(const analysis_api_t *api, const char *session_dir, FILE *out) {
    gpufl_analysis_t *a = NULL;
    int rc = api->open(&a, session_dir);
    if (!rc) rc = api->write(a, NULL, out);
    /* Its message, in case it went to another copy of libgpufl's slot. */
    if (rc && api->last_error() != gpufl_last_error())
        gpufl_internal_set_last_error(api->last_error());
    api->close(a);
    return rc;
}

int gpufl_report_session(const char *session_dir, const char *output_path) {
    FILE *out = stdout;
    analysis_api_t api;
    if (!session_dir) return gpufl__set_error(GPUFL_EINVAL, "session_dir is NULL");
    int rc = load(&api); /* before the file: no empty report when it is missing */
    if (rc) return rc;
    if (output_path && *output_path) {
        out = fopen(output_path, "w");
        if (!out) {
            gpufl__dl_close(&api.dl);
            return gpufl__set_error(GPUFL_EIO, "cannot write report '%s': %s", output_path,
                                    strerror(errno));
        }
    }
    rc = report_to(&api, session_dir, out);
    gpufl__dl_close(&api.dl);
    if (out != stdout) {
        if (fclose(out) != 0 && rc == 0)
            rc = gpufl__set_error(GPUFL_EIO, "cannot write report '%s': %s", output_path,
                                  strerror(errno));
    } else {
        fflush(stdout);
    }
    return rc;
}

int gpufl_report_write(const char *output_path) {
    char dir[4096];
    int rc = gpufl__session_report_dir(dir, sizeof dir);
    if (rc) return rc;
    rc = gpufl_report_session(dir, output_path);
    if (rc) gpufl__warn("generateReport: %s", gpufl_last_error());
    return rc;
}
