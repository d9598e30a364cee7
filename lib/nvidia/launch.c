// SPDX-License-Identifier: Apache-2.0
/*
 * launch.c - driver-API callbacks: the calling thread's scope, the kernel's
 * launch configuration and external correlation id, noted by correlation
 * id for the collector (see launch.h).
 */
#include "nvidia/launch.h"

#include "core/clock.h"
#include "util/error.h"
#include "util/log.h"
#include "core/scope.h"
#include "core/stacks.h"
#include "nvidia/kernel_events.h"

#include <cupti.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What a callback id is, for the callback's switch. */
enum call_kind {
    CALL_NONE = 0,   /* not enabled */
    CALL_NOTE,       /* scope (and external id) only: copies, memsets, syncs, allocations */
    CALL_LAUNCH,     /* cuLaunchKernel-like parameters */
    CALL_LAUNCH_EX,  /* cuLaunchKernelEx parameters (a CUlaunchConfig) */
    CALL_LAUNCH_ANY, /* other kernel launches: scope only */
    CALL_GRAPH,      /* cuGraphLaunch */
    /* Synchronization, timed from enter to exit; in CUPTI's type order. */
    CALL_SYNC_EVENT,  /* cuEventSynchronize: type 1 */
    CALL_SYNC_WAIT,   /* cuStreamWaitEvent: type 2 */
    CALL_SYNC_STREAM, /* cuStreamSynchronize: type 3 */
    CALL_SYNC_CONTEXT /* cuCtxSynchronize: type 4 */
};

#define CBIDS         4096
#define SEEN_CONTEXTS 8 /* contexts a thread remembers having launched on */

/* One note; corr is also its version: 0 while being written. */
typedef struct note {
    _Atomic uint32_t corr;
    _Atomic uint32_t config;
    _Atomic uint64_t scope;
    _Atomic uint64_t external_id;
    _Atomic uint32_t external_kind; /* kind + 1; 0 none */
    _Atomic uint32_t stack;         /* stack id; 0 none */
    _Atomic int64_t mono_ns;        /* when the call was made */
    _Atomic int32_t tid;
    uint32_t pad;
} note_t;

_Static_assert(sizeof(note_t) == 48, "a note is 48 bytes");

/* Rows made on application threads for the collector: appended under the
 * module's lock, taken whole by swapping two buffers. */
typedef struct row_queue {
    unsigned char *items, *spare; /* filling; handed to the collector last time */
    size_t count, cap, spare_cap; /* in items */
    size_t item_size, max;
    uint64_t queued;
    _Atomic uint64_t lost; /* past max, or no memory */
} row_queue_t;

struct gpufl__launch {
    gpufl__cupti_t *cupti;
    gpufl__cuda_t *cuda;     /* NULL: no occupancy */
    gpufl__stacks_t *stacks; /* NULL: no stacks captured */
    char cuda_why[160];
    unsigned int flags;
    int subscribed;
    uint64_t generation; /* tells this module's per-thread caches from an earlier one's */
    uint8_t kind[CBIDS];
    uint8_t per_thread[CBIDS]; /* the _ptsz form: its stream is per-thread */
    note_t *notes;             /* 1 << GPUFL_LAUNCH_TABLE_BITS */
    uint64_t lookups, misses;

    /* Configurations: published in order under lock, never moved. */
    pthread_mutex_t lock;
    gpufl__kernel_config_t **configs; /* GPUFL_LAUNCH_CONFIGS_MAX */
    uint32_t *slots;                  /* open addressing: config id, 0 empty */
    size_t config_count, configs_taken;
    _Atomic uint64_t configs_dropped, occupancy_failures;
    atomic_bool configs_full; /* GPUFL_LAUNCH_CONFIGS_MAX reached: no new ones made */

    /* Rows made on application threads, waiting for the collector. */
    row_queue_t graphs, syncs, launches;

    _Atomic(const gpufl__launch_hooks_t *) hooks; /* an engine above Trace; NULL none */
    atomic_int rows_paused; /* GPUFL_LAUNCH_ROWS: notes instead, for CUPTI's records to join */
    gpufl__kernel_events_t *events; /* GPUFL_LAUNCH_EVENTS: launches timed with event pairs */

    /* The launch gate (GPUFL_LAUNCH_GATE): launches in, and whether it is
     * closed. Sequentially consistent: a launch counts itself in, then
     * looks; the closer closes, then counts. */
    _Atomic int gate_in, gate_closed;
    _Atomic uint64_t gate_waits, gate_overruns;
};

#define SLOTS (2 * GPUFL_LAUNCH_CONFIGS_MAX)
#define MASK  ((1u << GPUFL_LAUNCH_TABLE_BITS) - 1)

static _Atomic uint64_t generations;

/* ---------------------------------------------------------------------- */
/* Which calls                                                              */
/* ---------------------------------------------------------------------- */

