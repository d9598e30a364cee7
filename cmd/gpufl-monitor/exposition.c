// SPDX-License-Identifier: Apache-2.0
/*
 * exposition.c - /metrics: one snapshot rendered as Prometheus text 0.0.4 or
 * OpenMetrics 1.0. One table maps each log column (and each counter the
 * daemon adds up) to its series, base unit, HELP and TYPE; a second maps the
 * readings to dcgm-exporter's default counters for --dcgm-compat. The same
 * tables write docs/metrics.md's rows, so the doc cannot drift from the code.
 */
#include "exposition.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- the capped buffer ---------------- */

int mon_buf_append(mon_buf_t *b, const char *s, size_t n) {
    size_t max = b->max ? b->max : MON_BUF_DEFAULT_MAX;
    int rc = 0;
    if (max < 1) return -1;
    if (b->len + n + 1 > max) { /* keep room for the terminator */
        n = b->len + 1 < max ? max - 1 - b->len : 0;
        rc = -1;
    }
    if (b->len + n + 1 > b->cap || !b->data) {
        size_t want = b->cap ? b->cap : 4096;
        while (want < b->len + n + 1) want *= 2;
        if (want > max) want = max;
        char *p = realloc(b->data, want);
        if (!p) return -1;
        b->data = p;
        b->cap = want;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return rc;
}

int mon_buf_printf(mon_buf_t *b, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n < sizeof small) return mon_buf_append(b, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big) return -1;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = mon_buf_append(b, big, (size_t)n);
    free(big);
    return rc;
}

