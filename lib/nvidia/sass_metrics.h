// SPDX-License-Identifier: Apache-2.0
/*
 * sass_metrics.h - the SassMetrics engine: CUPTI's SASS Metrics API, which
 * patches every function a context runs so that each SASS instruction's
 * executions are counted exactly (warp and thread executions, global-memory
 * sectors and their coalesced ideal), written as sass_metrics /
 * sass_metric / sass_metrics_stats records (docs/log-format.md); the
 * counted functions' SASS as sass records.
 *
 * Contract (the measured facts behind it: docs/design/sass-metrics.md)
 * - The functions come from the libcupti the Trace engine opened; a CUPTI
 *   without them, or a device CUPTI refuses, makes the engine fail with a
 *   reason, and the session runs one engine lower.
 * - One configuration per device (CUPTI refuses a second one in a process),
 *   set at the first context on it and kept for the process: a later
 *   session reuses it. Counting marks the process as patched, and PC
 *   sampling is refused after that (engine.h). Counting is enabled per context with
 *   lazy patching (eager patching counted nothing on an H100), when the
 *   context is created or, for contexts from before init, at the first
 *   launch gpufl sees on it (that launch only tries the lock).
 * - Counts accumulate on the GPU. They are read once per context, when the
 *   context's work has finished: at finish (the collector waits for each
 *   context with cuCtxSynchronize, then reads) or when the context is being
 *   destroyed (on the destroying thread). Reading while kernels run lost
 *   every later count in the measurements, so nothing reads periodically.
 * - Cubins are copied in the module-load callback and their CRC taken
 *   later, on the collector: no CUPTI call is made inside that callback
 *   while SASS patching may hold CUPTI's locks.
 * - Threads: the hooks run on application threads inside CUPTI callbacks
 *   and wait for the engine's lock 200 ms at most (then give up and count
 *   it); poll, flush and finish run on the collector thread.
 * - Nothing is lost silently: failed calls, records CUPTI dropped at
 *   disable and records gpufl could not keep are counted in the log.
 */
#ifndef GPUFL_NVIDIA_SASS_METRICS_H
#define GPUFL_NVIDIA_SASS_METRICS_H

#include "core/collector.h"
#include "nvidia/cuda.h"
#include "nvidia/cupti.h"
#include "nvidia/launch.h"
#include "nvidia/sass_log.h"

#include <stddef.h>
#include <stdint.h>

#define GPUFL_SASS_METRICS_CONTEXTS_MAX 64
#define GPUFL_SASS_METRICS_DEVICES_MAX  64
#define GPUFL_SASS_METRICS_METRICS      4 /* inst, thread_inst, sectors, sectors_ideal */
#define GPUFL_SASS_METRICS_CUBIN_BYTES  ((size_t)512 << 20) /* cubins kept for disassembly */

typedef struct gpufl__sass_metrics gpufl__sass_metrics_t;

typedef struct gpufl__sass_metrics_stats {
    uint64_t contexts, reads, records, rows, functions, dropped, lost, errors;
    uint64_t configs_reused; /* devices whose configuration an earlier session set */
    double read_ms;
    uint64_t cubins, cubins_skipped, sass_functions, sass_failed;
} gpufl__sass_metrics_stats_t;

/* Resolves the SASS Metrics API in cupti's library. cuda (may be NULL)
 * waits for contexts before the final read; without it the read happens
 * without waiting and says so. disassemble: keep cubins and write sass
 * records. Returns 0, or GPUFL_ENOTSUP / GPUFL_ENOMEM with a one-line
 * reason in why. */
int gpufl__sass_metrics_create(gpufl__sass_metrics_t **out, gpufl__cupti_t *cupti,
                               gpufl__cuda_t *cuda, gpufl__collector_t *collector, int disassemble,
                               char *why, size_t why_size);
/* Disables counting wherever it is still on and frees. Accepts NULL. */
void gpufl__sass_metrics_destroy(gpufl__sass_metrics_t *s);

/* The hooks that feed the engine (resource callbacks and first launches
 * per context); valid until destroy. */
const gpufl__launch_hooks_t *gpufl__sass_metrics_hooks(gpufl__sass_metrics_t *s);
/* The SASS log the engine keeps (NULL without disassembly), which Deep's
 * PC sampling shares. */
gpufl__sass_log_t *gpufl__sass_metrics_sass_log(gpufl__sass_metrics_t *s);

/* Application threads, inside CUPTI callbacks. context is a CUcontext. */
void gpufl__sass_metrics_context_created(gpufl__sass_metrics_t *s, void *context);
int gpufl__sass_metrics_context_seen(gpufl__sass_metrics_t *s,
                                     void *context); /* 0: busy, try again */
void gpufl__sass_metrics_context_destroying(gpufl__sass_metrics_t *s, void *context);
void gpufl__sass_metrics_module_loaded(gpufl__sass_metrics_t *s, const void *cubin, size_t size);

/* Collector thread. poll announces contexts, files cubins and writes what
 * destroyed contexts left; stop reads every context (after its work is
 * done) and ends counting; finish stops if that has not happened, writes
 * the rows, the SASS log's last records and the totals. Deep stops SASS
 * metrics before PC sampling's last drain and disable: disabling PC
 * sampling while kernels were still patched crashed inside CUPTI (an H100,
 * docs/design/sass-metrics.md). */
void gpufl__sass_metrics_poll(gpufl__sass_metrics_t *s);
void gpufl__sass_metrics_flush(gpufl__sass_metrics_t *s);
void gpufl__sass_metrics_stop(gpufl__sass_metrics_t *s);
void gpufl__sass_metrics_finish(gpufl__sass_metrics_t *s);

/* Why no sass records are made, or NULL when they are. */
const char *gpufl__sass_metrics_sass_why(const gpufl__sass_metrics_t *s);
/* Contexts counted now; for the capability record and gpufl info. */
int gpufl__sass_metrics_running(gpufl__sass_metrics_t *s);
/* CUPTI's id of a context counted by the engine, 0 when unknown. */
uint32_t gpufl__sass_metrics_context_id(gpufl__sass_metrics_t *s, void *context);
void gpufl__sass_metrics_stats(gpufl__sass_metrics_t *s, gpufl__sass_metrics_stats_t *out);

#endif