static int starts(const char *name, const char *prefix) {
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

static enum call_kind classify(const char *name, unsigned int flags) {
    if (starts(name, "cuLaunchKernelEx")) return CALL_LAUNCH_EX;
    if (starts(name, "cuLaunchKernel") || starts(name, "cuLaunchCooperativeKernel")) {
        /* The multi-device form has a parameter array: scope only. */
        return strstr(name, "MultiDevice") ? CALL_LAUNCH_ANY : CALL_LAUNCH;
    }
    if (strcmp(name, "cuLaunch") == 0 || starts(name, "cuLaunchGrid")) return CALL_LAUNCH_ANY;
    if (starts(name, "cuGraphLaunch")) return CALL_GRAPH;
    if (starts(name, "cuMemcpy") || starts(name, "cuMemset")) return CALL_NOTE;
    if (flags & GPUFL_LAUNCH_SYNC) {
        if (starts(name, "cuEventSynchronize")) return CALL_SYNC_EVENT;
        if (starts(name, "cuStreamWaitEvent")) return CALL_SYNC_WAIT;
        if (starts(name, "cuStreamSynchronize")) return CALL_SYNC_STREAM;
        if (starts(name, "cuCtxSynchronize")) return CALL_SYNC_CONTEXT;
    }
    if ((flags & GPUFL_LAUNCH_MEMORY) &&
        (starts(name, "cuMemAlloc") || starts(name, "cuMemFree") || starts(name, "cuMemHostAlloc")))
        return CALL_NOTE;
    return CALL_NONE;
}

static int want(const char *name, uint32_t cbid, void *user) {
    gpufl__launch_t *l = user;
    if (cbid >= CBIDS) return 0;
    l->kind[cbid] = (uint8_t)classify(name, l->flags);
    l->per_thread[cbid] = strstr(name, "_ptsz") != NULL;
    return l->kind[cbid] != CALL_NONE;
}

/* ---------------------------------------------------------------------- */
/* Launch configurations                                                    */
/* ---------------------------------------------------------------------- */

/* The last configurations this thread looked up, so that a repeated launch
 * costs a few compares and no lock. On the heap, found through a thread
 * key: the library's static TLS is kept small for the scope hot path (a
 * dlopen'ed library gets little of it). */
#define CACHE 256
typedef struct cached {
    uint64_t generation;
    void *function;
    int block_threads;
    uint32_t dynamic_smem;
    uint32_t id;
} cached_t;

/* What a thread keeps between calls: the sync call it is in, and its cache. */
typedef struct thread_state {
    int64_t sync_start_ns;        /* enter of the synchronization call running */
    uint32_t sync_stack;          /* its stack id, 0 none */
    uint64_t sync_generation;     /* of the module that saw that enter */
    uint32_t sync_correlation;    /* of that call: its exit carries the same */
    uint64_t external_generation; /* of the module the two counts below are for */
    uint32_t external_empty;      /* launches in a row with no external id found */
    uint32_t external_skipped;    /* launches not looked at since the last look */
    void *seen[SEEN_CONTEXTS];    /* contexts this thread launched on, handed to the hooks */
    uint64_t seen_generation;     /* of the module the set is for */
    unsigned seen_next;           /* the entry replaced next when the set is full */
    uint64_t gate_generation;     /* of the module whose gate this thread's launch is in; 0 none */
    uint32_t gate_correlation;    /* of that launch: its exit carries the same */
    uint64_t events_generation;   /* of the module whose event pair this thread's launch took */
    uint32_t events_correlation;  /* of that launch: its exit records the pair's end */
    uint32_t events_handle;
    cached_t cache[CACHE];
} thread_state_t;

static pthread_key_t state_key;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;
static int state_key_ok;

static void make_state_key(void) { state_key_ok = pthread_key_create(&state_key, free) == 0; }

/* The calling thread's state, NULL when none can be had. */
static thread_state_t *thread_state(void) {
    pthread_once(&state_once, make_state_key);
    if (!state_key_ok) return NULL;
    thread_state_t *t = pthread_getspecific(state_key);
    if (t == NULL && (t = calloc(1, sizeof *t)) != NULL && pthread_setspecific(state_key, t) != 0) {
        free(t);
        t = NULL;
    }
    return t;
}

static size_t config_hash(void *function, int block_threads, uint32_t dynamic_smem) {
    uint64_t h = (uint64_t)(uintptr_t)function * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)(uint32_t)block_threads << 32 | dynamic_smem) * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29));
}

/* The slot of the key, holding its id or 0 where it would go. Under lock. */
static uint32_t *find_slot(gpufl__launch_t *l, size_t hash, void *function, int block_threads,
                           uint32_t dynamic_smem) {
    for (size_t i = hash % SLOTS;; i = (i + 1) % SLOTS) {
        uint32_t id = l->slots[i];
        if (id == 0) return &l->slots[i];
        const gpufl__kernel_config_t *k = l->configs[id - 1];
        if (k->function == function && k->block_threads == block_threads &&
            k->dynamic_smem == dynamic_smem)
            return &l->slots[i];
    }
}

