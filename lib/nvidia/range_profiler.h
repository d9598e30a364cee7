// SPDX-License-Identifier: Apache-2.0
/*
 * range_profiler.h - the RangeProfiler engine: CUPTI's Range Profiler API
 * with user ranges, where a range is a gpufl scope. Per profiled scope:
 * hardware-counter metrics (SM activity, achieved occupancy, L1 and L2
 * hits, DRAM bytes and throughput, tensor-pipe activity), written as
 * range_profiler / range_metrics / range_profiler_stats records
 * (docs/log-format.md).
 *
 * Contract (the measured facts behind it: docs/design/range-profiler.md)
 * - The functions come from the libcupti the Trace engine opened; a CUPTI
 *   without them, or one that refuses the profiler at init, makes the
 *   engine fail with a reason, and the session runs as Trace.
 * - One pass per collection: gpufl cannot replay a scope. Group 0 is what
 *   the configuration image says fits in one pass on the context's chip,
 *   of the metrics gpufl wants; what it cannot hold goes to further
 *   one-pass groups with the GPU time (the L2 lookup miss sum, and the
 *   sub-unit throughputs whose largest is SM throughput when sm__throughput
 *   does not fit). A context collects group 0, and between two visits of
 *   group 0 another group in turn, while switching (Disable, Enable and a
 *   Start that programs the counters: about 0.3 s) stays within
 *   GPUFL_RANGE_PROFILER_SWITCH_PCT of its time since its first range; a
 *   visit lasts until a range past the settling ones came (below), over as
 *   many collections as that takes; so a scope that runs many
 *   times gets every group on some of its instances, and the analysis
 *   derives SM throughput and the L2 hit rate per scope path. Chosen when
 *   the profiler first starts on a device; what fits in no group is left
 *   out and the range_profiler record says why.
 * - The profiler starts on a context in its creation callback when gpufl
 *   was initialised before the context (before its first kernel), else at
 *   the first scope on it: init after the context, or a start the callback
 *   could not make (the engine's lock busy, the context not made current,
 *   the table full, CUPTI refusing there), which leaves no slot or error
 *   behind and is counted as deferred. Slots of destroyed contexts whose
 *   records are out are taken again.
 * - Ranges are per context and CUPTI keeps one stack of them per context,
 *   so a scope becomes a range when it begins on a thread whose current
 *   context has no range open: one level (a second level needs a second
 *   pass). Scopes inside it, scopes of other threads while it is open and
 *   scopes on threads without a current context are counted, not profiled.
 *   Push and pop run on the scope's thread, inside scope begin and end.
 * - Each range is pushed under its scope's id, so CUPTI never merges two
 *   scopes of one name. Ranges are decoded on the scope's thread at the end
 *   of a range when the image is full or a flush interval has passed (a
 *   decode waits for the context's work), and at finish on the collector.
 * - The first GPUFL_RANGE_PROFILER_SETTLE_RANGES ranges after each configuration of a
 *   context are written with "settling": their counters may carry the
 *   profiler's own effect, and the analysis prefers the others. A group
 *   is kept (its collections restarted, no new configuration) until a
 *   range past them came in it.
 * - Threads: the scope hooks run on application threads and take the
 *   engine's lock (they are not inside CUPTI callbacks); the context
 *   destroy callback waits for it 2 s at most; the context-created
 *   callback only tries it, and then holds it through the start (the
 *   first on a device chooses its groups: 1.3-1.9 s on an H100, paid by
 *   the CUDA call that creates the context, and a destroy callback on
 *   another thread meanwhile may give up its wait); poll and finish run
 *   on the collector thread.
 */
#ifndef GPUFL_NVIDIA_RANGE_PROFILER_H
#define GPUFL_NVIDIA_RANGE_PROFILER_H

#include "core/collector.h"
#include "nvidia/cuda.h"
#include "nvidia/cupti.h"
#include "nvidia/launch.h"

#include <stddef.h>
#include <stdint.h>

#define GPUFL_RANGE_PROFILER_CONTEXTS_MAX 64
#define GPUFL_RANGE_PROFILER_DEVICES_MAX  64
#define GPUFL_RANGE_PROFILER_METRICS_MAX  16
#define GPUFL_RANGE_PROFILER_SWITCH_PCT                                                            \
    5 /* default share of time that switching metric groups may take */
#define GPUFL_RANGE_PROFILER_GROUPS_MAX 12 /* one-pass metric sets a device rotates through */
#define GPUFL_RANGE_PROFILER_RANGES_MAX                                                            \
    128 /* ranges one counter data image holds between decodes */
#define GPUFL_RANGE_PROFILER_RESULTS_MAX 65536 /* evaluated ranges waiting for the collector */
#define GPUFL_RANGE_PROFILER_PATH_BYTES  256   /* scope path kept per range (longer ones are cut) */
/* Ranges marked settling after each configuration of a context (its first
 * Start, and every metric-group switch): measured on an H100, the first two
 * kernel launches that write memory after it came with DRAM writes of
 * what L2 held dirty (docs/design/range-profiler.md, "Settling"). Three
 * ranges hold them when each range runs a launch or more, with one empty
 * range before. A context stays in a metric group until a range past
 * these came in it. The count is per context and was measured with one
 * context; L2 is the device's. */
#define GPUFL_RANGE_PROFILER_SETTLE_RANGES 3

typedef struct gpufl__range_profiler gpufl__range_profiler_t;

typedef struct gpufl__range_profiler_stats {
    uint64_t contexts, ranges_pushed, ranges, decodes;
    uint64_t settling; /* of ranges: written with "settling" */
    uint64_t deferred; /* context-created starts left to the first scope */
    uint64_t nested, concurrent, no_context, unprofiled, over_capacity, dropped, lost, open_at_end;
    uint64_t errors;
    double decode_ms, stop_ms, start_ms; /* decode_ms holds the other two */
    uint64_t switches;                   /* the profiler enabled again for another metric group */
    double switch_ms;
} gpufl__range_profiler_stats_t;

/* Resolves the Range Profiler API in cupti's library. cuda gives each
 * scope thread's current context; without it no scope is profiled.
 * decode_every_ns: the longest a range waits in the image before a range
 * end decodes it. Returns 0, or GPUFL_ENOTSUP / GPUFL_ENOMEM with a
 * one-line reason in why. */
int gpufl__range_profiler_create(gpufl__range_profiler_t **out, gpufl__cupti_t *cupti,
                                 gpufl__cuda_t *cuda, gpufl__collector_t *collector,
                                 int64_t decode_every_ns, char *why, size_t why_size);
/* Disables the profiler wherever it is still on and frees. Accepts NULL. */
void gpufl__range_profiler_destroy(gpufl__range_profiler_t *s);

/* Starts following scopes (gpufl__scope_observe). */
void gpufl__range_profiler_observe(gpufl__range_profiler_t *s);
/* The resource hooks (context destruction); valid until destroy. */
const gpufl__launch_hooks_t *gpufl__range_profiler_hooks(gpufl__range_profiler_t *s);

/* Collector thread. poll writes what was evaluated; finish stops following
 * scopes, decodes every context and writes the totals. */
void gpufl__range_profiler_poll(gpufl__range_profiler_t *s);
void gpufl__range_profiler_finish(gpufl__range_profiler_t *s);

void gpufl__range_profiler_stats(gpufl__range_profiler_stats_t *out, gpufl__range_profiler_t *s);

#endif