void mon_buf_free(mon_buf_t *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---------------- the tables ---------------- */

typedef enum { T_GAUGE, T_COUNTER, T_INFO, T_HISTOGRAM } mtype_t;

typedef enum {
    S_GPU_COL,  /* a gpu_sample column x scale */
    S_HOST_COL, /* a host_sample column x scale */
    S_ENERGY,   /* mon_counters_t's fields */
    S_THROTTLE,
    S_PCIE_TX,
    S_PCIE_RX,
    S_NVLINK_TX,
    S_NVLINK_RX,
    S_XID,
    S_PEAK_FLOPS, /* the model's peak, from peaks[] */
    S_EST_FLOPS,  /* peak x SM active x SM occupancy x tensor active */
    S_LOST,
    S_PROCESS, /* a mon_process_t field (column), one sample per process */
    S_SCRAPES, /* mon_self_t's fields */
    S_SAMPLES,
    S_WRITE_ERRORS,
    S_OTLP_EXPORTS,
    S_OTLP_DROPPED,
    S_SAMPLE_SECONDS,
    S_BACKEND_UP,
    S_BACKEND_INFO,
} source_t;

typedef struct series {
    const char *name; /* the family: a counter's without "_total", an info's without "_info" */
    mtype_t type;
    const char *unit; /* OpenMetrics UNIT (the name ends in it); NULL: none */
    source_t src;
    const char *column; /* the log column it comes from; NULL: none */
    double scale;       /* log unit -> base unit */
    const char *help;
} series_t;

#define PCT 0.01
static const series_t table[] = {
    {"gpufl_gpu_utilization_ratio", T_GAUGE, "ratio", S_GPU_COL, "gpu_util_pct", PCT,
     "Fraction of the sample period a kernel ran on the GPU."},
    {"gpufl_gpu_memory_utilization_ratio", T_GAUGE, "ratio", S_GPU_COL, "mem_util_pct", PCT,
     "Fraction of the sample period device memory was read or written."},
    {"gpufl_gpu_memory_used_bytes", T_GAUGE, "bytes", S_GPU_COL, "mem_used_bytes", 1,
     "Device memory in use."},
    {"gpufl_gpu_memory_free_bytes", T_GAUGE, "bytes", S_GPU_COL, "mem_free_bytes", 1,
     "Device memory free."},
    {"gpufl_gpu_memory_total_bytes", T_GAUGE, "bytes", S_GPU_COL, "mem_total_bytes", 1,
     "Device memory in all."},
    {"gpufl_gpu_temperature_celsius", T_GAUGE, "celsius", S_GPU_COL, "temp_gpu_c", 1,
     "GPU die temperature."},
    {"gpufl_gpu_memory_temperature_celsius", T_GAUGE, "celsius", S_GPU_COL, "temp_mem_c", 1,
     "Device memory temperature."},
    {"gpufl_gpu_power_watts", T_GAUGE, "watts", S_GPU_COL, "power_mw", 0.001, "Power draw."},
    {"gpufl_gpu_power_limit_watts", T_GAUGE, "watts", S_GPU_COL, "power_limit_mw", 0.001,
     "Power limit enforced."},
    {"gpufl_gpu_energy_joules", T_COUNTER, "joules", S_ENERGY, "energy_mj", 1,
     "Energy used since the monitor started (from the energy counter, else power over time)."},
    {"gpufl_gpu_sm_clock_hertz", T_GAUGE, "hertz", S_GPU_COL, "clock_sm_mhz", 1e6, "SM clock."},
    {"gpufl_gpu_graphics_clock_hertz", T_GAUGE, "hertz", S_GPU_COL, "clock_gfx_mhz", 1e6,
     "Graphics clock."},
    {"gpufl_gpu_memory_clock_hertz", T_GAUGE, "hertz", S_GPU_COL, "clock_mem_mhz", 1e6,
     "Memory clock."},
    {"gpufl_gpu_fan_speed_ratio", T_GAUGE, "ratio", S_GPU_COL, "fan_pct", PCT,
     "Fan speed as a fraction of its maximum."},
    {"gpufl_gpu_pcie_transmit_bytes", T_COUNTER, "bytes", S_PCIE_TX, "pcie_tx_bytes_per_s", 1,
     "Bytes sent over PCIe since the monitor started (rate x interval)."},
    {"gpufl_gpu_pcie_receive_bytes", T_COUNTER, "bytes", S_PCIE_RX, "pcie_rx_bytes_per_s", 1,
     "Bytes received over PCIe since the monitor started (rate x interval)."},
    {"gpufl_gpu_throttle_seconds", T_COUNTER, "seconds", S_THROTTLE, "throttle_reasons", 1,
     "Time each clock throttle reason was active since the monitor started."},
    {"gpufl_gpu_ecc_corrected_errors", T_COUNTER, NULL, S_GPU_COL, "ecc_sbe_volatile", 1,
     "Corrected (single-bit) ECC errors since the driver loaded."},
    {"gpufl_gpu_ecc_uncorrected_errors", T_COUNTER, NULL, S_GPU_COL, "ecc_dbe_volatile", 1,
     "Uncorrected (double-bit) ECC errors since the driver loaded."},
    {"gpufl_gpu_nvlink_transmit_bytes", T_COUNTER, "bytes", S_NVLINK_TX, "nvlink_tx_bytes_per_s", 1,
     "Bytes sent over NVLink since the monitor started (rate x interval)."},
    {"gpufl_gpu_nvlink_receive_bytes", T_COUNTER, "bytes", S_NVLINK_RX, "nvlink_rx_bytes_per_s", 1,
     "Bytes received over NVLink since the monitor started (rate x interval)."},
    {"gpufl_gpu_sm_active_ratio", T_GAUGE, "ratio", S_GPU_COL, "sm_active_pct", PCT,
     "Fraction of cycles an SM had at least one warp resident (GPM)."},
    {"gpufl_gpu_sm_occupancy_ratio", T_GAUGE, "ratio", S_GPU_COL, "sm_occupancy_pct", PCT,
     "Resident warps as a fraction of an SM's maximum (GPM)."},
    {"gpufl_gpu_tensor_active_ratio", T_GAUGE, "ratio", S_GPU_COL, "tensor_active_pct", PCT,
     "Fraction of cycles the tensor pipes were active (GPM)."},
    {"gpufl_gpu_dram_active_ratio", T_GAUGE, "ratio", S_GPU_COL, "dram_bw_util_pct", PCT,
     "Device memory bandwidth used as a fraction of its peak (GPM)."},
    {"gpufl_gpu_xid_errors", T_COUNTER, NULL, S_XID, NULL, 1,
     "XID errors per code since the monitor started (xid=\"other\": codes past the table)."},
    {"gpufl_gpu_peak_flops", T_GAUGE, NULL, S_PEAK_FLOPS, NULL, 1,
     "Dense FP16 tensor peak FLOP/s of the model (datasheet), the estimate's input."},
    {"gpufl_gpu_estimated_flops", T_GAUGE, NULL, S_EST_FLOPS, NULL, 1,
     "ESTIMATE of FLOP/s: peak x SM active x SM occupancy x tensor active."},
    {"gpufl_gpu_lost", T_GAUGE, NULL, S_LOST, NULL, 1,
     "1 when the device stopped answering (fell off the bus): its readings are not served."},
    {"gpufl_process_memory_used_bytes", T_GAUGE, "bytes", S_PROCESS, "used_bytes", 1,
     "Device memory a process uses (NVML's process list), labelled with who it belongs to."},
    {"gpufl_process_sm_utilization_ratio", T_GAUGE, "ratio", S_PROCESS, "sm_util_pct", PCT,
     "Fraction of the last interval a kernel of the process ran (NVML's process samples)."},
    {"gpufl_process_memory_utilization_ratio", T_GAUGE, "ratio", S_PROCESS, "mem_util_pct", PCT,
     "Fraction of the last interval the process read or wrote device memory (NVML's samples)."},
    {"gpufl_host_cpu_utilization_ratio", T_GAUGE, "ratio", S_HOST_COL, "cpu_pct", PCT,
     "Host CPU busy time over all cores."},
    {"gpufl_host_memory_used_bytes", T_GAUGE, "bytes", S_HOST_COL, "mem_used_bytes", 1,
     "Host memory in use."},
    {"gpufl_host_memory_total_bytes", T_GAUGE, "bytes", S_HOST_COL, "mem_total_bytes", 1,
     "Host memory in all."},
    {"gpufl_host_cgroup_memory_used_bytes", T_GAUGE, "bytes", S_HOST_COL, "cg_mem_used_bytes", 1,
     "Memory used by the monitor's cgroup."},
    {"gpufl_host_cgroup_memory_limit_bytes", T_GAUGE, "bytes", S_HOST_COL, "cg_mem_limit_bytes", 1,
     "Memory limit of the monitor's cgroup."},
    {"gpufl_host_cgroup_cpu_utilization_ratio", T_GAUGE, "ratio", S_HOST_COL, "cg_cpu_pct", PCT,
     "CPU used by the monitor's cgroup, as a fraction of one core."},
    {"gpufl_host_cgroup_cpu_limit_cores", T_GAUGE, "cores", S_HOST_COL, "cg_cpu_limit_cores", 1,
     "CPU limit of the monitor's cgroup, in cores."},
    {"gpufl_monitor_cpu_utilization_ratio", T_GAUGE, "ratio", S_HOST_COL, "proc_cpu_pct", PCT,
     "CPU used by the monitor itself, as a fraction of one core."},
    {"gpufl_monitor_resident_memory_bytes", T_GAUGE, "bytes", S_HOST_COL, "proc_rss_bytes", 1,
     "Resident memory of the monitor itself."},
    {"gpufl_monitor_sample_seconds", T_HISTOGRAM, "seconds", S_SAMPLE_SECONDS, NULL, 1,
     "Time one sample of a source took."},
    {"gpufl_monitor_scrapes", T_COUNTER, NULL, S_SCRAPES, NULL, 1, "Scrapes of /metrics served."},
    {"gpufl_monitor_samples", T_COUNTER, NULL, S_SAMPLES, NULL, 1, "Samples taken."},
    {"gpufl_monitor_log_write_errors", T_COUNTER, NULL, S_WRITE_ERRORS, NULL, 1,
     "Log writes that failed (disk full, ...); sampling went on."},
    {"gpufl_monitor_otlp_exports", T_COUNTER, NULL, S_OTLP_EXPORTS, NULL, 1,
     "OTLP pushes to --otlp-endpoint, by result (ok: answered 2xx; error: failed or timed out)."},
    {"gpufl_monitor_otlp_dropped", T_COUNTER, NULL, S_OTLP_DROPPED, NULL, 1,
     "Snapshots replaced by a newer one before the OTLP push thread took them."},
    {"gpufl_monitor_gpu_backend_up", T_GAUGE, NULL, S_BACKEND_UP, NULL, 1,
     "1 when the GPU backend runs, 0 when the monitor runs host-only."},
    {"gpufl_monitor_gpu_backend", T_INFO, NULL, S_BACKEND_INFO, NULL, 1,
     "Why the GPU backend does not run (present only then)."},
};
#define NSERIES ((int)(sizeof table / sizeof table[0]))

/* dcgm-exporter's default counters (etc/default-counters.csv) that the
 * readings can fill, in its units, plus SM active and occupancy, which its
 * etc/dcp-metrics-included.csv lists. */
typedef struct dcgm_series {
    const char *name;
    mtype_t type;
    const char *unit; /* for the doc: DCGM's unit */
    const char *column;
    double scale;
    int whole; /* DCGM serves whole numbers (MiB): floor */
    const char *twin;
    const char *help;
} dcgm_series_t;

#define MIB (1.0 / 1048576.0)
static const dcgm_series_t dcgm[] = {
    {"DCGM_FI_DEV_SM_CLOCK", T_GAUGE, "MHz", "clock_sm_mhz", 1, 0, "gpufl_gpu_sm_clock_hertz",
     "SM clock (MHz)."},
    {"DCGM_FI_DEV_MEM_CLOCK", T_GAUGE, "MHz", "clock_mem_mhz", 1, 0, "gpufl_gpu_memory_clock_hertz",
     "Memory clock (MHz)."},
    {"DCGM_FI_DEV_MEMORY_TEMP", T_GAUGE, "°C", "temp_mem_c", 1, 0,
     "gpufl_gpu_memory_temperature_celsius", "Memory temperature (C)."},
    {"DCGM_FI_DEV_GPU_TEMP", T_GAUGE, "°C", "temp_gpu_c", 1, 0, "gpufl_gpu_temperature_celsius",
     "GPU temperature (C)."},
    {"DCGM_FI_DEV_POWER_USAGE", T_GAUGE, "W", "power_mw", 0.001, 0, "gpufl_gpu_power_watts",
     "Power draw (W)."},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", T_COUNTER, "mJ", "energy_mj", 1, 0,
     "gpufl_gpu_energy_joules", "Energy used since the driver loaded (mJ)."},
    {"DCGM_FI_DEV_GPU_UTIL", T_GAUGE, "%", "gpu_util_pct", 1, 0, "gpufl_gpu_utilization_ratio",
     "GPU utilization (%)."},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", T_GAUGE, "%", "mem_util_pct", 1, 0,
     "gpufl_gpu_memory_utilization_ratio", "Memory utilization (%)."},
    {"DCGM_FI_DEV_XID_ERRORS", T_GAUGE, "code", NULL, 1, 0, "gpufl_gpu_xid_errors",
     "Code of the last XID error seen (0: none)."},
    {"DCGM_FI_DEV_FB_FREE", T_GAUGE, "MiB", "mem_free_bytes", MIB, 1, "gpufl_gpu_memory_free_bytes",
     "Framebuffer memory free (MiB)."},
    {"DCGM_FI_DEV_FB_USED", T_GAUGE, "MiB", "mem_used_bytes", MIB, 1, "gpufl_gpu_memory_used_bytes",
     "Framebuffer memory used (MiB)."},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", T_GAUGE, "ratio", "tensor_active_pct", PCT, 0,
     "gpufl_gpu_tensor_active_ratio", "Ratio of cycles the tensor pipes are active."},
    {"DCGM_FI_PROF_DRAM_ACTIVE", T_GAUGE, "ratio", "dram_bw_util_pct", PCT, 0,
     "gpufl_gpu_dram_active_ratio", "Ratio of cycles the memory interface is active."},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", T_GAUGE, "B/s", "pcie_tx_bytes_per_s", 1, 0,
     "gpufl_gpu_pcie_transmit_bytes", "PCIe transmit rate (bytes per second)."},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", T_GAUGE, "B/s", "pcie_rx_bytes_per_s", 1, 0,
     "gpufl_gpu_pcie_receive_bytes", "PCIe receive rate (bytes per second)."},
    {"DCGM_FI_PROF_SM_ACTIVE", T_GAUGE, "ratio", "sm_active_pct", PCT, 0,
     "gpufl_gpu_sm_active_ratio", "Ratio of cycles an SM has at least one warp assigned."},
    {"DCGM_FI_PROF_SM_OCCUPANCY", T_GAUGE, "ratio", "sm_occupancy_pct", PCT, 0,
     "gpufl_gpu_sm_occupancy_ratio", "Ratio of warps resident on an SM to its maximum."},
};
#define NDCGM ((int)(sizeof dcgm / sizeof dcgm[0]))

