// SPDX-License-Identifier: Apache-2.0
/*
 * cupti.c - CUPTI activity tracing: libcupti through dlopen, a fixed pool of
 * activity buffers that CUPTI's callbacks only take from and queue to, and
 * the parsing of completed buffers on the collector thread.
 */
#include "nvidia/cupti.h"

#include "core/clock.h"
#include "util/error.h"
#include "util/log.h"
#include "util/dl.h"

#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CUDA 13 (CUPTI API 13.0) appended fields to the kernel, memcpy and memset
 * records (isDeviceLaunched, copyCount). An older libcupti delivers the
 * previous versions, whose common prefix is the same: the appended fields
 * are read only from a library at least this new. */
#define API_VERSION_CUDA13 130000u

typedef struct cupti_fns {
    __typeof__(cuptiActivityEnable) *enable;
    __typeof__(cuptiActivityDisable) *disable;
    __typeof__(cuptiActivityRegisterCallbacks) *register_callbacks;
    __typeof__(cuptiActivityRegisterTimestampCallback) *register_timestamp;
    __typeof__(cuptiActivityGetNextRecord) *next_record;
    __typeof__(cuptiActivityGetNumDroppedRecords) *dropped_records;
    __typeof__(cuptiActivityFlushAll) *flush_all;
    __typeof__(cuptiGetResultString) *result_string;
    __typeof__(cuptiGetVersion) *get_version;
    /* API callbacks */
    __typeof__(cuptiSubscribe) *subscribe;
    __typeof__(cuptiUnsubscribe) *unsubscribe;
    __typeof__(cuptiEnableCallback) *enable_callback;
    __typeof__(cuptiEnableDomain) *enable_domain;
    __typeof__(cuptiGetCallbackName) *callback_name;
    __typeof__(cuptiActivityPushExternalCorrelationId) *push_external;
    __typeof__(cuptiActivityPopExternalCorrelationId) *pop_external;
    __typeof__(cuptiGetGraphExecId) *graph_exec_id;
    __typeof__(cuptiGetStreamIdEx) *stream_id;
} cupti_fns_t;

/* A completed buffer waiting for drain. */
typedef struct completed {
    int index;
    size_t valid_bytes;
} completed_t;

#define REASON_BYTES 256

struct gpufl__cupti {
    gpufl__dl_t dl;
    cupti_fns_t fn;
    uint32_t api_version;
    int started;
    int shared_clock;
    CUpti_SubscriberHandle subscriber; /* NULL without API callbacks */
    int callbacks_enabled;
    gpufl_cupti_api_fn api_fn; /* the subscriber's function and data */
    void *api_user;
    int state[GPUFL_CUPTI_KIND_COUNT];
    atomic_uint live; /* bit k: kind k is enabled now (gpufl__cupti_pause may turn it off) */
    char reason[GPUFL_CUPTI_KIND_COUNT][REASON_BYTES];

    /* The pool: count buffers of buffer_bytes, one allocation. free_list and
     * queue are guarded by lock; both hold at most count entries. */
    pthread_mutex_t lock;
    unsigned char *pool;
    size_t buffer_bytes;
    int count;
    int *free_list;
    int free_count;
    completed_t *queue;
    int queue_head, queue_length;
    int outstanding; /* buffers CUPTI holds */

    _Atomic uint64_t buffers_given, buffers_refused, buffers_completed, buffers_drained;
    _Atomic uint64_t records_incomplete; /* left out: no valid start and end */
    _Atomic uint64_t records, records_other, records_dropped, parse_errors;
};

/* CUPTI's buffer callbacks carry no user pointer: the started module is a
 * process global. inside counts callbacks running, so stop can wait for
 * them to leave before the module may go away. */
static _Atomic(gpufl__cupti_t *) active;
static atomic_int inside;

static const struct {
    CUpti_ActivityKind cupti;
    unsigned int flag; /* 0: always */
    const char *name;
} kinds[GPUFL_CUPTI_KIND_COUNT] = {
    [GPUFL_CUPTI_KIND_KERNEL] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, "concurrent kernels"},
    [GPUFL_CUPTI_KIND_COPY] = {CUPTI_ACTIVITY_KIND_MEMCPY, 0, "memcpy"},
    [GPUFL_CUPTI_KIND_MEMSET] = {CUPTI_ACTIVITY_KIND_MEMSET, 0, "memset"},
    [GPUFL_CUPTI_KIND_SYNC] = {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, GPUFL_CUPTI_SYNC,
                               "synchronization"},
    [GPUFL_CUPTI_KIND_ALLOC] = {CUPTI_ACTIVITY_KIND_MEMORY2, GPUFL_CUPTI_MEMORY, "memory"},
    [GPUFL_CUPTI_KIND_EXTERNAL] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, GPUFL_CUPTI_EXTERNAL,
                                   "external correlation"},
};

const char *gpufl__cupti_kind_name(gpufl__cupti_kind_t kind) {
    if ((unsigned)kind >= GPUFL_CUPTI_KIND_COUNT) return "unknown";
    return kinds[kind].name;
}

/* ---------------------------------------------------------------------- */
/* Reasons                                                                  */
/* ---------------------------------------------------------------------- */

/* What a refusal means for the user, for the results that have a cause
 * worth explaining; NULL for the others. */
