// SPDX-License-Identifier: Apache-2.0
/*
 * stacks.c - hot-path stack capture and lock-free interning (see stacks.h).
 *
 * The table: open addressing over slots {hash, id}. A thread with a new
 * stack claims an empty slot by CAS on its hash, takes the next id, copies
 * the frames into entries[id - 1] and publishes the id with a release store.
 * A thread meeting the same hash waits for that id (the claimer is a few
 * stores away from publishing it). Nothing is ever removed.
 */
#include "core/stacks.h"

#include "core/clock.h"
#include "util/error.h"
#include "core/interp.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_LOST UINT32_MAX /* a claimed slot whose stack got no id */
#define SPINS   1000       /* yields while waiting for a claimer to publish */

typedef struct slot {
    _Atomic uint64_t hash; /* 0: empty */
    _Atomic uint32_t id;   /* 0: being filled */
} slot_t;

typedef struct entry {
    uint32_t depth;
    uintptr_t pcs[GPUFL_STACK_DEPTH_MAX];
} entry_t;

typedef int (*walk_fn)(void **buffer, int size);

struct gpufl__stacks {
    walk_fn walk;
    void *unwind;             /* libunwind's handle, NULL with glibc's walker */
    uintptr_t own_lo, own_hi; /* gpufl's code: leading frames there are dropped */
    size_t max, mask;
    slot_t *slots;
    entry_t *entries; /* by id - 1 */
    _Atomic uint32_t next_id;
    _Atomic uint64_t captures, lost;
    /* the registered interpreter's walks (interp.h) */
    _Atomic uint64_t interp_walks, interp_empty, interp_ns, interp_max_ns;
    int counted; /* in gpufl_interp_capturing's count */
};

/* Frames walked beyond the kept depth: gpufl's own leading ones. */
#define OWN_FRAMES_MAX 8
/* With an interpreter registered, a walk that fills its buffer without
 * meeting the interpreter's code is made again this deep (a framework's
 * dispatch can put dozens of frames between the CUDA call and the
 * interpreter), and at most NATIVE_KEPT native frames are kept before the
 * interpreted ones: the innermost. */
#define INTERP_WALK_MAX 160
#define NATIVE_KEPT     24

static int glibc_walk(void **buffer, int size) { return backtrace(buffer, size); }

int gpufl__stacks_create(gpufl__stacks_t **out, size_t max_stacks, char *note, size_t note_size) {
    *out = NULL;
    if (note_size) note[0] = '\0';
    if (max_stacks == 0) max_stacks = GPUFL_STACKS_DEFAULT;
    if (max_stacks > UINT32_MAX / 4) max_stacks = UINT32_MAX / 4;
    gpufl__stacks_t *s = calloc(1, sizeof *s);
    if (s == NULL) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the stack table");
    size_t n = 16;
    while (n < 2 * max_stacks) n *= 2;
    s->max = max_stacks;
    s->mask = n - 1;
    s->slots = calloc(n, sizeof *s->slots);
    s->entries = calloc(max_stacks, sizeof *s->entries); /* pages touched as stacks come */
    if (s->slots == NULL || s->entries == NULL) {
        gpufl__stacks_destroy(s);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for %zu stacks", max_stacks);
    }
    const char *lib = getenv("GPUFL_LIBUNWIND_PATH");
    if (lib == NULL || *lib == '\0') lib = "libunwind.so.8";
    s->unwind = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (s->unwind) s->walk = (walk_fn)(uintptr_t)dlsym(s->unwind, "unw_backtrace");
    if (s->walk == NULL) {
        if (s->unwind) dlclose(s->unwind);
        s->unwind = NULL;
        s->walk = glibc_walk;
        snprintf(note, note_size,
                 "%s not usable: stacks are walked with glibc's backtrace(), several times slower",
                 lib);
    }
    void *warm[4]; /* glibc's walker loads libgcc_s on first use: not on the hot path */
    s->walk(warm, 4);
    gpufl__exec_segment((uintptr_t)(void *)gpufl__stacks_capture, &s->own_lo, &s->own_hi);
    gpufl__interp_capturing(1);
    s->counted = 1;
    *out = s;
    return 0;
}

