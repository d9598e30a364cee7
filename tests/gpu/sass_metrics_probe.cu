// SPDX-License-Identifier: Apache-2.0
// sass_metrics_probe: a standalone check of CUPTI's SASS Metrics API
// (cupti_sass_metrics.h) on a real GPU, written before gpufl's SassMetrics
// engine so that the engine is designed from measured facts
// (docs/design/sass-metrics.md).
//
// It links only the CUDA runtime, the driver (for the current CUcontext) and
// libcupti; nothing of gpufl. Four kernels of known behaviour (the shapes of
// tests/gpu/pc_sampling_kernels.cu) run first without SASS metrics, then with them:
//   divergent     even and odd lanes take different arithmetic loops
//                 (thread efficiency about 0.5 in both loops);
//   strided       out[i] = 2 * in[(i*32) % n]: every thread's load has its own
//                 32-byte sector (uncoalesced), the store is coalesced;
//   stream_triad  a = b + s*c, coalesced (sectors equal to the ideal);
//   fma_chains    four independent FMA chains per thread (no divergence).
// A fifth kernel, never_launched, is never launched: whether it shows up in
// the records tells what eager (nolazy) patching covers.
//
// Steps: context (cuInit, cudaFree(0)); unmeasured baseline timings;
// cuptiProfilerInitialize; cuptiProfilerDeviceSupported for the SASS metrics
// API; chip name of device 0; every SASS metric the chip offers; the metrics
// chosen for each role (warp instructions, thread instructions, predicated-on
// thread instructions, global sectors and their ideal); SetConfig with GPU
// granularity; baseline timings again; Enable (lazy patching unless
// "nolazy"); LAUNCHES launches of each kernel, timed; GetDataProperties;
// FlushData; one more launch of each kernel and a second flush (are values
// reset by a flush?); one launch of fma_chains left unflushed, then Disable
// (numOfDroppedRecords); UnsetConfig. Then, for SM and SM-sub-partition
// granularity, a short second configuration (one launch per kernel) that
// prints numOfInstances and the per-instance spread.
//
// Output: JSON lines on stdout. "device", one "metric" line per SASS metric of
// the chip, "selection", "configured", "data_properties" per GetDataProperties
// call, "records" (the shape of the flushed records), one "kernel" line per
// kernel (totals per metric over all patched instructions, per-launch values,
// derived thread efficiency, sectors per request and against the ideal, the
// number of patched instructions, kernel times with and without the metrics
// as overhead_pct), one "pc" line for each of the 10 PCs of each kernel with
// the most warp instructions, "flush_reset_check", "disable",
// "granularity" lines, and "summary".
// If CUPTI reports that the device or system does not support SASS metrics
// or that the user lacks the privilege (CUPTI_ERROR_NOT_SUPPORTED,
// CUPTI_ERROR_INSUFFICIENT_PRIVILEGES and their variants), the probe prints
// one line {"error": NAME, "call": ..., ...} and exits with status 3. Any
// other failure names the call on stderr and exits with status 1.
//
// Usage: sass_metrics_probe [LAUNCHES] [lazy|nolazy] [METRIC,METRIC,...]
//   LAUNCHES  launches of each kernel per timed batch (default 10)
//   nolazy    patch every function at cuptiSassMetricsEnable instead of at
//             each function's first launch (default lazy)
//   METRIC,.. configure exactly these SASS metrics instead of the default
//             selection (to measure the cost of single metrics)
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#define PROBE_NAME "sass_metrics_probe"
#include "probe_util.cuh"

// ---- kernels: the reference kernels of the fidelity checks -----------------------

#include "known_kernels.cuh"

// Never launched: does eager patching (nolazy) produce records for it?
extern "C" __global__ void never_launched(float *out) { out[threadIdx.x] = 1.0f; }

// ---- workload ------------------------------------------------------------------

static const size_t kN = 64u << 20; // floats per array (256 MiB)
static const int kKernels = 4;
static const char *kNames[kKernels] = {"divergent", "strided", "stream_triad", "fma_chains"};
static const int kFma = 3;

struct Workload {
    float *a = nullptr, *b = nullptr, *c = nullptr;
    int sms = 0;
    // Threads per launch and global sectors a launch needs (32-byte sectors,
    // 4-byte floats): the figures the measured values are compared with.
    double threads(int k) const {
        switch (k) {
        case 0: return (double)sms * 16 * 256;
        case 1: return (double)(kN / 8);
        case 2: return (double)sms * 32 * 256;
        default: return (double)sms * 16 * 256;
        }
    }
    // Sectors actually touched per launch if every request behaves as the
    // source says (strided: one sector per thread for the load).
    double expected_sectors(int k) const {
        switch (k) {
        case 1: return threads(1) + threads(1) / 8;
        case 2: return 3.0 * kN / 8;
        default: return threads(k) / 8; // the one coalesced store
        }
    }
    double expected_ideal_sectors(int k) const {
        switch (k) {
        case 1: return threads(1) / 8 + threads(1) / 8;
        case 2: return 3.0 * kN / 8;
        default: return threads(k) / 8;
        }
    }
};

