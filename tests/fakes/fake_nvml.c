// SPDX-License-Identifier: Apache-2.0
/*
 * fake_nvml.c - a scriptable stand-in for libnvidia-ml, built as
 * libfake_nvml.so (every symbol lib/nvidia/nvml.c loads, versioned names
 * included) and, with -DFAKE_NVML_OLD, libfake_nvml_old.so (an old driver:
 * no _v2/_v3 symbols, no clock-event or GPM API) to drive the fallbacks.
 *
 * The script is a JSON file named by $GPUFL_FAKE_NVML, read at nvmlInit:
 *   {"init_error": 9,                      nvmlInit fails with this status
 *    "driver_version": "580.95.05", "nvml_version": "13.580.95.05",
 *    "cuda_driver_version": 13000,
 *    "process_v3_stride": 32,              bytes per entry the _v3 process calls
 *                                          write (24, or 32 as drivers 535.43-86)
 *    "gpus": [{"name", "uuid", "pci_bus_id": "00000000:1B:00.0", "cc": [9, 0],
 *              "cores", "memory_total", "memory_reserved", "sm_count" (with
 *              "attributes_whole_gpu": true; drivers refuse it for whole GPUs),
 *              "mig_mode": 0|1, "max_mig": 7, "gpm": true, "nvlink_links": 18,
 *              "nvlink_active": 4, "ecc": true, "energy_delay_us": 3000,
 *              "lost_at_sample": k, "not_supported": ["nvmlDeviceGetFanSpeed", ...],
 *              "errors": {"nvmlDeviceGetPowerUsage": [0, 10]},
 *              "field_types": {"temp_mem": 4},
 *              "samples": {...}, "mig": [{"slot", "gi", "name", "uuid", "sm_count",
 *                                          "memory_total", "samples": {...}}]}]}
 * A key left out means the device does not support it: its call answers
 * NOT_SUPPORTED (a field value or GPM metric: that entry's status).
 *
 * Samples: arrays that advance per call. Each function keeps its own call
 * count per device, and its n-th call (from 0) reads element n of its
 * arrays; the last element repeats; a null element makes that call fail
 * (NVML_ERROR_UNKNOWN). nvml.c's open also calls the memory functions and
 * nvmlDeviceGetEnforcedPowerLimit once, so their element 0 is open's.
 *   util_gpu util_mem mem_used mem_free temp_gpu power_mw power_limit_mw
 *   clock_sm clock_gfx clock_mem fan throttle energy_mj
 *   fields: temp_mem pcie_tx_bytes pcie_rx_bytes ecc_sbe ecc_dbe
 *           nvlink_tx_kib nvlink_rx_kib (NVLink only with scopeId all-links)
 *   procs, graphics_procs: one list of [pid, used_bytes|null] per call
 *   proc_util: one list of [pid, sm_util, mem_util] driver samples per call,
 *              each stamped just after the call's lastSeenTimeStamp ([]: none
 *              since, NOT_FOUND)
 *   gpm: {sm_util, sm_occupancy, tensor, dram_bw, pcie_tx_mib, pcie_rx_mib,
 *         nvlink_tx_mib, nvlink_rx_mib}: element k is the metric over the
 *         interval from the device's GPM snapshot k to any later one.
 * "lost_at_sample": k makes the k-th memory call after open's (and every call
 * after it) answer GPU_IS_LOST. "errors" scripts a status per call (0 = run).
 * "xids": [[k, code], [k, code, gi, ci], ...] on a GPU: critical XID events,
 * each delivered once by nvmlEventSetWait(_v2) of a set the GPU is
 * registered with, once the GPU had k memory calls after open's (its
 * samples, as lost_at_sample counts them); gi and ci (MIG instance ids)
 * default to all ones. Events are kept in script order, 64 at most.
 *
 * For the tests: fake_nvml_calls(name) counts the calls of one function since
 * the first nvmlInit (kept past nvmlShutdown until the next init),
 * fake_nvml_field_calls(id) the times a field was asked for,
 * fake_nvml_total_calls() all calls, fake_nvml_gpm_live() the GPM samples
 * not freed, fake_nvml_refcount() nvmlInit calls not yet shut down.
 */
#include "nvidia/nvml_api.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every function the fake exports (old variant: a subset), for counting. */
/* clang-format off: one function a line (the formatter does not settle on this list) */
#define FAKE_FUNCTIONS(X)                                                                          \
    X(nvmlInit_v2)                                                                                 \
    X(nvmlInit)                                                                                    \
    X(nvmlShutdown)                                                                                \
    X(nvmlErrorString)                                                                             \
    X(nvmlSystemGetDriverVersion)                                                                  \
    X(nvmlSystemGetNVMLVersion)                                                                    \
    X(nvmlSystemGetCudaDriverVersion_v2)                                                           \
    X(nvmlSystemGetCudaDriverVersion)                                                              \
    X(nvmlDeviceGetCount_v2)                                                                       \
    X(nvmlDeviceGetCount)                                                                          \
    X(nvmlDeviceGetHandleByIndex_v2)                                                               \
    X(nvmlDeviceGetHandleByIndex)                                                                  \
    X(nvmlDeviceGetName)                                                                           \
    X(nvmlDeviceGetUUID)                                                                           \
    X(nvmlDeviceGetPciInfo_v3)                                                                     \
    X(nvmlDeviceGetPciInfo_v2)                                                                     \
    X(nvmlDeviceGetPciInfo)                                                                        \
    X(nvmlDeviceGetCudaComputeCapability)                                                          \
    X(nvmlDeviceGetAttributes_v2)                                                                  \
    X(nvmlDeviceGetAttributes)                                                                     \
    X(nvmlDeviceGetNumGpuCores)                                                                    \
    X(nvmlDeviceGetMemoryInfo_v2)                                                                  \
    X(nvmlDeviceGetMemoryInfo)                                                                     \
    X(nvmlDeviceGetMigMode)                                                                        \
    X(nvmlDeviceGetMaxMigDeviceCount)                                                              \
    X(nvmlDeviceGetMigDeviceHandleByIndex)                                                         \
    X(nvmlDeviceGetGpuInstanceId)                                                                  \
    X(nvmlDeviceGetEccMode)                                                                        \
    X(nvmlDeviceGetNvLinkState)                                                                    \
    X(nvmlDeviceGetUtilizationRates)                                                               \
    X(nvmlDeviceGetTemperature)                                                                    \
    X(nvmlDeviceGetPowerUsage)                                                                     \
    X(nvmlDeviceGetEnforcedPowerLimit)                                                             \
    X(nvmlDeviceGetFanSpeed)                                                                       \
    X(nvmlDeviceGetClockInfo)                                                                      \
    X(nvmlDeviceGetCurrentClocksEventReasons)                                                      \
    X(nvmlDeviceGetTotalEnergyConsumption)                                                         \
    X(nvmlDeviceGetCurrentClocksThrottleReasons)                                                   \
    X(nvmlDeviceGetFieldValues)                                                                    \
    X(nvmlDeviceGetComputeRunningProcesses_v3)                                                     \
    X(nvmlDeviceGetComputeRunningProcesses_v2)                                                     \
    X(nvmlDeviceGetComputeRunningProcesses)                                                        \
    X(nvmlDeviceGetGraphicsRunningProcesses_v3)                                                    \
    X(nvmlDeviceGetGraphicsRunningProcesses_v2)                                                    \
    X(nvmlDeviceGetGraphicsRunningProcesses)                                                       \
    X(nvmlDeviceGetPcieThroughput)                                                                 \
    X(nvmlDeviceGetProcessUtilization)                                                             \
    X(nvmlGpmQueryDeviceSupport)                                                                   \
    X(nvmlGpmSampleAlloc)                                                                          \
    X(nvmlGpmSampleFree)                                                                           \
    X(nvmlGpmSampleGet)                                                                            \
    X(nvmlGpmMigSampleGet)                                                                         \
    X(nvmlGpmMetricsGet)                                                                           \
    X(nvmlEventSetCreate)                                                                          \
    X(nvmlEventSetFree)                                                                            \
    X(nvmlDeviceRegisterEvents)                                                                    \
    X(nvmlEventSetWait_v2)                                                                         \
    X(nvmlEventSetWait)
