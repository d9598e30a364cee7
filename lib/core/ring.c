// SPDX-License-Identifier: Apache-2.0
/*
 * ring.c - the ring pool: one mapping for all rings, claimed lock-free.
 */
#include "core/ring.h"

#include "util/error.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

/* Pools are never unmapped (a thread racing with shutdown may still write
 * into one); a session whose ring settings differ from the last gets a new
 * pool, and the old one's pages are handed back to the kernel. */
#define MAX_POOLS 8
static gpufl__ring_pool_t pools[MAX_POOLS];
static int npools;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t round_up_pow2(uint64_t v) {
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

static int create_pool(gpufl__ring_pool_t *pool, uint64_t cap, uint64_t count) {
    uint64_t ring_bytes = cap * sizeof(gpufl__rec_t);
    size_t header_bytes = (size_t)count * sizeof(gpufl__ring_t);
    header_bytes = (header_bytes + 4095) & ~(size_t)4095;
    size_t bytes = header_bytes + (size_t)(count * ring_bytes);
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED)
        return gpufl__set_error(GPUFL_ENOMEM, "cannot map %zu bytes for the capture rings", bytes);
    pool->rings = map;
    pool->count = (uint32_t)count;
    pool->capacity = cap;
    pool->mapping = map;
    pool->mapping_bytes = bytes;
    for (uint32_t i = 0; i < pool->count; i++) {
        gpufl__ring_t *r = &pool->rings[i];
        r->index = i;
        r->mask = cap - 1;
        r->recs = (gpufl__rec_t *)((char *)map + header_bytes + (size_t)i * ring_bytes);
        /* Each pool numbers its scopes from its own base, so an id from an
         * earlier pool never matches a scope of this one. */
        r->next_id = ((((uint64_t)npools << 36) + 1) << GPUFL_SCOPE_ID_RING_BITS) | (i + 1);
    }
    return 0;
}

int gpufl__ring_pool_get(gpufl__ring_pool_t **out, uint64_t capacity, uint64_t cap_bytes) {
    int rc = 0;
    uint64_t cap = round_up_pow2(capacity < 64 ? 64 : capacity);
    uint64_t ring_bytes = cap * sizeof(gpufl__rec_t);
    uint64_t count = cap_bytes / (ring_bytes + sizeof(gpufl__ring_t));
    if (count < 1)
        return gpufl__set_error(GPUFL_EINVAL,
                                "memory_cap_bytes (%llu) is smaller than one ring (%llu bytes)",
                                (unsigned long long)cap_bytes, (unsigned long long)ring_bytes);
    if (count > 4095) count = 4095; /* scope ids keep the ring index in 12 bits */
    pthread_mutex_lock(&pool_lock);
    gpufl__ring_pool_t *last = npools ? &pools[npools - 1] : NULL;
    if (last && last->capacity == cap && last->count == count) {
        *out = last;
    } else if (npools == MAX_POOLS) {
        rc = gpufl__set_error(
            GPUFL_ENOMEM, "ring settings changed more than %d times in this process", MAX_POOLS);
    } else if ((rc = create_pool(&pools[npools], cap, count)) == 0) {
        if (last) gpufl__ring_pool_release(last);
        *out = &pools[npools++];
    }
    pthread_mutex_unlock(&pool_lock);
    return rc;
}

void gpufl__ring_pool_release(gpufl__ring_pool_t *pool) {
    size_t header_bytes = ((size_t)pool->count * sizeof(gpufl__ring_t) + 4095) & ~(size_t)4095;
    madvise((char *)pool->mapping + header_bytes, pool->mapping_bytes - header_bytes,
            MADV_DONTNEED);
}

gpufl__ring_t *gpufl__ring_claim(gpufl__ring_pool_t *pool, int32_t tid, uint64_t generation) {
    for (uint32_t i = 0; i < pool->count; i++) {
        gpufl__ring_t *r = &pool->rings[i];
        int expected = GPUFL_RING_FREE;
        if (atomic_load_explicit(&r->state, memory_order_relaxed) != GPUFL_RING_FREE) continue;
        /* Fill in the owner before the CAS publishes the ring as owned. The
         * head and tail are equal here: a freed ring has been drained. */
        if (atomic_compare_exchange_strong_explicit(&r->state, &expected, GPUFL_RING_OWNED,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            r->tid = tid;
            atomic_store_explicit(&r->generation, generation, memory_order_relaxed);
            r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
            return r;
        }
    }
    return NULL;
}

void gpufl__ring_pool_reset(gpufl__ring_pool_t *pool) {
    for (uint32_t i = 0; i < pool->count; i++) {
        gpufl__ring_t *r = &pool->rings[i];
        atomic_store(&r->head, 0);
        atomic_store(&r->tail, 0);
        atomic_store(&r->dropped, 0);
        atomic_store(&r->unbalanced_ends, 0);
        atomic_store(&r->truncated, 0);
        atomic_store(&r->depth_overflow, 0);
        r->depth = 0; /* next_id goes on: scope ids are never reused in the process */
        r->cached_tail = 0;
        r->tid = 0;
        atomic_store_explicit(&r->generation, 0, memory_order_relaxed);
        atomic_store(&r->state, GPUFL_RING_FREE);
    }
}