/* Enabled in dcgm-exporter's default counters file, not served: why. */
static const struct {
    const char *name, *why;
} dcgm_missing[] = {
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "gpufl does not read NVML's PCIe replay counter"},
    {"DCGM_FI_DEV_ENC_UTIL", "gpufl does not read encoder utilization"},
    {"DCGM_FI_DEV_DEC_UTIL", "gpufl does not read decoder utilization"},
    {"DCGM_FI_DEV_FB_RESERVED",
     "whether used memory includes the reserved part depends on the NVML call the driver had; "
     "a row does not say"},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
     "DCGM's own sum of per-lane counters, unit not stated; gpufl serves NVLink bytes totals"},
    {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "vGPU licensing is not read"},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "row remapping is not read"},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "row remapping is not read"},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "row remapping is not read"},
    {"DCGM_FI_DRIVER_VERSION", "a label in DCGM; the driver version is not in the readings"},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpufl's GPM sample has no graphics-engine activity"},
};

/* Dense FP16/BF16 tensor peaks (no sparsity), from NVIDIA's datasheets.
 * Keys match a whole word of the model name; more specific keys first. */
static const struct {
    const char *key;
    double flops;
} peaks[] = {
    {"H100 PCIe", 756e12}, {"H100 NVL", 835e12}, {"H200 NVL", 835e12}, {"H100", 989e12},
    {"H200", 989e12},      {"B200", 2250e12},    {"A100", 312e12},     {"L40S", 362e12},
    {"L40", 181e12},       {"L4", 121e12},       {"V100", 125e12},     {"T4", 65e12},
};

