// SPDX-License-Identifier: Apache-2.0
/*
 * spool.h - the bound on a log root's undelivered windows (spool.c): past it, the oldest
 * sealed windows are dropped in a way every reader and the server see.
 */
#ifndef GPUFL_NET_SPOOL_H
#define GPUFL_NET_SPOOL_H

#include "net/upload.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Weighs the windows of the session directories dirs[0 .. n-1] under root that the server
 * does not hold yet (the cursor says which), under the cursor's lock. While they pass
 * max_bytes, the oldest sealed ones (by modification time) that nothing of was shipped are
 * replaced by a window of three lines: their header, a spool_dropped record (bytes lost), their
 * last line. Adds the drops to r (windows_dropped, bytes_dropped) and sets r->spool_bytes to
 * what stays undelivered; each drop is logged. Returns 0, GPUFL_EIO (the cursor's lock),
 * GPUFL_ENOMEM. max_bytes <= 0: no bound, nothing done.
 */
int gpufl__net_spool_trim(gpufl__net_upload_result_t *r, const char *root, const char *const *dirs,
                          size_t n, int64_t max_bytes);

#endif
