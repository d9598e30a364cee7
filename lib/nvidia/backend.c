// SPDX-License-Identifier: Apache-2.0
/*
 * backend.c - the NVIDIA backend (core/backend.h): NVML for the device
 * sampler, CUPTI for the Trace engine and the engines above it (PC sampling,
 * SASS metrics, the range profiler), and their entries of the capability
 * record with the engine ladder's reasons and downgrade warnings.
 */
#include "core/backend.h"
#include "nvidia/gpu_sampler.h"
#include "nvidia/probe.h"
#if GPUFL_HAVE_CUPTI
#include "nvidia/nvtx.h"
#include "nvidia/trace_source.h"
#endif
#include "util/log.h"

#include <stdio.h>
#include <string.h>

/* The session's NVIDIA state: one session at a time (session.c's lock). */
static struct nvidia_state {
    int running;                  /* NVML answered */
    char why[256];                /* why NVML is off, when it is */
    gpufl__nvml_t *nvml;          /* opened, not yet handed to the sampler */
    gpufl__gpu_sampler_t gpu;     /* zeroed when the sampler does not run */
    gpufl_engine_t engine;        /* the engine that runs */
    char trace_why[256];          /* why CUPTI tracing is off, when it is */
    char pc_sampling_why[256];    /* why PC sampling is off when it was asked for */
    char sass_metrics_why[256];   /* why SASS metrics are off when they were asked for */
    char range_profiler_why[256]; /* why the range profiler is off when it was asked for */
#if GPUFL_HAVE_CUPTI
    gpufl__trace_source_t trace; /* zeroed unless the Trace engine runs */
#endif
} st;

static int nvidia_open(const gpufl__settings_t *s, char *why, size_t why_size) {
    (void)s;
    st.nvml = NULL;
    int rc = gpufl__nvml_open(&st.nvml, NULL, st.why, sizeof st.why);
    st.running = rc == 0;
    if (rc) st.nvml = NULL;
    snprintf(why, why_size, "%s", st.why);
    return rc;
}

/* Starts the Trace engine's source when an engine from Trace up is asked for. */
static void nvidia_start_engine(gpufl__collector_t *c, const gpufl__settings_t *s,
                                const char *off_why, gpufl_engine_t *engine,
                                gpufl__source_t *source, int *have_source) {
    *have_source = 0;
    st.engine = GPUFL_ENGINE_MONITOR;
    st.trace_why[0] = st.pc_sampling_why[0] = st.sass_metrics_why[0] = st.range_profiler_why[0] =
        '\0';
    if (off_why) {
        st.running = 0;
        st.nvml = NULL;
        snprintf(st.why, sizeof st.why, "%s", off_why);
    }
    *engine = st.engine;
    if (s->profiling_engine == GPUFL_ENGINE_MONITOR) {
        snprintf(st.trace_why, sizeof st.trace_why, "engine Monitor runs no CUPTI");
        return;
    }
    if (off_why) {
        snprintf(st.trace_why, sizeof st.trace_why, "CUPTI needs the NVIDIA backend");
        return;
    }
#if GPUFL_HAVE_CUPTI
    if (gpufl__trace_source_init(&st.trace, c, s, st.trace_why, sizeof st.trace_why, source) == 0) {
        st.engine = GPUFL_ENGINE_TRACE;
        *have_source = 1;
        if (st.trace.pc_sampling != NULL && st.trace.sass_metrics != NULL)
            st.engine = GPUFL_ENGINE_DEEP;
        else if (st.trace.pc_sampling != NULL)
            st.engine = GPUFL_ENGINE_PC_SAMPLING;
        else if (st.trace.sass_metrics != NULL)
            st.engine = GPUFL_ENGINE_SASS_METRICS;
        else if (st.trace.range_profiler != NULL)
            st.engine = GPUFL_ENGINE_RANGE_PROFILER;
        gpufl__nvtx_start();
    }
    /* Also when tracing failed: an engine refused before that (PC sampling
     * after SASS metrics, say) keeps its own reason. */
    snprintf(st.range_profiler_why, sizeof st.range_profiler_why, "%s",
             st.trace.range_profiler_why);
    snprintf(st.pc_sampling_why, sizeof st.pc_sampling_why, "%s", st.trace.pc_sampling_why);
    snprintf(st.sass_metrics_why, sizeof st.sass_metrics_why, "%s", st.trace.sass_metrics_why);
#else
    (void)c;
    (void)source;
    snprintf(st.trace_why, sizeof st.trace_why,
             "this gpufl was built without the CUDA toolkit's CUPTI headers");
#endif
    *engine = st.engine;
}

