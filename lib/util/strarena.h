// SPDX-License-Identifier: Apache-2.0
/*
 * strarena.h - copies of strings that never move: blocks of 64 KiB, each
 * string NUL-terminated, all freed together. For tables that keep pointers
 * to their strings (the symbol cache, a parsed disassembly). Not
 * thread-safe.
 */
#ifndef GPUFL_UTIL_STRARENA_H
#define GPUFL_UTIL_STRARENA_H

#include <stddef.h>

typedef struct gpufl__strarena {
    struct gpufl__strblock *blocks; /* the newest first; NULL when empty */
} gpufl__strarena_t;

/* A copy of the len bytes at s, NUL added; NULL when out of memory. */
char *gpufl__strarena_copy(gpufl__strarena_t *a, const char *s, size_t len);
/* Frees every copy; the arena is empty again. */
void gpufl__strarena_free(gpufl__strarena_t *a);

#endif
