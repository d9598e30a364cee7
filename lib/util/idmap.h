// SPDX-License-Identifier: Apache-2.0
/*
 * idmap.h - a map from uint64 keys (never 0) to size_t values, open
 * addressing, grown to keep its load under 3/4. Used for the ids of a
 * session's records (dict, scopes, configs, stacks) and the code addresses
 * of CPU stacks. Not thread-safe.
 */
#ifndef GPUFL_UTIL_IDMAP_H
#define GPUFL_UTIL_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpufl__idmap {
    uint64_t *keys; /* 0 marks an empty slot */
    size_t *values;
    size_t slots; /* a power of two, or 0 */
    size_t count;
} gpufl__idmap_t;

void gpufl__idmap_init(gpufl__idmap_t *m);
void gpufl__idmap_fini(gpufl__idmap_t *m);
/* Inserts key (> 0) or, when present, leaves it and reports the old value in
 * *existing (when not NULL). Returns 0 inserted, 1 already there,
 * GPUFL_EINVAL for key 0, GPUFL_ENOMEM. */
int gpufl__idmap_put(gpufl__idmap_t *m, uint64_t key, size_t value, size_t *existing);
/* Where key's value is stored, to read or change it; NULL when key is
 * absent. Valid until the next put. */
size_t *gpufl__idmap_value(gpufl__idmap_t *m, uint64_t key);
/* Returns 1 and sets *value when key is present, else 0. */
int gpufl__idmap_get(const gpufl__idmap_t *m, uint64_t key, size_t *value);

#endif
