// SPDX-License-Identifier: Apache-2.0
/*
 * nvml_api.h - our own minimal declarations of the NVML C API: only the
 * types, constants and function signatures that nvml.c loads with dlopen
 * (and the test fake exports). Values and layouts are NVML's ABI facts.
 *
 * Functions are declared as function TYPES (nvml_..._fn), never as symbols:
 * nvml.c holds pointers to them, and the fake declares its exports with them
 * so a signature that drifts from ours fails to compile. Struct sizes are
 * checked for LP64 (x86-64, aarch64), the only targets that ship NVML.
 */
#ifndef GPUFL_NVIDIA_NVML_API_H
#define GPUFL_NVIDIA_NVML_API_H

/* ---------------------------------------------------------------------- */
/* Return codes                                                             */
/* ---------------------------------------------------------------------- */

typedef unsigned int nvmlReturn_t; /* an NVML status; 0 is success */

#define NVML_SUCCESS                       0u  /* the call worked */
#define NVML_ERROR_UNINITIALIZED           1u  /* nvmlInit was not called (or failed) */
#define NVML_ERROR_INVALID_ARGUMENT        2u  /* bad argument, e.g. a link index past the last */
#define NVML_ERROR_NOT_SUPPORTED           3u  /* the device cannot answer this query */
#define NVML_ERROR_NO_PERMISSION           4u  /* the caller may not ask this */
#define NVML_ERROR_NOT_FOUND               6u  /* no such object (an empty MIG slot) */
#define NVML_ERROR_INSUFFICIENT_SIZE       7u  /* the buffer given is too small */
#define NVML_ERROR_DRIVER_NOT_LOADED       9u  /* the kernel driver is not running */
#define NVML_ERROR_TIMEOUT                 10u /* the driver did not answer in time */
#define NVML_ERROR_LIBRARY_NOT_FOUND       12u /* NVML could not load a library it needs */
#define NVML_ERROR_FUNCTION_NOT_FOUND      13u /* the driver lacks this entry point */
#define NVML_ERROR_GPU_IS_LOST             15u /* the GPU fell off the bus or stopped answering */
#define NVML_ERROR_RESET_REQUIRED          16u /* the GPU needs a reset */
#define NVML_ERROR_LIB_RM_VERSION_MISMATCH 18u /* libnvidia-ml and the kernel module differ */
#define NVML_ERROR_NO_DATA                 21u /* nothing to report yet */
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH                                                       \
    25u                         /* a versioned struct has a version the driver does not know */
#define NVML_ERROR_UNKNOWN 999u /* anything else */

/* ---------------------------------------------------------------------- */
/* Handles and small enums                                                  */
/* ---------------------------------------------------------------------- */

typedef struct nvmlDevice_st *nvmlDevice_t;       /* a GPU or MIG device, owned by NVML */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t; /* a GPM snapshot, from nvmlGpmSampleAlloc */
typedef struct nvmlEventSet_st *nvmlEventSet_t;   /* a set of registered events, owned by NVML */

typedef unsigned int nvmlEnableState_t; /* NVML_FEATURE_DISABLED / _ENABLED */
#define NVML_FEATURE_DISABLED 0u        /* off */
#define NVML_FEATURE_ENABLED  1u        /* on */

#define NVML_TEMPERATURE_GPU 0u /* nvmlTemperatureSensors_t: the GPU die */

#define NVML_CLOCK_GRAPHICS 0u /* nvmlClockType_t: graphics clock */
#define NVML_CLOCK_SM       1u /* nvmlClockType_t: SM clock */
#define NVML_CLOCK_MEM      2u /* nvmlClockType_t: memory clock */

#define NVML_MEMORY_ERROR_TYPE_CORRECTED   0u /* nvmlMemoryErrorType_t: single-bit, corrected */
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1u /* nvmlMemoryErrorType_t: double-bit, uncorrected */
#define NVML_VOLATILE_ECC                  0u /* nvmlEccCounterType_t: since the driver loaded */
#define NVML_AGGREGATE_ECC                 1u /* nvmlEccCounterType_t: over the board's life */

#define NVML_DEVICE_MIG_DISABLE 0u /* nvmlDeviceGetMigMode: MIG off */
#define NVML_DEVICE_MIG_ENABLE  1u /* nvmlDeviceGetMigMode: MIG on */

#define NVML_NVLINK_MAX_LINKS 18u /* links numbered 0 .. 17 */

/* Buffer sizes NVML documents as always large enough. */
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96u /* nvmlDeviceGetName */
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96u /* nvmlDeviceGetUUID */
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80u /* nvmlSystemGetDriverVersion */
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80u /* nvmlSystemGetNVMLVersion */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32u /* nvmlPciInfo_t.busId */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16u /* nvmlPciInfo_t.busIdLegacy */

