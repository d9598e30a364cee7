// SPDX-License-Identifier: Apache-2.0
/*
 * cuda.c - libcuda through dlopen, for the occupancy of kernel launches: the
 * driver's answer next to our per-resource breakdown, with each device's
 * attributes read once and shared by every launching thread.
 */
#include "nvidia/cuda.h"

#include "util/error.h"
#include "util/log.h"
#include "util/dl.h"

#include <cuda.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cuda_fns {
    __typeof__(cuOccupancyMaxActiveBlocksPerMultiprocessor) *occupancy;
    __typeof__(cuFuncGetAttribute) *func_attribute;
    __typeof__(cuDeviceGetAttribute) *device_attribute;
    __typeof__(cuCtxGetDevice) *ctx_device;
    __typeof__(cuDriverGetVersion) *driver_version;
    __typeof__(cuGetErrorName) *error_name;
    __typeof__(cuKernelGetFunction) *kernel_function;
    __typeof__(cuCtxPushCurrent) *ctx_push;
    __typeof__(cuCtxPopCurrent) *ctx_pop;
    __typeof__(cuCtxSynchronize) *ctx_synchronize;
    __typeof__(cuCtxGetCurrent) *ctx_current;
    /* Events, for kernel times without CUPTI (the PcSampling `events` candidate). */
    __typeof__(cuEventCreate) *event_create;
    __typeof__(cuEventRecord) *event_record;
    __typeof__(cuEventQuery) *event_query;
    __typeof__(cuEventSynchronize) *event_synchronize;
    __typeof__(cuEventElapsedTime) *event_elapsed;
    __typeof__(cuEventDestroy) *event_destroy;
    __typeof__(cuStreamIsCapturing) *stream_capturing;
} cuda_fns_t;

struct gpufl__cuda {
    gpufl__dl_t dl;
    cuda_fns_t fn;
    int driver_version;
    /* A device's attributes are written once, under fill_lock, before its
     * ready flag is set (release); readers that see the flag (acquire) read
     * them without the lock. */
    atomic_int ready[GPUFL_CUDA_DEVICES_CACHED];
    gpufl__occ_device_t devices[GPUFL_CUDA_DEVICES_CACHED];
};

/* An attribute read into an int field of a struct: the driver's enum value,
 * the field's offset, and the enum's name for messages. */
typedef struct attribute {
    int id;
    size_t offset;
    const char *name;
} attribute_t;

#define DEVICE_ATTR(id, field)                                                                     \
    { id, offsetof(gpufl__occ_device_t, field), #id }
static const attribute_t device_attrs[] = {
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cc_major),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cc_minor),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_WARP_SIZE, warp_size),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_sm),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, max_blocks_per_sm),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, regs_per_sm),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, regs_per_block),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, smem_per_sm),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, smem_per_block_optin),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, reserved_smem_per_block),
    DEVICE_ATTR(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sm_count),
};
#undef DEVICE_ATTR

