// SPDX-License-Identifier: Apache-2.0
/*
 * probe.c - what this machine gives the NVIDIA backend, for `gpufl info` and
 * gpufl_probe_create(): the driver's libraries (NVML, CUPTI, libcuda) loaded
 * by the session's own loaders (same names, overrides and reasons), the
 * devices, and which engines of the ladder could run. Nothing stays open.
 */
#include "nvidia/probe.h"

#include "nvidia/nvml.h"
#if GPUFL_HAVE_CUPTI
#include "nvidia/cuda.h"
#include "nvidia/cupti.h"
#include "nvidia/sass.h"
#endif

#include <stdio.h>
#include <string.h>

/* The engines above Trace as the CUPTI library allows them: "" when the
 * library lacks the API, else the note (why: the reason when it lacks it). */
typedef struct engine_apis {
    char pc_sampling[512], sass_metrics[512], range[512];             /* notes when available */
    char pc_sampling_why[320], sass_metrics_why[320], range_why[320]; /* reasons when not */
} engine_apis_t;

/* Returns 1 when NVML loaded. */
static int probe_nvml(gpufl_probe_t *p) {
    gpufl__nvml_t *nvml = NULL;
    char why[256] = "";
    if (gpufl__nvml_open(&nvml, NULL, why, sizeof why) != 0) {
        gpufl__probe_add(p, "nvml", 0, why[0] ? why : NULL, NULL);
        return 0;
    }
    char missing[600] = "";
    if (*gpufl__nvml_missing(nvml))
        snprintf(missing, sizeof missing, "missing in this driver: %.570s",
                 gpufl__nvml_missing(nvml));
    const char *version = gpufl__nvml_version(nvml);
    gpufl__probe_add(p, "nvml", 1, missing[0] ? missing : NULL, *version ? version : "loaded");
    int count = gpufl__nvml_device_count(nvml);
    for (int i = 0; i < count; i++) {
        const gpufl__gpu_info_t *g = gpufl__nvml_device_info(nvml, i);
        if (!g) continue;
        if (i == 0) gpufl__probe_add(p, "driver", 1, NULL, g->driver_version);
        gpufl_device_info_t d = {sizeof d,
                                 g->index,
                                 g->mig_index,
                                 g->name,
                                 g->mem_total_bytes > 0 ? (uint64_t)g->mem_total_bytes : 0,
                                 g->cc_major,
                                 g->cc_minor};
        gpufl__probe_add_device(p, &d);
    }
    gpufl__nvml_close(nvml);
    return 1;
}

#if GPUFL_HAVE_CUPTI
/* An engine's CUPTI API: note into on[512] when this CUPTI has symbol, else
 * why not into why[320]. */
static void api_state(gpufl__cupti_t *cupti, const char *symbol, const char *api, const char *note,
                      char *on, char *why) {
    if (gpufl__cupti_symbol(cupti, symbol) == NULL)
        snprintf(why, 320, "%.256s lacks the %s API", gpufl__cupti_library(cupti), api);
    else
        snprintf(on, 512, "%s", note);
}
#endif

/* Adds the entries of CUPTI and libcuda; returns what the Trace engine lacks
 * besides NVML ("" when both loaded) and fills *apis. */
