// SPDX-License-Identifier: Apache-2.0
/*
 * cupti.h - the Trace engine's CUPTI activity source: libcupti loaded with
 * dlopen, activity buffers from a fixed pool, records converted to small
 * fixed structs on the collector thread.
 *
 * Contract
 * - libcupti is never linked. It is opened from the path given to open, else
 *   $GPUFL_CUPTI_LIBRARY, else libcupti.so.13, .so.12, .so (the loader's
 *   search path, then $CUDA_HOME/extras/CUPTI/lib64 and $CUDA_HOME/lib64).
 *   The toolkit's own headers give the types and record layouts only; every
 *   function is called through a pointer typed from its declaration there.
 * - Records read are the ones CUDA 13's cupti_activity.h (CUPTI_API_VERSION
 *   130001) defines as current: CUpti_ActivityKernel10 (CONCURRENT_KERNEL),
 *   CUpti_ActivityMemcpy6, CUpti_ActivityMemset4, CUpti_ActivitySynchronization2,
 *   CUpti_ActivityMemory4 (MEMORY2), CUpti_ActivityExternalCorrelation.
 *   The serialising CUPTI_ACTIVITY_KIND_KERNEL is never enabled.
 * - Timestamps: the timestamp callback (where the library has it) returns
 *   CLOCK_MONOTONIC ns, so GPU records share the clock of CPU records.
 *   Without it (CUPTI before 12.x) start/end are CUPTI's own clock and
 *   gpufl__cupti_shared_clock() says 0.
 * - Threads: CUPTI's buffer callbacks only take a buffer from the pool or
 *   queue a completed one, under a short mutex; records are parsed by
 *   gpufl__cupti_drain on the collector thread. open/start/stop/close are
 *   for one owner thread; drain and flush may be called from any one thread
 *   (the collector) while CUPTI completes buffers on its own threads. At most
 *   one module is started per process (CUPTI's callbacks carry no user data).
 */
#ifndef GPUFL_NVIDIA_CUPTI_H
#define GPUFL_NVIDIA_CUPTI_H

#include <stddef.h>
#include "core/ops.h"

#include <stdint.h>

typedef struct gpufl__cupti gpufl__cupti_t;

/* Optional activity kinds, bits of gpufl__cupti_config_t.flags. */
#define GPUFL_CUPTI_SYNC     (1u << 0) /* CUPTI_ACTIVITY_KIND_SYNCHRONIZATION */
#define GPUFL_CUPTI_MEMORY   (1u << 1) /* CUPTI_ACTIVITY_KIND_MEMORY2: allocations and frees */
#define GPUFL_CUPTI_EXTERNAL (1u << 2) /* CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION */
/* No activity kind at all: buffers and the clock are set up, nothing is
 * enabled. The PC sampling engine needs it: with CUPTI's activity kinds on,
 * its PC records go partly or wholly to the non-user count (measured on an
 * H100, docs/design/pc-sampling.md). */
#define GPUFL_CUPTI_NO_ACTIVITY (1u << 3)
/* Concurrent kernels only: no copy or memset kind (a candidate of PcSampling
 * with Trace's kernel times, docs/design/pcs-with-trace.md). */
#define GPUFL_CUPTI_KERNELS_ONLY (1u << 4)
/* The concurrent-kernel kind refused at start is not an error: the session
 * goes on without kernel records (PcSampling's `late`, where PC sampling may
 * already be enabled on a context: CUPTI refuses the kind then). */
#define GPUFL_CUPTI_KERNEL_OPTIONAL (1u << 5)

#define GPUFL_CUPTI_BUFFER_BYTES_DEFAULT ((size_t)1 << 20) /* 1 MiB */
#define GPUFL_CUPTI_BUFFER_COUNT_DEFAULT 8                 /* 8 MiB pool */
#define GPUFL_CUPTI_BUFFER_BYTES_MIN     ((size_t)4096)
#define GPUFL_CUPTI_POOL_BYTES_MAX       ((size_t)1 << 30) /* hard cap on the pool */

/* Options of start. Starts with its own size; fields are only appended.
 * Zeroed fields take the defaults. */
typedef struct gpufl__cupti_config {
    size_t size;         /* sizeof(gpufl__cupti_config_t) */
    size_t buffer_bytes; /* bytes per buffer (rounded up to 8), 0: 1 MiB */
    int buffer_count;    /* buffers in the pool, 0: 8 */
    unsigned int flags;  /* GPUFL_CUPTI_* */
} gpufl__cupti_config_t;

