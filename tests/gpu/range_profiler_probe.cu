// SPDX-License-Identifier: Apache-2.0
// range_profiler_probe: a standalone check of CUPTI's Range Profiler API
// (cupti_range_profiler.h) and of the profiler host API that builds its
// configuration and evaluates its data (cupti_profiler_host.h), on a real GPU,
// written before gpufl's range profiler engine so that the engine is designed
// from measured facts (docs/design/range-profiler.md).
//
// It links only the CUDA runtime, the driver (for the current CUcontext) and
// libcupti; nothing of gpufl. The kernels of tests/gpu/known_kernels.cuh
// (divergent, strided, stream_triad, fma_chains) and a tensor-core loop of
// its own (wmma_loop, half inputs, float accumulator) run in a fixed plan of
// named ranges: one range per kernel with LAUNCHES launches each, a range
// "nested_outer" (stream_triad) holding "nested_inner" (fma_chains), and two
// ranges of the same name "repeated" (stream_triad) one after the other.
//
// gpufl's ranges are application scopes: the application cannot run them
// again, so CUPTI's user replay (the caller replays each pass) is only
// possible when the configuration needs one pass, and kernel replay exists
// only for auto ranges (one range per kernel). The phases:
//   host     each metric alone through the host API (accepted? passes?), all
//            accepted metrics together (passes), and a first-fit split of
//            them into groups that need one pass each;
//   groups   gpufl's mode: user ranges, user replay, one Start/Stop per group
//            and no replay, each group on a range profiler object of its
//            own (Enable ... Disable); the values of the groups are merged
//            per range. Only the groups that need one pass can give values;
//   reconfigure  SetConfig a second time on one object: after a complete
//            one-pass collection (with another one-pass configuration), the
//            same configuration collected again without a new SetConfig, and
//            after one pass of a multi-pass configuration (the sequence of
//            the first GPU run, whose one-pass group came out all null);
//   one_pass_of_multipass  all metrics in one configuration that needs more
//            than one pass, run once without replay: what CUPTI reports and
//            what evaluation gives (skipped if one pass suffices);
//   user_replay_all        the same configuration, the probe replaying the
//            plan until CUPTI says all passes were submitted: the reference
//            for the merged groups (the probe's kernels can be replayed);
//   nested2  the largest one-pass group with two nesting levels, replayed
//            until all passes (passes x levels) are submitted;
//   auto     auto ranges with kernel replay, all metrics, no push/pop: one
//            range per launch, as Nsight Compute measures.
// Every "session" line lists what the counter data holds after Decode: each
// range's name (CounterData_GetRangeInfo and the host API), the result of
// evaluating all metrics of that range at once and how many came out NaN, and
// one metric that the collection did not configure, evaluated on range 0.
// The phases after "groups", and a group that needs more than one pass,
// report failures as "cupti_failure" lines and go on; every other step ends
// the probe on failure.
//
// Output: JSON lines on stdout only. "device", "plan" (segments of launches
// and the ranges that hold them), "baseline" (per-segment kernel times before
// any CUPTI call) and "baseline_before_enable", "device_supported", "chip",
// "counter_availability", one "metric" line per wanted metric, "config",
// "groups", one "session" line per collection (API step timings, Stop's pass
// outputs, dropped ranges), one "range" line per range and phase
// ({"kind":"range","phase":...,"name":...,"metrics":{name:value,...}, kernel
// time with and without the profiler}), "auto_segment" lines, "libraries"
// and "summary".
// If CUPTI reports that the device or system does not support the profiler
// or that the user lacks the privilege, the probe prints one line
// {"error": NAME, "call": ..., ...} and exits with status 3. Any other
// failure in a required step names the call on stderr and exits with status 1.
//
// Usage: range_profiler_probe [--launches N] [--metrics M1,M2,...] [--ncu-mode]
//   --launches N  launches per kernel range (default 10; the nested and
//                 repeated ranges use N/2 per segment)
//   --metrics     the metrics to try instead of the default list
//   --ncu-mode    run the plan once, same kernels and launch counts, with no
//                 CUPTI call at all, for `ncu` to measure
//                 (tests/gpu/compare_range_ncu.py compares the two)
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <link.h>
#include <mma.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#define PROBE_NAME "range_profiler_probe"
#include "probe_util.cuh"

// ---- failures that do not end the probe -----------------------------------------

// With ok null a failure ends the probe (cupti_check); otherwise it is
// reported as one "cupti_failure" line, *ok is cleared and false returned.
static bool check(CUptiResult r, const char *call, const char *phase, bool *ok) {
    if (!ok) {
        cupti_check(r, call);
        return true;
    }
    if (r == CUPTI_SUCCESS) return true;
    std::printf("{\"kind\":\"cupti_failure\",\"phase\":");
    json_string(phase);
    std::printf(",\"call\":");
    json_string(call);
    std::printf(",\"result\":");
    json_string(result_string(r));
    std::printf(",\"code\":%d,\"message\":", (int)r);
    json_string(result_message(r));
    std::printf("}\n");
    std::fflush(stdout);
    *ok = false;
    return false;
}

// ---- kernels ---------------------------------------------------------------------

#include "known_kernels.cuh"

// A chain of 16x16x16 half-precision matrix products per warp on the tensor
// cores (HMMA on sm_90): makes the tensor-pipe metrics non-zero. Each warp
// stores its 16x16 float accumulator at its own place in out.
extern "C" __global__ void wmma_loop(const __half *a, const __half *b, float *out, int iters) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < iters; ++k) wmma::mma_sync(acc, fa, fb, acc);
    size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    wmma::store_matrix_sync(out + warp * 256, acc, 16, wmma::mem_row_major);
}

// ---- workload and plan -----------------------------------------------------------

static const size_t kN = 64u << 20; // floats per array (256 MiB)
enum { kDivergent, kStrided, kTriad, kFma, kWmma, kKernels };
static const char *kKernelNames[kKernels] = {"divergent", "strided", "stream_triad", "fma_chains",
                                             "wmma_loop"};

struct Workload {
    float *a = nullptr, *b = nullptr, *c = nullptr, *wmma_out = nullptr;
    __half *ha = nullptr, *hb = nullptr;
    int sms = 0;
};

static void launch(const Workload &w, int k) {
    switch (k) {
    case kDivergent: divergent<<<w.sms * 16, 256>>>(w.a, 4096); break;
    case kStrided: strided<<<(unsigned)(kN / 8 / 256), 256>>>(w.b, w.a, kN); break;
    case kTriad: stream_triad<<<w.sms * 32, 256>>>(w.a, w.b, w.c, 3.0f, kN); break;
    case kFma: fma_chains<<<w.sms * 16, 256>>>(w.a, 8192); break;
    case kWmma: wmma_loop<<<w.sms * 8, 128>>>(w.ha, w.hb, w.wmma_out, 4096); break;
    }
}

// The plan: push, run (a segment: one kernel, n launches) and pop steps, the
// same in every phase and in --ncu-mode, so that launch i of a run is launch
// i of any other (the comparison with ncu relies on that order).
enum StepKind { kPush, kRun, kPop };
struct Step {
    StepKind kind;
    std::string name; // kPush: the range's own name
    int kernel = -1, launches = 0, segment = -1;
};
struct RangeInstance {
    std::string path; // names from the outermost range, joined by "/"
    std::vector<int> segments;
};
struct Plan {
    std::vector<Step> steps;
    std::vector<int> seg_kernel, seg_launches;
    std::vector<std::vector<std::string>> seg_ranges;
    std::vector<RangeInstance> instances; // in push order
    std::vector<int> launch_segment;      // segment of each launch, in launch order
};

