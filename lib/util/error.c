// SPDX-License-Identifier: Apache-2.0
/*
 * error.c - names of the stable error codes and the thread-local message
 * behind gpufl_last_error().
 */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

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
    default: return "unknown error";
    }
}

const char *gpufl_last_error(void) { return last_error; }

int gpufl__set_error(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

void gpufl__clear_error(void) { last_error[0] = '\0'; }