static const char *probe_trace_libraries(gpufl_probe_t *p, engine_apis_t *apis) {
#if GPUFL_HAVE_CUPTI
    char why[256] = "", detail[512];
    gpufl__cupti_t *cupti = NULL;
    gpufl__cuda_t *cuda = NULL;
    if (gpufl__cupti_open(&cupti, NULL, why, sizeof why) == 0) {
        const char *lib = gpufl__cupti_library(cupti);
        snprintf(detail, sizeof detail, "%s, API version %u", lib, gpufl__cupti_api_version(cupti));
        gpufl__probe_add(p, "cupti", 1, NULL, detail);
        char nvdisasm[1024], sass_why[256];
        int have_sass =
            gpufl__sass_find_nvdisasm(nvdisasm, sizeof nvdisasm, sass_why, sizeof sass_why) == 0;
        char sass[512];
        snprintf(sass, sizeof sass, "SASS: %.400s", have_sass ? nvdisasm : sass_why);
        api_state(cupti, "cuptiPCSamplingEnable", "PC Sampling", sass, apis->pc_sampling,
                  apis->pc_sampling_why);
        api_state(cupti, "cuptiRangeProfilerEnable", "Range Profiler",
                  "where the device allows it (checked at the first scope on a context; "
                  "one-pass metrics per outermost scope)",
                  apis->range, apis->range_why);
        api_state(cupti, "cuptiSassMetricsEnable", "SASS Metrics",
                  "where the device allows it (checked at init; kernels run many times "
                  "slower while counted)",
                  apis->sass_metrics, apis->sass_metrics_why);
    } else {
        gpufl__probe_add(p, "cupti", 0, why[0] ? why : NULL, NULL);
    }
    why[0] = '\0';
    if (gpufl__cuda_open(&cuda, why, sizeof why) == 0) {
        int v = gpufl__cuda_driver_version(cuda);
        snprintf(detail, sizeof detail, "%s, CUDA %d.%d", gpufl__cuda_library(cuda), v / 1000,
                 v % 1000 / 10);
        gpufl__probe_add(p, "libcuda", 1, NULL, detail);
    } else {
        gpufl__probe_add(p, "libcuda", 0, why[0] ? why : NULL, NULL);
    }
    const char *lacks = cupti && cuda ? "" : cupti ? "libcuda" : cuda ? "CUPTI" : "CUPTI, libcuda";
    gpufl__cuda_close(cuda);
    gpufl__cupti_close(cupti);
    return lacks;
#else
    (void)apis;
    gpufl__probe_add(p, "cupti", 0, "this gpufl was built without the CUDA toolkit headers", NULL);
    return "a build with CUPTI";
#endif
}

/* An engine above Trace: available with its note, or why not. */
static void add_engine(gpufl_probe_t *p, gpufl_engine_t e, int trace, const char *note,
                       const char *why) {
    const char *name = gpufl_engine_name(e);
    if (!trace)
        gpufl__probe_add(p, name, 0, "needs Trace", NULL);
    else if (*note)
        gpufl__probe_add(p, name, 1, note, NULL);
    else
        gpufl__probe_add(p, name, 0, *why ? why : "needs CUPTI", NULL);
}

void gpufl__nvidia_probe(gpufl_probe_t *p) {
    engine_apis_t apis;
    memset(&apis, 0, sizeof apis);
    int nvml = probe_nvml(p);
    const char *lacks = probe_trace_libraries(p, &apis);
    int trace = nvml && !*lacks;
    char why[64];

    gpufl__probe_add(p, gpufl_engine_name(GPUFL_ENGINE_MONITOR), 1,
                     nvml ? "host metrics and GPU telemetry"
                          : "host metrics only (no GPU telemetry without NVML)",
                     NULL);
    snprintf(why, sizeof why, "lacks %s%s%s", nvml ? "" : "NVML", nvml || !*lacks ? "" : ", ",
             lacks);
    gpufl__probe_add(p, gpufl_engine_name(GPUFL_ENGINE_TRACE), trace, trace ? NULL : why, NULL);
    add_engine(p, GPUFL_ENGINE_PC_SAMPLING, trace, apis.pc_sampling, apis.pc_sampling_why);
    add_engine(p, GPUFL_ENGINE_SASS_METRICS, trace, apis.sass_metrics, apis.sass_metrics_why);
    int pcs = trace && apis.pc_sampling[0], sassm = trace && apis.sass_metrics[0];
    gpufl__probe_add(p, gpufl_engine_name(GPUFL_ENGINE_DEEP), pcs || sassm,
                     pcs && sassm ? "PcSampling and SassMetrics together"
                     : pcs        ? "runs as PcSampling (no SASS Metrics API)"
                     : sassm      ? "runs as SassMetrics (no PC Sampling API)"
                                  : "needs PcSampling or SassMetrics",
                     NULL);
    add_engine(p, GPUFL_ENGINE_RANGE_PROFILER, trace, apis.range, apis.range_why);
}