static void launch(const Workload &w, int k) {
    switch (k) {
    case 0: divergent<<<w.sms * 16, 256>>>(w.a, 4096); break;
    case 1: strided<<<(unsigned)(kN / 8 / 256), 256>>>(w.b, w.a, kN); break;
    case 2: stream_triad<<<w.sms * 32, 256>>>(w.a, w.b, w.c, 3.0f, kN); break;
    case 3: fma_chains<<<w.sms * 16, 256>>>(w.a, 8192); break;
    }
}

// Launches kernel k n times and returns the total time in ms (cudaEvent
// around the batch).
static double time_batch(const Workload &w, int k, int n) {
    if (n <= 0) return 0.0;
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaEventRecord(e0));
    for (int l = 0; l < n; l++) launch(w, k);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return ms;
}

// ---- metrics -------------------------------------------------------------------

struct MetricInfo {
    uint64_t id;
    std::string name, description;
};

// A role is what the engine needs a number for; each alternative is a list of
// metric names whose values are summed (an aggregate, or its ld + st parts).
struct Role {
    const char *key;
    std::vector<std::vector<const char *>> alternatives;
    std::vector<std::string> chosen;
    std::vector<uint64_t> ids;
};

static std::vector<Role> make_roles() {
    return {
        {"inst", {{"smsp__sass_inst_executed"}}, {}, {}},
        {"thread_inst", {{"smsp__sass_thread_inst_executed"}}, {}, {}},
        {"pred_on", {{"smsp__sass_thread_inst_executed_pred_on"}}, {}, {}},
        {"sectors",
         {{"smsp__sass_sectors_mem_global"},
          {"smsp__sass_sectors_mem_global_op_ld", "smsp__sass_sectors_mem_global_op_st"}},
         {},
         {}},
        {"ideal",
         {{"smsp__sass_sectors_mem_global_ideal"},
          {"smsp__sass_sectors_mem_global_op_ld_ideal",
           "smsp__sass_sectors_mem_global_op_st_ideal"}},
         {},
         {}},
    };
}

// One flushed record, copied out of CUPTI's structures.
struct Record {
    uint32_t crc = 0, function_index = 0, pc = 0;
    std::string function;
    std::vector<CUpti_SassMetrics_InstanceValue> values;
};

// Values per function, per PC, per metric id (summed over instances).
struct PcData {
    std::map<uint64_t, uint64_t> value;
    uint32_t crc = 0, function_index = 0;
    int records = 0;
};
using FunctionTable = std::map<std::string, std::map<uint32_t, PcData>>;

static FunctionTable tabulate(const std::vector<Record> &recs) {
    FunctionTable t;
    for (const Record &r : recs) {
        PcData &p = t[r.function][r.pc];
        p.crc = r.crc;
        p.function_index = r.function_index;
        p.records++;
        for (const CUpti_SassMetrics_InstanceValue &v : r.values) p.value[v.metricId] += v.value;
    }
    return t;
}

static uint64_t role_value(const std::map<uint64_t, uint64_t> &vals, const Role &role) {
    uint64_t s = 0;
    for (uint64_t id : role.ids) {
        auto it = vals.find(id);
        if (it != vals.end()) s += it->second;
    }
    return s;
}

// With ok non-null a failing call is reported as a "cupti_failure" line and
// *ok set to false instead of ending the probe (the granularity phase).
static bool soft_check(CUptiResult r, const char *call, const char *phase, bool *ok) {
    if (!ok) {
        cupti_check(r, call);
        return true;
    }
    if (r == CUPTI_SUCCESS) return true;
    std::printf("{\"kind\":\"cupti_failure\",\"phase\":\"%s\",\"call\":\"%s\",\"result\":", phase,
                call);
    json_string(result_string(r));
    std::printf(",\"code\":%d}\n", (int)r);
    std::fflush(stdout);
    *ok = false;
    return false;
}

