// SPDX-License-Identifier: Apache-2.0
/*
 * ring.h - per-thread single-producer/single-consumer rings of 64-byte records.
 *
 * A thread that records (opens a scope, later launches a kernel) claims one
 * ring from a pool sized at init; only that thread writes it and only the
 * collector reads it, so neither side takes a lock. A full ring drops the new
 * record and counts it. The pool is one anonymous mapping that lives as long
 * as the process: rings are reset between sessions but never unmapped, so a
 * thread racing with shutdown can never write into freed memory.
 */
#ifndef GPUFL_CORE_RING_H
#define GPUFL_CORE_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum gpufl__rec_kind {
    GPUFL_REC_SCOPE_BEGIN = 1,
    GPUFL_REC_SCOPE_END = 2,
    GPUFL_REC_TEXT = 3 /* continuation: 64 more bytes of the text of the record before */
};

#define GPUFL_REC_INLINE_TEXT    32
#define GPUFL_REC_FLAG_IMPLICIT  1    /* scope_end: closed because an outer scope closed */
#define GPUFL_REC_FLAG_TRUNCATED 2    /* name or tag was cut to GPUFL_TEXT_MAX */
/* scope_begin: an NVTX range; its last continuation record is a
 * gpufl__rec_nvtx_t and its tag text is the domain then the category name. */
#define GPUFL_REC_FLAG_NVTX 4
/* An NVTX start/end range: on no thread's stack of open scopes (it may end
 * on another thread); on a scope_end, the end of such a range. */
#define GPUFL_REC_FLAG_DETACHED  8
#define GPUFL_TEXT_MAX           1024 /* longest name or tag kept, in bytes */
#define GPUFL_SCOPE_STACK_MAX    128  /* deepest scope nesting recorded per thread */
/* Scope ids keep the log compact: the ring (thread) index + 1 in the low
 * GPUFL_SCOPE_ID_RING_BITS bits, the ring's own count of scopes above.
 * Stays below 2^53 for 2^41 scopes. */
#define GPUFL_SCOPE_ID_RING_BITS 12

/* One fixed-size record. name_len + tag_len bytes of text start in `text`
 * and go on in `extra` GPUFL_REC_TEXT records that follow it. */
typedef struct gpufl__rec {
    uint64_t ticks;    /* gpufl__ticks() when it happened */
    uint64_t scope_id; /* instance id of the scope */
    uint8_t kind;      /* enum gpufl__rec_kind */
    uint8_t flags;     /* GPUFL_REC_FLAG_* */
    uint8_t extra;     /* continuation records that follow (at most 32) */
    uint8_t depth;     /* open scopes of the thread before a begin / after an end */
    uint16_t name_len;
    uint16_t tag_len;
    int32_t repeat;
    int32_t warmup;
    char text[GPUFL_REC_INLINE_TEXT];
} gpufl__rec_t;

_Static_assert(sizeof(gpufl__rec_t) == 64, "a record is one cache line");

/* What an NVTX range carries besides its name: the last record of an NVTX
 * scope_begin. The domain and category names are the begin's tag text. */
typedef struct gpufl__rec_nvtx {
    uint16_t domain_len;        /* bytes of the domain name, 0 for NVTX's default domain */
    uint16_t category_name_len; /* bytes of the category's name, 0 when unnamed */
    uint32_t category;          /* NVTX category id, 0 for none */
    uint8_t payload_kind;       /* enum gpufl__nvtx_payload */
    uint8_t unused[7];
    union {
        int64_t i;
        uint64_t u;
        double f;
    } payload;
    char padding[40];
} gpufl__rec_nvtx_t;

enum gpufl__nvtx_payload {
    GPUFL_NVTX_PAYLOAD_NONE = 0,
    GPUFL_NVTX_PAYLOAD_INT = 1,  /* payload.i */
    GPUFL_NVTX_PAYLOAD_UINT = 2, /* payload.u */
    GPUFL_NVTX_PAYLOAD_REAL = 3  /* payload.f */
};

_Static_assert(sizeof(gpufl__rec_nvtx_t) == 64, "an NVTX attribute record is one record");
_Static_assert(offsetof(gpufl__rec_t, flags) == offsetof(gpufl__rec_t, kind) + 1 &&
                   offsetof(gpufl__rec_t, extra) == offsetof(gpufl__rec_t, kind) + 2 &&
                   offsetof(gpufl__rec_t, depth) == offsetof(gpufl__rec_t, kind) + 3,
               "kind, flags, extra and depth are one 32-bit word");

/* Sets kind, flags, extra and depth with one store instead of four (the
 * producer writes them on every record). */