// clang-format on

#define AS_ENUM(name) FN_##name,
#define AS_NAME(name) #name,
enum { FAKE_FUNCTIONS(AS_ENUM) FN_COUNT };
static const char *const function_names[FN_COUNT] = {FAKE_FUNCTIONS(AS_NAME)};

#define GPUS_MAX      16
#define MIGS_MAX      64
#define FIELD_IDS_MAX 512
#define GPM_MAGIC     0x67706d73u

/* A GPU or a MIG device; handles are pointers to these. */
struct nvmlDevice_st {
    json_t *spec;                 /* the script's object (borrowed) */
    json_t *samples;              /* spec.samples, may be NULL */
    struct nvmlDevice_st *parent; /* for MIG */
    unsigned int gi;              /* MIG GPU instance id */
    unsigned long long calls[FN_COUNT];
    unsigned long long field_calls[FIELD_IDS_MAX];
    unsigned long long clock_calls[3];
    unsigned long long memory_calls; /* both memory functions */
    long long lost_at;               /* memory call index that loses the GPU; -1 never */
    int lost;
    unsigned long long gpm_taken; /* GPM snapshots taken */
    struct nvmlEventSet_st *events;    /* the set it is registered with, NULL none */
    unsigned long long xids_delivered; /* bit i: script's xids[i] was delivered */
};

struct nvmlEventSet_st {
    unsigned int magic;
};

struct nvmlGpmSample_st {
    unsigned int magic;
    struct nvmlDevice_st *owner; /* NULL until taken */
    unsigned long long seq;
};

static json_t *script;
static int refcount;
static struct nvmlDevice_st gpus[GPUS_MAX], migs[MIGS_MAX];
static int ngpus, nmigs;
/* Counted atomically: the library calls from one thread per device. */
static unsigned long long calls_total[FN_COUNT];
static unsigned long long field_calls_total[FIELD_IDS_MAX];
static long gpm_live;
static long event_sets_live;

/* Every export is declared through nvml_api.h's function types, so a
 * signature that differs from nvml.c's does not compile. */
nvml_void_fn nvmlInit_v2, nvmlInit, nvmlShutdown;
nvml_error_string_fn nvmlErrorString;
nvml_system_string_fn nvmlSystemGetDriverVersion, nvmlSystemGetNVMLVersion;
nvml_system_int_fn nvmlSystemGetCudaDriverVersion_v2, nvmlSystemGetCudaDriverVersion;
nvml_device_count_fn nvmlDeviceGetCount_v2, nvmlDeviceGetCount;
nvml_device_by_index_fn nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByIndex;
nvml_device_string_fn nvmlDeviceGetName, nvmlDeviceGetUUID;
nvml_device_pci_fn nvmlDeviceGetPciInfo_v3, nvmlDeviceGetPciInfo_v2, nvmlDeviceGetPciInfo;
nvml_device_cc_fn nvmlDeviceGetCudaComputeCapability;
nvml_device_attributes_fn nvmlDeviceGetAttributes_v2, nvmlDeviceGetAttributes;
nvml_device_uint_fn nvmlDeviceGetNumGpuCores, nvmlDeviceGetMaxMigDeviceCount,
    nvmlDeviceGetGpuInstanceId, nvmlDeviceGetPowerUsage, nvmlDeviceGetEnforcedPowerLimit,
    nvmlDeviceGetFanSpeed;
nvml_device_memory_v2_fn nvmlDeviceGetMemoryInfo_v2;
nvml_device_memory_fn nvmlDeviceGetMemoryInfo;
nvml_device_mig_mode_fn nvmlDeviceGetMigMode;
nvml_device_mig_handle_fn nvmlDeviceGetMigDeviceHandleByIndex;
nvml_device_ecc_mode_fn nvmlDeviceGetEccMode;
nvml_device_nvlink_state_fn nvmlDeviceGetNvLinkState;
nvml_device_utilization_fn nvmlDeviceGetUtilizationRates;
nvml_device_temperature_fn nvmlDeviceGetTemperature;
nvml_device_clock_fn nvmlDeviceGetClockInfo;
nvml_device_ull_fn nvmlDeviceGetCurrentClocksEventReasons,
    nvmlDeviceGetCurrentClocksThrottleReasons, nvmlDeviceGetTotalEnergyConsumption;