static Plan make_plan(int launches) {
    Plan p;
    std::vector<int> open; // indices into p.instances
    auto push = [&](const char *name) {
        std::string path = open.empty() ? name : p.instances[open.back()].path + "/" + name;
        p.instances.push_back({path, {}});
        open.push_back((int)p.instances.size() - 1);
        p.steps.push_back({kPush, name});
    };
    auto run = [&](int k, int n) {
        int seg = (int)p.seg_kernel.size();
        p.seg_kernel.push_back(k);
        p.seg_launches.push_back(n);
        std::vector<std::string> paths;
        for (int i : open) {
            p.instances[i].segments.push_back(seg);
            paths.push_back(p.instances[i].path);
        }
        p.seg_ranges.push_back(paths);
        for (int l = 0; l < n; l++) p.launch_segment.push_back(seg);
        Step s{kRun, ""};
        s.kernel = k;
        s.launches = n;
        s.segment = seg;
        p.steps.push_back(s);
    };
    auto pop = [&]() {
        open.pop_back();
        p.steps.push_back({kPop, ""});
    };
    int halves = std::max(1, launches / 2);
    for (int k = 0; k < kKernels; k++) {
        push(kKernelNames[k]);
        run(k, launches);
        pop();
    }
    push("nested_outer");
    run(kTriad, halves);
    push("nested_inner");
    run(kFma, halves);
    pop();
    pop();
    push("repeated");
    run(kTriad, halves);
    pop();
    push("repeated");
    run(kTriad, halves);
    pop();
    return p;
}

static void print_plan(const Plan &p, int launches) {
    std::printf("{\"kind\":\"plan\",\"launches_per_range\":%d,\"segments\":[", launches);
    for (size_t s = 0; s < p.seg_kernel.size(); s++) {
        std::printf("%s{\"index\":%zu,\"kernel\":\"%s\",\"launches\":%d,\"ranges\":", s ? "," : "",
                    s, kKernelNames[p.seg_kernel[s]], p.seg_launches[s]);
        json_string_list(p.seg_ranges[s]);
        std::printf("}");
    }
    std::printf("],\"ranges\":[");
    for (size_t i = 0; i < p.instances.size(); i++) {
        std::printf("%s{\"name\":", i ? "," : "");
        json_string(p.instances[i].path.c_str());
        std::printf(",\"segments\":[");
        for (size_t j = 0; j < p.instances[i].segments.size(); j++)
            std::printf("%s%d", j ? "," : "", p.instances[i].segments[j]);
        std::printf("]}");
    }
    std::printf("],\"total_launches\":%zu}\n", p.launch_segment.size());
    std::fflush(stdout);
}

// One run of the plan: kernel time per segment (cudaEvent pairs around the
// segment's launches, read after the caller has synchronized), host time of
// push and pop, and any push or pop that CUPTI refused (a refused push gets
// no pop).
struct PlanRun {
    std::vector<cudaEvent_t> ev;
    std::vector<double> seg_ms;
    double push_pop_us_max = 0, push_pop_us_sum = 0;
    int push_pops = 0;
    std::vector<std::string> refused; // "push nested_outer/nested_inner: CUPTI_ERROR_..."
    double host_ms = 0;
};

static PlanRun run_plan(const Workload &w, const Plan &plan, CUpti_RangeProfiler_Object *rp) {
    PlanRun r;
    size_t nseg = plan.seg_kernel.size();
    r.ev.resize(2 * nseg);
    for (cudaEvent_t &e : r.ev) CUDA_CHECK(cudaEventCreate(&e));
    std::vector<bool> pushed;
    std::vector<std::string> path;
    double t0 = now_ms();
    for (const Step &s : plan.steps) {
        if (s.kind == kRun) {
            CUDA_CHECK(cudaEventRecord(r.ev[2 * s.segment]));
            for (int l = 0; l < s.launches; l++) launch(w, s.kernel);
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaEventRecord(r.ev[2 * s.segment + 1]));
            continue;
        }
        if (!rp) continue;
        if (s.kind == kPush) path.push_back(s.name);
        std::string joined; // the range's path, for the report
        for (size_t i = 0; i < path.size(); i++) joined += (i ? "/" : "") + path[i];
        CUptiResult res;
        double p0 = now_ms();
        if (s.kind == kPush) {
            CUpti_RangeProfiler_PushRange_Params p = {};
            p.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE;
            p.pRangeProfilerObject = rp;
            p.pRangeName = s.name.c_str();
            res = cuptiRangeProfilerPushRange(&p);
            pushed.push_back(res == CUPTI_SUCCESS);
        } else {
            bool was_pushed = pushed.back();
            pushed.pop_back();
            path.pop_back();
            if (!was_pushed) continue;
            CUpti_RangeProfiler_PopRange_Params p = {};
            p.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
            p.pRangeProfilerObject = rp;
            res = cuptiRangeProfilerPopRange(&p);
        }
        double us = (now_ms() - p0) * 1000.0;
        r.push_pop_us_max = std::max(r.push_pop_us_max, us);
        r.push_pop_us_sum += us;
        r.push_pops++;
        if (res != CUPTI_SUCCESS)
            r.refused.push_back(std::string(s.kind == kPush ? "push " : "pop ") + joined + ": " +
                                result_string(res));
    }
    r.host_ms = now_ms() - t0;
    return r;
}

// After a synchronize: the segment times, and the events released.
static void finish_run(PlanRun &r) {
    size_t nseg = r.ev.size() / 2;
    r.seg_ms.assign(nseg, NAN);
    for (size_t s = 0; s < nseg; s++) {
        float ms = 0.f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, r.ev[2 * s], r.ev[2 * s + 1]));
        r.seg_ms[s] = ms;
    }
    for (cudaEvent_t e : r.ev) CUDA_CHECK(cudaEventDestroy(e));
    r.ev.clear();
}

static std::vector<double> unprofiled_times(const Workload &w, const Plan &plan) {
    PlanRun r = run_plan(w, plan, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    finish_run(r);
    return r.seg_ms;
}

static void print_baseline(const char *kind, const std::vector<double> &ms) {
    std::printf("{\"kind\":\"%s\",\"segment_ms\":[", kind);
    for (size_t i = 0; i < ms.size(); i++) {
        if (i) std::printf(",");
        json_num(ms[i]);
    }
    std::printf("]}\n");
    std::fflush(stdout);
}

// ---- host API: configuration images and evaluation -----------------------------

static const char *kDefaultMetrics[] = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "gpu__time_duration.sum",
};

struct HostSetup {
    const char *chip = nullptr;
    std::vector<uint8_t> availability; // counter availability image of the context
};

static CUptiResult host_create(const HostSetup &hs, CUpti_Profiler_Host_Object **out) {
    CUpti_Profiler_Host_Initialize_Params p = {};
    p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = hs.chip;
    p.pCounterAvailabilityImage = hs.availability.empty() ? nullptr : hs.availability.data();
    CUptiResult r = cuptiProfilerHostInitialize(&p);
    *out = r == CUPTI_SUCCESS ? p.pHostObject : nullptr;
    return r;
}

static void host_destroy(CUpti_Profiler_Host_Object *h) {
    if (!h) return;
    CUpti_Profiler_Host_Deinitialize_Params p = {};
    p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    p.pHostObject = h;
    CUPTI_CHECK(cuptiProfilerHostDeinitialize(&p));
}

// A config image for these metrics, built on a host object of its own (so
// that a refused metric leaves nothing behind), and its pass count. On
// failure *failed_call names the step.
struct ConfigImage {
    std::vector<uint8_t> image;
    size_t passes = 0;
    double ms = 0;
    CUptiResult result = CUPTI_SUCCESS;
    const char *failed_call = nullptr;
};

