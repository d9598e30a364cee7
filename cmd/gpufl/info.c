// SPDX-License-Identifier: Apache-2.0
/*
 * info.c - `gpufl info`: what this machine gives gpufl. Loads NVML, CUPTI and
 * libcuda through the library's own loaders (the same names, environment
 * overrides and reasons a session would see) and says which engines can run.
 * Without a driver every part says why it is missing; nothing here fails.
 */
#include "cli.h"

#include "nvidia/nvml.h"
#if GPUFL_HAVE_CUPTI
#include "nvidia/cuda.h"
#include "nvidia/cupti.h"
#include "nvidia/sass.h"
#endif

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <string.h>

static void heading(const char *text) {
    printf("%s%s%s\n", cli_bold(stdout), text, cli_reset(stdout));
}

/* Returns 1 when NVML loaded. */
static int show_nvml(void) {
    gpufl_nvml_t *nvml = NULL;
    char why[256] = "";
    heading("NVIDIA driver (NVML)");
    if (gpufl__nvml_open(NULL, &nvml, why, sizeof why) != 0) {
        printf("  NVML: not available: %s\n", *why ? why : "unknown reason");
        return 0;
    }
    int count = gpufl__nvml_device_count(nvml);
    const gpufl_gpu_info_t *first = count > 0 ? gpufl__nvml_device_info(nvml, 0) : NULL;
    printf("  NVML: %s\n", *gpufl__nvml_version(nvml) ? gpufl__nvml_version(nvml) : "loaded");
    if (first) printf("  driver: %s\n", first->driver_version);
    if (*gpufl__nvml_missing(nvml))
        printf("  missing in this driver: %s\n", gpufl__nvml_missing(nvml));
    printf("  GPUs: %d\n", count);
    for (int i = 0; i < count; i++) {
        const gpufl_gpu_info_t *g = gpufl__nvml_device_info(nvml, i);
        if (!g) continue;
        if (g->mig_index >= 0)
            printf("    %d/MIG %d: %s\n", g->index, g->mig_index, g->name);
        else
            printf("    %d: %s (%.0f MiB, compute %d.%d)\n", g->index, g->name,
                   (double)g->mem_total_bytes / (1024.0 * 1024.0), g->cc_major, g->cc_minor);
    }
    gpufl__nvml_close(nvml);
    return 1;
}

/* Whether this CUPTI has the PC Sampling and SASS Metrics APIs; where
 * nvdisasm is for SASS. Set afresh by each run of the command (the tool may
 * run more than once in a process: `python -m gpufl`). */
static char pcs_state[512], sassm_state[512], rp_state[512];

/* Says what the Trace engine lacks besides NVML: "" when CUPTI and libcuda loaded. */
static const char *show_trace_libraries(void) {
#if GPUFL_HAVE_CUPTI
    char why[256] = "";
    gpufl_cupti_t *cupti = NULL;
    gpufl_cuda_t *cuda = NULL;
    heading("CUPTI");
    if (gpufl__cupti_open(NULL, &cupti, why, sizeof why) == 0) {
        unsigned v = gpufl__cupti_api_version(cupti);
        printf("  library: %s, API version %u\n", gpufl__cupti_library(cupti), v);
        char nvdisasm[1024], sass_why[256];
        int have_sass =
            gpufl__sass_find_nvdisasm(nvdisasm, sizeof nvdisasm, sass_why, sizeof sass_why) == 0;
        if (gpufl__cupti_symbol(cupti, "cuptiPCSamplingEnable") == NULL)
            snprintf(pcs_state, sizeof pcs_state, "no: %s lacks the PC Sampling API",
                     gpufl__cupti_library(cupti));
        else
            snprintf(pcs_state, sizeof pcs_state, "yes (SASS: %.400s)",
                     have_sass ? nvdisasm : sass_why);
        if (gpufl__cupti_symbol(cupti, "cuptiRangeProfilerEnable") == NULL)
            snprintf(rp_state, sizeof rp_state, "no: %s lacks the Range Profiler API",
                     gpufl__cupti_library(cupti));
        else
            snprintf(rp_state, sizeof rp_state,
                     "yes, where the device allows it (checked at the first scope on a context; "
                     "one-pass metrics per outermost scope)");
        if (gpufl__cupti_symbol(cupti, "cuptiSassMetricsEnable") == NULL)
            snprintf(sassm_state, sizeof sassm_state, "no: %s lacks the SASS Metrics API",
                     gpufl__cupti_library(cupti));
        else
            snprintf(sassm_state, sizeof sassm_state,
                     "yes, where the device allows it (checked at init; kernels run many times "
                     "slower while counted)");
    } else {
        printf("  CUPTI: not available: %s\n", *why ? why : "unknown reason");
    }
    heading("CUDA driver (libcuda)");
    why[0] = '\0';
    if (gpufl__cuda_open(&cuda, why, sizeof why) == 0) {
        int v = gpufl__cuda_driver_version(cuda);
        printf("  library: %s, CUDA %d.%d\n", gpufl__cuda_library(cuda), v / 1000, v % 1000 / 10);
    } else {
        printf("  libcuda: not available: %s\n", *why ? why : "unknown reason");
    }
    const char *lacks = cupti && cuda ? "" : cupti ? "libcuda" : cuda ? "CUPTI" : "CUPTI, libcuda";
    gpufl__cuda_close(cuda);
    gpufl__cupti_close(cupti);
    return lacks;
#else
    heading("CUPTI");
    printf("  CUPTI: not available: this gpufl was built without the CUDA toolkit headers\n");
    return "a build with CUPTI";
#endif
}

int cli_info(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            cli_print_usage("info", stdout);
            return CLI_OK;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage_error("info", "unknown option '%s'", argv[i]);
        return cli_usage_error("info", "unexpected argument '%s'", argv[i]);
    }
    printf("gpufl %s\n\n", gpufl_version());
    snprintf(pcs_state, sizeof pcs_state, "no: needs CUPTI");
    snprintf(sassm_state, sizeof sassm_state, "no: needs CUPTI");
    snprintf(rp_state, sizeof rp_state, "no: needs CUPTI");
    int nvml = show_nvml();
    const char *trace_lacks = show_trace_libraries();

    heading("Engines");
    printf("  Monitor: %s\n", nvml ? "yes: host metrics and GPU telemetry"
                                   : "host metrics only (no GPU telemetry without NVML)");
    if (nvml && !*trace_lacks)
        printf("  Trace: yes\n");
    else
        printf("  Trace: no: lacks %s%s%s\n", nvml ? "" : "NVML", nvml || !*trace_lacks ? "" : ", ",
               trace_lacks);
    printf("  PcSampling: %s\n", nvml && !*trace_lacks ? pcs_state : "no: needs Trace");
    int trace = nvml && !*trace_lacks;
    int pcs = trace && strncmp(pcs_state, "yes", 3) == 0;
    int sassm = trace && strncmp(sassm_state, "yes", 3) == 0;
    printf("  SassMetrics: %s\n", trace ? sassm_state : "no: needs Trace");
    printf("  Deep: %s\n", pcs && sassm ? "yes: PcSampling and SassMetrics together"
                           : pcs        ? "runs as PcSampling (no SASS Metrics API)"
                           : sassm      ? "runs as SassMetrics (no PC Sampling API)"
                                        : "no: needs PcSampling or SassMetrics");
    printf("  RangeProfiler: %s\n", trace ? rp_state : "no: needs Trace");
    return CLI_OK;
}