/* NVML reports "no value" (e.g. a process's memory under WDDM) as all ones. */
#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ull)

/* ---------------------------------------------------------------------- */
/* Clock event (throttle) reasons: bits of nvmlDeviceGetCurrentClocksEventReasons */
/* ---------------------------------------------------------------------- */

#define NVML_CLOCKS_EVENT_REASON_GPU_IDLE            0x1ull /* nothing runs, clocks drop */
#define NVML_CLOCKS_EVENT_REASON_APPLICATIONS_CLOCKS 0x2ull /* application clocks setting */
#define NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP        0x4ull /* the power limit holds clocks down */
#define NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN         0x8ull /* hardware slowdown (thermal or power brake) */
#define NVML_CLOCKS_EVENT_REASON_SYNC_BOOST          0x10ull /* held to the clocks of a sync-boost group */
#define NVML_CLOCKS_EVENT_REASON_SW_THERMAL_SLOWDOWN                                               \
    0x20ull /* the driver cools the GPU or memory */
#define NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN     0x40ull /* the hardware cools the GPU */
#define NVML_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN 0x80ull /* external power brake asserted */
#define NVML_CLOCKS_EVENT_REASON_DISPLAY_CLOCK_SETTING   0x100ull /* display clock setting */

/* ---------------------------------------------------------------------- */
/* Field values (nvmlDeviceGetFieldValues)                                  */
/* ---------------------------------------------------------------------- */

#define NVML_FI_DEV_ECC_CURRENT               1u /* ECC mode now (1 on) */
#define NVML_FI_DEV_ECC_SBE_VOL_TOTAL         3u /* corrected ECC errors since the driver loaded */
#define NVML_FI_DEV_ECC_DBE_VOL_TOTAL         4u /* uncorrected ECC errors since the driver loaded */
#define NVML_FI_DEV_MEMORY_TEMP               82u  /* memory temperature, degrees C */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138u /* NVLink payload sent, KiB, cumulative */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139u /* NVLink payload received, KiB, cumulative */
#define NVML_FI_DEV_PCIE_COUNT_TX_BYTES       197u /* PCIe bytes sent, cumulative */
#define NVML_FI_DEV_PCIE_COUNT_RX_BYTES       198u /* PCIe bytes received, cumulative */

/* scopeId for the NVLink fields: the sum over all links (else a link index). */
#define NVML_FI_SCOPE_ALL_LINKS 0xFFFFFFFFu

#define NVML_VALUE_TYPE_DOUBLE             0u /* value.dVal */
#define NVML_VALUE_TYPE_UNSIGNED_INT       1u /* value.uiVal */
#define NVML_VALUE_TYPE_UNSIGNED_LONG      2u /* value.ulVal */
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3u /* value.ullVal */
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG   4u /* value.sllVal */
#define NVML_VALUE_TYPE_SIGNED_INT         5u /* value.siVal (newer drivers) */
#define NVML_VALUE_TYPE_UNSIGNED_SHORT     6u /* value.usVal (newer drivers) */

/* One value of any NVML type; valueType says which member is set. */
typedef union nvmlValue_st {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
} nvmlValue_t;

/* One field to read: the caller sets fieldId and scopeId, NVML the rest. */
typedef struct nvmlFieldValue_st {
    unsigned int fieldId;    /* NVML_FI_* */
    unsigned int scopeId;    /* link index, or NVML_FI_SCOPE_ALL_LINKS */
    long long timestamp;     /* microseconds since 1970 when read */
    long long latencyUsec;   /* how long the read took */
    unsigned int valueType;  /* NVML_VALUE_TYPE_* */
    nvmlReturn_t nvmlReturn; /* this field's own status */
    nvmlValue_t value;
} nvmlFieldValue_t;

/* ---------------------------------------------------------------------- */
/* Structs                                                                  */
/* ---------------------------------------------------------------------- */

/* nvmlDeviceGetUtilizationRates: percent of the last sample period busy. */
typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* a kernel was running */
    unsigned int memory; /* device memory was read or written */
} nvmlUtilization_t;

/* nvmlDeviceGetMemoryInfo (v1): used includes the driver's reserved memory. */
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