static uint32_t lookup_config(gpufl__launch_t *l, size_t hash, void *function, int block_threads,
                              uint32_t dynamic_smem) {
    pthread_mutex_lock(&l->lock);
    uint32_t id = *find_slot(l, hash, function, block_threads, dynamic_smem);
    pthread_mutex_unlock(&l->lock);
    return id;
}

/* A new configuration, its occupancy read from the driver before any lock
 * is taken (the driver has locks of its own). */
static gpufl__kernel_config_t *make_config(gpufl__launch_t *l, void *function, int block_threads,
                                           uint32_t dynamic_smem, const char *symbol) {
    gpufl__kernel_config_t *k = calloc(1, sizeof *k);
    if (k == NULL) return NULL;
    k->function = function;
    k->block_threads = block_threads;
    k->dynamic_smem = dynamic_smem;
    k->first_mono_ns = gpufl__mono_ns();
    k->name = strdup(symbol ? symbol : "");
    if (k->name == NULL) {
        free(k);
        return NULL;
    }
    if (l->cuda == NULL) {
        snprintf(k->why, sizeof k->why, "%s", l->cuda_why);
    } else if (gpufl__cuda_kernel_occupancy(&k->occupancy, l->cuda, function, block_threads,
                                            dynamic_smem) == 0) {
        k->have_occupancy = 1;
    } else {
        snprintf(k->why, sizeof k->why, "%s", gpufl_last_error());
    }
    return k;
}

static void free_config(gpufl__kernel_config_t *k) {
    if (k == NULL) return;
    free(k->name);
    free(k);
}

/* The id of a configuration, made on first sight; 0 past the limit. state
 * is the calling thread's (NULL: no cache). */
static uint32_t config_id(gpufl__launch_t *l, thread_state_t *state, void *function,
                          int block_threads, uint32_t dynamic_smem, const char *symbol) {
    size_t hash = config_hash(function, block_threads, dynamic_smem);
    cached_t scratch, *c = state ? &state->cache[hash % CACHE] : &scratch;
    if (state != NULL && c->generation == l->generation && c->function == function &&
        c->block_threads == block_threads && c->dynamic_smem == dynamic_smem)
        return c->id;

    uint32_t id = lookup_config(l, hash, function, block_threads, dynamic_smem);
    if (id == 0 && atomic_load_explicit(&l->configs_full, memory_order_relaxed)) {
        /* Past the limit a new configuration costs no driver calls. */
        atomic_fetch_add(&l->configs_dropped, 1);
        return 0;
    }
    if (id == 0) {
        gpufl__kernel_config_t *k = make_config(l, function, block_threads, dynamic_smem, symbol);
        pthread_mutex_lock(&l->lock);
        uint32_t *slot = find_slot(l, hash, function, block_threads, dynamic_smem);
        if (*slot == 0 && k != NULL && l->config_count < GPUFL_LAUNCH_CONFIGS_MAX) {
            k->id = (uint32_t)l->config_count + 1;
            l->configs[l->config_count++] = k;
            *slot = k->id;
            if (l->config_count == GPUFL_LAUNCH_CONFIGS_MAX)
                atomic_store_explicit(&l->configs_full, 1, memory_order_relaxed);
            /* Counted once published: not for a copy another thread beat,
             * nor for each launch past the limit. */
            if (!k->have_occupancy) atomic_fetch_add(&l->occupancy_failures, 1);
            k = NULL;
        }
        id = *slot;
        pthread_mutex_unlock(&l->lock);
        free_config(k); /* another thread made it first, or no room */
        if (id == 0) {
            atomic_fetch_add(&l->configs_dropped, 1);
            return 0;
        }
    }
    *c = (cached_t){l->generation, function, block_threads, dynamic_smem, id};
    return id;
}

/* ---------------------------------------------------------------------- */
/* The callback                                                             */
/* ---------------------------------------------------------------------- */

static void queue_init(row_queue_t *q, size_t item_size, size_t max) {
    memset(q, 0, sizeof *q);
    q->item_size = item_size;
    q->max = max;
}

static void queue_fini(row_queue_t *q) {
    free(q->items);
    free(q->spare);
    memset(q, 0, sizeof *q);
}

static void queue_push(gpufl__launch_t *l, row_queue_t *q, const void *item) {
    pthread_mutex_lock(&l->lock);
    if (q->count == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        void *grown = cap <= q->max ? realloc(q->items, cap * q->item_size) : NULL;
        if (grown == NULL) {
            pthread_mutex_unlock(&l->lock);
            atomic_fetch_add(&q->lost, 1);
            return;
        }
        q->items = grown;
        q->cap = cap;
    }
    memcpy(q->items + q->count++ * q->item_size, item, q->item_size);
    q->queued++;
    pthread_mutex_unlock(&l->lock);
}

