// SPDX-License-Identifier: Apache-2.0
/*
 * intern.c - open-addressing hash table from strings to dense ids.
 *
 * Strings live in one growable arena; the table stores ids, so growing the
 * arena never invalidates it. Ids start at 1 and are dense, which lets the
 * writer keep a per-file "already written" bitmap indexed by id.
 */
#include "util/intern.h"

#include <stdlib.h>
#include <string.h>

#define FULL_STRING "<dictionary full>"

typedef struct entry {
    size_t offset; /* into arena */
    uint32_t len;
    uint32_t hash;
} entry_t;

struct gpufl__intern {
    entry_t *entries; /* index id-1 */
    uint32_t count, entries_cap;
    uint32_t *slots; /* 0 = empty, else id */
    uint32_t slots_mask;
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t max_strings;
    size_t max_bytes;
    uint32_t full_id;
    uint64_t overflows;
};

static uint32_t hash_bytes(const char *s, size_t len) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h ? h : 1;
}

static int grow_slots(gpufl__intern_t *t) {
    uint32_t n = (t->slots_mask + 1) * 2;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots) return -1;
    for (uint32_t id = 1; id <= t->count; id++) {
        uint32_t i = t->entries[id - 1].hash & (n - 1);
        while (slots[i]) i = (i + 1) & (n - 1);
        slots[i] = id;
    }
    free(t->slots);
    t->slots = slots;
    t->slots_mask = n - 1;
    return 0;
}

static uint32_t add(gpufl__intern_t *t, const char *s, size_t len, uint32_t h, uint32_t slot) {
    if (t->count >= t->max_strings || t->arena_len + len + 1 > t->max_bytes) goto count_overflow;
    if (t->count == t->entries_cap) {
        uint32_t cap = t->entries_cap ? t->entries_cap * 2 : 256;
        entry_t *e = realloc(t->entries, cap * sizeof *e);
        if (!e) goto count_overflow;
        t->entries = e;
        t->entries_cap = cap;
    }
    if (t->arena_len + len + 1 > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap * 2 : 16384;
        while (cap < t->arena_len + len + 1) cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a) goto count_overflow;
        t->arena = a;
        t->arena_cap = cap;
    }
    memcpy(t->arena + t->arena_len, s, len);
    t->arena[t->arena_len + len] = '\0';
    t->entries[t->count] = (entry_t){t->arena_len, (uint32_t)len, h};
    t->arena_len += len + 1;
    t->slots[slot] = ++t->count;
    if (t->count * 2 > t->slots_mask) grow_slots(t); /* on failure the table just fills up more */
    return t->count;
count_overflow:
    t->overflows++;
    return t->full_id;
}

uint32_t gpufl__intern(gpufl__intern_t *t, const char *s, size_t len) {
    uint32_t h = hash_bytes(s, len);
    uint32_t i = h & t->slots_mask;
    for (;;) {
        uint32_t id = t->slots[i];
        if (!id) return add(t, s, len, h, i);
        const entry_t *e = &t->entries[id - 1];
        if (e->hash == h && e->len == len && memcmp(t->arena + e->offset, s, len) == 0) return id;
        i = (i + 1) & t->slots_mask;
    }
}

gpufl__intern_t *gpufl__intern_create(uint32_t max_strings, size_t max_bytes) {
    gpufl__intern_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->slots = calloc(1024, sizeof *t->slots);
    if (!t->slots) {
        free(t);
        return NULL;
    }
    t->slots_mask = 1023;
    t->max_strings = UINT32_MAX;
    t->max_bytes = (size_t)-1;
    t->full_id = gpufl__intern(t, FULL_STRING, sizeof FULL_STRING - 1);
    t->max_strings = max_strings;
    t->max_bytes = max_bytes;
    if (!t->full_id) {
        gpufl__intern_destroy(t);
        return NULL;
    }
    return t;
}

void gpufl__intern_destroy(gpufl__intern_t *t) {
    if (!t) return;
    free(t->entries);
    free(t->slots);
    free(t->arena);
    free(t);
}

const char *gpufl__intern_str(const gpufl__intern_t *t, uint32_t id, size_t *len) {
    if (id == 0 || id > t->count) return NULL;
    if (len) *len = t->entries[id - 1].len;
    return t->arena + t->entries[id - 1].offset;
}

uint32_t gpufl__intern_count(const gpufl__intern_t *t) { return t->count; }
uint64_t gpufl__intern_overflows(const gpufl__intern_t *t) { return t->overflows; }