nvml_device_fields_fn nvmlDeviceGetFieldValues;
nvml_device_processes_fn nvmlDeviceGetComputeRunningProcesses_v3,
    nvmlDeviceGetComputeRunningProcesses_v2, nvmlDeviceGetComputeRunningProcesses,
    nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlDeviceGetGraphicsRunningProcesses_v2,
    nvmlDeviceGetGraphicsRunningProcesses;
nvml_device_process_util_fn nvmlDeviceGetProcessUtilization;
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter,
                                         unsigned int *value);
nvml_gpm_support_fn nvmlGpmQueryDeviceSupport;
nvml_gpm_alloc_fn nvmlGpmSampleAlloc;
nvml_gpm_free_fn nvmlGpmSampleFree;
nvml_gpm_sample_get_fn nvmlGpmSampleGet;
nvml_gpm_mig_sample_get_fn nvmlGpmMigSampleGet;
nvml_gpm_metrics_get_fn nvmlGpmMetricsGet;
nvml_event_set_create_fn nvmlEventSetCreate;
nvml_event_set_free_fn nvmlEventSetFree;
nvml_device_register_events_fn nvmlDeviceRegisterEvents;
nvml_event_set_wait_fn nvmlEventSetWait_v2, nvmlEventSetWait;

unsigned long long fake_nvml_calls(const char *name);
unsigned long long fake_nvml_field_calls(unsigned int field_id);
unsigned long long fake_nvml_total_calls(void);
long fake_nvml_gpm_live(void);
long fake_nvml_event_sets_live(void);
int fake_nvml_refcount(void);

/* ---------------------------------------------------------------------- */
/* Script access                                                            */
/* ---------------------------------------------------------------------- */

/* Element k of an array (the last one past its end), or a scalar itself. */
static json_t *element(json_t *series, unsigned long long k) {
    if (!json_is_array(series)) return series;
    size_t n = json_array_size(series);
    if (n == 0) return NULL;
    return json_array_get(series, k < n ? (size_t)k : n - 1);
}

/* Reads samples[key] at call k: NVML_SUCCESS, NOT_SUPPORTED (no such key)
 * or UNKNOWN (a null element). */
static nvmlReturn_t series_ull(json_t *samples, const char *key, unsigned long long k,
                               unsigned long long *out) {
    json_t *series = samples ? json_object_get(samples, key) : NULL;
    if (series == NULL) return NVML_ERROR_NOT_SUPPORTED;
    json_t *v = element(series, k);
    if (!json_is_number(v)) return NVML_ERROR_UNKNOWN;
    *out = json_is_integer(v) ? (unsigned long long)json_integer_value(v)
                              : (unsigned long long)json_number_value(v);
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD /* GPM only */
static nvmlReturn_t series_double(json_t *samples, const char *key, unsigned long long k,
                                  double *out) {
    json_t *series = samples ? json_object_get(samples, key) : NULL;
    if (series == NULL) return NVML_ERROR_NOT_SUPPORTED;
    json_t *v = element(series, k);
    if (!json_is_number(v)) return NVML_ERROR_UNKNOWN;
    *out = json_number_value(v);
    return NVML_SUCCESS;
}
#endif

static long long spec_int(json_t *spec, const char *key, long long fallback) {
    json_t *v = json_object_get(spec, key);
    return json_is_integer(v) ? json_integer_value(v) : fallback;
}

static const char *spec_string(json_t *spec, const char *key, const char *fallback) {
    json_t *v = json_object_get(spec, key);
    return json_is_string(v) ? json_string_value(v) : fallback;
}

static int in_list(json_t *list, const char *name) {
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) if (json_is_string(v) &&
                                       strcmp(json_string_value(v), name) == 0) return 1;
    return 0;
}

static struct nvmlDevice_st *lookup(nvmlDevice_t handle) {
    for (int i = 0; i < ngpus; i++)
        if (handle == &gpus[i]) return handle;
    for (int i = 0; i < nmigs; i++)
        if (handle == &migs[i]) return handle;
    return NULL;
}

/* Counts a call and applies the device's script: lost, not supported,
 * scripted errors. *k gets this call's index on the device. */
static nvmlReturn_t enter(int fn, nvmlDevice_t handle, unsigned long long *k) {
    __atomic_fetch_add(&calls_total[fn], 1, __ATOMIC_RELAXED);
    struct nvmlDevice_st *d = lookup(handle);
    if (d == NULL || script == NULL)
        return script ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    *k = d->calls[fn]++;
    if (fn == FN_nvmlDeviceGetMemoryInfo_v2 || fn == FN_nvmlDeviceGetMemoryInfo) {
        unsigned long long m = d->memory_calls++;
        if (d->lost_at >= 0 && m >= (unsigned long long)d->lost_at) d->lost = 1;
    }
    if (d->lost) return NVML_ERROR_GPU_IS_LOST;
    if (in_list(json_object_get(d->spec, "not_supported"), function_names[fn]))
        return NVML_ERROR_NOT_SUPPORTED;
    json_t *errors = json_object_get(json_object_get(d->spec, "errors"), function_names[fn]);
    json_t *e = json_array_get(errors, (size_t)*k);
    if (json_is_integer(e) && json_integer_value(e) != 0)
        return (nvmlReturn_t)json_integer_value(e);
    return NVML_SUCCESS;
}