/* The rows queued since the last take, valid until the next one. */
static size_t queue_take(gpufl__launch_t *l, row_queue_t *q, const void **rows) {
    pthread_mutex_lock(&l->lock);
    unsigned char *filled = q->items;
    size_t n = q->count, cap = q->cap;
    q->items = q->spare;
    q->cap = q->spare_cap;
    q->count = 0;
    q->spare = filled;
    q->spare_cap = cap;
    pthread_mutex_unlock(&l->lock);
    *rows = filled;
    return n;
}

static void queue_graph(gpufl__launch_t *l, const CUpti_CallbackData *cb, uint64_t scope) {
    const cuGraphLaunch_params *p = cb->functionParams;
    gpufl__graph_launch_t g = {gpufl__mono_ns(), gpufl__thread_id(), cb->correlationId,
                               p ? gpufl__cupti_graph_exec_id(l->cupti, p->hGraph) : 0, scope};
    queue_push(l, &l->graphs, &g);
}

/* A synchronization call: timed on the calling thread from its enter to its
 * exit callback, the host blocked in between. */
static void sync_call(gpufl__launch_t *l, enum call_kind kind, uint32_t cbid,
                      const CUpti_CallbackData *cb, uint64_t scope) {
    thread_state_t *state = thread_state();
    if (state == NULL) return;
    if (cb->callbackSite == CUPTI_API_ENTER) {
        /* The stack first, so that its cost is not counted as blocked time. */
        state->sync_stack = l->stacks ? gpufl__stacks_capture(l->stacks) : 0;
        state->sync_start_ns = gpufl__mono_ns();
        state->sync_generation = l->generation;
        state->sync_correlation = cb->correlationId;
        return;
    }
    /* An exit whose enter this module did not see (the call began before
     * the session): its start is unknown, so it is left out. */
    if (state->sync_generation != l->generation || state->sync_correlation != cb->correlationId)
        return;
    state->sync_generation = 0;
    gpufl__sync_call_t row = {
        .start_mono_ns = state->sync_start_ns,
        .end_mono_ns = gpufl__mono_ns(),
        .type = (uint32_t)(kind - CALL_SYNC_EVENT + 1),
        .context = cb->contextUid,
        .stream = -1,
        .event = -1,
        .correlation = cb->correlationId,
        .result = cb->functionReturnValue ? *(const int *)cb->functionReturnValue : 0,
        .scope = scope,
        .tid = gpufl__thread_id(),
        .stack = state->sync_stack};
    void *stream = NULL, *event = NULL;
    const void *p = cb->functionParams;
    if (p != NULL && kind == CALL_SYNC_STREAM)
        stream = ((const cuStreamSynchronize_params *)p)->hStream;
    if (p != NULL && kind == CALL_SYNC_WAIT) {
        stream = ((const cuStreamWaitEvent_params *)p)->hStream;
        event = ((const cuStreamWaitEvent_params *)p)->hEvent;
    }
    if (p != NULL && kind == CALL_SYNC_EVENT)
        event = ((const cuEventSynchronize_params *)p)->hEvent;
    if (kind == CALL_SYNC_STREAM || kind == CALL_SYNC_WAIT)
        row.stream = gpufl__cupti_stream_id(l->cupti, cb->context, stream, l->per_thread[cbid]);
    /* CUPTI has no id for an event: its handle tells one event from another. */
    if (event != NULL) row.event = (int64_t)((uintptr_t)event & ((UINT64_C(1) << 53) - 1));
    queue_push(l, &l->syncs, &row);
}

/* Threads in a block of x*y*z, -1 past INT_MAX (a launch the driver
 * refuses): the product is taken in 64 bits so that it cannot wrap. */
static int threads_in_block(unsigned int x, unsigned int y, unsigned int z) {
    uint64_t n = (uint64_t)x * y;
    if (n > INT_MAX) return -1;
    n *= z;
    return n > INT_MAX ? -1 : (int)n;
}

static uint32_t launch_config(gpufl__launch_t *l, thread_state_t *state, enum call_kind kind,
                              const CUpti_CallbackData *cb) {
    if (cb->functionParams == NULL) return 0;
    void *f;
    int threads;
    unsigned int smem;
    if (kind == CALL_LAUNCH) {
        /* cuLaunchCooperativeKernel's parameters start the same way. */
        const cuLaunchKernel_params *p = cb->functionParams;
        f = p->f;
        threads = threads_in_block(p->blockDimX, p->blockDimY, p->blockDimZ);
        smem = p->sharedMemBytes;
    } else {
        const cuLaunchKernelEx_params *p = cb->functionParams;
        if (p->config == NULL) return 0;
        f = p->f;
        threads =
            threads_in_block(p->config->blockDimX, p->config->blockDimY, p->config->blockDimZ);
        smem = p->config->sharedMemBytes;
    }
    return threads < 0 ? 0 : config_id(l, state, f, threads, smem, cb->symbolName);
}

