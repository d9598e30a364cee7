// SPDX-License-Identifier: Apache-2.0
/*
 * scope.c - scope begin/end: the path every instrumented program runs.
 *
 * Steady state: one relaxed load of the session generation, one TLS block
 * (the thread's ring and the session it was claimed in), one TSC read and a
 * 64-byte record written into the thread's own ring. No lock, no
 * allocation, no system call, no stack frame: everything else (a thread's
 * first scope, which registers it with one gettid() and a ring claim; long
 * names; deep nesting; a full ring; a clock other than the TSC; an observer)
 * is a tail call out of line.
 * The thread's stack of open scopes lives in its ring.
 */
#include "core/scope.h"

#include "core/clock.h"
#include "core/forward.h"
#include "util/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LIKELY(x)   __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

uint64_t gpufl_internal_live_generation;
/* The same value, for the library's own reads: the exported variable may
 * live in the executable (a copy relocation), so reading it costs a load
 * through the GOT first; this hidden one is one load away. Written together
 * by attach and detach. */
static uint64_t live_generation;

static gpufl__ring_pool_t *live_pool;
static _Atomic uint64_t stray_ends;
static _Atomic uint64_t threads_unbuffered;
static pthread_key_t exit_key;
static int exit_key_ok; /* pthread_key_create can fail when a process used up its keys */
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static const gpufl__scope_observer_t *observer; /* atomic builtins */
static _Atomic int observer_calls;              /* calls inside the observer now */

/* The thread's state, one TLS block so that the hot path resolves one
 * address. The default TLS model, through TLS descriptors
 * (lib/CMakeLists.txt): not initial-exec, whose static TLS a dlopen()ed
 * module may not get (the Python extension loaded beside PyTorch's libgomp
 * failed so). */
typedef struct thread_state {
    /* The generation `ring` was claimed in, 0 for none (then ring is NULL
     * too; never 0 while ring is set): the ring is this thread's only in that
     * session, and at thread exit it is handed back only if it was not reset
     * and given to another thread since. */
    uint64_t ring_generation;
    gpufl__ring_t *ring;
    /* The generation in which this thread found no free ring: it does not
     * scan the pool again (nor count itself twice) until the next session. */
    uint64_t no_ring_generation;
    int32_t tid; /* gettid(), cached */
} thread_state_t;
static __thread thread_state_t tls;

/* The thread's ring if it claimed it in this session (generation, nonzero),
 * else NULL. The ring's own generation cannot tell: a ring kept from an
 * earlier session may now be another thread's, claimed in this one; writing
 * into it would give it two producers, and when that thread exits the
 * collector frees it under this thread's open scopes (their ends then count
 * as stray). */
static inline gpufl__ring_t *owned_ring(uint64_t generation) {
    return LIKELY(tls.ring_generation == generation) ? tls.ring : NULL;
}

/* The fast paths read the TSC inline and leave the other clock (a call) to
 * the slow paths: a call anywhere in a function costs every path through it
 * a stack frame and saved registers. Elsewhere than x86 the fast clock is
 * the monotonic one. */
#if defined(__x86_64__) || defined(__i386__)
#define FAST_CLOCK() LIKELY(gpufl__clock_tsc)
static inline uint64_t fast_ticks(void) { return __rdtsc(); }
#else
#define FAST_CLOCK() 1
static inline uint64_t fast_ticks(void) { return (uint64_t)gpufl__mono_ns(); }
#endif

/* Thread exit: hand the ring back; the collector drains it and frees it. */
static void on_thread_exit(void *arg) {
    gpufl__ring_t *r = arg;
    int expected = GPUFL_RING_OWNED;
    if (gpufl__ring_generation(r) == tls.ring_generation)
        atomic_compare_exchange_strong(&r->state, &expected, GPUFL_RING_ORPHANED);
    /* Destructors that run after this one on this thread must not write into
     * a ring that may soon belong to another thread: they record nothing. */
    tls.ring_generation = 0;
    tls.ring = NULL;
    tls.no_ring_generation = __atomic_load_n(&live_generation, __ATOMIC_ACQUIRE);
}