/* ---------------- values ---------------- */

static int dev_col(const mon_device_t *d, const char *column, double *v) {
    const mon_value_t *x = d->lost ? NULL : mon_value_find(d->cols, d->ncols, column);
    if (x) *v = x->value;
    return x != NULL;
}

static double peak_flops(const mon_device_t *d) {
    for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++) {
        size_t n = strlen(peaks[i].key);
        for (const char *p = strstr(d->model, peaks[i].key); p; p = strstr(p + 1, peaks[i].key)) {
            char before = p == d->model ? ' ' : p[-1], after = p[n];
            if ((before == ' ' || before == '-') && (after == '\0' || after == ' ' || after == '-'))
                return peaks[i].flops;
        }
    }
    return 0;
}

/* The value of a one-sample-per-device series; 0 when d has none. A MIG
 * instance gets no FLOP/s: its share of the whole GPU's peak is unknown. */
static int dev_value(const series_t *s, const mon_device_t *d, double *v) {
    const mon_counters_t *c = &d->counters;
    double a, b, t;
    switch (s->src) {
    case S_GPU_COL:
        if (!dev_col(d, s->column, v)) return 0;
        *v *= s->scale;
        return 1;
    case S_ENERGY: *v = c->energy_joules; return 1;
    case S_PCIE_TX: *v = c->pcie_tx_bytes; return 1;
    case S_PCIE_RX: *v = c->pcie_rx_bytes; return 1;
    case S_NVLINK_TX: *v = c->nvlink_tx_bytes; return 1;
    case S_NVLINK_RX: *v = c->nvlink_rx_bytes; return 1;
    case S_LOST: *v = d->lost ? 1 : 0; return 1;
    case S_PEAK_FLOPS: *v = d->mig_instance < 0 ? peak_flops(d) : 0; return *v > 0;
    case S_EST_FLOPS:
        if (d->mig_instance >= 0 || peak_flops(d) <= 0) return 0;
        if (!dev_col(d, "sm_active_pct", &a) || !dev_col(d, "sm_occupancy_pct", &b) ||
            !dev_col(d, "tensor_active_pct", &t))
            return 0;
        *v = peak_flops(d) * (a * PCT) * (b * PCT) * (t * PCT);
        return 1;
    default: return 0;
    }
}