static ConfigImage make_config(const HostSetup &hs, const std::vector<std::string> &metrics) {
    ConfigImage c;
    double t0 = now_ms();
    CUpti_Profiler_Host_Object *h = nullptr;
    std::vector<const char *> names;
    for (const std::string &m : metrics) names.push_back(m.c_str());
    c.result = host_create(hs, &h);
    if (c.result != CUPTI_SUCCESS) {
        c.failed_call = "cuptiProfilerHostInitialize";
        return c;
    }
    do {
        CUpti_Profiler_Host_ConfigAddMetrics_Params a = {};
        a.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
        a.pHostObject = h;
        a.ppMetricNames = names.data();
        a.numMetrics = names.size();
        if ((c.result = cuptiProfilerHostConfigAddMetrics(&a)) != CUPTI_SUCCESS) {
            c.failed_call = "cuptiProfilerHostConfigAddMetrics";
            break;
        }
        CUpti_Profiler_Host_GetConfigImageSize_Params s = {};
        s.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
        s.pHostObject = h;
        if ((c.result = cuptiProfilerHostGetConfigImageSize(&s)) != CUPTI_SUCCESS) {
            c.failed_call = "cuptiProfilerHostGetConfigImageSize";
            break;
        }
        c.image.assign(s.configImageSize, 0);
        CUpti_Profiler_Host_GetConfigImage_Params g = {};
        g.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
        g.pHostObject = h;
        g.configImageSize = c.image.size();
        g.pConfigImage = c.image.data();
        if ((c.result = cuptiProfilerHostGetConfigImage(&g)) != CUPTI_SUCCESS) {
            c.failed_call = "cuptiProfilerHostGetConfigImage";
            break;
        }
        CUpti_Profiler_Host_GetNumOfPasses_Params n = {};
        n.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
        n.configImageSize = c.image.size();
        n.pConfigImage = c.image.data();
        if ((c.result = cuptiProfilerHostGetNumOfPasses(&n)) != CUPTI_SUCCESS) {
            c.failed_call = "cuptiProfilerHostGetNumOfPasses";
            break;
        }
        c.passes = n.numOfPasses;
    } while (0);
    host_destroy(h);
    c.ms = now_ms() - t0;
    return c;
}

static const char *metric_type_name(CUpti_MetricType t) {
    switch (t) {
    case CUPTI_METRIC_TYPE_COUNTER: return "counter";
    case CUPTI_METRIC_TYPE_RATIO: return "ratio";
    case CUPTI_METRIC_TYPE_THROUGHPUT: return "throughput";
    default: return "?";
    }
}

