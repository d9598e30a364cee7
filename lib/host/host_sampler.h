// SPDX-License-Identifier: Apache-2.0
/*
 * host_sampler.h - the host-metrics source: periodic samples and the
 * system_start/system_stop windows.
 *
 * With continuous_system_sampling it samples from init to shutdown; without,
 * only while a scope or a system window is open. Windows are counted, so
 * nested and overlapping ones work.
 */
#ifndef GPUFL_HOST_SAMPLER_H
#define GPUFL_HOST_SAMPLER_H

#include "core/collector.h"
#include "core/sampling.h"
#include "host/host_metrics.h"

#define GPUFL_HOST_WINDOWS_MAX 256

typedef struct gpufl__host_sampler {
    pthread_mutex_t lock; /* reader and windows: app threads and the collector */
    gpufl__host_reader_t reader;
    int reader_ok;
    gpufl__sampling_t when;
    char *windows[GPUFL_HOST_WINDOWS_MAX]; /* open window names, oldest first */
    int nwindows;
    gpufl__batch_t batch;
    gpufl__collector_t *collector;
    gpufl__cost_t cost; /* what sampling cost, for the source_cost record */
} gpufl__host_sampler_t;

/* Reads the host info (writes host_info to system.log) and fills *source.
 * root: NULL for the real /proc and /sys. */
int gpufl__host_sampler_init(gpufl__host_sampler_t *s, gpufl__collector_t *c,
                             const gpufl__settings_t *settings, const char *root,
                             gpufl__source_t *source);
void gpufl__host_sampler_fini(gpufl__host_sampler_t *s);
/* system_start (open=1) / system_stop (open=0) from any thread. */
int gpufl__host_sampler_window(gpufl__host_sampler_t *s, const char *name, int open);

#endif
