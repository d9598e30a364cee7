/*
 * upload.c - the fleet upload entry point. The upload itself is part of the
 * fleet release; until then the call says so at once instead of pretending.
 */
#include "core/log.h"
#include "core/session.h"

#include <string.h>

void gpufl_upload_options_init(gpufl_upload_options_t *opts) {
    memset(opts, 0, sizeof *opts);
    opts->size = sizeof *opts;
}

int gpufl_upload_logs(const gpufl_upload_options_t *opts) {
    (void)opts;
    if (gpufl__session_disabled()) return GPUFL_EDISABLED; /* switched off: nothing to send */
    int rc = gpufl__set_error(GPUFL_ENOTSUP,
                              "uploading logs is not built yet in gpufl %s; the session logs "
                              "stay on disk under log_path",
                              gpufl_version());
    gpufl__warn("uploadLogs: %s", gpufl_last_error());
    return rc;
}