/* A call that needs no device: counted, and refused before nvmlInit. */
static nvmlReturn_t enter_global(int fn) {
    __atomic_fetch_add(&calls_total[fn], 1, __ATOMIC_RELAXED);
    return script ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

static void device_init(struct nvmlDevice_st *d, json_t *spec, struct nvmlDevice_st *parent) {
    memset(d, 0, sizeof *d);
    d->spec = spec;
    d->samples = json_object_get(spec, "samples");
    d->parent = parent;
    d->gi = (unsigned int)spec_int(spec, "gi", 0);
    d->lost_at = spec_int(spec, "lost_at_sample", -1);
}

/* ---------------------------------------------------------------------- */
/* Init, system                                                             */
/* ---------------------------------------------------------------------- */

static nvmlReturn_t init_common(int fn) {
    if (refcount > 0) {
        __atomic_fetch_add(&calls_total[fn], 1, __ATOMIC_RELAXED);
        refcount++;
        return NVML_SUCCESS;
    }
    memset(calls_total, 0, sizeof calls_total);
    memset(field_calls_total, 0, sizeof field_calls_total);
    __atomic_fetch_add(&calls_total[fn], 1, __ATOMIC_RELAXED);
    const char *path = getenv("GPUFL_FAKE_NVML");
    if (path == NULL || path[0] == '\0') return NVML_ERROR_DRIVER_NOT_LOADED;
    json_error_t error;
    json_t *loaded = json_load_file(path, 0, &error);
    if (loaded == NULL) {
        fprintf(stderr, "fake_nvml: %s:%d: %s\n", path, error.line, error.text);
        return NVML_ERROR_UNKNOWN;
    }
    long long init_error = spec_int(loaded, "init_error", 0);
    if (init_error != 0) {
        json_decref(loaded);
        return (nvmlReturn_t)init_error;
    }
    script = loaded;
    ngpus = nmigs = 0;
    size_t i;
    json_t *gpu;
    json_array_foreach(json_object_get(script, "gpus"), i, gpu) {
        if (ngpus == GPUS_MAX) break;
        struct nvmlDevice_st *parent = &gpus[ngpus++];
        device_init(parent, gpu, NULL);
        size_t j;
        json_t *mig;
        json_array_foreach(json_object_get(gpu, "mig"), j, mig) {
            if (nmigs < MIGS_MAX) device_init(&migs[nmigs++], mig, parent);
        }
    }
    refcount = 1;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlInit_v2(void) { return init_common(FN_nvmlInit_v2); }
#endif
nvmlReturn_t nvmlInit(void) { return init_common(FN_nvmlInit); }

nvmlReturn_t nvmlShutdown(void) {
    __atomic_fetch_add(&calls_total[FN_nvmlShutdown], 1, __ATOMIC_RELAXED);
    if (refcount == 0) return NVML_ERROR_UNINITIALIZED;
    if (--refcount > 0) return NVML_SUCCESS;
    json_decref(script);
    script = NULL;
    ngpus = nmigs = 0;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    __atomic_fetch_add(&calls_total[FN_nvmlErrorString], 1, __ATOMIC_RELAXED);
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t system_string(int fn, const char *key, const char *fallback, char *out,
                                  unsigned int length) {
    nvmlReturn_t r = enter_global(fn);
    if (r != NVML_SUCCESS) return r;
    const char *value = spec_string(script, key, fallback);
    if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    return system_string(FN_nvmlSystemGetDriverVersion, "driver_version", "580.95.05", version,
                         length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    return system_string(FN_nvmlSystemGetNVMLVersion, "nvml_version", "13.580.95.05", version,
                         length);
}

static nvmlReturn_t cuda_driver_version(int fn, int *value) {
    nvmlReturn_t r = enter_global(fn);
    if (r == NVML_SUCCESS) *value = (int)spec_int(script, "cuda_driver_version", 13000);
    return r;
}

#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *value) {
    return cuda_driver_version(FN_nvmlSystemGetCudaDriverVersion_v2, value);
}
#endif
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *value) {
    return cuda_driver_version(FN_nvmlSystemGetCudaDriverVersion, value);
}

static nvmlReturn_t device_count(int fn, unsigned int *count) {
    nvmlReturn_t r = enter_global(fn);
    if (r == NVML_SUCCESS) *count = (unsigned int)ngpus;
    return r;
}

#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    return device_count(FN_nvmlDeviceGetCount_v2, count);
}
#endif
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) {
    return device_count(FN_nvmlDeviceGetCount, count);
}

static nvmlReturn_t handle_by_index(int fn, unsigned int index, nvmlDevice_t *device) {
    nvmlReturn_t r = enter_global(fn);
    if (r != NVML_SUCCESS) return r;
    if (index >= (unsigned int)ngpus) return NVML_ERROR_INVALID_ARGUMENT;
    json_t *errors = json_object_get(gpus[index].spec, "handle_error");
    if (json_is_integer(errors)) return (nvmlReturn_t)json_integer_value(errors);
    *device = &gpus[index];
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    return handle_by_index(FN_nvmlDeviceGetHandleByIndex_v2, index, device);
}
#endif
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return handle_by_index(FN_nvmlDeviceGetHandleByIndex, index, device);
}

/* ---------------------------------------------------------------------- */
/* Identity                                                                 */
/* ---------------------------------------------------------------------- */

static nvmlReturn_t device_string(int fn, nvmlDevice_t device, const char *key, char *out,
                                  unsigned int length) {
    unsigned long long k;
    nvmlReturn_t r = enter(fn, device, &k);
    if (r != NVML_SUCCESS) return r;
    const char *value = spec_string(device->spec, key, NULL);
    if (value == NULL) return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *out, unsigned int length) {
    return device_string(FN_nvmlDeviceGetName, device, "name", out, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *out, unsigned int length) {
    return device_string(FN_nvmlDeviceGetUUID, device, "uuid", out, length);
}

/* version 1 writes its 16-byte bus id and no busId; 2 and 3 both. */
static nvmlReturn_t pci_info(int fn, int version, nvmlDevice_t device, nvmlPciInfo_t *pci) {
    unsigned long long k;
    nvmlReturn_t r = enter(fn, device, &k);
    if (r != NVML_SUCCESS) return r;
    const char *bus_id = spec_string(device->spec, "pci_bus_id", NULL);
    unsigned int domain = 0, bus = 0, dev = 0;
    if (bus_id == NULL || sscanf(bus_id, "%x:%x:%x", &domain, &bus, &dev) != 3)
        return NVML_ERROR_NOT_SUPPORTED;
    size_t v1_bytes = offsetof(nvmlPciInfo_t, busId) + 16; /* v1 ends with 4 reserved words */
    memset(pci, 0, version == 1 ? v1_bytes : sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", domain & 0xFFFF, bus,
             dev);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = 0x233010DE;
    pci->pciSubSystemId = 0x16C110DE;
    if (version >= 2) snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", domain, bus, dev);
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return pci_info(FN_nvmlDeviceGetPciInfo_v3, 3, device, pci);
}
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return pci_info(FN_nvmlDeviceGetPciInfo_v2, 2, device, pci);
}
#endif
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return pci_info(FN_nvmlDeviceGetPciInfo, 1, device, pci);
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetCudaComputeCapability, device, &k);
    if (r != NVML_SUCCESS) return r;
    json_t *cc = json_object_get(device->spec, "cc");
    if (!json_is_array(cc) || json_array_size(cc) != 2) return NVML_ERROR_NOT_SUPPORTED;
    *major = (int)json_integer_value(json_array_get(cc, 0));
    *minor = (int)json_integer_value(json_array_get(cc, 1));
    return NVML_SUCCESS;
}

