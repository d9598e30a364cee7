// SPDX-License-Identifier: Apache-2.0
/*
 * forward.h - a copy of libgpufl that joined `gpufl trace`'s session running in another copy
 * (core/trace_marker.h) passes what it records to that copy's public C API.
 *
 * Only public functions and size-versioned public structs cross between the copies: the
 * copies may come from different builds.
 */
#ifndef GPUFL_CORE_FORWARD_H
#define GPUFL_CORE_FORWARD_H

#include <gpufl/gpufl.h>

/* The recording copy's public functions this copy forwards to. */
typedef struct gpufl__forward {
    const char *(*last_error)(void);
    int (*is_active)(void);
    int (*session_dir)(char *buf, size_t buf_size);
    gpufl_scope_t (*scope_begin_n)(const char *name, size_t name_len, const char *tag,
                                   size_t tag_len, int32_t repeat, int32_t warmup);
    void (*scope_end)(gpufl_scope_t scope);
    int (*system_start)(const char *name);
    int (*system_stop)(const char *name);
    int (*flush)(void);
    int (*snapshot)(char *dir, size_t dir_size);
    int (*get_stats)(gpufl_stats_t *out);
} gpufl__forward_t;

/* Finds the copy that runs the injected session (through the injection library the driver
 * loaded, CUDA_INJECTION64_PATH, whose dependency it is) and starts forwarding to it. Returns
 * 0, or GPUFL_ENOTFOUND with gpufl_last_error() saying why. Under the session lock. */
int gpufl__forward_open(void);
/* Stops forwarding (the joining copy's shutdown; a forked child). */
void gpufl__forward_close(void);
/* The table while forwarding, else NULL. */
const gpufl__forward_t *gpufl__forward(void);
/* rc of a forwarded call: a failure's message copied from the other copy, whose
 * gpufl_last_error() this copy's does not see. */
int gpufl__forward_rc(const gpufl__forward_t *f, int rc);

#endif
