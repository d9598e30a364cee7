// SPDX-License-Identifier: Apache-2.0
// sass_metrics_seq: runs a sequence of CUPTI SASS Metrics operations given on
// the command line, one letter per operation, so that one GPU session can try
// many call orders, each in a fresh process. It settles what the first probe
// (sass_metrics_probe.cu) could not: when patching takes effect, which
// functions a range covers, what a flush resets, and whether SASS metrics
// coexist with the PC Sampling API and with activity tracing
// (docs/design/sass-metrics.md, "Call-order runs").
//
// Usage: sass_metrics_seq LAUNCHES OPS
//   P  cuptiProfilerInitialize          C  SetConfig (GPU level; SEQ_METRICS
//   U  UnsetConfig                         overrides the default metric set)
//   E  Enable with lazy patching        e  Enable without lazy patching
//   D  Disable (prints dropped records) F  GetDataProperties + FlushData,
//   0..3 launch kernel k LAUNCHES times    per-function totals and ratios
//   T  time LAUNCHES launches of each kernel (cudaEvent, one line each)
//   S  cudaDeviceSynchronize
//   p  PC sampling on (continuous, period 2^16, as gpufl configures it)
//   g  PC sampling GetData until empty   q  PC sampling off (counts the rest)
//   A  activity: concurrent kernels on   a  activity: flush, off, count
//   X  subscribe an empty callback to driver-API launches and resources
//   W  launch every kernel LAUNCHES times while a second thread flushes
//      every 5 ms (prints flushes, records and warp instructions flushed)
// Kernels: 0 divergent, 1 strided, 2 stream_triad, 3 fma_chains
// (tests/gpu/known_kernels.cuh).
//
// Output: one JSON line per operation on stdout, with its time in ms. A
// failed CUPTI call is reported on its line and the sequence goes on; an
// alarm ends the process after 120 s (a hang is a finding too).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#define PROBE_NAME "sass_metrics_seq"
#include "probe_util.cuh"

#include "known_kernels.cuh"

// The CUPTI result of the current operation: "ok" or the result's name.
static std::string g_result;
static bool check(CUptiResult r, const char *call) {
    if (r == CUPTI_SUCCESS) return true;
    if (!g_result.empty()) g_result += "; ";
    g_result += std::string(call) + ": " + result_string(r);
    return false;
}

// ---- workload -------------------------------------------------------------------

static const size_t kN = 64u << 20;
static const char *kNames[4] = {"divergent", "strided", "stream_triad", "fma_chains"};
static float *g_a, *g_b, *g_c;
static int g_sms;

static void launch(int k) {
    switch (k) {
    case 0: divergent<<<g_sms * 16, 256>>>(g_a, 4096); break;
    case 1: strided<<<(unsigned)(kN / 8 / 256), 256>>>(g_b, g_a, kN); break;
    case 2: stream_triad<<<g_sms * 32, 256>>>(g_a, g_b, g_c, 3.0f, kN); break;
    case 3: fma_chains<<<g_sms * 16, 256>>>(g_a, 8192); break;
    }
}

// ---- SASS metrics ---------------------------------------------------------------

static std::map<uint64_t, std::string> g_metric_name;
static const char *kDefaultMetrics =
    "smsp__sass_inst_executed,smsp__sass_thread_inst_executed,"
    "smsp__sass_thread_inst_executed_pred_on,smsp__sass_sectors_mem_global,"
    "smsp__sass_sectors_mem_global_ideal";