/* nvmlDeviceGetMemoryInfo_v2: reserved is apart from used (as nvidia-smi shows). */
typedef struct nvmlMemory_v2_st {
    unsigned int version; /* must be NVML_MEMORY_V2_VERSION */
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

/* NVML's struct versions: the struct's size with the version in the top byte. */
#define NVML_STRUCT_VERSION_OF(size, ver) ((unsigned int)(size) | ((unsigned int)(ver) << 24))
#define NVML_MEMORY_V2_VERSION            NVML_STRUCT_VERSION_OF(sizeof(nvmlMemory_v2_t), 2)

/* nvmlDeviceGetPciInfo_v3/_v2. The v1 call writes the same first 36 bytes
 * (its 16-byte bus id, then domain .. pciSubSystemId) and no busId. */
typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "0000:1B:00.0" */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId; /* device id << 16 | vendor id */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:1B:00.0" */
} nvmlPciInfo_t;

/* A running process, as the un-suffixed *RunningProcesses calls write it. */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes, or NVML_VALUE_NOT_AVAILABLE_ULL */
} nvmlProcessInfo_v1_t;

/* As the _v2 calls write it, and the _v3 calls of most drivers. */
typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes, or NVML_VALUE_NOT_AVAILABLE_ULL */
    unsigned int gpuInstanceId;       /* MIG GPU instance, all ones without MIG */
    unsigned int computeInstanceId;   /* MIG compute instance, all ones without MIG */
} nvmlProcessInfo_v2_t;

/* As the _v3 calls of drivers 535.43 to 535.86 wrote it (one more member,
 * no new symbol): nvml.c measures which one a driver writes. */
typedef struct nvmlProcessInfo_v3_535_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory; /* confidential-computing memory */
} nvmlProcessInfo_v3_535_t;

/* nvmlDeviceGetProcessUtilization: one sample of one process over the driver's sampling
 * period; timeStamp is CPU time in microseconds since the Unix epoch. */
typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil;  /* % of the period a kernel of the process ran */
    unsigned int memUtil; /* % of the period its memory was read or written */
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

/* nvmlDeviceGetAttributes(_v2): engine counts of a GPU or a MIG device. */
typedef struct nvmlDeviceAttributes_st {
    unsigned int multiprocessorCount; /* SMs (of the MIG instance, for MIG) */
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    unsigned int gpuInstanceSliceCount;
    unsigned int computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

/* ---------------------------------------------------------------------- */
/* GPM (GPU performance monitoring, Hopper and newer)                       */
/* ---------------------------------------------------------------------- */

#define NVML_GPM_SUPPORT_VERSION     1u  /* nvmlGpmSupport_t.version */
#define NVML_GPM_METRICS_GET_VERSION 1u  /* nvmlGpmMetricsGet_t.version */
#define NVML_GPM_METRIC_MAX          98u /* metrics[] entries in version 1 */

#define NVML_GPM_METRIC_SM_UTIL                 2u /* percent of time SMs had a warp resident */
#define NVML_GPM_METRIC_SM_OCCUPANCY            3u /* resident warps, percent of the SMs' maximum */
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL         5u /* percent of time any tensor pipe was busy */
#define NVML_GPM_METRIC_DRAM_BW_UTIL            10u /* DRAM bandwidth, percent of the maximum */
#define NVML_GPM_METRIC_PCIE_TX_PER_SEC         20u /* PCIe sent, MiB/s */
#define NVML_GPM_METRIC_PCIE_RX_PER_SEC         21u /* PCIe received, MiB/s */
#define NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC 60u /* NVLink received over all links, MiB/s */
#define NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC 61u /* NVLink sent over all links, MiB/s */

/* nvmlGpmQueryDeviceSupport. */
typedef struct nvmlGpmSupport_st {
    unsigned int version;           /* NVML_GPM_SUPPORT_VERSION */
    unsigned int isSupportedDevice; /* 1 when GPM works on the device */
} nvmlGpmSupport_t;

/* One metric of a nvmlGpmMetricsGet request. */
typedef struct nvmlGpmMetric_st {
    unsigned int metricId;   /* NVML_GPM_METRIC_*, set by the caller */
    nvmlReturn_t nvmlReturn; /* this metric's own status */
    double value;
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo; /* NVML's names, owned by NVML */
} nvmlGpmMetric_t;

/* nvmlGpmMetricsGet: metrics over the interval between two samples. */
typedef struct nvmlGpmMetricsGet_st {
    unsigned int version;    /* NVML_GPM_METRICS_GET_VERSION */
    unsigned int numMetrics; /* entries of metrics[] used */
    nvmlGpmSample_t sample1; /* the earlier sample */
    nvmlGpmSample_t sample2; /* the later sample */
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

/* ---------------------------------------------------------------------- */
/* Events                                                                   */
/* ---------------------------------------------------------------------- */

#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ull /* nvmlEventTypeXidCriticalError */

/* nvmlEventSetWait_v2 fills all of it; nvmlEventSetWait (v1) only up to
 * eventData. The instance ids are all ones on a GPU without MIG. */
typedef struct nvmlEventData_st {
    nvmlDevice_t device;            /* the whole GPU the event came from */
    unsigned long long eventType;   /* NVML_EVENT_TYPE_* */
    unsigned long long eventData;   /* for an XID event: the XID code */
    unsigned int gpuInstanceId;     /* MIG GPU instance, all ones when none */
    unsigned int computeInstanceId; /* MIG compute instance, all ones when none */
} nvmlEventData_t;

_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t layout");
_Static_assert(sizeof(nvmlValue_t) == 8, "nvmlValue_t layout");
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t layout");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t layout");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t layout");
_Static_assert(NVML_MEMORY_V2_VERSION == 0x02000028u, "nvmlMemory_v2 version");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t layout");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t layout");
_Static_assert(sizeof(nvmlProcessInfo_v3_535_t) == 32, "nvmlProcessInfo_v3 (535) layout");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32,
               "nvmlProcessUtilizationSample_t layout");