void gpufl__stacks_destroy(gpufl__stacks_t *s) {
    if (s == NULL) return;
    if (s->counted) gpufl__interp_capturing(-1);
    /* Callers unsubscribe first (no capture runs after). libunwind stays
     * loaded: unloading it buys nothing and its caches may hold thread data. */
    free(s->slots);
    free(s->entries);
    free(s);
}

static uint64_t hash_frames(const uintptr_t *pcs, int n) {
    uint64_t h = 0x9e3779b97f4a7c15u ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)pcs[i];
        h *= 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    return h ? h : 1;
}

/* Waits for the claimer of slot to publish its id. */
static uint32_t wait_id(slot_t *slot) {
    for (int i = 0; i < SPINS; i++) {
        uint32_t id = atomic_load_explicit(&slot->id, memory_order_acquire);
        if (id) return id;
        sched_yield();
    }
    return ID_LOST;
}

/* pc lies in the interpreter's machine code. */
static int in_interp(const gpufl__interp_reg_t *r, void *pc) {
    return (uintptr_t)pc >= r->code_lo && (uintptr_t)pc < r->code_hi;
}

/* The registered interpreter's walk, timed and counted. */
static size_t interp_walk(gpufl__stacks_t *s, const gpufl__interp_reg_t *r, uint64_t *keys,
                          size_t max) {
    int64_t t0 = gpufl__mono_ns();
    size_t n = r->api.walk(keys, max, r->api.user);
    uint64_t ns = (uint64_t)(gpufl__mono_ns() - t0);
    if (n > max) n = max;
    atomic_fetch_add_explicit(n ? &s->interp_walks : &s->interp_empty, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->interp_ns, ns, memory_order_relaxed);
    uint64_t seen = atomic_load_explicit(&s->interp_max_ns, memory_order_relaxed);
    while (ns > seen &&
           !atomic_compare_exchange_weak_explicit(&s->interp_max_ns, &seen, ns,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
    return n;
}

/* The stack of native frames pcs[0..n) into out[GPUFL_STACK_DEPTH_MAX],
 * with the frames from the interpreter's code outward replaced by its
 * interpreted frames (interp.h). Returns the depth, or -1 when no frame is
 * the interpreter's or it gave no frames (out is then not written). */
static int splice_interp(gpufl__stacks_t *s, const gpufl__interp_reg_t *r, void *const *pcs, int n,
                         uintptr_t *out) {
    int cut = 0;
    while (cut < n && !in_interp(r, pcs[cut])) cut++;
    if (cut == n) return -1; /* this thread never entered the interpreter */
    int kept = cut < NATIVE_KEPT ? cut : NATIVE_KEPT;
    uint64_t keys[GPUFL_STACK_DEPTH_MAX];
    size_t m = interp_walk(s, r, keys, (size_t)(GPUFL_STACK_DEPTH_MAX - kept));
    if (m == 0) return -1;
    for (int i = 0; i < kept; i++) out[i] = (uintptr_t)pcs[i];
    for (size_t i = 0; i < m; i++) out[kept + (int)i] = (uintptr_t)(keys[i] | GPUFL_INTERP_KEY_BIT);
    return kept + (int)m;
}

uint32_t gpufl__stacks_capture(gpufl__stacks_t *s) {
    void *buf[INTERP_WALK_MAX + OWN_FRAMES_MAX];
    const gpufl__interp_reg_t *interp = gpufl__interp_get();
    int n = s->walk(buf, GPUFL_STACK_DEPTH_MAX + OWN_FRAMES_MAX);
    if (interp && n == GPUFL_STACK_DEPTH_MAX + OWN_FRAMES_MAX) {
        /* A full walk that may stop short of the interpreter's frames: walk
         * deeper, unless the interpreter is already among these. */
        int seen = 0;
        for (int i = 0; i < n && !seen; i++) seen = in_interp(interp, buf[i]);
        if (!seen) n = s->walk(buf, (int)(sizeof buf / sizeof buf[0]));
    }
    int first = 0;
    while (first < n && first < OWN_FRAMES_MAX && (uintptr_t)buf[first] >= s->own_lo &&
           (uintptr_t)buf[first] < s->own_hi)
        first++;
    n -= first;
    if (n < 0) n = 0;
    uintptr_t pcs[GPUFL_STACK_DEPTH_MAX];
    int spliced = interp ? splice_interp(s, interp, buf + first, n, pcs) : -1;
    if (spliced >= 0) {
        n = spliced;
    } else {
        if (n > GPUFL_STACK_DEPTH_MAX) n = GPUFL_STACK_DEPTH_MAX;
        for (int i = 0; i < n; i++) pcs[i] = (uintptr_t)buf[first + i];
    }
    atomic_fetch_add_explicit(&s->captures, 1, memory_order_relaxed);

    uint64_t h = hash_frames(pcs, n);
    for (size_t i = (size_t)h & s->mask, probes = 0; probes <= s->mask;
         i = (i + 1) & s->mask, probes++) {
        slot_t *slot = &s->slots[i];
        uint64_t seen = atomic_load_explicit(&slot->hash, memory_order_acquire);
        if (seen == 0) {
            /* Full: new stacks are lost, known ones still found. */
            if (atomic_load_explicit(&s->next_id, memory_order_relaxed) >= s->max) break;
            uint64_t empty = 0;
            if (!atomic_compare_exchange_strong_explicit(
                    &slot->hash, &empty, h, memory_order_acq_rel, memory_order_acquire)) {
                seen = empty; /* another thread claimed it first */
            } else {
                uint32_t id = atomic_fetch_add_explicit(&s->next_id, 1, memory_order_relaxed) + 1;
                if (id > s->max) {
                    atomic_store_explicit(&slot->id, ID_LOST, memory_order_release);
                    break;
                }
                entry_t *e = &s->entries[id - 1];
                e->depth = (uint32_t)n;
                memcpy(e->pcs, pcs, (size_t)n * sizeof *pcs);
                atomic_store_explicit(&slot->id, id, memory_order_release);
                return id;
            }
        }
        if (seen == h) {
            uint32_t id = wait_id(slot);
            if (id == ID_LOST) break;
            return id;
        }
    }
    atomic_fetch_add_explicit(&s->lost, 1, memory_order_relaxed);
    return 0;
}

size_t gpufl__stacks_get(const gpufl__stacks_t *s, uint32_t id, const uintptr_t **pcs) {
    if (s == NULL || id == 0 || id > s->max) return 0;
    const entry_t *e = &s->entries[id - 1];
    *pcs = e->pcs;
    return e->depth;
}

void gpufl__stacks_stats(gpufl__stacks_stats_t *out, const gpufl__stacks_t *s) {
    memset(out, 0, sizeof *out);
    if (s == NULL) return;
    out->captures = atomic_load_explicit(&s->captures, memory_order_relaxed);
    out->lost = atomic_load_explicit(&s->lost, memory_order_relaxed);
    uint32_t next = atomic_load_explicit(&s->next_id, memory_order_relaxed);
    out->distinct = next < s->max ? next : s->max;
    out->walker = s->unwind ? "libunwind" : "glibc backtrace";
    out->interp_walks = atomic_load_explicit(&s->interp_walks, memory_order_relaxed);
    out->interp_empty = atomic_load_explicit(&s->interp_empty, memory_order_relaxed);
    out->interp_ns = atomic_load_explicit(&s->interp_ns, memory_order_relaxed);
    out->interp_max_ns = atomic_load_explicit(&s->interp_max_ns, memory_order_relaxed);
}
