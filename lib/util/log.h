// SPDX-License-Identifier: Apache-2.0
/*
 * log.h - the library's own diagnostics, routed through the user's log hook.
 *
 * The library never prints on its own: everything goes through gpufl__log(),
 * which calls the hook set with gpufl_set_log_hook() (default: one line on
 * stderr for warnings and errors; debug and info only with debug output on).
 */
#ifndef GPUFL_UTIL_LOG_H
#define GPUFL_UTIL_LOG_H

#include "util/error.h"

void gpufl__log(gpufl_log_level_t level, const char *fmt, ...) GPUFL__PRINTF(2, 3);
/* Turns debug/info messages on or off (enable_debug_output). */
void gpufl__log_set_debug(int on);
int gpufl__log_debug_enabled(void);

/* fork(): hold the hook lock across it; the child gets a fresh one. */
void gpufl__log_before_fork(void);
void gpufl__log_after_fork(int in_child);

#define gpufl__warn(...) gpufl__log(GPUFL_LOG_WARN, __VA_ARGS__)
#define gpufl__debug(...)                                                                          \
    do {                                                                                           \
        if (gpufl__log_debug_enabled()) gpufl__log(GPUFL_LOG_DEBUG, __VA_ARGS__);                  \
    } while (0)

#endif