#define FUNC_ATTR(id, field)                                                                       \
    { id, offsetof(gpufl__occ_kernel_t, field), #id }
static const attribute_t func_attrs[] = {
    FUNC_ATTR(CU_FUNC_ATTRIBUTE_NUM_REGS, registers_per_thread),
    FUNC_ATTR(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, static_smem_bytes),
    FUNC_ATTR(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, local_bytes_per_thread),
    FUNC_ATTR(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, max_threads_per_block),
    FUNC_ATTR(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout_pct),
};
#undef FUNC_ATTR

static void store(void *base, const attribute_t *a, int value) {
    memcpy((char *)base + a->offset, &value, sizeof value);
}

/* Taken only to fill a device's cache entry, once per device: one lock for
 * every handle keeps open free of a failure path of its own. */
static pthread_mutex_t fill_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------------- */
/* Loading                                                                  */
/* ---------------------------------------------------------------------- */

/* Opens the library and resolves our symbols; on failure it is closed again. */
static int load(gpufl__cuda_t *c, char *why, size_t why_size) {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
    gpufl__dl_sym_t syms[] = {
        {{"cuOccupancyMaxActiveBlocksPerMultiprocessor"}, &c->fn.occupancy, 1, -1},
        {{"cuFuncGetAttribute"}, &c->fn.func_attribute, 1, -1},
        {{"cuDeviceGetAttribute"}, &c->fn.device_attribute, 1, -1},
        {{"cuCtxGetDevice"}, &c->fn.ctx_device, 1, -1},
        {{"cuDriverGetVersion"}, &c->fn.driver_version, 0, -1},
        {{"cuGetErrorName"}, &c->fn.error_name, 0, -1},
        {{"cuKernelGetFunction"}, &c->fn.kernel_function, 0, -1},
        {{"cuCtxPushCurrent_v2", "cuCtxPushCurrent"}, &c->fn.ctx_push, 0, -1},
        {{"cuCtxPopCurrent_v2", "cuCtxPopCurrent"}, &c->fn.ctx_pop, 0, -1},
        {{"cuCtxSynchronize"}, &c->fn.ctx_synchronize, 0, -1},
        {{"cuCtxGetCurrent"}, &c->fn.ctx_current, 0, -1},
        {{"cuEventCreate"}, &c->fn.event_create, 0, -1},
        {{"cuEventRecord"}, &c->fn.event_record, 0, -1},
        {{"cuEventQuery"}, &c->fn.event_query, 0, -1},
        {{"cuEventSynchronize"}, &c->fn.event_synchronize, 0, -1},
        {{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &c->fn.event_elapsed, 0, -1},
        {{"cuEventDestroy_v2", "cuEventDestroy"}, &c->fn.event_destroy, 0, -1},
        {{"cuStreamIsCapturing"}, &c->fn.stream_capturing, 0, -1},
    };
    int rc = gpufl__dl_open(&c->dl, getenv("GPUFL_CUDA_LIBRARY"), names, "no NVIDIA driver", why,
                            why_size);
    if (rc == 0 &&
        (rc = gpufl__dl_resolve(&c->dl, syms, sizeof syms / sizeof syms[0], why, why_size)) != 0)
        gpufl__dl_close(&c->dl);
    return rc;
}

int gpufl__cuda_open(gpufl__cuda_t **out, char *why, size_t why_size) {
    *out = NULL;
    gpufl__cuda_t *c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(why, why_size, "out of memory");
        return GPUFL_ENOMEM;
    }
    int rc = load(c, why, why_size);
    if (rc != 0) {
        free(c);
        return rc;
    }
    for (int i = 0; i < GPUFL_CUDA_DEVICES_CACHED; i++) atomic_init(&c->ready[i], 0);
    if (c->fn.driver_version == NULL || c->fn.driver_version(&c->driver_version) != CUDA_SUCCESS)
        c->driver_version = 0;
    gpufl__debug("cuda: loaded %s, driver %d%s%s", c->dl.name, c->driver_version,
                 c->dl.missing[0] ? "; lacks " : "", c->dl.missing);
    *out = c;
    return 0;
}

void gpufl__cuda_close(gpufl__cuda_t *c) {
    if (c == NULL) return;
    gpufl__dl_close(&c->dl);
    free(c);
}

const char *gpufl__cuda_library(const gpufl__cuda_t *c) { return c->dl.name; }

int gpufl__cuda_driver_version(const gpufl__cuda_t *c) { return c->driver_version; }

/* ---------------------------------------------------------------------- */
/* Queries                                                                  */
/* ---------------------------------------------------------------------- */

/* Sets the message for a failed driver call: "<call> failed: <NAME> (<n>)". */
static int driver_error(const gpufl__cuda_t *c, CUresult r, const char *call, const char *detail) {
    const char *name = NULL;
    if (c->fn.error_name == NULL || c->fn.error_name(r, &name) != CUDA_SUCCESS || name == NULL)
        name = "CUDA error";
    return gpufl__set_error(GPUFL_EIO, "%s%s%s%s failed: %s (%d)", call, detail ? "(" : "",
                            detail ? detail : "", detail ? ")" : "", name, (int)r);
}

static int read_device(const gpufl__cuda_t *c, CUdevice device, gpufl__occ_device_t *out) {
    for (size_t i = 0; i < sizeof device_attrs / sizeof device_attrs[0]; i++) {
        int value = 0;
        CUresult r = c->fn.device_attribute(&value, (CUdevice_attribute)device_attrs[i].id, device);
        if (r != CUDA_SUCCESS)
            return driver_error(c, r, "cuDeviceGetAttribute", device_attrs[i].name);
        store(out, &device_attrs[i], value);
    }
    return 0;
}

/* The attributes of device: from the cache, read into it the first time. */
static int device_attributes(gpufl__cuda_t *c, CUdevice device, gpufl__occ_device_t *out) {
    if (device < 0 || device >= GPUFL_CUDA_DEVICES_CACHED) return read_device(c, device, out);
    if (!atomic_load_explicit(&c->ready[device], memory_order_acquire)) {
        int rc = 0;
        pthread_mutex_lock(&fill_lock);
        if (!atomic_load_explicit(&c->ready[device], memory_order_relaxed)) {
            rc = read_device(c, device, &c->devices[device]);
            if (rc == 0) atomic_store_explicit(&c->ready[device], 1, memory_order_release);
        }
        pthread_mutex_unlock(&fill_lock);
        if (rc != 0) return rc;
    }
    *out = c->devices[device];
    return 0;
}

static int read_function(const gpufl__cuda_t *c, CUfunction function, gpufl__occ_kernel_t *out) {
    for (size_t i = 0; i < sizeof func_attrs / sizeof func_attrs[0]; i++) {
        int value = 0;
        CUresult r = c->fn.func_attribute(&value, (CUfunction_attribute)func_attrs[i].id, function);
        if (r != CUDA_SUCCESS) return driver_error(c, r, "cuFuncGetAttribute", func_attrs[i].name);
        store(out, &func_attrs[i], value);
    }
    return 0;
}

int gpufl__cuda_kernel_occupancy(gpufl__kernel_occupancy_t *out, gpufl__cuda_t *c, void *function,
                                 int block_threads, size_t dynamic_smem) {
    if (out == NULL) return gpufl__set_error(GPUFL_EINVAL, "kernel occupancy: out is NULL");
    memset(out, 0, sizeof *out);
    if (c == NULL || function == NULL)
        return gpufl__set_error(GPUFL_EINVAL, "kernel occupancy: no library or function");
    if (block_threads < 1 || dynamic_smem > INT_MAX)
        return gpufl__set_error(GPUFL_EINVAL,
                                "kernel occupancy: a block of %d threads with %zu bytes of "
                                "dynamic shared memory",
                                block_threads, dynamic_smem);

    CUdevice device = 0;
    CUresult r = c->fn.ctx_device(&device);
    if (r != CUDA_SUCCESS) return driver_error(c, r, "cuCtxGetDevice", NULL);
    out->device = device;
    int rc = device_attributes(c, device, &out->device_attributes);
    if (rc != 0) return rc;
    gpufl__occ_kernel_t *k = &out->kernel;
    CUfunction f = (CUfunction)function;
    rc = read_function(c, f, k);
    if (rc != 0 && c->fn.kernel_function != NULL) {
        /* The CUDA runtime launches through library kernels (CUkernel, CUDA
         * 12 on), which cuLaunchKernel takes in place of a CUfunction and
         * cuFuncGetAttribute does not: ask for the context's function. */
        CUfunction resolved = NULL;
        if (c->fn.kernel_function(&resolved, (CUkernel)function) == CUDA_SUCCESS && resolved) {
            f = resolved;
            rc = read_function(c, f, k);
        }
    }
    if (rc != 0) return rc;
    k->block_threads = block_threads;
    k->dynamic_smem_bytes = (int)dynamic_smem;

    int blocks = 0;
    r = c->fn.occupancy(&blocks, f, block_threads, dynamic_smem);
    if (r != CUDA_SUCCESS)
        return driver_error(c, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL);
    const gpufl__occ_device_t *d = &out->device_attributes;
    out->driver_blocks_per_sm = blocks;
    if (d->warp_size > 0) {
        long long warps = ((long long)block_threads + d->warp_size - 1) / d->warp_size * blocks;
        out->active_warps = warps > INT_MAX ? INT_MAX : (int)warps;
        out->max_warps = d->max_threads_per_sm / d->warp_size;
    }
    out->occupancy = out->max_warps > 0 ? (double)out->active_warps / out->max_warps : 0.0;

    out->computed_status = gpufl__occupancy_compute(&out->computed, d, k);
    out->agrees = out->computed_status == 0 && out->computed.blocks_per_sm == blocks;
    return 0;
}

int gpufl__cuda_context_synchronize(gpufl__cuda_t *c, void *context) {
    if (c == NULL || context == NULL)
        return gpufl__set_error(GPUFL_EINVAL, "context synchronize: no driver or no context");
    if (c->fn.ctx_push == NULL || c->fn.ctx_pop == NULL || c->fn.ctx_synchronize == NULL)
        return gpufl__set_error(GPUFL_ENOTSUP,
                                "%s lacks cuCtxPushCurrent, cuCtxPopCurrent or "
                                "cuCtxSynchronize",
                                gpufl__cuda_library(c));
    CUresult r = c->fn.ctx_push((CUcontext)context);
    if (r != CUDA_SUCCESS) return driver_error(c, r, "cuCtxPushCurrent", NULL);
    CUresult sync = c->fn.ctx_synchronize();
    CUcontext popped = NULL;
    r = c->fn.ctx_pop(&popped);
    if (sync != CUDA_SUCCESS) return driver_error(c, sync, "cuCtxSynchronize", NULL);
    if (r != CUDA_SUCCESS) return driver_error(c, r, "cuCtxPopCurrent", NULL);
    return 0;
}

void *gpufl__cuda_current_context(gpufl__cuda_t *c) {
    CUcontext ctx = NULL;
    if (c == NULL || c->fn.ctx_current == NULL || c->fn.ctx_current(&ctx) != CUDA_SUCCESS)
        return NULL;
    return ctx;
}

int gpufl__cuda_push_context(gpufl__cuda_t *c, void *context) {
    if (c == NULL || context == NULL || c->fn.ctx_push == NULL || c->fn.ctx_pop == NULL)
        return gpufl__set_error(GPUFL_ENOTSUP, "cannot make a context current: no driver call");
    CUresult r = c->fn.ctx_push((CUcontext)context);
    return r == CUDA_SUCCESS ? 0 : driver_error(c, r, "cuCtxPushCurrent", NULL);
}

void gpufl__cuda_pop_context(gpufl__cuda_t *c) {
    CUcontext popped = NULL;
    if (c != NULL && c->fn.ctx_pop != NULL) c->fn.ctx_pop(&popped);
}

int gpufl__cuda_events_available(const gpufl__cuda_t *c) {
    return c != NULL && c->fn.event_create && c->fn.event_record && c->fn.event_query &&
           c->fn.event_synchronize && c->fn.event_elapsed && c->fn.event_destroy;
}

int gpufl__cuda_event_create(gpufl__cuda_t *c, void **event) {
    CUevent e = NULL;
    CUresult r = c->fn.event_create(&e, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) return driver_error(c, r, "cuEventCreate", NULL);
    *event = e;
    return 0;
}

int gpufl__cuda_event_record(gpufl__cuda_t *c, void *event, void *stream) {
    CUresult r = c->fn.event_record((CUevent)event, (CUstream)stream);
    return r == CUDA_SUCCESS ? 0 : driver_error(c, r, "cuEventRecord", NULL);
}

int gpufl__cuda_event_done(gpufl__cuda_t *c, void *event, int wait) {
    CUresult r = wait ? c->fn.event_synchronize((CUevent)event) : c->fn.event_query((CUevent)event);
    if (r == CUDA_SUCCESS) return 1;
    if (r == CUDA_ERROR_NOT_READY) return 0;
    return driver_error(c, r, wait ? "cuEventSynchronize" : "cuEventQuery", NULL);
}

int gpufl__cuda_event_elapsed_ns(gpufl__cuda_t *c, int64_t *ns, void *from, void *to) {
    float ms = 0;
    CUresult r = c->fn.event_elapsed(&ms, (CUevent)from, (CUevent)to);
    if (r != CUDA_SUCCESS) return driver_error(c, r, "cuEventElapsedTime", NULL);
    *ns = (int64_t)((double)ms * 1e6 + (ms < 0 ? -0.5 : 0.5));
    return 0;
}

void gpufl__cuda_event_destroy(gpufl__cuda_t *c, void *event) {
    if (c != NULL && event != NULL && c->fn.event_destroy) c->fn.event_destroy((CUevent)event);
}

int gpufl__cuda_stream_capturing(gpufl__cuda_t *c, void *stream) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (c->fn.stream_capturing == NULL) return 0;
    if (c->fn.stream_capturing((CUstream)stream, &status) != CUDA_SUCCESS) return 1;
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
}
