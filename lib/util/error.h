// SPDX-License-Identifier: Apache-2.0
/*
 * error.h - error codes and the thread-local "last error" message.
 *
 * Every fallible internal call returns 0 or a negative GPUFL_E* code and, on
 * failure, records a detailed message with gpufl__set_error(); the public
 * gpufl_last_error() returns it.
 */
#ifndef GPUFL_UTIL_ERROR_H
#define GPUFL_UTIL_ERROR_H

#include <gpufl/gpufl.h>

#if defined(__GNUC__)
#define GPUFL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GPUFL__PRINTF(f, a)
#endif

#define GPUFL__ERROR_BYTES 1024 /* longest message kept, NUL included */

/* Records a message for the calling thread and returns code (a GPUFL_E* value). */
int gpufl__set_error(int code, const char *fmt, ...) GPUFL__PRINTF(2, 3);
/* Clears the calling thread's message. */
void gpufl__clear_error(void);

#endif
