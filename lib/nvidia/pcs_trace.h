// SPDX-License-Identifier: Apache-2.0
/*
 * pcs_trace.h - what of Trace's activity the PcSampling engine keeps
 * (option pc_sampling_trace): by default `late`, Trace's kinds turned on
 * after PC sampling is enabled on a context, the measured choice of
 * docs/design/pcs-with-trace.md; the other candidates measured there stay
 * options, `alternate`'s windows switched on the collector thread.
 */
#ifndef GPUFL_NVIDIA_PCS_TRACE_H
#define GPUFL_NVIDIA_PCS_TRACE_H

#include "core/collector.h"
#include "nvidia/cupti.h"
#include "nvidia/launch.h"

#include <stdint.h>

/* In the order of the option's names (gpufl__pcs_trace_modes, core/options.h). */
typedef enum gpufl__pcs_trace_mode {
    GPUFL_PCS_TRACE_LATE,     /* the default: Trace's kinds, on after PC sampling is enabled */
    GPUFL_PCS_TRACE_KERNELS,  /* the concurrent-kernel kind only */
    GPUFL_PCS_TRACE_ALL,      /* Trace's kinds, as Trace enables them */
    GPUFL_PCS_TRACE_NONE,     /* no activity kind: launch rows only */
    GPUFL_PCS_TRACE_EVENTS,   /* no kind: kernel times from CUDA events (kernel_events.h) */
    GPUFL_PCS_TRACE_ALTERNATE /* Trace's kinds in windows between windows without */
} gpufl__pcs_trace_mode_t;

#define GPUFL_PCS_TRACE_SAMPLE_MS_DEFAULT 900 /* alternate: a window with no kind */
#define GPUFL_PCS_TRACE_TRACE_MS_DEFAULT  100 /* alternate: a window with the kinds */

typedef struct gpufl__pcs_trace {
    gpufl__pcs_trace_mode_t mode;
    int64_t sample_ns, trace_ns; /* alternate's window lengths */
    int tracing;                 /* alternate: the kinds are on now */
    int64_t next_switch_ns;      /* alternate: when the current window ends; 0 not begun */
    uint64_t windows;            /* alternate: trace windows opened */
    uint64_t switch_errors;      /* alternate, late: switches CUPTI refused */
    uint64_t enables;       /* late: the enables of PC sampling CUPTI took (restarts included) */
    char refusal[200];      /* the first switch CUPTI refused, "" none */
    int said;               /* the session's pc_sampling_trace event was written */
    char why[200];          /* why the mode asked for does not run, "" when it does */
    int64_t next_forced_ns; /* late: CUPTI's next forced flush, at the latest */
} gpufl__pcs_trace_t;

/* The mode the option pc_sampling_trace names ("late", "none", "kernels",
 * "all", "alternate", "events", any case; NULL or anything else: late), and
 * for alternate its windows (GPUFL_PC_SAMPLING_SAMPLE_MS, _TRACE_MS). */
void gpufl__pcs_trace_init(gpufl__pcs_trace_t *p, const char *mode);

const char *gpufl__pcs_trace_mode_name(gpufl__pcs_trace_mode_t mode);

/* Collector, at each of CUPTI's flushes: whether this one is forced. late's
 * few records (copies, memsets) rarely fill CUPTI's buffers, and an unforced
 * flush completes none, so the pool ran dry and CUPTI dropped 1400 of 3400
 * records on a training loop (H200); a forced flush hands the buffers back,
 * but with them the records still in flight, which have no end time and are
 * lost (9-20 of 3400 when forced at every pass). So late forces it when
 * CUPTI holds half the pool, and once every_ns (the batch hold, which the
 * rows wait for in any case); the other modes never. */
int gpufl__pcs_trace_force_flush(gpufl__pcs_trace_t *p, gpufl__cupti_t *cupti, int64_t now_ns,
                                 int64_t every_ns);

/* The CUPTI flags (GPUFL_CUPTI_*) and whether launches are written as rows
 * (GPUFL_LAUNCH_ROWS) under the mode. */
unsigned int gpufl__pcs_trace_cupti_flags(const gpufl__pcs_trace_t *p);
int gpufl__pcs_trace_launch_rows(const gpufl__pcs_trace_t *p);
/* Whether kernel launches are timed with CUDA event pairs (kernel_events.h). */
int gpufl__pcs_trace_timed(const gpufl__pcs_trace_t *p);

/* After gpufl__cupti_start: alternate begins in a window without the kinds;
 * late too (the trace source holds PC sampling's enables until this ran:
 * pc_sampling.h), unless an enable already came (then the kinds stay on). */
void gpufl__pcs_trace_started(gpufl__pcs_trace_t *p, gpufl__cupti_t *cupti);

/* late (pc_sampling.h's enable hook): the kinds go off just before PC
 * sampling is enabled on a context and on just after; kernel launches leave
 * notes for CUPTI's kernel records while that kind is on, rows while it is
 * not. enabled: whether CUPTI took the enable. Called under the PC sampling
 * engine's lock, which orders the calls; gpufl__pcs_trace_started runs
 * before any (enables are held until it ran) and _finish after the last. */
void gpufl__pcs_trace_around_enable(gpufl__pcs_trace_t *p, gpufl__cupti_t *cupti,
                                    gpufl__launch_t *launch, int before, int enabled);

/* The mode asked for cannot run (why): the session runs `none`, and its
 * event says why. */
void gpufl__pcs_trace_fall_back(gpufl__pcs_trace_t *p, const char *why);

/* Collector: the first call writes an info event naming the mode; under
 * alternate, switches the window when it is due (the kinds and the launch
 * rows together, launch.h). */
void gpufl__pcs_trace_poll(gpufl__pcs_trace_t *p, gpufl__cupti_t *cupti, gpufl__launch_t *launch,
                           gpufl__collector_t *c, int64_t now_ns);
/* Collector: ns until the next switch (INT64_MAX: none). */
int64_t gpufl__pcs_trace_due_in(const gpufl__pcs_trace_t *p, int64_t now_ns);
/* Collector, at the end: alternate's windows and refused switches as an event. */
void gpufl__pcs_trace_finish(gpufl__pcs_trace_t *p, gpufl__collector_t *c);

#endif
