// SPDX-License-Identifier: Apache-2.0
/*
 * pc_sampling.h - the PcSampling engine: CUPTI's PC Sampling API in
 * continuous mode on every CUDA context, drained by the collector and written
 * as pc_sampling / pc_sample / pc_window / pc_sampling_stats records
 * (docs/log-format.md); sampled functions' SASS as sass records.
 *
 * Contract
 * - The PC Sampling functions come from the libcupti the Trace engine
 *   opened (gpufl__cupti_symbol); a CUPTI without them makes create fail with
 *   a reason, and the engine stays at Trace.
 * - Contexts are found two ways, each enabling sampling once per context:
 *   the context-created resource callback (before its first kernel), and,
 *   for contexts that existed before init, the first launch gpufl sees on
 *   them (`late`: enabling then costs CUPTI about 0.1 s plus a one-time
 *   slowdown of the next launches, docs/design/pc-sampling.md).
 * - Threads: the context and module entry points run on application
 *   threads inside CUPTI callbacks; poll, flush and finish on the collector
 *   thread. One mutex guards CUPTI's PC sampling calls and the tables; the
 *   application takes it only when a context or module comes or goes, and
 *   waits for it 200 ms at most (2 s for a context's destruction, which a
 *   restart may hold up; then gives up and counts it); a thread's first
 *   launch on a context only tries it (a busy lock defers to the next
 *   launch). Launches wait on the collector only at the launch gate, while
 *   it restarts sampling or (Deep) drains: at most 2 s each.
 * - After finish, the callbacks (which CUPTI delivers until the subscription
 *   ends, later in shutdown) find nothing to do.
 * - Nothing is lost silently: CUPTI's dropped samples, drains that found the
 *   hardware buffer full and failed calls are counted in the log.
 */
#ifndef GPUFL_NVIDIA_PC_SAMPLING_H
#define GPUFL_NVIDIA_PC_SAMPLING_H

#include "core/collector.h"
#include "nvidia/cupti.h"
#include "nvidia/launch.h"

#include <stddef.h>
#include <stdint.h>

#define GPUFL_PC_SAMPLING_PERIOD_DEFAULT 18 /* 2^18 cycles per SM: docs/design/pc-sampling.md */
#define GPUFL_PC_SAMPLING_CONTEXTS_MAX   64
/* GetData's period adapts between these (pc_sampling.c, adapt_drain_period):
 * each call holds the application's launches for its length, about 1.5 ms
 * plus 0.5 ms per 100 ms of data on an H100, so fewer calls cost less; the
 * shortest is CUPTI's decode period. */
#define GPUFL_PC_SAMPLING_DRAIN_MIN_NS (100 * 1000000LL)
#define GPUFL_PC_SAMPLING_DRAIN_MAX_NS (500 * 1000000LL)
#define GPUFL_PC_SAMPLING_CUBIN_BYTES  ((size_t)512 << 20) /* cubins kept for disassembly */

typedef struct gpufl__pc_sampling gpufl__pc_sampling_t;

typedef struct gpufl__pc_sampling_config {
    int period;        /* exponent, 5..31 */
    int64_t window_ns; /* pc_sample rows are written per window of this length */
    int disassemble;   /* capture cubins and write sass records */
    /* Deep: the SassMetrics engine's SASS log, which keeps the cubins and
     * finishes the log; PC sampling only asks it for functions. NULL: the
     * engine keeps its own. */
    struct gpufl__sass_log *shared_sass;
    /* Deep: SASS metrics count beside sampling (with or without the shared
     * log), so sampling is never disabled and enabled again mid-run, and
     * the periodic drains pass the launch gate. */
    int deep;
} gpufl__pc_sampling_config_t;

typedef struct gpufl__pc_sampling_stats {
    uint64_t contexts, drains, samples, recorded, non_user, dropped, buffer_full, lost, rows,
        functions, errors;
    uint64_t cubins, cubins_skipped, sass_functions, sass_failed;
    uint64_t drains_deferred; /* periodic drains put off: a launch stayed in the gate */
    uint64_t modules_loaded, modules_unloaded; /* during the session */
    uint64_t restarts; /* sampling restarted on a context after the hardware buffer filled */
    /* PC records CUPTI gave without a function name (pc_sampling.c,
     * gpufl__engine_guard_names), those named from their module's symbol table, the
     * samples of those without a module, and the NULL names libcupti's
     * strdup was given. */
    uint64_t unnamed_records, unnamed_named, unplaced, cupti_null_names;
    /* PC records left out whole: more samples than the GPU takes in the time */
    uint64_t implausible_records;
    /* The GetData period: set by GPUFL_PC_SAMPLING_DRAIN_MS (1) or adapted
     * (0), and the times it was shortened: a drain brought many PCs, left
     * some behind, or found the hardware buffer full. */
    uint64_t drain_fixed, drain_shortened;
} gpufl__pc_sampling_stats_t;