static int nvidia_start_devices(gpufl__collector_t *c, const gpufl__settings_t *s,
                                gpufl__source_t *source) {
    memset(&st.gpu, 0, sizeof st.gpu);
    int rc = gpufl__gpu_sampler_init(&st.gpu, st.nvml, c, s, source);
    if (st.gpu.nvml) st.nvml = NULL; /* the sampler owns it now */
    return rc;
}

static int add(gpufl__feature_t *out, int n, int max, const char *name, int on, const char *why) {
    if (n < max) out[n] = (gpufl__feature_t){name, on, why};
    return n + 1;
}

/* An engine's reason: none when it runs; what it needs when not asked for;
 * else its own refusal, or why CUPTI is off when it has none. */
static const char *engine_why(int on, int asked, const char *needs, const char *own) {
    return on ? NULL : !asked ? needs : own[0] ? own : st.trace_why;
}

static int nvidia_features(const gpufl__settings_t *s, gpufl__feature_t *out, int max) {
    int n = 0;
    gpufl_engine_t asked = s->profiling_engine, engine = st.engine;
    n = add(out, n, max, "nvml", st.running, st.running ? NULL : st.why);
    int tracing = engine >= GPUFL_ENGINE_TRACE;
    n = add(out, n, max, "cupti_trace", tracing, tracing ? NULL : st.trace_why);
#if GPUFL_HAVE_CUPTI
    const char *times_why = st.trace.kernel_times_why;
#else
    const char *times_why = NULL;
#endif
    int timed = tracing && times_why == NULL;
    n = add(out, n, max, "kernel_times", timed,
            timed     ? NULL
            : tracing ? times_why
                      : "needs the Trace engine");
    int sampling = engine == GPUFL_ENGINE_PC_SAMPLING || engine == GPUFL_ENGINE_DEEP;
    int wants_sampling = asked == GPUFL_ENGINE_PC_SAMPLING || asked == GPUFL_ENGINE_DEEP;
    n = add(out, n, max, "pc_sampling", sampling,
            engine_why(sampling, wants_sampling, "needs engine PcSampling or Deep",
                       st.pc_sampling_why));
    int counting = engine == GPUFL_ENGINE_SASS_METRICS || engine == GPUFL_ENGINE_DEEP;
    int wants_counting = asked == GPUFL_ENGINE_SASS_METRICS || asked == GPUFL_ENGINE_DEEP;
    n = add(out, n, max, "sass_metrics", counting,
            engine_why(counting, wants_counting, "needs engine SassMetrics or Deep",
                       st.sass_metrics_why));
    int ranging = engine == GPUFL_ENGINE_RANGE_PROFILER;
    n = add(out, n, max, "range_profiler", ranging,
            engine_why(ranging, asked == GPUFL_ENGINE_RANGE_PROFILER, "needs engine RangeProfiler",
                       st.range_profiler_why));
#if GPUFL_HAVE_CUPTI
    const char *sass_why = st.trace.sass_metrics
                               ? gpufl__sass_metrics_sass_why(st.trace.sass_metrics)
                               : gpufl__pc_sampling_sass_why(st.trace.pc_sampling);
    int disassembly = sampling || counting;
    n = add(out, n, max, "sass", disassembly && sass_why == NULL,
            disassembly ? sass_why : "needs engine PcSampling, SassMetrics or Deep");
    /* Theoretical occupancy needs libcuda besides CUPTI. */
    int occupancy = tracing && st.trace.cuda != NULL;
    n = add(out, n, max, "occupancy", occupancy,
            occupancy  ? NULL
            : !tracing ? "needs the Trace engine"
                       : st.trace.occupancy_why);
    const char *nvtx_why;
    int nvtx = gpufl__nvtx_feature(tracing, &nvtx_why);
    n = add(out, n, max, "nvtx", nvtx, nvtx_why);
    /* CPU stacks: on with a note when walked or described in a reduced way. */
    int stacks = tracing && st.trace.stacks_on;
    n = add(out, n, max, "stack_trace", stacks,
            stacks                   ? (st.trace.stack_log.note[0] ? st.trace.stack_log.note : NULL)
            : !s->enable_stack_trace ? "off by option (enable_stack_trace)"
                                     : "needs the Trace engine");
#endif
    return n < max ? n : max;
}

