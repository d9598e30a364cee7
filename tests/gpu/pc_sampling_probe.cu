// SPDX-License-Identifier: Apache-2.0
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
// With SECONDS > 0 the sampled phase is instead a loop that launches the two
// kernels for that many seconds and calls cuptiPCSamplingGetData every 20 ms
// from the launching thread; each drain (time, records, totalSamples,
// droppedSamples, remainingNumPcs, hardwareBufferFull) is printed, to show
// whether periodic draining delivers data during a long run and whether the
// counters are per drain or cumulative.
//
// Samples are counted from the plain stall reasons only: sample_count,
// samples_data_dropped and every *_not_issued twin are excluded ("samples");
// the sum of the sample_count entries is printed separately, as is the raw sum
// of all entries. Per function the expected count is kernel time x SM clock x
// SMs / 2^period, with the clock from cudaDevAttrClockRate (the maximum clock,
// so with a lower actual clock the expectation is too high).
//
// Usage: pc_sampling_probe [PERIOD] [late|startstop] [SECONDS]
//   PERIOD     sampling period exponent, 5..31 (2^PERIOD cycles); 0 keeps
//              CUPTI's default. Default 0.
//   late       (default) the unsampled kernels run before PC sampling is
//              enabled, as when gpufl is initialised after the first kernel.
//   startstop  PC sampling is enabled before any kernel with start/stop
//              control; the unsampled runs happen while it is stopped.
//   SECONDS    length of the sampled run (long-run mode, periodic drains from
//              the launching thread); 0 (default) keeps the 20-launch batches
//              drained by a second thread every 5 ms.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define PROBE_NAME "pc_sampling_probe"
#include "probe_util.cuh"

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

// Kind of each stall-reason index, from its name: 0 a plain stall reason,
// 1 smsp__pcsamp_sample_count, 2 smsp__pcsamp_samples_data_dropped,
// 3 an *_not_issued twin. Filled before the first drain.
static std::map<uint32_t, int> g_reason_kind;

static int reason_kind(uint32_t idx) {
    auto it = g_reason_kind.find(idx);
    return it == g_reason_kind.end() ? 0 : it->second;
}

struct FunctionStats {
    uint64_t samples = 0;        // plain stall reasons only
    uint64_t sample_count = 0;   // smsp__pcsamp_sample_count entries
    uint64_t raw = 0;            // all entries (the old, over-counting sum)
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
    uint64_t records = 0, record_samples = 0, record_sample_count = 0, record_raw = 0;
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
            uint32_t idx = pc.stallReason[r].pcSamplingStallReasonIndex;
            uint64_t n = pc.stallReason[r].samples;
            int k = reason_kind(idx);
            f.raw += n;
            t.record_raw += n;
            if (k == 0) {
                f.samples += n;
                t.record_samples += n;
            } else if (k == 1) {
                f.sample_count += n;
                t.record_sample_count += n;
            }
            f.by_reason[idx] += n;
        }
    }
}

// One drain as seen by the client (long-run mode).
struct DrainLog {
    double t_ms;
    size_t records;
    uint64_t total, dropped, non_user;
    size_t remaining;
    int hw_full, oom, final_drain;
};

// One cuptiPCSamplingGetData call. A full hardware buffer is reported by
// CUPTI_ERROR_OUT_OF_MEMORY: counted, not fatal. Returns remainingNumPcs.
// With a log, the drain is appended to it (time since t0).
static size_t drain_once(CUcontext ctx, CUpti_PCSamplingData *buf, Totals &t,
                         std::vector<DrainLog> *log = nullptr,
                         std::chrono::steady_clock::time_point t0 = {}, int final_drain = 0) {
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
        std::fprintf(stderr, "pc_sampling_probe: cuptiPCSamplingGetData failed: %s\n",
                     result_string(r));
        std::exit(1);
    }
    absorb(t, buf);
    if (log)
        log->push_back(
            {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                 .count(),
             buf->totalNumPcs, buf->totalSamples, buf->droppedSamples,
             buf->nonUsrKernelsTotalSamples, buf->remainingNumPcs, buf->hardwareBufferFull ? 1 : 0,
             r == CUPTI_ERROR_OUT_OF_MEMORY ? 1 : 0, final_drain});
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
        std::fprintf(stderr,
                     "pc_sampling_probe: cuptiPCSamplingSetConfigurationAttribute(%s) "
                     "failed: %s\n",
                     what, result_string(r != CUPTI_SUCCESS ? r : info.attributeStatus));
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
        std::fprintf(stderr,
                     "pc_sampling_probe: cuptiPCSamplingGetConfigurationAttribute(%s) "
                     "failed: %s\n",
                     what, result_string(r != CUPTI_SUCCESS ? r : info.attributeStatus));
        std::exit(1);
    }
    return info;
}