static std::vector<std::string> split_commas(const char *s) {
    std::vector<std::string> out;
    std::string cur;
    for (; *s; s++) {
        if (*s == ',') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += *s;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

// ---- target API: one collection session --------------------------------------

static const size_t kUserRangeSlots = 32;

struct StopInfo {
    size_t pass_index = 0, target_nesting_level = 0;
    int all_submitted = 0;
};

// What one range of decoded counter data gave: its names, the result of the
// all-at-once evaluation and how many values were NaN or infinite.
struct RangeDiag {
    size_t index = 0;
    std::string name, host_api_name, evaluate;
    size_t nan_values = 0, inf_values = 0;
};

struct Session {
    const char *phase = "";
    bool *ok = nullptr; // null: failures end the probe
    CUpti_RangeProfiler_Object *rp = nullptr;
    std::vector<uint8_t> counter_data;
    size_t counter_data_ranges = 0; // maxNumOfRanges of the image
    uint16_t nesting_levels = 0;    // as given to SetConfig
    std::vector<RangeDiag> diag;
    // A metric outside the collection's configuration, evaluated on range 0:
    // does evaluation refuse it or return NaN with success?
    std::string foreign_metric, foreign_result;
    double foreign_value = NAN;
    double enable_ms = NAN, counter_data_ms = NAN, set_config_ms = NAN, start_ms = 0, stop_ms = 0,
           sync_ms = 0, decode_ms = NAN, evaluate_ms = NAN, disable_ms = NAN;
    size_t ranges_dropped = 0, ranges_in_data = 0;
    std::vector<StopInfo> stops;
    std::vector<PlanRun> runs;
    bool reused_object = false;
};

static bool rp_enable(Session &s, CUcontext ctx) {
    CUpti_RangeProfiler_Enable_Params p = {};
    p.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    p.ctx = ctx;
    double t0 = now_ms();
    if (!check(cuptiRangeProfilerEnable(&p), "cuptiRangeProfilerEnable", s.phase, s.ok))
        return false;
    s.enable_ms = now_ms() - t0;
    s.rp = p.pRangeProfilerObject;
    return true;
}

static bool rp_disable(Session &s) {
    if (!s.rp) return true;
    CUpti_RangeProfiler_Disable_Params p = {};
    p.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
    p.pRangeProfilerObject = s.rp;
    double t0 = now_ms();
    bool ok = true;
    // A failed Disable in a soft phase is reported; the object is dropped.
    bool r = check(cuptiRangeProfilerDisable(&p), "cuptiRangeProfilerDisable", s.phase,
                   s.ok ? &ok : nullptr);
    s.disable_ms = now_ms() - t0;
    s.rp = nullptr;
    return r;
}

static bool rp_counter_data(Session &s, const std::vector<std::string> &metrics,
                            size_t max_ranges) {
    std::vector<const char *> names;
    for (const std::string &m : metrics) names.push_back(m.c_str());
    double t0 = now_ms();
    CUpti_RangeProfiler_GetCounterDataSize_Params p = {};
    p.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    p.pRangeProfilerObject = s.rp;
    p.pMetricNames = names.data();
    p.numMetrics = names.size();
    p.maxNumOfRanges = max_ranges;
    p.maxNumRangeTreeNodes = (uint32_t)max_ranges; // must be >= maxNumOfRanges (rp:345)
    if (!check(cuptiRangeProfilerGetCounterDataSize(&p), "cuptiRangeProfilerGetCounterDataSize",
               s.phase, s.ok))
        return false;
    s.counter_data.assign(p.counterDataSize, 0);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params q = {};
    q.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    q.pRangeProfilerObject = s.rp;
    q.counterDataSize = s.counter_data.size();
    q.pCounterData = s.counter_data.data();
    if (!check(cuptiRangeProfilerCounterDataImageInitialize(&q),
               "cuptiRangeProfilerCounterDataImageInitialize", s.phase, s.ok))
        return false;
    s.counter_data_ms = now_ms() - t0;
    s.counter_data_ranges = max_ranges;
    return true;
}

static CUptiResult rp_set_config_raw(Session &s, const ConfigImage &cfg, CUpti_ProfilerRange range,
                                     CUpti_ProfilerReplayMode replay, size_t max_ranges,
                                     uint16_t levels) {
    CUpti_RangeProfiler_SetConfig_Params p = {};
    p.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    p.pRangeProfilerObject = s.rp;
    p.configSize = cfg.image.size();
    p.pConfig = cfg.image.data();
    p.counterDataImageSize = s.counter_data.size();
    p.pCounterDataImage = s.counter_data.data();
    p.range = range;
    p.replayMode = replay;
    p.maxRangesPerPass = max_ranges;
    p.numNestingLevels = levels; // 1 for auto ranges (rp:104)
    p.minNestingLevel = 1;
    s.nesting_levels = levels;
    // Pass 0; the target nesting level as NVIDIA's range profiler sample
    // helper starts it (0; the first run shows collection at level 1 with
    // it). Only application replay feeds Stop's outputs back here.
    p.passIndex = 0;
    p.targetNestingLevel = 0;
    double t0 = now_ms();
    CUptiResult r = cuptiRangeProfilerSetConfig(&p);
    s.set_config_ms = now_ms() - t0;
    return r;
}

// Start, the plan (with push/pop for user ranges), synchronize, Stop; again
// while CUPTI says passes remain and max_passes allows. Each pass is one
// PlanRun (kernel times of that pass).
static bool rp_collect(Session &s, const Workload &w, const Plan &plan, bool user_ranges,
                       int max_passes) {
    for (int pass = 0; pass < max_passes; pass++) {
        CUpti_RangeProfiler_Start_Params st = {};
        st.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
        st.pRangeProfilerObject = s.rp;
        double t0 = now_ms();
        if (!check(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart", s.phase, s.ok))
            return false;
        s.start_ms += now_ms() - t0;
        s.runs.push_back(run_plan(w, plan, user_ranges ? s.rp : nullptr));
        // The kernels finish before Stop, so that Stop's time is its own.
        t0 = now_ms();
        CUDA_CHECK(cudaDeviceSynchronize());
        s.sync_ms += now_ms() - t0;
        finish_run(s.runs.back());
        CUpti_RangeProfiler_Stop_Params sp = {};
        sp.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
        sp.pRangeProfilerObject = s.rp;
        t0 = now_ms();
        if (!check(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop", s.phase, s.ok))
            return false;
        s.stop_ms += now_ms() - t0;
        s.stops.push_back({sp.passIndex, sp.targetNestingLevel, (int)sp.isAllPassSubmitted});
        if (sp.isAllPassSubmitted) break;
    }
    return true;
}

static bool rp_decode(Session &s) {
    CUpti_RangeProfiler_DecodeData_Params p = {};
    p.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    p.pRangeProfilerObject = s.rp;
    double t0 = now_ms();
    if (!check(cuptiRangeProfilerDecodeData(&p), "cuptiRangeProfilerDecodeData", s.phase, s.ok))
        return false;
    s.decode_ms = now_ms() - t0;
    s.ranges_dropped = p.numOfRangeDropped;
    CUpti_RangeProfiler_GetCounterDataInfo_Params q = {};
    q.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    q.pCounterDataImage = s.counter_data.data();
    q.counterDataImageSize = s.counter_data.size();
    if (!check(cuptiRangeProfilerGetCounterDataInfo(&q), "cuptiRangeProfilerGetCounterDataInfo",
               s.phase, s.ok))
        return false;
    s.ranges_in_data = q.numTotalRanges;
    return true;
}

struct RangeValues {
    std::string name, host_api_name;
    std::vector<double> values;
    std::vector<std::string> errors; // per metric: "" or the result of its own evaluation
};

// Every range of the decoded counter data: its name, and the metrics
// evaluated all at once, or one by one if that fails (to name the culprit).
// Every range's outcome also goes to s.diag (printed with the session), and
// foreign, when given, is evaluated on range 0 into s.foreign_*.
static std::vector<RangeValues> rp_evaluate(Session &s, CUpti_Profiler_Host_Object *host,
                                            const std::vector<std::string> &metrics,
                                            const char *foreign = nullptr) {
    std::vector<RangeValues> out;
    std::vector<const char *> names;
    for (const std::string &m : metrics) names.push_back(m.c_str());
    s.diag.clear();
    double t0 = now_ms();
    for (size_t i = 0; i < s.ranges_in_data; i++) {
        RangeValues rv;
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {};
        ri.structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE;
        ri.pCounterDataImage = s.counter_data.data();
        ri.counterDataImageSize = s.counter_data.size();
        ri.rangeIndex = i;
        ri.rangeDelimiter = "/";
        if (!check(cuptiRangeProfilerCounterDataGetRangeInfo(&ri),
                   "cuptiRangeProfilerCounterDataGetRangeInfo", s.phase, s.ok))
            return out;
        // Who owns rangeName is not documented here (rp:440-441); copied.
        rv.name = ri.rangeName ? ri.rangeName : "";
        // The host API's name for the same index. CUPTI allocates it and the
        // caller is to free it (host:307-310), but not with what allocator:
        // a short-lived probe leaves it.
        CUpti_Profiler_Host_GetRangeName_Params hn = {};
        hn.structSize = CUpti_Profiler_Host_GetRangeName_Params_STRUCT_SIZE;
        hn.pCounterDataImage = s.counter_data.data();
        hn.counterDataImageSize = s.counter_data.size();
        hn.rangeIndex = i;
        hn.delimiter = "/";
        CUptiResult hr = cuptiProfilerHostGetRangeName(&hn);
        if (hr == CUPTI_SUCCESS && hn.pRangeName) {
            rv.host_api_name = hn.pRangeName;
        } else {
            rv.host_api_name = std::string("<") + result_string(hr) + ">";
        }
        rv.values.assign(metrics.size(), NAN);
        rv.errors.assign(metrics.size(), "");
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {};
        ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
        ev.pHostObject = host;
        ev.pCounterDataImage = s.counter_data.data();
        ev.counterDataImageSize = s.counter_data.size();
        ev.rangeIndex = i;
        ev.ppMetricNames = names.data();
        ev.numMetrics = names.size();
        ev.pMetricValues = rv.values.data();
        CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&ev);
        RangeDiag d;
        d.index = i;
        d.name = rv.name;
        d.host_api_name = rv.host_api_name;
        d.evaluate = result_string(r);
        if (r != CUPTI_SUCCESS) {
            for (size_t m = 0; m < names.size(); m++) {
                ev.ppMetricNames = &names[m];
                ev.numMetrics = 1;
                ev.pMetricValues = &rv.values[m];
                CUptiResult rm = cuptiProfilerHostEvaluateToGpuValues(&ev);
                if (rm != CUPTI_SUCCESS) {
                    rv.values[m] = NAN;
                    rv.errors[m] = result_string(rm);
                }
            }
        }
        for (double v : rv.values) {
            if (std::isnan(v)) d.nan_values++;
            if (std::isinf(v)) d.inf_values++;
        }
        s.diag.push_back(d);
        if (foreign && i == 0) {
            const char *one = foreign;
            ev.ppMetricNames = &one;
            ev.numMetrics = 1;
            ev.pMetricValues = &s.foreign_value;
            s.foreign_metric = foreign;
            s.foreign_value = NAN;
            s.foreign_result = result_string(cuptiProfilerHostEvaluateToGpuValues(&ev));
        }
        out.push_back(rv);
    }
    s.evaluate_ms = now_ms() - t0;
    return out;
}

static void print_session(const Session &s, const char *label, int group,
                          const std::vector<std::string> &metrics, size_t passes_needed) {
    std::printf("{\"kind\":\"session\",\"phase\":");
    json_string(s.phase);
    std::printf(",\"label\":");
    json_string(label);
    if (group >= 0) std::printf(",\"group\":%d", group);
    std::printf(",\"metrics\":");
    json_string_list(metrics);
    std::printf(",\"passes_needed\":%zu,\"passes_run\":%zu,\"stops\":[", passes_needed,
                s.stops.size());
    for (size_t i = 0; i < s.stops.size(); i++)
        std::printf("%s{\"pass_index\":%zu,\"target_nesting_level\":%zu,"
                    "\"is_all_pass_submitted\":%d}",
                    i ? "," : "", s.stops[i].pass_index, s.stops[i].target_nesting_level,
                    s.stops[i].all_submitted);
    std::printf("],\"reused_object\":%s,\"ms\":{\"enable\":", s.reused_object ? "true" : "false");
    json_num(s.enable_ms);
    std::printf(",\"counter_data_size_and_init\":");
    json_num(s.counter_data_ms);
    std::printf(",\"set_config\":");
    json_num(s.set_config_ms);
    std::printf(",\"start\":");
    json_num(s.start_ms);
    std::printf(",\"sync_before_stop\":");
    json_num(s.sync_ms);
    std::printf(",\"stop\":");
    json_num(s.stop_ms);
    std::printf(",\"decode\":");
    json_num(s.decode_ms);
    std::printf(",\"evaluate_all_ranges\":");
    json_num(s.evaluate_ms);
    std::printf(",\"disable\":");
    json_num(s.disable_ms);
    double pp_sum = 0, pp_max = 0, host = 0;
    int pp_n = 0;
    std::vector<std::string> refused;
    for (const PlanRun &r : s.runs) {
        pp_sum += r.push_pop_us_sum;
        pp_max = std::max(pp_max, r.push_pop_us_max);
        pp_n += r.push_pops;
        host += r.host_ms;
        for (const std::string &x : r.refused)
            if (std::find(refused.begin(), refused.end(), x) == refused.end()) refused.push_back(x);
    }
    std::printf(",\"plan_host\":");
    json_num(host);
    std::printf("},\"push_pop_us\":{\"calls\":%d,\"mean\":", pp_n);
    json_num(pp_n ? pp_sum / pp_n : NAN);
    std::printf(",\"max\":");
    json_num(pp_max);
    std::printf("},\"refused_push_pop\":");
    json_string_list(refused);
    std::printf(",\"counter_data_bytes\":%zu,\"counter_data_max_ranges\":%zu,"
                "\"nesting_levels\":%u,\"ranges_in_data\":%zu,\"ranges_dropped\":%zu,"
                "\"range_diagnostics\":[",
                s.counter_data.size(), s.counter_data_ranges, (unsigned)s.nesting_levels,
                s.ranges_in_data, s.ranges_dropped);
    for (size_t i = 0; i < s.diag.size(); i++) {
        const RangeDiag &d = s.diag[i];
        std::printf("%s{\"index\":%zu,\"name\":", i ? "," : "", d.index);
        json_string(d.name.c_str());
        std::printf(",\"host_api_name\":");
        json_string(d.host_api_name.c_str());
        std::printf(",\"evaluate\":");
        json_string(d.evaluate.c_str());
        std::printf(",\"nan_values\":%zu,\"inf_values\":%zu}", d.nan_values, d.inf_values);
    }
    std::printf("]");
    if (!s.foreign_metric.empty()) {
        std::printf(",\"foreign_metric\":{\"name\":");
        json_string(s.foreign_metric.c_str());
        std::printf(",\"result\":");
        json_string(s.foreign_result.c_str());
        std::printf(",\"value\":");
        json_num(s.foreign_value);
        std::printf(",\"is_nan\":%s}", std::isnan(s.foreign_value) ? "true" : "false");
    }
    std::printf("}\n");
    std::fflush(stdout);
}

// ---- ranges: mapping CUPTI's names to the plan, printing ----------------------

// The segments behind the k-th range of this name in the data (n of them).
// When CUPTI reports fewer ranges of a name than the plan pushed (ranges of
// one name merged), a range holds the segments of all of them.
static std::vector<int> segments_for(const Plan &plan, const std::string &name, int k, int n) {
    std::vector<const RangeInstance *> inst;
    for (const RangeInstance &ri : plan.instances)
        if (ri.path == name) inst.push_back(&ri);
    std::vector<int> segs;
    if (inst.empty()) return segs;
    if ((int)inst.size() == n && k < n) return inst[k]->segments;
    for (const RangeInstance *ri : inst)
        segs.insert(segs.end(), ri->segments.begin(), ri->segments.end());
    return segs;
}

struct MergedRange {
    std::string name, host_api_name;
    std::vector<int> segments;
    std::map<std::string, double> values;
    std::map<std::string, std::string> errors;
    // Metrics whose collection ended before Stop said all passes were
    // submitted: "passes run of passes needed" (passes x nesting levels).
    std::map<std::string, std::string> partial;
    std::vector<double> ms_with; // per collection that saw it
};

// Adds one session's ranges to the merged table (keyed by name and
// occurrence), with the kernel time of the range's segments in that session
// (mean over its passes).
static void merge_ranges(std::vector<MergedRange> &table, const Plan &plan, const Session &s,
                         const std::vector<RangeValues> &rv,
                         const std::vector<std::string> &metrics, size_t passes_needed) {
    bool complete = !s.stops.empty() && s.stops.back().all_submitted;
    std::string partial = std::to_string(s.stops.size()) + " of " +
                          std::to_string(passes_needed * std::max<size_t>(1, s.nesting_levels));
    std::map<std::string, int> count, seen;
    for (const RangeValues &r : rv) count[r.name]++;
    for (const RangeValues &r : rv) {
        int k = seen[r.name]++;
        std::string key = k ? r.name + "#" + std::to_string(k + 1) : r.name;
        MergedRange *m = nullptr;
        for (MergedRange &x : table)
            if (x.name == key) m = &x;
        if (!m) {
            table.push_back({});
            m = &table.back();
            m->name = key;
            m->host_api_name = r.host_api_name;
            m->segments = segments_for(plan, r.name, k, count[r.name]);
        }
        for (size_t i = 0; i < metrics.size(); i++) {
            m->values[metrics[i]] = r.values[i];
            if (!r.errors[i].empty()) m->errors[metrics[i]] = r.errors[i];
            if (!complete) m->partial[metrics[i]] = partial;
        }
        double with = 0;
        for (const PlanRun &run : s.runs)
            for (int seg : m->segments) with += run.seg_ms[seg];
        if (!s.runs.empty()) m->ms_with.push_back(with / s.runs.size());
    }
}

// ,"key":{"name":"text",...} when the map is not empty.
template <typename Map> static void print_string_map(const char *key, const Map &map) {
    if (map.empty()) return;
    std::printf(",\"%s\":{", key);
    bool first = true;
    for (const auto &kv : map) {
        std::printf("%s", first ? "" : ",");
        json_string(kv.first.c_str());
        std::printf(":");
        json_string(kv.second.c_str());
        first = false;
    }
    std::printf("}");
}

static void print_ranges(const char *phase, const std::vector<MergedRange> &table, const Plan &plan,
                         const std::vector<double> &baseline) {
    for (size_t i = 0; i < table.size(); i++) {
        const MergedRange &m = table[i];
        std::printf("{\"kind\":\"range\",\"phase\":");
        json_string(phase);
        std::printf(",\"index\":%zu,\"name\":", i);
        json_string(m.name.c_str());
        if (m.host_api_name != m.name) {
            std::printf(",\"host_api_name\":");
            json_string(m.host_api_name.c_str());
        }
        int launches = 0;
        std::vector<std::string> kernels;
        for (int seg : m.segments) {
            launches += plan.seg_launches[seg];
            std::string k = kKernelNames[plan.seg_kernel[seg]];
            if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(k);
        }
        std::printf(",\"segments\":[");
        for (size_t j = 0; j < m.segments.size(); j++)
            std::printf("%s%d", j ? "," : "", m.segments[j]);
        std::printf("],\"kernels\":");
        json_string_list(kernels);
        std::printf(",\"launches\":%d,\"metrics\":{", launches);
        bool first = true;
        for (const auto &kv : m.values) {
            std::printf("%s", first ? "" : ",");
            json_string(kv.first.c_str());
            std::printf(":");
            json_num(kv.second);
            first = false;
        }
        std::printf("}");
        print_string_map("errors", m.errors);
        print_string_map("not_all_passes", m.partial);
        double without = m.segments.empty() ? NAN : 0, with = NAN;
        for (int seg : m.segments) without += baseline[seg];
        if (!m.ms_with.empty()) {
            with = 0;
            for (double v : m.ms_with) with += v;
            with /= m.ms_with.size();
        }
        std::printf(",\"ms_with_profiler\":");
        json_num(with);
        std::printf(",\"ms_without_profiler\":");
        json_num(without);
        std::printf(",\"overhead_pct\":");
        json_num(100.0 * (with - without) / without);
        if (m.ms_with.size() > 1) {
            std::printf(",\"ms_with_profiler_per_session\":[");
            for (size_t j = 0; j < m.ms_with.size(); j++) {
                if (j) std::printf(",");
                json_num(m.ms_with[j]);
            }
            std::printf("]");
        }
        std::printf("}\n");
    }
    std::fflush(stdout);
}

// ---- reconfigure: a second collection on one range profiler object ------------

// The first of all metrics that this group does not hold, or null.
static const char *metric_outside(const std::vector<std::string> &all,
                                  const std::vector<std::string> &group) {
    for (const std::string &m : all)
        if (std::find(group.begin(), group.end(), m) == group.end()) return m.c_str();
    return nullptr;
}

// Enables an object and collects `first` once (Start, plan, Stop, Decode,
// evaluate). Then, on the same object: with `second`, a new counter data
// image and SetConfig; without, nothing (Start again into the first image).
// One more Start/Stop, Decode and evaluation of second_metrics. Prints the
// first session, the second's range lines (phase "reconfigured_<name>") and
// session, and a "reconfigure" line. True if the second collection gave at
// least one finite value.
static bool reconfigure_case(const char *name, CUcontext ctx, const Workload &w, const Plan &plan,
                             CUpti_Profiler_Host_Object *host, const std::vector<double> &baseline,
                             const ConfigImage &first,
                             const std::vector<std::string> &first_metrics,
                             const ConfigImage *second,
                             const std::vector<std::string> &second_metrics) {
    std::string phase2 = std::string("reconfigured_") + name;
    bool ok = true;
    Session a, b;
    a.phase = "reconfigure_first";
    a.ok = &ok;
    b.phase = phase2.c_str();
    b.ok = &ok;
    b.reused_object = true;
    const char *set_config = nullptr; // the second SetConfig's result, if called
    size_t values = 0, finite = 0;
    bool first_done = false;
    if (rp_enable(a, ctx) && rp_counter_data(a, first_metrics, kUserRangeSlots) &&
        check(rp_set_config_raw(a, first, CUPTI_UserRange, CUPTI_UserReplay, kUserRangeSlots, 1),
              "cuptiRangeProfilerSetConfig", a.phase, &ok) &&
        rp_collect(a, w, plan, true, 1) && rp_decode(a)) {
        rp_evaluate(a, host, first_metrics);
        first_done = true;
    }
    print_session(a, name, -1, first_metrics, first.passes);
    if (first_done) {
        b.rp = a.rp;
        bool go = true;
        if (second) {
            go = rp_counter_data(b, second_metrics, kUserRangeSlots);
            if (go) {
                CUptiResult r = rp_set_config_raw(b, *second, CUPTI_UserRange, CUPTI_UserReplay,
                                                  kUserRangeSlots, 1);
                set_config = result_string(r);
                go = check(r, "cuptiRangeProfilerSetConfig", b.phase, &ok);
            }
        } else {
            // The image given to the first SetConfig; swap moves the buffer
            // without reallocating, so CUPTI's pointer to it stays valid.
            b.counter_data.swap(a.counter_data);
            b.counter_data_ranges = a.counter_data_ranges;
            b.nesting_levels = a.nesting_levels;
        }
        if (go && rp_collect(b, w, plan, true, 1) && rp_decode(b)) {
            std::vector<RangeValues> rv = rp_evaluate(b, host, second_metrics);
            for (const RangeValues &r : rv)
                for (double v : r.values) {
                    values++;
                    if (std::isfinite(v)) finite++;
                }
            std::vector<MergedRange> t;
            merge_ranges(t, plan, b, rv, second_metrics, second ? second->passes : first.passes);
            print_ranges(b.phase, t, plan, baseline);
        }
        b.rp = nullptr;
    }
    rp_disable(a);
    print_session(b, name, -1, second_metrics, second ? second->passes : first.passes);
    std::printf("{\"kind\":\"reconfigure\",\"case\":");
    json_string(name);
    std::printf(",\"first_passes\":%zu,\"first_stop\":", first.passes);
    if (a.stops.empty()) {
        std::printf("null");
    } else {
        std::printf("{\"pass_index\":%zu,\"target_nesting_level\":%zu,"
                    "\"is_all_pass_submitted\":%d}",
                    a.stops.back().pass_index, a.stops.back().target_nesting_level,
                    a.stops.back().all_submitted);
    }
    std::printf(",\"second_passes\":%zu,\"set_config\":", second ? second->passes : first.passes);
    if (set_config) {
        json_string(set_config);
    } else {
        std::printf("null");
    }
    std::printf(",\"second_stop\":");
    if (b.stops.empty()) {
        std::printf("null");
    } else {
        std::printf("{\"pass_index\":%zu,\"target_nesting_level\":%zu,"
                    "\"is_all_pass_submitted\":%d}",
                    b.stops.back().pass_index, b.stops.back().target_nesting_level,
                    b.stops.back().all_submitted);
    }
    std::printf(",\"second_ranges_in_data\":%zu,\"second_values\":%zu,"
                "\"second_finite_values\":%zu,\"disable_ms\":",
                b.ranges_in_data, values, finite);
    json_num(a.disable_ms);
    std::printf(",\"ok\":%s}\n", ok ? "true" : "false");
    std::fflush(stdout);
    return finite > 0;
}

// ---- loaded libraries ------------------------------------------------------------

static int collect_library(struct dl_phdr_info *info, size_t, void *data) {
    auto *out = (std::vector<std::string> *)data;
    const char *n = info->dlpi_name;
    if (n && (std::strstr(n, "cupti") || std::strstr(n, "nvperf"))) out->push_back(n);
    return 0;
}

// ---- main ------------------------------------------------------------------------

int main(int argc, char **argv) {
    int launches = 10;
    bool ncu_mode = false;
    std::vector<std::string> wanted;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--ncu-mode")) {
            ncu_mode = true;
        } else if (!std::strcmp(argv[i], "--launches") && i + 1 < argc) {
            launches = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--metrics") && i + 1 < argc) {
            wanted = split_commas(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s [--launches N] [--metrics M1,M2,...] [--ncu-mode]\n",
                         argv[0]);
            return 2;
        }
    }
    if (launches < 1 || launches > 1000) {
        std::fprintf(stderr, "range_profiler_probe: --launches must be 1..1000\n");
        return 2;
    }
    if (wanted.empty())
        for (const char *m : kDefaultMetrics) wanted.push_back(m);

    // The context: the driver, then the runtime's primary context for device 0.
    CU_CHECK(cuInit(0));
    cudaDeviceProp prop;
    CUcontext ctx = primary_context(&prop);
    int driver = 0, runtime = 0;
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    uint32_t cupti_version = 0;
    if (!ncu_mode) CUPTI_CHECK(cuptiGetVersion(&cupti_version));
    std::printf("{\"kind\":\"device\",\"name\":");
    json_string(prop.name);
    std::printf(",\"cc\":\"%d.%d\",\"sms\":%d,\"driver\":%d,\"runtime\":%d,\"cupti_api\":%u,"
                "\"launches_per_range\":%d,\"mode\":\"%s\"}\n",
                prop.major, prop.minor, prop.multiProcessorCount, driver, runtime, cupti_version,
                launches, ncu_mode ? "ncu" : "probe");
    std::fflush(stdout);

    // Inputs by copy and memset only: no kernel runs outside the plan, so that
    // ncu's n-th profiled kernel is the plan's n-th launch.
    Workload w;
    w.sms = prop.multiProcessorCount;
    CUDA_CHECK(cudaMalloc(&w.a, kN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w.b, kN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w.c, kN * sizeof(float)));
    CUDA_CHECK(cudaMemset(w.a, 0, kN * sizeof(float)));
    CUDA_CHECK(cudaMemset(w.b, 0, kN * sizeof(float)));
    CUDA_CHECK(cudaMemset(w.c, 0, kN * sizeof(float)));
    size_t wmma_warps = (size_t)w.sms * 8 * 128 / 32;
    CUDA_CHECK(cudaMalloc(&w.wmma_out, wmma_warps * 256 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w.ha, 256 * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(&w.hb, 256 * sizeof(__half)));
    {
        std::vector<__half> h(256);
        for (int i = 0; i < 256; i++) h[i] = __float2half(0.001f * (float)(i % 7));
        CUDA_CHECK(cudaMemcpy(w.ha, h.data(), 256 * sizeof(__half), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(w.hb, h.data(), 256 * sizeof(__half), cudaMemcpyHostToDevice));
    }

    Plan plan = make_plan(launches);
    print_plan(plan, launches);

    if (ncu_mode) {
        std::vector<double> ms = unprofiled_times(w, plan);
        print_baseline("ncu_mode_run", ms);
        return 0;
    }

    // Warm-up (module load, clocks), then the baseline before any CUPTI call.
    unprofiled_times(w, plan);
    std::vector<double> baseline = unprofiled_times(w, plan);
    print_baseline("baseline", baseline);

    double t0 = now_ms();
    profiler_initialize();
    double profiler_init_ms = now_ms() - t0;

    profiler_check_device_supported(CUPTI_PROFILER_RANGE_PROFILING,
                                    "CUPTI_PROFILER_RANGE_PROFILING", profiler_init_ms,
                                    "device or configuration does not support the range profiler");

    HostSetup hs;
    hs.chip = chip_name_of_device0();
    std::printf("{\"kind\":\"chip\",\"chip\":");
    json_string(hs.chip);
    std::printf("}\n");

    // The counter availability image of this context (pt:549-567): size
    // first, then the image. It must be taken while no session is active.
    t0 = now_ms();
    {
        CUpti_Profiler_GetCounterAvailability_Params p = {};
        p.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
        p.ctx = ctx;
        CUPTI_CHECK(cuptiProfilerGetCounterAvailability(&p));
        hs.availability.assign(p.counterAvailabilityImageSize, 0);
        p.pCounterAvailabilityImage = hs.availability.data();
        CUPTI_CHECK(cuptiProfilerGetCounterAvailability(&p));
    }
    double availability_ms = now_ms() - t0;
    size_t max_hw_metrics_per_pass = 0;
    {
        CUpti_Profiler_Host_GetMaxNumHardwareMetricsPerPass_Params p = {};
        p.structSize = CUpti_Profiler_Host_GetMaxNumHardwareMetricsPerPass_Params_STRUCT_SIZE;
        p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        p.pChipName = hs.chip;
        p.pCounterAvailabilityImage = hs.availability.data();
        CUPTI_CHECK(cuptiProfilerHostGetMaxNumHardwareMetricsPerPass(&p));
        max_hw_metrics_per_pass = p.maxMetricsPerPass;
    }
    std::printf("{\"kind\":\"counter_availability\",\"bytes\":%zu,\"ms\":%.3f,"
                "\"max_hardware_metrics_per_pass\":%zu}\n",
                hs.availability.size(), availability_ms, max_hw_metrics_per_pass);
    std::fflush(stdout);

    // ---- host: each metric alone, then together ---------------------------------
    CUpti_Profiler_Host_Object *host = nullptr;
    t0 = now_ms();
    CUPTI_CHECK(host_create(hs, &host));
    double host_init_ms = now_ms() - t0;
    std::vector<std::string> accepted;
    for (const std::string &m : wanted) {
        CUpti_Profiler_Host_GetMetricProperties_Params pp = {};
        pp.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
        pp.pHostObject = host;
        pp.pMetricName = m.c_str();
        CUptiResult pr = cuptiProfilerHostGetMetricProperties(&pp);
        ConfigImage c = make_config(hs, {m});
        bool ok = c.result == CUPTI_SUCCESS;
        std::printf("{\"kind\":\"metric\",\"name\":");
        json_string(m.c_str());
        std::printf(",\"accepted\":%s,\"properties_result\":", ok ? "true" : "false");
        json_string(result_string(pr));
        if (pr == CUPTI_SUCCESS) {
            std::printf(",\"type\":\"%s\",\"hw_unit\":", metric_type_name(pp.metricType));
            json_string(pp.pHwUnit);
            std::printf(",\"dim_unit\":");
            json_string(pp.pDimUnit);
            std::printf(",\"description\":");
            json_string(pp.pDescription);
        }
        if (ok) {
            std::printf(",\"passes_alone\":%zu,\"config_bytes\":%zu,\"config_ms\":%.3f", c.passes,
                        c.image.size(), c.ms);
            accepted.push_back(m);
        } else {
            std::printf(",\"failed_call\":\"%s\",\"result\":", c.failed_call);
            json_string(result_string(c.result));
        }
        std::printf("}\n");
    }
    std::fflush(stdout);
    if (accepted.empty()) {
        std::printf("{\"error\":\"NO_METRICS\",\"call\":\"cuptiProfilerHostConfigAddMetrics\","
                    "\"code\":0,\"message\":\"the host API accepted none of the metrics\"}\n");
        return 3;
    }
    ConfigImage all = make_config(hs, accepted);
    CUPTI_CHECK(all.result);
    std::printf("{\"kind\":\"config\",\"metrics\":");
    json_string_list(accepted);
    std::printf(",\"passes\":%zu,\"config_bytes\":%zu,\"config_image_ms\":%.3f,"
                "\"host_initialize_ms\":%.3f}\n",
                all.passes, all.image.size(), all.ms, host_init_ms);
    std::fflush(stdout);

    // First-fit into groups of one pass each; a metric that needs more than
    // one pass alone gets a group of its own, marked.
    std::vector<std::vector<std::string>> groups;
    std::vector<ConfigImage> group_cfg;
    double grouping_ms = now_ms();
    for (const std::string &m : accepted) {
        bool placed = false;
        for (size_t g = 0; g < groups.size() && !placed; g++) {
            if (group_cfg[g].passes != 1) continue;
            std::vector<std::string> trial = groups[g];
            trial.push_back(m);
            ConfigImage c = make_config(hs, trial);
            if (c.result == CUPTI_SUCCESS && c.passes == 1) {
                groups[g] = trial;
                group_cfg[g] = c;
                placed = true;
            }
        }
        if (!placed) {
            groups.push_back({m});
            group_cfg.push_back(make_config(hs, {m}));
        }
    }
    grouping_ms = now_ms() - grouping_ms;
    std::printf("{\"kind\":\"groups\",\"count\":%zu,\"grouping_ms\":%.3f,\"groups\":[",
                groups.size(), grouping_ms);
    for (size_t g = 0; g < groups.size(); g++) {
        std::printf("%s{\"metrics\":", g ? "," : "");
        json_string_list(groups[g]);
        std::printf(",\"passes\":%zu,\"config_bytes\":%zu}", group_cfg[g].passes,
                    group_cfg[g].image.size());
    }
    std::printf("]}\n");
    std::fflush(stdout);

    std::vector<double> baseline2 = unprofiled_times(w, plan);
    print_baseline("baseline_before_enable", baseline2);

    // ---- groups: user ranges, user replay, one pass each, no replay ------------
    // No replay: gpufl cannot run an application scope twice. Each group gets
    // an object of its own. The first GPU run reused one object, calling
    // SetConfig again for the next group: Stop then went on counting the
    // passes of the first group's 8-pass configuration (pass_index 2, 3, never
    // all submitted) and even the one-pass group came out all null; the
    // reconfigure phase below measures that on its own. A group that needs
    // more than one pass runs once like the others, with failures reported
    // rather than fatal; its metrics are expected null ("not_all_passes").
    std::vector<MergedRange> merged;
    double groups_disable_ms = 0;
    for (size_t g = 0; g < groups.size(); g++) {
        Session cur;
        cur.phase = "groups";
        bool soft_ok = true;
        cur.ok = group_cfg[g].passes == 1 ? nullptr : &soft_ok;
        if (rp_enable(cur, ctx) && rp_counter_data(cur, groups[g], kUserRangeSlots) &&
            check(rp_set_config_raw(cur, group_cfg[g], CUPTI_UserRange, CUPTI_UserReplay,
                                    kUserRangeSlots, 1),
                  "cuptiRangeProfilerSetConfig", cur.phase, cur.ok) &&
            rp_collect(cur, w, plan, true, 1) && rp_decode(cur)) {
            std::vector<RangeValues> rv =
                rp_evaluate(cur, host, groups[g], metric_outside(accepted, groups[g]));
            merge_ranges(merged, plan, cur, rv, groups[g], group_cfg[g].passes);
        }
        rp_disable(cur);
        if (std::isfinite(cur.disable_ms)) groups_disable_ms += cur.disable_ms;
        print_session(cur, "group, own object, no replay", (int)g, groups[g], group_cfg[g].passes);
    }
    std::printf("{\"kind\":\"groups_done\",\"object_per_group\":true,\"disable_ms_total\":");
    json_num(groups_disable_ms);
    std::printf("}\n");
    print_ranges("user_groups", merged, plan, baseline);

    // ---- reconfigure: a second collection on one object -------------------------
    // The largest one-pass group is the base; "after_complete" then sets a
    // different one-pass configuration (the group less its first metric),
    // "again_without_set_config" just starts again, and "after_partial"
    // repeats the first run's sequence (one pass of the first multi-pass
    // group, then SetConfig of the one-pass group).
    int one_pass = -1, multi_pass = -1;
    for (size_t g = 0; g < groups.size(); g++) {
        if (group_cfg[g].passes == 1 &&
            (one_pass < 0 || groups[g].size() > groups[(size_t)one_pass].size()))
            one_pass = (int)g;
        if (group_cfg[g].passes > 1 && multi_pass < 0) multi_pass = (int)g;
    }
    bool reuse_works = false, again_works = false;
    if (one_pass >= 0) {
        const std::vector<std::string> &base = groups[(size_t)one_pass];
        const ConfigImage &base_cfg = group_cfg[(size_t)one_pass];
        std::vector<std::string> other(base.size() > 1 ? base.begin() + 1 : base.begin(),
                                       base.end());
        ConfigImage other_cfg = make_config(hs, other);
        if (other_cfg.result == CUPTI_SUCCESS)
            reuse_works = reconfigure_case("after_complete", ctx, w, plan, host, baseline, base_cfg,
                                           base, &other_cfg, other);
        again_works = reconfigure_case("again_without_set_config", ctx, w, plan, host, baseline,
                                       base_cfg, base, nullptr, base);
        if (multi_pass >= 0)
            reconfigure_case("after_partial", ctx, w, plan, host, baseline,
                             group_cfg[(size_t)multi_pass], groups[(size_t)multi_pass], &base_cfg,
                             base);
    }

    // ---- the whole configuration: once without replay, then replayed ------------
    if (all.passes > 1) {
        bool ok = true;
        Session one;
        one.phase = "one_pass_of_multipass";
        one.ok = &ok;
        if (rp_enable(one, ctx) && rp_counter_data(one, accepted, kUserRangeSlots) &&
            check(
                rp_set_config_raw(one, all, CUPTI_UserRange, CUPTI_UserReplay, kUserRangeSlots, 1),
                "cuptiRangeProfilerSetConfig", one.phase, &ok) &&
            rp_collect(one, w, plan, true, 1) && rp_decode(one)) {
            std::vector<RangeValues> rv = rp_evaluate(one, host, accepted);
            std::vector<MergedRange> t;
            merge_ranges(t, plan, one, rv, accepted, all.passes);
            print_ranges(one.phase, t, plan, baseline);
        }
        rp_disable(one);
        print_session(one, "all metrics, one pass run, no replay", -1, accepted, all.passes);

        ok = true;
        Session rep;
        rep.phase = "user_replay_all";
        rep.ok = &ok;
        if (rp_enable(rep, ctx) && rp_counter_data(rep, accepted, kUserRangeSlots) &&
            check(
                rp_set_config_raw(rep, all, CUPTI_UserRange, CUPTI_UserReplay, kUserRangeSlots, 1),
                "cuptiRangeProfilerSetConfig", rep.phase, &ok) &&
            rp_collect(rep, w, plan, true, (int)all.passes + 4) && rp_decode(rep)) {
            std::vector<RangeValues> rv = rp_evaluate(rep, host, accepted);
            std::vector<MergedRange> t;
            merge_ranges(t, plan, rep, rv, accepted, all.passes);
            print_ranges(rep.phase, t, plan, baseline);
        }
        rp_disable(rep);
        print_session(rep, "all metrics, the probe replays the plan", -1, accepted, all.passes);
    }

    // ---- two nesting levels (largest one-pass group), replayed as needed -------
    // Stop counts passes per nesting level (level 1 pass 0, level 2 pass 0,
    // level 1 pass 1, ...): the first run gave the 8-pass group 8 runs of the
    // 16 it needed and every value was null. A one-pass group needs 2.
    {
        size_t ng = one_pass >= 0 ? (size_t)one_pass : 0;
        bool ok = true;
        Session nest;
        nest.phase = "nested2";
        nest.ok = &ok;
        if (rp_enable(nest, ctx) && rp_counter_data(nest, groups[ng], kUserRangeSlots) &&
            check(rp_set_config_raw(nest, group_cfg[ng], CUPTI_UserRange, CUPTI_UserReplay,
                                    kUserRangeSlots, 2),
                  "cuptiRangeProfilerSetConfig", nest.phase, &ok) &&
            rp_collect(nest, w, plan, true, (int)(2 * group_cfg[ng].passes + 2)) &&
            rp_decode(nest)) {
            std::vector<RangeValues> rv = rp_evaluate(nest, host, groups[ng]);
            std::vector<MergedRange> t;
            merge_ranges(t, plan, nest, rv, groups[ng], group_cfg[ng].passes);
            print_ranges(nest.phase, t, plan, baseline);
        }
        rp_disable(nest);
        print_session(nest, "largest one-pass group, numNestingLevels 2, replayed", (int)ng,
                      groups[ng], group_cfg[ng].passes);
    }

    // ---- auto ranges, kernel replay: one range per launch ------------------------
    {
        bool ok = true;
        Session au;
        au.phase = "auto";
        au.ok = &ok;
        size_t slots = plan.launch_segment.size() + 8;
        std::vector<RangeValues> rv;
        if (rp_enable(au, ctx) && rp_counter_data(au, accepted, slots) &&
            check(rp_set_config_raw(au, all, CUPTI_AutoRange, CUPTI_KernelReplay, slots, 1),
                  "cuptiRangeProfilerSetConfig", au.phase, &ok) &&
            rp_collect(au, w, plan, false, 1) && rp_decode(au))
            rv = rp_evaluate(au, host, accepted);
        rp_disable(au);
        print_session(au, "all metrics, auto range, kernel replay", -1, accepted, all.passes);
        // Range i is launch i of the plan (auto range names count launches,
        // host:317-318).
        for (size_t i = 0; i < rv.size(); i++) {
            int seg = i < plan.launch_segment.size() ? plan.launch_segment[i] : -1;
            std::printf("{\"kind\":\"range\",\"phase\":\"auto\",\"index\":%zu,\"name\":", i);
            json_string(rv[i].name.c_str());
            std::printf(",\"segment\":%d,\"kernel\":", seg);
            json_string(seg >= 0 ? kKernelNames[plan.seg_kernel[seg]] : "");
            std::printf(",\"launches\":1,\"metrics\":{");
            for (size_t m = 0; m < accepted.size(); m++) {
                std::printf("%s", m ? "," : "");
                json_string(accepted[m].c_str());
                std::printf(":");
                json_num(rv[i].values[m]);
            }
            std::printf("}}\n");
        }
        if (!au.runs.empty())
            for (size_t seg = 0; seg < plan.seg_kernel.size(); seg++) {
                double with = au.runs[0].seg_ms[seg], without = baseline[seg];
                std::printf("{\"kind\":\"auto_segment\",\"segment\":%zu,\"kernel\":\"%s\","
                            "\"launches\":%d,\"ms_with_profiler\":",
                            seg, kKernelNames[plan.seg_kernel[seg]], plan.seg_launches[seg]);
                json_num(with);
                std::printf(",\"ms_without_profiler\":");
                json_num(without);
                std::printf(",\"overhead_pct\":");
                json_num(100.0 * (with - without) / without);
                std::printf("}\n");
            }
        std::fflush(stdout);
    }

    host_destroy(host);
    std::vector<std::string> libs;
    dl_iterate_phdr(collect_library, &libs);
    std::printf("{\"kind\":\"libraries\",\"loaded\":");
    json_string_list(libs);
    std::printf("}\n");
    t0 = now_ms();
    profiler_deinitialize();
    double deinit_ms = now_ms() - t0;
    std::printf("{\"kind\":\"summary\",\"chip\":");
    json_string(hs.chip);
    std::printf(",\"launches_per_range\":%d,\"metrics_wanted\":%zu,\"metrics_accepted\":%zu,"
                "\"passes_all\":%zu,\"groups\":%zu,\"profiler_initialize_ms\":%.3f,"
                "\"profiler_deinitialize_ms\":%.3f,\"set_config_on_same_object_works\":%s,"
                "\"collect_again_without_set_config_works\":%s}\n",
                launches, wanted.size(), accepted.size(), all.passes, groups.size(),
                profiler_init_ms, deinit_ms, reuse_works ? "true" : "false",
                again_works ? "true" : "false");
    std::fflush(stdout);
    CUDA_CHECK(cudaFree(w.a));
    CUDA_CHECK(cudaFree(w.b));
    CUDA_CHECK(cudaFree(w.c));
    CUDA_CHECK(cudaFree(w.wmma_out));
    CUDA_CHECK(cudaFree(w.ha));
    CUDA_CHECK(cudaFree(w.hb));
    return 0;
}