static const char *explain(CUptiResult r) {
    switch (r) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        return "another CUPTI client (a profiler such as torch.profiler, Nsight Systems or "
               "another tracer) is already active in this process";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
        return "insufficient privileges: GPU profiling is restricted to administrators "
               "(driver option NVreg_RestrictProfilingToAdminUsers)";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return "insufficient privileges: profiling is not enabled for this virtual GPU";
    case CUPTI_ERROR_NOT_INITIALIZED:
        return "CUPTI could not initialise: no usable CUDA driver or device";
    case CUPTI_ERROR_NOT_COMPATIBLE: return "not compatible with an activity kind already enabled";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_KIND: return "not supported by this CUPTI or device";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED: return "not supported on a virtual GPU";
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED: return "not supported on a CMP device";
    default: return NULL;
    }
}

static const char *result_symbol(CUptiResult r) {
    switch (r) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES";
    case CUPTI_ERROR_NOT_INITIALIZED: return "CUPTI_ERROR_NOT_INITIALIZED";
    case CUPTI_ERROR_NOT_COMPATIBLE: return "CUPTI_ERROR_NOT_COMPATIBLE";
    case CUPTI_ERROR_NOT_SUPPORTED: return "CUPTI_ERROR_NOT_SUPPORTED";
    case CUPTI_ERROR_INVALID_KIND: return "CUPTI_ERROR_INVALID_KIND";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
        return "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED";
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED: return "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED";
    default: return NULL;
    }
}

/* "<what>: <explanation> (<SYMBOL>)", else CUPTI's own message and number. */
static void describe(const gpufl__cupti_t *c, CUptiResult r, const char *what, char *out,
                     size_t size) {
    const char *text = explain(r), *symbol = result_symbol(r);
    if (text != NULL) {
        snprintf(out, size, "%s: %s (%s)", what, text, symbol);
        return;
    }
    const char *message = NULL;
    if (c->fn.result_string == NULL || c->fn.result_string(r, &message) != CUPTI_SUCCESS ||
        message == NULL)
        message = "unknown CUPTI error";
    snprintf(out, size, "%s: %s (CUPTI error %d)", what, message, (int)r);
}

/* ---------------------------------------------------------------------- */
/* Loading                                                                  */
/* ---------------------------------------------------------------------- */

#define SYM(field, name)                                                                           \
    { {name}, &c->fn.field, 0, -1 }
#define REQUIRED(field, name)                                                                      \
    { {name}, &c->fn.field, 1, -1 }

static int load_symbols(gpufl__cupti_t *c, char *why, size_t why_size) {
    gpufl__dl_sym_t syms[] = {
        REQUIRED(enable, "cuptiActivityEnable"),
        REQUIRED(disable, "cuptiActivityDisable"),
        REQUIRED(register_callbacks, "cuptiActivityRegisterCallbacks"),
        REQUIRED(next_record, "cuptiActivityGetNextRecord"),
        REQUIRED(dropped_records, "cuptiActivityGetNumDroppedRecords"),
        REQUIRED(flush_all, "cuptiActivityFlushAll"),
        SYM(register_timestamp, "cuptiActivityRegisterTimestampCallback"),
        SYM(result_string, "cuptiGetResultString"),
        SYM(get_version, "cuptiGetVersion"),
        SYM(subscribe, "cuptiSubscribe"),
        SYM(unsubscribe, "cuptiUnsubscribe"),
        SYM(enable_callback, "cuptiEnableCallback"),
        SYM(enable_domain, "cuptiEnableDomain"),
        SYM(callback_name, "cuptiGetCallbackName"),
        SYM(push_external, "cuptiActivityPushExternalCorrelationId"),
        SYM(pop_external, "cuptiActivityPopExternalCorrelationId"),
        SYM(graph_exec_id, "cuptiGetGraphExecId"),
        SYM(stream_id, "cuptiGetStreamIdEx"),
    };
    return gpufl__dl_resolve(&c->dl, syms, sizeof syms / sizeof syms[0], why, why_size);
}

#define SONAMES 3
static const char *const sonames[SONAMES] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

/* The names to try: the sonames on the loader's path, then under
 * $CUDA_HOME's two CUPTI directories. paths holds the built strings. */
static void library_names(const char *names[], char paths[][GPUFL_DL_NAME_BYTES]) {
    static const char *const dirs[] = {"extras/CUPTI/lib64", "lib64"};
    const char *home = getenv("CUDA_HOME");
    int n = 0, p = 0;
    for (int i = 0; i < SONAMES; i++) names[n++] = sonames[i];
    for (int d = 0; home && home[0] && d < 2; d++) {
        for (int i = 0; i < SONAMES; i++) {
            int length =
                snprintf(paths[p], GPUFL_DL_NAME_BYTES, "%s/%s/%s", home, dirs[d], sonames[i]);
            if (length > 0 && length < GPUFL_DL_NAME_BYTES) names[n++] = paths[p++];
        }
    }
    names[n] = NULL;
}