static inline void gpufl__rec_set_header(gpufl__rec_t *rec, uint8_t kind, uint8_t flags,
                                         uint8_t extra, uint8_t depth) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t word =
        (uint32_t)kind | (uint32_t)flags << 8 | (uint32_t)extra << 16 | (uint32_t)depth << 24;
    __builtin_memcpy(&rec->kind, &word, sizeof word);
#else
    rec->kind = kind;
    rec->flags = flags;
    rec->extra = extra;
    rec->depth = depth;
#endif
}

enum gpufl__ring_state { GPUFL_RING_FREE = 0, GPUFL_RING_OWNED = 1, GPUFL_RING_ORPHANED = 2 };

typedef struct gpufl__ring {
    /* producer side */
    _Alignas(64) _Atomic uint64_t head;    /* next record to write */
    uint64_t cached_tail;                  /* producer's last view of tail */
    _Atomic uint64_t dropped;              /* records dropped because the ring was full */
    _Atomic uint64_t unbalanced_ends;      /* scope ends that matched no open scope */
    _Atomic uint64_t truncated;            /* names or tags cut to GPUFL_TEXT_MAX */
    _Atomic uint64_t depth_overflow;       /* scopes deeper than the per-thread stack */
    uint32_t depth;                        /* open scopes of the owner thread */
    uint64_t next_id;                      /* id of the owner thread's next scope */
    uint64_t stack[GPUFL_SCOPE_STACK_MAX]; /* ids of the open scopes, outermost first */
    /* consumer side */
    _Alignas(64) _Atomic uint64_t tail; /* next record to read */
    /* set when claimed */
    _Alignas(64) _Atomic int state; /* enum gpufl__ring_state */
    int32_t tid;                    /* OS thread id of the owner */
    _Atomic uint64_t generation;    /* session the ring was claimed in (relaxed) */
    uint32_t index;                 /* position in the pool */
    uint64_t mask;                  /* capacity - 1 */
    gpufl__rec_t *recs;
} gpufl__ring_t;

typedef struct gpufl__ring_pool {
    gpufl__ring_t *rings;
    uint32_t count;
    uint64_t capacity; /* records per ring, a power of two */
    void *mapping;
    size_t mapping_bytes;
} gpufl__ring_pool_t;

/* Returns a pool of rings of `capacity` records (rounded up to a power of
 * two) fitting in cap_bytes: the last one made if its sizes match, else a new
 * mapping. Pages are touched only as records are written, so unused rings
 * cost address space, not memory. */
int gpufl__ring_pool_get(gpufl__ring_pool_t **out, uint64_t capacity, uint64_t cap_bytes);

/* Gives the pool's record pages back to the kernel (the mapping stays valid
 * and reads as zeros). Called when a session ends. */
void gpufl__ring_pool_release(gpufl__ring_pool_t *pool);

/* Claims a free ring for the calling thread (lock-free). NULL when all are taken. */
gpufl__ring_t *gpufl__ring_claim(gpufl__ring_pool_t *pool, int32_t tid, uint64_t generation);

/* Resets every ring to empty and free: session start, collector thread stopped. */
void gpufl__ring_pool_reset(gpufl__ring_pool_t *pool);

/* Producer: whether one more record fits at `head`, by the producer's last
 * view of the tail (when not, gpufl__ring_reserve looks again). */
static inline int gpufl__ring_fits_one(const gpufl__ring_t *r, uint64_t head) {
    return head - r->cached_tail <= r->mask;
}

/* Producer: reserves n consecutive records; returns the first index or
 * UINT64_MAX (and counts n drops) when the ring lacks room. */
static inline uint64_t gpufl__ring_reserve(gpufl__ring_t *r, uint64_t n) {
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t cap = r->mask + 1;
    if (head + n - r->cached_tail > cap) {
        r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (head + n - r->cached_tail > cap) {
            atomic_store_explicit(&r->dropped,
                                  atomic_load_explicit(&r->dropped, memory_order_relaxed) + n,
                                  memory_order_relaxed);
            return UINT64_MAX;
        }
    }
    return head;
}

static inline uint64_t gpufl__ring_generation(const gpufl__ring_t *r) {
    return atomic_load_explicit(&r->generation, memory_order_relaxed);
}

static inline gpufl__rec_t *gpufl__ring_at(gpufl__ring_t *r, uint64_t index) {
    return &r->recs[index & r->mask];
}

/* Producer: publishes records up to (not including) new_head. */
static inline void gpufl__ring_commit(gpufl__ring_t *r, uint64_t new_head) {
    atomic_store_explicit(&r->head, new_head, memory_order_release);
}

/* Producer-only counters: a relaxed load+store is enough (one writer). */
static inline void gpufl__ring_count(_Atomic uint64_t *counter) {
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

#endif
