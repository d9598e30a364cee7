// SPDX-License-Identifier: Apache-2.0
/*
 * model_gpu.c - the GPU samples domain of the model: gpu_info, gpu_legend,
 * gpu_processes and gpu_sample batches, one entry per device. After
 * reading, every device a row names gets an entry and the devices are
 * sorted by number.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#include <stddef.h>

/* A value column: negative means unknown, like null. */
int64_t gpufl__model_nonneg_or_unknown(const json_t *v) {
    int64_t x = gpufl__model_int_or_unknown(v);
    return x >= 0 ? x : GPUFL_MODEL_UNKNOWN;
}

/* Reads a device number (0 .. INT32_MAX). Returns 0 or -1. */
int gpufl__model_device_number(const json_t *v, int64_t *out) {
    return gpufl__reader_int(v, out) == 0 && *out >= 0 && *out <= INT32_MAX ? 0 : -1;
}

/* The entry of device, created (has_info 0, all unknown) when new. Returns
 * 0, 1 when the device cap is reached, or GPUFL_ENOMEM. */
int gpufl__model_gpu_slot(gpufl__model_gpu_t **out, gpufl__model_t *m, int64_t device) {
    size_t idx;
    if (gpufl__idmap_get(&m->gpu_index, (uint64_t)device + 1, &idx)) {
        *out = &m->gpus[idx];
        return 0;
    }
    int rc = gpufl__model_reserve((void **)&m->gpus, &m->gpus_alloc, m->n_gpus, sizeof *m->gpus,
                                  m->limits.max_gpus);
    if (rc) return rc;
    if (gpufl__idmap_put(&m->gpu_index, (uint64_t)device + 1, m->n_gpus, NULL) < 0)
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the device index");
    gpufl__model_gpu_t *g = &m->gpus[m->n_gpus++];
    memset(g, 0, sizeof *g);
    g->device = device;
    g->nvml_index = g->mig_index = GPUFL_MODEL_UNKNOWN;
    g->name = g->uuid = g->pci_bus_id = g->compute_capability = "";
    g->driver_version = g->nvml_version = "";
    g->sm_count = g->mem_total_bytes = g->cuda_driver_version = GPUFL_MODEL_UNKNOWN;
    g->mig_mode = g->gpm_supported = g->nvlink_links = GPUFL_MODEL_UNKNOWN;
    g->power_limit_mw = GPUFL_MODEL_UNKNOWN;
    g->procs_ts_ns = g->procs_count = g->procs_peak = GPUFL_MODEL_UNKNOWN;
    *out = g;
    return 0;
}

static int on_gpu_info(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t device;
    if (gpufl__model_device_number(json_object_get(rec, "device"), &device))
        return gpufl__model_bad_line(m, pos, "gpu_info", "no device number");
    gpufl__model_gpu_t *g;
    int rc = gpufl__model_gpu_slot(&g, m, device);
    if (rc < 0) return rc;
    if (rc) {
        m->gpus_over_cap++;
        return 0;
    }
    if (g->has_info) {
        const char *uuid = gpufl__model_json_str(rec, "uuid");
        if (uuid && strcmp(uuid, g->uuid) != 0)
            gpufl__model_warn(
                m, pos->name, pos->line,
                "gpu_info: device %lld described again as %s, first as %s (first kept)",
                (long long)device, uuid, g->uuid);
        return 0;
    }
    g->has_info = 1;
    g->name = gpufl__model_member_str(m, rec, "name");
    g->uuid = gpufl__model_member_str(m, rec, "uuid");
    g->pci_bus_id = gpufl__model_member_str(m, rec, "pci_bus_id");
    g->compute_capability = gpufl__model_member_str(m, rec, "compute_capability");
    g->driver_version = gpufl__model_member_str(m, rec, "driver_version");
    g->nvml_version = gpufl__model_member_str(m, rec, "nvml_version");
    if (!g->name || !g->uuid || !g->pci_bus_id || !g->compute_capability || !g->driver_version ||
        !g->nvml_version)
        return GPUFL_ENOMEM;
    g->nvml_index = gpufl__model_nonneg_or_unknown(json_object_get(rec, "nvml_index"));
    g->mig_index = gpufl__model_nonneg_or_unknown(json_object_get(rec, "mig_index"));
    g->sm_count = gpufl__model_nonneg_or_unknown(json_object_get(rec, "sm_count"));
    g->mem_total_bytes = gpufl__model_nonneg_or_unknown(json_object_get(rec, "mem_total_bytes"));
    g->cuda_driver_version =
        gpufl__model_nonneg_or_unknown(json_object_get(rec, "cuda_driver_version"));
    g->mig_mode = gpufl__model_nonneg_or_unknown(json_object_get(rec, "mig_mode"));
    g->gpm_supported = gpufl__model_nonneg_or_unknown(json_object_get(rec, "gpm_supported"));
    g->nvlink_links = gpufl__model_nonneg_or_unknown(json_object_get(rec, "nvlink_links"));
    g->power_limit_mw = gpufl__model_nonneg_or_unknown(json_object_get(rec, "power_limit_mw"));
    return 0;
}

