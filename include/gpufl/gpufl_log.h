// SPDX-License-Identifier: Apache-2.0
/*
 * gpufl_log.h - values that appear in the session log: gpufl's own numbers
 * for a copy's kind, a memory's kind and a synchronization's type, the same
 * whichever vendor's backend recorded them (docs/log-format.md).
 *
 * Each list below is the one definition of its values: the enum, the names
 * the log's `gpu_legend` record gives them and gpufl_*_name() all come from
 * it. 0 is always "unknown". Values are never renumbered; new ones are
 * appended. A reader meets, in the log and in the tables of
 * gpufl_analysis.h, only these values: the analysis translates logs written
 * before them (which held CUPTI's numbers) as it loads them.
 *
 * An entry is X(SUFFIX, value, "name"): the enum constant is the list's
 * prefix and SUFFIX (GPUFL_COPY_KIND_HOST_TO_DEVICE), the name is what the
 * legend and the exports print.
 */
#ifndef GPUFL_LOG_H
#define GPUFL_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

/** `vendor` of `gpu_info` records: whose device it is. */
#define GPUFL_LOG_VENDOR_NVIDIA "nvidia"

/** `external_id` of the kernels and launches made inside a framework
 *  operation (gpufl_ops.h): the operation's `op` index shifted left by this
 *  many bits, or'ed with the call's number. */
#define GPUFL_LOG_OP_CALL_BITS 40

/** The `v` of the record types whose columns hold these values (`copy`,
 *  `memset`, `sync`, `alloc`). Their `v` 1 held CUPTI's numbers instead. */
#define GPUFL_LOG_VALUES_VERSION 2

/** `copy_kind` of `copy` rows: where a copy reads and writes. An array is an
 *  opaque (texture) layout of device memory. */
#define GPUFL_COPY_KINDS(X)                                                                        \
    X(UNKNOWN, 0, "unknown")                                                                       \
    X(HOST_TO_DEVICE, 1, "host_to_device")                                                         \
    X(DEVICE_TO_HOST, 2, "device_to_host")                                                         \
    X(DEVICE_TO_DEVICE, 3, "device_to_device") /* within one device */                             \
    X(PEER, 4, "peer")                         /* from one device to another */                    \
    X(HOST_TO_HOST, 5, "host_to_host")                                                             \
    X(HOST_TO_ARRAY, 6, "host_to_array")                                                           \
    X(ARRAY_TO_HOST, 7, "array_to_host")                                                           \
    X(ARRAY_TO_ARRAY, 8, "array_to_array")                                                         \
    X(ARRAY_TO_DEVICE, 9, "array_to_device")                                                       \
    X(DEVICE_TO_ARRAY, 10, "device_to_array")

/** `src_kind` and `dst_kind` of `copy` rows, `memory_kind` of `memset` and
 *  `alloc` rows: what kind of memory an operation touched. */
#define GPUFL_MEMORY_KINDS(X)                                                                      \
    X(UNKNOWN, 0, "unknown")                                                                       \
    X(PAGEABLE, 1, "pageable")             /* host memory the OS may page out */                   \
    X(PINNED, 2, "pinned")                 /* page-locked host memory */                           \
    X(DEVICE, 3, "device")                 /* allocated on the device */                           \
    X(MANAGED, 4, "managed")               /* unified: migrates between host and devices */        \
    X(ARRAY, 5, "array")                   /* an opaque (texture) layout on the device */          \
    X(DEVICE_STATIC, 6, "device_static")   /* a module's __device__ variables */                   \
    X(MANAGED_STATIC, 7, "managed_static") /* a module's __managed__ variables */

/** `sync_type` of `sync` rows: what the host thread waited for. */
#define GPUFL_SYNC_TYPES(X)                                                                        \
    X(UNKNOWN, 0, "unknown")                                                                       \
    X(DEVICE, 1, "device") /* all work of the context (cudaDeviceSynchronize, cuCtxSynchronize) */ \
    X(STREAM, 2, "stream") /* one stream's work (cudaStreamSynchronize) */                         \
    X(EVENT, 3, "event")   /* an event (cudaEventSynchronize) */                                   \
    X(STREAM_WAIT_EVENT, 4, "stream_wait_event") /* a stream made to wait for an event */

#define GPUFL_LOG_COPY_(suffix, value, name)   GPUFL_COPY_KIND_##suffix = value,
#define GPUFL_LOG_MEMORY_(suffix, value, name) GPUFL_MEMORY_KIND_##suffix = value,
#define GPUFL_LOG_SYNC_(suffix, value, name)   GPUFL_SYNC_TYPE_##suffix = value,

/** GPUFL_COPY_KIND_UNKNOWN, GPUFL_COPY_KIND_HOST_TO_DEVICE, ... */
typedef enum gpufl_copy_kind {
    GPUFL_COPY_KINDS(GPUFL_LOG_COPY_) GPUFL_COPY_KIND_COUNT /**< one past the last value */
} gpufl_copy_kind_t;

/** GPUFL_MEMORY_KIND_UNKNOWN, GPUFL_MEMORY_KIND_PAGEABLE, ... */
typedef enum gpufl_memory_kind {
    GPUFL_MEMORY_KINDS(GPUFL_LOG_MEMORY_) GPUFL_MEMORY_KIND_COUNT /**< one past the last value */
} gpufl_memory_kind_t;

/** GPUFL_SYNC_TYPE_UNKNOWN, GPUFL_SYNC_TYPE_DEVICE, ... */
typedef enum gpufl_sync_type {
    GPUFL_SYNC_TYPES(GPUFL_LOG_SYNC_) GPUFL_SYNC_TYPE_COUNT /**< one past the last value */
} gpufl_sync_type_t;

#undef GPUFL_LOG_COPY_
#undef GPUFL_LOG_MEMORY_
#undef GPUFL_LOG_SYNC_

/* The name of each value, as the legend gives it; NULL for a value this
 * header does not list (a later gpufl's). */
#define GPUFL_LOG_NAME_(suffix, value, name)                                                       \
    case value: return name;

/** The name of a copy kind ("host_to_device"), NULL when not a known value. */
static inline const char *gpufl_copy_kind_name(int kind) {
    switch (kind) {
        GPUFL_COPY_KINDS(GPUFL_LOG_NAME_)
    default: return 0;
    }
}

/** The name of a memory kind ("pinned"), NULL when not a known value. */
static inline const char *gpufl_memory_kind_name(int kind) {
    switch (kind) {
        GPUFL_MEMORY_KINDS(GPUFL_LOG_NAME_)
    default: return 0;
    }
}

/** The name of a synchronization type ("stream"), NULL when not a known value. */
static inline const char *gpufl_sync_type_name(int type) {
    switch (type) {
        GPUFL_SYNC_TYPES(GPUFL_LOG_NAME_)
    default: return 0;
    }
}

#undef GPUFL_LOG_NAME_

#ifdef __cplusplus
}
#endif

#endif
