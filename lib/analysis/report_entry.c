// SPDX-License-Identifier: Apache-2.0
/*
 * report_entry.c - the public report calls of gpufl.h (generateReport() in
 * C++): a session directory's text report to stdout or a file. The session
 * state only names the directory (core/session.h); everything else is here,
 * on the analysis side, so that lib/core includes nothing of lib/analysis.
 */
#include "analysis/report.h"
#include "core/session.h"
#include "util/error.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int gpufl_report_session(const char *session_dir, const char *output_path) {
    FILE *out = stdout;
    int rc;
    if (!session_dir) return gpufl__set_error(GPUFL_EINVAL, "session_dir is NULL");
    if (output_path && *output_path) {
        out = fopen(output_path, "w");
        if (!out)
            return gpufl__set_error(GPUFL_EIO, "cannot write report '%s': %s", output_path,
                                    strerror(errno));
    }
    rc = gpufl__report_session_dir(session_dir, out);
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
