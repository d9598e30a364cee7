// SPDX-License-Identifier: Apache-2.0
/*
 * export_timeline.h - the timeline both trace formats write, built once from
 * the model: tracks, and every slice and counter value as one small row in
 * time order. The writers (export_chrome.c, export_perfetto.c) only render
 * it: names and arguments come from the functions below, so both formats
 * say the same thing.
 *
 * Nesting is repaired here, never in a writer: on a thread track a slice
 * that would outlive the one enclosing it is cut at its end (counted); on a
 * GPU track work that overlaps goes to an extra lane track instead, so no
 * GPU time is ever shortened.
 */
#ifndef GPUFL_ANALYSIS_EXPORT_TIMELINE_H
#define GPUFL_ANALYSIS_EXPORT_TIMELINE_H

#include "analysis/export_trace.h"
#include "analysis/model.h"

#include <stddef.h>
#include <stdint.h>

/* What a row is (also the order of rows with equal keys). */
typedef enum gpufl__export_kind {
    GPUFL_EXPORT_SCOPE = 0,
    GPUFL_EXPORT_SYNC = 1,
    GPUFL_EXPORT_LAUNCH = 2, /* the launching call of kernel `index` */
    GPUFL_EXPORT_KERNEL = 3,
    GPUFL_EXPORT_COPY = 4,
    GPUFL_EXPORT_MEMSET = 5,
    GPUFL_EXPORT_COUNTER = 6, /* a value of its track's metric; `index`: the sample */
    /* a launch row (PcSampling, Deep: no kernel rows), an instant on the
     * launching thread; `index` into m->launches */
    GPUFL_EXPORT_LAUNCH_CALL = 7
} gpufl__export_kind_t;

/* The metrics drawn as counter tracks. */
typedef enum gpufl__export_metric {
    GPUFL_EXPORT_GPU_UTIL = 0, /* gpu_util_pct */
    GPUFL_EXPORT_GPU_MEM_USED, /* mem_used_bytes */
    GPUFL_EXPORT_GPU_POWER,    /* power_mw, shown in W */
    GPUFL_EXPORT_GPU_SM_CLOCK, /* clock_sm_mhz */
    GPUFL_EXPORT_GPU_TEMP,     /* temp_gpu_c */
    GPUFL_EXPORT_GPU_SM_ACTIVE,
    GPUFL_EXPORT_HOST_CPU,
    GPUFL_EXPORT_PROC_CPU,
    GPUFL_EXPORT_PROC_RSS,
    GPUFL_EXPORT_METRICS
} gpufl__export_metric_t;

typedef enum gpufl__export_track_kind {
    GPUFL_EXPORT_TRACK_THREAD = 0,
    GPUFL_EXPORT_TRACK_GPU = 1,
    GPUFL_EXPORT_TRACK_COUNTER = 2
} gpufl__export_track_kind_t;

/* The thread-kind group of NVTX start/end ranges (they may start and end on
 * different threads and overlap): laid out in lanes like rows of no thread. */
#define GPUFL_EXPORT_NVTX_TID (-2)
/* A GPU track's stream for the copies and memsets of a device. */
#define GPUFL_EXPORT_COPY_STREAM INT64_MIN
/* Lanes one GPU stream (or a device's copies) may spread over. */
#define GPUFL_EXPORT_LANES_MAX 32
/* A launch is drawn this long, or shorter when the thread does something
 * else sooner: the log has the call's start, not its duration. */
#define GPUFL_EXPORT_LAUNCH_NS 1000
/* Flow (arrow) ids: kernel index + this. */
#define GPUFL_EXPORT_FLOW_BASE 1