static void make_exit_key(void) {
    exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
    if (!exit_key_ok)
        gpufl__warn("no thread-specific key left: rings of exiting threads are reused only "
                    "at the next session");
}

void gpufl__scope_attach(gpufl__ring_pool_t *pool, uint64_t generation) {
    pthread_once(&exit_key_once, make_exit_key);
    live_pool = pool;
    atomic_store(&stray_ends, 0);
    atomic_store(&threads_unbuffered, 0);
    __atomic_store_n(&live_generation, generation, __ATOMIC_RELEASE);
    __atomic_store_n(&gpufl_internal_live_generation, generation, __ATOMIC_RELEASE);
}

void gpufl__scope_detach(void) {
    __atomic_store_n(&gpufl_internal_live_generation, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&live_generation, 0, __ATOMIC_RELEASE);
}

/* The inline wrappers' flag says live while forwarding, so that they call in; the hidden
 * generation stays 0, so that every call here takes its idle path, which forwards. */
void gpufl__scope_forwarding(int on) {
    __atomic_store_n(&gpufl_internal_live_generation, on ? UINT64_MAX : 0, __ATOMIC_RELEASE);
}

uint64_t gpufl__scope_stray_ends(void) { return atomic_load(&stray_ends); }
uint64_t gpufl__scope_threads_unbuffered(void) { return atomic_load(&threads_unbuffered); }

static __attribute__((noinline)) gpufl__ring_t *register_thread(uint64_t generation) {
    if (tls.no_ring_generation == generation) return NULL;
    /* Acquire: pairs with attach's release, so live_pool is the one published
     * with this generation (matters on weakly ordered CPUs). */
    if (__atomic_load_n(&live_generation, __ATOMIC_ACQUIRE) != generation) return NULL;
    gpufl__ring_t *r = gpufl__ring_claim(live_pool, (int32_t)syscall(SYS_gettid), generation);
    if (!r) {
        tls.no_ring_generation = generation;
        atomic_fetch_add(&threads_unbuffered, 1);
        return NULL;
    }
    r->depth = 0; /* next_id is never reset: scope ids stay unique for the process */
    if (exit_key_ok) pthread_setspecific(exit_key, r);
    tls.ring = r;
    tls.ring_generation = generation;
    return r;
}

static inline gpufl__ring_t *thread_ring(uint64_t generation) {
    gpufl__ring_t *r = owned_ring(generation);
    if (LIKELY(r != NULL)) return r;
    return register_thread(generation);
}

/* Copies src into the text of the records from `first` on, which hold
 * GPUFL_REC_INLINE_TEXT bytes in the head record and 64 in each following. */
static void put_text(gpufl__ring_t *r, uint64_t first, size_t offset, const char *src, size_t len) {
    while (len > 0) {
        char *dst;
        size_t room;
        if (offset < GPUFL_REC_INLINE_TEXT) {
            dst = gpufl__ring_at(r, first)->text + offset;
            room = GPUFL_REC_INLINE_TEXT - offset;
        } else {
            size_t o = offset - GPUFL_REC_INLINE_TEXT;
            dst = (char *)gpufl__ring_at(r, first + 1 + o / sizeof(gpufl__rec_t)) +
                  o % sizeof(gpufl__rec_t);
            room = sizeof(gpufl__rec_t) - o % sizeof(gpufl__rec_t);
        }
        size_t n = len < room ? len : room;
        memcpy(dst, src, n);
        src += n;
        len -= n;
        offset += n;
    }
}

/* Copies n <= 32 bytes with fixed-size moves that may overlap: no call and
 * no `rep movs`, whose start-up cost alone was a third of a scope. */
static inline void copy_small(char *dst, const char *src, size_t n) {
    if (n >= 16) {
        memcpy(dst, src, 16);
        memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++) dst[i] = src[i];
    }
}

