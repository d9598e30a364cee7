// SPDX-License-Identifier: Apache-2.0
// probe_util.cuh: the helpers the standalone CUPTI probes of tests/gpu share
// (pc_sampling_probe, sass_metrics_probe, sass_metrics_seq, range_profiler_probe):
// JSON writers for their stdout lines, the names of CUPTI results, the
// *_CHECK macros and the "cannot run here" exit (status 3), the profiler's
// set-up steps, and the SASS Metrics calls both SASS programs make.
//
// Header-only, for programs of one translation unit that link CUPTI and the
// driver directly (nothing of gpufl). Each probe defines PROBE_NAME, the
// program name its stderr messages start with, before including it:
//   #define PROBE_NAME "sass_metrics_probe"
//   #include "probe_util.cuh"
#ifndef GPUFL_TESTS_GPU_PROBE_UTIL_CUH
#define GPUFL_TESTS_GPU_PROBE_UTIL_CUH

#ifndef PROBE_NAME
#error "define PROBE_NAME (the program name for messages) before including probe_util.cuh"
#endif

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// ---- JSON on stdout -------------------------------------------------------------

// A C string as a JSON string; null prints as "".
static inline void json_string(const char *s) {
    std::putchar('"');
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            std::printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            std::printf("\\u%04x", (unsigned char)*s);
        else
            std::putchar(*s);
    }
    std::putchar('"');
}

// A double as JSON with that many significant digits: null when not finite (a
// ratio with a zero denominator, NaN from a failed evaluation).
static inline void json_num(double v, int digits = 10) {
    if (std::isfinite(v))
        std::printf("%.*g", digits, v);
    else
        std::printf("null");
}

static inline void json_string_list(const std::vector<std::string> &v) {
    std::putchar('[');
    for (size_t i = 0; i < v.size(); i++) {
        if (i) std::putchar(',');
        json_string(v[i].c_str());
    }
    std::putchar(']');
}

static inline double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// ---- CUPTI results and failures -------------------------------------------------

// Results that mean "the profiler cannot run here" rather than a bug in the
// probe: the runners tell them apart by exit status 3.
static inline const char *unsupported_name(CUptiResult r) {
    switch (r) {
    case CUPTI_ERROR_NOT_SUPPORTED: return "CUPTI_ERROR_NOT_SUPPORTED";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
        return "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED";
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
        return "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED";
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED: return "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED";
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED: return "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED";
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED: return "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED";
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED: return "CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED";
    default: return nullptr;
    }
}

static inline const char *result_string(CUptiResult r) {
    const char *s = nullptr;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) s = "?";
    return s;
}

static inline const char *result_message(CUptiResult r) {
    const char *s = nullptr;
    if (cuptiGetErrorMessage(r, &s) != CUPTI_SUCCESS || !s) s = "";
    return s;
}

// One line {"error":NAME,"call":...,"code":...,"message":...}, then status 3.
[[noreturn]] static inline void unsupported_exit(const char *name, const char *call, int code,
                                                 const char *message) {
    std::printf("{\"error\":");
    json_string(name);
    std::printf(",\"call\":");
    json_string(call);
    std::printf(",\"code\":%d,\"message\":", code);
    json_string(message);
    std::printf("}\n");
    std::fflush(stdout);
    std::exit(3);
}

// "Cannot run here" ends the probe with status 3 (unsupported_exit); any
// other failure names the call on stderr and ends it with status 1.
static inline void cupti_check(CUptiResult r, const char *call) {
    if (r == CUPTI_SUCCESS) return;
    if (const char *name = unsupported_name(r))
        unsupported_exit(name, call, (int)r, result_message(r));
    std::fflush(stdout);
    std::fprintf(stderr, PROBE_NAME ": %s failed: %s (%d) %s\n", call, result_string(r), (int)r,
                 result_message(r));
    std::exit(1);
}