typedef struct gpufl__export_track {
    gpufl__export_track_kind_t kind;
    int64_t tid;                  /* thread tracks; GPUFL_MODEL_UNKNOWN: rows without a thread */
    int32_t device;               /* GPU and GPU counter tracks; -1 for host counters */
    int64_t stream;               /* GPU tracks: the stream, or GPUFL_EXPORT_COPY_STREAM */
    unsigned lane;                /* GPU tracks: 0, or the overlap lane */
    gpufl__export_metric_t metric; /* counter tracks */
    int metric_is_bytes;          /* counter tracks: values are bytes */
    char name[128];
    int64_t chrome_tid; /* Chrome JSON: the thread id it is shown as */
    int32_t sort_index; /* CPU threads first, then GPUs, then counters */
} gpufl__export_track_t;

typedef struct gpufl__export_row {
    int64_t start_ns, end_ns; /* end_ns == start_ns for counters */
    uint32_t track;           /* index in tracks */
    uint32_t index;           /* in the model array of its kind */
    uint16_t lane;            /* internal while building */
    uint8_t kind;             /* gpufl__export_kind_t */
    uint8_t depth;            /* nesting on its track, 0 outermost (capped at 255) */
    uint8_t flow;             /* a launch or kernel with an arrow between them */
    uint8_t metric;           /* counters */
} gpufl__export_row_t;

typedef struct gpufl__export_timeline {
    const gpufl__model_t *m;
    gpufl__export_track_t *tracks;
    size_t n_tracks;
    gpufl__export_row_t *rows; /* by start, then depth, track, kind, index */
    size_t n_rows;
    int64_t pid; /* from the header; 0 when unknown */
    char process_name[160];
    int64_t end_ns;     /* where open scopes are drawn to */
    uint64_t clipped;   /* slices cut to nest */
    uint64_t flows;     /* kernels with a launch arrow */
    uint64_t no_launch; /* kernels without a launch time */
    uint64_t slices, counters;
} gpufl__export_timeline_t;

/* Builds the timeline of m into *tl. Returns 0 or GPUFL_ENOMEM (tl is then
 * empty). Free with gpufl__export_timeline_fini(). */
int gpufl__export_timeline_build(const gpufl__model_t *m, gpufl__export_timeline_t *tl);
void gpufl__export_timeline_fini(gpufl__export_timeline_t *tl);

/* The name a row is shown with ("train_step", "cudaStreamSynchronize", a
 * kernel's demangled name, "Memcpy HtoD"); counters: their track's name. */
const char *gpufl__export_row_name(const gpufl__export_timeline_t *tl,
                                   const gpufl__export_row_t *r);
/* The category of a row: "scope", "sync", "launch", "kernel", "memcpy", "memset", "counter"
 * (launch calls: "launch"). */
const char *gpufl__export_kind_name(gpufl__export_kind_t kind);

/* "file:line in function" for the application code a stack comes from, written
 * into buf: "<driver-internal>" when no frame is the application's; NULL when
 * the stack is unknown (no stack id, or no record of it). */
const char *gpufl__export_site(const gpufl__model_t *m, int64_t stack, char *buf, size_t size);

/* Receives the arguments of a row, in a fixed order; keys are literals. */
typedef struct gpufl__export_args {
    void (*str)(void *user, const char *key, const char *value);
    void (*i64)(void *user, const char *key, int64_t value);
    void (*dbl)(void *user, const char *key, double value);
    void *user;
} gpufl__export_args_t;
/* Calls back once per known argument of a slice row (none for counters). */
void gpufl__export_row_args(const gpufl__export_timeline_t *tl, const gpufl__export_row_t *r,
                            const gpufl__export_args_t *out);

/* A counter row's value: 0 with *i set for integral metrics, 1 with *d set
 * for the others (percentages of GPM and the host, watts). */
int gpufl__export_counter_value(const gpufl__export_timeline_t *tl, const gpufl__export_row_t *r,
                                int64_t *i, double *d);

/* The writers: export_chrome.c, export_perfetto.c. Same contract as
 * gpufl__export_write(); they add to *res. */
int gpufl__export_chrome(gpufl_export_result_t *res, const gpufl__export_timeline_t *tl,
                         const gpufl_export_options_t *opt);
int gpufl__export_perfetto(gpufl_export_result_t *res, const gpufl__export_timeline_t *tl,
                           const gpufl_export_options_t *opt);

#endif