static nvmlReturn_t attributes(int fn, nvmlDevice_t device, nvmlDeviceAttributes_t *a) {
    unsigned long long k;
    nvmlReturn_t r = enter(fn, device, &k);
    if (r != NVML_SUCCESS) return r;
    /* Drivers answer it for MIG devices only, unless the script says otherwise. */
    long long sms = spec_int(device->spec, "sm_count", -1);
    if (sms < 0 ||
        (!device->parent && !json_is_true(json_object_get(device->spec, "attributes_whole_gpu"))))
        return NVML_ERROR_NOT_SUPPORTED;
    memset(a, 0, sizeof *a);
    a->multiprocessorCount = (unsigned int)sms;
    a->memorySizeMB = (unsigned long long)spec_int(device->spec, "memory_total", 0) >> 20;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *a) {
    return attributes(FN_nvmlDeviceGetAttributes_v2, device, a);
}
#endif
nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device, nvmlDeviceAttributes_t *a) {
    return attributes(FN_nvmlDeviceGetAttributes, device, a);
}

nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int *cores) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetNumGpuCores, device, &k);
    if (r != NVML_SUCCESS) return r;
    long long v = spec_int(device->spec, "cores", -1);
    if (v < 0) return NVML_ERROR_NOT_SUPPORTED;
    *cores = (unsigned int)v;
    return NVML_SUCCESS;
}

/* Fills total/reserved/used/free for call k; v1 counts reserved as used. */
static nvmlReturn_t memory(int fn, nvmlDevice_t device, unsigned long long out[4]) {
    unsigned long long k;
    nvmlReturn_t r = enter(fn, device, &k);
    if (r != NVML_SUCCESS) return r;
    long long total = spec_int(device->spec, "memory_total", -1);
    if (total < 0) return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long reserved = (unsigned long long)spec_int(device->spec, "memory_reserved", 0);
    unsigned long long used = 0, free = (unsigned long long)total - reserved;
    nvmlReturn_t u = series_ull(device->samples, "mem_used", k, &used);
    if (u == NVML_ERROR_UNKNOWN) return u;
    if (series_ull(device->samples, "mem_free", k, &free) == NVML_ERROR_UNKNOWN)
        return NVML_ERROR_UNKNOWN;
    out[0] = (unsigned long long)total;
    out[1] = reserved;
    out[2] = used;
    out[3] = free;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *m) {
    if (m == NULL || m->version != NVML_MEMORY_V2_VERSION) {
        __atomic_fetch_add(&calls_total[FN_nvmlDeviceGetMemoryInfo_v2], 1, __ATOMIC_RELAXED);
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    unsigned long long v[4];
    nvmlReturn_t r = memory(FN_nvmlDeviceGetMemoryInfo_v2, device, v);
    if (r == NVML_SUCCESS) {
        m->total = v[0];
        m->reserved = v[1];
        m->used = v[2];
        m->free = v[3];
    }
    return r;
}
#endif

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *m) {
    unsigned long long v[4];
    nvmlReturn_t r = memory(FN_nvmlDeviceGetMemoryInfo, device, v);
    if (r == NVML_SUCCESS) {
        m->total = v[0];
        m->used = v[2] + v[1];
        m->free = v[3];
    }
    return r;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current,
                                  unsigned int *pending) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetMigMode, device, &k);
    if (r != NVML_SUCCESS) return r;
    long long mode = spec_int(device->spec, "mig_mode", -1);
    if (mode < 0 || device->parent) return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = (unsigned int)mode;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetMaxMigDeviceCount, device, &k);
    if (r != NVML_SUCCESS) return r;
    if (device->parent || spec_int(device->spec, "mig_mode", -1) < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *count = (unsigned int)spec_int(device->spec, "max_mig", 7);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *mig) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetMigDeviceHandleByIndex, device, &k);
    if (r != NVML_SUCCESS) return r;
    if (device->parent || spec_int(device->spec, "mig_mode", 0) != 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < nmigs; i++) {
        if (migs[i].parent == device && spec_int(migs[i].spec, "slot", -1) == (long long)index) {
            *mig = &migs[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetGpuInstanceId, device, &k);
    if (r != NVML_SUCCESS) return r;
    if (device->parent == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *id = device->gi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
                                  nvmlEnableState_t *pending) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetEccMode, device, &k);
    if (r != NVML_SUCCESS) return r;
    json_t *ecc = json_object_get(device->spec, "ecc");
    if (!json_is_boolean(ecc)) return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = json_is_true(ecc) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t *active) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetNvLinkState, device, &k);
    if (r != NVML_SUCCESS) return r;
    long long links = spec_int(device->spec, "nvlink_links", 0);
    if (links <= 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= (unsigned long long)links || link >= NVML_NVLINK_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    *active = (long long)link < spec_int(device->spec, "nvlink_active", links)
                  ? NVML_FEATURE_ENABLED
                  : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Samples                                                                  */
/* ---------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *u) {
    unsigned long long k, gpu = 0, mem = 0;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetUtilizationRates, device, &k);
    if (r == NVML_SUCCESS) r = series_ull(device->samples, "util_gpu", k, &gpu);
    if (r == NVML_SUCCESS) r = series_ull(device->samples, "util_mem", k, &mem);
    if (r == NVML_SUCCESS) {
        u->gpu = (unsigned int)gpu;
        u->memory = (unsigned int)mem;
    }
    return r;
}

/* The functions that read one unsigned series. */
static nvmlReturn_t uint_series(int fn, nvmlDevice_t device, const char *key, unsigned int *out) {
    unsigned long long k, v = 0;
    nvmlReturn_t r = enter(fn, device, &k);
    if (r == NVML_SUCCESS) r = series_ull(device->samples, key, k, &v);
    if (r == NVML_SUCCESS) *out = (unsigned int)v;
    return r;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensor,
                                      unsigned int *celsius) {
    if (sensor != NVML_TEMPERATURE_GPU) {
        __atomic_fetch_add(&calls_total[FN_nvmlDeviceGetTemperature], 1, __ATOMIC_RELAXED);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    return uint_series(FN_nvmlDeviceGetTemperature, device, "temp_gpu", celsius);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *mw) {
    return uint_series(FN_nvmlDeviceGetPowerUsage, device, "power_mw", mw);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *mw) {
    return uint_series(FN_nvmlDeviceGetEnforcedPowerLimit, device, "power_limit_mw", mw);
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *pct) {
    return uint_series(FN_nvmlDeviceGetFanSpeed, device, "fan", pct);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type, unsigned int *mhz) {
    static const char *const keys[3] = {"clock_gfx", "clock_sm", "clock_mem"};
    unsigned long long k, v = 0;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetClockInfo, device, &k);
    if (r != NVML_SUCCESS) return r;
    if (type > NVML_CLOCK_MEM) return NVML_ERROR_INVALID_ARGUMENT;
    r = series_ull(device->samples, keys[type], device->clock_calls[type]++, &v);
    if (r == NVML_SUCCESS) *mhz = (unsigned int)v;
    return r;
}

static nvmlReturn_t reasons(int fn, nvmlDevice_t device, unsigned long long *out) {
    unsigned long long k;
    nvmlReturn_t r = enter(fn, device, &k);
    return r == NVML_SUCCESS ? series_ull(device->samples, "throttle", k, out) : r;
}

#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *out) {
    return reasons(FN_nvmlDeviceGetCurrentClocksEventReasons, device, out);
}
#endif
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long *out) {
    return reasons(FN_nvmlDeviceGetCurrentClocksThrottleReasons, device, out);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *mj) {
    /* "energy_delay_us" makes the read as slow as the real one can be. */
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetTotalEnergyConsumption, device, &k);
    if (r != NVML_SUCCESS) return r;
    long long delay_us = spec_int(device->spec, "energy_delay_us", 0);
    struct timespec pause = {delay_us / 1000000, (delay_us % 1000000) * 1000};
    if (delay_us > 0) nanosleep(&pause, NULL);
    return series_ull(device->samples, "energy_mj", k, mj);
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter,
                                         unsigned int *value) {
    /* The blocking call nvml.c must never make: counted, and slow like the real one. */
    unsigned long long k;
    struct timespec pause = {0, 20 * 1000 * 1000};
    nvmlReturn_t r = enter(FN_nvmlDeviceGetPcieThroughput, device, &k);
    nanosleep(&pause, NULL);
    if (r == NVML_SUCCESS) *value = counter;
    return r;
}