// GetDataProperties then FlushData (sass_metrics_flush_data), the records
// copied out. Prints one "data_properties" line.
static std::vector<Record> get_and_flush(CUcontext ctx, const char *phase, size_t *instances_out,
                                         double *flush_ms, bool *ok = nullptr) {
    SassMetricsFlush f;
    if (!soft_check(sass_metrics_get_data_properties(ctx, &f), "cuptiSassMetricsGetDataProperties",
                    phase, ok))
        return {};
    if (instances_out) *instances_out = f.instances;
    if (!soft_check(sass_metrics_flush_data(ctx, &f), "cuptiSassMetricsFlushData", phase, ok))
        return {};
    std::vector<Record> out(f.data.size());
    for (size_t i = 0; i < f.data.size(); i++) {
        const CUpti_SassMetrics_Data &d = f.data[i];
        Record &r = out[i];
        r.crc = d.cubinCrc;
        r.function_index = d.functionIndex;
        r.pc = d.pcOffset;
        r.function = d.functionName ? d.functionName : "(null)";
        r.values.assign(d.pInstanceValues, d.pInstanceValues + f.instances);
    }
    if (flush_ms) *flush_ms = f.flush_ms;
    std::printf("{\"kind\":\"data_properties\",\"phase\":\"%s\",\"records\":%zu,"
                "\"instances\":%zu,\"get_properties_ms\":%.3f,\"flush_ms\":%.3f}\n",
                phase, f.records, f.instances, f.properties_ms, f.flush_ms);
    std::fflush(stdout);
    return out;
}

// The shape of the records: records per (function, PC), distinct metric ids
// per record, ids that were not configured.
static void print_record_shape(const std::vector<Record> &recs, const char *phase,
                               const std::set<uint64_t> &configured) {
    std::map<std::pair<std::string, uint32_t>, int> per_pc;
    size_t min_ids = SIZE_MAX, max_ids = 0, zero_values = 0, total_values = 0;
    std::set<uint64_t> unknown;
    std::map<std::string, std::set<uint32_t>> crcs;
    for (const Record &r : recs) {
        per_pc[{r.function, r.pc}]++;
        std::set<uint64_t> ids;
        for (const auto &v : r.values) {
            ids.insert(v.metricId);
            if (!configured.count(v.metricId)) unknown.insert(v.metricId);
            total_values++;
            if (v.value == 0) zero_values++;
        }
        min_ids = std::min(min_ids, ids.size());
        max_ids = std::max(max_ids, ids.size());
        crcs[r.function].insert(r.crc);
    }
    int min_rpp = 0, max_rpp = 0;
    bool first = true;
    for (auto &kv : per_pc) {
        if (first || kv.second < min_rpp) min_rpp = kv.second;
        if (first || kv.second > max_rpp) max_rpp = kv.second;
        first = false;
    }
    std::printf("{\"kind\":\"records\",\"phase\":\"%s\",\"records\":%zu,\"distinct_pcs\":%zu,"
                "\"records_per_pc_min\":%d,\"records_per_pc_max\":%d,"
                "\"metric_ids_per_record_min\":%zu,\"metric_ids_per_record_max\":%zu,"
                "\"values\":%zu,\"zero_values\":%zu,\"unconfigured_ids\":[",
                phase, recs.size(), per_pc.size(), min_rpp, max_rpp,
                recs.empty() ? (size_t)0 : min_ids, max_ids, total_values, zero_values);
    first = true;
    for (uint64_t id : unknown) {
        std::printf("%s%llu", first ? "" : ",", (unsigned long long)id);
        first = false;
    }
    std::printf("],\"functions\":{");
    first = true;
    for (auto &kv : crcs) {
        size_t pcs = 0, nrec = 0;
        for (auto &pp : per_pc)
            if (pp.first.first == kv.first) pcs++, nrec += pp.second;
        std::printf("%s", first ? "" : ",");
        json_string(kv.first.c_str());
        std::printf(":{\"records\":%zu,\"pcs\":%zu,\"cubin_crcs\":[", nrec, pcs);
        bool f2 = true;
        for (uint32_t c : kv.second) {
            std::printf("%s%u", f2 ? "" : ",", c);
            f2 = false;
        }
        std::printf("]}");
        first = false;
    }
    std::printf("}}\n");
}

static void print_metric_values(const std::map<uint64_t, uint64_t> &vals,
                                const std::map<uint64_t, std::string> &id_name) {
    std::printf("{");
    bool first = true;
    for (auto &kv : vals) {
        auto it = id_name.find(kv.first);
        std::printf("%s", first ? "" : ",");
        if (it != id_name.end())
            json_string(it->second.c_str());
        else
            std::printf("\"id:%llu\"", (unsigned long long)kv.first);
        std::printf(":%llu", (unsigned long long)kv.second);
        first = false;
    }
    std::printf("}");
}

static const Role *find_role(const std::vector<Role> &roles, const char *key) {
    for (const Role &r : roles)
        if (std::strcmp(r.key, key) == 0) return r.ids.empty() ? nullptr : &r;
    return nullptr;
}

