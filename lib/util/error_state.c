// SPDX-License-Identifier: Apache-2.0
/*
 * error_state.c - names of the stable error codes and the thread-local
 * message behind gpufl_last_error(). Part of libgpufl only: libgpufl-analysis
 * sets its messages through gpufl_internal_set_last_error(), so one slot per
 * thread serves both libraries.
 */
#include "util/error.h"

#include <string.h>

static _Thread_local char last_error[GPUFL__ERROR_BYTES];

const char *gpufl_strerror(int code) {
    switch (code) {
    case GPUFL_OK: return "success";
    case GPUFL_EINVAL: return "invalid argument";
    case GPUFL_ENOMEM: return "out of memory";
    case GPUFL_EIO: return "input/output error";
    case GPUFL_ECONFIG: return "bad config file";
    case GPUFL_EALREADY: return "already initialized";
    case GPUFL_ENOTINIT: return "not initialized";
    case GPUFL_EDISABLED: return "gpufl is disabled";
    case GPUFL_ENOTSUP: return "not supported";
    case GPUFL_ENOTFOUND: return "not found";
    case GPUFL_EFORMAT: return "bad log format";
    case GPUFL_ETHREAD: return "thread error";
    case GPUFL_EUNAVAILABLE: return "service unavailable";
    default: return "unknown error";
    }
}

const char *gpufl_last_error(void) { return last_error; }

void gpufl_internal_set_last_error(const char *message) {
    size_t n = message ? strlen(message) : 0;
    if (n >= sizeof last_error) n = sizeof last_error - 1;
    if (n) memmove(last_error, message, n); /* message may be last_error itself */
    last_error[n] = '\0';
}
