// SPDX-License-Identifier: Apache-2.0
/*
 * wire_session.c - the encoders of the records that describe a session
 * (wire_session.h): written once near its start, kept by the collector and
 * given again to a sink attached later (sink.h).
 */
#include "core/wire_session.h"

#include <stdio.h>
#include <string.h>

void gpufl__wire_options(gpufl__line_t *l, const gpufl__wire_option_t *v, size_t n) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "options");
    for (size_t i = 0; i < n; i++) {
        gpufl__buf_key(b, v[i].name);
        gpufl__buf_puts(b, "{\"value\":");
        if (v[i].str)
            gpufl__buf_put_str(b, v[i].str, strlen(v[i].str));
        else
            gpufl__buf_put_i64(b, v[i].num);
        gpufl__buf_kv_str(b, "from", v[i].from);
        gpufl__buf_putc(b, '}');
    }
    gpufl__line_end(l);
}

void gpufl__wire_capabilities(gpufl__line_t *l, const gpufl__wire_capabilities_t *c) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "capabilities");
    gpufl__buf_kv_str(b, "backend_requested", c->backend_requested);
    gpufl__buf_kv_str(b, "backend", c->backend);
    gpufl__buf_kv_str(b, "engine_requested", c->engine_requested);
    gpufl__buf_kv_str(b, "engine", c->engine);
    gpufl__buf_key(b, "features");
    gpufl__buf_putc(b, '{');
    for (size_t i = 0; i < c->nfeatures; i++) {
        const gpufl__feature_t *f = &c->features[i];
        gpufl__buf_key(b, f->name);
        gpufl__buf_puts(b, f->on ? "{\"on\":true" : "{\"on\":false");
        if (f->why) gpufl__buf_kv_str(b, "why", f->why);
        gpufl__buf_putc(b, '}');
    }
    gpufl__buf_putc(b, '}');
    gpufl__line_end(l);
}

void gpufl__wire_gpu_info(gpufl__line_t *l, const gpufl__wire_gpu_info_t *g) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "gpu_info");
    gpufl__buf_kv_i64(b, "device", g->device);
    gpufl__buf_kv_str(b, "vendor", g->vendor);
    gpufl__buf_kv_i64(b, "nvml_index", g->library_index);
    gpufl__buf_kv_opt(b, "mig_index", g->partition_index);
    gpufl__buf_kv_str(b, "name", g->name);
    gpufl__buf_kv_str(b, "uuid", g->uuid);
    gpufl__buf_kv_str(b, "pci_bus_id", g->pci_bus_id);
    gpufl__buf_kv_str(b, "compute_capability", g->compute_capability);
    gpufl__buf_kv_opt(b, "sm_count", g->sm_count);
    gpufl__buf_kv_opt(b, "mem_total_bytes", g->mem_total_bytes);
    gpufl__buf_kv_str(b, "driver_version", g->driver_version);
    gpufl__buf_kv_opt(b, "cuda_driver_version", g->compute_driver_version);
    gpufl__buf_kv_opt(b, "mig_mode", g->partition_mode);
    gpufl__buf_kv_i64(b, "gpm_supported", g->perf_metrics_supported);
    gpufl__buf_kv_i64(b, "nvlink_links", g->interconnect_links);
    gpufl__buf_kv_opt(b, "power_limit_mw", g->power_limit_mw);
    gpufl__buf_kv_str(b, "nvml_version", g->library_version);
    gpufl__line_end(l);
}

void gpufl__wire_gpu_legend(gpufl__line_t *l, const gpufl__wire_gpu_legend_t *g) {
    gpufl__buf_t *b = gpufl__line_begin_describing(l, "gpu_legend");
    gpufl__buf_key(b, "throttle_reasons");
    gpufl__buf_putc(b, '{');
    for (int bit = 0; bit < 64; bit++) {
        char key[8];
        if (!g->throttle_reasons[bit]) continue;
        snprintf(key, sizeof key, "%d", bit);
        gpufl__buf_kv_str(b, key, g->throttle_reasons[bit]);
    }
    gpufl__buf_putc(b, '}');
    gpufl__line_end(l);
}
