// SPDX-License-Identifier: Apache-2.0
/*
 * gpu_sampler.h - the NVML source: one gpu_info record per device at start,
 * gpu_sample batches under the session's sampling policy, and gpu_processes
 * records when the processes on a device change, each process new to the
 * session first described by a process_info record. All in device.log.
 */
#ifndef GPUFL_NVIDIA_GPU_SAMPLER_H
#define GPUFL_NVIDIA_GPU_SAMPLER_H

#include "core/collector.h"
#include "core/worker.h"
#include "core/sampling.h"
#include "host/proc_attrib.h"
#include "nvidia/nvml.h"

typedef struct gpufl__gpu_job gpufl__gpu_job_t;

typedef struct gpufl__gpu_sampler {
    gpufl__nvml_t *nvml; /* owned */
    gpufl__collector_t *collector;
    gpufl__sampling_t when;
    gpufl__batch_t batch;
    int lost[GPUFL_GPU_MAX];          /* device stopped answering: said once, not sampled again */
    uint64_t proc_sig[GPUFL_GPU_MAX]; /* signature of the last process list written */
    gpufl__cost_t cost;               /* what each device sample cost, for the source_cost record */
    gpufl__proc_attrib_cache_t *attrib; /* who listed processes are; NULL: not described */
    /* Each device is sampled by a worker of its own, so an NVML call that
     * hangs on one device costs the others nothing: a pass waits at most
     * budget_ns for all of them and leaves out the rows not ready. */
    gpufl__worker_t *worker[GPUFL_GPU_MAX];
    gpufl__gpu_job_t *job[GPUFL_GPU_MAX]; /* the worker's; touched only while it is idle */
    int64_t budget_ns;
    int late[GPUFL_GPU_MAX];            /* a request past its budget still runs: said once */
    int64_t slow_passes[GPUFL_GPU_MAX]; /* passes the device missed its budget */
} gpufl__gpu_sampler_t;

/* Takes ownership of nvml (opened by the caller), writes gpu_info records
 * and fills *source. */
int gpufl__gpu_sampler_init(gpufl__gpu_sampler_t *s, gpufl__nvml_t *nvml, gpufl__collector_t *c,
                            const gpufl__settings_t *settings, gpufl__source_t *source);
/* Writes the sampling cost record and closes NVML. Accepts a zeroed struct. */
void gpufl__gpu_sampler_fini(gpufl__gpu_sampler_t *s);

#endif