int gpufl__cupti_open(gpufl__cupti_t **out, const char *library_path, char *why, size_t why_size) {
    const char *names[SONAMES * 3 + 1];
    char paths[SONAMES * 2][GPUFL_DL_NAME_BYTES];
    int rc;

    *out = NULL;
    gpufl__cupti_t *c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(why, why_size, "out of memory");
        return GPUFL_ENOMEM;
    }
    if (library_path == NULL || library_path[0] == '\0')
        library_path = getenv("GPUFL_CUPTI_LIBRARY");
    library_names(names, paths);
    rc = gpufl__dl_open(&c->dl, library_path, names,
                        "no CUPTI on the library path (set GPUFL_CUPTI_LIBRARY or CUDA_HOME)", why,
                        why_size);
    if (rc != 0) goto free_cupti;
    rc = load_symbols(c, why, why_size);
    if (rc != 0) goto close_library;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        snprintf(why, why_size, "cannot create a mutex");
        rc = GPUFL_ENOMEM;
        goto close_library;
    }
    if (c->fn.get_version == NULL || c->fn.get_version(&c->api_version) != CUPTI_SUCCESS)
        c->api_version = 0;
    gpufl__debug("cupti: loaded %s, API version %u%s%s", c->dl.name, c->api_version,
                 c->dl.missing[0] ? ", lacks " : "", c->dl.missing);
    *out = c;
    return 0;

close_library:
    gpufl__dl_close(&c->dl);
free_cupti:
    free(c);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* CUPTI's callbacks: take a buffer, queue a buffer                         */
/* ---------------------------------------------------------------------- */

static uint64_t CUPTIAPI timestamp_ns(void) { return (uint64_t)gpufl__mono_ns(); }

static gpufl__cupti_t *enter(void) {
    atomic_fetch_add(&inside, 1);
    gpufl__cupti_t *c = atomic_load(&active);
    if (c == NULL) atomic_fetch_sub(&inside, 1);
    return c;
}

static void leave(void) { atomic_fetch_sub(&inside, 1); }

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = NULL;
    *size = 0;
    *max_records = 0; /* as many as fit */
    gpufl__cupti_t *c = enter();
    if (c == NULL) return;
    pthread_mutex_lock(&c->lock);
    if (c->free_count > 0) {
        int index = c->free_list[--c->free_count];
        c->outstanding++;
        *buffer = c->pool + (size_t)index * c->buffer_bytes;
        *size = c->buffer_bytes;
    }
    pthread_mutex_unlock(&c->lock);
    atomic_fetch_add_explicit(*buffer ? &c->buffers_given : &c->buffers_refused, 1,
                              memory_order_relaxed);
    leave();
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid_bytes) {
    (void)context;
    (void)stream_id;
    (void)size;
    gpufl__cupti_t *c = enter();
    if (c == NULL || buffer == NULL) {
        if (c) leave();
        return;
    }
    size_t offset = (size_t)(buffer - c->pool);
    if (buffer >= c->pool && offset % c->buffer_bytes == 0 &&
        offset / c->buffer_bytes < (size_t)c->count) {
        pthread_mutex_lock(&c->lock);
        int tail = (c->queue_head + c->queue_length) % c->count;
        c->queue[tail].index = (int)(offset / c->buffer_bytes);
        c->queue[tail].valid_bytes = valid_bytes <= c->buffer_bytes ? valid_bytes : 0;
        c->queue_length++;
        c->outstanding--;
        pthread_mutex_unlock(&c->lock);
        atomic_fetch_add_explicit(&c->buffers_completed, 1, memory_order_relaxed);
    }
    leave();
}

/* ---------------------------------------------------------------------- */
/* Converting records                                                       */
/* ---------------------------------------------------------------------- */

/* Copies a record of size bytes into dst, all of it from a CUPTI of CUDA 13
 * or later, else only the prefix before cuda13_field (the fields CUDA 13
 * appended read as 0). */
static void copy_versioned(const gpufl__cupti_t *c, const CUpti_Activity *record, void *dst,
                           size_t size, size_t cuda13_field) {
    memset(dst, 0, size);
    memcpy(dst, record, c->api_version >= API_VERSION_CUDA13 ? size : cuda13_field);
}

/* A record whose GPU work is not timed (yet): a forced flush hands back
 * records still in flight with a zero timestamp. Counted, and left out. */
static int incomplete(gpufl__cupti_t *c, uint64_t start, uint64_t end) {
    if (start != 0 && end != 0 && end >= start) return 0;
    atomic_fetch_add_explicit(&c->records_incomplete, 1, memory_order_relaxed);
    return 1;
}

static void read_kernel(gpufl__cupti_t *c, const CUpti_Activity *record,
                        const gpufl__cupti_sink_t *sink, void *user) {
    CUpti_ActivityKernel10 k;
    copy_versioned(c, record, &k, sizeof k, offsetof(CUpti_ActivityKernel10, isDeviceLaunched));
    if (incomplete(c, k.start, k.end)) return;
    gpufl__cupti_kernel_t out = {
        .start_ns = (int64_t)k.start,
        .end_ns = (int64_t)k.end,
        .device_id = k.deviceId,
        .context_id = k.contextId,
        .stream_id = k.streamId,
        .correlation_id = k.correlationId,
        .grid_x = k.gridX,
        .grid_y = k.gridY,
        .grid_z = k.gridZ,
        .block_x = k.blockX,
        .block_y = k.blockY,
        .block_z = k.blockZ,
        .cluster_x = k.clusterX,
        .cluster_y = k.clusterY,
        .cluster_z = k.clusterZ,
        .registers_per_thread = k.registersPerThread,
        .static_shared_bytes = k.staticSharedMemory,
        .dynamic_shared_bytes = k.dynamicSharedMemory,
        .local_bytes_per_thread = k.localMemoryPerThread,
        .local_bytes_total = k.localMemoryTotal_v2 ? k.localMemoryTotal_v2 : k.localMemoryTotal,
        .shared_bytes_executed = k.sharedMemoryExecuted,
        .grid_id = k.gridId,
        .graph_id = k.graphId,
        .graph_node_id = k.graphNodeId,
        .launch_type = k.launchType,
        .device_launched = k.isDeviceLaunched,
        .name = k.name ? k.name : "",
    };
    if (sink->kernel) sink->kernel(user, &out);
}