/* Writes a begin record of 1 + extra records at `at` and opens the scope. */
static inline __attribute__((always_inline)) gpufl_scope_t
put_begin(gpufl__ring_t *r, uint64_t at, uint64_t extra, const char *name, size_t name_len,
          const char *tag, size_t tag_len, int32_t repeat, int32_t warmup, int truncated,
          int fast_clock) {
    gpufl__rec_t *rec = gpufl__ring_at(r, at);
    /* The text first: fewer values live at once, so the fast path keeps
     * them all in registers and saves none on the stack. */
    if (LIKELY(extra == 0)) {
        copy_small(rec->text, name, name_len);
        if (tag_len) copy_small(rec->text + name_len, tag, tag_len);
    } else {
        put_text(r, at, 0, name, name_len);
        put_text(r, at, name_len, tag, tag_len);
    }
    rec->name_len = (uint16_t)name_len;
    rec->tag_len = (uint16_t)tag_len;
    rec->repeat = repeat;
    rec->warmup = warmup;
    /* Read after the stores above, which may alias them. */
    gpufl_scope_t id = r->next_id;
    r->next_id = id + ((uint64_t)1 << GPUFL_SCOPE_ID_RING_BITS);
    uint32_t depth = r->depth;
    rec->scope_id = id;
    gpufl__rec_set_header(rec, GPUFL_REC_SCOPE_BEGIN, truncated ? GPUFL_REC_FLAG_TRUNCATED : 0,
                          (uint8_t)extra, (uint8_t)depth);
    r->stack[depth] = id;
    r->depth = depth + 1;
    /* Read the clock last, so the scope excludes the cost of opening it. */
    rec->ticks = fast_clock ? fast_ticks() : gpufl__ticks();
    gpufl__ring_commit(r, at + 1 + extra);
    return id;
}

