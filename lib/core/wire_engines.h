// SPDX-License-Identifier: Apache-2.0
/*
 * wire_engines.h - the records the GPU profiling engines write once per
 * context, per range or per function, and their totals, as typed structs
 * the engine fills; wire_engines.c encodes them (docs/log-format.md).
 *
 * The fields are what the record says, not how a vendor's API names it:
 * a backend turns its own values into these before it hands them over.
 */
#ifndef GPUFL_CORE_WIRE_ENGINES_H
#define GPUFL_CORE_WIRE_ENGINES_H

#include "core/wire.h"

/* A list of names (metrics, stall reasons, files). */
typedef struct gpufl__wire_names {
    const char *const *names;
    int count;
} gpufl__wire_names_t;

/* One measure of a totals record after its counts: a number with decimals
 * (1 to 3; negative values are written as null), or, with decimals 0, an
 * integer. */
typedef struct gpufl__wire_measure {
    const char *key;
    double value;
    int decimals;
} gpufl__wire_measure_t;

/* An engine's totals (`<engine>_stats`): ts_ns, the counts, the measures. */
void gpufl__wire_totals(gpufl__line_t *l, const char *type, int64_t ts_ns,
                        const gpufl__wire_count_t *counts, size_t ncounts,
                        const gpufl__wire_measure_t *measures, size_t nmeasures);

/* pc_sampling: how sampling started on one context, or why it did not. */
typedef struct gpufl__wire_pc_sampling {
    int64_t ts_ns;
    int64_t device, context;
    int late; /* started on a context created before the session */
    double enable_ms;
    const char *error; /* not NULL: written instead of the configuration */
    int64_t period;
    const char *mode;
    int64_t scratch_bytes, hardware_buffer_bytes, worker_sleep_ms;
    gpufl__wire_names_t reasons; /* the stall reasons the rows' columns name */
} gpufl__wire_pc_sampling_t;
void gpufl__wire_pc_sampling(gpufl__line_t *l, const gpufl__wire_pc_sampling_t *r);

/* sass_metrics: how instruction counting started on one context. */
typedef struct gpufl__wire_sass_metrics {
    int64_t ts_ns;
    int64_t device, context;
    int late;
    double enable_ms;
    const char *error; /* not NULL: written instead of the configuration */
    const char *chip;
    gpufl__wire_names_t metrics;
    int lazy; /* counts are read when a context is done, not as it runs */
} gpufl__wire_sass_metrics_t;
void gpufl__wire_sass_metrics(gpufl__line_t *l, const gpufl__wire_sass_metrics_t *r);

/* range_profiler: one context's metric plan, or why it never collected. */
typedef struct gpufl__wire_range_profiler {
    int64_t ts_ns;
    int64_t device, context;
    double enable_ms;
    const char *started_at;
    const char *error; /* not NULL: written instead of the plan */
    int planned;       /* without an error: 1 when the plan below is known */
    const char *chip;
    gpufl__wire_names_t metrics; /* the first group's */
    const gpufl__wire_names_t *groups;
    int ngroups;
    gpufl__wire_names_t sm_throughput_of;          /* count 0: not written */
    const char *const *left_out, *const *left_why; /* a metric, why it is left out */
    int nleft;
    int64_t max_ranges, nesting_levels;
    int one_pass;
    double plan_ms;
} gpufl__wire_range_profiler_t;
void gpufl__wire_range_profiler(gpufl__line_t *l, const gpufl__wire_range_profiler_t *r);

/* range_metrics: one evaluated range; a value that is not finite is null
 * and its metric listed as unevaluated. */
typedef struct gpufl__wire_range_metrics {
    int64_t ts_ns, start_ns;
    int64_t context, scope;
    uint32_t path; /* dict id */
    int64_t tid, group;
    int settling;
    const char *const *metrics;
    const double *values;
    int count;
} gpufl__wire_range_metrics_t;
void gpufl__wire_range_metrics(gpufl__line_t *l, const gpufl__wire_range_metrics_t *r);

/* One instruction of a sass record; file is an index into the record's
 * files, negative (with line) when unknown. */
typedef struct gpufl__wire_instruction {
    int64_t pc;
    const char *text;
    int32_t file;
    int64_t line;
} gpufl__wire_instruction_t;

/* sass: one function's instructions, or why they are missing. */
typedef struct gpufl__wire_sass {
    uint32_t cubin, function; /* dict ids */
    const char *error;        /* not NULL: the only member after them */
    const char *arch;
    gpufl__wire_names_t files;
    const gpufl__wire_instruction_t *instructions;
    size_t count;
    int truncated;
} gpufl__wire_sass_t;
void gpufl__wire_sass(gpufl__line_t *l, const gpufl__wire_sass_t *r);

/* kernel_config: one launch configuration of a kernel, interned (launch
 * rows name its id), with its occupancy or why that is unknown. */
typedef struct gpufl__wire_kernel_config {
    int64_t ts_ns, id;
    const char *name;
    int64_t block_threads, dynamic_smem_bytes;
    const char *occupancy_unknown; /* not NULL: why, and nothing after it */
    int64_t device, registers, static_smem_bytes, local_bytes_per_thread, max_threads_per_block;
    int64_t blocks_per_sm, active_warps, max_warps;
    double occupancy;
    int have_limits; /* the breakdown below was computed */
    int64_t limit_warps, limit_registers, limit_smem, limit_blocks;
    const char *limiter;
    int breakdown_agrees;
} gpufl__wire_kernel_config_t;
void gpufl__wire_kernel_config(gpufl__line_t *l, const gpufl__wire_kernel_config_t *k);

#endif
