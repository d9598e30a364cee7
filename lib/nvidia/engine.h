// SPDX-License-Identifier: Apache-2.0
/*
 * engine.h - what the CUPTI engines above Trace (PcSampling, SassMetrics,
 * RangeProfiler) share: resolving their CUPTI functions by name, starting
 * the profiler, one-line messages for failed calls, the bounded wait
 * application threads make for an engine's lock, the count of failed calls
 * written as events, and the totals record each engine writes before
 * session_end.
 */
#ifndef GPUFL_NVIDIA_ENGINE_H
#define GPUFL_NVIDIA_ENGINE_H

#include "core/collector.h"
#include "core/wire_engines.h"
#include "nvidia/cupti.h"

#include <cupti.h>
#include <cupti_profiler_target.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Application threads inside CUPTI's callbacks wait for an engine's lock
 * this long at most: the collector holds it across CUPTI calls, and should
 * CUPTI ever need, inside one, a driver lock the callback's thread holds,
 * waiting would never end. A callback that gives up is counted. */
#define GPUFL_ENGINE_CALLBACK_LOCK_MS 200
/* A context's destruction waits longer: an engine may hold its lock for a
 * slow CUPTI step (a range profiler group switch, about 0.3 s on an H100; a
 * PC sampling restart, about 0.5 s), and a context left to an engine after
 * it is gone is worse than the wait. */
#define GPUFL_ENGINE_DESTROY_LOCK_MS 2000

/* Keeps a function-name string CUPTI gave (PC sampling and SASS metrics
 * records; the API leaves them to the client to free) for the life of the
 * process: CUPTI copies each name once into a cache of the whole process
 * and hands the same copy to later records, a later session's included,
 * so a session that freed it would leave the next one a freed string
 * (measured: a double free at the second PcSampling session's end in one
 * process, docs/design/pc-sampling.md). Bounded by the distinct names; kept
 * reachable, so no leak checker counts them. Any thread; NULL is ignored. */
void gpufl__engine_keep_name(const char *name);

/* CUPTI's defect (CUPTI 2025.3.1 on an H100, docs/design/pc-sampling.md,
 * "A function without a name"): its name cache, behind the function names
 * of PC sampling records (and, it may be, SASS metrics records), copies a
 * missing name with strdup(NULL), which killed about half of the long
 * training runs at period 2^16. Points libcupti's own import of strdup
 * (rebind.h; `inside` is any CUPTI function) at a copy that turns NULL
 * into "" and counts it; once a process, later calls give the first's
 * answer. Returns 0, or a negative GPUFL_E* code with the reason in why. */
int gpufl__engine_guard_names(const void *inside, char *why, size_t why_size);
/* NULL names the guard copied in this process. */
uint64_t gpufl__engine_null_names(void);

/* SASS metrics patched kernels in this process (any session, any context):
 * marked when counting is enabled on a context. CUPTI keeps the patched
 * code, so PC samples taken later in the process fall in CUPTI's non-user
 * count (95 to 100 % of them, measured on an H100), and PC sampling after a
 * Deep session faulted in CUPTI (cuptiPCSamplingDisable joining a worker
 * thread through a handle that was no longer valid) or corrupted the heap:
 * the engines refuse PC
 * sampling once this is set (docs/design/pc-sampling.md, "Sessions one
 * after another"). Any thread. */
void gpufl__engine_mark_patched(void);
int gpufl__engine_patched(void);
/* Tests only: forgets the mark, as a new process would start. */
void gpufl__engine_forget_patched(void);

/* A CUPTI function to resolve: the address of the engine's pointer, its name. */
typedef struct gpufl__engine_sym {
    void *slot;
    const char *name;
} gpufl__engine_sym_t;

/* Resolves every symbol in cupti's library. Returns 0, or GPUFL_ENOTSUP
 * with why = "<library> lacks <name> (<needs>)" for the first one missing. */
int gpufl__engine_resolve(gpufl__cupti_t *cupti, const gpufl__engine_sym_t *syms, size_t n,
                          const char *needs, char *why, size_t why_size);

/* "<what> failed: <CUPTI's name of r> (CUPTI error <r>)"; result_string may
 * be NULL (then "unknown error"). */
void gpufl__engine_explain(CUptiResult (*result_string)(CUptiResult, const char **), CUptiResult r,
                           const char *what, char *out, size_t size);

/* cuptiProfilerInitialize through init: CUPTI_SUCCESS, or the failed result
 * with why = "cuptiProfilerInitialize failed: ...". */
CUptiResult gpufl__engine_profiler_init(CUptiResult (*init)(CUpti_Profiler_Initialize_Params *),
                                        CUptiResult (*result_string)(CUptiResult, const char **),
                                        char *why, size_t why_size);

/* 1 when r says CUPTI's profiler will not run in this process at all (not
 * supported, no privileges, a virtualised, confidential, CMP, MIG, SLI or
 * WSL device): the engine stops at init instead of trying later. */
int gpufl__engine_refusal(CUptiResult r);

/* A whole number from the environment variable name within [lo, hi], else
 * fallback; a value set but not such a number is said (a warning naming
 * what it should be: "a number of ms", "a whole percentage"). Tuning and
 * diagnosis knobs only (docs/options.md). */
long gpufl__engine_env_long(const char *name, long lo, long hi, long fallback, const char *what);
/* The same, the warning ending with otherwise (what the fallback means, as
 * "the period adapts") instead of "using <fallback>". */
long gpufl__engine_env_long_else(const char *name, long lo, long hi, long fallback,
                                 const char *what, const char *otherwise);

/* Failed calls: counted, the latest kept, written as one event per pass. */
typedef struct gpufl__engine_errors {
    uint64_t count, reported;
    char last[240];
    _Atomic uint64_t lock_timeouts; /* callbacks that gave up on the lock, not yet counted */
} gpufl__engine_errors_t;

/* Caller holds the engine's lock. */
void gpufl__engine_note_error(gpufl__engine_errors_t *e, const char *message);
/* Takes m within ms, or counts a give-up in e and returns -1. */
int gpufl__engine_lock_within(pthread_mutex_t *m, int ms, gpufl__engine_errors_t *e);
/* Collector, engine's lock held: the errors since the last call as one
 * `warn` event named code, "<prefix>: <latest> (<n> failed calls so far)";
 * a give-up on the lock becomes the latest error: "<waiter> gave up
 * waiting 200 ms for the collector (<effect>)". */
void gpufl__engine_report_errors(gpufl__engine_errors_t *e, gpufl__collector_t *c,
                                 const char *prefix, const char *code, const char *waiter,
                                 const char *effect);

/* One count of a totals record. */
typedef gpufl__wire_count_t gpufl__engine_count_t;

/* Writes a totals record of type to device.log: ts_ns (now), the counts,
 * then the measures (wire_engines.h), and hands it to the session's sinks. */
void gpufl__engine_write_totals(gpufl__collector_t *c, const char *type,
                                const gpufl__engine_count_t *counts, size_t ncounts,
                                const gpufl__wire_measure_t *measures, size_t nmeasures);

#endif