/* The stream and the grid and block of a cuLaunchKernel-like call (the
 * cooperative form's parameters start the same way) or of cuLaunchKernelEx. */
static void launch_shape(gpufl__kernel_launch_t *row, void **stream, enum call_kind kind,
                         const CUpti_CallbackData *cb) {
    *stream = NULL;
    if (cb->functionParams == NULL) return;
    if (kind == CALL_LAUNCH) {
        const cuLaunchKernel_params *p = cb->functionParams;
        *stream = p->hStream;
        uint32_t grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
        uint32_t block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
        memcpy(row->grid, grid, sizeof grid);
        memcpy(row->block, block, sizeof block);
    } else if (kind == CALL_LAUNCH_EX) {
        const cuLaunchKernelEx_params *p = cb->functionParams;
        if (p->config == NULL) return;
        const CUlaunchConfig *c = p->config;
        *stream = c->hStream;
        uint32_t grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};
        uint32_t block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
        memcpy(row->grid, grid, sizeof grid);
        memcpy(row->block, block, sizeof block);
    }
}

/* Event pairs (GPUFL_LAUNCH_EVENTS): the pair's start at the enter callback
 * of a launch, its end at the exit; the row carries the handle. */
static void time_launch(gpufl__launch_t *l, thread_state_t *state, enum call_kind kind,
                        uint32_t cbid, const CUpti_CallbackData *cb, gpufl__kernel_launch_t *row) {
    void *stream;
    launch_shape(row, &stream, kind, cb);
    if (cb->callbackSite == CUPTI_API_ENTER) {
        if (state == NULL || (kind != CALL_LAUNCH && kind != CALL_LAUNCH_EX)) return;
        row->stream = gpufl__cupti_stream_id(l->cupti, cb->context, stream, l->per_thread[cbid]);
        /* A context's first pair makes its pool and waits for the anchor with
         * cuEventSynchronize, which these callbacks time: gpufl's own call. */
        gpufl__launch_internal(1);
        row->events =
            gpufl__kernel_events_begin(l->events, cb->context, stream, l->per_thread[cbid]);
        gpufl__launch_internal(0);
        state->events_generation = row->events ? l->generation : 0;
        state->events_correlation = cb->correlationId;
        state->events_handle = row->events;
        return;
    }
    if (state == NULL || state->events_generation != l->generation ||
        state->events_correlation != cb->correlationId)
        return;
    state->events_generation = 0;
    int launched = cb->functionReturnValue == NULL || *(const int *)cb->functionReturnValue == 0;
    gpufl__kernel_events_end(l->events, state->events_handle, stream, l->per_thread[cbid],
                             launched);
}

/* The external correlation id a framework pushed on the calling thread:
 * 1 and *kind, *id when found. Looking costs a pop and a push on CUPTI's
 * stack per kind (0.7-1.0 us a launch for three kinds on an H100 host), so a
 * thread that has had none for GPUFL_LAUNCH_EXTERNAL_QUIET calls in a row is
 * looked at every GPUFL_LAUNCH_EXTERNAL_EVERY-th call until one is found
 * again: the first calls after a framework starts pushing ids on such a
 * thread (at most EVERY - 1) may lack them. */
static int external_id(gpufl__launch_t *l, thread_state_t *state, uint32_t *kind, uint64_t *id) {
    if (state == NULL) return gpufl__cupti_peek_external(l->cupti, kind, id);
    if (state->external_generation != l->generation) { /* a new session: counts afresh */
        state->external_generation = l->generation;
        state->external_empty = state->external_skipped = 0;
    }
    if (state->external_empty >= GPUFL_LAUNCH_EXTERNAL_QUIET) {
        if (++state->external_skipped < GPUFL_LAUNCH_EXTERNAL_EVERY) return 0;
        state->external_skipped = 0;
    }
    if (gpufl__cupti_peek_external(l->cupti, kind, id)) {
        state->external_empty = 0;
        return 1;
    }
    if (state->external_empty < UINT32_MAX) state->external_empty++;
    return 0;
}

/* The first launch this thread makes on a context (per module): the
 * hooks hear of it, so that contexts made before the session are found. A
 * small set per thread, so that a thread driving several GPUs in turn does
 * not call the hook at every launch; the hook's 0 (busy) means ask again. */
static void see_context(gpufl__launch_t *l, thread_state_t *state, void *context) {
    const gpufl__launch_hooks_t *h = atomic_load_explicit(&l->hooks, memory_order_acquire);
    if (h == NULL || h->context_seen == NULL || state == NULL || context == NULL) return;
    if (state->seen_generation != l->generation) {
        memset(state->seen, 0, sizeof state->seen);
        state->seen_generation = l->generation;
    }
    for (int i = 0; i < SEEN_CONTEXTS; i++)
        if (state->seen[i] == context) return;
    if (h->context_seen(h->user, context))
        state->seen[state->seen_next++ % SEEN_CONTEXTS] = context;
}

