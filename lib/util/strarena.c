// SPDX-License-Identifier: Apache-2.0
/*
 * strarena.c - strings in blocks that never move (see strarena.h).
 */
#include "util/strarena.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES ((size_t)64 << 10)

struct gpufl__strblock {
    struct gpufl__strblock *next;
    size_t used, cap;
    char data[];
};

char *gpufl__strarena_copy(gpufl__strarena_t *a, const char *s, size_t len) {
    struct gpufl__strblock *b = a->blocks;
    if (b == NULL || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > BLOCK_BYTES ? len + 1 : BLOCK_BYTES;
        b = malloc(sizeof *b + cap);
        if (b == NULL) return NULL;
        b->used = 0;
        b->cap = cap;
        /* A big string gets a block of its own behind the current one, which
         * keeps its free space for the small strings that follow. */
        if (a->blocks != NULL && cap > BLOCK_BYTES) {
            b->next = a->blocks->next;
            a->blocks->next = b;
        } else {
            b->next = a->blocks;
            a->blocks = b;
        }
    }
    char *copy = b->data + b->used;
    memcpy(copy, s, len);
    copy[len] = '\0';
    b->used += len + 1;
    return copy;
}

void gpufl__strarena_free(gpufl__strarena_t *a) {
    for (struct gpufl__strblock *b = a->blocks, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    a->blocks = NULL;
}
