// SPDX-License-Identifier: Apache-2.0
/*
 * info.c - `gpufl info`: what this machine gives gpufl, as the backends'
 * probe finds it (gpufl_probe_create(): the loaders, environment overrides
 * and reasons a session would meet) and which engines can run. Without a
 * driver every part says why it is missing; nothing here fails.
 */
#include "cli.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <string.h>

static void heading(const char *text) {
    printf("%s%s%s\n", cli_bold(stdout), text, cli_reset(stdout));
}

/* A vendor library: "  <label>: <detail>" when found, "  <name>: not available: <why>". */
static void show_library(const gpufl_capability_t *c, const char *label, const char *name) {
    if (c->on)
        printf("  %s: %s\n", label, c->detail ? c->detail : "loaded");
    else
        printf("  %s: not available: %s\n", name, c->reason);
}

static void show_devices(const gpufl_probe_t *p) {
    const gpufl_capability_t *driver = gpufl_probe_find(p, "driver");
    const gpufl_capability_t *nvml = gpufl_probe_find(p, "nvml");
    size_t count = 0;
    if (driver && driver->detail) printf("  driver: %s\n", driver->detail);
    if (nvml->reason) printf("  %s\n", nvml->reason); /* what this driver lacks */
    while (gpufl_probe_device(p, count)) count++;
    printf("  GPUs: %zu\n", count);
    for (size_t i = 0; i < count; i++) {
        const gpufl_device_info_t *g = gpufl_probe_device(p, i);
        if (g->mig_index >= 0)
            printf("    %d/MIG %d: %s\n", g->index, g->mig_index, g->name);
        else
            printf("    %d: %s (%.0f MiB, compute %d.%d)\n", g->index, g->name,
                   (double)g->mem_total_bytes / (1024.0 * 1024.0), g->compute_major,
                   g->compute_minor);
    }
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
    gpufl_probe_t *p = NULL;
    if (gpufl_probe_create(&p) != 0) {
        fprintf(stderr, "gpufl: cannot probe this machine: %s\n", gpufl_last_error());
        return CLI_FAILED;
    }
    printf("gpufl %s\n\n", gpufl_version());
    const gpufl_capability_t *c;
    if ((c = gpufl_probe_find(p, "nvml")) != NULL) {
        heading("NVIDIA driver (NVML)");
        show_library(c, "NVML", "NVML");
        if (c->on) show_devices(p);
    }
    if ((c = gpufl_probe_find(p, "cupti")) != NULL) {
        heading("CUPTI");
        show_library(c, "library", "CUPTI");
    }
    if ((c = gpufl_probe_find(p, "libcuda")) != NULL) {
        heading("CUDA driver (libcuda)");
        show_library(c, "library", "libcuda");
    }

    /* Every engine of the ladder: "yes", "yes: <note>" or "no: <why>". */
    static const gpufl_engine_t ladder[] = {GPUFL_ENGINE_MONITOR,     GPUFL_ENGINE_TRACE,
                                            GPUFL_ENGINE_PC_SAMPLING, GPUFL_ENGINE_SASS_METRICS,
                                            GPUFL_ENGINE_DEEP,        GPUFL_ENGINE_RANGE_PROFILER};
    heading("Engines");
    for (size_t i = 0; i < sizeof ladder / sizeof ladder[0]; i++) {
        const char *name = gpufl_engine_name(ladder[i]);
        c = gpufl_probe_find(p, name);
        if (!c)
            printf("  %s: no: no backend of this gpufl offers it\n", name);
        else
            printf("  %s: %s%s%s\n", name, c->on ? "yes" : "no", c->reason ? ": " : "",
                   c->reason ? c->reason : "");
    }
    gpufl_probe_destroy(p);
    return CLI_OK;
}