/* Bit names merge over records: a later name for a bit replaces the earlier. */
static int on_gpu_legend(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    json_t *names = json_object_get(rec, "throttle_reasons");
    if (!json_is_object(names))
        return gpufl__model_bad_line(m, pos, "gpu_legend", "throttle_reasons is not an object");
    const char *key;
    json_t *v;
    json_object_foreach(names, key, v) {
        char *end;
        if (!json_is_string(v) || *key < '0' || *key > '9') continue;
        unsigned long bit = strtoul(key, &end, 10);
        if (*end || bit >= GPUFL_MODEL_THROTTLE_BITS) continue; /* not a bit we can hold */
        const char *name = gpufl__model_pool_str(m, json_string_value(v), json_string_length(v));
        if (!name) return GPUFL_ENOMEM;
        m->throttle_names[bit] = name;
    }
    m->has_legend = 1;
    return 0;
}

static int on_gpu_processes(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t ts, device;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "gpu_processes", "no integer ts_ns");
    if (gpufl__model_device_number(json_object_get(rec, "device"), &device))
        return gpufl__model_bad_line(m, pos, "gpu_processes", "no device number");
    json_t *pids = json_object_get(rec, "pid"), *used = json_object_get(rec, "used_bytes");
    if (!json_is_array(pids))
        return gpufl__model_bad_line(m, pos, "gpu_processes", "pid is not an array");
    size_t n = json_array_size(pids);
    if (used && !json_is_array(used))
        return gpufl__model_bad_line(m, pos, "gpu_processes", "used_bytes is not an array");
    if (used && json_array_size(used) != n)
        return gpufl__model_bad_line(m, pos, "gpu_processes", "pid has %zu entries, used_bytes %zu",
                                     n, json_array_size(used));
    int64_t v;
    for (size_t i = 0; i < n; i++) {
        if (gpufl__reader_int(json_array_get(pids, i), &v) != 0)
            return gpufl__model_bad_line(m, pos, "gpu_processes", "pid %zu is not an integer", i);
        if (used && gpufl__reader_int(json_array_get(used, i), &v) < 0)
            return gpufl__model_bad_line(m, pos, "gpu_processes",
                                         "used_bytes %zu is not an integer", i);
    }
    int64_t count = gpufl__model_nonneg_or_unknown(json_object_get(rec, "count"));
    if (count < (int64_t)n) count = (int64_t)n; /* absent, or fewer than listed */
    gpufl__model_note_ts(m, ts);
    gpufl__model_gpu_t *g;
    int rc = gpufl__model_gpu_slot(&g, m, device);
    if (rc < 0) return rc;
    if (rc) {
        m->gpus_over_cap++;
        return 0;
    }
    g->procs_records++;
    if (count > g->procs_peak) g->procs_peak = count;
    if (g->procs_ts_ns != GPUFL_MODEL_UNKNOWN && ts < g->procs_ts_ns) return 0; /* older */
    g->procs_ts_ns = ts;
    g->procs_count = count;
    g->n_procs = n < GPUFL_MODEL_GPU_PROCS_MAX ? n : GPUFL_MODEL_GPU_PROCS_MAX;
    for (size_t i = 0; i < g->n_procs; i++) {
        gpufl__reader_int(json_array_get(pids, i), &g->procs[i].pid);
        g->procs[i].used_bytes =
            used ? gpufl__model_nonneg_or_unknown(json_array_get(used, i)) : GPUFL_MODEL_UNKNOWN;
    }
    return 0;
}

