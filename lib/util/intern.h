// SPDX-License-Identifier: Apache-2.0
/*
 * intern.h - the session's string dictionary: each distinct string gets a
 * small positive id, written once per file segment as a `dict` line.
 *
 * Used by the collector thread only; not thread-safe.
 */
#ifndef GPUFL_UTIL_INTERN_H
#define GPUFL_UTIL_INTERN_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpufl__intern gpufl__intern_t;

/* max_strings and max_bytes cap the dictionary; past them intern() returns
 * the id of the fixed string "<dictionary full>" and counts an overflow. */
gpufl__intern_t *gpufl__intern_create(uint32_t max_strings, size_t max_bytes);
void gpufl__intern_destroy(gpufl__intern_t *t);
/* The id of s[0..len), adding it when new. Never 0. */
uint32_t gpufl__intern(gpufl__intern_t *t, const char *s, size_t len);
/* The string with that id and its length; NULL for an unknown id. */
const char *gpufl__intern_str(const gpufl__intern_t *t, uint32_t id, size_t *len);
uint32_t gpufl__intern_count(const gpufl__intern_t *t);
uint64_t gpufl__intern_overflows(const gpufl__intern_t *t);

#endif
