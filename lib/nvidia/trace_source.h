/*
 * trace_source.h - the Trace engine's source: CUPTI activity records turned
 * into kernel, copy, memset and sync batches in device.log.
 *
 * CUPTI hands its buffers over on its own threads; the collector drains them
 * on each pass and asks CUPTI to flush every flush interval, so records reach
 * the log while the program runs.
 */
#ifndef GPUFL_NVIDIA_TRACE_SOURCE_H
#define GPUFL_NVIDIA_TRACE_SOURCE_H

#include "core/collector.h"
#include "nvidia/cupti.h"

typedef struct gpufl_trace_source {
    gpufl_cupti_t *cupti; /* owned */
    gpufl_collector_t *collector;
    gpufl_batch_t kernels, copies, memsets, syncs;
    int64_t next_flush_ns; /* when to ask CUPTI for its partly filled buffers */
    int64_t flush_every_ns;
    uint64_t dropped; /* records CUPTI said it dropped */
    uint64_t dropped_written;
} gpufl_trace_source_t;

/* Loads and starts CUPTI for the settings' options. Returns 0 and fills
 * *source, or GPUFL_ENOTSUP with a one-line reason in why. */
int gpufl__trace_source_init(gpufl_trace_source_t *t, gpufl_collector_t *c,
                             const gpufl_settings_t *settings, char *why, size_t why_size,
                             gpufl_source_t *source);
/* Closes CUPTI (after the collector stopped). Accepts a zeroed struct. */
void gpufl__trace_source_fini(gpufl_trace_source_t *t);

#endif
