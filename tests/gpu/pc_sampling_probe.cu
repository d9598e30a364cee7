// pc_sampling_probe: a standalone check of CUPTI's PC Sampling API
// (cupti_pcsampling.h) on a real GPU, written before gpufl's PcSampling engine
// so that the engine is designed from measured facts (docs/design/pc-sampling.md).
//
// It links only the CUDA runtime, the driver (for the current CUcontext) and
// libcupti; nothing of gpufl. It runs two known kernels (a memory-bound strided
// load and a compute-bound FMA loop), first without PC sampling, then with PC
// sampling in continuous mode, while a second thread drains the samples every
// few milliseconds as gpufl's collector would. It prints JSON lines: one
// "config" line (CUPTI's defaults and what was set), one "function" line per
// sampled function, and one "summary" line (drops, hardware-buffer-full
// flags, kernel times with and without sampling).
//
// Usage: pc_sampling_probe [PERIOD] [late|startstop]
//   PERIOD     sampling period exponent, 5..31 (2^PERIOD cycles); 0 keeps
//              CUPTI's default. Default 0.
//   late       (default) the unsampled kernels run before PC sampling is
//              enabled, as when gpufl is initialised after the first kernel.
//   startstop  PC sampling is enabled before any kernel with start/stop
//              control; the unsampled runs happen while it is stopped.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define CUPTI_CHECK(call)                                                                          \
    do {                                                                                           \
        CUptiResult r_ = (call);                                                                   \
        if (r_ != CUPTI_SUCCESS) {                                                                 \
            const char *s_ = nullptr;                                                              \
            cuptiGetResultString(r_, &s_);                                                         \
            std::fprintf(stderr, "pc_sampling_probe: %s failed: %s (%d)\n", #call, s_ ? s_ : "?",  \
                         (int)r_);                                                                 \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "pc_sampling_probe: %s failed: %s\n", #call,                      \
                         cudaGetErrorString(e_));                                                  \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

#define CU_CHECK(call)                                                                             \
    do {                                                                                           \
        CUresult c_ = (call);                                                                      \
        if (c_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = nullptr;                                                              \
            cuGetErrorString(c_, &s_);                                                             \
            std::fprintf(stderr, "pc_sampling_probe: %s failed: %s\n", #call, s_ ? s_ : "?");      \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

// ---- kernels (extern "C" so that CUPTI reports plain names) ----------------

// Each thread reads one float per pass at a scattered index (odd stride modulo
// a power of two, so every element is read once per pass): every 4-byte load
// pulls its own 32-byte sector, so the kernel is bound by memory latency and
// bandwidth.
extern "C" __global__ void probe_strided_load(const float *in, float *out, unsigned n,
                                              unsigned stride, int passes) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.f;
    for (int p = 0; p < passes; p++) acc += in[((i + (unsigned)p) * stride) & (n - 1)];
    out[i] = acc;
}

// Four independent FMA chains per thread, no memory traffic in the loop.
extern "C" __global__ void probe_fma_loop(float *out, int iters) {
    float a = threadIdx.x * 1e-3f, b = a + 1.f, c = a + 2.f, d = a + 3.f;
    const float m = 0.999999f, k = 1e-7f;
    for (int i = 0; i < iters; i++) {
        a = fmaf(a, m, k);
        b = fmaf(b, m, k);
        c = fmaf(c, m, k);
        d = fmaf(d, m, k);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d;
}

// ---- workload ----------------------------------------------------------------

static const unsigned kN = 1u << 25; // 32 Mi floats, 128 MiB per buffer
static const unsigned kStride = 33;
static const int kPasses = 8;
static const int kFmaIters = 40000;
static const int kLaunches = 20; // launches per kernel per phase

struct Workload {
    float *in = nullptr, *out = nullptr;
    int fma_blocks = 0;
};

// Launches one kernel kLaunches times and returns the mean time per launch in
// ms, measured with events around the whole batch.
static double time_kernel(const Workload &w, bool fma) {
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaEventRecord(e0));
    for (int l = 0; l < kLaunches; l++) {
        if (fma)
            probe_fma_loop<<<w.fma_blocks, 256>>>(w.out, kFmaIters);
        else
            probe_strided_load<<<kN / 256, 256>>>(w.in, w.out, kN, kStride, kPasses);
    }
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return ms / kLaunches;
}

// ---- PC sampling state --------------------------------------------------------

static const size_t kCollectPcs = 4096; // PC records per GetData buffer

struct FunctionStats {
    uint64_t samples = 0;
    std::map<uint64_t, int> pcs; // pcOffset -> present
    std::map<uint32_t, uint64_t> by_reason;
};

struct Totals {
    std::mutex mu;
    std::map<std::string, FunctionStats> functions;
    uint64_t drains = 0, drains_with_records = 0;
    uint64_t total_samples_sum = 0, total_samples_max = 0;
    uint64_t dropped_sum = 0, dropped_max = 0;
    uint64_t non_user_sum = 0;
    uint64_t hw_full_flags = 0, getdata_oom = 0;
    uint64_t records = 0, record_samples = 0;
    uint64_t max_remaining = 0;
    std::map<uint64_t, int> range_ids;
};

static CUpti_PCSamplingData *alloc_buffer(size_t num_reasons) {
    CUpti_PCSamplingData *d = (CUpti_PCSamplingData *)std::calloc(1, sizeof(CUpti_PCSamplingData));
    d->size = sizeof(CUpti_PCSamplingData);
    d->collectNumPcs = kCollectPcs;
    d->pPcData = (CUpti_PCSamplingPCData *)std::calloc(kCollectPcs, sizeof(CUpti_PCSamplingPCData));
    for (size_t i = 0; i < kCollectPcs; i++) {
        d->pPcData[i].size = sizeof(CUpti_PCSamplingPCData);
        d->pPcData[i].stallReason = (CUpti_PCSamplingStallReason *)std::calloc(
            num_reasons, sizeof(CUpti_PCSamplingStallReason));
    }
    return d;
}

// Folds one filled buffer into the totals. Function names are allocated by
// CUPTI and may be shared between records; the probe never frees them (it is
// a short-lived process).
static void absorb(Totals &t, const CUpti_PCSamplingData *d) {
    std::lock_guard<std::mutex> g(t.mu);
    t.total_samples_sum += d->totalSamples;
    if (d->totalSamples > t.total_samples_max) t.total_samples_max = d->totalSamples;
    t.dropped_sum += d->droppedSamples;
    if (d->droppedSamples > t.dropped_max) t.dropped_max = d->droppedSamples;
    t.non_user_sum += d->nonUsrKernelsTotalSamples;
    if (d->hardwareBufferFull) t.hw_full_flags++;
    if (d->remainingNumPcs > t.max_remaining) t.max_remaining = d->remainingNumPcs;
    if (d->totalNumPcs > 0) {
        t.drains_with_records++;
        t.range_ids[d->rangeId] = 1;
    }
    for (size_t i = 0; i < d->totalNumPcs; i++) {
        const CUpti_PCSamplingPCData &pc = d->pPcData[i];
        FunctionStats &f = t.functions[pc.functionName ? pc.functionName : "(unnamed)"];
        f.pcs[pc.pcOffset] = 1;
        t.records++;
        for (size_t r = 0; r < pc.stallReasonCount; r++) {
            f.samples += pc.stallReason[r].samples;
            f.by_reason[pc.stallReason[r].pcSamplingStallReasonIndex] += pc.stallReason[r].samples;
            t.record_samples += pc.stallReason[r].samples;
        }
    }
}

// One cuptiPCSamplingGetData call. A full hardware buffer is reported by
// CUPTI_ERROR_OUT_OF_MEMORY: counted, not fatal. Returns remainingNumPcs.
static size_t drain_once(CUcontext ctx, CUpti_PCSamplingData *buf, Totals &t) {
    CUpti_PCSamplingGetDataParams p = {};
    p.size = CUpti_PCSamplingGetDataParamsSize;
    p.ctx = ctx;
    p.pcSamplingData = buf;
    buf->totalNumPcs = 0;
    buf->remainingNumPcs = 0;
    CUptiResult r = cuptiPCSamplingGetData(&p);
    {
        std::lock_guard<std::mutex> g(t.mu);
        t.drains++;
    }
    if (r == CUPTI_ERROR_OUT_OF_MEMORY) {
        std::lock_guard<std::mutex> g(t.mu);
        t.getdata_oom++;
    } else if (r != CUPTI_SUCCESS) {
        const char *s = nullptr;
        cuptiGetResultString(r, &s);
        std::fprintf(stderr, "pc_sampling_probe: cuptiPCSamplingGetData failed: %s\n", s ? s : "?");
        std::exit(1);
    }
    absorb(t, buf);
    return buf->remainingNumPcs;
}

static void set_attr(CUcontext ctx, CUpti_PCSamplingConfigurationInfo info, const char *what) {
    CUpti_PCSamplingConfigurationInfoParams p = {};
    p.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    p.ctx = ctx;
    p.numAttributes = 1;
    p.pPCSamplingConfigurationInfo = &info;
    CUptiResult r = cuptiPCSamplingSetConfigurationAttribute(&p);
    if (r != CUPTI_SUCCESS || info.attributeStatus != CUPTI_SUCCESS) {
        const char *s = nullptr;
        cuptiGetResultString(r != CUPTI_SUCCESS ? r : info.attributeStatus, &s);
        std::fprintf(stderr,
                     "pc_sampling_probe: cuptiPCSamplingSetConfigurationAttribute(%s) "
                     "failed: %s\n",
                     what, s ? s : "?");
        std::exit(1);
    }
}

static CUpti_PCSamplingConfigurationInfo
get_attr(CUcontext ctx, CUpti_PCSamplingConfigurationAttributeType type, const char *what) {
    CUpti_PCSamplingConfigurationInfo info = {};
    info.attributeType = type;
    CUpti_PCSamplingConfigurationInfoParams p = {};
    p.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    p.ctx = ctx;
    p.numAttributes = 1;
    p.pPCSamplingConfigurationInfo = &info;
    CUptiResult r = cuptiPCSamplingGetConfigurationAttribute(&p);
    if (r != CUPTI_SUCCESS || info.attributeStatus != CUPTI_SUCCESS) {
        const char *s = nullptr;
        cuptiGetResultString(r != CUPTI_SUCCESS ? r : info.attributeStatus, &s);
        std::fprintf(stderr,
                     "pc_sampling_probe: cuptiPCSamplingGetConfigurationAttribute(%s) "
                     "failed: %s\n",
                     what, s ? s : "?");
        std::exit(1);
    }
    return info;
}

static void json_string(const char *s) {
    std::putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            std::printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            std::printf("\\u%04x", (unsigned char)*s);
        else
            std::putchar(*s);
    }
    std::putchar('"');
}

int main(int argc, char **argv) {
    unsigned period = argc > 1 ? (unsigned)std::strtoul(argv[1], nullptr, 10) : 0;
    bool startstop = argc > 2 && std::strcmp(argv[2], "startstop") == 0;
    if (argc > 2 && !startstop && std::strcmp(argv[2], "late") != 0) {
        std::fprintf(stderr, "usage: %s [PERIOD] [late|startstop]\n", argv[0]);
        return 2;
    }
    if (period != 0 && (period < 5 || period > 31)) {
        std::fprintf(stderr, "pc_sampling_probe: PERIOD must be 0 or 5..31\n");
        return 2;
    }

    // The runtime creates the device's primary context; CUPTI wants its handle.
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(0));
    CUcontext ctx = nullptr;
    CU_CHECK(cuCtxGetCurrent(&ctx));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));

    Workload w;
    w.fma_blocks = prop.multiProcessorCount * 8;
    CUDA_CHECK(cudaMalloc(&w.in, kN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w.out, kN * sizeof(float)));
    CUDA_CHECK(cudaMemset(w.in, 0, kN * sizeof(float)));

    auto enable = [&]() {
        CUpti_PCSamplingEnableParams p = {};
        p.size = CUpti_PCSamplingEnableParamsSize;
        p.ctx = ctx;
        CUPTI_CHECK(cuptiPCSamplingEnable(&p));
    };

    double base_load = 0, base_fma = 0;
    if (!startstop) {
        // Warm-up (module load, clocks), then the unsampled timings.
        time_kernel(w, false);
        time_kernel(w, true);
        base_load = time_kernel(w, false);
        base_fma = time_kernel(w, true);
    }

    auto t_enable0 = std::chrono::steady_clock::now();
    enable();
    auto t_enable1 = std::chrono::steady_clock::now();

    // Stall reasons: all PC sampling calls come after cuptiPCSamplingEnable.
    size_t num_reasons = 0;
    {
        CUpti_PCSamplingGetNumStallReasonsParams p = {};
        p.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
        p.ctx = ctx;
        p.numStallReasons = &num_reasons;
        CUPTI_CHECK(cuptiPCSamplingGetNumStallReasons(&p));
    }
    std::vector<uint32_t> reason_index(num_reasons);
    std::vector<char *> reason_name(num_reasons);
    for (size_t i = 0; i < num_reasons; i++)
        reason_name[i] = (char *)std::calloc(1, CUPTI_STALL_REASON_STRING_SIZE);
    {
        CUpti_PCSamplingGetStallReasonsParams p = {};
        p.size = CUpti_PCSamplingGetStallReasonsParamsSize;
        p.ctx = ctx;
        p.numStallReasons = num_reasons;
        p.stallReasonIndex = reason_index.data();
        p.stallReasons = reason_name.data();
        CUPTI_CHECK(cuptiPCSamplingGetStallReasons(&p));
    }

    // CUPTI's defaults, read before anything is set.
    CUpti_PCSamplingConfigurationInfo dflt_period =
        get_attr(ctx, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD, "period");
    CUpti_PCSamplingConfigurationInfo dflt_scratch =
        get_attr(ctx, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE, "scratch");
    CUpti_PCSamplingConfigurationInfo dflt_hw =
        get_attr(ctx, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE, "hwbuf");
    CUpti_PCSamplingConfigurationInfo dflt_sleep = get_attr(
        ctx, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN, "sleep");
    CUpti_PCSamplingConfigurationInfo dflt_mode =
        get_attr(ctx, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE, "mode");

    // Configuration: continuous mode, parsed output, the buffer CUPTI fills at
    // cuptiPCSamplingDisable, and the period when one was given.
    CUpti_PCSamplingData *disable_buf = alloc_buffer(num_reasons);
    CUpti_PCSamplingData *drain_buf = alloc_buffer(num_reasons);
    CUpti_PCSamplingConfigurationInfo info = {};
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    info.attributeData.collectionModeData.collectionMode =
        CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    set_attr(ctx, info, "collection mode");
    info = {};
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
    info.attributeData.outputDataFormatData.outputDataFormat =
        CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    set_attr(ctx, info, "output data format");
    info = {};
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    info.attributeData.samplingDataBufferData.samplingDataBuffer = disable_buf;
    set_attr(ctx, info, "sampling data buffer");
    info = {};
    info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
    info.attributeData.enableStartStopControlData.enableStartStopControl = startstop ? 1 : 0;
    set_attr(ctx, info, "start/stop control");
    if (period != 0) {
        info = {};
        info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
        info.attributeData.samplingPeriodData.samplingPeriod = period;
        set_attr(ctx, info, "sampling period");
    }
    uint32_t used_period =
        get_attr(ctx, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD, "period")
            .attributeData.samplingPeriodData.samplingPeriod;

    std::printf("{\"kind\":\"config\",\"device\":");
    json_string(prop.name);
    std::printf(
        ",\"sms\":%d,\"cc\":\"%d.%d\",\"mode\":\"%s\","
        "\"default_period\":%u,\"period\":%u,\"default_scratch_bytes\":%zu,"
        "\"default_hw_buffer_bytes\":%zu,\"default_sleep_ms\":%u,"
        "\"default_collection_mode\":%d,\"enable_ms\":%.3f,"
        "\"stall_reasons\":{",
        prop.multiProcessorCount, prop.major, prop.minor, startstop ? "startstop" : "late",
        dflt_period.attributeData.samplingPeriodData.samplingPeriod, used_period,
        dflt_scratch.attributeData.scratchBufferSizeData.scratchBufferSize,
        dflt_hw.attributeData.hardwareBufferSizeData.hardwareBufferSize,
        dflt_sleep.attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan,
        (int)dflt_mode.attributeData.collectionModeData.collectionMode,
        std::chrono::duration<double, std::milli>(t_enable1 - t_enable0).count());
    for (size_t i = 0; i < num_reasons; i++) {
        std::printf("%s\"%u\":", i ? "," : "", reason_index[i]);
        json_string(reason_name[i]);
    }
    std::printf("}}\n");
    std::fflush(stdout);

    if (startstop) {
        // Sampling is enabled but not started: warm-up, then the unsampled runs.
        time_kernel(w, false);
        time_kernel(w, true);
        base_load = time_kernel(w, false);
        base_fma = time_kernel(w, true);
        CUpti_PCSamplingStartParams p = {};
        p.size = CUpti_PCSamplingStartParamsSize;
        p.ctx = ctx;
        CUPTI_CHECK(cuptiPCSamplingStart(&p));
    }

    // The collector: drains every 5 ms while the kernels run.
    Totals totals;
    std::atomic<bool> stop{false};
    std::thread collector([&]() {
        CU_CHECK(cuCtxSetCurrent(ctx));
        while (!stop.load()) {
            drain_once(ctx, drain_buf, totals);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    double samp_load = time_kernel(w, false);
    double samp_fma = time_kernel(w, true);
    stop.store(true);
    collector.join();

    if (startstop) {
        CUpti_PCSamplingStopParams p = {};
        p.size = CUpti_PCSamplingStopParamsSize;
        p.ctx = ctx;
        CUPTI_CHECK(cuptiPCSamplingStop(&p));
    }
    // Final drain until CUPTI reports nothing left; the worker threads decode
    // the hardware buffer asynchronously, so wait one sleep span first.
    std::this_thread::sleep_for(std::chrono::milliseconds(
        dflt_sleep.attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan +
        50));
    int final_drains = 0;
    while (drain_once(ctx, drain_buf, totals) > 0 && final_drains < 1000) final_drains++;
    final_drains++;

    // Disable copies what was still pending into the configured buffer.
    disable_buf->totalNumPcs = 0;
    {
        CUpti_PCSamplingDisableParams p = {};
        p.size = CUpti_PCSamplingDisableParamsSize;
        p.ctx = ctx;
        CUPTI_CHECK(cuptiPCSamplingDisable(&p));
    }
    size_t disable_pcs = disable_buf->totalNumPcs;
    absorb(totals, disable_buf);

    auto reason_of = [&](uint32_t idx) -> const char * {
        for (size_t i = 0; i < num_reasons; i++)
            if (reason_index[i] == idx) return reason_name[i];
        return "(unknown)";
    };
    for (auto &kv : totals.functions) {
        const FunctionStats &f = kv.second;
        std::printf("{\"kind\":\"function\",\"name\":");
        json_string(kv.first.c_str());
        std::printf(",\"samples\":%llu,\"pcs\":%zu", (unsigned long long)f.samples, f.pcs.size());
        double b = -1, s = -1;
        if (kv.first == "probe_strided_load")
            b = base_load, s = samp_load;
        else if (kv.first == "probe_fma_loop")
            b = base_fma, s = samp_fma;
        if (b >= 0)
            std::printf(",\"ms_unsampled\":%.4f,\"ms_sampled\":%.4f,"
                        "\"overhead_pct\":%.2f",
                        b, s, 100.0 * (s - b) / b);
        std::printf(",\"run_dropped_samples\":%llu,\"run_hw_buffer_full\":%llu",
                    (unsigned long long)totals.dropped_sum,
                    (unsigned long long)(totals.hw_full_flags + totals.getdata_oom));
        std::printf(",\"stall\":{");
        bool first = true;
        for (auto &r : f.by_reason) {
            if (!r.second) continue;
            std::printf("%s", first ? "" : ",");
            json_string(reason_of(r.first));
            std::printf(":%llu", (unsigned long long)r.second);
            first = false;
        }
        std::printf("}}\n");
    }
    std::printf(
        "{\"kind\":\"summary\",\"period\":%u,\"mode\":\"%s\",\"launches\":%d,"
        "\"drains\":%llu,\"drains_with_records\":%llu,\"final_drains\":%d,"
        "\"range_ids\":%zu,\"disable_pcs\":%zu,\"records\":%llu,"
        "\"record_samples\":%llu,\"total_samples_sum\":%llu,"
        "\"total_samples_max\":%llu,\"dropped_samples_sum\":%llu,"
        "\"dropped_samples_max\":%llu,\"non_user_samples_sum\":%llu,"
        "\"hw_buffer_full_flags\":%llu,\"getdata_out_of_memory\":%llu,"
        "\"max_remaining_pcs\":%llu,"
        "\"strided_load_ms\":{\"unsampled\":%.4f,\"sampled\":%.4f},"
        "\"fma_loop_ms\":{\"unsampled\":%.4f,\"sampled\":%.4f}}\n",
        used_period, startstop ? "startstop" : "late", kLaunches, (unsigned long long)totals.drains,
        (unsigned long long)totals.drains_with_records, final_drains, totals.range_ids.size(),
        disable_pcs, (unsigned long long)totals.records, (unsigned long long)totals.record_samples,
        (unsigned long long)totals.total_samples_sum, (unsigned long long)totals.total_samples_max,
        (unsigned long long)totals.dropped_sum, (unsigned long long)totals.dropped_max,
        (unsigned long long)totals.non_user_sum, (unsigned long long)totals.hw_full_flags,
        (unsigned long long)totals.getdata_oom, (unsigned long long)totals.max_remaining, base_load,
        samp_load, base_fma, samp_fma);
    CUDA_CHECK(cudaFree(w.in));
    CUDA_CHECK(cudaFree(w.out));
    return 0;
}
