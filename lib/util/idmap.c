// SPDX-License-Identifier: Apache-2.0
/*
 * idmap.c - an open-addressing map from uint64 keys to size_t values (see
 * idmap.h).
 */
#include "util/idmap.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

void gpufl__idmap_init(gpufl__idmap_t *m) { memset(m, 0, sizeof *m); }

void gpufl__idmap_fini(gpufl__idmap_t *m) {
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

static size_t idmap_hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key;
}

static size_t idmap_find_slot(const uint64_t *keys, size_t slots, uint64_t key) {
    size_t mask = slots - 1, i = idmap_hash(key) & mask;
    while (keys[i] != 0 && keys[i] != key) i = (i + 1) & mask;
    return i;
}

static int idmap_grow(gpufl__idmap_t *m) {
    size_t slots = m->slots ? m->slots * 2 : 64;
    if (slots > SIZE_MAX / sizeof(uint64_t) / 2)
        return gpufl__set_error(GPUFL_ENOMEM, "id map too large");
    uint64_t *keys = calloc(slots, sizeof *keys);
    size_t *values = malloc(slots * sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for an id map of %zu slots", slots);
    }
    for (size_t i = 0; i < m->slots; i++) {
        if (!m->keys[i]) continue;
        size_t j = idmap_find_slot(keys, slots, m->keys[i]);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->slots = slots;
    return 0;
}

int gpufl__idmap_put(gpufl__idmap_t *m, uint64_t key, size_t value, size_t *existing) {
    if (key == 0) return GPUFL_EINVAL;
    if ((m->count + 1) * 4 > m->slots * 3) { /* keep the load below 3/4 */
        int rc = idmap_grow(m);
        if (rc) return rc;
    }
    size_t i = idmap_find_slot(m->keys, m->slots, key);
    if (m->keys[i] == key) {
        if (existing) *existing = m->values[i];
        return 1;
    }
    m->keys[i] = key;
    m->values[i] = value;
    m->count++;
    return 0;
}

size_t *gpufl__idmap_value(gpufl__idmap_t *m, uint64_t key) {
    if (!m->slots || key == 0) return NULL;
    size_t i = idmap_find_slot(m->keys, m->slots, key);
    return m->keys[i] == key ? &m->values[i] : NULL;
}

int gpufl__idmap_get(const gpufl__idmap_t *m, uint64_t key, size_t *value) {
    if (!m->slots || key == 0) return 0;
    size_t i = idmap_find_slot(m->keys, m->slots, key);
    if (m->keys[i] != key) return 0;
    *value = m->values[i];
    return 1;
}
