// SPDX-License-Identifier: Apache-2.0
/*
 * cuda.h - the few libcuda calls gpufl makes itself: the occupancy of a
 * kernel launch, as the driver reports it and as lib/nvidia/occupancy.c
 * breaks it down.
 *
 * Contract
 * - libcuda is never linked. It is opened from $GPUFL_CUDA_LIBRARY when set,
 *   else libcuda.so.1, else libcuda.so. The toolkit's cuda.h gives the types
 *   only; every function is called through a pointer typed from its
 *   declaration there. Required: cuOccupancyMaxActiveBlocksPerMultiprocessor,
 *   cuFuncGetAttribute, cuDeviceGetAttribute, cuCtxGetDevice; optional:
 *   cuDriverGetVersion, cuGetErrorName, cuKernelGetFunction (for the library
 *   kernels, CUkernel, that the CUDA runtime passes to cuLaunchKernel),
 *   cuCtxPushCurrent, cuCtxPopCurrent and cuCtxSynchronize (to wait for a
 *   context's work from another thread), cuCtxGetCurrent (the RangeProfiler
 *   engine's ranges belong to the scope thread's current context).
 * - Threads: open and close belong to one owner thread;
 *   gpufl__cuda_kernel_occupancy may be called from any number of threads
 *   between them. Each device's attributes are read once (the first call on
 *   that device, under a mutex) and then read without a lock.
 * - The cu* calls made here are driver API calls like any other: a CUPTI
 *   subscriber to the driver API sees them (cuFuncGetAttribute,
 *   cuOccupancyMaxActiveBlocksPerMultiprocessor, ...) and must ignore them.
 */
#ifndef GPUFL_NVIDIA_CUDA_H
#define GPUFL_NVIDIA_CUDA_H

#include "nvidia/occupancy.h"

#include <stddef.h>
#include <stdint.h>

#define GPUFL_CUDA_DEVICES_CACHED 64 /* device ordinals whose attributes are kept */

typedef struct gpufl__cuda gpufl__cuda_t;

/*
 * Loads libcuda (see the contract for the names tried) and reads the
 * driver version. Returns 0, or GPUFL_ENOTSUP with a one-line reason in why
 * and *out NULL ("libcuda.so.1 not found: no NVIDIA driver", "<library>
 * lacks cuOccupancyMaxActiveBlocksPerMultiprocessor"); GPUFL_ENOMEM.
 */
int gpufl__cuda_open(gpufl__cuda_t **out, char *why, size_t why_size);
/* Unloads (the library stays mapped). Accepts NULL. No call may be running. */
void gpufl__cuda_close(gpufl__cuda_t *c);

/* The library that loaded ("libcuda.so.1", or the path given). */
const char *gpufl__cuda_library(const gpufl__cuda_t *c);
/* cuDriverGetVersion (13000 for CUDA 13.0); 0 when unknown. */
int gpufl__cuda_driver_version(const gpufl__cuda_t *c);

/* The occupancy of one launch. blocks_per_sm, active_warps and occupancy
 * are the driver's; computed is our breakdown of the same launch. */
typedef struct gpufl__kernel_occupancy {
    int device;                           /* ordinal of the current context's device */
    gpufl__occ_device_t device_attributes; /* as read (and cached) for that device */
    gpufl__occ_kernel_t kernel;            /* the function's attributes and the launch */
    int driver_blocks_per_sm;             /* cuOccupancyMaxActiveBlocksPerMultiprocessor */
    int active_warps;                     /* driver_blocks_per_sm * warps per block */
    int max_warps;                        /* max_threads_per_sm / warp_size */
    double occupancy;                     /* active_warps / max_warps */
    gpufl__occ_result_t computed;         /* gpufl__occupancy_compute; zeroed when it failed */
    int computed_status; /* 0, or its error (GPUFL_ENOTSUP: an architecture whose rules are
                            unknown); gpufl_last_error() then says why */
    int agrees;          /* computed_status == 0 && computed.blocks_per_sm == driver's */
} gpufl__kernel_occupancy_t;

/*
 * Fills *out for a launch of function (a CUfunction) with block_threads
 * threads per block and dynamic_smem bytes of dynamic shared memory, on the
 * device of the calling thread's current context. Meant for the launching
 * thread, inside a CUPTI driver API callback, where the launch's context is
 * current. Makes 7 driver calls (cuCtxGetDevice, 5 cuFuncGetAttribute, the
 * occupancy query), plus 11 cuDeviceGetAttribute the first time on a device
 * (every time on an ordinal >= GPUFL_CUDA_DEVICES_CACHED). Allocates
 * nothing. Returns 0 (also when only our computation failed: see
 * computed_status), GPUFL_EINVAL for NULL arguments, block_threads < 1 or
 * dynamic_smem above INT_MAX, GPUFL_EIO when a driver call fails, with a
 * message naming the call and the driver's error
 * ("cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS) failed:
 * CUDA_ERROR_INVALID_HANDLE (400)").
 */
int gpufl__cuda_kernel_occupancy(gpufl__kernel_occupancy_t *out, gpufl__cuda_t *c, void *function,
                                 int block_threads, size_t dynamic_smem);

/* Waits until every piece of work queued on context (a CUcontext) has
 * finished, from any thread: makes it current, synchronizes, restores the
 * thread's previous context. Returns 0; GPUFL_ENOTSUP when the driver
 * lacks one of the three calls; GPUFL_EIO naming the call that failed
 * ("cuCtxSynchronize failed: CUDA_ERROR_LAUNCH_FAILED (719)"). */
int gpufl__cuda_context_synchronize(gpufl__cuda_t *c, void *context);

/* The calling thread's current context (a CUcontext), NULL when it has none
 * or the driver cannot say. Any thread. */
void *gpufl__cuda_current_context(gpufl__cuda_t *c);
/* Makes context current on the calling thread until the matching pop.
 * Returns 0, GPUFL_ENOTSUP without the driver calls, GPUFL_EIO. */
int gpufl__cuda_push_context(gpufl__cuda_t *c, void *context);
void gpufl__cuda_pop_context(gpufl__cuda_t *c);

/* CUDA events, for kernel times taken without CUPTI's activity kinds
 * (kernel_events.h). All or none of the driver's event functions were
 * found: available says which; the others need it. Events belong to the
 * context current on the calling thread at create. */
int gpufl__cuda_events_available(const gpufl__cuda_t *c);
int gpufl__cuda_event_create(gpufl__cuda_t *c, void **event);
int gpufl__cuda_event_record(gpufl__cuda_t *c, void *event, void *stream);
/* 1 when the work before the event is done, 0 not yet (wait = 0), or a
 * negative error; wait = 1 blocks until it is done. */
int gpufl__cuda_event_done(gpufl__cuda_t *c, void *event, int wait);
/* ns from event `from` to event `to`, both done (cuEventElapsedTime: about
 * 0.5 us resolution, float milliseconds). */
int gpufl__cuda_event_elapsed_ns(gpufl__cuda_t *c, int64_t *ns, void *from, void *to);
void gpufl__cuda_event_destroy(gpufl__cuda_t *c, void *event);
/* 1 when stream is being captured into a graph (an event recorded on it
 * would become a graph node) or the question failed; 0 when it is not. */
int gpufl__cuda_stream_capturing(gpufl__cuda_t *c, void *stream);

#endif