/* process_info: kept as a row (the report does not show them yet). */
static int on_process_info(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    static const char *const keys[] = {
        "comm",    "user",    "cgroup_path",  "container_id",    "container_runtime",
        "pod_uid", "pod_qos", "slurm_job_id", "slurm_job_source"};
    int64_t ts, device, pid;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "process_info", "no integer ts_ns");
    if (gpufl__model_device_number(json_object_get(rec, "device"), &device))
        return gpufl__model_bad_line(m, pos, "process_info", "no device number");
    if (gpufl__reader_int(json_object_get(rec, "pid"), &pid) != 0 || pid <= 0)
        return gpufl__model_bad_line(m, pos, "process_info", "no positive integer pid");
    gpufl__model_note_ts(m, ts);
    int rc = gpufl__model_reserve((void **)&m->processes, &m->processes_alloc, m->n_processes,
                                  sizeof *m->processes, GPUFL_MODEL_MAX_PROCESSES);
    if (rc < 0) return rc;
    if (rc) {
        m->processes_over_cap++;
        return 0;
    }
    gpufl__model_process_t *p = &m->processes[m->n_processes];
    const char **strs[] = {
        &p->comm,    &p->user,    &p->cgroup_path,  &p->container_id,    &p->container_runtime,
        &p->pod_uid, &p->pod_qos, &p->slurm_job_id, &p->slurm_job_source};
    p->ts_ns = ts;
    p->device = device;
    p->pid = pid;
    p->start_ticks = gpufl__model_nonneg_or_unknown(json_object_get(rec, "start_ticks"));
    p->uid = gpufl__model_nonneg_or_unknown(json_object_get(rec, "uid"));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!(*strs[i] = gpufl__model_member_str(m, rec, keys[i]))) return GPUFL_ENOMEM;
    m->n_processes++;
    return 0;
}

/* xid: kept as a row (the report does not show them yet). */
static int on_xid(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t ts, device, code;
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), &ts) != 0)
        return gpufl__model_bad_line(m, pos, "xid", "no integer ts_ns");
    if (gpufl__model_device_number(json_object_get(rec, "device"), &device))
        return gpufl__model_bad_line(m, pos, "xid", "no device number");
    if (gpufl__reader_int(json_object_get(rec, "code"), &code) != 0 || code < 0)
        return gpufl__model_bad_line(m, pos, "xid", "no non-negative integer code");
    gpufl__model_note_ts(m, ts);
    int rc = gpufl__model_reserve((void **)&m->xids, &m->xids_alloc, m->n_xids, sizeof *m->xids,
                                  GPUFL_MODEL_MAX_XIDS);
    if (rc < 0) return rc;
    if (rc) {
        m->xids_over_cap++;
        return 0;
    }
    m->xids[m->n_xids++] = (gpufl__model_xid_t){
        .ts_ns = ts,
        .device = device,
        .code = code,
        .gpu_instance_id = gpufl__model_nonneg_or_unknown(json_object_get(rec, "gpu_instance_id")),
        .compute_instance_id =
            gpufl__model_nonneg_or_unknown(json_object_get(rec, "compute_instance_id"))};
    return 0;
}

/* The gpu_sample columns: name, kind and where the value goes in a row. */
enum { GCOL_I64, GCOL_I32, GCOL_REAL };
enum { GCOL_TS = 0, GCOL_DEVICE = 1, GCOL_REQUIRED = 2 }; /* the first two: never unknown */
typedef struct gpu_col {
    int kind;
    size_t offset;
} gpu_col_t;

#define GCOL(kind, field)                                                                          \
    { kind, offsetof(gpufl__model_gpu_sample_t, field) }
static const char *const gpu_col_names[] = {"ts_ns",
                                            "device",
                                            "gpu_util_pct",
                                            "mem_util_pct",
                                            "mem_used_bytes",
                                            "mem_free_bytes",
                                            "mem_total_bytes",
                                            "temp_gpu_c",
                                            "temp_mem_c",
                                            "power_mw",
                                            "power_limit_mw",
                                            "energy_mj",
                                            "clock_sm_mhz",
                                            "clock_gfx_mhz",
                                            "clock_mem_mhz",
                                            "fan_pct",
                                            "pcie_tx_bytes_per_s",
                                            "pcie_rx_bytes_per_s",
                                            "throttle_reasons",
                                            "ecc_sbe_volatile",
                                            "ecc_dbe_volatile",
                                            "nvlink_tx_bytes_per_s",
                                            "nvlink_rx_bytes_per_s",
                                            "sm_active_pct",
                                            "sm_occupancy_pct",
                                            "tensor_active_pct",
                                            "dram_bw_util_pct"};