int main(int argc, char **argv) {
    unsigned period = argc > 1 ? (unsigned)std::strtoul(argv[1], nullptr, 10) : 0;
    bool startstop = argc > 2 && std::strcmp(argv[2], "startstop") == 0;
    double seconds = argc > 3 ? std::strtod(argv[3], nullptr) : 0.0;
    if ((argc > 2 && !startstop && std::strcmp(argv[2], "late") != 0) || argc > 4 ||
        !(seconds >= 0 && seconds <= 600)) {
        std::fprintf(stderr, "usage: %s [PERIOD] [late|startstop] [SECONDS]\n", argv[0]);
        return 2;
    }
    bool long_run = seconds > 0;
    if (period != 0 && (period < 5 || period > 31)) {
        std::fprintf(stderr, "pc_sampling_probe: PERIOD must be 0 or 5..31\n");
        return 2;
    }

    // The runtime creates the device's primary context; CUPTI wants its handle.
    cudaDeviceProp prop;
    CUcontext ctx = primary_context(&prop);

    Workload w;
    w.fma_blocks = prop.multiProcessorCount * 8;
    CUDA_CHECK(cudaMalloc(&w.in, kN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w.out, kN * sizeof(float)));
    CUDA_CHECK(cudaMemset(w.in, 0, kN * sizeof(float)));

    auto enable = [&]() {
        CUpti_PCSamplingEnableParams p = {};
        p.size = CUpti_PCSamplingEnableParamsSize;
        p.ctx = ctx;
        CUPTI_CHECK_STATUS1(cuptiPCSamplingEnable(&p));
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
        CUPTI_CHECK_STATUS1(cuptiPCSamplingGetNumStallReasons(&p));
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
        CUPTI_CHECK_STATUS1(cuptiPCSamplingGetStallReasons(&p));
    }
    for (size_t i = 0; i < num_reasons; i++) {
        const char *nm = reason_name[i];
        size_t len = std::strlen(nm);
        const char *suf = "_not_issued";
        size_t sl = std::strlen(suf);
        int k = 0;
        if (std::strcmp(nm, "smsp__pcsamp_sample_count") == 0)
            k = 1;
        else if (std::strcmp(nm, "smsp__pcsamp_samples_data_dropped") == 0)
            k = 2;
        else if (len >= sl && std::strcmp(nm + len - sl, suf) == 0)
            k = 3;
        g_reason_kind[reason_index[i]] = k;
    }
    int clock_khz = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));

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
        ",\"sms\":%d,\"cc\":\"%d.%d\",\"mode\":\"%s\",\"seconds\":%.3f,"
        "\"clock_khz_max\":%d,"
        "\"default_period\":%u,\"period\":%u,\"default_scratch_bytes\":%zu,"
        "\"default_hw_buffer_bytes\":%zu,\"default_sleep_ms\":%u,"
        "\"default_collection_mode\":%d,\"enable_ms\":%.3f,"
        "\"stall_reasons\":{",
        prop.multiProcessorCount, prop.major, prop.minor, startstop ? "startstop" : "late", seconds,
        clock_khz, dflt_period.attributeData.samplingPeriodData.samplingPeriod, used_period,
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
        CUPTI_CHECK_STATUS1(cuptiPCSamplingStart(&p));
    }

    Totals totals;
    std::vector<DrainLog> drain_log;
    auto t_start = std::chrono::steady_clock::now();
    double samp_load = 0, samp_fma = 0;
    double load_ms_total = 0, fma_ms_total = 0; // summed kernel time while sampled
    long long long_pairs = 0;
    if (!long_run) {
        // The collector: drains every 5 ms while the kernels run.
        std::atomic<bool> stop{false};
        std::thread collector([&]() {
            CU_CHECK(cuCtxSetCurrent(ctx));
            while (!stop.load()) {
                drain_once(ctx, drain_buf, totals);
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        });
        samp_load = time_kernel(w, false);
        samp_fma = time_kernel(w, true);
        stop.store(true);
        collector.join();
        load_ms_total = samp_load * kLaunches;
        fma_ms_total = samp_fma * kLaunches;
    } else {
        // Long run: one strided load and one FMA launch per pair, each timed
        // with events; after each pair, a drain from this thread when 20 ms
        // have passed since the last one.
        cudaEvent_t e0, e1, e2;
        CUDA_CHECK(cudaEventCreate(&e0));
        CUDA_CHECK(cudaEventCreate(&e1));
        CUDA_CHECK(cudaEventCreate(&e2));
        auto last_drain = t_start;
        auto end = t_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(seconds));
        while (std::chrono::steady_clock::now() < end) {
            CUDA_CHECK(cudaEventRecord(e0));
            probe_strided_load<<<kN / 256, 256>>>(w.in, w.out, kN, kStride, kPasses);
            CUDA_CHECK(cudaEventRecord(e1));
            probe_fma_loop<<<w.fma_blocks, 256>>>(w.out, kFmaIters);
            CUDA_CHECK(cudaEventRecord(e2));
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaEventSynchronize(e2));
            float a = 0.f, b = 0.f;
            CUDA_CHECK(cudaEventElapsedTime(&a, e0, e1));
            CUDA_CHECK(cudaEventElapsedTime(&b, e1, e2));
            load_ms_total += a;
            fma_ms_total += b;
            long_pairs++;
            auto now = std::chrono::steady_clock::now();
            if (now - last_drain >= std::chrono::milliseconds(20)) {
                drain_once(ctx, drain_buf, totals, &drain_log, t_start, 0);
                last_drain = std::chrono::steady_clock::now();
            }
        }
        CUDA_CHECK(cudaEventDestroy(e0));
        CUDA_CHECK(cudaEventDestroy(e1));
        CUDA_CHECK(cudaEventDestroy(e2));
        if (long_pairs > 0) {
            samp_load = load_ms_total / long_pairs;
            samp_fma = fma_ms_total / long_pairs;
        }
    }

    if (startstop) {
        CUpti_PCSamplingStopParams p = {};
        p.size = CUpti_PCSamplingStopParamsSize;
        p.ctx = ctx;
        CUPTI_CHECK_STATUS1(cuptiPCSamplingStop(&p));
    }
    // Final drain until CUPTI reports nothing left; the worker threads decode
    // the hardware buffer asynchronously, so wait one sleep span first.
    std::this_thread::sleep_for(std::chrono::milliseconds(
        dflt_sleep.attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan +
        50));
    int final_drains = 0;
    while (drain_once(ctx, drain_buf, totals, long_run ? &drain_log : nullptr, t_start, 1) > 0 &&
           final_drains < 1000)
        final_drains++;
    final_drains++;

    // Disable copies what was still pending into the configured buffer.
    disable_buf->totalNumPcs = 0;
    {
        CUpti_PCSamplingDisableParams p = {};
        p.size = CUpti_PCSamplingDisableParamsSize;
        p.ctx = ctx;
        CUPTI_CHECK_STATUS1(cuptiPCSamplingDisable(&p));
    }
    size_t disable_pc_sampling = disable_buf->totalNumPcs;
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
        std::printf(",\"samples\":%llu,\"sample_count_sum\":%llu,\"raw_entry_sum\":%llu,"
                    "\"pcs\":%zu",
                    (unsigned long long)f.samples, (unsigned long long)f.sample_count,
                    (unsigned long long)f.raw, f.pcs.size());
        double b = -1, s = -1, kt = -1;
        if (kv.first == "probe_strided_load")
            b = base_load, s = samp_load, kt = load_ms_total;
        else if (kv.first == "probe_fma_loop")
            b = base_fma, s = samp_fma, kt = fma_ms_total;
        if (kt >= 0) {
            // kernel time x max SM clock x SMs / 2^period
            double expected = kt * 1e-3 * (double)clock_khz * 1e3 * prop.multiProcessorCount /
                              std::ldexp(1.0, (int)used_period);
            std::printf(",\"kernel_ms_total\":%.3f,\"expected_samples\":%.0f,"
                        "\"expected_clock\":\"cudaDevAttrClockRate (max) %d kHz x %d SMs\","
                        "\"measured_over_expected\":%.4f,"
                        "\"sample_count_over_expected\":%.4f",
                        kt, expected, clock_khz, prop.multiProcessorCount,
                        expected > 0 ? (double)f.samples / expected : 0.0,
                        expected > 0 ? (double)f.sample_count / expected : 0.0);
        }
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
    if (long_run) {
        // Drains that returned records or non-zero counters: one line each when
        // few, else one compact array [t_ms, records, totalSamples,
        // droppedSamples, remainingNumPcs, hardwareBufferFull, oom, final].
        std::vector<const DrainLog *> shown;
        size_t empty = 0;
        double first_records_ms = -1;
        for (const DrainLog &d : drain_log) {
            if (d.records || d.total || d.dropped || d.hw_full || d.oom) {
                shown.push_back(&d);
                if (d.records && first_records_ms < 0) first_records_ms = d.t_ms;
            } else
                empty++;
        }
        if (shown.size() <= 150) {
            for (const DrainLog *d : shown)
                std::printf("{\"kind\":\"drain\",\"t_ms\":%.1f,\"records\":%zu,"
                            "\"total_samples\":%llu,\"dropped_samples\":%llu,"
                            "\"non_user_samples\":%llu,\"remaining_pcs\":%zu,"
                            "\"hw_buffer_full\":%d,\"out_of_memory\":%d,\"final\":%d}\n",
                            d->t_ms, d->records, (unsigned long long)d->total,
                            (unsigned long long)d->dropped, (unsigned long long)d->non_user,
                            d->remaining, d->hw_full, d->oom, d->final_drain);
        } else {
            std::printf("{\"kind\":\"drains\",\"fields\":[\"t_ms\",\"records\",\"total_samples\","
                        "\"dropped_samples\",\"remaining_pcs\",\"hw_buffer_full\","
                        "\"out_of_memory\",\"final\"],\"rows\":[");
            for (size_t i = 0; i < shown.size(); i++) {
                const DrainLog *d = shown[i];
                std::printf("%s[%.1f,%zu,%llu,%llu,%zu,%d,%d,%d]", i ? "," : "", d->t_ms,
                            d->records, (unsigned long long)d->total,
                            (unsigned long long)d->dropped, d->remaining, d->hw_full, d->oom,
                            d->final_drain);
            }
            std::printf("]}\n");
        }
        std::printf("{\"kind\":\"drain_log\",\"seconds\":%.3f,\"pairs\":%lld,"
                    "\"drains\":%zu,\"drains_shown\":%zu,\"drains_empty\":%zu,"
                    "\"first_records_ms\":%.1f}\n",
                    seconds, long_pairs, drain_log.size(), shown.size(), empty, first_records_ms);
    }
    std::printf(
        "{\"kind\":\"summary\",\"period\":%u,\"mode\":\"%s\",\"launches\":%d,"
        "\"drains\":%llu,\"drains_with_records\":%llu,\"final_drains\":%d,"
        "\"range_ids\":%zu,\"disable_pcs\":%zu,\"records\":%llu,"
        "\"record_samples\":%llu,\"record_sample_count\":%llu,"
        "\"record_raw_entries\":%llu,\"total_samples_sum\":%llu,"
        "\"total_samples_max\":%llu,\"dropped_samples_sum\":%llu,"
        "\"dropped_samples_max\":%llu,\"non_user_samples_sum\":%llu,"
        "\"hw_buffer_full_flags\":%llu,\"getdata_out_of_memory\":%llu,"
        "\"max_remaining_pcs\":%llu,"
        "\"strided_load_ms\":{\"unsampled\":%.4f,\"sampled\":%.4f},"
        "\"fma_loop_ms\":{\"unsampled\":%.4f,\"sampled\":%.4f}}\n",
        used_period, startstop ? "startstop" : "late", kLaunches, (unsigned long long)totals.drains,
        (unsigned long long)totals.drains_with_records, final_drains, totals.range_ids.size(),
        disable_pc_sampling, (unsigned long long)totals.records,
        (unsigned long long)totals.record_samples, (unsigned long long)totals.record_sample_count,
        (unsigned long long)totals.record_raw, (unsigned long long)totals.total_samples_sum,
        (unsigned long long)totals.total_samples_max, (unsigned long long)totals.dropped_sum,
        (unsigned long long)totals.dropped_max, (unsigned long long)totals.non_user_sum,
        (unsigned long long)totals.hw_full_flags, (unsigned long long)totals.getdata_oom,
        (unsigned long long)totals.max_remaining, base_load, samp_load, base_fma, samp_fma);
    CUDA_CHECK(cudaFree(w.in));
    CUDA_CHECK(cudaFree(w.out));
    return 0;
}
