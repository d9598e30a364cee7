// SPDX-License-Identifier: Apache-2.0
/*
 * upload.c - the fleet upload entry point. The upload itself is part of the
 * fleet release; until then the call says so at once instead of pretending.
 */
#include "util/log.h"
#include "core/session.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* Whether a warning already said upload is not built: one line per process. */
static atomic_int upload_said;

void gpufl__upload_said(int said) { atomic_store(&upload_said, said); }

void gpufl_upload_options_init_sized(gpufl_upload_options_t *opts, size_t size) {
    if (size > sizeof *opts) size = sizeof *opts;
    if (size < sizeof opts->size) return;
    memset(opts, 0, size); /* only the caller's part: an older struct is shorter */
    opts->size = size;
}

int gpufl_upload_logs(const gpufl_upload_options_t *opts) {
    char dir[4096];
    const char *where = "log_path";
    if (gpufl__session_disabled()) return GPUFL_EDISABLED; /* switched off: nothing to send */
    /* Name the logs the call was about: its log_path, else the last session's. */
    if (opts && opts->size >= offsetof(gpufl_upload_options_t, log_path) + sizeof opts->log_path &&
        opts->log_path && *opts->log_path)
        where = opts->log_path;
    else if (gpufl_session_dir(dir, sizeof dir) > 0)
        where = dir;
    int rc =
        gpufl__set_error(GPUFL_ENOTSUP, GPUFL__UPLOAD_NOT_BUILT " (gpufl %s); the logs stay in %s",
                         gpufl_version(), where);
    if (!atomic_exchange(&upload_said, 1)) gpufl__warn("%s", gpufl_last_error());
    return rc;
}