static const char *field_key(unsigned int id) {
    switch (id) {
    case NVML_FI_DEV_MEMORY_TEMP: return "temp_mem";
    case NVML_FI_DEV_PCIE_COUNT_TX_BYTES: return "pcie_tx_bytes";
    case NVML_FI_DEV_PCIE_COUNT_RX_BYTES: return "pcie_rx_bytes";
    case NVML_FI_DEV_ECC_SBE_VOL_TOTAL: return "ecc_sbe";
    case NVML_FI_DEV_ECC_DBE_VOL_TOTAL: return "ecc_dbe";
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: return "nvlink_tx_kib";
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: return "nvlink_rx_kib";
    default: return NULL;
    }
}

/* Stores v as the field's value type: unsigned long long unless the script's
 * field_types says otherwise (to exercise the other members). */
static void field_store(nvmlFieldValue_t *f, json_t *spec, const char *key, unsigned long long v) {
    unsigned int type = (unsigned int)spec_int(json_object_get(spec, "field_types"), key,
                                               NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
    f->valueType = type;
    switch (type) {
    case NVML_VALUE_TYPE_DOUBLE: f->value.dVal = (double)v; break;
    case NVML_VALUE_TYPE_UNSIGNED_INT: f->value.uiVal = (unsigned int)v; break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: f->value.ulVal = (unsigned long)v; break;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: f->value.sllVal = (long long)v; break;
    case NVML_VALUE_TYPE_SIGNED_INT: f->value.siVal = (int)v; break;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: f->value.usVal = (unsigned short)v; break;
    default: f->value.ullVal = v; break;
    }
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t *values) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetFieldValues, device, &k);
    if (r != NVML_SUCCESS) return r;
    if (count <= 0 || values == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < count; i++) {
        nvmlFieldValue_t *f = &values[i];
        const char *key = field_key(f->fieldId);
        unsigned long long v = 0;
        f->timestamp = 1700000000000000LL;
        f->latencyUsec = 0;
        if (key == NULL || f->fieldId >= FIELD_IDS_MAX) {
            f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        unsigned long long n = device->field_calls[f->fieldId]++;
        __atomic_fetch_add(&field_calls_total[f->fieldId], 1, __ATOMIC_RELAXED);
        int nvlink = f->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ||
                     f->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
        if (nvlink && f->scopeId != NVML_FI_SCOPE_ALL_LINKS) {
            f->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT; /* only the all-links sum is scripted */
            continue;
        }
        f->nvmlReturn = series_ull(device->samples, key, n, &v);
        if (f->nvmlReturn == NVML_SUCCESS) field_store(f, device->spec, key, v);
    }
    return NVML_SUCCESS;
}

