// SPDX-License-Identifier: Apache-2.0
/*
 * ops.c - framework operation names and per-call ids (see ops.h and
 * gpufl_ops.h).
 *
 * Names live in an append-only table: a new name is copied, stored at the
 * next index and published with a release store of the count, so that the
 * collector reads them without a lock. Lookups of a known name (a binding
 * registers each once and keeps the index) take the table's mutex.
 */
#include "core/ops.h"

#include "core/collector.h"

#include "util/error.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static char *names[GPUFL_OPS_MAX];
static _Atomic uint32_t count;
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

static gpufl__ops_hooks_t attached;               /* the session's hooks, copied */
static _Atomic(const gpufl__ops_hooks_t *) hooks; /* &attached while a session runs */
static atomic_int inside;                        /* pushes and pops using hooks now */
/* The last hooks attached, kept after detach for the pops of calls that
 * began inside a session: CUPTI's per-thread stacks outlive sessions (and
 * libcupti is never unloaded), so an id left on one would tag the kernels
 * of the next session. */
static gpufl__ops_hooks_t lingering;
static int have_lingering;
static pthread_mutex_t lingering_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t calls, mismatched;

int gpufl_op_register(const char *name) {
    if (name == NULL || *name == '\0')
        return gpufl__set_error(GPUFL_EINVAL, "gpufl_op_register: the name is NULL or empty");
    pthread_mutex_lock(&names_lock);
    uint32_t n = atomic_load_explicit(&count, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) {
            pthread_mutex_unlock(&names_lock);
            return (int)i + 1;
        }
    int rc;
    if (n >= GPUFL_OPS_MAX) {
        rc = gpufl__set_error(GPUFL_ENOMEM,
                              "gpufl_op_register: %d operation names kept "
                              "already; %s is not tagged",
                              GPUFL_OPS_MAX, name);
    } else if ((names[n] = strdup(name)) == NULL) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for an operation name");
    } else {
        atomic_store_explicit(&count, n + 1, memory_order_release);
        rc = (int)n + 1;
    }
    pthread_mutex_unlock(&names_lock);
    return rc;
}

/* The hooks, counted as in use until leave(); NULL when none. */
static const gpufl__ops_hooks_t *enter(void) {
    atomic_fetch_add(&inside, 1);
    const gpufl__ops_hooks_t *h = atomic_load(&hooks);
    if (h == NULL) atomic_fetch_sub_explicit(&inside, 1, memory_order_release);
    return h;
}

static void leave(void) { atomic_fetch_sub_explicit(&inside, 1, memory_order_release); }

uint64_t gpufl_op_push(int index) {
    if (index <= 0 || (uint32_t)index > atomic_load_explicit(&count, memory_order_relaxed))
        return 0;
    if (atomic_load_explicit(&hooks, memory_order_relaxed) == NULL) return 0; /* the usual case */
    const gpufl__ops_hooks_t *h = enter();
    if (h == NULL) return 0;
    uint64_t call = atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed) + 1;
    uint64_t id = (uint64_t)index << GPUFL_OPS_CALL_BITS |
                  (call & ((UINT64_C(1) << GPUFL_OPS_CALL_BITS) - 1));
    int pushed = h->push(h->user, id) == 0;
    leave();
    return pushed ? id : 0;
}

void gpufl_op_pop(uint64_t id) {
    if (id == 0) return;
    uint64_t top = 0;
    const gpufl__ops_hooks_t *h = enter();
    if (h == NULL) { /* the session ended during the call */
        pthread_mutex_lock(&lingering_lock);
        if (have_lingering) lingering.pop(lingering.user, &top);
        pthread_mutex_unlock(&lingering_lock);
        return;
    }
    if (h->pop(h->user, &top) != 0 || top != id)
        atomic_fetch_add_explicit(&mismatched, 1, memory_order_relaxed);
    leave();
}

void gpufl__ops_attach(const gpufl__ops_hooks_t *h) {
    attached = *h; /* no reader: the last detach waited for them all */
    pthread_mutex_lock(&lingering_lock);
    lingering = *h;
    have_lingering = 1;
    pthread_mutex_unlock(&lingering_lock);
    atomic_store(&hooks, &attached);
}

void gpufl__ops_detach(void) {
    atomic_store(&hooks, NULL);
    while (atomic_load(&inside) != 0) sched_yield(); /* a push or pop of a few instructions */
}

void gpufl__ops_after_fork_child(void) {
    /* The parent's session is not the child's: nothing is pushed, and a call
     * the parent had inside the hooks does not count here. */
    atomic_store(&hooks, NULL);
    atomic_store(&inside, 0);
    have_lingering = 0;
    pthread_mutex_init(&lingering_lock, NULL);
    pthread_mutex_init(&names_lock, NULL);
}

size_t gpufl__ops_write_new(gpufl__collector_t *c, enum gpufl__file_id channel, uint32_t *written,
                            uint64_t *lost_seen) {
    uint32_t n = atomic_load_explicit(&count, memory_order_acquire);
    size_t out = 0;
    uint64_t lost = gpufl__collector_lines_lost(c, channel);
    if (lost != *lost_seen) { /* lines were lost since: any of ours may be among them */
        *lost_seen = lost;
        *written = 0;
    }
    for (uint32_t i = *written; i < n; i++, out++) {
        gpufl__line_t l;
        gpufl__wire_op(&l, (int64_t)i + 1, names[i]);
        gpufl__collector_record(c, channel, &l);
    }
    int kept = gpufl__collector_lines_lost(c, channel) == lost;
    if (kept) *written = n; /* else all are written again next time (readers keep the first) */
    return kept ? out : 0;
}

uint64_t gpufl__ops_mismatched(void) {
    return atomic_load_explicit(&mismatched, memory_order_relaxed);
}