static void op_config() {
    CUpti_Device_GetChipName_Params chip = {};
    chip.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    chip.deviceIndex = 0;
    if (!check(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName")) return;
    const char *env = std::getenv("SEQ_METRICS");
    std::string list = env && *env ? env : kDefaultMetrics;
    std::vector<CUpti_SassMetrics_Config> cfg;
    size_t pos = 0;
    while (pos < list.size()) {
        size_t comma = list.find(',', pos);
        if (comma == std::string::npos) comma = list.size();
        std::string name = list.substr(pos, comma - pos);
        pos = comma + 1;
        CUpti_SassMetrics_GetProperties_Params gp = {};
        gp.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE;
        gp.pChipName = chip.pChipName;
        gp.pMetricName = name.c_str();
        if (!check(cuptiSassMetricsGetProperties(&gp), name.c_str())) continue;
        cfg.push_back({gp.metric.metricId, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
        g_metric_name[gp.metric.metricId] = name;
    }
    check(sass_metrics_set_config(cfg), "cuptiSassMetricsSetConfig");
    std::printf(",\"chip\":\"%s\",\"metrics\":%zu", chip.pChipName, cfg.size());
}

static void op_unset() { check(sass_metrics_unset_config(), "cuptiSassMetricsUnsetConfig"); }

static void op_enable(CUcontext ctx, bool lazy) {
    check(sass_metrics_enable(ctx, lazy), "cuptiSassMetricsEnable");
}

static void op_disable(CUcontext ctx) {
    size_t dropped = 0;
    if (check(sass_metrics_disable(ctx, &dropped), "cuptiSassMetricsDisable"))
        std::printf(",\"dropped\":%zu", dropped);
}

// Per function: totals per metric, PCs, and the ratios the engine derives.
static void op_flush(CUcontext ctx) {
    SassMetricsFlush flush;
    if (!check(sass_metrics_get_data_properties(ctx, &flush), "cuptiSassMetricsGetDataProperties"))
        return;
    size_t n = flush.records, inst = flush.instances;
    std::printf(",\"records\":%zu,\"instances\":%zu", n, inst);
    if (n == 0 || inst == 0) return;
    if (!check(sass_metrics_flush_data(ctx, &flush), "cuptiSassMetricsFlushData")) return;
    std::printf(",\"flush_only_ms\":%.3f", flush.flush_ms);
    const std::vector<CUpti_SassMetrics_Data> &data = flush.data;
    struct Fn {
        std::map<std::string, uint64_t> total;
        std::map<uint32_t, int> pcs;
        uint64_t requests = 0; // warp instructions at PCs that moved global sectors
        uint32_t crc = 0, index = 0;
    };
    std::map<std::string, Fn> fns;
    for (size_t i = 0; i < n; i++) {
        Fn &f = fns[data[i].functionName ? data[i].functionName : "(null)"];
        f.crc = data[i].cubinCrc;
        f.index = data[i].functionIndex;
        f.pcs[data[i].pcOffset]++;
        uint64_t pc_inst = 0, pc_sectors = 0;
        for (size_t k = 0; k < inst; k++) {
            const CUpti_SassMetrics_InstanceValue &v = data[i].pInstanceValues[k];
            auto it = g_metric_name.find(v.metricId);
            std::string name =
                it != g_metric_name.end() ? it->second : "id:" + std::to_string(v.metricId);
            f.total[name] += v.value;
            if (name == "smsp__sass_inst_executed") pc_inst += v.value;
            if (name == "smsp__sass_sectors_mem_global") pc_sectors += v.value;
        }
        if (pc_sectors > 0) f.requests += pc_inst;
    }
    std::printf(",\"functions\":{");
    bool first = true;
    for (auto &kv : fns) {
        Fn &f = kv.second;
        int max_records_per_pc = 0;
        for (auto &pc : f.pcs) max_records_per_pc = std::max(max_records_per_pc, pc.second);
        std::printf("%s\"%s\":{\"crc\":%u,\"index\":%u,\"pcs\":%zu,\"max_records_per_pc\":%d",
                    first ? "" : ",", kv.first.c_str(), f.crc, f.index, f.pcs.size(),
                    max_records_per_pc);
        for (auto &t : f.total)
            std::printf(",\"%s\":%llu", t.first.c_str(), (unsigned long long)t.second);
        double wi = (double)f.total["smsp__sass_inst_executed"];
        double ti = (double)f.total["smsp__sass_thread_inst_executed"];
        double po = (double)f.total["smsp__sass_thread_inst_executed_pred_on"];
        double se = (double)f.total["smsp__sass_sectors_mem_global"];
        double id = (double)f.total["smsp__sass_sectors_mem_global_ideal"];
        std::printf(",\"global_requests\":%llu,\"thread_efficiency\":",
                    (unsigned long long)f.requests);
        json_num(ti / (32.0 * wi), 6);
        std::printf(",\"pred_on_efficiency\":");
        json_num(po / (32.0 * wi), 6);
        std::printf(",\"sectors_per_request\":");
        json_num(se / (double)f.requests, 6);
        std::printf(",\"ideal_sectors_per_request\":");
        json_num(id / (double)f.requests, 6);
        std::printf("}");
        first = false;
    }
    std::printf("}");
}

// ---- PC sampling (the configuration gpufl's engine uses) ------------------------

static size_t g_reasons;
static CUpti_PCSamplingData g_pc_sampling_buf;
static uint64_t g_pc_sampling_samples, g_pc_sampling_pc_sampling, g_pc_sampling_dropped;

static void pc_sampling_alloc(size_t pcs) {
    g_pc_sampling_buf = {};
    g_pc_sampling_buf.size = sizeof(CUpti_PCSamplingData);
    g_pc_sampling_buf.collectNumPcs = pcs;
    g_pc_sampling_buf.pPcData =
        (CUpti_PCSamplingPCData *)std::calloc(pcs, sizeof(CUpti_PCSamplingPCData));
    for (size_t i = 0; i < pcs; i++) {
        g_pc_sampling_buf.pPcData[i].size = sizeof(CUpti_PCSamplingPCData);
        g_pc_sampling_buf.pPcData[i].stallReason = (CUpti_PCSamplingStallReason *)std::calloc(
            g_reasons, sizeof(CUpti_PCSamplingStallReason));
    }
}

static void pc_sampling_count() {
    g_pc_sampling_pc_sampling += g_pc_sampling_buf.totalNumPcs;
    g_pc_sampling_dropped += g_pc_sampling_buf.droppedSamples;
    for (size_t i = 0; i < g_pc_sampling_buf.totalNumPcs; i++)
        for (size_t r = 0; r < g_pc_sampling_buf.pPcData[i].stallReasonCount; r++)
            g_pc_sampling_samples += g_pc_sampling_buf.pPcData[i].stallReason[r].samples;
}

static bool pc_sampling_attr(CUcontext ctx, CUpti_PCSamplingConfigurationInfo *info,
                             const char *what) {
    CUpti_PCSamplingConfigurationInfoParams p = {};
    p.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    p.ctx = ctx;
    p.numAttributes = 1;
    p.pPCSamplingConfigurationInfo = info;
    return check(cuptiPCSamplingSetConfigurationAttribute(&p), what);
}

static void op_pc_sampling_on(CUcontext ctx) {
    CUpti_PCSamplingEnableParams ep = {};
    ep.size = CUpti_PCSamplingEnableParamsSize;
    ep.ctx = ctx;
    if (!check(cuptiPCSamplingEnable(&ep), "cuptiPCSamplingEnable")) return;
    CUpti_PCSamplingGetNumStallReasonsParams np = {};
    np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
    np.ctx = ctx;
    np.numStallReasons = &g_reasons;
    if (!check(cuptiPCSamplingGetNumStallReasons(&np), "cuptiPCSamplingGetNumStallReasons")) return;
    pc_sampling_alloc(8192);
    CUpti_PCSamplingConfigurationInfo info = {};
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    info.attributeData.collectionModeData.collectionMode =
        CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    pc_sampling_attr(ctx, &info, "collection mode");
    info = {};
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
    info.attributeData.outputDataFormatData.outputDataFormat =
        CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    pc_sampling_attr(ctx, &info, "output format");
    info = {};
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    info.attributeData.samplingDataBufferData.samplingDataBuffer = &g_pc_sampling_buf;
    pc_sampling_attr(ctx, &info, "sampling data buffer");
    info = {};
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    info.attributeData.samplingPeriodData.samplingPeriod = 16;
    pc_sampling_attr(ctx, &info, "sampling period");
    std::printf(",\"reasons\":%zu", g_reasons);
}

static void op_pc_sampling_get(CUcontext ctx) {
    for (int i = 0; i < 1000; i++) {
        CUpti_PCSamplingGetDataParams gp = {};
        gp.size = CUpti_PCSamplingGetDataParamsSize;
        gp.ctx = ctx;
        gp.pcSamplingData = &g_pc_sampling_buf;
        if (!check(cuptiPCSamplingGetData(&gp), "cuptiPCSamplingGetData")) break;
        pc_sampling_count();
        if (g_pc_sampling_buf.remainingNumPcs == 0) break;
    }
    std::printf(",\"samples\":%llu,\"pcs\":%llu,\"dropped\":%llu",
                (unsigned long long)g_pc_sampling_samples,
                (unsigned long long)g_pc_sampling_pc_sampling,
                (unsigned long long)g_pc_sampling_dropped);
}

static void op_pc_sampling_off(CUcontext ctx) {
    CUpti_PCSamplingDisableParams dp = {};
    dp.size = CUpti_PCSamplingDisableParamsSize;
    dp.ctx = ctx;
    if (check(cuptiPCSamplingDisable(&dp), "cuptiPCSamplingDisable")) pc_sampling_count();
    std::printf(",\"samples\":%llu,\"pcs\":%llu,\"dropped\":%llu",
                (unsigned long long)g_pc_sampling_samples,
                (unsigned long long)g_pc_sampling_pc_sampling,
                (unsigned long long)g_pc_sampling_dropped);
}

// ---- activity and callbacks -------------------------------------------------------

static uint64_t g_kernel_records;

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max) {
    *size = 8u << 20;
    *buf = (uint8_t *)std::aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t *buf, size_t, size_t valid) {
    CUpti_Activity *rec = nullptr;
    while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS)
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) g_kernel_records++;
    std::free(buf);
}

static void op_activity_on() {
    check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
          "cuptiActivityRegisterCallbacks");
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
}