static void nvidia_explain_engine(const gpufl__settings_t *s) {
    gpufl_engine_t asked = s->profiling_engine, engine = st.engine;
    if (asked == engine) return;
    if (asked == GPUFL_ENGINE_DEEP && engine == GPUFL_ENGINE_PC_SAMPLING)
        gpufl__warn("profiling engine Deep: SASS metrics cannot run: %s; running PcSampling",
                    st.sass_metrics_why);
    else if (asked == GPUFL_ENGINE_DEEP && engine == GPUFL_ENGINE_SASS_METRICS)
        gpufl__warn("profiling engine Deep: PC sampling cannot run: %s; running SassMetrics",
                    st.pc_sampling_why);
    else if (asked == GPUFL_ENGINE_SASS_METRICS && engine == GPUFL_ENGINE_TRACE &&
             st.sass_metrics_why[0])
        gpufl__warn("profiling engine SassMetrics: SASS metrics cannot run: %s; running Trace",
                    st.sass_metrics_why);
    else if (asked == GPUFL_ENGINE_DEEP && engine == GPUFL_ENGINE_TRACE)
        gpufl__warn("profiling engine Deep: neither PC sampling (%s) nor SASS metrics (%s) can "
                    "run; running Trace",
                    st.pc_sampling_why, st.sass_metrics_why);
    else if (asked == GPUFL_ENGINE_RANGE_PROFILER && engine == GPUFL_ENGINE_TRACE &&
             st.range_profiler_why[0])
        gpufl__warn("profiling engine RangeProfiler: the range profiler cannot run: %s; running "
                    "Trace",
                    st.range_profiler_why);
    else if (asked >= GPUFL_ENGINE_PC_SAMPLING && engine == GPUFL_ENGINE_TRACE &&
             st.pc_sampling_why[0])
        gpufl__warn("profiling engine %s: PC sampling cannot run: %s; running Trace",
                    gpufl_engine_name(asked), st.pc_sampling_why);
    else if (asked > GPUFL_ENGINE_TRACE && engine == GPUFL_ENGINE_TRACE)
        gpufl__warn("profiling engine %s is not built yet; running Trace",
                    gpufl_engine_name(asked));
    else
        gpufl__warn("profiling engine %s: %s; running %s", gpufl_engine_name(asked), st.trace_why,
                    gpufl_engine_name(engine));
}

static void nvidia_stop(void) {
#if GPUFL_HAVE_CUPTI
    gpufl__nvtx_stop();
    gpufl__trace_source_fini(&st.trace);
    memset(&st.trace, 0, sizeof st.trace);
#endif
    gpufl__gpu_sampler_fini(&st.gpu);
    memset(&st.gpu, 0, sizeof st.gpu);
    if (st.nvml) gpufl__nvml_close(st.nvml);
    st.nvml = NULL;
}

static void nvidia_after_fork_child(void) {
    /* The parent's NVML handle and CUPTI: not ours to close. */
    st.nvml = NULL;
    memset(&st.gpu, 0, sizeof st.gpu);
#if GPUFL_HAVE_CUPTI
    gpufl__nvtx_stop();
    memset(&st.trace, 0, sizeof st.trace);
    gpufl__cupti_after_fork_child();
#endif
}

const gpufl__backend_ops_t gpufl__backend_nvidia = {
    .name = "NVIDIA",
    .kind = GPUFL_BACKEND_NVIDIA,
    .open = nvidia_open,
    .start_engine = nvidia_start_engine,
    .start_devices = nvidia_start_devices,
    .features = nvidia_features,
    .explain_engine = nvidia_explain_engine,
    .stop = nvidia_stop,
    .after_fork_child = nvidia_after_fork_child,
    .probe = gpufl__nvidia_probe,
};