/* The kinds this module enables, for the per-kind state. */
typedef enum gpufl__cupti_kind {
    GPUFL_CUPTI_KIND_KERNEL,   /* CONCURRENT_KERNEL, always */
    GPUFL_CUPTI_KIND_COPY,     /* MEMCPY, always */
    GPUFL_CUPTI_KIND_MEMSET,   /* MEMSET, always */
    GPUFL_CUPTI_KIND_SYNC,     /* GPUFL_CUPTI_SYNC */
    GPUFL_CUPTI_KIND_ALLOC,    /* GPUFL_CUPTI_MEMORY */
    GPUFL_CUPTI_KIND_EXTERNAL, /* GPUFL_CUPTI_EXTERNAL */
    GPUFL_CUPTI_KIND_COUNT
} gpufl__cupti_kind_t;

/* State of one kind after start. */
#define GPUFL_CUPTI_OFF     0  /* not asked for */
#define GPUFL_CUPTI_ON      1  /* enabled */
#define GPUFL_CUPTI_REFUSED -1 /* enabling failed; the reason says why */

/* All timestamps are ns, on CLOCK_MONOTONIC when gpufl__cupti_shared_clock(). */

typedef struct gpufl__cupti_kernel {
    int64_t start_ns, end_ns;
    uint32_t device_id, context_id, stream_id, correlation_id;
    int32_t grid_x, grid_y, grid_z;
    int32_t block_x, block_y, block_z;
    uint32_t cluster_x, cluster_y, cluster_z; /* 0 without clusters */
    uint16_t registers_per_thread;
    int32_t static_shared_bytes, dynamic_shared_bytes; /* per block */
    uint32_t local_bytes_per_thread;                   /* spills and stack */
    uint64_t local_bytes_total;                        /* reserved for the launch */
    uint32_t shared_bytes_executed;                    /* shared memory config the SM ran with */
    int64_t grid_id;
    uint32_t graph_id;      /* 0 when not launched by a graph */
    uint64_t graph_node_id; /* 0 when not launched by a graph */
    uint8_t launch_type;    /* CUpti_ActivityLaunchType: regular, cooperative ... */
    uint8_t device_launched;
    const char *name; /* mangled; valid only during the sink call */
} gpufl__cupti_kernel_t;

typedef struct gpufl__cupti_copy {
    int64_t start_ns, end_ns;
    uint32_t device_id, context_id, stream_id, correlation_id;
    uint64_t bytes;
    uint8_t copy_kind; /* CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD, 9 HtoH, ... */
    uint8_t src_kind;  /* CUpti_ActivityMemoryKind: 1 pageable, 2 pinned, 3 device, ... */
    uint8_t dst_kind;  /* same */
    uint8_t async;     /* CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC */
    uint32_t graph_id; /* 0 when not in a graph */
    uint64_t graph_node_id;
    uint64_t copy_count; /* copies a batched record stands for (1 or 0: one) */
} gpufl__cupti_copy_t;

typedef struct gpufl__cupti_memset {
    int64_t start_ns, end_ns;
    uint32_t device_id, context_id, stream_id, correlation_id;
    uint64_t bytes;
    uint32_t value;
    uint16_t memory_kind; /* CUpti_ActivityMemoryKind */
    uint8_t async;        /* CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC */
    uint32_t graph_id;
    uint64_t graph_node_id;
} gpufl__cupti_memset_t;

/* CUPTI gives stream_id and cuda_event_id as CUPTI_SYNCHRONIZATION_INVALID_VALUE
 * where the type has none (a context synchronize has neither). */
typedef struct gpufl__cupti_sync {
    int64_t start_ns, end_ns; /* the host thread is blocked between them */
    uint32_t type;            /* CUpti_ActivitySynchronizationType: 1 event, 2 stream wait event,
                                 3 stream, 4 context */
    uint32_t context_id, stream_id, correlation_id;
    uint32_t cuda_event_id;
    uint64_t cuda_event_sync_id;
    uint32_t return_value; /* the CUDA API's result */
} gpufl__cupti_sync_t;

typedef struct gpufl__cupti_alloc {
    int64_t timestamp_ns;
    uint32_t operation;   /* CUpti_ActivityMemoryOperationType: 1 allocation, 2 release */
    uint32_t memory_kind; /* CUpti_ActivityMemoryKind */
    uint32_t device_id, context_id, stream_id, correlation_id, process_id;
    uint64_t address, bytes, pc;
    uint32_t async;     /* cudaMallocAsync / cudaFreeAsync */
    uint32_t pool_type; /* CUpti_ActivityMemoryPoolType; 0 outside a pool */
    uint64_t pool_address;
} gpufl__cupti_alloc_t;

