/*
 * upload.c - the fleet upload entry point. The upload itself is part of the
 * fleet release; until then the call says so at once instead of pretending.
 */
#include "core/log.h"
#include "core/session.h"

#include <string.h>

void gpufl_upload_options_init_sized(gpufl_upload_options_t *opts, size_t size) {
    if (size > sizeof *opts) size = sizeof *opts;
    if (size < sizeof opts->size) return;
    memset(opts, 0, size); /* only the caller's part: an older struct is shorter */
    opts->size = size;
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
