// SPDX-License-Identifier: Apache-2.0
/*
 * trace_source.h - the Trace engine's source: CUPTI activity records turned
 * into kernel, copy, memset, sync, allocation and graph-launch batches in
 * device.log, each joined with what the launching thread knew (its scope,
 * the kernel's configuration and occupancy) through launch.h.
 *
 * CUPTI hands its buffers over on its own threads; the collector drains them
 * on each pass and asks CUPTI to flush every flush interval, so records reach
 * the log while the program runs.
 */
#ifndef GPUFL_NVIDIA_TRACE_SOURCE_H
#define GPUFL_NVIDIA_TRACE_SOURCE_H

#include "core/collector.h"
#include "core/ops.h"
#include "core/stack_log.h"
#include "nvidia/cuda.h"
#include "nvidia/cupti.h"
#include "nvidia/cupti_values.h"
#include "nvidia/kernel_events.h"
#include "nvidia/launch.h"
#include "nvidia/pc_sampling.h"
#include "nvidia/pcs_trace.h"
#include "nvidia/range_profiler.h"
#include "nvidia/sass_metrics.h"

/* Counts of a session's Trace records, written as trace_stats at its end. */
typedef struct gpufl__trace_counts {
    uint64_t kernels, copies, memsets, syncs, allocs, graph_launches, launches;
    uint64_t unattributed; /* kernel, copy, memset or sync records without a launch note */
} gpufl__trace_counts_t;

/* The activity batches: kernels, copies, memsets, syncs, allocs, graphs, launches. */
#define GPUFL_TRACE_BATCHES 7

typedef struct gpufl__trace_source {
    gpufl__cupti_t *cupti;   /* owned */
    gpufl__cuda_t *cuda;     /* owned; NULL without libcuda (no occupancy) */
    gpufl__launch_t *launch; /* owned */
    gpufl__collector_t *collector;
    gpufl__batch_t kernels, copies, memsets, syncs, allocs, graphs, launches;
    uint32_t *demangled; /* dict id of a name -> dict id of its demangled form, 0 not yet */
    uint32_t demangled_cap;
    int64_t next_flush_ns; /* when to ask CUPTI for its completed buffers */
    int64_t flush_every_ns;
    /* Per activity batch (kernels .. launches): since when its rows wait for more rows of their
     * line, and how many it held at the last pass; they wait up to hold_ns (batch_hold_ms). */
    int64_t held_since_ns[GPUFL_TRACE_BATCHES], hold_ns;
    size_t held_rows[GPUFL_TRACE_BATCHES];
    uint64_t dropped; /* records CUPTI said it dropped */
    uint64_t dropped_written;
    gpufl__trace_counts_t counts;
    gpufl__value_misses_t misses; /* CUPTI numbers with no gpufl value (cupti_values.h) */
    int misses_said;              /* the cupti_value_unmapped event was written */
    char occupancy_why[160];      /* why there is no occupancy, "" when there is */
    int stacks_on;                /* enable_stack_trace: stacks captured and written */
    gpufl__stack_log_t stack_log;
    gpufl__pc_sampling_t *pc_sampling; /* owned; the PcSampling engine, NULL when it does not run */
    char pc_sampling_why[240];         /* why it does not, "" when it does or was not asked for */
    gpufl__pcs_trace_t pcs_trace;      /* PcSampling alone: the activity kept beside sampling */
    int pcs_trace_on;                  /* pcs_trace applies (PcSampling runs, without Deep) */
    const char *kernel_times_why;      /* why kernels are launch rows (static), NULL: timed */
    gpufl__kernel_events_t *events;    /* owned; pcs_trace `events`: launches timed by events */
    gpufl__kernel_launch_t *pending;   /* timed launches whose events are not done yet */
    size_t n_pending;                  /* at most one per event pair */
    int finishing;                     /* the last pass: wait for the events */
    gpufl__sass_metrics_t
        *sass_metrics;          /* owned; the SassMetrics engine (also under Deep), or NULL */
    char sass_metrics_why[240]; /* why it does not run, "" when it does or was not asked for */
    gpufl__range_profiler_t *range_profiler; /* owned; the RangeProfiler engine, or NULL */
    char range_profiler_why[240]; /* why it does not run, "" when it does or was not asked for */
    gpufl__launch_hooks_t both;   /* Deep: the callbacks feed both engines, */
    gpufl__launch_hooks_t to_pc_sampling, to_sass_metrics; /* through copies of their hooks */
    int ops_attached;       /* framework op ids (gpufl_ops.h) go to CUPTI */
    uint32_t ops_written;   /* op names written into this session's log */
    uint64_t ops_lost_seen; /* the device file's lost lines when they were */
    void *last_context;     /* the context of the last launch row, and its CUPTI id */
    uint32_t last_context_id;
} gpufl__trace_source_t;

/* Loads and starts CUPTI for the settings' options. Returns 0 and fills
 * *source, or GPUFL_ENOTSUP with a one-line reason in why. */
int gpufl__trace_source_init(gpufl__trace_source_t *t, gpufl__collector_t *c,
                             const gpufl__settings_t *settings, char *why, size_t why_size,
                             gpufl__source_t *source);
/* Closes CUPTI (after the collector stopped). Accepts a zeroed struct. */
void gpufl__trace_source_fini(gpufl__trace_source_t *t);

#endif