/* ---------------------------------------------------------------------- */
/* The launch gate                                                          */
/* ---------------------------------------------------------------------- */

static void gate_pause(void) {
    struct timespec t = {0, 20000}; /* 20 us: a GetData or a patch takes far longer */
    nanosleep(&t, NULL);
}

/* The end of a launch's enter callback: in through the gate, waiting while
 * it is closed (at most GPUFL_LAUNCH_GATE_PASS_NS). */
static void gate_enter(gpufl__launch_t *l, thread_state_t *state, uint32_t correlation) {
    if (state == NULL) return; /* its exit could not be told: not counted in */
    int64_t give_up = 0;
    for (;;) {
        atomic_fetch_add(&l->gate_in, 1);
        if (!atomic_load(&l->gate_closed)) break;
        int64_t now = gpufl__mono_ns();
        if (give_up == 0) {
            give_up = now + GPUFL_LAUNCH_GATE_PASS_NS;
            atomic_fetch_add_explicit(&l->gate_waits, 1, memory_order_relaxed);
        } else if (now >= give_up) {
            atomic_fetch_add_explicit(&l->gate_overruns, 1, memory_order_relaxed);
            break; /* in, closed or not */
        }
        atomic_fetch_sub(&l->gate_in, 1);
        while (atomic_load(&l->gate_closed) && gpufl__mono_ns() < give_up) gate_pause();
    }
    state->gate_generation = l->generation;
    state->gate_correlation = correlation;
}

/* The start of a launch's exit callback: out, when its enter came in. */
static void gate_leave(gpufl__launch_t *l, uint32_t correlation) {
    thread_state_t *state = thread_state();
    if (state == NULL || state->gate_generation != l->generation ||
        state->gate_correlation != correlation)
        return;
    state->gate_generation = 0;
    atomic_fetch_sub(&l->gate_in, 1);
}

int gpufl__launch_gate_close(gpufl__launch_t *l, int64_t wait_ns) {
    if (l == NULL || !(l->flags & GPUFL_LAUNCH_GATE)) return 0;
    atomic_store(&l->gate_closed, 1);
    int64_t give_up = gpufl__mono_ns() + wait_ns;
    while (atomic_load(&l->gate_in) > 0) {
        if (gpufl__mono_ns() >= give_up) {
            atomic_store(&l->gate_closed, 0);
            return -1;
        }
        gate_pause();
    }
    return 0;
}

void gpufl__launch_gate_open(gpufl__launch_t *l) {
    if (l != NULL) atomic_store(&l->gate_closed, 0);
}

/* Driver calls gpufl makes itself on this thread (gpufl__launch_internal):
 * not the application's, so not recorded. */
static _Thread_local int internal_calls;

void gpufl__launch_internal(int on) { internal_calls += on ? 1 : -1; }

static void on_call(void *user, int domain, uint32_t cbid, const void *data) {
    const CUpti_CallbackData *cb = data;
    gpufl__launch_t *l = user;
    if (internal_calls) return;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        const gpufl__launch_hooks_t *h = atomic_load_explicit(&l->hooks, memory_order_acquire);
        if (h != NULL && h->resource != NULL) h->resource(h->user, cbid, data);
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= CBIDS) return;
    enum call_kind kind = (enum call_kind)l->kind[cbid];
    if (kind == CALL_NONE) return;
#ifdef GPUFL_DIAGNOSE_NO_NOTES
    /* Overhead diagnosis builds only (bench/gpu/diagnose_overhead.sh): the
     * subscription and CUPTI's dispatch without gpufl's work at the call. */
    return;