static void read_copy(gpufl__cupti_t *c, const CUpti_Activity *record,
                      const gpufl__cupti_sink_t *sink, void *user) {
    CUpti_ActivityMemcpy6 m;
    copy_versioned(c, record, &m, sizeof m, offsetof(CUpti_ActivityMemcpy6, isDeviceLaunched));
    if (incomplete(c, m.start, m.end)) return;
    gpufl__cupti_copy_t out = {
        .start_ns = (int64_t)m.start,
        .end_ns = (int64_t)m.end,
        .device_id = m.deviceId,
        .context_id = m.contextId,
        .stream_id = m.streamId,
        .correlation_id = m.correlationId,
        .bytes = m.bytes,
        .copy_kind = m.copyKind,
        .src_kind = m.srcKind,
        .dst_kind = m.dstKind,
        .async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0,
        .graph_id = m.graphId,
        .graph_node_id = m.graphNodeId,
        .copy_count = m.copyCount,
    };
    if (sink->copy) sink->copy(user, &out);
}

static void read_memset(gpufl__cupti_t *c, const CUpti_Activity *record,
                        const gpufl__cupti_sink_t *sink, void *user) {
    CUpti_ActivityMemset4 m;
    copy_versioned(c, record, &m, sizeof m, offsetof(CUpti_ActivityMemset4, isDeviceLaunched));
    if (incomplete(c, m.start, m.end)) return;
    gpufl__cupti_memset_t out = {
        .start_ns = (int64_t)m.start,
        .end_ns = (int64_t)m.end,
        .device_id = m.deviceId,
        .context_id = m.contextId,
        .stream_id = m.streamId,
        .correlation_id = m.correlationId,
        .bytes = m.bytes,
        .value = m.value,
        .memory_kind = m.memoryKind,
        .async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0,
        .graph_id = m.graphId,
        .graph_node_id = m.graphNodeId,
    };
    if (sink->memset) sink->memset(user, &out);
}

static void read_sync(const CUpti_Activity *record, const gpufl__cupti_sink_t *sink, void *user) {
    CUpti_ActivitySynchronization2 s;
    memcpy(&s, record, sizeof s);
    gpufl__cupti_sync_t out = {
        .start_ns = (int64_t)s.start,
        .end_ns = (int64_t)s.end,
        .type = (uint32_t)s.type,
        .context_id = s.contextId,
        .stream_id = s.streamId,
        .correlation_id = s.correlationId,
        .cuda_event_id = s.cudaEventId,
        .cuda_event_sync_id = s.cudaEventSyncId,
        .return_value = s.returnValue,
    };
    if (sink->sync) sink->sync(user, &out);
}

static void read_alloc(const CUpti_Activity *record, const gpufl__cupti_sink_t *sink, void *user) {
    CUpti_ActivityMemory4 m;
    memcpy(&m, record, sizeof m);
    gpufl__cupti_alloc_t out = {
        .timestamp_ns = (int64_t)m.timestamp,
        .operation = (uint32_t)m.memoryOperationType,
        .memory_kind = (uint32_t)m.memoryKind,
        .device_id = m.deviceId,
        .context_id = m.contextId,
        .stream_id = m.streamId,
        .correlation_id = m.correlationId,
        .process_id = m.processId,
        .address = m.address,
        .bytes = m.bytes,
        .pc = m.PC,
        .async = m.isAsync,
        .pool_type = (uint32_t)m.memoryPoolConfig.memoryPoolType,
        .pool_address = m.memoryPoolConfig.address,
    };
    if (sink->alloc) sink->alloc(user, &out);
}

static void read_external(const CUpti_Activity *record, const gpufl__cupti_sink_t *sink,
                          void *user) {
    CUpti_ActivityExternalCorrelation e;
    memcpy(&e, record, sizeof e);
    gpufl__cupti_external_t out = {
        .external_kind = (uint32_t)e.externalKind,
        .external_id = e.externalId,
        .correlation_id = e.correlationId,
    };
    if (sink->external) sink->external(user, &out);
}

/* Returns 1 when the record was one we read. */
static int read_record(gpufl__cupti_t *c, const CUpti_Activity *record,
                       const gpufl__cupti_sink_t *sink, void *user) {
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL: /* same layout; never enabled by us */
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: read_kernel(c, record, sink, user); return 1;
    case CUPTI_ACTIVITY_KIND_MEMCPY: read_copy(c, record, sink, user); return 1;
    case CUPTI_ACTIVITY_KIND_MEMSET: read_memset(c, record, sink, user); return 1;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: read_sync(record, sink, user); return 1;
    case CUPTI_ACTIVITY_KIND_MEMORY2: read_alloc(record, sink, user); return 1;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: read_external(record, sink, user); return 1;
    default: return 0;
    }
}

static void report_dropped(gpufl__cupti_t *c, const gpufl__cupti_sink_t *sink, void *user) {
    size_t dropped = 0;
    if (c->fn.dropped_records(NULL, 0, &dropped) != CUPTI_SUCCESS || dropped == 0) return;
    atomic_fetch_add_explicit(&c->records_dropped, dropped, memory_order_relaxed);
    if (sink->dropped) sink->dropped(user, dropped);
}

