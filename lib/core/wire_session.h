// SPDX-License-Identifier: Apache-2.0
/*
 * wire_session.h - the records that describe a session rather than what
 * happens in it (the options it resolved, what runs and why not), as typed
 * structs; wire_session.c encodes them (docs/log-format.md).
 */
#ifndef GPUFL_CORE_WIRE_SESSION_H
#define GPUFL_CORE_WIRE_SESSION_H

#include "core/wire.h"

/* One resolved option: its value (a string, or with str NULL an integer)
 * and where it came from. */
typedef struct gpufl__wire_option {
    const char *name;
    const char *str;
    int64_t num;
    const char *from;
} gpufl__wire_option_t;
void gpufl__wire_options(gpufl__line_t *l, const gpufl__wire_option_t *v, size_t n);

/* One entry of the capability record's "features": what runs and, when it
 * does not, why (NULL for no reason). */
typedef struct gpufl__feature {
    const char *name;
    int on;
    const char *why;
} gpufl__feature_t;

typedef struct gpufl__wire_capabilities {
    const char *backend_requested, *backend;
    const char *engine_requested, *engine;
    const gpufl__feature_t *features;
    size_t nfeatures;
} gpufl__wire_capabilities_t;
void gpufl__wire_capabilities(gpufl__line_t *l, const gpufl__wire_capabilities_t *c);

/* gpu_info: one device as its backend's library reports it. Strings are
 * written as given; an integer member that is negative is null where the
 * wire says "opt" below. The wire keys still carry NVML's and CUDA's names
 * (docs/log-format.md); the fields say what they mean. */
typedef struct gpufl__wire_gpu_info {
    int64_t device;
    const char *vendor;
    int64_t library_index;   /* "nvml_index": the device library's own index */
    int64_t partition_index; /* "mig_index", opt */
    const char *name, *uuid, *pci_bus_id;
    const char *compute_capability;    /* "" when unknown */
    int64_t sm_count, mem_total_bytes; /* opt */
    const char *driver_version;
    int64_t compute_driver_version; /* "cuda_driver_version", opt */
    int64_t partition_mode;         /* "mig_mode", opt */
    int64_t perf_metrics_supported; /* "gpm_supported" */
    int64_t interconnect_links;     /* "nvlink_links" */
    int64_t power_limit_mw;         /* opt */
    const char *library_version;    /* "nvml_version" */
} gpufl__wire_gpu_info_t;
void gpufl__wire_gpu_info(gpufl__line_t *l, const gpufl__wire_gpu_info_t *g);

/* gpu_legend: the name of each throttle reason bit of gpu_sample rows
 * (NULL: a bit without a name, left out). */
typedef struct gpufl__wire_gpu_legend {
    const char *throttle_reasons[64];
} gpufl__wire_gpu_legend_t;
void gpufl__wire_gpu_legend(gpufl__line_t *l, const gpufl__wire_gpu_legend_t *g);

#endif