#endif
    if (kind >= CALL_SYNC_EVENT) {
        sync_call(l, kind, cbid, cb, gpufl__scope_current());
        return;
    }
    /* Only kernel rows carry external ids (a graph's kernels share its
     * launch's note): copies and the like are not looked at. */
    int launches = kind == CALL_LAUNCH || kind == CALL_LAUNCH_EX || kind == CALL_LAUNCH_ANY ||
                   kind == CALL_GRAPH;
    int gated = launches && (l->flags & GPUFL_LAUNCH_GATE);
    int timed = l->events != NULL && (kind == CALL_LAUNCH || kind == CALL_LAUNCH_EX);
    if (cb->callbackSite != CUPTI_API_ENTER) {
        if (gated) gate_leave(l, cb->correlationId);
        gpufl__kernel_launch_t unused;
        if (timed) time_launch(l, thread_state(), kind, cbid, cb, &unused);
        return;
    }
    int64_t now = gpufl__mono_ns();
    uint64_t scope = gpufl__scope_current();
    uint32_t config = 0, external_kind = 0, stack = 0;
    uint64_t external = 0;
    thread_state_t *state = launches ? thread_state() : NULL;
    if (launches) see_context(l, state, cb->context);
    if (kind == CALL_LAUNCH || kind == CALL_LAUNCH_EX) config = launch_config(l, state, kind, cb);
    if (kind == CALL_GRAPH && (l->flags & GPUFL_LAUNCH_GRAPHS)) queue_graph(l, cb, scope);
    uint32_t k;
    if (launches && (l->flags & GPUFL_LAUNCH_EXTERNAL) && external_id(l, state, &k, &external))
        external_kind = k + 1;
    if (launches && l->stacks) stack = gpufl__stacks_capture(l->stacks);

    /* Only a kernel launch is a row: a copy or memset call leaves its note for
     * the activity record CUPTI may give it (PcSampling's copy kinds). */
    if ((l->flags & GPUFL_LAUNCH_ROWS) && launches && kind != CALL_GRAPH &&
        !atomic_load_explicit(&l->rows_paused, memory_order_relaxed)) {
        /* No activity record will come to be joined: the row is all. */
        gpufl__kernel_launch_t row = {
            now,    cb->context,   scope, external,           cb->correlationId,
            config, external_kind, stack, gpufl__thread_id(), .stream = -1};
        /* Last before the row goes: the pair's start as close to the launch as can be. */
        if (timed) time_launch(l, state, kind, cbid, cb, &row);
        queue_push(l, &l->launches, &row);
    } else {
        note_t *n = &l->notes[cb->correlationId & MASK];
        atomic_store_explicit(&n->corr, 0, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&n->config, config, memory_order_relaxed);
        atomic_store_explicit(&n->scope, scope, memory_order_relaxed);
        atomic_store_explicit(&n->external_id, external, memory_order_relaxed);
        atomic_store_explicit(&n->external_kind, external_kind, memory_order_relaxed);
        atomic_store_explicit(&n->stack, stack, memory_order_relaxed);
        atomic_store_explicit(&n->mono_ns, now, memory_order_relaxed);
        atomic_store_explicit(&n->tid, gpufl__thread_id(), memory_order_relaxed);
        atomic_store_explicit(&n->corr, cb->correlationId, memory_order_release);
    }
    /* Last: gpufl's work above may wait on engine locks the closer holds. */
    if (gated) gate_enter(l, state, cb->correlationId);
}

/* ---------------------------------------------------------------------- */
/* The collector's side                                                     */
/* ---------------------------------------------------------------------- */

int gpufl__launch_lookup(gpufl__launch_info_t *out, gpufl__launch_t *l, uint32_t correlation) {
    memset(out, 0, sizeof *out);
    if (l == NULL || correlation == 0) return 0;
    l->lookups++;
    note_t *n = &l->notes[correlation & MASK];
    if (atomic_load_explicit(&n->corr, memory_order_acquire) == correlation) {
        out->config = atomic_load_explicit(&n->config, memory_order_relaxed);
        out->scope = atomic_load_explicit(&n->scope, memory_order_relaxed);
        out->external_id = atomic_load_explicit(&n->external_id, memory_order_relaxed);
        uint32_t kind = atomic_load_explicit(&n->external_kind, memory_order_relaxed);
        out->stack = atomic_load_explicit(&n->stack, memory_order_relaxed);
        out->mono_ns = atomic_load_explicit(&n->mono_ns, memory_order_relaxed);
        out->tid = atomic_load_explicit(&n->tid, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&n->corr, memory_order_relaxed) == correlation) {
            out->has_external = kind != 0;
            out->external_kind = kind ? kind - 1 : 0;
            if (!out->has_external) out->external_id = 0;
            return 1;
        }
        memset(out, 0, sizeof *out);
    }
    l->misses++;
    return 0;
}

size_t gpufl__launch_take_configs(gpufl__launch_t *l, gpufl__kernel_config_t *const **first) {
    pthread_mutex_lock(&l->lock);
    size_t from = l->configs_taken, n = l->config_count - from;
    l->configs_taken = l->config_count;
    pthread_mutex_unlock(&l->lock);
    *first = l->configs + from;
    return n;
}

size_t gpufl__launch_take_graphs(gpufl__launch_t *l, const gpufl__graph_launch_t **rows) {
    const void *p;
    size_t n = queue_take(l, &l->graphs, &p);
    *rows = p;
    return n;
}

size_t gpufl__launch_take_launches(gpufl__launch_t *l, const gpufl__kernel_launch_t **rows) {
    const void *p;
    size_t n = queue_take(l, &l->launches, &p);
    *rows = p;
    return n;
}

size_t gpufl__launch_take_syncs(gpufl__launch_t *l, const gpufl__sync_call_t **rows) {
    const void *p;
    size_t n = queue_take(l, &l->syncs, &p);
    *rows = p;
    return n;
}