static const gpu_col_t gpu_cols[] = {
    GCOL(GCOL_I64, ts_ns),
    GCOL(GCOL_I32, device),
    GCOL(GCOL_I32, gpu_util_pct),
    GCOL(GCOL_I32, mem_util_pct),
    GCOL(GCOL_I64, mem_used_bytes),
    GCOL(GCOL_I64, mem_free_bytes),
    GCOL(GCOL_I64, mem_total_bytes),
    GCOL(GCOL_I32, temp_gpu_c),
    GCOL(GCOL_I32, temp_mem_c),
    GCOL(GCOL_I64, power_mw),
    GCOL(GCOL_I64, power_limit_mw),
    GCOL(GCOL_I64, energy_mj),
    GCOL(GCOL_I32, clock_sm_mhz),
    GCOL(GCOL_I32, clock_gfx_mhz),
    GCOL(GCOL_I32, clock_mem_mhz),
    GCOL(GCOL_I32, fan_pct),
    GCOL(GCOL_I64, pcie_tx_bytes_per_s),
    GCOL(GCOL_I64, pcie_rx_bytes_per_s),
    GCOL(GCOL_I64, throttle_reasons),
    GCOL(GCOL_I64, ecc_sbe_volatile),
    GCOL(GCOL_I64, ecc_dbe_volatile),
    GCOL(GCOL_I64, nvlink_tx_bytes_per_s),
    GCOL(GCOL_I64, nvlink_rx_bytes_per_s),
    GCOL(GCOL_REAL, sm_active_pct),
    GCOL(GCOL_REAL, sm_occupancy_pct),
    GCOL(GCOL_REAL, tensor_active_pct),
    GCOL(GCOL_REAL, dram_bw_util_pct),
};
#undef GCOL
#define GPU_NCOL (sizeof gpu_cols / sizeof gpu_cols[0])
_Static_assert(sizeof gpu_col_names / sizeof gpu_col_names[0] == GPU_NCOL,
               "a name and a slot for every gpu_sample column");

/* Only ts_ns and device are required: a missing column means "unknown". */
static int on_gpu_sample(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    json_t *cols[GPU_NCOL];
    size_t rows;
    char why[160];
    if (gpufl__reader_columns(rec, gpu_col_names, cols, GPU_NCOL, GCOL_REQUIRED, &rows, why,
                              sizeof why))
        return gpufl__model_bad_line(m, pos, "gpu_sample", "%s", why);
    size_t start = m->n_gpu_samples;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        gpufl__model_gpu_sample_t row;
        for (size_t c = 0; c < GPU_NCOL; c++) {
            json_t *cell = cols[c] ? json_array_get(cols[c], r) : NULL;
            char *slot = (char *)&row + gpu_cols[c].offset;
            int real = gpu_cols[c].kind == GCOL_REAL;
            double d = GPUFL_MODEL_UNKNOWN;
            int64_t x = GPUFL_MODEL_UNKNOWN;
            int rc = real ? gpufl__reader_num(cell, &d) : gpufl__reader_int(cell, &x);
            if (rc < 0 || (c < GCOL_REQUIRED && rc != 0)) {
                m->n_gpu_samples = start;
                return gpufl__model_bad_line(m, pos, "gpu_sample", "row %zu: %s is not a%s", r,
                                             gpu_col_names[c], real ? " number" : "n integer");
            }
            if (real) {
                if (d < 0) d = GPUFL_MODEL_UNKNOWN;
                memcpy(slot, &d, sizeof d);
                continue;
            }
            if (c >= GCOL_REQUIRED && x < 0) x = GPUFL_MODEL_UNKNOWN; /* negative: unknown */
            if (gpu_cols[c].kind == GCOL_I64) {
                memcpy(slot, &x, sizeof x);
                continue;
            }
            if (x > INT32_MAX || (c == GCOL_DEVICE && x < 0)) {
                m->n_gpu_samples = start;
                return gpufl__model_bad_line(m, pos, "gpu_sample",
                                             "row %zu: %s %lld is out of range", r,
                                             gpu_col_names[c], (long long)x);
            }
            int32_t x32 = (int32_t)x;
            memcpy(slot, &x32, sizeof x32);
        }
        if (row.ts_ns < lo) lo = row.ts_ns;
        if (row.ts_ns > hi) hi = row.ts_ns;
        int rc =
            gpufl__model_reserve((void **)&m->gpu_samples, &m->gpu_samples_alloc, m->n_gpu_samples,
                                 sizeof *m->gpu_samples, m->limits.max_gpu_samples);
        if (rc < 0) return rc;
        if (rc) {
            over++;
            continue;
        }
        m->gpu_samples[m->n_gpu_samples++] = row;
    }
    m->gpu_samples_over_cap += over;
    if (rows) gpufl__model_note_ts(m, lo), gpufl__model_note_ts(m, hi);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* After reading                                                          */
