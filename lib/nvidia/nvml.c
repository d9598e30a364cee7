// SPDX-License-Identifier: Apache-2.0
/*
 * nvml.c - NVIDIA device telemetry: libnvidia-ml loaded with dlopen, devices
 * (and MIG instances) listed once, samples read with as few calls as NVML
 * allows and without its blocking paths.
 *
 * Calls per sample, steady state (after the first sample has dropped what
 * the device refuses):
 *   whole GPU:    17 = memory, utilization, temperature, power, power limit,
 *                 3 clocks, fan, clock event reasons, energy, 1 field-value
 *                 batch (memory temperature; ECC corrected/uncorrected when
 *                 ECC is on; PCIe and NVLink byte counters on GPUs without
 *                 GPM), compute and graphics processes, process utilization
 *                 (only while a process is listed), GPM sample + GPM
 *                 metrics (Hopper and newer: SM activity, occupancy, tensor,
 *                 DRAM, and the PCIe/NVLink rates).
 *   H100 SXM, driver 580.159.04: 14 (no fan; energy, which takes ~3 ms to
 *                 read there, once every 30 s; counted before process
 *                 utilization was read, which adds one while a process runs). Measured there, 2026-11-22,
 *                 median of 1000 samples: 79 us idle, 97 us with one process
 *                 running (87 us on an H200 with 18 NVLink links); the GPM
 *                 snapshot (~50 us), the two process lists (~40 us with one
 *                 process) and memory (~6 us) are nearly all of it, the other
 *                 calls take under 1 us each.
 *   MIG instance: 5 = memory, compute and graphics processes, GPM sample +
 *                 metrics. The device-wide readings (temperature, power,
 *                 clocks, PCIe, NVLink, ECC, energy) belong to the parent
 *                 GPU, which is listed as a device of its own.
 * A query answered NOT_SUPPORTED or NO_PERMISSION (or a field value or GPM
 * metric with that status) is never asked again for that device. PCIe and
 * NVLink rates come from GPM where it works, else from cumulative counters
 * over the interval between two samples; never from
 * nvmlDeviceGetPcieThroughput, which blocks for 20 ms.
 */
#include "nvidia/nvml.h"

#include "util/error.h"
#include "util/log.h"
#include "nvidia/nvml_api.h"
#include "util/dl.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Process entries asked for per call, and the largest entry layout. */
#define PROC_ENTRIES_MAX     256
#define PROC_ENTRY_BYTES_MAX ((int)sizeof(nvmlProcessInfo_v3_535_t))
/* Filled into the process buffer to see how far the driver wrote. */
#define PROC_SENTINEL   0xA5
#define GPM_METRICS_MAX 8
/* An energy read slower than this is made at most every ENERGY_SLOW_EVERY_NS. */
#define ENERGY_SLOW_NS       INT64_C(500000)
#define ENERGY_SLOW_EVERY_NS INT64_C(30000000000) /* 3 ms every 30 s: 10 us a sample at 100 ms */
#define NS_PER_S             1e9
#define MIB                  1048576.0
#define KIB                  1024

static const char *const default_names[] = {"libnvidia-ml.so.1", "libnvidia-ml.so", NULL};

/* ---------------------------------------------------------------------- */
/* The loaded library                                                       */
/* ---------------------------------------------------------------------- */

typedef struct nvml_fns {
    nvml_void_fn *init, *shutdown;
    nvml_error_string_fn *error_string;
    nvml_system_string_fn *driver_version, *nvml_version;
    nvml_system_int_fn *cuda_driver_version;
    nvml_device_count_fn *device_count;
    nvml_device_by_index_fn *handle_by_index;
    nvml_device_string_fn *name, *uuid;
    nvml_device_pci_fn *pci_info;
    nvml_device_cc_fn *compute_capability;
    nvml_device_attributes_fn *attributes;
    nvml_device_memory_v2_fn *memory_v2;
    nvml_device_memory_fn *memory;
    nvml_device_mig_mode_fn *mig_mode;
    nvml_device_uint_fn *max_mig_count;
    nvml_device_mig_handle_fn *mig_handle;
    nvml_device_uint_fn *gpu_instance_id;
    nvml_device_ecc_mode_fn *ecc_mode;
    nvml_device_nvlink_state_fn *nvlink_state;
    nvml_device_utilization_fn *utilization;
    nvml_device_temperature_fn *temperature;
    nvml_device_uint_fn *power_usage, *power_limit, *fan_speed, *num_cores;
    nvml_device_clock_fn *clock;
    nvml_device_ull_fn *event_reasons, *energy;
    nvml_device_fields_fn *field_values;
    nvml_device_processes_fn *compute_procs, *graphics_procs;
    nvml_device_process_util_fn *process_util;
    nvml_gpm_support_fn *gpm_support;
    nvml_gpm_alloc_fn *gpm_alloc;
    nvml_gpm_free_fn *gpm_free;
    nvml_gpm_sample_get_fn *gpm_sample;
    nvml_gpm_mig_sample_get_fn *gpm_mig_sample;
    nvml_gpm_metrics_get_fn *gpm_metrics;
    nvml_event_set_create_fn *event_set_create;
    nvml_event_set_free_fn *event_set_free;
    nvml_device_register_events_fn *register_events;
    nvml_event_set_wait_fn *event_set_wait;
} nvml_fns_t;

/* Indexes into the symbol table that open() looks at after resolving. */
enum { SYM_INIT = 0, SYM_COMPUTE_PROCS = 1, SYM_GRAPHICS_PROCS = 2, SYM_EVENT_WAIT = 3 };

/* Queries a device may refuse; each is a bit of dev->skip. */
enum query {
    Q_MEMORY_V2,
    Q_MEMORY,
    Q_UTILIZATION,
    Q_TEMPERATURE,
    Q_POWER,
    Q_POWER_LIMIT,
    Q_CLOCK_SM,
    Q_CLOCK_GFX,
    Q_CLOCK_MEM,
    Q_FAN,
    Q_EVENT_REASONS,
    Q_ENERGY,
    Q_FIELDS,
    Q_COMPUTE_PROCS,
    Q_GRAPHICS_PROCS,
    Q_GPM,
    Q_PROCESS_UTIL,
    Q_COUNT
};

static const char *const query_names[Q_COUNT] = {
    "memory (v2)",
    "memory",
    "utilization",
    "temperature",
    "power",
    "power limit",
    "SM clock",
    "graphics clock",
    "memory clock",
    "fan",
    "clock event reasons",
    "energy",
    "field values",
    "compute processes",
    "graphics processes",
    "GPM",
    "process utilization",
};

/* The field values read in the one batch call; each is a bit of dev->field_skip. */
enum field {
    F_MEMORY_TEMP,
    F_PCIE_TX,
    F_PCIE_RX,
    F_ECC_SBE,
    F_ECC_DBE,
    F_NVLINK_TX,
    F_NVLINK_RX,
    F_COUNT
};

static const struct {
    unsigned int id, scope;
} field_ids[F_COUNT] = {
    [F_MEMORY_TEMP] = {NVML_FI_DEV_MEMORY_TEMP, 0},
    [F_PCIE_TX] = {NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 0},
    [F_PCIE_RX] = {NVML_FI_DEV_PCIE_COUNT_RX_BYTES, 0},
    [F_ECC_SBE] = {NVML_FI_DEV_ECC_SBE_VOL_TOTAL, 0},
    [F_ECC_DBE] = {NVML_FI_DEV_ECC_DBE_VOL_TOTAL, 0},
    [F_NVLINK_TX] = {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_SCOPE_ALL_LINKS},
    [F_NVLINK_RX] = {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, NVML_FI_SCOPE_ALL_LINKS},
};

#define BIT(x) (1u << (x))

/* A cumulative counter and its value at the previous sample. */
typedef struct counter {
    uint64_t last;
    int valid;
} counter_t;

#define PCIE_FIELDS   (BIT(F_PCIE_TX) | BIT(F_PCIE_RX))
#define NVLINK_FIELDS (BIT(F_NVLINK_TX) | BIT(F_NVLINK_RX))

