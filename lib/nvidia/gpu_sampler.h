// SPDX-License-Identifier: Apache-2.0
/*
 * gpu_sampler.h - the NVML source: one gpu_info record per device at start,
 * gpu_sample batches under the session's sampling policy, and gpu_processes
 * records when the processes on a device change. All in device.log.
 */
#ifndef GPUFL_NVIDIA_GPU_SAMPLER_H
#define GPUFL_NVIDIA_GPU_SAMPLER_H

#include "core/collector.h"
#include "core/sampling.h"
#include "nvidia/nvml.h"

typedef struct gpufl_gpu_sampler {
    gpufl_nvml_t *nvml; /* owned */
    gpufl_collector_t *collector;
    gpufl_sampling_t when;
    gpufl_batch_t batch;
    int lost[GPUFL_GPU_MAX];          /* device stopped answering: said once, not sampled again */
    uint64_t proc_sig[GPUFL_GPU_MAX]; /* signature of the last process list written */
    gpufl_cost_t cost;                /* what each device sample cost, for the source_cost record */
} gpufl_gpu_sampler_t;

/* Takes ownership of nvml (opened by the caller), writes gpu_info records
 * and fills *source. */
int gpufl__gpu_sampler_init(gpufl_gpu_sampler_t *s, gpufl_nvml_t *nvml, gpufl_collector_t *c,
                            const gpufl_settings_t *settings, gpufl_source_t *source);
/* Writes the sampling cost record and closes NVML. Accepts a zeroed struct. */
void gpufl__gpu_sampler_fini(gpufl_gpu_sampler_t *s);

#endif