/* Writes one call's process list with entries of stride bytes. */
static nvmlReturn_t processes(int fn, const char *key, size_t stride, nvmlDevice_t device,
                              unsigned int *count, void *infos) {
    unsigned long long k;
    nvmlReturn_t r = enter(fn, device, &k);
    if (r != NVML_SUCCESS) return r;
    json_t *series = device->samples ? json_object_get(device->samples, key) : NULL;
    if (series == NULL) return NVML_ERROR_NOT_SUPPORTED;
    json_t *list = element(series, k);
    if (!json_is_array(list)) return NVML_ERROR_UNKNOWN;
    size_t n = json_array_size(list);
    if (count == NULL || (n > 0 && infos == NULL) || *count < n) {
        if (count) *count = (unsigned int)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *entry = json_array_get(list, i);
        unsigned char raw[sizeof(nvmlProcessInfo_v3_535_t)];
        nvmlProcessInfo_v3_535_t p;
        memset(&p, 0, sizeof p);
        p.pid = (unsigned int)json_integer_value(json_array_get(entry, 0));
        json_t *used = json_array_get(entry, 1);
        p.usedGpuMemory = json_is_integer(used) ? (unsigned long long)json_integer_value(used)
                                                : NVML_VALUE_NOT_AVAILABLE_ULL;
        p.gpuInstanceId = p.computeInstanceId = device->parent ? device->gi : 0xFFFFFFFFu;
        memcpy(raw, &p, sizeof p);
        memcpy((unsigned char *)infos + i * stride, raw, stride);
    }
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *samples,
                                             unsigned int *count, unsigned long long last_seen_us) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceGetProcessUtilization, device, &k);
    if (r != NVML_SUCCESS) return r;
    json_t *series = device->samples ? json_object_get(device->samples, "proc_util") : NULL;
    if (series == NULL) return NVML_ERROR_NOT_SUPPORTED;
    json_t *list = element(series, k);
    if (!json_is_array(list)) return NVML_ERROR_UNKNOWN;
    size_t n = json_array_size(list);
    if (n == 0) return NVML_ERROR_NOT_FOUND;
    if (count == NULL || samples == NULL || *count < n) {
        if (count) *count = (unsigned int)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *entry = json_array_get(list, i);
        memset(&samples[i], 0, sizeof samples[i]);
        samples[i].pid = (unsigned int)json_integer_value(json_array_get(entry, 0));
        samples[i].timeStamp = last_seen_us + 1 + i;
        samples[i].smUtil = (unsigned int)json_integer_value(json_array_get(entry, 1));
        samples[i].memUtil = (unsigned int)json_integer_value(json_array_get(entry, 2));
    }
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
static size_t v3_stride(void) {
    return spec_int(script, "process_v3_stride", 24) == 32 ? sizeof(nvmlProcessInfo_v3_535_t)
                                                           : sizeof(nvmlProcessInfo_v2_t);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                     void *infos) {
    return processes(FN_nvmlDeviceGetComputeRunningProcesses_v3, "procs", script ? v3_stride() : 24,
                     d, count, infos);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *count,
                                                     void *infos) {
    return processes(FN_nvmlDeviceGetComputeRunningProcesses_v2, "procs",
                     sizeof(nvmlProcessInfo_v2_t), d, count, infos);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                      void *infos) {
    return processes(FN_nvmlDeviceGetGraphicsRunningProcesses_v3, "graphics_procs",
                     script ? v3_stride() : 24, d, count, infos);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned int *count,
                                                      void *infos) {
    return processes(FN_nvmlDeviceGetGraphicsRunningProcesses_v2, "graphics_procs",
                     sizeof(nvmlProcessInfo_v2_t), d, count, infos);
}
#endif
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *count,
                                                  void *infos) {
    return processes(FN_nvmlDeviceGetComputeRunningProcesses, "procs", sizeof(nvmlProcessInfo_v1_t),
                     d, count, infos);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned int *count,
                                                   void *infos) {
    return processes(FN_nvmlDeviceGetGraphicsRunningProcesses, "graphics_procs",
                     sizeof(nvmlProcessInfo_v1_t), d, count, infos);
}

/* ---------------------------------------------------------------------- */
/* GPM                                                                      */
/* ---------------------------------------------------------------------- */

#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *support) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlGpmQueryDeviceSupport, device, &k);
    if (r != NVML_SUCCESS) return r;
    if (support == NULL || support->version != NVML_GPM_SUPPORT_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    support->isSupportedDevice = json_is_true(json_object_get(device->spec, "gpm")) ? 1 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *sample) {
    nvmlReturn_t r = enter_global(FN_nvmlGpmSampleAlloc);
    if (r != NVML_SUCCESS) return r;
    nvmlGpmSample_t s = calloc(1, sizeof *s);
    if (s == NULL) return NVML_ERROR_UNKNOWN;
    s->magic = GPM_MAGIC;
    *sample = s;
    __atomic_fetch_add(&gpm_live, 1, __ATOMIC_RELAXED);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
    __atomic_fetch_add(&calls_total[FN_nvmlGpmSampleFree], 1, __ATOMIC_RELAXED);
    if (sample == NULL || sample->magic != GPM_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
    sample->magic = 0;
    free(sample);
    __atomic_fetch_sub(&gpm_live, 1, __ATOMIC_RELAXED);
    return NVML_SUCCESS;
}

static nvmlReturn_t take(struct nvmlDevice_st *owner, nvmlGpmSample_t sample) {
    if (sample == NULL || sample->magic != GPM_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
    if (!json_is_true(json_object_get(owner->parent ? owner->parent->spec : owner->spec, "gpm")))
        return NVML_ERROR_NOT_SUPPORTED;
    sample->owner = owner;
    sample->seq = owner->gpm_taken++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlGpmSampleGet, device, &k);
    if (r != NVML_SUCCESS) return r;
    if (device->parent)
        return NVML_ERROR_INVALID_ARGUMENT; /* MIG devices go through nvmlGpmMigSampleGet */
    return take(device, sample);
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpu_instance_id,
                                 nvmlGpmSample_t sample) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlGpmMigSampleGet, device, &k);
    if (r != NVML_SUCCESS) return r;
    if (device->parent) return NVML_ERROR_INVALID_ARGUMENT; /* takes the parent GPU's handle */
    for (int i = 0; i < nmigs; i++)
        if (migs[i].parent == device && migs[i].gi == gpu_instance_id)
            return migs[i].lost ? NVML_ERROR_GPU_IS_LOST : take(&migs[i], sample);
    return NVML_ERROR_NOT_FOUND;
}