static uint64_t parse_buffer(gpufl__cupti_t *c, uint8_t *buffer, size_t valid_bytes,
                             const gpufl__cupti_sink_t *sink, void *user) {
    uint64_t delivered = 0, other = 0;
    CUpti_Activity *record = NULL;
    while (valid_bytes > 0) {
        CUptiResult r = c->fn.next_record(buffer, valid_bytes, &record);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
        if (r != CUPTI_SUCCESS || record == NULL) {
            atomic_fetch_add_explicit(&c->parse_errors, 1, memory_order_relaxed);
            break;
        }
        if (read_record(c, record, sink, user))
            delivered++;
        else
            other++;
    }
    atomic_fetch_add_explicit(&c->records, delivered, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->records_other, other, memory_order_relaxed);
    return delivered;
}

uint64_t gpufl__cupti_drain(gpufl__cupti_t *c, const gpufl__cupti_sink_t *sink, void *user) {
    static const gpufl__cupti_sink_t discard = {0};
    uint64_t delivered = 0;
    if (c == NULL || c->pool == NULL) return 0;
    if (sink == NULL) sink = &discard;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        if (c->queue_length == 0) {
            pthread_mutex_unlock(&c->lock);
            break;
        }
        completed_t entry = c->queue[c->queue_head];
        c->queue_head = (c->queue_head + 1) % c->count;
        c->queue_length--;
        pthread_mutex_unlock(&c->lock);

        uint8_t *buffer = c->pool + (size_t)entry.index * c->buffer_bytes;
        delivered += parse_buffer(c, buffer, entry.valid_bytes, sink, user);
        report_dropped(c, sink, user);

        pthread_mutex_lock(&c->lock);
        c->free_list[c->free_count++] = entry.index;
        pthread_mutex_unlock(&c->lock);
        atomic_fetch_add_explicit(&c->buffers_drained, 1, memory_order_relaxed);
    }
    /* Drops happen also when no buffer completes at all (the pool empty). */
    report_dropped(c, sink, user);
    return delivered;
}

/* ---------------------------------------------------------------------- */
/* Start and stop                                                           */
/* ---------------------------------------------------------------------- */

static void free_pool(gpufl__cupti_t *c) {
    free(c->pool);
    free(c->free_list);
    free(c->queue);
    c->pool = NULL;
    c->free_list = NULL;
    c->queue = NULL;
    c->count = 0;
}

static int alloc_pool(gpufl__cupti_t *c, size_t buffer_bytes, int count) {
    c->buffer_bytes = buffer_bytes;
    c->count = count;
    /* CUPTI requires 8-byte aligned buffers. */
    c->pool = aligned_alloc(8, buffer_bytes * (size_t)count);
    c->free_list = calloc((size_t)count, sizeof *c->free_list);
    c->queue = calloc((size_t)count, sizeof *c->queue);
    if (c->pool == NULL || c->free_list == NULL || c->queue == NULL) {
        free_pool(c);
        return GPUFL_ENOMEM;
    }
    /* Handed out from the end of free_list: buffer 0 first. */
    for (int i = 0; i < count; i++) c->free_list[i] = count - 1 - i;
    c->free_count = count;
    c->queue_head = c->queue_length = 0;
    c->outstanding = 0;
    return 0;
}

static int read_config(const gpufl__cupti_config_t *cfg, size_t *buffer_bytes, int *count,
                       unsigned int *flags) {
    gpufl__cupti_config_t v = {0};
    if (cfg != NULL) {
        if (cfg->size < sizeof cfg->size) return GPUFL_EINVAL;
        memcpy(&v, cfg, cfg->size < sizeof v ? cfg->size : sizeof v);
    }
    *buffer_bytes =
        v.buffer_bytes ? (v.buffer_bytes + 7) & ~(size_t)7 : GPUFL_CUPTI_BUFFER_BYTES_DEFAULT;
    *count = v.buffer_count ? v.buffer_count : GPUFL_CUPTI_BUFFER_COUNT_DEFAULT;
    *flags = v.flags;
    if (*buffer_bytes < GPUFL_CUPTI_BUFFER_BYTES_MIN || *count < 1 ||
        *buffer_bytes > GPUFL_CUPTI_POOL_BYTES_MAX / (size_t)*count)
        return GPUFL_EINVAL;
    return 0;
}

/* Disables what is on, completes every buffer CUPTI holds and drains. */
static void wind_down(gpufl__cupti_t *c, const gpufl__cupti_sink_t *sink, void *user) {
    for (int k = 0; k < GPUFL_CUPTI_KIND_COUNT; k++)
        if (c->state[k] == GPUFL_CUPTI_ON) c->fn.disable(kinds[k].cupti);
    c->fn.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    gpufl__cupti_drain(c, sink, user);
    atomic_store(&active, NULL);
    while (atomic_load(&inside) != 0) sched_yield();
    gpufl__cupti_drain(c, sink, user);
    c->started = 0;
    pthread_mutex_lock(&c->lock);
    int outstanding = c->outstanding;
    pthread_mutex_unlock(&c->lock);
    if (outstanding == 0) {
        free_pool(c);
    } else {
        /* CUPTI may still write into them: the pool is never freed. */
        gpufl__warn("cupti: %d activity buffers not returned by CUPTI; kept", outstanding);
        c->pool = NULL;
        c->free_list = NULL;
        c->queue = NULL;
    }
}