static double rv(const std::map<uint64_t, uint64_t> &vals, const Role *r) {
    return r ? (double)role_value(vals, *r) : NAN;
}

// A refused configuration in the SM and SM-sub-partition granularity phase.
static void print_granularity_error(const char *gran, const char *call, CUptiResult r) {
    std::printf("{\"kind\":\"granularity\",\"granularity\":\"%s\",\"call\":\"%s\","
                "\"result\":",
                gran, call);
    json_string(result_string(r));
    std::printf(",\"code\":%d}\n", (int)r);
    std::fflush(stdout);
}

// ---- main ----------------------------------------------------------------------

int main(int argc, char **argv) {
    int launches = 10;
    bool lazy = true;
    std::vector<std::string> override_metrics;
    bool bad = argc > 4;
    if (argc > 1) {
        char *end = nullptr;
        long v = std::strtol(argv[1], &end, 10);
        if (!end || *end || v < 1 || v > 100000)
            bad = true;
        else
            launches = (int)v;
    }
    if (argc > 2) {
        if (std::strcmp(argv[2], "nolazy") == 0)
            lazy = false;
        else if (std::strcmp(argv[2], "lazy") != 0)
            bad = true;
    }
    if (argc > 3) {
        std::string s = argv[3];
        size_t pos = 0;
        while (pos <= s.size()) {
            size_t comma = s.find(',', pos);
            if (comma == std::string::npos) comma = s.size();
            if (comma > pos) override_metrics.push_back(s.substr(pos, comma - pos));
            pos = comma + 1;
        }
        if (override_metrics.empty()) bad = true;
    }
    if (bad) {
        std::fprintf(stderr, "usage: %s [LAUNCHES] [lazy|nolazy] [METRIC,METRIC,...]\n", argv[0]);
        return 2;
    }

    // The context: the driver, then the runtime's primary context for device 0.
    CU_CHECK(cuInit(0));
    cudaDeviceProp prop;
    CUcontext ctx = primary_context(&prop);
    int driver = 0, runtime = 0;
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    uint32_t cupti_version = 0;
    CUPTI_CHECK(cuptiGetVersion(&cupti_version));
    const char *module_loading = std::getenv("CUDA_MODULE_LOADING");
    std::printf("{\"kind\":\"device\",\"name\":");
    json_string(prop.name);
    std::printf(",\"cc\":\"%d.%d\",\"sms\":%d,\"driver\":%d,\"runtime\":%d,\"cupti_api\":%u,"
                "\"launches\":%d,\"lazy_patching\":%s,\"cuda_module_loading\":",
                prop.major, prop.minor, prop.multiProcessorCount, driver, runtime, cupti_version,
                launches, lazy ? "true" : "false");
    if (module_loading)
        json_string(module_loading);
    else
        std::printf("null");
    std::printf("}\n");
    std::fflush(stdout);

    Workload w;
    w.sms = prop.multiProcessorCount;
    CUDA_CHECK(cudaMalloc(&w.a, kN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w.b, kN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w.c, kN * sizeof(float)));
    CUDA_CHECK(cudaMemset(w.b, 0, kN * sizeof(float)));
    CUDA_CHECK(cudaMemset(w.c, 0, kN * sizeof(float)));

    // Warm-up (module load, clocks), then the baseline before any CUPTI call.
    for (int k = 0; k < kKernels; k++) time_batch(w, k, 2);
    double base0[kKernels];
    for (int k = 0; k < kKernels; k++) base0[k] = time_batch(w, k, launches) / launches;

    double t0 = now_ms();
    profiler_initialize();
    double profiler_init_ms = now_ms() - t0;

    profiler_check_device_supported(CUPTI_PROFILER_SASS_METRICS, "CUPTI_PROFILER_SASS_METRICS",
                                    profiler_init_ms,
                                    "device or configuration does not support SASS metrics");
    const char *chip = chip_name_of_device0();

    // Every SASS metric the chip offers.
    std::vector<MetricInfo> all;
    {
        CUpti_SassMetrics_GetNumOfMetrics_Params p = {};
        p.structSize = CUpti_SassMetrics_GetNumOfMetrics_Params_STRUCT_SIZE;
        p.pChipName = chip;
        CUPTI_CHECK(cuptiSassMetricsGetNumOfMetrics(&p));
        std::vector<CUpti_SassMetrics_MetricDetails> list(p.numOfMetrics);
        CUpti_SassMetrics_GetMetrics_Params q = {};
        q.structSize = CUpti_SassMetrics_GetMetrics_Params_STRUCT_SIZE;
        q.pChipName = chip;
        q.numOfMetrics = list.size();
        q.pMetricsList = list.data();
        CUPTI_CHECK(cuptiSassMetricsGetMetrics(&q));
        for (const auto &m : list)
            all.push_back({m.metricId, m.pMetricName ? m.pMetricName : "",
                           m.pMetricDescription ? m.pMetricDescription : ""});
    }
    std::printf("{\"kind\":\"chip\",\"chip\":");
    json_string(chip);
    std::printf(",\"num_metrics\":%zu}\n", all.size());
    for (const MetricInfo &m : all) {
        std::printf("{\"kind\":\"metric\",\"id\":%llu,\"name\":", (unsigned long long)m.id);
        json_string(m.name.c_str());
        std::printf(",\"description\":");
        json_string(m.description.c_str());
        std::printf("}\n");
    }
    std::fflush(stdout);

    std::map<std::string, uint64_t> name_id;
    std::map<uint64_t, std::string> id_name;
    for (const MetricInfo &m : all) {
        name_id[m.name] = m.id;
        id_name[m.id] = m.name;
    }

    // The metrics to configure: the roles' first complete alternative, or the
    // names given on the command line (roles then only use those).
    std::vector<Role> roles = make_roles();
    std::set<std::string> usable;
    if (override_metrics.empty()) {
        for (auto &kv : name_id) usable.insert(kv.first);
    } else {
        for (const std::string &n : override_metrics) {
            if (!name_id.count(n)) {
                std::fprintf(stderr, "sass_metrics_probe: metric %s is not offered by chip %s\n",
                             n.c_str(), chip);
                return 1;
            }
            usable.insert(n);
        }
    }
    std::vector<std::string> configured_names = override_metrics;
    for (Role &r : roles) {
        for (const auto &alt : r.alternatives) {
            bool ok = true;
            for (const char *n : alt) ok = ok && usable.count(n);
            if (!ok) continue;
            for (const char *n : alt) {
                r.chosen.push_back(n);
                r.ids.push_back(name_id[n]);
                if (override_metrics.empty() &&
                    std::find(configured_names.begin(), configured_names.end(), n) ==
                        configured_names.end())
                    configured_names.push_back(n);
            }
            break;
        }
    }
    std::printf("{\"kind\":\"selection\",\"source\":\"%s\",\"roles\":{",
                override_metrics.empty() ? "default" : "command line");
    for (size_t i = 0; i < roles.size(); i++) {
        std::printf("%s\"%s\":", i ? "," : "", roles[i].key);
        if (roles[i].chosen.empty()) {
            std::printf("null");
            continue;
        }
        std::printf("[");
        for (size_t j = 0; j < roles[i].chosen.size(); j++) {
            std::printf("%s", j ? "," : "");
            json_string(roles[i].chosen[j].c_str());
        }
        std::printf("]");
    }
    std::printf("},\"candidates\":{");
    for (size_t i = 0; i < roles.size(); i++) {
        std::printf("%s\"%s\":[", i ? "," : "", roles[i].key);
        bool first = true;
        for (const auto &alt : roles[i].alternatives)
            for (const char *n : alt) {
                std::printf("%s{\"name\":", first ? "" : ",");
                json_string(n);
                std::printf(",\"offered\":%s}", name_id.count(n) ? "true" : "false");
                first = false;
            }
        std::printf("]");
    }
    std::printf("}}\n");
    if (configured_names.empty()) {
        std::printf("{\"error\":\"NO_METRICS\",\"call\":\"selection\",\"code\":0,"
                    "\"message\":\"none of the wanted SASS metrics is offered\"}\n");
        return 3;
    }

    // Each configured metric through GetProperties too: its id must be the
    // one the list gave.
    std::vector<CUpti_SassMetrics_Config> cfg;
    std::set<uint64_t> configured_ids;
    std::printf("{\"kind\":\"configured\",\"granularity\":\"gpu\",\"metrics\":[");
    for (size_t i = 0; i < configured_names.size(); i++) {
        CUpti_SassMetrics_GetProperties_Params p = {};
        p.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE;
        p.pChipName = chip;
        p.pMetricName = configured_names[i].c_str();
        CUPTI_CHECK(cuptiSassMetricsGetProperties(&p));
        CUpti_SassMetrics_Config c = {};
        c.metricId = p.metric.metricId;
        c.outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
        cfg.push_back(c);
        configured_ids.insert(c.metricId);
        std::printf("%s{\"name\":", i ? "," : "");
        json_string(configured_names[i].c_str());
        std::printf(",\"id\":%llu,\"id_matches_list\":%s}", (unsigned long long)p.metric.metricId,
                    p.metric.metricId == name_id[configured_names[i]] ? "true" : "false");
    }
    std::printf("]}\n");
    std::fflush(stdout);

    // ---- main phase: GPU granularity ---------------------------------------------
    CUPTI_CHECK_AS(sass_metrics_set_config(cfg), "cuptiSassMetricsSetConfig");
    double base1[kKernels];
    for (int k = 0; k < kKernels; k++) base1[k] = time_batch(w, k, launches) / launches;

    t0 = now_ms();
    CUPTI_CHECK_AS(sass_metrics_enable(ctx, lazy), "cuptiSassMetricsEnable");
    double enable_ms = now_ms() - t0;

    double first_ms[kKernels], rest_ms[kKernels], all_ms[kKernels];
    for (int k = 0; k < kKernels; k++) {
        first_ms[k] = time_batch(w, k, 1); // with lazy patching, patched here
        rest_ms[k] = time_batch(w, k, launches - 1);
        all_ms[k] = first_ms[k] + rest_ms[k];
    }
    size_t instances = 0;
    double flush_ms = 0;
    std::vector<Record> recs = get_and_flush(ctx, "main", &instances, &flush_ms);
    print_record_shape(recs, "main", configured_ids);
    FunctionTable table = tabulate(recs);

    const Role *r_inst = find_role(roles, "inst");
    const Role *r_thread = find_role(roles, "thread_inst");
    const Role *r_pred = find_role(roles, "pred_on");
    const Role *r_sect = find_role(roles, "sectors");
    const Role *r_ideal = find_role(roles, "ideal");

    // Per-kernel totals (kept for the flush-reset check).
    std::map<std::string, double> main_inst;
    for (auto &fkv : table) {
        const std::string &fn = fkv.first;
        int k = -1;
        for (int i = 0; i < kKernels; i++)
            if (fn == kNames[i]) k = i;
        std::map<uint64_t, uint64_t> tot;
        double requests = 0; // warp instructions at PCs that moved global sectors
        for (auto &pkv : fkv.second) {
            for (auto &v : pkv.second.value) tot[v.first] += v.second;
            if (r_sect && role_value(pkv.second.value, *r_sect) > 0)
                requests += rv(pkv.second.value, r_inst);
        }
        double inst = rv(tot, r_inst), thr = rv(tot, r_thread), pred = rv(tot, r_pred);
        double sect = rv(tot, r_sect), ideal = rv(tot, r_ideal);
        main_inst[fn] = inst;
        int nl = k >= 0 ? launches : 0;
        std::printf("{\"kind\":\"kernel\",\"function\":");
        json_string(fn.c_str());
        std::printf(",\"launches\":%d,\"patched_instructions\":%zu,\"totals\":", nl,
                    fkv.second.size());
        print_metric_values(tot, id_name);
        std::printf(",\"thread_efficiency\":");
        json_num(thr / (32.0 * inst));
        std::printf(",\"pred_on_efficiency\":");
        json_num(pred / (32.0 * inst));
        std::printf(",\"global_requests\":");
        json_num(r_sect && r_inst ? requests : NAN);
        std::printf(",\"sectors_per_request\":");
        json_num(sect / requests);
        std::printf(",\"ideal_sectors_per_request\":");
        json_num(ideal / requests);
        std::printf(",\"sectors_over_ideal\":");
        json_num(sect / ideal);
        if (k >= 0) {
            std::printf(",\"per_launch\":{\"inst\":");
            json_num(inst / nl);
            std::printf(",\"thread_inst\":");
            json_num(thr / nl);
            std::printf(",\"sectors\":");
            json_num(sect / nl);
            std::printf(",\"ideal_sectors\":");
            json_num(ideal / nl);
            std::printf("},\"expected_per_launch\":{\"threads\":%.0f,\"sectors\":%.0f,"
                        "\"ideal_sectors\":%.0f}",
                        w.threads(k), w.expected_sectors(k), w.expected_ideal_sectors(k));
            double avg = all_ms[k] / launches;
            std::printf(",\"ms_before_profiler\":%.4f,\"ms_before_enable\":%.4f,"
                        "\"ms_with_metrics\":%.4f,\"ms_first_launch\":%.4f,",
                        base0[k], base1[k], avg, first_ms[k]);
            std::printf("\"ms_after_first\":");
            json_num(launches > 1 ? rest_ms[k] / (launches - 1) : NAN);
            std::printf(",\"overhead_pct\":");
            json_num(100.0 * (avg - base1[k]) / base1[k]);
            std::printf(",\"overhead_after_first_pct\":");
            json_num(launches > 1 ? 100.0 * (rest_ms[k] / (launches - 1) - base1[k]) / base1[k]
                                  : NAN);
        }
        std::printf("}\n");

        // The 10 PCs with the most warp instructions (or of the first
        // configured metric when no instruction count is configured).
        std::vector<std::pair<uint64_t, uint32_t>> order;
        for (auto &pkv : fkv.second) {
            uint64_t key = r_inst
                               ? role_value(pkv.second.value, *r_inst)
                               : (pkv.second.value.empty() ? 0 : pkv.second.value.begin()->second);
            order.push_back({key, pkv.first});
        }
        std::sort(order.begin(), order.end(), [](const auto &x, const auto &y) {
            return x.first != y.first ? x.first > y.first : x.second < y.second;
        });
        for (size_t i = 0; i < order.size() && i < 10; i++) {
            const PcData &p = fkv.second.at(order[i].second);
            std::printf("{\"kind\":\"pc\",\"function\":");
            json_string(fn.c_str());
            std::printf(",\"rank\":%zu,\"pc_offset\":%u,\"pc_offset_hex\":\"0x%x\","
                        "\"cubin_crc\":%u,\"function_index\":%u,\"records\":%d,\"metrics\":",
                        i + 1, order[i].second, order[i].second, p.crc, p.function_index,
                        p.records);
            print_metric_values(p.value, id_name);
            double pi = rv(p.value, r_inst);
            std::printf(",\"thread_efficiency\":");
            json_num(rv(p.value, r_thread) / (32.0 * pi));
            std::printf(",\"pred_on_efficiency\":");
            json_num(rv(p.value, r_pred) / (32.0 * pi));
            std::printf(",\"sectors_per_inst\":");
            json_num(rv(p.value, r_sect) / pi);
            std::printf(",\"ideal_sectors_per_inst\":");
            json_num(rv(p.value, r_ideal) / pi);
            std::printf("}\n");
        }
    }
    for (int k = 0; k < kKernels; k++)
        if (!table.count(kNames[k]))
            std::printf("{\"kind\":\"kernel\",\"function\":\"%s\",\"launches\":%d,"
                        "\"patched_instructions\":0,\"missing\":true}\n",
                        kNames[k], launches);
    std::fflush(stdout);

    // ---- is a flush a reset? ------------------------------------------------------
    // Right after the flush without launches, then after one more launch of
    // each kernel: ~1/LAUNCHES of the first flush means values restart at 0
    // after a flush and every launch was counted; ~(LAUNCHES+1)/LAUNCHES means
    // they are cumulative; 1/(LAUNCHES-1) means the patching launch was not
    // counted.
    std::vector<Record> empty_recs = get_and_flush(ctx, "after_flush_no_launch", nullptr, nullptr);
    for (int k = 0; k < kKernels; k++) time_batch(w, k, 1);
    std::vector<Record> recs2 = get_and_flush(ctx, "one_more_launch", nullptr, nullptr);
    FunctionTable table2 = tabulate(recs2);
    std::printf("{\"kind\":\"flush_reset_check\",\"records_after_flush_no_launch\":%zu,"
                "\"kernels\":{",
                empty_recs.size());
    for (int k = 0; k < kKernels; k++) {
        double second = NAN;
        size_t pcs2 = 0;
        auto it = table2.find(kNames[k]);
        if (it != table2.end()) {
            std::map<uint64_t, uint64_t> tot;
            for (auto &pkv : it->second)
                for (auto &v : pkv.second.value) tot[v.first] += v.second;
            second = rv(tot, r_inst);
            pcs2 = it->second.size();
        }
        double first = main_inst.count(kNames[k]) ? main_inst[kNames[k]] : NAN;
        std::printf("%s\"%s\":{\"inst_first_flush\":", k ? "," : "", kNames[k]);
        json_num(first);
        std::printf(",\"inst_second_flush\":");
        json_num(second);
        std::printf(",\"second_over_first_per_launch\":");
        json_num(second / (first / launches));
        std::printf(",\"pcs_second_flush\":%zu}", pcs2);
    }
    std::printf("}}\n");
    size_t fma_records2 = 0;
    for (const Record &r : recs2)
        if (r.function == kNames[kFma]) fma_records2++;

    // ---- Disable with data not flushed: numOfDroppedRecords ------------------------
    time_batch(w, kFma, 1);
    size_t dropped = 0;
    t0 = now_ms();
    CUPTI_CHECK_AS(sass_metrics_disable(ctx, &dropped), "cuptiSassMetricsDisable");
    double disable_ms = now_ms() - t0;
    std::printf("{\"kind\":\"disable\",\"unflushed_launches\":\"fma_chains x1\","
                "\"num_dropped_records\":%zu,\"fma_chains_records_in_last_flush\":%zu,"
                "\"instances\":%zu,\"expected_if_records_x_instances\":%zu,\"disable_ms\":%.3f}\n",
                dropped, fma_records2, instances, fma_records2 * instances, disable_ms);
    t0 = now_ms();
    CUPTI_CHECK_AS(sass_metrics_unset_config(), "cuptiSassMetricsUnsetConfig");
    double unset_ms = now_ms() - t0;
    std::fflush(stdout);

    // ---- SM and SM-sub-partition granularity: one launch per kernel -------------
    // Only the warp-instruction metric (or the first configured one), to keep
    // the instance arrays small.
    for (int g = 0; g < 2; g++) {
        const char *gname = g == 0 ? "sm" : "smsp";
        uint8_t gran = g == 0 ? (uint8_t)CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_SM
                              : (uint8_t)CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_SMSP;
        CUpti_SassMetrics_Config c = cfg[0];
        if (r_inst) c.metricId = r_inst->ids[0];
        c.outputGranularity = gran;
        std::vector<CUpti_SassMetrics_Config> gcfg = {c};
        CUptiResult r = sass_metrics_set_config(gcfg);
        if (r != CUPTI_SUCCESS) {
            print_granularity_error(gname, "cuptiSassMetricsSetConfig", r);
            continue;
        }
        r = sass_metrics_enable(ctx, lazy);
        if (r != CUPTI_SUCCESS) {
            print_granularity_error(gname, "cuptiSassMetricsEnable", r);
            CUPTI_CHECK_AS(sass_metrics_unset_config(), "cuptiSassMetricsUnsetConfig");
            continue;
        }
        double gms[kKernels];
        for (int k = 0; k < kKernels; k++) gms[k] = time_batch(w, k, 1);
        size_t ginst = 0;
        bool gok = true;
        std::vector<Record> grecs = get_and_flush(ctx, gname, &ginst, nullptr, &gok);
        // Per kernel: sum over all instances, instances with a non-zero
        // value, the largest single instance.
        std::printf("{\"kind\":\"granularity\",\"granularity\":\"%s\",\"metric\":", gname);
        json_string(id_name[c.metricId].c_str());
        std::printf(",\"flush_ok\":%s,\"num_instances\":%zu,\"records\":%zu,\"kernels\":{",
                    gok ? "true" : "false", ginst, grecs.size());
        for (int k = 0; k < kKernels; k++) {
            std::vector<uint64_t> per_instance(ginst, 0);
            size_t pcs = 0;
            for (const Record &rec : grecs) {
                if (rec.function != kNames[k]) continue;
                pcs++;
                for (size_t i = 0; i < rec.values.size() && i < ginst; i++)
                    if (rec.values[i].metricId == c.metricId)
                        per_instance[i] += rec.values[i].value;
            }
            double sum = 0, mx = 0;
            size_t nonzero = 0;
            for (uint64_t v : per_instance) {
                sum += (double)v;
                mx = std::max(mx, (double)v);
                if (v) nonzero++;
            }
            double gpu_level = main_inst.count(kNames[k]) ? main_inst[kNames[k]] / launches : NAN;
            std::printf("%s\"%s\":{\"records\":%zu,\"sum\":%.0f,\"nonzero_instances\":%zu,"
                        "\"max_instance\":%.0f,\"gpu_level_per_launch\":",
                        k ? "," : "", kNames[k], pcs, sum, nonzero, mx);
            json_num(r_inst ? gpu_level : NAN);
            std::printf(",\"ms_one_launch\":%.4f}", gms[k]);
        }
        std::printf("}}\n");
        size_t gdropped = 0;
        soft_check(sass_metrics_disable(ctx, &gdropped), "cuptiSassMetricsDisable", gname, &gok);
        soft_check(sass_metrics_unset_config(), "cuptiSassMetricsUnsetConfig", gname, &gok);
        std::fflush(stdout);
    }

    profiler_deinitialize();
    std::printf("{\"kind\":\"summary\",\"chip\":");
    json_string(chip);
    std::printf(",\"lazy_patching\":%s,\"launches\":%d,\"configured_metrics\":%zu,"
                "\"profiler_initialize_ms\":%.3f,\"enable_ms\":%.3f,\"main_flush_ms\":%.3f,"
                "\"main_records\":%zu,\"main_instances\":%zu,\"disable_ms\":%.3f,"
                "\"unset_config_ms\":%.3f,\"never_launched_in_records\":%s}\n",
                lazy ? "true" : "false", launches, cfg.size(), profiler_init_ms, enable_ms,
                flush_ms, recs.size(), instances, disable_ms, unset_ms,
                table.count("never_launched") ? "true" : "false");
    CUDA_CHECK(cudaFree(w.a));
    CUDA_CHECK(cudaFree(w.b));
    CUDA_CHECK(cudaFree(w.c));
    return 0;
}