static void op_activity_off() {
    check(cuptiActivityFlushAll(1), "cuptiActivityFlushAll");
    check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityDisable");
    std::printf(",\"kernel_records\":%llu", (unsigned long long)g_kernel_records);
}

static void CUPTIAPI empty_callback(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {}

static void op_subscribe() {
    CUpti_SubscriberHandle sub;
    if (!check(cuptiSubscribe(&sub, empty_callback, nullptr), "cuptiSubscribe")) return;
    check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
                              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel),
          "cuptiEnableCallback");
    check(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE), "cuptiEnableDomain");
}

// Flushes on a second thread while the main thread launches: totals of what
// the flushes returned, to compare with a single flush at the end.
static void op_concurrent_flush(CUcontext ctx, int launches) {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> flushes{0}, records{0}, failures{0};
    std::map<std::string, uint64_t> inst;
    std::thread flusher([&] {
        cuCtxSetCurrent(ctx);
        while (!stop.load()) {
            SassMetricsFlush f;
            if (sass_metrics_get_data_properties(ctx, &f) != CUPTI_SUCCESS) {
                failures++;
            } else if (f.records > 0 && f.instances > 0) {
                if (sass_metrics_flush_data(ctx, &f) != CUPTI_SUCCESS) {
                    failures++;
                } else {
                    flushes++;
                    records += f.records;
                    for (const CUpti_SassMetrics_Data &d : f.data)
                        for (size_t j = 0; j < f.instances; j++)
                            if (g_metric_name[d.pInstanceValues[j].metricId] ==
                                "smsp__sass_inst_executed")
                                inst[d.functionName ? d.functionName : "?"] +=
                                    d.pInstanceValues[j].value;
                }
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    for (int k = 0; k < 4; k++) {
        for (int l = 0; l < launches; l++) launch(k);
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    stop = true;
    flusher.join();
    std::printf(",\"flushes\":%llu,\"records\":%llu,\"failures\":%llu,\"inst\":{",
                (unsigned long long)flushes.load(), (unsigned long long)records.load(),
                (unsigned long long)failures.load());
    bool first = true;
    for (auto &kv : inst) {
        std::printf("%s\"%s\":%llu", first ? "" : ",", kv.first.c_str(),
                    (unsigned long long)kv.second);
        first = false;
    }
    std::printf("}");
}

// ---- main -----------------------------------------------------------------------

int main(int argc, char **argv) {
    if (argc != 3 || std::atoi(argv[1]) < 1) {
        std::fprintf(stderr, "usage: sass_metrics_seq LAUNCHES OPS (see the file's header)\n");
        return 2;
    }
    int launches = std::atoi(argv[1]);
    const char *ops = argv[2];
    alarm(120);
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(0));
    CUcontext ctx = nullptr;
    cuCtxGetCurrent(&ctx);
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    CUDA_CHECK(cudaMalloc(&g_a, kN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&g_b, kN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&g_c, kN * sizeof(float)));
    CUDA_CHECK(cudaMemset(g_b, 0, kN * sizeof(float)));
    CUDA_CHECK(cudaMemset(g_c, 0, kN * sizeof(float)));
    CUDA_CHECK(cudaDeviceSynchronize());
    std::printf("{\"seq\":\"%s\",\"launches\":%d,\"device\":\"%s\",\"sms\":%d}\n", ops, launches,
                prop.name, g_sms);
    std::fflush(stdout);
    for (const char *o = ops; *o; o++) {
        g_result.clear();
        std::printf("{\"op\":\"%c\"", *o);
        double t0 = now_ms();
        switch (*o) {
        case 'P': {
            CUpti_Profiler_Initialize_Params p = {};
            p.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
            check(cuptiProfilerInitialize(&p), "cuptiProfilerInitialize");
            break;
        }
        case 'C': op_config(); break;
        case 'U': op_unset(); break;
        case 'E': op_enable(ctx, true); break;
        case 'e': op_enable(ctx, false); break;
        case 'D': op_disable(ctx); break;
        case 'F': op_flush(ctx); break;
        case 'S': CUDA_CHECK(cudaDeviceSynchronize()); break;
        case 'T':
            std::printf(",\"ms\":{");
            for (int k = 0; k < 4; k++) {
                cudaEvent_t e0, e1;
                CUDA_CHECK(cudaEventCreate(&e0));
                CUDA_CHECK(cudaEventCreate(&e1));
                CUDA_CHECK(cudaEventRecord(e0));
                for (int l = 0; l < launches; l++) launch(k);
                CUDA_CHECK(cudaEventRecord(e1));
                CUDA_CHECK(cudaEventSynchronize(e1));
                float ms = 0;
                CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
                std::printf("%s\"%s\":%.4f", k ? "," : "", kNames[k], ms);
            }
            std::printf("}");
            break;
        case 'p': op_pc_sampling_on(ctx); break;
        case 'g': op_pc_sampling_get(ctx); break;
        case 'q': op_pc_sampling_off(ctx); break;
        case 'A': op_activity_on(); break;
        case 'a': op_activity_off(); break;
        case 'X': op_subscribe(); break;
        case 'W': op_concurrent_flush(ctx, launches); break;
        default:
            if (*o >= '0' && *o <= '3') {
                for (int l = 0; l < launches; l++) launch(*o - '0');
                CUDA_CHECK(cudaGetLastError());
            } else {
                std::printf(",\"error\":\"unknown operation\"}\n");
                return 2;
            }
        }
        std::printf(",\"op_ms\":%.3f,\"result\":\"%s\"}\n", now_ms() - t0,
                    g_result.empty() ? "ok" : g_result.c_str());
        std::fflush(stdout);
    }
    return 0;
}