/* ---------------- text ---------------- */

/* The shortest of %.15g and %.17g that reads back as v. */
static void fmt_num(char *dst, size_t n, double v) {
    if (isnan(v))
        snprintf(dst, n, "NaN");
    else if (isinf(v))
        snprintf(dst, n, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        snprintf(dst, n, "%.0f", v);
    else {
        snprintf(dst, n, "%.15g", v);
        if (strtod(dst, NULL) != v) snprintf(dst, n, "%.17g", v);
    }
}

/* Label values escape backslash, double quote and newline (both formats). */
static int put_escaped(mon_buf_t *b, const char *s) {
    int rc = 0;
    const char *run = s;
    for (; *s; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
        if (!esc) continue;
        rc |= mon_buf_append(b, run, (size_t)(s - run));
        rc |= mon_buf_append(b, esc, 2);
        run = s + 1;
    }
    rc |= mon_buf_append(b, run, (size_t)(s - run));
    return rc;
}

typedef struct labels {
    const char *k[12];
    char v[12][112];
    const char *vp[12]; /* v[i] or a longer string kept elsewhere */
    char device[24];    /* "nvidia<N>" */
    int n;
} labels_t;

static void lab(labels_t *l, const char *k, const char *v) {
    if (!v || !*v || l->n >= 12) return; /* an empty label is no label to Prometheus */
    l->k[l->n] = k;
    l->vp[l->n] = v;
    l->n++;
}

static void lab_int(labels_t *l, const char *k, long long x) {
    if (l->n >= 12) return;
    snprintf(l->v[l->n], sizeof l->v[0], "%lld", x);
    lab(l, k, l->v[l->n]);
}

/* The whole GPU a MIG instance is part of: the one on its PCI bus. */
static int parent_index(const mon_snapshot_t *s, const mon_device_t *d) {
    if (d->mig_instance < 0) return d->index;
    for (int i = 0; i < s->ndevices && i < MON_MAX_DEVICES; i++) {
        const mon_device_t *p = &s->devices[i];
        if (p->mig_instance < 0 && strcmp(p->pci_bus_id, d->pci_bus_id) == 0) return p->index;
    }
    return d->index;
}

/* gpufl's labels, or dcgm-exporter's (names, order, parent index on MIG). */
static void device_labels(labels_t *l, const mon_snapshot_t *s, const mon_device_t *d,
                          int dcgm_style) {
    int parent = parent_index(s, d);
    memset(l, 0, sizeof *l);
    lab_int(l, "gpu", dcgm_style ? parent : d->index);
    lab(l, dcgm_style ? "UUID" : "uuid", d->uuid);
    lab(l, "pci_bus_id", d->pci_bus_id);
    snprintf(l->device, sizeof l->device, "nvidia%d", parent);
    lab(l, "device", l->device);
    lab(l, dcgm_style ? "modelName" : "model", d->model);
    if (d->mig_instance >= 0) {
        lab(l, dcgm_style ? "GPU_I_PROFILE" : "mig_profile", d->mig_profile);
        lab_int(l, dcgm_style ? "GPU_I_ID" : "mig_instance", d->mig_instance);
    }
    lab(l, dcgm_style ? "Hostname" : "hostname", s->hostname);
}

typedef struct ctx {
    mon_buf_t *b;
    int om;
    int rc;
    int headed; /* the current family's HELP/TYPE are out */
} ctx_t;

static const char *type_word(mtype_t t, int om) {
    switch (t) {
    case T_COUNTER: return "counter";
    case T_HISTOGRAM: return "histogram";
    case T_INFO: return om ? "info" : "gauge";
    default: return "gauge";
    }
}

/* HELP, TYPE (and UNIT in OpenMetrics) before a family's first sample only,
 * so that a family with no value writes nothing. 0.0.4 names the metric as
 * its samples do (counter "_total", info "_info"); OpenMetrics the family. */
static void head(ctx_t *c, const char *family, mtype_t t, const char *unit, const char *help,
                 int keep_name) {
    if (c->headed) return;
    c->headed = 1;
    const char *suffix = "";
    if (!c->om && !keep_name) suffix = t == T_COUNTER ? "_total" : t == T_INFO ? "_info" : "";
    const char *tw = keep_name && c->om && t == T_COUNTER ? "unknown" : type_word(t, c->om);
    c->rc |= mon_buf_printf(c->b, "# HELP %s%s %s\n# TYPE %s%s %s\n", family, suffix, help, family,
                            suffix, tw);
    if (c->om && unit) c->rc |= mon_buf_printf(c->b, "# UNIT %s %s\n", family, unit);
}

static void put_label(ctx_t *c, int first, const char *k, const char *v) {
    c->rc |= mon_buf_printf(c->b, "%s%s=\"", first ? "{" : ",", k);
    c->rc |= put_escaped(c->b, v);
    c->rc |= mon_buf_append(c->b, "\"", 1);
}

/* One sample line: name+suffix, labels l then k=v (when k), the value. */
static void sample(ctx_t *c, const char *name, const char *suffix, const labels_t *l, const char *k,
                   const char *v, double value) {
    char num[40];
    fmt_num(num, sizeof num, value);
    c->rc |= mon_buf_printf(c->b, "%s%s", name, suffix);
    int n = 0;
    for (; l && n < l->n; n++) put_label(c, n == 0, l->k[n], l->vp[n]);
    if (k && v) put_label(c, n++ == 0, k, v);
    c->rc |= mon_buf_printf(c->b, "%s %s\n", n ? "}" : "", num);
}

static const char *sample_suffix(mtype_t t) {
    return t == T_COUNTER ? "_total" : t == T_INFO ? "_info" : "";
}

/* ---------------- families ---------------- */

/* A process's value for a series' column; negative: unknown. */
static double process_value(const mon_process_t *p, const char *column) {
    if (strcmp(column, "sm_util_pct") == 0) return p->sm_util_pct;
    if (strcmp(column, "mem_util_pct") == 0) return p->mem_util_pct;
    return (double)p->used_bytes;
}

/* One sample per process whose value NVML gave, labelled with its device
 * and who it belongs to; a lost device serves none (its list is stale). */
static void render_process_family(ctx_t *c, const series_t *s, const mon_snapshot_t *snap) {
    for (int i = 0; i < snap->ndevices && i < MON_MAX_DEVICES; i++) {
        const mon_device_t *d = &snap->devices[i];
        for (int j = 0; !d->lost && j < d->nprocesses && j < MON_MAX_PROCESSES; j++) {
            const mon_process_t *p = &d->processes[j];
            labels_t l;
            double v = process_value(p, s->column);
            if (v < 0) continue;
            memset(&l, 0, sizeof l);
            lab_int(&l, "gpu", d->index);
            lab(&l, "uuid", d->uuid);
            lab_int(&l, "pid", p->pid);
            lab(&l, "comm", p->comm);
            lab(&l, "user", p->user);
            lab(&l, "container", p->container);
            lab(&l, "pod_uid", p->pod_uid);
            lab(&l, "slurm_job", p->slurm_job);
            head(c, s->name, s->type, s->unit, s->help, 0);
            sample(c, s->name, sample_suffix(s->type), &l, NULL, NULL, v * s->scale);
        }
    }
}

static void render_device_family(ctx_t *c, const series_t *s, const mon_snapshot_t *snap) {
    labels_t l;
    const char *suf = sample_suffix(s->type);
    for (int i = 0; i < snap->ndevices && i < MON_MAX_DEVICES; i++) {
        const mon_device_t *d = &snap->devices[i];
        const mon_counters_t *k = &d->counters;
        double v;
        device_labels(&l, snap, d, 0);
        if (s->src == S_THROTTLE) {
            for (int bit = 0; bit < MON_MAX_REASONS; bit++) {
                /* Named reasons from the start (rate() needs the zero); unnamed bits once set. */
                char unnamed[16];
                const char *why = d->throttle_reason_names[bit];
                if (!why && k->throttle_seconds[bit] <= 0) continue;
                if (!why) snprintf(unnamed, sizeof unnamed, "bit%d", bit), why = unnamed;
                head(c, s->name, s->type, s->unit, s->help, 0);
                sample(c, s->name, suf, &l, "reason", why, k->throttle_seconds[bit]);
            }
        } else if (s->src == S_XID) {
            for (int x = 0; x < k->nxids && x < MON_MAX_XIDS; x++) {
                char code[16];
                snprintf(code, sizeof code, "%u", k->xids[x].code);
                head(c, s->name, s->type, s->unit, s->help, 0);
                sample(c, s->name, suf, &l, "xid", code, (double)k->xids[x].count);
            }
            if (k->xid_overflow) {
                head(c, s->name, s->type, s->unit, s->help, 0);
                sample(c, s->name, suf, &l, "xid", "other", (double)k->xid_overflow);
            }
        } else if (dev_value(s, d, &v)) {
            head(c, s->name, s->type, s->unit, s->help, 0);
            sample(c, s->name, suf, &l, NULL, NULL, v);
        }
    }
}

static void render_histogram(ctx_t *c, const series_t *s, const mon_self_t *self,
                             const labels_t *host) {
    for (int i = 0; i < self->nsources && i < MON_MAX_SOURCES; i++) {
        const char *src = self->sample[i].source ? self->sample[i].source : "unknown";
        head(c, s->name, s->type, s->unit, s->help, 0);
        labels_t l = *host;
        lab(&l, "source", src);
        for (int j = 0; j < MON_SAMPLE_BUCKETS; j++) {
            char le[40];
            fmt_num(le, sizeof le, mon_sample_buckets[j]);
            /* OpenMetrics writes le as a float ("1.0"), 0.0.4 clients as Go does ("1"). */
            if (c->om && !strpbrk(le, ".eE")) strcat(le, ".0");
            sample(c, s->name, "_bucket", &l, "le", le, (double)self->sample[i].bucket_counts[j]);
        }
        sample(c, s->name, "_bucket", &l, "le", "+Inf", (double)self->sample[i].count);
        sample(c, s->name, "_count", &l, NULL, NULL, (double)self->sample[i].count);
        sample(c, s->name, "_sum", &l, NULL, NULL, self->sample[i].sum_seconds);
    }
}

static void render_family(ctx_t *c, const series_t *s, const mon_snapshot_t *snap) {
    labels_t host;
    memset(&host, 0, sizeof host);
    lab(&host, "hostname", snap->hostname);
    const char *suf = sample_suffix(s->type);
    const mon_value_t *x;
    double v = 0;
    c->headed = 0;
    switch (s->src) {
    case S_HOST_COL:
        if (!(x = mon_value_find(snap->host, snap->host_ncols, s->column))) return;
        v = x->value * s->scale;
        break;
    case S_SCRAPES: v = (double)snap->self.scrapes_total; break;
    case S_SAMPLES: v = (double)snap->self.samples_total; break;
    case S_WRITE_ERRORS: v = (double)snap->self.write_errors_total; break;
    case S_OTLP_DROPPED: v = (double)snap->self.otlp_dropped; break;
    case S_OTLP_EXPORTS:
        head(c, s->name, s->type, s->unit, s->help, 0);
        sample(c, s->name, suf, &host, "result", "ok", (double)snap->self.otlp_exports_ok);
        sample(c, s->name, suf, &host, "result", "error", (double)snap->self.otlp_exports_error);
        return;
    case S_BACKEND_UP: v = snap->gpu_available ? 1 : 0; break;
    case S_BACKEND_INFO:
        if (snap->gpu_available) return;
        head(c, s->name, s->type, s->unit, s->help, 0);
        sample(c, s->name, suf, &host, "reason", snap->gpu_why[0] ? snap->gpu_why : "unknown", 1);
        return;
    case S_SAMPLE_SECONDS: render_histogram(c, s, &snap->self, &host); return;
    case S_PROCESS: render_process_family(c, s, snap); return;
    default: render_device_family(c, s, snap); return;
    }
    head(c, s->name, s->type, s->unit, s->help, 0);
    sample(c, s->name, suf, &host, NULL, NULL, v);
}

/* DCGM's names are kept as they are: a counter stays unsuffixed, so in
 * OpenMetrics (where a counter's samples end in _total) it is "unknown". */
static void render_dcgm_family(ctx_t *c, const dcgm_series_t *s, const mon_snapshot_t *snap) {
    labels_t l;
    c->headed = 0;
    for (int i = 0; i < snap->ndevices && i < MON_MAX_DEVICES; i++) {
        const mon_device_t *d = &snap->devices[i];
        double v;
        if (s->column) {
            if (!dev_col(d, s->column, &v)) continue;
            v *= s->scale;
            if (s->whole) v = floor(v);
        } else {
            if (d->lost) continue;
            v = d->counters.last_xid;
        }
        device_labels(&l, snap, d, 1);
        head(c, s->name, s->type, NULL, s->help, 1);
        sample(c, s->name, "", &l, NULL, NULL, v);
    }
}

int mon_render_metrics(mon_buf_t *out, const mon_snapshot_t *s, int openmetrics, int dcgm_compat) {
    ctx_t c = {out, openmetrics ? 1 : 0, 0, 0};
    for (int i = 0; i < NSERIES; i++) render_family(&c, &table[i], s);
    for (int i = 0; dcgm_compat && i < NDCGM; i++) render_dcgm_family(&c, &dcgm[i], s);
    if (c.om) c.rc |= mon_buf_append(out, "# EOF\n", 6);
    return c.rc ? -1 : 0;
}

const char *mon_metrics_content_type(int openmetrics) {
    return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                       : "text/plain; version=0.0.4; charset=utf-8";
}

/* ---------------- the doc ---------------- */

static const char *labels_doc(source_t src) {
    switch (src) {
    case S_HOST_COL:
    case S_SCRAPES:
    case S_SAMPLES:
    case S_WRITE_ERRORS:
    case S_OTLP_DROPPED:
    case S_BACKEND_UP: return "hostname";
    case S_OTLP_EXPORTS: return "hostname, result";
    case S_BACKEND_INFO: return "hostname, reason";
    case S_SAMPLE_SECONDS: return "hostname, source, le";
    case S_THROTTLE: return "device labels, reason";
    case S_XID: return "device labels, xid";
    case S_PROCESS: return "gpu, uuid, pid, comm, user, container, pod_uid, slurm_job";
    default: return "device labels";
    }
}

int mon_metrics_doc(mon_buf_t *out) {
    int rc = 0;
    rc |= mon_buf_printf(out, "| Series | Type | Unit | Labels | Log column | DCGM twin |\n"
                              "|---|---|---|---|---|---|\n");
    for (int i = 0; i < NSERIES; i++) {
        const series_t *s = &table[i];
        char twin[256] = "";
        for (int j = 0; j < NDCGM; j++)
            if (strcmp(dcgm[j].twin, s->name) == 0)
                snprintf(twin + strlen(twin), sizeof twin - strlen(twin), "%s`%s`",
                         twin[0] ? ", " : "", dcgm[j].name);
        rc |= mon_buf_printf(out, "| `%s%s` | %s | %s | %s | %s%s%s | %s |\n", s->name,
                             sample_suffix(s->type), type_word(s->type, 1), s->unit ? s->unit : "-",
                             labels_doc(s->src), s->column ? "`" : "", s->column ? s->column : "-",
                             s->column ? "`" : "", twin[0] ? twin : "-");
    }
    rc |= mon_buf_printf(out, "\nWith `--dcgm-compat`:\n\n"
                              "| DCGM series | Type | Unit | Log column | gpufl series |\n"
                              "|---|---|---|---|---|\n");
    for (int j = 0; j < NDCGM; j++) {
        const char *suffix = "";
        for (int i = 0; i < NSERIES; i++)
            if (strcmp(table[i].name, dcgm[j].twin) == 0) suffix = sample_suffix(table[i].type);
        rc |= mon_buf_printf(out, "| `%s` | %s | %s | %s%s%s | `%s%s` |\n", dcgm[j].name,
                             type_word(dcgm[j].type, 0), dcgm[j].unit, dcgm[j].column ? "`" : "",
                             dcgm[j].column ? dcgm[j].column : "XID events",
                             dcgm[j].column ? "`" : "", dcgm[j].twin, suffix);
    }
    rc |= mon_buf_printf(out, "\nIn dcgm-exporter's default counters, not served:\n\n"
                              "| DCGM series | Why not |\n|---|---|\n");
    for (size_t j = 0; j < sizeof dcgm_missing / sizeof dcgm_missing[0]; j++)
        rc |= mon_buf_printf(out, "| `%s` | %s |\n", dcgm_missing[j].name, dcgm_missing[j].why);
    return rc ? -1 : 0;
}
