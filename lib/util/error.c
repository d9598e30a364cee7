// SPDX-License-Identifier: Apache-2.0
/*
 * error.c - gpufl__set_error(): formats a failure's message and hands it to
 * the one thread-local slot of the process (error_state.c, in libgpufl), so
 * that gpufl_last_error() says what failed in either library.
 */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>

int gpufl__set_error(int code, const char *fmt, ...) {
    char message[GPUFL__ERROR_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    gpufl_internal_set_last_error(message);
    return code;
}

void gpufl__clear_error(void) { gpufl_internal_set_last_error(""); }