typedef struct gpufl__cupti_external {
    uint32_t external_kind; /* CUpti_ExternalCorrelationKind */
    uint64_t external_id;
    uint32_t correlation_id;
} gpufl__cupti_external_t;

/* Receives the records of drain. Entries may be NULL (the kind is skipped).
 * Pointers passed are valid only during the call. */
typedef struct gpufl__cupti_sink {
    void (*kernel)(void *user, const gpufl__cupti_kernel_t *record);
    void (*copy)(void *user, const gpufl__cupti_copy_t *record);
    void (*memset)(void *user, const gpufl__cupti_memset_t *record);
    void (*sync)(void *user, const gpufl__cupti_sync_t *record);
    void (*alloc)(void *user, const gpufl__cupti_alloc_t *record);
    void (*external)(void *user, const gpufl__cupti_external_t *record);
    /* Records CUPTI reports it dropped (no buffer space), once per buffer
     * that had any. */
    void (*dropped)(void *user, uint64_t records);
} gpufl__cupti_sink_t;

/* Counters since start; read them from the draining thread. */
typedef struct gpufl__cupti_stats {
    uint64_t buffers_given;      /* buffers handed to CUPTI */
    uint64_t buffers_refused;    /* requests answered NULL: the pool was empty */
    uint64_t buffers_completed;  /* buffers CUPTI handed back */
    uint64_t buffers_drained;    /* buffers parsed and returned to the pool */
    uint64_t records;            /* records passed to the sink */
    uint64_t records_other;      /* records of kinds we do not read */
    uint64_t records_dropped;    /* CUPTI's dropped counts, summed */
    uint64_t parse_errors;       /* buffers whose walk ended in an error */
    uint64_t records_incomplete; /* kernel, copy, memset records without a valid start and end
                                    (a forced flush hands back records still in flight) */
} gpufl__cupti_stats_t;

/*
 * Loads libcupti (see the contract above for the names tried). Returns 0,
 * or GPUFL_ENOTSUP with a one-line reason in why and *out NULL:
 * "libcupti.so.13 not found: ..." or "<library> lacks cuptiActivityEnable".
 * GPUFL_ENOMEM when the handle cannot be allocated.
 */
int gpufl__cupti_open(gpufl__cupti_t **out, const char *library_path, char *why, size_t why_size);
/* Stops the module if started, then unloads. Accepts NULL. */
void gpufl__cupti_close(gpufl__cupti_t *c);

/*
 * Allocates the buffer pool, registers the buffer callbacks and the
 * timestamp callback, and enables the kinds. Returns 0 when concurrent
 * kernel activity is on (optional kinds may be refused: see
 * gpufl__cupti_kind_state). Else GPUFL_ENOTSUP with why naming the cause
 * ("concurrent kernels: another CUPTI client is active ..."), every kind
 * is disabled again and the module is not started; GPUFL_EALREADY when a
 * module is already started in this process; GPUFL_EINVAL for a bad cfg;
 * GPUFL_ENOMEM. cfg may be NULL (defaults).
 */
int gpufl__cupti_start(gpufl__cupti_t *c, const gpufl__cupti_config_t *cfg, char *why,
                       size_t why_size);
/* Disables the kinds, flushes (forced) and drains what is left into sink
 * (which may be NULL: the records are discarded). Safe when not started. */
void gpufl__cupti_stop(gpufl__cupti_t *c, const gpufl__cupti_sink_t *sink, void *user);

/* Turns the kinds start enabled off (paused = 1) or on again (0), from
 * the owner or the collector thread, for windows of tracing between
 * windows without (PcSampling's `alternate` candidate). Kinds stay ON in
 * gpufl__cupti_kind_state. Returns 0, or GPUFL_EIO when CUPTI refused one
 * (the others are still switched). Safe when not started. */
int gpufl__cupti_pause(gpufl__cupti_t *c, int paused);
/* Whether the kind is enabled now: ON at start and not paused since (or
 * turned on again). Any thread. */
int gpufl__cupti_kind_live(gpufl__cupti_t *c, gpufl__cupti_kind_t kind);

/* Asks CUPTI to complete its buffers now (cuptiActivityFlushAll); force
 * also completes buffers still being filled. Returns 0 or GPUFL_EIO. */
int gpufl__cupti_flush(gpufl__cupti_t *c, int force);

/* Whether CUPTI holds at least half of the pool's buffers (given to it and
 * not completed): a forced flush then hands them back before the pool runs
 * dry. Any thread. */
int gpufl__cupti_pool_low(gpufl__cupti_t *c);

/* Parses every completed buffer into sink, reports CUPTI's dropped counts,
 * and returns the buffers to the pool. Returns the records delivered. */