int gpufl__cupti_start(gpufl__cupti_t *c, const gpufl__cupti_config_t *cfg, char *why,
                       size_t why_size) {
    size_t buffer_bytes;
    int count, rc;
    unsigned int flags;
    CUptiResult r;

    if (c == NULL || read_config(cfg, &buffer_bytes, &count, &flags) != 0) {
        snprintf(why, why_size, "invalid CUPTI configuration");
        return GPUFL_EINVAL;
    }
    gpufl__cupti_t *expected = NULL;
    if (c->started || !atomic_compare_exchange_strong(&active, &expected, c)) {
        snprintf(why, why_size, "CUPTI tracing is already started in this process");
        return GPUFL_EALREADY;
    }
    /* The callbacks see the module from here on; the pool is in place
     * before CUPTI can ask for a buffer (it asks after the first enable). */
    rc = alloc_pool(c, buffer_bytes, count);
    if (rc != 0) {
        snprintf(why, why_size, "cannot allocate %d CUPTI buffers of %zu bytes", count,
                 buffer_bytes);
        goto clear_active;
    }
    atomic_store(&c->buffers_given, 0);
    atomic_store(&c->buffers_refused, 0);
    atomic_store(&c->records_incomplete, 0);
    atomic_store(&c->buffers_completed, 0);
    atomic_store(&c->buffers_drained, 0);
    atomic_store(&c->records, 0);
    atomic_store(&c->records_other, 0);
    atomic_store(&c->records_dropped, 0);
    atomic_store(&c->parse_errors, 0);
    memset(c->state, 0, sizeof c->state);
    atomic_store(&c->live, 0);
    memset(c->reason, 0, sizeof c->reason);

    r = c->fn.register_callbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
        describe(c, r, "cuptiActivityRegisterCallbacks", why, why_size);
        rc = GPUFL_ENOTSUP;
        goto free_buffer_pool;
    }
    /* Before any kind is enabled, so every record is on our clock. */
    c->shared_clock =
        c->fn.register_timestamp != NULL && c->fn.register_timestamp(timestamp_ns) == CUPTI_SUCCESS;

    for (int k = 0; k < GPUFL_CUPTI_KIND_COUNT; k++) {
        if (kinds[k].flag != 0 && !(flags & kinds[k].flag)) continue;
        if (flags & GPUFL_CUPTI_NO_ACTIVITY) continue;
        if ((flags & GPUFL_CUPTI_KERNELS_ONLY) && k != GPUFL_CUPTI_KIND_KERNEL) continue;
        r = c->fn.enable(kinds[k].cupti);
        if (r == CUPTI_SUCCESS) {
            c->state[k] = GPUFL_CUPTI_ON;
            atomic_fetch_or(&c->live, 1u << k);
            continue;
        }
        c->state[k] = GPUFL_CUPTI_REFUSED;
        describe(c, r, kinds[k].name, c->reason[k], sizeof c->reason[k]);
        gpufl__debug("cupti: %s", c->reason[k]);
        if (k == GPUFL_CUPTI_KIND_KERNEL && !(flags & GPUFL_CUPTI_KERNEL_OPTIONAL)) {
            snprintf(why, why_size, "%s", c->reason[k]);
            wind_down(c, NULL, NULL);
            return GPUFL_ENOTSUP;
        }
    }
    c->started = 1;
    return 0;

free_buffer_pool:
    free_pool(c);
clear_active:
    atomic_store(&active, NULL);
    return rc;
}

void gpufl__cupti_stop(gpufl__cupti_t *c, const gpufl__cupti_sink_t *sink, void *user) {
    if (c == NULL || !c->started) return;
    wind_down(c, sink, user);
}

int gpufl__cupti_pause(gpufl__cupti_t *c, int paused) {
    if (c == NULL || !c->started) return 0;
    int rc = 0;
    for (int k = 0; k < GPUFL_CUPTI_KIND_COUNT; k++) {
        if (c->state[k] != GPUFL_CUPTI_ON) continue;
        CUptiResult r = paused ? c->fn.disable(kinds[k].cupti) : c->fn.enable(kinds[k].cupti);
        if (r == CUPTI_SUCCESS) {
            if (paused)
                atomic_fetch_and(&c->live, ~(1u << k));
            else
                atomic_fetch_or(&c->live, 1u << k);
            continue;
        }
        char reason[REASON_BYTES];
        describe(c, r, kinds[k].name, reason, sizeof reason);
        rc = gpufl__set_error(GPUFL_EIO, "%s", reason);
    }
    return rc;
}