/* ---------------------------------------------------------------------- */

static int cmp_gpu(const void *a, const void *b) {
    int64_t x = ((const gpufl__model_gpu_t *)a)->device,
            y = ((const gpufl__model_gpu_t *)b)->device;
    return x < y ? -1 : x > y;
}

/* Gives the device of a row an entry. *last: the device of the previous row
 * (rows of one device often come in runs). */
static int note_device(gpufl__model_t *m, int64_t d, int64_t *last) {
    if (d == *last) return 0;
    gpufl__model_gpu_t *g;
    int rc = gpufl__model_gpu_slot(&g, m, d);
    if (rc < 0) return rc;
    if (rc) {
        m->gpus_over_cap++; /* its rows stay, with no device entry */
        return 0;
    }
    *last = d;
    return 0;
}

/* Gives every device a sample, kernel, copy or memset names an entry, then
 * sorts the devices by number and rebuilds the index. Resolves kernel names
 * and counts kernel rows whose config id no kernel_config record has. */
static int finish_gpus(gpufl__model_t *m) {
    int64_t last = -1;
    int rc = 0;
    for (size_t i = 0; i < m->n_gpu_samples && !rc; i++)
        rc = note_device(m, m->gpu_samples[i].device, &last);
    for (size_t i = 0; i < m->n_kernels && !rc; i++) {
        gpufl__model_kernel_t *k = &m->kernels[i];
        k->name = gpufl__model_resolve(m, k->name_id);
        k->demangled = k->demangled_id ? gpufl__model_resolve(m, k->demangled_id) : k->name;
        if (k->config > 0 && !gpufl__model_config_find(m, k->config)) m->configs_missing++;
        rc = note_device(m, k->device, &last);
    }
    for (size_t i = 0; i < m->n_copies && !rc; i++) rc = note_device(m, m->copies[i].device, &last);
    for (size_t i = 0; i < m->n_memsets && !rc; i++)
        rc = note_device(m, m->memsets[i].device, &last);
    for (size_t i = 0; i < m->n_configs; i++)
        if (m->configs[i].name_id)
            m->configs[i].name = gpufl__model_resolve(m, m->configs[i].name_id);
    if (rc) return rc;
    if (m->n_gpus < 2) return 0;
    qsort(m->gpus, m->n_gpus, sizeof *m->gpus, cmp_gpu);
    gpufl__idmap_fini(&m->gpu_index);
    gpufl__idmap_init(&m->gpu_index);
    for (size_t i = 0; i < m->n_gpus; i++)
        if (gpufl__idmap_put(&m->gpu_index, (uint64_t)m->gpus[i].device + 1, i, NULL) < 0)
            return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the device index");
    return 0;
}

int gpufl__model_finish_gpus(gpufl__model_t *m) { return finish_gpus(m); }

const gpufl__model_handler_t gpufl__model_gpu_handlers[] = {
    {"gpu_info", on_gpu_info, NULL},
    {"gpu_legend", on_gpu_legend, NULL},
    {"gpu_sample", on_gpu_sample, NULL},
    {"gpu_processes", on_gpu_processes, NULL},
    {"process_info", on_process_info, NULL},
    {"xid", on_xid, NULL},
    {NULL, NULL, NULL},
};