static const char *gpm_key(unsigned int id) {
    switch (id) {
    case NVML_GPM_METRIC_SM_UTIL: return "sm_util";
    case NVML_GPM_METRIC_SM_OCCUPANCY: return "sm_occupancy";
    case NVML_GPM_METRIC_ANY_TENSOR_UTIL: return "tensor";
    case NVML_GPM_METRIC_DRAM_BW_UTIL: return "dram_bw";
    case NVML_GPM_METRIC_PCIE_TX_PER_SEC: return "pcie_tx_mib";
    case NVML_GPM_METRIC_PCIE_RX_PER_SEC: return "pcie_rx_mib";
    case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: return "nvlink_tx_mib";
    case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: return "nvlink_rx_mib";
    default: return NULL;
    }
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *q) {
    nvmlReturn_t r = enter_global(FN_nvmlGpmMetricsGet);
    if (r != NVML_SUCCESS) return r;
    if (q == NULL || q->version != NVML_GPM_METRICS_GET_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (q->numMetrics == 0 || q->numMetrics > NVML_GPM_METRIC_MAX || !q->sample1 || !q->sample2 ||
        q->sample1->magic != GPM_MAGIC || q->sample2->magic != GPM_MAGIC || !q->sample1->owner ||
        q->sample1->owner != q->sample2->owner || q->sample2->seq <= q->sample1->seq)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlDevice_st *owner = q->sample1->owner;
    if (owner->lost) return NVML_ERROR_GPU_IS_LOST;
    json_t *gpm = owner->samples ? json_object_get(owner->samples, "gpm") : NULL;
    for (unsigned int i = 0; i < q->numMetrics; i++) {
        nvmlGpmMetric_t *m = &q->metrics[i];
        const char *key = gpm_key(m->metricId);
        m->value = 0;
        m->nvmlReturn =
            key ? series_double(gpm, key, q->sample1->seq, &m->value) : NVML_ERROR_NOT_SUPPORTED;
    }
    return NVML_SUCCESS;
}
#endif

/* ---------------------------------------------------------------------- */
/* Events (not in the old driver)                                           */
/* ---------------------------------------------------------------------- */

#ifndef FAKE_NVML_OLD
#define EVENT_SET_MAGIC 0x65767473u

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    nvmlReturn_t r = enter_global(FN_nvmlEventSetCreate);
    if (r != NVML_SUCCESS) return r;
    if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *set = malloc(sizeof **set); /* malloc: a set never freed shows as a leak */
    if (*set == NULL) return NVML_ERROR_UNKNOWN;
    (*set)->magic = EVENT_SET_MAGIC;
    event_sets_live++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    __atomic_fetch_add(&calls_total[FN_nvmlEventSetFree], 1, __ATOMIC_RELAXED);
    if (set == NULL || set->magic != EVENT_SET_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].events == set) gpus[i].events = NULL;
    set->magic = 0;
    free(set);
    event_sets_live--;
    return NVML_SUCCESS;
}

/* Whole GPUs only; a GPU listed under "not_supported" refuses. */
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long event_types,
                                      nvmlEventSet_t set) {
    unsigned long long k;
    nvmlReturn_t r = enter(FN_nvmlDeviceRegisterEvents, device, &k);
    if (r != NVML_SUCCESS) return r;
    if (set == NULL || set->magic != EVENT_SET_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
    if (device->parent != NULL || !(event_types & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
        return NVML_ERROR_NOT_SUPPORTED;
    device->events = set;
    return NVML_SUCCESS;
}

/* The first scripted XID due and not yet delivered on a GPU of set. */
static nvmlReturn_t event_wait(int fn, nvmlEventSet_t set, nvmlEventData_t *data, size_t bytes) {
    nvmlReturn_t r = enter_global(fn);
    if (r != NVML_SUCCESS) return r;
    if (set == NULL || set->magic != EVENT_SET_MAGIC || data == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < ngpus; i++) {
        struct nvmlDevice_st *d = &gpus[i];
        json_t *xids = json_object_get(d->spec, "xids");
        if (d->events != set) continue;
        for (size_t j = 0; j < json_array_size(xids) && j < 64; j++) {
            json_t *x = json_array_get(xids, j);
            long long due = json_integer_value(json_array_get(x, 0));
            json_t *gi = json_array_get(x, 2), *ci = json_array_get(x, 3);
            if ((d->xids_delivered >> j) & 1 || d->memory_calls < 1 ||
                (long long)d->memory_calls - 1 < due)
                continue;
            d->xids_delivered |= 1ull << j;
            nvmlEventData_t e = {
                .device = d,
                .eventType = NVML_EVENT_TYPE_XID_CRITICAL_ERROR,
                .eventData = (unsigned long long)json_integer_value(json_array_get(x, 1)),
                .gpuInstanceId = gi ? (unsigned int)json_integer_value(gi) : ~0u,
                .computeInstanceId = ci ? (unsigned int)json_integer_value(ci) : ~0u};
            memcpy(data, &e, bytes);
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_TIMEOUT; /* never waits, whatever the timeout */
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                 unsigned int timeout_ms) {
    (void)timeout_ms;
    return event_wait(FN_nvmlEventSetWait_v2, set, data, sizeof *data);
}

/* v1 writes the data up to eventData: no instance ids. */
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
    (void)timeout_ms;
    return event_wait(FN_nvmlEventSetWait, set, data, offsetof(nvmlEventData_t, gpuInstanceId));
}
#endif

/* ---------------------------------------------------------------------- */
/* For the tests                                                            */
/* ---------------------------------------------------------------------- */

unsigned long long fake_nvml_calls(const char *name) {
    for (int i = 0; i < FN_COUNT; i++)
        if (strcmp(function_names[i], name) == 0)
            return __atomic_load_n(&calls_total[i], __ATOMIC_RELAXED);
    return 0;
}

/* Times a field id was asked for, over all devices, since the last nvmlInit
 * (kept past nvmlShutdown until the next one). */
unsigned long long fake_nvml_field_calls(unsigned int field_id) {
    return field_id < FIELD_IDS_MAX
               ? __atomic_load_n(&field_calls_total[field_id], __ATOMIC_RELAXED)
               : 0;
}

unsigned long long fake_nvml_total_calls(void) {
    unsigned long long total = 0;
    for (int i = 0; i < FN_COUNT; i++) total += __atomic_load_n(&calls_total[i], __ATOMIC_RELAXED);
    return total;
}

long fake_nvml_gpm_live(void) { return __atomic_load_n(&gpm_live, __ATOMIC_RELAXED); }

long fake_nvml_event_sets_live(void) { return event_sets_live; }

int fake_nvml_refcount(void) { return refcount; }