int gpufl__cupti_flush(gpufl__cupti_t *c, int force) {
    if (c == NULL || !c->started) return 0;
    CUptiResult r = c->fn.flush_all(force ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    if (r == CUPTI_SUCCESS) return 0;
    char reason[REASON_BYTES];
    describe(c, r, "cuptiActivityFlushAll", reason, sizeof reason);
    return gpufl__set_error(GPUFL_EIO, "%s", reason);
}

int gpufl__cupti_pool_low(gpufl__cupti_t *c) {
    if (c == NULL || c->pool == NULL) return 0;
    pthread_mutex_lock(&c->lock);
    int low = c->outstanding * 2 >= c->count;
    pthread_mutex_unlock(&c->lock);
    return low;
}

void gpufl__cupti_close(gpufl__cupti_t *c) {
    if (c == NULL) return;
    gpufl__cupti_unsubscribe(c);
    gpufl__cupti_stop(c, NULL, NULL);
    pthread_mutex_destroy(&c->lock);
    gpufl__dl_close(&c->dl);
    free(c);
}

/* ---------------------------------------------------------------------- */
/* API callbacks                                                            */
/* ---------------------------------------------------------------------- */

/* The external-correlation kinds looked at, in order: the three CUPTI keeps
 * for frameworks. Each look is a pop and a push on CUPTI's per-thread stack
 * and costs about 0.25 us on an H100 host (measured: five kinds added 1.2 us
 * a launch), so UNKNOWN and OPENACC are left out. */
static const CUpti_ExternalCorrelationKind external_kinds[] = {
    CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, /* gpufl_ops.h (gpufl.torch) first: its calls */
    CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1};

/* The module whose subscriber runs, and the API callbacks inside it now:
 * unsubscribe clears the one and waits for the other, so that no callback
 * touches the subscriber's data after it returns, even one CUPTI began
 * just before. Such a late callback may also find the next module owning:
 * a module is made owner only once its subscriber's data is complete.
 * Sequentially consistent on both sides: the callback's increment then
 * load, and unsubscribe's store then load, must not pass each other. */
static _Atomic(gpufl__cupti_t *) api_owner;
static atomic_int api_inside;

/* CUPTI's callback type, forwarding to the subscriber's untyped one. */
static void CUPTIAPI api_trampoline(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                    const void *cbdata) {
    (void)user;
    atomic_fetch_add(&api_inside, 1);
    gpufl__cupti_t *c = atomic_load(&api_owner);
    if (c != NULL) c->api_fn(c->api_user, (int)domain, cbid, cbdata);
    atomic_fetch_sub_explicit(&api_inside, 1, memory_order_release);
}

/* Ends the owner's ownership: no callback is inside its subscriber once this
 * returns. */
static void disown(void) {
    atomic_store(&api_owner, NULL);
    while (atomic_load(&api_inside) != 0) sched_yield();
}

#define API_CBIDS 4096

int gpufl__cupti_subscribe(gpufl__cupti_t *c, gpufl_cupti_api_fn fn, void *user,
                           gpufl_cupti_want_fn want, void *want_user, char *why, size_t why_size) {
    if (c->subscriber != NULL) {
        snprintf(why, why_size, "API callbacks: already subscribed");
        return GPUFL_EALREADY;
    }
    if (c->fn.subscribe == NULL || c->fn.enable_callback == NULL || c->fn.unsubscribe == NULL ||
        c->fn.callback_name == NULL) {
        snprintf(why, why_size, "API callbacks: %s lacks the callback API", c->dl.name);
        return GPUFL_ENOTSUP;
    }
    /* What is wanted is settled (want fills the subscriber's tables) before
     * the module owns the callbacks. Callback ids run from 1 up; CUPTI
     * answers INVALID_PARAMETER past the last one it knows (a newer CUPTI
     * may know more than our headers). */
    unsigned char wanted[API_CBIDS / 8] = {0};
    for (uint32_t cbid = 1; cbid < API_CBIDS; cbid++) {
        const char *name = NULL;
        if (c->fn.callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS) {
            if (cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) break;
            continue;
        }
        if (name != NULL && want(name, cbid, want_user))
            wanted[cbid / 8] |= (unsigned char)(1u << (cbid % 8));
    }
    c->api_fn = fn;
    c->api_user = user;
    gpufl__cupti_t *expected = NULL;
    if (!atomic_compare_exchange_strong(&api_owner, &expected, c)) {
        snprintf(why, why_size, "API callbacks: already subscribed in this process");
        return GPUFL_EALREADY;
    }
    CUpti_SubscriberHandle subscriber = NULL;
    CUptiResult r = c->fn.subscribe(&subscriber, api_trampoline, NULL);
    if (r != CUPTI_SUCCESS) {
        disown(); /* a late callback may be inside: user's data goes when we return */
        describe(c, r, "API callbacks", why, why_size);
        return GPUFL_ENOTSUP;
    }
    c->subscriber = subscriber;
    c->callbacks_enabled = 0;
    for (uint32_t cbid = 1; cbid < API_CBIDS; cbid++)
        if ((wanted[cbid / 8] >> (cbid % 8) & 1) &&
            c->fn.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid) == CUPTI_SUCCESS)
            c->callbacks_enabled++;
    gpufl__debug("cupti: %d driver API callbacks enabled", c->callbacks_enabled);
    return 0;
}

void gpufl__cupti_unsubscribe(gpufl__cupti_t *c) {
    if (c == NULL || c->subscriber == NULL) return;
    atomic_store(&api_owner, NULL);
    c->fn.unsubscribe(c->subscriber);
    disown();
    c->subscriber = NULL;
    c->callbacks_enabled = 0;
}

void gpufl__cupti_after_fork_child(void) {
    /* The parent's module and subscription are not the child's: callbacks
     * CUPTI may still run in the child find no owner. */
    atomic_store(&api_owner, NULL);
    atomic_store(&api_inside, 0);
    atomic_store(&active, NULL);
    atomic_store(&inside, 0);
}

int gpufl__cupti_callbacks_enabled(const gpufl__cupti_t *c) { return c ? c->callbacks_enabled : 0; }