// pc_sampling_probe's convention, older than status 3: every CUPTI failure,
// "cannot run here" included, ends the probe with status 1.
static inline void cupti_check_status1(CUptiResult r, const char *call) {
    if (r == CUPTI_SUCCESS) return;
    std::fprintf(stderr, PROBE_NAME ": %s failed: %s (%d)\n", call, result_string(r), (int)r);
    std::exit(1);
}

#define CUPTI_CHECK(call)         cupti_check((call), #call)
#define CUPTI_CHECK_STATUS1(call) cupti_check_status1((call), #call)
// For the probes' small wrappers: the message names the CUPTI function.
#define CUPTI_CHECK_AS(call, name) cupti_check((call), name)

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fflush(stdout);                                                                   \
            std::fprintf(stderr, PROBE_NAME ": %s failed: %s\n", #call, cudaGetErrorString(e_));   \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

#define CU_CHECK(call)                                                                             \
    do {                                                                                           \
        CUresult c_ = (call);                                                                      \
        if (c_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = nullptr;                                                              \
            cuGetErrorString(c_, &s_);                                                             \
            std::fflush(stdout);                                                                   \
            std::fprintf(stderr, PROBE_NAME ": %s failed: %s\n", #call, s_ ? s_ : "?");            \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

// ---- the context ------------------------------------------------------------------

// The runtime's primary context for device 0 (made current; CUPTI wants its
// handle), with the device's properties in *out.
static inline CUcontext primary_context(cudaDeviceProp *out) {
    cudaDeviceProp &prop = *out;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(0));
    CUcontext ctx = nullptr;
    CU_CHECK(cuCtxGetCurrent(&ctx));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    return ctx;
}

// ---- the profiler's set-up (range profiler and SASS metrics) -------------------

static inline void profiler_initialize() {
    CUpti_Profiler_Initialize_Params p = {};
    p.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
    CUPTI_CHECK(cuptiProfilerInitialize(&p));
}

static inline void profiler_deinitialize() {
    CUpti_Profiler_DeInitialize_Params p = {};
    p.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE;
    CUPTI_CHECK(cuptiProfilerDeInitialize(&p));
}

// cuptiProfilerDeviceSupported for device 0 and one API (api_name is the
// enum constant's name): prints a "device_supported" line, and ends the probe
// with status 3 and unsupported_message when the API cannot run.
static inline void profiler_check_device_supported(CUpti_Profiler_API api, const char *api_name,
                                                   double profiler_init_ms,
                                                   const char *unsupported_message) {
    CUpti_Profiler_DeviceSupported_Params p = {};
    p.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
    p.cuDevice = 0;
    p.api = api;
    CUPTI_CHECK(cuptiProfilerDeviceSupported(&p));
    std::printf("{\"kind\":\"device_supported\",\"api\":\"%s\","
                "\"is_supported\":%d,\"architecture\":%d,\"sli\":%d,\"vgpu\":%d,"
                "\"confidential_compute\":%d,\"cmp\":%d,\"wsl\":%d,"
                "\"levels\":\"0 unknown, 1 unsupported, 2 disabled, 3 supported\","
                "\"profiler_initialize_ms\":%.3f}\n",
                api_name, (int)p.isSupported, (int)p.architecture, (int)p.sli, (int)p.vGpu,
                (int)p.confidentialCompute, (int)p.cmp, (int)p.wsl, profiler_init_ms);
    std::fflush(stdout);
    if (p.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
        std::string call = std::string("cuptiProfilerDeviceSupported(") + api_name + ")";
        unsupported_exit("CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED", call.c_str(), 0,
                         unsupported_message);
    }
}

// The chip name of device 0 (CUPTI's string, never freed).
static inline const char *chip_name_of_device0() {
    CUpti_Device_GetChipName_Params p = {};
    p.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    p.deviceIndex = 0;
    CUPTI_CHECK(cuptiDeviceGetChipName(&p));
    return p.pChipName;
}

// ---- SASS metrics (sass_metrics_probe, sass_metrics_seq) ------------------------
// The wrappers return CUPTI's result: what a failure does is the caller's.

static inline CUptiResult
sass_metrics_set_config(const std::vector<CUpti_SassMetrics_Config> &cfg) {
    CUpti_SassMetricsSetConfig_Params p = {};
    p.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE;
    p.numOfMetricConfig = cfg.size();
    p.pConfigs = const_cast<CUpti_SassMetrics_Config *>(cfg.data());
    p.deviceIndex = 0;
    return cuptiSassMetricsSetConfig(&p);
}

static inline CUptiResult sass_metrics_unset_config() {
    CUpti_SassMetricsUnsetConfig_Params p = {};
    p.structSize = CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE;
    p.deviceIndex = 0;
    return cuptiSassMetricsUnsetConfig(&p);
}

static inline CUptiResult sass_metrics_enable(CUcontext ctx, bool lazy) {
    CUpti_SassMetricsEnable_Params p = {};
    p.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE;
    p.ctx = ctx;
    p.enableLazyPatching = lazy ? 1 : 0;
    return cuptiSassMetricsEnable(&p);
}

static inline CUptiResult sass_metrics_disable(CUcontext ctx, size_t *dropped) {
    CUpti_SassMetricsDisable_Params p = {};
    p.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE;
    p.ctx = ctx;
    CUptiResult r = cuptiSassMetricsDisable(&p);
    if (dropped) *dropped = p.numOfDroppedRecords;
    return r;
}

// One flush of a context's SASS metrics: GetDataProperties says how many
// patched-instruction records and instances per record there are, FlushData
// fills data, each record pointing at its instances values in values. CUPTI
// allocates each record's functionName; the probes do not free it (they are
// short-lived processes).
struct SassMetricsFlush {
    size_t records = 0, instances = 0;
    std::vector<CUpti_SassMetrics_Data> data;
    std::vector<CUpti_SassMetrics_InstanceValue> values;
    double properties_ms = 0, flush_ms = 0;
};

static inline CUptiResult sass_metrics_get_data_properties(CUcontext ctx, SassMetricsFlush *f) {
    CUpti_SassMetricsGetDataProperties_Params dp = {};
    dp.structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE;
    dp.ctx = ctx;
    double t0 = now_ms();
    CUptiResult r = cuptiSassMetricsGetDataProperties(&dp);
    f->properties_ms = now_ms() - t0;
    if (r != CUPTI_SUCCESS) return r;
    f->records = dp.numOfPatchedInstructionRecords;
    f->instances = dp.numOfInstances;
    return r;
}

// After sass_metrics_get_data_properties: nothing to do (and no call) when it
// reported no records or no instances.
static inline CUptiResult sass_metrics_flush_data(CUcontext ctx, SassMetricsFlush *f) {
    size_t n = f->records, inst = f->instances;
    f->flush_ms = 0;
    if (n == 0 || inst == 0) return CUPTI_SUCCESS;
    f->data.assign(n, CUpti_SassMetrics_Data{});
    f->values.assign(n * inst, CUpti_SassMetrics_InstanceValue{});
    for (size_t i = 0; i < n; i++) {
        // hdr:373 says "equal to CUpti_SassMetricsFlushData_Params_STRUCT_SIZE";
        // the struct's own size is what other users set.
        f->data[i].structSize = sizeof(CUpti_SassMetrics_Data);
        f->data[i].pInstanceValues = &f->values[i * inst];
    }
    CUpti_SassMetricsFlushData_Params fp = {};
    fp.structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE;
    fp.ctx = ctx;
    fp.numOfPatchedInstructionRecords = n;
    fp.numOfInstances = inst;
    fp.pMetricsData = f->data.data();
    double t0 = now_ms();
    CUptiResult r = cuptiSassMetricsFlushData(&fp);
    f->flush_ms = now_ms() - t0;
    return r;
}

#endif