_Static_assert(sizeof(nvmlDeviceAttributes_t) == 40, "nvmlDeviceAttributes_t layout");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t layout");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t layout");
_Static_assert(sizeof(nvmlGpmMetricsGet_t) == 24 + 40 * NVML_GPM_METRIC_MAX,
               "nvmlGpmMetricsGet_t layout");

/* ---------------------------------------------------------------------- */
/* Function types (each name: the symbols that have this signature)         */
/* ---------------------------------------------------------------------- */

/* nvmlInit_v2, nvmlInit, nvmlShutdown */
typedef nvmlReturn_t nvml_void_fn(void);
/* nvmlErrorString: a static string for a status */
typedef const char *nvml_error_string_fn(nvmlReturn_t result);
/* nvmlSystemGetDriverVersion, nvmlSystemGetNVMLVersion */
typedef nvmlReturn_t nvml_system_string_fn(char *version, unsigned int length);
/* nvmlSystemGetCudaDriverVersion_v2, nvmlSystemGetCudaDriverVersion: 13000 for 13.0 */
typedef nvmlReturn_t nvml_system_int_fn(int *value);
/* nvmlDeviceGetCount_v2, nvmlDeviceGetCount */
typedef nvmlReturn_t nvml_device_count_fn(unsigned int *count);
/* nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByIndex */
typedef nvmlReturn_t nvml_device_by_index_fn(unsigned int index, nvmlDevice_t *device);
/* nvmlDeviceGetName, nvmlDeviceGetUUID */
typedef nvmlReturn_t nvml_device_string_fn(nvmlDevice_t device, char *out, unsigned int length);
/* nvmlDeviceGetPciInfo_v3, _v2, nvmlDeviceGetPciInfo (v1 writes a prefix, see nvmlPciInfo_t) */
typedef nvmlReturn_t nvml_device_pci_fn(nvmlDevice_t device, nvmlPciInfo_t *pci);
/* nvmlDeviceGetCudaComputeCapability */
typedef nvmlReturn_t nvml_device_cc_fn(nvmlDevice_t device, int *major, int *minor);
/* nvmlDeviceGetAttributes_v2, nvmlDeviceGetAttributes */
typedef nvmlReturn_t nvml_device_attributes_fn(nvmlDevice_t device,
                                               nvmlDeviceAttributes_t *attributes);
/* nvmlDeviceGetMemoryInfo (v1) */
typedef nvmlReturn_t nvml_device_memory_fn(nvmlDevice_t device, nvmlMemory_t *memory);
/* nvmlDeviceGetMemoryInfo_v2 */
typedef nvmlReturn_t nvml_device_memory_v2_fn(nvmlDevice_t device, nvmlMemory_v2_t *memory);
/* nvmlDeviceGetMigMode: current and pending NVML_DEVICE_MIG_* */
typedef nvmlReturn_t nvml_device_mig_mode_fn(nvmlDevice_t device, unsigned int *current,
                                             unsigned int *pending);
/* nvmlDeviceGetEccMode: current and pending NVML_FEATURE_* */
typedef nvmlReturn_t nvml_device_ecc_mode_fn(nvmlDevice_t device, nvmlEnableState_t *current,
                                             nvmlEnableState_t *pending);
/* nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetGpuInstanceId, nvmlDeviceGetPowerUsage (mW),
 * nvmlDeviceGetEnforcedPowerLimit (mW), nvmlDeviceGetFanSpeed (percent),
 * nvmlDeviceGetNumGpuCores (CUDA cores) */