uint64_t gpufl__cupti_drain(gpufl__cupti_t *c, const gpufl__cupti_sink_t *sink, void *user);

/* GPUFL_CUPTI_OFF / ON / REFUSED for kind, and the reason when refused
 * (else ""), e.g. "synchronization: insufficient privileges: ...
 * (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)". */
int gpufl__cupti_kind_state(const gpufl__cupti_t *c, gpufl__cupti_kind_t kind, const char **reason);

void gpufl__cupti_stats(gpufl__cupti_stats_t *out, const gpufl__cupti_t *c);

/* 1 when record timestamps are CLOCK_MONOTONIC ns (the timestamp callback
 * was registered), 0 when they are CUPTI's own clock. */
int gpufl__cupti_shared_clock(const gpufl__cupti_t *c);

/* The library that loaded ("libcupti.so.13") and its CUPTI API version
 * (130001), 0 when unknown. */
const char *gpufl__cupti_library(const gpufl__cupti_t *c);
uint32_t gpufl__cupti_api_version(const gpufl__cupti_t *c);

/* ---------------------------------------------------------------------- */
/* API callbacks (driver domain)                                            */
/* ---------------------------------------------------------------------- */

/* Receives CUPTI's driver-API callbacks: CUPTI's CUpti_CallbackFunc, passed
 * untyped here so this header needs no CUPTI types. */
typedef void (*gpufl_cupti_api_fn)(void *user, int domain, uint32_t cbid, const void *cbdata);
/* Says whether the driver function `name` ("cuLaunchKernel") is wanted. */
typedef int (*gpufl_cupti_want_fn)(const char *name, uint32_t cbid, void *user);

/*
 * Subscribes fn to the driver-API callbacks whose function names want
 * accepts (asked once per callback id CUPTI knows). Call before start: a
 * refusal means another CUPTI client is present. Returns 0, or
 * GPUFL_ENOTSUP with why ("API callbacks: another CUPTI client (...) is
 * already active in this process (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)").
 * At most one subscription per module.
 */
int gpufl__cupti_subscribe(gpufl__cupti_t *c, gpufl_cupti_api_fn fn, void *user,
                           gpufl_cupti_want_fn want, void *want_user, char *why, size_t why_size);
/* Ends the subscription (no callback runs after it returns). Safe when none. */
void gpufl__cupti_unsubscribe(gpufl__cupti_t *c);
/* In a forked child: forgets the parent's started module and subscriber
 * (their threads and locks are not the child's). */
void gpufl__cupti_after_fork_child(void);

/* Adds CUPTI's resource domain (contexts and modules coming and going) to
 * the subscription: its callbacks reach the subscriber's function with
 * domain CUPTI_CB_DOMAIN_RESOURCE and a CUpti_ResourceData. Returns 0, or
 * an error with a one-line reason. */
int gpufl__cupti_enable_resource(gpufl__cupti_t *c, char *why, size_t why_size);
/* A function of the opened library by name (for the engines above Trace,
 * which resolve their own APIs); NULL when absent. */
void *gpufl__cupti_symbol(const gpufl__cupti_t *c, const char *name);
/* The callbacks enabled by subscribe. */
int gpufl__cupti_callbacks_enabled(const gpufl__cupti_t *c);

/* On the calling thread: the innermost external correlation id a framework
 * pushed (cuptiActivityPushExternalCorrelationId), looked at without taking
 * it. Returns 1 and fills kind/id, 0 when none is pushed. */
int gpufl__cupti_peek_external(const gpufl__cupti_t *c, uint32_t *kind, uint64_t *id);

/* The hooks through which framework op ids (gpufl_ops.h) are pushed on and
 * popped off CUPTI's external correlation stack of the calling thread, kind
 * CUSTOM2 (CUSTOM0 and CUSTOM1 are PyTorch's own profiler's); NULL when this
 * libcupti lacks the functions. */
const gpufl__ops_hooks_t *gpufl__cupti_ops_hooks(const gpufl__cupti_t *c);

/* CUPTI's id of a stream of context (cuptiGetStreamIdEx; per_thread for the
 * _ptsz calls, whose default stream is the thread's), as activity records
 * carry it; -1 when unknown. */
int64_t gpufl__cupti_stream_id(const gpufl__cupti_t *c, void *context, void *stream,
                               int per_thread);

/* CUPTI's id of a graph exec (cuptiGetGraphExecId); 0 when unknown. */
uint32_t gpufl__cupti_graph_exec_id(const gpufl__cupti_t *c, void *graph_exec);

/* Our name of a kind ("concurrent kernels", "memcpy", ...). */
const char *gpufl__cupti_kind_name(gpufl__cupti_kind_t kind);

#endif