int gpufl__scope_observe(const gpufl__scope_observer_t *o) {
    __atomic_store_n(&observer, o, __ATOMIC_RELEASE);
    if (o != NULL) return 0;
    for (int i = 0; i < 2000; i++) {
        if (atomic_load(&observer_calls) == 0) return 0;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return -1;
}

/* Returns id, so that the hot path reaches it by a tail call. */
static __attribute__((noinline)) gpufl_scope_t observe_begin(gpufl_scope_t id, const char *name,
                                                             size_t name_len, uint32_t depth) {
    atomic_fetch_add(&observer_calls, 1);
    const gpufl__scope_observer_t *o = __atomic_load_n(&observer, __ATOMIC_ACQUIRE);
    if (o != NULL) o->begin(o->user, id, name, name_len, depth);
    atomic_fetch_sub(&observer_calls, 1);
    return id;
}

static __attribute__((noinline)) void observe_end(uint64_t id, uint32_t depth) {
    atomic_fetch_add(&observer_calls, 1);
    const gpufl__scope_observer_t *o = __atomic_load_n(&observer, __ATOMIC_ACQUIRE);
    if (o != NULL) o->end(o->user, id, depth);
    atomic_fetch_sub(&observer_calls, 1);
}

static inline int observed(void) { return __atomic_load_n(&observer, __ATOMIC_RELAXED) != NULL; }

/* Everything the fast path leaves out: no session, a NULL name, a thread's
 * first scope, deep nesting, long names and tags (cut to GPUFL_TEXT_MAX and
 * counted), a ring full as far as the producer last saw, a clock other than
 * the TSC. Takes the arguments of gpufl_scope_begin_n, so the fast path
 * reaches it by a jump. */
static __attribute__((noinline)) gpufl_scope_t begin_slow(const char *name, size_t name_len,
                                                          const char *tag, size_t tag_len,
                                                          int32_t repeat, int32_t warmup) {
    uint64_t generation = __atomic_load_n(&live_generation, __ATOMIC_RELAXED);
    if (UNLIKELY(!generation)) return 0;
    if (!name) name = "(unnamed)", name_len = 9;
    if (!tag) tag_len = 0;
    gpufl__ring_t *r = thread_ring(generation);
    if (UNLIKELY(!r)) return 0;
    if (UNLIKELY(r->depth >= GPUFL_SCOPE_STACK_MAX)) {
        gpufl__ring_count(&r->depth_overflow);
        return 0;
    }
    int truncated = name_len > GPUFL_TEXT_MAX || tag_len > GPUFL_TEXT_MAX;
    if (name_len > GPUFL_TEXT_MAX) name_len = GPUFL_TEXT_MAX;
    if (tag_len > GPUFL_TEXT_MAX) tag_len = GPUFL_TEXT_MAX;
    size_t total = name_len + tag_len;
    uint64_t extra =
        total > GPUFL_REC_INLINE_TEXT
            ? (total - GPUFL_REC_INLINE_TEXT + sizeof(gpufl__rec_t) - 1) / sizeof(gpufl__rec_t)
            : 0;
    uint64_t at = gpufl__ring_reserve(r, 1 + extra);
    if (UNLIKELY(at == UINT64_MAX)) return 0;
    if (UNLIKELY(truncated)) gpufl__ring_count(&r->truncated);
    gpufl_scope_t id =
        put_begin(r, at, extra, name, name_len, tag, tag_len, repeat, warmup, truncated, 0);
    if (UNLIKELY(observed())) return observe_begin(id, name, name_len, r->depth - 1);
    return id;
}

/* No session runs in this copy: 0, or the scope opened in the copy this one forwards to
 * (core/forward.h). Off the fast path, which reaches it by the jump its idle test already
 * took. */
static __attribute__((noinline, cold)) gpufl_scope_t begin_idle(const char *name, size_t name_len,
                                                                const char *tag, size_t tag_len,
                                                                int32_t repeat, int32_t warmup) {
    const gpufl__forward_t *f = gpufl__forward();
    return f ? f->scope_begin_n(name, name_len, tag, tag_len, repeat, warmup) : 0;
}

gpufl_scope_t gpufl_scope_begin_n(const char *name, size_t name_len, const char *tag,
                                  size_t tag_len, int32_t repeat, int32_t warmup) {
    uint64_t generation = __atomic_load_n(&live_generation, __ATOMIC_RELAXED);
    if (UNLIKELY(!generation)) return begin_idle(name, name_len, tag, tag_len, repeat, warmup);
    if (!tag) tag_len = 0;
    /* Fast path: a registered thread, room on the stack and in the ring, and
     * a name and tag that fit in the record (most scope names are short
     * literals). ring_generation matches only a nonzero generation, so ring
     * is set. */
    if (UNLIKELY(tls.ring_generation != generation || !name ||
                 name_len + tag_len > GPUFL_REC_INLINE_TEXT || !FAST_CLOCK()))
        return begin_slow(name, name_len, tag, tag_len, repeat, warmup);
    gpufl__ring_t *r = tls.ring;
    uint64_t at = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (UNLIKELY(r->depth >= GPUFL_SCOPE_STACK_MAX || !gpufl__ring_fits_one(r, at)))
        return begin_slow(name, name_len, tag, tag_len, repeat, warmup);
    gpufl_scope_t id = put_begin(r, at, 0, name, name_len, tag, tag_len, repeat, warmup, 0, 1);
    if (UNLIKELY(observed())) return observe_begin(id, name, name_len, r->depth - 1);
    return id;
}

gpufl_scope_t gpufl_scope_begin_repeat(const char *name, const char *tag, int32_t repeat,
                                       int32_t warmup) {
    if (UNLIKELY(!__atomic_load_n(&live_generation, __ATOMIC_RELAXED)) && !gpufl__forward())
        return 0;
    /* One byte past the cap tells a cut name from one exactly at the cap. */
    size_t name_len = name ? strnlen(name, GPUFL_TEXT_MAX + 1) : 0;
    size_t tag_len = tag ? strnlen(tag, GPUFL_TEXT_MAX + 1) : 0;
    return gpufl_scope_begin_n(name, name_len, tag, tag_len, repeat, warmup);
}

gpufl_scope_t gpufl_scope_begin(const char *name, const char *tag) {
    return gpufl_scope_begin_repeat(name, tag, 0, 0);
}

/* Ends scope `id` at `ticks` when the fast path cannot: it is not simply the
 * innermost scope (the scopes opened inside it close with it; an unknown id
 * is counted), or the ring looked full (the record may be dropped, and is
 * counted then). */
static __attribute__((noinline)) void end_slow(gpufl__ring_t *r, gpufl_scope_t id, uint64_t ticks) {
    uint32_t depth = r->depth;
    uint32_t pos = depth; /* 1-based position of id in the stack */
    while (pos > 0 && r->stack[pos - 1] != id) pos--;
    if (pos == 0) {
        gpufl__ring_count(&r->unbalanced_ends);
        return;
    }
    uint64_t n = depth - pos + 1;
    uint64_t at = gpufl__ring_reserve(r, n);
    if (at != UINT64_MAX) {
        for (uint64_t k = 0; k < n; k++) {
            gpufl__rec_t *rec = gpufl__ring_at(r, at + k);
            rec->ticks = ticks;
            rec->scope_id = r->stack[depth - 1 - k];
            gpufl__rec_set_header(rec, GPUFL_REC_SCOPE_END, k + 1 < n ? GPUFL_REC_FLAG_IMPLICIT : 0,
                                  0, (uint8_t)(depth - 1 - k));
        }
        gpufl__ring_commit(r, at + n);
    }
    r->depth = pos - 1;
    if (UNLIKELY(observed()))
        for (uint32_t k = depth; k > pos - 1; k--) observe_end(r->stack[k - 1], k - 1);
}

/* An end on a thread that owns no ring in this session: counted while a
 * session runs; with none, the end of a scope opened in the copy this one
 * forwards to (core/forward.h). */
static __attribute__((noinline, cold)) void end_unowned(uint64_t generation, gpufl_scope_t id) {
    const gpufl__forward_t *f;
    if (generation)
        atomic_fetch_add(&stray_ends, 1);
    else if ((f = gpufl__forward()))
        f->scope_end(id);
}

/* Ends scope id (nonzero) at ticks. */
static inline __attribute__((always_inline)) void end_at(gpufl_scope_t id, uint64_t ticks) {
    uint64_t generation = __atomic_load_n(&live_generation, __ATOMIC_RELAXED);
    if (UNLIKELY(tls.ring_generation != generation || !generation)) {
        end_unowned(generation, id);
        return;
    }
    gpufl__ring_t *r = tls.ring;
    uint32_t depth = r->depth;
    uint64_t at = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (UNLIKELY(depth == 0 || r->stack[depth - 1] != id || !gpufl__ring_fits_one(r, at))) {
        end_slow(r, id, ticks);
        return;
    }
    gpufl__rec_t *rec = gpufl__ring_at(r, at);
    rec->ticks = ticks;
    rec->scope_id = id;
    gpufl__rec_set_header(rec, GPUFL_REC_SCOPE_END, 0, 0, (uint8_t)(depth - 1));
    r->depth = depth - 1;
    gpufl__ring_commit(r, at + 1);
    if (UNLIKELY(observed())) observe_end(id, depth - 1);
}

static __attribute__((noinline)) void end_other_clock(gpufl_scope_t id) {
    end_at(id, gpufl__ticks());
}

void gpufl_scope_end(gpufl_scope_t id) {
    if (UNLIKELY(id == 0)) return;
    if (UNLIKELY(!FAST_CLOCK())) {
        end_other_clock(id);
        return;
    }
    /* Read the clock first, so the scope excludes the cost of closing it. */
    end_at(id, fast_ticks());
}

/* ---------------- NVTX ranges ---------------- */

uint64_t gpufl__scope_generation(void) {
    return __atomic_load_n(&live_generation, __ATOMIC_RELAXED);
}

static size_t cut(size_t len, size_t max, int *truncated) {
    if (len <= max) return len;
    *truncated = 1;
    return max;
}

uint64_t gpufl__scope_begin_nvtx(const char *name, size_t name_len, const gpufl__nvtx_attr_t *a,
                                 int detached) {
    uint64_t generation = __atomic_load_n(&live_generation, __ATOMIC_RELAXED);
    if (UNLIKELY(!generation)) return 0;
    gpufl__ring_t *r = thread_ring(generation);
    if (UNLIKELY(!r)) return 0;
    if (!detached && UNLIKELY(r->depth >= GPUFL_SCOPE_STACK_MAX)) {
        gpufl__ring_count(&r->depth_overflow);
        return 0;
    }
    if (!name) name = "(unnamed)", name_len = 9;
    int truncated = 0;
    size_t domain_len = a->domain ? cut(a->domain_len, GPUFL_NVTX_NAME_MAX, &truncated) : 0;
    size_t category_len =
        a->category_name ? cut(a->category_name_len, GPUFL_NVTX_NAME_MAX, &truncated) : 0;
    name_len = cut(name_len, GPUFL_TEXT_MAX, &truncated);
    size_t total = name_len + domain_len + category_len;
    uint64_t text_extra =
        total > GPUFL_REC_INLINE_TEXT
            ? (total - GPUFL_REC_INLINE_TEXT + sizeof(gpufl__rec_t) - 1) / sizeof(gpufl__rec_t)
            : 0;
    uint64_t extra = text_extra + 1; /* the attribute record last */
    uint64_t at = gpufl__ring_reserve(r, 1 + extra);
    if (UNLIKELY(at == UINT64_MAX)) return 0;
    if (UNLIKELY(truncated)) gpufl__ring_count(&r->truncated);
    gpufl__rec_t *rec = gpufl__ring_at(r, at);
    put_text(r, at, 0, name, name_len);
    put_text(r, at, name_len, a->domain, domain_len);
    put_text(r, at, name_len + domain_len, a->category_name, category_len);
    rec->name_len = (uint16_t)name_len;
    rec->tag_len = (uint16_t)(domain_len + category_len);
    rec->repeat = 0;
    rec->warmup = 0;
    gpufl__rec_nvtx_t *nv = (gpufl__rec_nvtx_t *)gpufl__ring_at(r, at + extra);
    nv->domain_len = (uint16_t)domain_len;
    nv->category_name_len = (uint16_t)category_len;
    nv->category = a->category;
    nv->payload_kind = a->payload_kind;
    if (a->payload_kind == GPUFL_NVTX_PAYLOAD_REAL)
        nv->payload.f = a->payload_f;
    else
        nv->payload.i = a->payload_i;
    uint64_t id = r->next_id;
    r->next_id = id + ((uint64_t)1 << GPUFL_SCOPE_ID_RING_BITS);
    uint32_t depth = r->depth;
    rec->scope_id = id;
    uint8_t flags = GPUFL_REC_FLAG_NVTX | (detached ? GPUFL_REC_FLAG_DETACHED : 0) |
                    (truncated ? GPUFL_REC_FLAG_TRUNCATED : 0);
    gpufl__rec_set_header(rec, GPUFL_REC_SCOPE_BEGIN, flags, (uint8_t)extra, (uint8_t)depth);
    if (!detached) {
        r->stack[depth] = id;
        r->depth = depth + 1;
    }
    rec->ticks = gpufl__ticks();
    gpufl__ring_commit(r, at + 1 + extra);
    if (!detached && UNLIKELY(observed())) observe_begin(id, name, name_len, depth);
    return id;
}

void gpufl__scope_end_detached(uint64_t id) {
    uint64_t ticks = gpufl__ticks();
    uint64_t generation = __atomic_load_n(&live_generation, __ATOMIC_RELAXED);
    if (UNLIKELY(!generation || id == 0)) return;
    gpufl__ring_t *r = thread_ring(generation);
    if (UNLIKELY(!r)) return;
    uint64_t at = gpufl__ring_reserve(r, 1);
    if (UNLIKELY(at == UINT64_MAX)) return;
    gpufl__rec_t *rec = gpufl__ring_at(r, at);
    rec->ticks = ticks;
    rec->scope_id = id;
    gpufl__rec_set_header(rec, GPUFL_REC_SCOPE_END, GPUFL_REC_FLAG_DETACHED, 0, 0);
    gpufl__ring_commit(r, at + 1);
}

uint64_t gpufl__scope_current(void) {
    uint64_t generation = __atomic_load_n(&live_generation, __ATOMIC_RELAXED);
    gpufl__ring_t *r = generation ? owned_ring(generation) : NULL;
    if (!r || r->depth == 0) return 0;
    return r->stack[r->depth - 1];
}

int32_t gpufl__thread_id(void) {
    if (!tls.tid) tls.tid = (int32_t)syscall(SYS_gettid);
    return tls.tid;
}

void gpufl__scope_after_fork_child(void) {
    tls.tid = 0; /* the child's only thread has a new id */
    /* the parent's ring is not ours */
    tls.ring_generation = 0;
    tls.ring = NULL;
    tls.no_ring_generation = 0;
    gpufl__scope_detach();
}