typedef nvmlReturn_t nvml_device_uint_fn(nvmlDevice_t device, unsigned int *value);
/* nvmlDeviceGetMigDeviceHandleByIndex: the MIG device in a parent's slot index */
typedef nvmlReturn_t nvml_device_mig_handle_fn(nvmlDevice_t device, unsigned int index,
                                               nvmlDevice_t *mig);
/* nvmlDeviceGetNvLinkState: whether link is active */
typedef nvmlReturn_t nvml_device_nvlink_state_fn(nvmlDevice_t device, unsigned int link,
                                                 nvmlEnableState_t *active);
/* nvmlDeviceGetUtilizationRates */
typedef nvmlReturn_t nvml_device_utilization_fn(nvmlDevice_t device,
                                                nvmlUtilization_t *utilization);
/* nvmlDeviceGetTemperature: degrees C of a sensor (NVML_TEMPERATURE_GPU) */
typedef nvmlReturn_t nvml_device_temperature_fn(nvmlDevice_t device, unsigned int sensor,
                                                unsigned int *celsius);
/* nvmlDeviceGetClockInfo: MHz of a clock (NVML_CLOCK_*) */
typedef nvmlReturn_t nvml_device_clock_fn(nvmlDevice_t device, unsigned int type,
                                          unsigned int *mhz);
/* nvmlDeviceGetCurrentClocksEventReasons, nvmlDeviceGetCurrentClocksThrottleReasons (older
 * name), nvmlDeviceGetTotalEnergyConsumption (mJ since the driver loaded) */
typedef nvmlReturn_t nvml_device_ull_fn(nvmlDevice_t device, unsigned long long *value);
/* nvmlDeviceGetFieldValues */
typedef nvmlReturn_t nvml_device_fields_fn(nvmlDevice_t device, int count,
                                           nvmlFieldValue_t *values);
/* nvmlDevice{Compute,Graphics}RunningProcesses{_v3,_v2,}: count is in/out (entries);
 * the entry layout depends on the symbol's version and the driver (see above) */
typedef nvmlReturn_t nvml_device_processes_fn(nvmlDevice_t device, unsigned int *count,
                                              void *infos);
/* nvmlDeviceGetProcessUtilization: count is in/out (samples); only samples newer than
 * last_seen_us; NVML_ERROR_NOT_FOUND when there are none */
typedef nvmlReturn_t nvml_device_process_util_fn(nvmlDevice_t device,
                                                 nvmlProcessUtilizationSample_t *samples,
                                                 unsigned int *count,
                                                 unsigned long long last_seen_us);
/* nvmlGpmQueryDeviceSupport */
typedef nvmlReturn_t nvml_gpm_support_fn(nvmlDevice_t device, nvmlGpmSupport_t *support);
/* nvmlGpmSampleAlloc */
typedef nvmlReturn_t nvml_gpm_alloc_fn(nvmlGpmSample_t *sample);
/* nvmlGpmSampleFree */
typedef nvmlReturn_t nvml_gpm_free_fn(nvmlGpmSample_t sample);
/* nvmlGpmSampleGet: snapshot a whole GPU's counters */
typedef nvmlReturn_t nvml_gpm_sample_get_fn(nvmlDevice_t device, nvmlGpmSample_t sample);
/* nvmlGpmMigSampleGet: snapshot one MIG GPU instance (parent GPU handle + GPU instance id) */
typedef nvmlReturn_t nvml_gpm_mig_sample_get_fn(nvmlDevice_t device, unsigned int gpu_instance_id,
                                                nvmlGpmSample_t sample);
/* nvmlGpmMetricsGet */
typedef nvmlReturn_t nvml_gpm_metrics_get_fn(nvmlGpmMetricsGet_t *request);
/* nvmlEventSetCreate */
typedef nvmlReturn_t nvml_event_set_create_fn(nvmlEventSet_t *set);
/* nvmlEventSetFree */
typedef nvmlReturn_t nvml_event_set_free_fn(nvmlEventSet_t set);
/* nvmlDeviceRegisterEvents: adds a whole GPU's events of the given types to set */
typedef nvmlReturn_t nvml_device_register_events_fn(nvmlDevice_t device,
                                                    unsigned long long event_types,
                                                    nvmlEventSet_t set);
/* nvmlEventSetWait_v2, nvmlEventSetWait: one event, or NVML_ERROR_TIMEOUT when none
 * came within timeout_ms (0: do not wait) */
typedef nvmlReturn_t nvml_event_set_wait_fn(nvmlEventSet_t set, nvmlEventData_t *data,
                                            unsigned int timeout_ms);

#endif