void gpufl__launch_stats(gpufl__launch_stats_t *out, gpufl__launch_t *l) {
    memset(out, 0, sizeof *out);
    if (l == NULL) return;
    out->lookups = l->lookups;
    out->misses = l->misses;
    pthread_mutex_lock(&l->lock);
    out->configs = l->config_count;
    out->graph_launches = l->graphs.queued;
    out->syncs = l->syncs.queued;
    out->launches = l->launches.queued;
    pthread_mutex_unlock(&l->lock);
    out->configs_dropped = atomic_load(&l->configs_dropped);
    out->occupancy_failures = atomic_load(&l->occupancy_failures);
    out->graph_launches_lost = atomic_load(&l->graphs.lost);
    out->syncs_lost = atomic_load(&l->syncs.lost);
    out->launches_lost = atomic_load(&l->launches.lost);
    out->gate_waits = atomic_load(&l->gate_waits);
    out->gate_overruns = atomic_load(&l->gate_overruns);
}

/* ---------------------------------------------------------------------- */
/* Create and destroy                                                       */
/* ---------------------------------------------------------------------- */

int gpufl__launch_create(gpufl__launch_t **out, gpufl__cupti_t *cupti, gpufl__cuda_t *cuda,
                         const char *cuda_why, unsigned int flags, gpufl__stacks_t *stacks,
                         char *why, size_t why_size) {
    *out = NULL;
    gpufl__launch_t *l = calloc(1, sizeof *l);
    if (l == NULL || pthread_mutex_init(&l->lock, NULL) != 0) {
        free(l);
        snprintf(why, why_size, "out of memory");
        return GPUFL_ENOMEM;
    }
    l->cupti = cupti;
    l->cuda = cuda;
    l->stacks = stacks;
    snprintf(l->cuda_why, sizeof l->cuda_why, "%s", cuda_why ? cuda_why : "no libcuda");
    l->flags = flags;
    queue_init(&l->graphs, sizeof(gpufl__graph_launch_t), GPUFL_LAUNCH_QUEUE_MAX);
    queue_init(&l->syncs, sizeof(gpufl__sync_call_t), GPUFL_LAUNCH_QUEUE_MAX);
    queue_init(&l->launches, sizeof(gpufl__kernel_launch_t), GPUFL_LAUNCH_QUEUE_MAX);
    l->generation = atomic_fetch_add(&generations, 1) + 1;
    /* Large zeroed allocations come as untouched pages: memory is used only
     * as slots are written. */
    l->notes = calloc((size_t)MASK + 1, sizeof *l->notes);
    l->configs = calloc(GPUFL_LAUNCH_CONFIGS_MAX, sizeof *l->configs);
    l->slots = calloc(SLOTS, sizeof *l->slots);
    if (l->notes == NULL || l->configs == NULL || l->slots == NULL) {
        gpufl__launch_destroy(l);
        snprintf(why, why_size, "out of memory for the launch table");
        return GPUFL_ENOMEM;
    }
    int rc = gpufl__cupti_subscribe(cupti, on_call, l, want, l, why, why_size);
    if (rc != 0) {
        gpufl__launch_destroy(l);
        return rc;
    }
    l->subscribed = 1;
    *out = l;
    return 0;
}

void gpufl__launch_set_hooks(gpufl__launch_t *l, const gpufl__launch_hooks_t *hooks) {
    atomic_store_explicit(&l->hooks, hooks, memory_order_release);
}

void gpufl__launch_pause_rows(gpufl__launch_t *l, int paused) {
    if (l != NULL) atomic_store_explicit(&l->rows_paused, paused, memory_order_relaxed);
}

void gpufl__launch_set_events(gpufl__launch_t *l, gpufl__kernel_events_t *events) {
    if (l != NULL && (l->flags & GPUFL_LAUNCH_ROWS)) l->events = events;
}

const gpufl__kernel_config_t *gpufl__launch_config(gpufl__launch_t *l, uint32_t id) {
    if (l == NULL || id == 0) return NULL;
    pthread_mutex_lock(&l->lock);
    const gpufl__kernel_config_t *k = id <= l->config_count ? l->configs[id - 1] : NULL;
    pthread_mutex_unlock(&l->lock);
    return k;
}

void gpufl__launch_destroy(gpufl__launch_t *l) {
    if (l == NULL) return;
    if (l->subscribed) gpufl__cupti_unsubscribe(l->cupti); /* no callback runs after it */
    for (size_t i = 0; l->configs && i < l->config_count; i++) free_config(l->configs[i]);
    free(l->configs);
    free(l->slots);
    free(l->notes);
    queue_fini(&l->graphs);
    queue_fini(&l->syncs);
    queue_fini(&l->launches);
    pthread_mutex_destroy(&l->lock);
    free(l);
}