typedef struct device {
    gpufl__gpu_info_t info;
    nvmlDevice_t handle;
    nvmlDevice_t parent;          /* the whole GPU, for a MIG instance (GPM is read there) */
    unsigned int gpu_instance_id; /* MIG GPU instance id, for nvmlGpmMigSampleGet */
    unsigned int skip;            /* BIT(Q_*) no longer asked */
    unsigned int field_skip;      /* BIT(F_*) no longer asked */
    int lost;                     /* answered GPU_IS_LOST: never asked again */
    int64_t last_ns;              /* now_ns of the previous sample; 0 before the first */
    counter_t pcie_tx, pcie_rx, nvlink_tx, nvlink_rx;
    unsigned int gpm_rates;   /* PCIE_/NVLINK_FIELDS whose rates GPM gives instead */
    unsigned int gpm_refused; /* PCIE_/NVLINK_FIELDS whose GPM metrics were refused */
    int64_t energy_next_ns;   /* the energy counter is not read before this now_ns */
    nvmlGpmSample_t gpm[2];   /* two snapshots, used in turn */
    int64_t slow_last_ns;     /* when processes and GPM were last read */
    int gpm_next;             /* which one the next snapshot goes into */
    int gpm_have_prev;        /* gpm[!gpm_next] holds the previous snapshot */
    unsigned long long util_seen_us; /* newest process utilization sample taken (NVML's clock) */
} device_t;

struct gpufl__nvml {
    gpufl__dl_t dl;
    nvml_fns_t fn;
    int initialized;       /* nvmlInit succeeded: shut down at close */
    const char *init_name; /* the init symbol found, for messages */
    int count;
    device_t dev[GPUFL_GPU_MAX];
    char version[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
    /* Bytes per process entry each processes call writes: 16, 24, 32, or 0
     * while not yet measured (a _v3 symbol: 24 on most drivers, 32 on
     * 535.43 .. 535.86, which grew the struct without a new symbol).
     * Devices are sampled on threads of their own (gpu_sampler.c): what they
     * share here is read and written atomically. */
    int proc_stride[2];
    int64_t part_ns[GPUFL_NVML_PARTS]; /* time spent per part of a sample */
    int64_t part_samples;
    int64_t slow_every_ns; /* processes and GPM at most this often; 0: every sample */
    nvmlEventSet_t events; /* critical XID events of the whole GPUs; NULL: none are read */
    int event_wait_v2;     /* the wait call gives the MIG instance ids */
    /* GPM calls, one at a time across the devices' threads: called at once from two devices'
     * workers while processes came and went, nvmlGpmMetricsGet faulted inside libnvidia-ml
     * (driver 580.159.04, two H200) within seconds; serialized, 200 s of the same churn ran
     * clean (tests/gpu/run_monitor_churn.sh, docs/gpu-results/2026-11-27-monitor.md). */
    pthread_mutex_t gpm_lock;
};

/* ---------------------------------------------------------------------- */
/* Small helpers                                                            */
/* ---------------------------------------------------------------------- */

/* Our own names for the statuses we meet, for when nvmlErrorString is missing. */
static const char *status_name(const gpufl__nvml_t *n, nvmlReturn_t r) {
    if (n && n->fn.error_string) {
        const char *s = n->fn.error_string(r);
        if (s && s[0]) return s;
    }
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "Reset Required";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch";
    case NVML_ERROR_NO_DATA: return "No Data";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
    default: return "Unknown Error";
    }
}