int gpufl__cupti_enable_resource(gpufl__cupti_t *c, char *why, size_t why_size) {
    if (c->subscriber == NULL) {
        snprintf(why, why_size, "resource callbacks: not subscribed");
        return GPUFL_EINVAL;
    }
    if (c->fn.enable_domain == NULL) {
        snprintf(why, why_size, "resource callbacks: %s lacks cuptiEnableDomain", c->dl.name);
        return GPUFL_ENOTSUP;
    }
    CUptiResult r = c->fn.enable_domain(1, c->subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    if (r != CUPTI_SUCCESS) {
        describe(c, r, "resource callbacks", why, why_size);
        return GPUFL_ENOTSUP;
    }
    return 0;
}

void *gpufl__cupti_symbol(const gpufl__cupti_t *c, const char *name) {
    return c && c->dl.handle ? dlsym(c->dl.handle, name) : NULL;
}

/* CUPTI has no peek: the id is popped and pushed straight back, on the
 * calling thread's own stack. */
int gpufl__cupti_peek_external(const gpufl__cupti_t *c, uint32_t *kind, uint64_t *id) {
    if (c->fn.pop_external == NULL || c->fn.push_external == NULL) return 0;
    for (size_t i = 0; i < sizeof external_kinds / sizeof external_kinds[0]; i++) {
        uint64_t value = 0;
        if (c->fn.pop_external(external_kinds[i], &value) != CUPTI_SUCCESS) continue;
        c->fn.push_external(external_kinds[i], value);
        *kind = (uint32_t)external_kinds[i];
        *id = value;
        return 1;
    }
    return 0;
}

/* Framework op ids (gpufl_ops.h) go straight to libcupti's functions, which
 * stay valid for the life of the process (libcupti is never unloaded), as
 * ops.c asks of its hooks' user pointer. */
static struct {
    __typeof__(cuptiActivityPushExternalCorrelationId) *push;
    __typeof__(cuptiActivityPopExternalCorrelationId) *pop;
} ops_fns;

static int ops_push(void *user, uint64_t id) {
    (void)user;
    __typeof__(ops_fns.push) push = __atomic_load_n(&ops_fns.push, __ATOMIC_ACQUIRE);
    return push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, id) == CUPTI_SUCCESS ? 0 : -1;
}

static int ops_pop(void *user, uint64_t *id) {
    (void)user;
    __typeof__(ops_fns.pop) pop = __atomic_load_n(&ops_fns.pop, __ATOMIC_ACQUIRE);
    return pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, id) == CUPTI_SUCCESS ? 0 : -1;
}

const gpufl__ops_hooks_t *gpufl__cupti_ops_hooks(const gpufl__cupti_t *c) {
    static const gpufl__ops_hooks_t hooks = {ops_push, ops_pop, NULL};
    if (c->fn.push_external == NULL || c->fn.pop_external == NULL) return NULL;
    /* One libcupti per process, the same each session; atomic all the same:
     * a pop of a call that began in the last session may read them now. */
    __atomic_store_n(&ops_fns.push, c->fn.push_external, __ATOMIC_RELEASE);
    __atomic_store_n(&ops_fns.pop, c->fn.pop_external, __ATOMIC_RELEASE);
    return &hooks;
}

int64_t gpufl__cupti_stream_id(const gpufl__cupti_t *c, void *context, void *stream,
                               int per_thread) {
    uint32_t id = 0;
    if (c->fn.stream_id == NULL ||
        c->fn.stream_id((CUcontext)context, (CUstream)stream, (uint8_t)(per_thread != 0), &id) !=
            CUPTI_SUCCESS)
        return -1;
    return id;
}

uint32_t gpufl__cupti_graph_exec_id(const gpufl__cupti_t *c, void *graph_exec) {
    uint32_t id = 0;
    if (c->fn.graph_exec_id == NULL ||
        c->fn.graph_exec_id((CUgraphExec)graph_exec, &id) != CUPTI_SUCCESS)
        return 0;
    return id;
}

/* ---------------------------------------------------------------------- */
/* Queries                                                                  */
/* ---------------------------------------------------------------------- */

int gpufl__cupti_kind_state(const gpufl__cupti_t *c, gpufl__cupti_kind_t kind,
                            const char **reason) {
    if (reason) *reason = "";
    if (c == NULL || (unsigned)kind >= GPUFL_CUPTI_KIND_COUNT) return GPUFL_CUPTI_OFF;
    if (reason) *reason = c->reason[kind];
    return c->state[kind];
}

int gpufl__cupti_kind_live(gpufl__cupti_t *c, gpufl__cupti_kind_t kind) {
    if (c == NULL || (unsigned)kind >= GPUFL_CUPTI_KIND_COUNT) return 0;
    return (atomic_load(&c->live) >> kind) & 1u;
}

void gpufl__cupti_stats(gpufl__cupti_stats_t *out, const gpufl__cupti_t *c) {
    memset(out, 0, sizeof *out);
    if (c == NULL) return;
    out->buffers_given = atomic_load(&c->buffers_given);
    out->buffers_refused = atomic_load(&c->buffers_refused);
    out->buffers_completed = atomic_load(&c->buffers_completed);
    out->buffers_drained = atomic_load(&c->buffers_drained);
    out->records = atomic_load(&c->records);
    out->records_other = atomic_load(&c->records_other);
    out->records_dropped = atomic_load(&c->records_dropped);
    out->parse_errors = atomic_load(&c->parse_errors);
    out->records_incomplete = atomic_load(&c->records_incomplete);
}

int gpufl__cupti_shared_clock(const gpufl__cupti_t *c) { return c ? c->shared_clock : 0; }

const char *gpufl__cupti_library(const gpufl__cupti_t *c) { return c ? c->dl.name : ""; }

uint32_t gpufl__cupti_api_version(const gpufl__cupti_t *c) { return c ? c->api_version : 0; }