/* Resolves the PC Sampling API in cupti's library. Returns 0, or
 * GPUFL_ENOTSUP / GPUFL_ENOMEM with a one-line reason in why. */
int gpufl__pc_sampling_create(gpufl__pc_sampling_t **out, gpufl__cupti_t *cupti,
                              gpufl__collector_t *collector, const gpufl__pc_sampling_config_t *cfg,
                              char *why, size_t why_size);
/* Disables sampling everywhere still enabled and frees. Accepts NULL. */
void gpufl__pc_sampling_destroy(gpufl__pc_sampling_t *p);

/* The callbacks' hooks that feed the entry points below (resource
 * callbacks and first launches per context); valid until destroy. */
const gpufl__launch_hooks_t *gpufl__pc_sampling_hooks(gpufl__pc_sampling_t *p);

/* Application threads, inside CUPTI callbacks. context is a CUcontext. */
void gpufl__pc_sampling_context_created(gpufl__pc_sampling_t *p, void *context);
/* A launch on it: returns 1 when the context is handled (or known), 0 when
 * the engine was busy and the next launch should try again. Never waits. */
int gpufl__pc_sampling_context_seen(gpufl__pc_sampling_t *p, void *context);
void gpufl__pc_sampling_context_destroying(gpufl__pc_sampling_t *p, void *context);
void gpufl__pc_sampling_module_loaded(gpufl__pc_sampling_t *p, void *context, const void *cubin,
                                      size_t size);
void gpufl__pc_sampling_module_unloading(gpufl__pc_sampling_t *p, void *context);

/* The launch gate (launch.h): sampling restarts after a full hardware
 * buffer pass it always (a disable and enable while the application
 * launched hung both on an H100), and under Deep (cfg.deep) so do the
 * periodic drains, so that no GetData runs while a launch is inside the
 * driver, where SASS metrics patch a function at its first launch. A
 * GetData crashed inside CUPTI under Deep and the first analysis blamed
 * that patching; the cause was CUPTI's strdup of a record without a name,
 * under PcSampling too, which the gate did not prevent and pc_sampling.c
 * now guards (gpufl__engine_guard_names), so the gate is a precaution whose benefit is
 * not measured (docs/design/pc-sampling.md). A drain that cannot close the
 * gate within GPUFL_PC_SAMPLING_GATE_WAIT_NS is put off (counted) and tried again
 * after GPUFL_PC_SAMPLING_GATE_RETRY_NS, doubling each time it fails again up to
 * the drain period; a restart is tried after the next drain. Set before
 * the callbacks start; NULL before the gate goes. */
#define GPUFL_PC_SAMPLING_GATE_WAIT_NS  200000000LL
#define GPUFL_PC_SAMPLING_GATE_RETRY_NS 10000000LL
void gpufl__pc_sampling_set_gate(gpufl__pc_sampling_t *p, gpufl__launch_t *gate);

/* Called with before = 1 just before PC sampling is enabled on a context
 * (also a restart's), and with 0 just after (enabled: whether CUPTI took
 * it), on the thread that enables it, under the engine's lock.
 * CUPTI's copy and memset kinds, on while sampling is enabled on a context,
 * take every sample of that context away from its PC (measured on an H200,
 * docs/design/pcs-with-trace.md); turned on after, they do not. Set before
 * the callbacks start. */
typedef void (*gpufl__pc_sampling_enable_hook_t)(void *user, int before, int enabled);

/* While held, no context is enabled: one created meanwhile is enabled at its
 * first kernel launch after the hold. The trace source holds enables until
 * its activity kinds are set up, so that an enable never comes before them. */
void gpufl__pc_sampling_hold_enables(gpufl__pc_sampling_t *p, int hold);
void gpufl__pc_sampling_set_enable_hook(gpufl__pc_sampling_t *p,
                                        gpufl__pc_sampling_enable_hook_t hook, void *user);

/* Collector thread. poll drains CUPTI when due; flush writes what is
 * ready; finish drains and disables every context and writes the totals. */
void gpufl__pc_sampling_poll(gpufl__pc_sampling_t *p, int64_t now_ns);
void gpufl__pc_sampling_flush(gpufl__pc_sampling_t *p);
void gpufl__pc_sampling_finish(gpufl__pc_sampling_t *p);

/* CUPTI's id of a context (a CUcontext), 0 when unknown. Collector. */
uint32_t gpufl__pc_sampling_context_id(gpufl__pc_sampling_t *p, void *context);
/* How long until the next drain is due (the collector's wait). */
int64_t gpufl__pc_sampling_due_in(gpufl__pc_sampling_t *p, int64_t now_ns);
/* Why no sass records are made (no nvdisasm, say), or NULL when they are. */
const char *gpufl__pc_sampling_sass_why(const gpufl__pc_sampling_t *p);
/* Contexts on which sampling runs now; for the capability record. */
int gpufl__pc_sampling_running(gpufl__pc_sampling_t *p);
void gpufl__pc_sampling_stats(gpufl__pc_sampling_stats_t *out, gpufl__pc_sampling_t *p);

#endif