/* A refusal that will not change while the process lives. */
static int is_refusal(nvmlReturn_t r) {
    return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION ||
           r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

/*
 * Looks at the status of query q on d: 1 when it succeeded. A lost GPU is
 * remembered (the caller then stops asking), so is a refusal (never asked
 * again); any other failure is only this sample's.
 */
static int ok(device_t *d, enum query q, nvmlReturn_t r) {
    if (r == NVML_SUCCESS) return 1;
    if (r == NVML_ERROR_GPU_IS_LOST) {
        d->lost = 1;
    } else if (is_refusal(r)) {
        d->skip |= BIT(q);
        gpufl__debug("nvml: device %s: %s refused (%u), not asked again", d->info.uuid,
                     query_names[q], r);
    }
    return 0;
}

/* Whether query q is still worth asking (and the function exists). */
static int want(const device_t *d, enum query q, const void *fn) {
    return fn != NULL && !d->lost && !(d->skip & BIT(q));
}

static int64_t clamp_i64(unsigned long long v) {
    return v > (unsigned long long)INT64_MAX ? GPUFL_GPU_UNKNOWN : (int64_t)v;
}

static void copy_string(char *out, size_t size, const char *in) { snprintf(out, size, "%s", in); }

/* A field's value as an unsigned integer; 0 when its type cannot be one. */
static int field_u64(const nvmlFieldValue_t *f, uint64_t *out) {
    switch (f->valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
        if (!(f->value.dVal >= 0 && f->value.dVal < 1.8e19)) return 0;
        *out = (uint64_t)f->value.dVal;
        return 1;
    case NVML_VALUE_TYPE_UNSIGNED_INT: *out = f->value.uiVal; return 1;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: *out = f->value.ulVal; return 1;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: *out = f->value.ullVal; return 1;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (f->value.sllVal < 0) return 0;
        *out = (uint64_t)f->value.sllVal;
        return 1;
    case NVML_VALUE_TYPE_SIGNED_INT:
        if (f->value.siVal < 0) return 0;
        *out = (uint64_t)f->value.siVal;
        return 1;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: *out = f->value.usVal; return 1;
    default: return 0;
    }
}

/* ---------------------------------------------------------------------- */
/* Loading                                                                  */
/* ---------------------------------------------------------------------- */

#define SYM(field, ...)                                                                            \
    { {__VA_ARGS__}, &fn->field, 0, -1 }
#define REQUIRED(field, ...)                                                                       \
    { {__VA_ARGS__}, &fn->field, 1, -1 }

/* Resolves every symbol we use; newest version first. Returns 0 or
 * GPUFL_ENOTSUP (a required one is missing). */
static int load_symbols(gpufl__nvml_t *n, char *why, size_t why_size) {
    nvml_fns_t *fn = &n->fn;
    gpufl__dl_sym_t syms[] = {
        [SYM_INIT] = REQUIRED(init, "nvmlInit_v2", "nvmlInit"),
        [SYM_COMPUTE_PROCS] =
            SYM(compute_procs, "nvmlDeviceGetComputeRunningProcesses_v3",
                "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses"),
        [SYM_GRAPHICS_PROCS] = SYM(graphics_procs, "nvmlDeviceGetGraphicsRunningProcesses_v3",
                                   "nvmlDeviceGetGraphicsRunningProcesses_v2",
                                   "nvmlDeviceGetGraphicsRunningProcesses"),
        [SYM_EVENT_WAIT] = SYM(event_set_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait"),
        REQUIRED(shutdown, "nvmlShutdown"),
        REQUIRED(device_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
        REQUIRED(handle_by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
        SYM(error_string, "nvmlErrorString"),
        SYM(driver_version, "nvmlSystemGetDriverVersion"),
        SYM(nvml_version, "nvmlSystemGetNVMLVersion"),
        SYM(cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2",
            "nvmlSystemGetCudaDriverVersion"),
        SYM(name, "nvmlDeviceGetName"),
        SYM(uuid, "nvmlDeviceGetUUID"),
        SYM(pci_info, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"),
        SYM(compute_capability, "nvmlDeviceGetCudaComputeCapability"),
        SYM(attributes, "nvmlDeviceGetAttributes_v2", "nvmlDeviceGetAttributes"),
        SYM(num_cores, "nvmlDeviceGetNumGpuCores"),
        SYM(memory_v2, "nvmlDeviceGetMemoryInfo_v2"),
        SYM(memory, "nvmlDeviceGetMemoryInfo"),
        SYM(mig_mode, "nvmlDeviceGetMigMode"),
        SYM(max_mig_count, "nvmlDeviceGetMaxMigDeviceCount"),
        SYM(mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex"),
        SYM(gpu_instance_id, "nvmlDeviceGetGpuInstanceId"),
        SYM(ecc_mode, "nvmlDeviceGetEccMode"),
        SYM(nvlink_state, "nvmlDeviceGetNvLinkState"),
        SYM(utilization, "nvmlDeviceGetUtilizationRates"),
        SYM(temperature, "nvmlDeviceGetTemperature"),
        SYM(power_usage, "nvmlDeviceGetPowerUsage"),
        SYM(power_limit, "nvmlDeviceGetEnforcedPowerLimit"),
        SYM(fan_speed, "nvmlDeviceGetFanSpeed"),
        SYM(clock, "nvmlDeviceGetClockInfo"),
        SYM(event_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetCurrentClocksThrottleReasons"),
        SYM(energy, "nvmlDeviceGetTotalEnergyConsumption"),
        SYM(field_values, "nvmlDeviceGetFieldValues"),
        SYM(process_util, "nvmlDeviceGetProcessUtilization"),
        SYM(gpm_support, "nvmlGpmQueryDeviceSupport"),
        SYM(gpm_alloc, "nvmlGpmSampleAlloc"),
        SYM(gpm_free, "nvmlGpmSampleFree"),
        SYM(gpm_sample, "nvmlGpmSampleGet"),
        SYM(gpm_mig_sample, "nvmlGpmMigSampleGet"),
        SYM(gpm_metrics, "nvmlGpmMetricsGet"),
        SYM(event_set_create, "nvmlEventSetCreate"),
        SYM(event_set_free, "nvmlEventSetFree"),
        SYM(register_events, "nvmlDeviceRegisterEvents"),
    };
    size_t count = sizeof syms / sizeof syms[0];
    int rc = gpufl__dl_resolve(&n->dl, syms, count, why, why_size);
    if (rc != 0) return rc;
    /* Process entry layout by symbol version: v1 16 bytes, v2 24, v3 measured. */
    for (int k = 0; k < 2; k++) {
        int found = syms[k == 0 ? SYM_COMPUTE_PROCS : SYM_GRAPHICS_PROCS].found;
        n->proc_stride[k] = found == 0   ? 0
                            : found == 1 ? (int)sizeof(nvmlProcessInfo_v2_t)
                                         : (int)sizeof(nvmlProcessInfo_v1_t);
    }
    n->init_name = syms[SYM_INIT].names[syms[SYM_INIT].found];
    n->event_wait_v2 = syms[SYM_EVENT_WAIT].found == 0;
    if (n->dl.missing_count) gpufl__debug("nvml: %s lacks %s", n->dl.name, n->dl.missing);
    return 0;
}

#undef SYM
#undef REQUIRED

/* ---------------------------------------------------------------------- */
/* Identity                                                                 */
/* ---------------------------------------------------------------------- */

static void info_init(gpufl__gpu_info_t *info) {
    memset(info, 0, sizeof *info);
    info->index = GPUFL_GPU_UNKNOWN;
    info->mig_index = -1;
    info->cc_major = info->cc_minor = GPUFL_GPU_UNKNOWN;
    info->sm_count = GPUFL_GPU_UNKNOWN;
    info->mem_total_bytes = GPUFL_GPU_UNKNOWN;
    info->cuda_driver_version = GPUFL_GPU_UNKNOWN;
    info->mig_mode = GPUFL_GPU_UNKNOWN;
    info->power_limit_mw = GPUFL_GPU_UNKNOWN;
}

/* Total memory: the v2 call where the driver has it, else v1. Remembers a
 * v2 refusal so samples go straight to v1. */
static int64_t read_memory_total(gpufl__nvml_t *n, device_t *d) {
    if (want(d, Q_MEMORY_V2, n->fn.memory_v2)) {
        nvmlMemory_v2_t m = {.version = NVML_MEMORY_V2_VERSION};
        nvmlReturn_t r = n->fn.memory_v2(d->handle, &m);
        if (r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) d->skip |= BIT(Q_MEMORY_V2);
        if (ok(d, Q_MEMORY_V2, r)) return clamp_i64(m.total);
    }
    if (want(d, Q_MEMORY, n->fn.memory)) {
        nvmlMemory_t m;
        if (ok(d, Q_MEMORY, n->fn.memory(d->handle, &m))) return clamp_i64(m.total);
    }
    return GPUFL_GPU_UNKNOWN;
}

/* CUDA cores per SM by compute capability; 0 where we do not know it. */
static int cores_per_sm(int major, int minor) {
    switch (major) {
    case 3: return 192;
    case 5: return 128;
    case 6: return minor == 0 ? 64 : 128;
    case 7: return 64;
    case 8: return minor == 0 ? 64 : 128;
    case 9:
    case 10:
    case 11:
    case 12: return 128;
    default: return 0;
    }
}

/*
 * SMs: the multiprocessor count of nvmlDeviceGetAttributes, which answers
 * for MIG devices; for a whole GPU drivers refuse it (NOT_SUPPORTED on an
 * H100 with 580), so there the CUDA core count divided by the cores per SM
 * of the architecture (16896 / 128 = 132 on an H100 SXM).
 */
static int read_sm_count(gpufl__nvml_t *n, nvmlDevice_t h, int cc_major, int cc_minor) {
    nvmlDeviceAttributes_t a;
    memset(&a, 0, sizeof a);
    if (n->fn.attributes && n->fn.attributes(h, &a) == NVML_SUCCESS && a.multiprocessorCount > 0)
        return (int)a.multiprocessorCount;
    unsigned int cores = 0;
    int per_sm = cores_per_sm(cc_major, cc_minor);
    if (per_sm > 0 && n->fn.num_cores && n->fn.num_cores(h, &cores) == NVML_SUCCESS && cores > 0 &&
        cores % (unsigned int)per_sm == 0)
        return (int)(cores / (unsigned int)per_sm);
    return GPUFL_GPU_UNKNOWN;
}

static void read_pci_bus_id(gpufl__nvml_t *n, nvmlDevice_t h, char *out, size_t size) {
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    if (!n->fn.pci_info || n->fn.pci_info(h, &pci) != NVML_SUCCESS) return;
    pci.busId[sizeof pci.busId - 1] = '\0';
    if (pci.busId[0])
        copy_string(out, size, pci.busId);
    else /* v1 wrote no busId: the same form, from the numbers */
        snprintf(out, size, "%08X:%02X:%02X.0", pci.domain, pci.bus, pci.device);
}

/* Active NVLink links: asked link by link until the driver says there are no more. */
static int count_nvlinks(gpufl__nvml_t *n, nvmlDevice_t h) {
    int active = 0;
    if (!n->fn.nvlink_state) return 0;
    for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
        nvmlEnableState_t state = NVML_FEATURE_DISABLED;
        nvmlReturn_t r = n->fn.nvlink_state(h, link, &state);
        if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT) break;
        if (r == NVML_SUCCESS && state == NVML_FEATURE_ENABLED) active++;
    }
    return active;
}

static int gpm_supported(gpufl__nvml_t *n, nvmlDevice_t h) {
    nvmlGpmSupport_t support = {.version = NVML_GPM_SUPPORT_VERSION, .isSupportedDevice = 0};
    if (!n->fn.gpm_support || !n->fn.gpm_alloc || !n->fn.gpm_free || !n->fn.gpm_metrics) return 0;
    return n->fn.gpm_support(h, &support) == NVML_SUCCESS && support.isSupportedDevice == 1;
}

/* The two GPM snapshots of a device; without them it reads no GPM metrics. */
static void gpm_alloc(gpufl__nvml_t *n, device_t *d) {
    if (!d->info.gpm_supported) return;
    if (n->fn.gpm_alloc(&d->gpm[0]) == NVML_SUCCESS && n->fn.gpm_alloc(&d->gpm[1]) == NVML_SUCCESS)
        return;
    for (int i = 0; i < 2; i++)
        if (d->gpm[i]) n->fn.gpm_free(d->gpm[i]);
    d->gpm[0] = d->gpm[1] = NULL;
    d->info.gpm_supported = 0;
}

static device_t *add_device(gpufl__nvml_t *n, nvmlDevice_t handle) {
    if (n->count >= GPUFL_GPU_MAX) return NULL;
    device_t *d = &n->dev[n->count++];
    memset(d, 0, sizeof *d);
    info_init(&d->info);
    d->handle = handle;
    return d;
}

/* MIG instances take the device-wide readings from their parent's entry. */
#define MIG_SKIP                                                                                   \
    (BIT(Q_UTILIZATION) | BIT(Q_TEMPERATURE) | BIT(Q_POWER) | BIT(Q_POWER_LIMIT) |                 \
     BIT(Q_CLOCK_SM) | BIT(Q_CLOCK_GFX) | BIT(Q_CLOCK_MEM) | BIT(Q_FAN) | BIT(Q_EVENT_REASONS) |   \
     BIT(Q_ENERGY) | BIT(Q_FIELDS))

/* Lists the MIG devices of a GPU with MIG on, right after it. */
static void add_mig_devices(gpufl__nvml_t *n, const device_t *parent) {
    unsigned int max = 0;
    if (!n->fn.max_mig_count || !n->fn.mig_handle ||
        n->fn.max_mig_count(parent->handle, &max) != NVML_SUCCESS)
        return;
    for (unsigned int slot = 0; slot < max; slot++) {
        nvmlDevice_t handle = NULL;
        if (n->fn.mig_handle(parent->handle, slot, &handle) != NVML_SUCCESS || handle == NULL)
            continue; /* an empty slot says NOT_FOUND */
        device_t *d = add_device(n, handle);
        if (d == NULL) {
            gpufl__debug("nvml: more than %d devices, the rest are not listed", GPUFL_GPU_MAX);
            return;
        }
        gpufl__gpu_info_t *info = &d->info;
        const gpufl__gpu_info_t *p = &parent->info;
        d->parent = parent->handle;
        d->skip = MIG_SKIP;
        info->index = p->index;
        info->mig_index = (int)slot;
        if (!n->fn.name || n->fn.name(handle, info->name, sizeof info->name) != NVML_SUCCESS)
            memcpy(info->name, p->name, sizeof info->name);
        if (n->fn.uuid) n->fn.uuid(handle, info->uuid, sizeof info->uuid);
        memcpy(info->pci_bus_id, p->pci_bus_id, sizeof info->pci_bus_id);
        info->cc_major = p->cc_major;
        info->cc_minor = p->cc_minor;
        info->sm_count = read_sm_count(n, handle, 0, 0); /* a MIG slice: attributes only */
        info->mem_total_bytes = read_memory_total(n, d);
        memcpy(info->driver_version, p->driver_version, sizeof info->driver_version);
        info->cuda_driver_version = p->cuda_driver_version;
        info->mig_mode = p->mig_mode;
        info->nvlink_links = 0;
        info->power_limit_mw = GPUFL_GPU_UNKNOWN;
        if (p->gpm_supported && n->fn.gpm_mig_sample && n->fn.gpu_instance_id &&
            n->fn.gpu_instance_id(handle, &d->gpu_instance_id) == NVML_SUCCESS)
            info->gpm_supported = 1;
        gpm_alloc(n, d);
    }
}

/* Reads a whole GPU's identity. Returns 0, or -1 when NVML has no handle for it. */
static int add_gpu(gpufl__nvml_t *n, unsigned int index, const char *driver_version,
                   int cuda_driver_version) {
    nvmlDevice_t handle = NULL;
    nvmlReturn_t r = n->fn.handle_by_index(index, &handle);
    if (r != NVML_SUCCESS) {
        gpufl__debug("nvml: GPU %u has no handle: %s", index, status_name(n, r));
        return -1;
    }
    device_t *d = add_device(n, handle);
    if (d == NULL) {
        gpufl__debug("nvml: more than %d devices, the rest are not listed", GPUFL_GPU_MAX);
        return -1;
    }
    gpufl__gpu_info_t *info = &d->info;
    info->index = (int)index;
    if (n->fn.name) n->fn.name(handle, info->name, sizeof info->name);
    if (n->fn.uuid) n->fn.uuid(handle, info->uuid, sizeof info->uuid);
    read_pci_bus_id(n, handle, info->pci_bus_id, sizeof info->pci_bus_id);
    int major = 0, minor = 0;
    if (n->fn.compute_capability &&
        n->fn.compute_capability(handle, &major, &minor) == NVML_SUCCESS) {
        info->cc_major = major;
        info->cc_minor = minor;
    }
    info->sm_count = read_sm_count(n, handle, info->cc_major, info->cc_minor);
    info->mem_total_bytes = read_memory_total(n, d);
    copy_string(info->driver_version, sizeof info->driver_version, driver_version);
    info->cuda_driver_version = cuda_driver_version;
    unsigned int current = 0, pending = 0;
    if (n->fn.mig_mode && n->fn.mig_mode(handle, &current, &pending) == NVML_SUCCESS)
        info->mig_mode = current == NVML_DEVICE_MIG_ENABLE ? 1 : 0;
    info->gpm_supported = gpm_supported(n, handle) && n->fn.gpm_sample != NULL;
    info->nvlink_links = count_nvlinks(n, handle);
    unsigned int limit = 0;
    if (n->fn.power_limit && n->fn.power_limit(handle, &limit) == NVML_SUCCESS)
        info->power_limit_mw = limit;

    /* Fields that cannot apply are never asked: ECC counters with ECC off,
     * NVLink counters without an active link. */
    nvmlEnableState_t ecc = NVML_FEATURE_DISABLED, ecc_pending = NVML_FEATURE_DISABLED;
    if (!n->fn.ecc_mode || n->fn.ecc_mode(handle, &ecc, &ecc_pending) != NVML_SUCCESS ||
        ecc != NVML_FEATURE_ENABLED)
        d->field_skip |= BIT(F_ECC_SBE) | BIT(F_ECC_DBE);
    if (info->nvlink_links == 0) d->field_skip |= NVLINK_FIELDS;
    gpm_alloc(n, d);
    /* With GPM, PCIe and NVLink rates come with the GPM sample taken anyway;
     * the PCIe byte counters cost about 250 us a read on an H100 (and are
     * 32-bit). They stand in again if GPM is refused. */
    if (info->gpm_supported)
        d->gpm_rates = PCIE_FIELDS | (info->nvlink_links > 0 ? NVLINK_FIELDS : 0u);

    if (info->mig_mode == 1) add_mig_devices(n, d); /* appends after d; the array never moves */
    return 0;
}

/* ---------------------------------------------------------------------- */
/* XID events                                                               */
/* ---------------------------------------------------------------------- */

/* An event set with every whole GPU that can report critical XID errors
 * (MIG instances report through their parent). Without the symbols, or
 * where no GPU can, there is no set and no XID is read: said once here. */
static void open_events(gpufl__nvml_t *n) {
    const nvml_fns_t *fn = &n->fn;
    int registered = 0;
    if (!fn->event_set_create || !fn->event_set_free || !fn->register_events ||
        !fn->event_set_wait) {
        gpufl__debug("nvml: no XID events: %s lacks the event set API", n->dl.name);
        return;
    }
    nvmlReturn_t r = fn->event_set_create(&n->events);
    if (r != NVML_SUCCESS) {
        gpufl__debug("nvml: no XID events: nvmlEventSetCreate: %s", status_name(n, r));
        n->events = NULL;
        return;
    }
    for (int i = 0; i < n->count; i++) {
        const device_t *d = &n->dev[i];
        if (d->info.mig_index >= 0) continue;
        r = fn->register_events(d->handle, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, n->events);
        if (r == NVML_SUCCESS)
            registered++;
        else
            gpufl__debug("nvml: device %s: no XID events: %s", d->info.uuid, status_name(n, r));
    }
    if (registered == 0) {
        fn->event_set_free(n->events);
        n->events = NULL;
    }
}

/* The device index of a whole GPU's handle; -1 when it is not ours. */
static int gpu_of_handle(const gpufl__nvml_t *n, nvmlDevice_t handle) {
    for (int i = 0; i < n->count; i++)
        if (n->dev[i].info.mig_index < 0 && n->dev[i].handle == handle) return i;
    return -1;
}

static int instance_id(unsigned int id) { return id == ~0u ? GPUFL_GPU_UNKNOWN : (int)id; }

int gpufl__nvml_xid_events(gpufl__xid_event_t *out, int max, gpufl__nvml_t *n) {
    int got = 0;
    if (n == NULL || n->events == NULL) return 0;
    while (got < max) {
        nvmlEventData_t e;
        memset(&e, 0xff, sizeof e);
        nvmlReturn_t r = n->fn.event_set_wait(n->events, &e, 0);
        if (r != NVML_SUCCESS) {
            /* TIMEOUT is the normal "nothing pending". */
            if (r != NVML_ERROR_TIMEOUT)
                gpufl__debug("nvml: nvmlEventSetWait: %s", status_name(n, r));
            break;
        }
        if (!(e.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR)) continue;
        int device = gpu_of_handle(n, e.device);
        if (device < 0) continue;
        out[got++] = (gpufl__xid_event_t){
            .device = device,
            .code = e.eventData,
            .gpu_instance_id = n->event_wait_v2 ? instance_id(e.gpuInstanceId) : GPUFL_GPU_UNKNOWN,
            .compute_instance_id =
                n->event_wait_v2 ? instance_id(e.computeInstanceId) : GPUFL_GPU_UNKNOWN};
    }
    return got;
}

/* ---------------------------------------------------------------------- */
/* Open / close                                                             */
/* ---------------------------------------------------------------------- */

int gpufl__nvml_open(gpufl__nvml_t **out, const char *library_path, char *why, size_t why_size) {
    char scratch[8];
    if (why == NULL || why_size == 0) {
        why = scratch;
        why_size = sizeof scratch;
    }
    why[0] = '\0';
    if (out == NULL) return gpufl__set_error(GPUFL_EINVAL, "gpufl__nvml_open: out is NULL");
    *out = NULL;

    gpufl__nvml_t *n = calloc(1, sizeof *n);
    if (n == NULL) {
        snprintf(why, why_size, "out of memory");
        return gpufl__set_error(GPUFL_ENOMEM, "nvml: out of memory");
    }
    pthread_mutex_init(&n->gpm_lock, NULL);
    const char *path = library_path;
    if (path == NULL || path[0] == '\0') path = getenv("GPUFL_NVML_LIBRARY");
    int rc = gpufl__dl_open(&n->dl, path, default_names, "no NVIDIA driver", why, why_size);
    if (rc == 0) rc = load_symbols(n, why, why_size);
    if (rc != 0) goto close_nvml;

    nvmlReturn_t r = n->fn.init();
    if (r != NVML_SUCCESS) {
        snprintf(why, why_size, "%s failed: %s", n->init_name, status_name(n, r));
        rc = GPUFL_ENOTSUP;
        goto close_nvml;
    }
    n->initialized = 1;

    char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
    if (n->fn.driver_version) n->fn.driver_version(driver_version, sizeof driver_version);
    if (n->fn.nvml_version) n->fn.nvml_version(n->version, sizeof n->version);
    int cuda_driver_version = GPUFL_GPU_UNKNOWN;
    if (n->fn.cuda_driver_version &&
        n->fn.cuda_driver_version(&cuda_driver_version) != NVML_SUCCESS)
        cuda_driver_version = GPUFL_GPU_UNKNOWN;

    unsigned int gpus = 0;
    r = n->fn.device_count(&gpus);
    if (r != NVML_SUCCESS) {
        snprintf(why, why_size, "nvmlDeviceGetCount failed: %s", status_name(n, r));
        rc = GPUFL_ENOTSUP;
        goto close_nvml;
    }
    if (gpus == 0) {
        snprintf(why, why_size, "NVML lists no GPU");
        rc = GPUFL_ENOTSUP;
        goto close_nvml;
    }
    for (unsigned int i = 0; i < gpus && n->count < GPUFL_GPU_MAX; i++)
        add_gpu(n, i, driver_version, cuda_driver_version);
    if (n->count == 0) {
        snprintf(why, why_size, "NVML lists %u GPU%s but none answers", gpus, gpus == 1 ? "" : "s");
        rc = GPUFL_ENOTSUP;
        goto close_nvml;
    }
    open_events(n);
    gpufl__debug("nvml: %s (NVML %s), %d device%s", n->dl.name, n->version, n->count,
                 n->count == 1 ? "" : "s");
    *out = n;
    return 0;

close_nvml:
    gpufl__nvml_close(n);
    gpufl__set_error(rc, "%s", why);
    return rc;
}

void gpufl__nvml_close(gpufl__nvml_t *n) {
    if (n == NULL) return;
    if (n->events) n->fn.event_set_free(n->events);
    if (n->fn.gpm_free)
        for (int i = 0; i < n->count; i++)
            for (int k = 0; k < 2; k++)
                if (n->dev[i].gpm[k]) n->fn.gpm_free(n->dev[i].gpm[k]);
    if (n->initialized) n->fn.shutdown();
    gpufl__dl_close(&n->dl);
    pthread_mutex_destroy(&n->gpm_lock);
    free(n);
}

int gpufl__nvml_device_count(const gpufl__nvml_t *n) { return n ? n->count : 0; }

const gpufl__gpu_info_t *gpufl__nvml_device_info(const gpufl__nvml_t *n, int device) {
    if (n == NULL || device < 0 || device >= n->count) return NULL;
    return &n->dev[device].info;
}

const char *gpufl__nvml_version(const gpufl__nvml_t *n) { return n ? n->version : ""; }

const char *gpufl__nvml_missing(const gpufl__nvml_t *n) { return n ? n->dl.missing : ""; }

/* ---------------------------------------------------------------------- */
/* Sampling                                                                 */
/* ---------------------------------------------------------------------- */

static void sample_init(gpufl__gpu_sample_t *s) {
    memset(s, 0, sizeof *s);
    s->gpu_util_pct = s->mem_util_pct = GPUFL_GPU_UNKNOWN;
    s->mem_used_bytes = s->mem_free_bytes = s->mem_total_bytes = GPUFL_GPU_UNKNOWN;
    s->temp_gpu_c = s->temp_mem_c = GPUFL_GPU_UNKNOWN;
    s->power_mw = s->power_limit_mw = s->energy_mj = GPUFL_GPU_UNKNOWN;
    s->clock_sm_mhz = s->clock_gfx_mhz = s->clock_mem_mhz = GPUFL_GPU_UNKNOWN;
    s->fan_pct = GPUFL_GPU_UNKNOWN;
    s->pcie_tx_bytes_per_s = s->pcie_rx_bytes_per_s = GPUFL_GPU_UNKNOWN;
    s->throttle_reasons = (uint64_t)(int64_t)GPUFL_GPU_UNKNOWN;
    s->ecc_sbe_volatile = s->ecc_dbe_volatile = GPUFL_GPU_UNKNOWN;
    s->nvlink_tx_bytes_per_s = s->nvlink_rx_bytes_per_s = GPUFL_GPU_UNKNOWN;
    s->sm_active_pct = s->sm_occupancy_pct = s->tensor_active_pct = s->dram_bw_util_pct = -1.0;
    s->nprocs = GPUFL_GPU_UNKNOWN;
}

/*
 * Units per second of a cumulative counter since the previous sample;
 * unknown for the first reading, after a gap or a counter reset. A 32-bit
 * counter (drivers give the PCIe byte counters as unsigned int) wraps:
 * the difference is taken modulo 2^32, right while less than 4 GiB pass
 * between two samples.
 */
static int64_t counter_rate(counter_t *c, int have, uint64_t value, int wraps32, int64_t dt_ns) {
    int64_t rate = GPUFL_GPU_UNKNOWN;
    if (have && c->valid && dt_ns > 0 && (wraps32 || value >= c->last)) {
        uint64_t delta =
            wraps32 ? (uint32_t)((uint32_t)value - (uint32_t)c->last) : value - c->last;
        rate = (int64_t)llround((double)delta * NS_PER_S / (double)dt_ns);
    }
    c->valid = have;
    c->last = have ? value : 0;
    return rate;
}

static void read_memory(gpufl__nvml_t *n, device_t *d, gpufl__gpu_sample_t *s) {
    if (want(d, Q_MEMORY_V2, n->fn.memory_v2)) {
        nvmlMemory_v2_t m = {.version = NVML_MEMORY_V2_VERSION};
        nvmlReturn_t r = n->fn.memory_v2(d->handle, &m);
        if (r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) d->skip |= BIT(Q_MEMORY_V2);
        if (ok(d, Q_MEMORY_V2, r)) {
            s->mem_total_bytes = clamp_i64(m.total);
            s->mem_free_bytes = clamp_i64(m.free);
            s->mem_used_bytes = clamp_i64(m.used);
            return;
        }
        if (r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && !(d->skip & BIT(Q_MEMORY_V2)))
            return; /* a passing failure: v1 would likely fail the same way */
    }
    if (want(d, Q_MEMORY, n->fn.memory)) {
        nvmlMemory_t m;
        if (ok(d, Q_MEMORY, n->fn.memory(d->handle, &m))) {
            s->mem_total_bytes = clamp_i64(m.total);
            s->mem_free_bytes = clamp_i64(m.free);
            s->mem_used_bytes = clamp_i64(m.used);
        }
    }
}

static void read_uint(device_t *d, enum query q, nvml_device_uint_fn *fn, int64_t *out) {
    unsigned int v = 0;
    if (want(d, q, fn) && ok(d, q, fn(d->handle, &v))) *out = v;
}

static void read_clock(gpufl__nvml_t *n, device_t *d, enum query q, unsigned int type, int *out) {
    unsigned int mhz = 0;
    if (want(d, q, n->fn.clock) && ok(d, q, n->fn.clock(d->handle, type, &mhz))) *out = (int)mhz;
}

static int64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The energy counter, where reading it is cheap, at every sample; where one
 * read takes longer than ENERGY_SLOW_NS (about 3 ms on an H100 with driver
 * 580, against well under 1 us for the power reading), at most every
 * ENERGY_SLOW_EVERY_NS, unknown in the samples between. */
static void read_energy(gpufl__nvml_t *n, device_t *d, gpufl__gpu_sample_t *s, int64_t now_ns) {
    unsigned long long mj = 0;
    if (!want(d, Q_ENERGY, n->fn.energy) || (d->energy_next_ns != 0 && now_ns < d->energy_next_ns))
        return;
    int64_t start = monotonic_ns();
    nvmlReturn_t r = n->fn.energy(d->handle, &mj);
    int64_t took = monotonic_ns() - start;
    if (ok(d, Q_ENERGY, r)) s->energy_mj = clamp_i64(mj);
    d->energy_next_ns = took > ENERGY_SLOW_NS ? now_ns + ENERGY_SLOW_EVERY_NS : 0;
}

/* The field batch: memory temperature, ECC counts, PCIe/NVLink counters. */
static void read_fields(gpufl__nvml_t *n, device_t *d, gpufl__gpu_sample_t *s, int64_t dt_ns) {
    nvmlFieldValue_t values[F_COUNT];
    enum field which[F_COUNT];
    int count = 0;
    uint64_t got[F_COUNT] = {0};
    unsigned int have = 0, narrow = 0; /* BIT(F_*) read, and read as 32 bits */

    if (want(d, Q_FIELDS, n->fn.field_values)) {
        memset(values, 0, sizeof values);
        for (int f = 0; f < F_COUNT; f++) {
            if ((d->field_skip | d->gpm_rates) & BIT(f)) continue;
            values[count].fieldId = field_ids[f].id;
            values[count].scopeId = field_ids[f].scope;
            which[count++] = (enum field)f;
        }
        if (count > 0 && ok(d, Q_FIELDS, n->fn.field_values(d->handle, count, values))) {
            for (int i = 0; i < count; i++) {
                nvmlReturn_t r = values[i].nvmlReturn;
                if (r == NVML_SUCCESS && field_u64(&values[i], &got[which[i]])) {
                    have |= BIT(which[i]);
                    if (values[i].valueType == NVML_VALUE_TYPE_UNSIGNED_INT)
                        narrow |= BIT(which[i]);
                } else if (r == NVML_ERROR_GPU_IS_LOST)
                    d->lost = 1;
                else if (is_refusal(r)) {
                    d->field_skip |= BIT(which[i]);
                    gpufl__debug("nvml: device %s: field %u refused (%u), not asked again",
                                 d->info.uuid, values[i].fieldId, r);
                }
            }
        }
    }
    if (have & BIT(F_MEMORY_TEMP))
        s->temp_mem_c = got[F_MEMORY_TEMP] > 1000 ? GPUFL_GPU_UNKNOWN : (int)got[F_MEMORY_TEMP];
    if (have & BIT(F_ECC_SBE)) s->ecc_sbe_volatile = clamp_i64(got[F_ECC_SBE]);
    if (have & BIT(F_ECC_DBE)) s->ecc_dbe_volatile = clamp_i64(got[F_ECC_DBE]);
        /* Counters update their state even when the batch failed, so a rate
     * never spans a missed sample. */
#define RATE(counter, f)                                                                           \
    counter_rate(&d->counter, !!(have & BIT(f)), got[f], !!(narrow & BIT(f)), dt_ns)
    s->pcie_tx_bytes_per_s = RATE(pcie_tx, F_PCIE_TX);
    s->pcie_rx_bytes_per_s = RATE(pcie_rx, F_PCIE_RX);
    int64_t tx = RATE(nvlink_tx, F_NVLINK_TX);
    int64_t rx = RATE(nvlink_rx, F_NVLINK_RX);
#undef RATE
    s->nvlink_tx_bytes_per_s = tx < 0 ? tx : tx * KIB; /* the NVLink counters count KiB */
    s->nvlink_rx_bytes_per_s = rx < 0 ? rx : rx * KIB;
}

/* Adds the entries of one processes call to the sample, skipping pids
 * already there. Returns how many new pids it found (listed or not). */
static int add_processes(const unsigned char *buffer, int stride, unsigned int count, int *pids,
                         int *npids, gpufl__gpu_sample_t *s) {
    int added = 0;
    for (unsigned int i = 0; i < count; i++) {
        const unsigned char *entry = buffer + (size_t)i * (size_t)stride;
        unsigned int pid;
        unsigned long long used;
        memcpy(&pid, entry + offsetof(nvmlProcessInfo_v1_t, pid), sizeof pid);
        memcpy(&used, entry + offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), sizeof used);
        int seen = 0;
        for (int j = 0; j < *npids && !seen; j++) seen = pids[j] == (int)pid;
        if (seen) continue;
        pids[(*npids)++] = (int)pid;
        added++;
        if (s->nprocs < GPUFL_GPU_PROCS_MAX) {
            s->procs[s->nprocs].pid = (int)pid;
            s->procs[s->nprocs].sm_util_pct = GPUFL_GPU_UNKNOWN;
            s->procs[s->nprocs].mem_util_pct = GPUFL_GPU_UNKNOWN;
            s->procs[s->nprocs].used_bytes =
                used == NVML_VALUE_NOT_AVAILABLE_ULL ? GPUFL_GPU_UNKNOWN : clamp_i64(used);
        }
        s->nprocs++;
    }
    return added;
}

/* Measures the entry size a _v3 processes call writes: the buffer is filled
 * with a sentinel and the last byte the driver changed tells. The last
 * member of every layout (an instance id, protected memory) never equals
 * the sentinel pattern. */
static int measure_stride(gpufl__nvml_t *n, const unsigned char *buffer, int k,
                          unsigned int count) {
    size_t end = (size_t)count * PROC_ENTRY_BYTES_MAX;
    while (end > 0 && buffer[end - 1] == PROC_SENTINEL) end--;
    int stride = end > (size_t)count * sizeof(nvmlProcessInfo_v2_t)
                     ? (int)sizeof(nvmlProcessInfo_v3_535_t)
                     : (int)sizeof(nvmlProcessInfo_v2_t);
    __atomic_store_n(&n->proc_stride[k], stride, __ATOMIC_RELAXED);
    gpufl__debug("nvml: %s processes entries are %d bytes", k == 0 ? "compute" : "graphics",
                 stride);
    return stride;
}

/* Samples of one process utilization call at most; more are counted as unknown. */
#define UTIL_SAMPLES_MAX 256

/*
 * Per-process SM and memory utilization: the mean of the driver's samples
 * of each listed process since the last call (the first call looks one
 * second back). A listed process without a sample ran nothing in that
 * time: 0. Unknown (-1) where the device refuses the call (MIG instances do)
 * or the call failed this time.
 */
static void read_process_util(gpufl__nvml_t *n, device_t *d, gpufl__gpu_sample_t *s) {
    int listed = s->nprocs < GPUFL_GPU_PROCS_MAX ? s->nprocs : GPUFL_GPU_PROCS_MAX;
    if (listed <= 0 || !want(d, Q_PROCESS_UTIL, n->fn.process_util)) return;
    nvmlProcessUtilizationSample_t samples[UTIL_SAMPLES_MAX]; /* per thread */
    unsigned int count = UTIL_SAMPLES_MAX;
    unsigned long long since = d->util_seen_us;
    if (since == 0) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        since = (unsigned long long)now.tv_sec * 1000000ull +
                (unsigned long long)now.tv_nsec / 1000u - 1000000ull;
    }
    nvmlReturn_t r = n->fn.process_util(d->handle, samples, &count, since);
    if (r == NVML_ERROR_NOT_FOUND)
        count = 0; /* no process ran a kernel since */
    else if (!ok(d, Q_PROCESS_UTIL, r))
        return;
    if (count > UTIL_SAMPLES_MAX) count = UTIL_SAMPLES_MAX;
    for (int i = 0; i < listed; i++) {
        unsigned long long sm = 0, mem = 0, taken = 0;
        for (unsigned int k = 0; k < count; k++) {
            if (samples[k].pid != (unsigned int)s->procs[i].pid || samples[k].timeStamp <= since)
                continue;
            sm += samples[k].smUtil > 100 ? 100 : samples[k].smUtil;
            mem += samples[k].memUtil > 100 ? 100 : samples[k].memUtil;
            taken++;
        }
        s->procs[i].sm_util_pct = taken ? (int)((sm + taken / 2) / taken) : 0;
        s->procs[i].mem_util_pct = taken ? (int)((mem + taken / 2) / taken) : 0;
    }
    for (unsigned int k = 0; k < count; k++)
        if (samples[k].timeStamp > d->util_seen_us) d->util_seen_us = samples[k].timeStamp;
    if (d->util_seen_us < since) d->util_seen_us = since;
}

static void read_processes(gpufl__nvml_t *n, device_t *d, gpufl__gpu_sample_t *s) {
    nvml_device_processes_fn *fns[2] = {n->fn.compute_procs, n->fn.graphics_procs};
    const enum query queries[2] = {Q_COMPUTE_PROCS, Q_GRAPHICS_PROCS};
    int pids[2 * PROC_ENTRIES_MAX];
    int npids = 0, answered = 0, beyond = 0;
    unsigned char buffer[PROC_ENTRIES_MAX * PROC_ENTRY_BYTES_MAX]; /* per thread */

    s->nprocs = 0;
    for (int k = 0; k < 2; k++) {
        if (!want(d, queries[k], fns[k])) continue;
        unsigned int count = PROC_ENTRIES_MAX;
        int stride = __atomic_load_n(&n->proc_stride[k], __ATOMIC_RELAXED);
        if (stride == 0) memset(buffer, PROC_SENTINEL, sizeof buffer);
        nvmlReturn_t r = fns[k](d->handle, &count, buffer);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
            /* More than we ask for: counted, not listed. */
            answered = 1;
            beyond += (int)count;
            continue;
        }
        if (!ok(d, queries[k], r)) continue;
        answered = 1;
        if (count > PROC_ENTRIES_MAX) count = PROC_ENTRIES_MAX;
        if (count == 0) continue;
        if (stride == 0) stride = measure_stride(n, buffer, k, count);
        add_processes(buffer, stride, count, pids, &npids, s);
    }
    if (!answered) {
        s->nprocs = GPUFL_GPU_UNKNOWN;
        return;
    }
    s->nprocs += beyond;
    read_process_util(n, d, s);
}

/* Whether GPM should give the rates of these counter fields: it does on
 * GPM devices, and where the counters are refused (or there is no
 * field-value call at all), unless GPM refused those metrics too. */
static int rates_from_gpm(const gpufl__nvml_t *n, const device_t *d, unsigned int fields) {
    if (d->parent || (d->gpm_refused & fields)) return 0;
    return (d->gpm_rates & fields) || !n->fn.field_values || (d->skip & BIT(Q_FIELDS)) ||
           (d->field_skip & fields) == fields;
}

/* GPM: a snapshot now, and the metrics between the previous one and it. */
static void read_gpm(gpufl__nvml_t *n, device_t *d, gpufl__gpu_sample_t *s) {
    if (!d->info.gpm_supported || !want(d, Q_GPM, n->fn.gpm_metrics)) return;
    nvmlGpmSample_t now = d->gpm[d->gpm_next];
    pthread_mutex_lock(&n->gpm_lock);
    nvmlReturn_t r = d->parent ? n->fn.gpm_mig_sample(d->parent, d->gpu_instance_id, now)
                               : n->fn.gpm_sample(d->handle, now);
    pthread_mutex_unlock(&n->gpm_lock);
    if (!ok(d, Q_GPM, r)) {
        d->gpm_have_prev = 0;
        if (d->skip & BIT(Q_GPM)) d->gpm_rates = 0; /* the counters stand in from the next sample */
        return;
    }
    int had_prev = d->gpm_have_prev;
    d->gpm_have_prev = 1;
    d->gpm_next ^= 1;
    if (!had_prev) return;

    /* PCIe and NVLink from GPM only where the counters are missing. */
    unsigned int ids[GPM_METRICS_MAX];
    int count = 0;
    ids[count++] = NVML_GPM_METRIC_SM_UTIL;
    ids[count++] = NVML_GPM_METRIC_SM_OCCUPANCY;
    ids[count++] = NVML_GPM_METRIC_ANY_TENSOR_UTIL;
    ids[count++] = NVML_GPM_METRIC_DRAM_BW_UTIL;
    int want_pcie = rates_from_gpm(n, d, PCIE_FIELDS);
    int want_nvlink = d->info.nvlink_links > 0 && rates_from_gpm(n, d, NVLINK_FIELDS);
    if (want_pcie) {
        ids[count++] = NVML_GPM_METRIC_PCIE_TX_PER_SEC;
        ids[count++] = NVML_GPM_METRIC_PCIE_RX_PER_SEC;
    }
    if (want_nvlink) {
        ids[count++] = NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC;
        ids[count++] = NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC;
    }

    nvmlGpmMetricsGet_t request; /* per thread */
    nvmlGpmMetricsGet_t *q = &request;
    memset(q, 0, sizeof *q); /* every entry, used or not: the driver sees no stack garbage */
    q->version = NVML_GPM_METRICS_GET_VERSION;
    q->numMetrics = (unsigned int)count;
    q->sample1 = d->gpm[d->gpm_next]; /* the previous snapshot */
    q->sample2 = now;
    for (int i = 0; i < count; i++) q->metrics[i].metricId = ids[i];
    pthread_mutex_lock(&n->gpm_lock);
    r = n->fn.gpm_metrics(q);
    pthread_mutex_unlock(&n->gpm_lock);
    if (!ok(d, Q_GPM, r)) return;
    for (int i = 0; i < count; i++) {
        const nvmlGpmMetric_t *m = &q->metrics[i];
        if (is_refusal(m->nvmlReturn) && (m->metricId == NVML_GPM_METRIC_PCIE_TX_PER_SEC ||
                                          m->metricId == NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC)) {
            /* GPM without this rate: the counters stand in from the next sample. */
            unsigned int fields =
                m->metricId == NVML_GPM_METRIC_PCIE_TX_PER_SEC ? PCIE_FIELDS : NVLINK_FIELDS;
            d->gpm_refused |= fields;
            d->gpm_rates &= ~fields;
        }
        if (m->nvmlReturn != NVML_SUCCESS || !(m->value >= 0) || !isfinite(m->value)) continue;
        switch (m->metricId) {
        case NVML_GPM_METRIC_SM_UTIL: s->sm_active_pct = m->value; break;
        case NVML_GPM_METRIC_SM_OCCUPANCY: s->sm_occupancy_pct = m->value; break;
        case NVML_GPM_METRIC_ANY_TENSOR_UTIL: s->tensor_active_pct = m->value; break;
        case NVML_GPM_METRIC_DRAM_BW_UTIL: s->dram_bw_util_pct = m->value; break;
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
            s->pcie_tx_bytes_per_s = llround(m->value * MIB);
            break;
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
            s->pcie_rx_bytes_per_s = llround(m->value * MIB);
            break;
        case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
            s->nvlink_tx_bytes_per_s = llround(m->value * MIB);
            break;
        case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
            s->nvlink_rx_bytes_per_s = llround(m->value * MIB);
            break;
        default: break;
        }
    }
}

/* What each part of a sample cost, summed over devices and samples: the
 * figures behind the sampler's cost statement (source_cost). */
static const char *const part_names[GPUFL_NVML_PARTS] = {
    "memory", "utilization",  "temperature", "power", "clocks", "fan", "clock_event_reasons",
    "energy", "field_values", "processes",   "gpm"};

#define TIMED(n, part, stmt)                                                                       \
    do {                                                                                           \
        int64_t t0_ = monotonic_ns();                                                              \
        stmt;                                                                                      \
        __atomic_fetch_add(&(n)->part_ns[part], monotonic_ns() - t0_, __ATOMIC_RELAXED);           \
    } while (0)

int gpufl__nvml_sample(gpufl__gpu_sample_t *out, gpufl__nvml_t *n, int device, int64_t now_ns) {
    if (out == NULL) return gpufl__set_error(GPUFL_EINVAL, "nvml sample: out is NULL");
    sample_init(out);
    if (n == NULL || device < 0 || device >= n->count)
        return gpufl__set_error(GPUFL_EINVAL, "nvml sample: no device %d", device);
    device_t *d = &n->dev[device];
    gpufl__gpu_sample_t *s = out;
    int64_t dt_ns = d->last_ns > 0 ? now_ns - d->last_ns : 0;

    __atomic_fetch_add(&n->part_samples, 1, __ATOMIC_RELAXED);
    if (!d->lost) {
        /* Memory first: every device answers it, and a lost GPU shows here. */
        TIMED(n, 0, read_memory(n, d, s));
        TIMED(n, 1, {
            if (want(d, Q_UTILIZATION, n->fn.utilization)) {
                nvmlUtilization_t u;
                if (ok(d, Q_UTILIZATION, n->fn.utilization(d->handle, &u))) {
                    s->gpu_util_pct = (int)u.gpu;
                    s->mem_util_pct = (int)u.memory;
                }
            }
        });
        TIMED(n, 2, {
            unsigned int celsius = 0;
            if (want(d, Q_TEMPERATURE, n->fn.temperature) &&
                ok(d, Q_TEMPERATURE, n->fn.temperature(d->handle, NVML_TEMPERATURE_GPU, &celsius)))
                s->temp_gpu_c = (int)celsius;
        });
        TIMED(n, 3, {
            read_uint(d, Q_POWER, n->fn.power_usage, &s->power_mw);
            read_uint(d, Q_POWER_LIMIT, n->fn.power_limit, &s->power_limit_mw);
        });
        TIMED(n, 4, {
            read_clock(n, d, Q_CLOCK_SM, NVML_CLOCK_SM, &s->clock_sm_mhz);
            read_clock(n, d, Q_CLOCK_GFX, NVML_CLOCK_GRAPHICS, &s->clock_gfx_mhz);
            read_clock(n, d, Q_CLOCK_MEM, NVML_CLOCK_MEM, &s->clock_mem_mhz);
        });
        TIMED(n, 5, {
            int64_t fan = GPUFL_GPU_UNKNOWN;
            read_uint(d, Q_FAN, n->fn.fan_speed, &fan);
            s->fan_pct = fan > 100 ? GPUFL_GPU_UNKNOWN : (int)fan;
        });
        TIMED(n, 6, {
            unsigned long long reasons = 0;
            if (want(d, Q_EVENT_REASONS, n->fn.event_reasons) &&
                ok(d, Q_EVENT_REASONS, n->fn.event_reasons(d->handle, &reasons)))
                s->throttle_reasons = reasons;
        });
        TIMED(n, 7, read_energy(n, d, s, now_ns));
    }
    /* Counters and GPM keep their state in step even for a lost device. */
    TIMED(n, 8, read_fields(n, d, s, dt_ns));
    /* The costly parts (process lists, GPM) at most every slow_every_ns:
     * between, their columns stay unknown rather than repeat old values. */
    int slow_due = n->slow_every_ns == 0 || d->slow_last_ns == 0 ||
                   now_ns - d->slow_last_ns >= n->slow_every_ns;
    if (!d->lost && slow_due) {
        TIMED(n, 9, read_processes(n, d, s));
        TIMED(n, 10, read_gpm(n, d, s));
        d->slow_last_ns = now_ns;
    }
    d->last_ns = now_ns;

    if (d->lost)
        return gpufl__set_error(GPUFL_EIO, "GPU %s (NVML index %d) stopped answering: GPU is lost",
                                d->info.uuid, d->info.index);
    return 0;
}

void gpufl__nvml_set_slow_interval(gpufl__nvml_t *n, int64_t every_ns) {
    n->slow_every_ns = every_ns > 0 ? every_ns : 0;
}

int64_t gpufl__nvml_part_cost(const gpufl__nvml_t *n, int part, const char **name) {
    if (part < 0 || part >= GPUFL_NVML_PARTS) return -1;
    *name = part_names[part];
    int64_t samples = __atomic_load_n(&n->part_samples, __ATOMIC_RELAXED);
    return samples ? __atomic_load_n(&n->part_ns[part], __ATOMIC_RELAXED) / samples : 0;
}

/* ---------------------------------------------------------------------- */
/* Clock event reasons                                                      */
/* ---------------------------------------------------------------------- */

_Static_assert(NVML_CLOCKS_EVENT_REASON_GPU_IDLE == 1ull << 0, "reason bit");
_Static_assert(NVML_CLOCKS_EVENT_REASON_APPLICATIONS_CLOCKS == 1ull << 1, "reason bit");
_Static_assert(NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP == 1ull << 2, "reason bit");
_Static_assert(NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN == 1ull << 3, "reason bit");
_Static_assert(NVML_CLOCKS_EVENT_REASON_SYNC_BOOST == 1ull << 4, "reason bit");
_Static_assert(NVML_CLOCKS_EVENT_REASON_SW_THERMAL_SLOWDOWN == 1ull << 5, "reason bit");
_Static_assert(NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN == 1ull << 6, "reason bit");
_Static_assert(NVML_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN == 1ull << 7, "reason bit");
_Static_assert(NVML_CLOCKS_EVENT_REASON_DISPLAY_CLOCK_SETTING == 1ull << 8, "reason bit");

const char *gpufl__nvml_throttle_name(int bit) {
    /* Stable names: they are written to logs. */
    static const char *const names[] = {
        "gpu_idle",
        "applications_clocks_setting",
        "sw_power_cap",
        "hw_slowdown",
        "sync_boost",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
        "display_clock_setting",
    };
    if (bit < 0 || (size_t)bit >= sizeof names / sizeof names[0]) return NULL;
    return names[bit];
}
