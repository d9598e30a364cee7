// SPDX-License-Identifier: Apache-2.0
// trace_overhead.cu - what tracing costs a CUDA program, one configuration per
// process: no tracer, gpufl Monitor, gpufl Trace, gpufl PcSampling (its cost on
// each launch: CUPTI's callbacks and sampling), or a minimal CUPTI tracer
// written here (concurrent-kernel records only, counted and thrown away: the
// floor any CUPTI activity tracer pays). Two workloads: launch-bound (many
// empty kernels back to back on one stream, first launch to stream sync) and
// compute-bound (kernels of tens of microseconds).
//
// Usage: trace_overhead CONFIG [options]      (--help for the options)
//        trace_overhead calibrate             (prints compute_iters=N)
// Every result line is key=value pairs: "kind=run ..." per timed workload and
// one "kind=process ..." line at the end with peak RSS and, for the tracers,
// what they recorded against what was launched. A line starting with FAIL
// and a non-zero exit say what went wrong. bench/gpu/run_trace_overhead.sh
// alternates the configurations; bench/gpu/summarize_overhead.py reads them.
#include <cuda_runtime.h>
#include <cupti.h>
#include <gpufl/gpufl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

__global__ void empty_kernel() {}

// A dependent multiply-add chain: the time grows linearly with iters.
__global__ void spin_kernel(float *x, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = x[i], b = a * 0.5f + 1.0f;
#pragma unroll 8
    for (int k = 0; k < iters; ++k) {
        a = fmaf(a, 0.9999f, b);
        b = fmaf(b, 0.9998f, a);
    }
    x[i] = a + b;
}

namespace {

enum class Config { untraced, monitor, trace, pcsampling, minimal };

// The configurations that run gpufl.
bool runs_gpufl(Config c) {
    return c == Config::monitor || c == Config::trace || c == Config::pcsampling;
}

struct Options {
    Config config = Config::untraced;
    const char *config_name = "untraced";
    std::string log_dir;
    long launch_kernels = 100000;
    long warmup_kernels = 5000;
    long compute_kernels = 2000;
    long compute_warmup = 50;
    int compute_iters = 0; // 0: calibrate in the process
    int reps = 1;
    int round = 0;
    bool launch = true, compute = true;
};

[[noreturn]] void die(const char *what, const char *detail) {
    std::printf("FAIL  %s: %s\n", what, detail);
    std::fflush(stdout);
    std::exit(1);
}

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) die(#call, cudaGetErrorString(e_));                                 \
    } while (0)

long peak_rss_kib() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.compare(0, 6, "VmHWM:") == 0) return std::atol(line.c_str() + 6);
    return -1;
}

double now_s() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// ------------------------------------------------------------------------
// The minimal CUPTI tracer: a few preallocated 8 MiB buffers, records
// counted in the completion callback, the buffer reused. More buffers are
// allocated only when all are with CUPTI (counted), up to a cap.
// ------------------------------------------------------------------------
namespace minimal {

constexpr size_t kBufferBytes = 8u << 20;
constexpr int kPreallocated = 4;
constexpr int kMaxBuffers = 64;

std::mutex lock;
std::vector<uint8_t *> free_buffers;
int buffers_allocated = 0;
std::atomic<unsigned long long> records{0}, kernel_records{0}, dropped{0}, buffers_requested{0},
    buffers_refused{0};

uint8_t *new_buffer() {
    void *p = std::aligned_alloc(8, kBufferBytes);
    if (p) ++buffers_allocated;
    return static_cast<uint8_t *>(p);
}

void CUPTIAPI on_request(uint8_t **buffer, size_t *size, size_t *max_records) {
    buffers_requested.fetch_add(1, std::memory_order_relaxed);
    uint8_t *b = nullptr;
    {
        std::lock_guard<std::mutex> g(lock);
        if (!free_buffers.empty()) {
            b = free_buffers.back();
            free_buffers.pop_back();
        } else if (buffers_allocated < kMaxBuffers) {
            b = new_buffer();
        }
    }
    if (!b) buffers_refused.fetch_add(1, std::memory_order_relaxed);
    *buffer = b;
    *size = b ? kBufferBytes : 0;
    *max_records = 0;
}

void CUPTIAPI on_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t, size_t valid) {
    CUpti_Activity *r = nullptr;
    unsigned long long n = 0, k = 0;
    while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
        ++n;
        k += r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    }
    size_t d = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &d) == CUPTI_SUCCESS) dropped += d;
    records += n;
    kernel_records += k;
    std::lock_guard<std::mutex> g(lock);
    free_buffers.push_back(buffer);
}

void check(CUptiResult r, const char *what) {
    if (r == CUPTI_SUCCESS) return;
    const char *s = "?";
    cuptiGetResultString(r, &s);
    die(what, s);
}

// Diagnosis: $TRACE_OVERHEAD_MINIMAL_EXTRA adds, one at a time, what the Trace
// engine does beyond the floor, to see what each part of CUPTI costs:
//   kinds      MEMCPY and MEMSET activity too
//   sync       SYNCHRONIZATION activity too
//   callbacks  a subscriber with an empty callback on the kernel-launch calls
//   peek       that callback looks for external correlation ids (3 kinds)
//   timestamp  a timestamp callback (CLOCK_MONOTONIC), as gpufl registers
static bool extra(const char *what) {
    const char *e = std::getenv("TRACE_OVERHEAD_MINIMAL_EXTRA");
    return e && std::strstr(e, what);
}

static bool peek_in_callback;

// The callback: empty, or (peek) looking for an external correlation id of
// the three kinds CUPTI keeps for frameworks, as gpufl does at each launch.
static void CUPTIAPI empty_callback(void *, CUpti_CallbackDomain, CUpti_CallbackId,
                                    const void *data) {
    if (!peek_in_callback ||
        static_cast<const CUpti_CallbackData *>(data)->callbackSite != CUPTI_API_ENTER)
        return;
    for (CUpti_ExternalCorrelationKind k :
         {CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1,
          CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2}) {
        uint64_t id;
        if (cuptiActivityPopExternalCorrelationId(k, &id) == CUPTI_SUCCESS)
            cuptiActivityPushExternalCorrelationId(k, id);
    }
}

static uint64_t CUPTIAPI monotonic_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

static CUpti_SubscriberHandle subscriber;
static std::vector<CUpti_ActivityKind> enabled;

void start() {
    for (int i = 0; i < kPreallocated; ++i) {
        uint8_t *b = new_buffer();
        if (!b) die("minimal tracer", "cannot allocate its buffers");
        free_buffers.push_back(b);
    }
    peek_in_callback = extra("peek");
    if (extra("callbacks") || peek_in_callback) {
        check(cuptiSubscribe(&subscriber, empty_callback, nullptr), "cuptiSubscribe");
        for (CUpti_CallbackId id :
             {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx})
            check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id),
                  "cuptiEnableCallback");
    }
    check(cuptiActivityRegisterCallbacks(on_request, on_complete),
          "cuptiActivityRegisterCallbacks");
    if (extra("timestamp"))
        check(cuptiActivityRegisterTimestampCallback(monotonic_ns), "timestamp callback");
    enabled = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
    if (extra("kinds")) {
        enabled.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
        enabled.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
    }
    if (extra("sync")) enabled.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    for (CUpti_ActivityKind k : enabled) check(cuptiActivityEnable(k), "cuptiActivityEnable");
}

void stop() {
    check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    for (CUpti_ActivityKind k : enabled) check(cuptiActivityDisable(k), "cuptiActivityDisable");
    check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    if (subscriber) cuptiUnsubscribe(subscriber);
}

} // namespace minimal

// ------------------------------------------------------------------------
// Workloads
// ------------------------------------------------------------------------
long kernels_launched = 0;

void launch_empty(cudaStream_t s, long n) {
    for (long i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>();
    kernels_launched += n;
    CUDA_CHECK(cudaGetLastError());
}

struct Spin {
    float *x = nullptr;
    int grid = 0, block = 256;
    void run(cudaStream_t s, long n, int iters) {
        for (long i = 0; i < n; ++i) spin_kernel<<<grid, block, 0, s>>>(x, iters);
        kernels_launched += n;
        CUDA_CHECK(cudaGetLastError());
    }
};

// Median GPU time of one spin kernel, from CUDA events.
double spin_kernel_us(Spin &spin, cudaStream_t s, int iters) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int i = 0; i < 5; ++i) {
        CUDA_CHECK(cudaEventRecord(a, s));
        spin.run(s, 1, iters);
        CUDA_CHECK(cudaEventRecord(b, s));
        CUDA_CHECK(cudaEventSynchronize(b));
        float t = 0;
        CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    return ms[ms.size() / 2] * 1000.0;
}

// Smallest power-of-two iteration count whose kernel takes at least 50 us.
int calibrate(Spin &spin, cudaStream_t s) {
    spin.run(s, 20, 1 << 12); // clocks up
    CUDA_CHECK(cudaStreamSynchronize(s));
    for (int iters = 1 << 8; iters <= 1 << 24; iters <<= 1)
        if (spin_kernel_us(spin, s, iters) >= 50.0) return iters;
    die("calibrate", "no iteration count reached 50 us");
}

void print_run(const Options &o, const char *workload, int rep, long n, double seconds,
               const char *extra) {
    std::printf("kind=run config=%s round=%d workload=%s rep=%d kernels=%ld wall_s=%.6f "
                "us_per_kernel=%.4f kernels_per_s=%.0f%s\n",
                o.config_name, o.round, workload, rep, n, seconds, seconds * 1e6 / n, n / seconds,
                extra);
    std::fflush(stdout);
}

// Kernel rows in the session's device.log (and its rotated segments).
long count_kernel_rows(const std::string &dir, std::string *problem) {
    long rows = 0;
    for (int seg = 0;; ++seg) {
        std::string path = dir + "/device.log" + (seg ? "." + std::to_string(seg) : "");
        std::ifstream in(path);
        if (!in) {
            if (seg == 0) *problem = "cannot open " + path;
            break;
        }
        std::string line;
        while (std::getline(in, line)) {
            if (line.compare(0, 17, "{\"type\":\"kernel\",") != 0) continue;
            size_t a = line.find("\"start_ns\":[");
            if (a == std::string::npos) {
                *problem = "a kernel batch without a start_ns column";
                continue;
            }
            size_t b = line.find(']', a);
            if (b == a + 12) continue; // empty batch
            rows += 1 + std::count(line.begin() + a, line.begin() + b, ',');
        }
    }
    return rows;
}

// CUPTI drops gpufl logged (event lines with code cupti_records_dropped carry
// the running total in their message: the last one counts).
unsigned long long cupti_drops_logged(const std::string &dir) {
    unsigned long long total = 0;
    for (int seg = 0;; ++seg) {
        std::ifstream in(dir + "/device.log" + (seg ? "." + std::to_string(seg) : ""));
        if (!in) break;
        std::string line;
        while (std::getline(in, line)) {
            size_t c = line.find("\"code\":\"cupti_records_dropped\"");
            if (c == std::string::npos) continue;
            size_t m = line.find("dropped ", line.find("\"message\":\""));
            total = m == std::string::npos ? std::max(total, 1ULL)
                                           : std::strtoull(line.c_str() + m + 8, nullptr, 10);
        }
    }
    return total;
}

// The Trace engine's totals (its trace_stats record), or empty when absent:
// key -> value for every integer member.
std::vector<std::pair<std::string, long long>> trace_stats(const std::string &dir) {
    std::vector<std::pair<std::string, long long>> out;
    for (int seg = 0;; ++seg) {
        std::ifstream in(dir + "/device.log" + (seg ? "." + std::to_string(seg) : ""));
        if (!in) break;
        std::string line;
        while (std::getline(in, line)) {
            if (line.compare(0, 22, "{\"type\":\"trace_stats\",") != 0) continue;
            out.clear();
            for (size_t p = line.find(",\""); p != std::string::npos; p = line.find(",\"", p + 1)) {
                size_t q = line.find("\":", p + 2);
                if (q == std::string::npos) break;
                const char *v = line.c_str() + q + 2;
                if (*v != '-' && (*v < '0' || *v > '9')) continue;
                out.emplace_back(line.substr(p + 2, q - p - 2), std::strtoll(v, nullptr, 10));
            }
        }
    }
    return out;
}

long long stat_of(const std::vector<std::pair<std::string, long long>> &stats, const char *key,
                  long long missing) {
    for (const auto &kv : stats)
        if (kv.first == key) return kv.second;
    return missing;
}

// The engine the session ran, from its capability record.
std::string engine_logged(const std::string &dir) {
    std::ifstream in(dir + "/device.log");
    std::string line;
    while (std::getline(in, line)) {
        if (line.find("\"type\":\"capabilities\"") == std::string::npos) continue;
        size_t a = line.find("\"engine\":\"");
        if (a == std::string::npos) break;
        a += 10;
        return line.substr(a, line.find('"', a) - a);
    }
    return "unknown";
}

void usage(FILE *f) {
    std::fprintf(f,
                 "usage: trace_overhead CONFIG [options]\n"
                 "       trace_overhead calibrate\n"
                 "CONFIG: untraced | monitor | trace | pcsampling | minimal\n"
                 "  --log-dir DIR         gpufl log directory (default $GPUFL_LOG_PATH, else\n"
                 "                        /tmp/gpufl-trace-overhead)\n"
                 "  --launch-kernels N    empty kernels per timed launch-bound run (100000)\n"
                 "  --warmup N            untimed empty kernels first (5000)\n"
                 "  --compute-kernels N   kernels per timed compute-bound run (2000)\n"
                 "  --compute-iters N     spin iterations per compute kernel (default: calibrated\n"
                 "                        here; pass the value of `calibrate` to compare runs)\n"
                 "  --reps N              timed runs of each workload in this process (1)\n"
                 "  --round N             a label copied into every line (0)\n"
                 "  --workload W          launch | compute | both (both)\n");
}

Options parse(int argc, char **argv) {
    Options o;
    if (argc < 2) {
        usage(stderr);
        std::exit(2);
    }
    std::string c = argv[1];
    if (c == "--help" || c == "-h") {
        usage(stdout);
        std::exit(0);
    }
    if (c == "untraced")
        o.config = Config::untraced;
    else if (c == "monitor")
        o.config = Config::monitor;
    else if (c == "trace")
        o.config = Config::trace;
    else if (c == "pcsampling")
        o.config = Config::pcsampling;
    else if (c == "minimal")
        o.config = Config::minimal;
    else if (c != "calibrate") {
        usage(stderr);
        std::exit(2);
    }
    o.config_name = argv[1];
    const char *env = std::getenv("GPUFL_LOG_PATH");
    o.log_dir = env && *env ? env : "/tmp/gpufl-trace-overhead";
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc) {
            usage(stderr);
            std::exit(2);
        }
        const char *v = argv[++i];
        if (a == "--log-dir")
            o.log_dir = v;
        else if (a == "--launch-kernels")
            o.launch_kernels = std::atol(v);
        else if (a == "--warmup")
            o.warmup_kernels = std::atol(v);
        else if (a == "--compute-kernels")
            o.compute_kernels = std::atol(v);
        else if (a == "--compute-iters")
            o.compute_iters = std::atoi(v);
        else if (a == "--reps")
            o.reps = std::max(1, std::atoi(v));
        else if (a == "--round")
            o.round = std::atoi(v);
        else if (a == "--workload") {
            std::string w = v;
            o.launch = w == "launch" || w == "both";
            o.compute = w == "compute" || w == "both";
            if (!o.launch && !o.compute) {
                usage(stderr);
                std::exit(2);
            }
        } else {
            usage(stderr);
            std::exit(2);
        }
    }
    if (o.launch_kernels < 1 || o.compute_kernels < 1 || o.warmup_kernels < 0) {
        usage(stderr);
        std::exit(2);
    }
    return o;
}

} // namespace

int main(int argc, char **argv) {
    Options o = parse(argc, argv);
    const bool calibrate_only = std::strcmp(argv[1], "calibrate") == 0;

    // The tracer starts before any CUDA call, as a traced program would.
    if (runs_gpufl(o.config)) {
        gpufl_options_t g;
        gpufl_options_init(&g);
        g.app_name = "trace_overhead";
        g.log_path = o.log_dir.c_str();
        g.profiling_engine = o.config == Config::trace        ? GPUFL_ENGINE_TRACE
                             : o.config == Config::pcsampling ? GPUFL_ENGINE_PC_SAMPLING
                                                              : GPUFL_ENGINE_MONITOR;
        if (gpufl_init(&g) != 0) die("gpufl_init", gpufl_last_error());
        // Measuring an engine that was refused would measure Monitor: stop here.
        const char *want = o.config == Config::trace        ? "Trace"
                           : o.config == Config::pcsampling ? "PcSampling"
                                                            : nullptr;
        char dir[4096];
        if (want && gpufl_flush() == 0 && gpufl_session_dir(dir, sizeof dir) > 0 &&
            engine_logged(dir) != want)
            die(o.config_name, ("gpufl runs engine " + engine_logged(dir) + ", not " + want +
                                "; see " + dir + "/device.log (capabilities)")
                                   .c_str());
    } else if (o.config == Config::minimal) {
        minimal::start();
    }

    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(nullptr)); // context
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Spin spin;
    spin.grid = prop.multiProcessorCount * 4;
    CUDA_CHECK(cudaMalloc(&spin.x, sizeof(float) * spin.grid * spin.block));
    CUDA_CHECK(cudaMemsetAsync(spin.x, 0, sizeof(float) * spin.grid * spin.block, s));

    if (calibrate_only) {
        int iters = calibrate(spin, s);
        std::printf("compute_iters=%d kernel_us=%.1f device=\"%s\"\n", iters,
                    spin_kernel_us(spin, s, iters), prop.name);
        return 0;
    }
    bool calibrated = false;
    if (o.compute && o.compute_iters <= 0) {
        o.compute_iters = calibrate(spin, s);
        calibrated = true;
    }

    if (o.launch) {
        launch_empty(s, o.warmup_kernels);
        CUDA_CHECK(cudaStreamSynchronize(s));
        for (int rep = 0; rep < o.reps; ++rep) {
            gpufl_scope_t scope = gpufl_scope_begin("launch_bound", nullptr);
            double t0 = now_s();
            launch_empty(s, o.launch_kernels);
            CUDA_CHECK(cudaStreamSynchronize(s));
            double t1 = now_s();
            gpufl_scope_end(scope);
            print_run(o, "launch", rep, o.launch_kernels, t1 - t0, "");
        }
    }
    if (o.compute) {
        spin.run(s, o.compute_warmup, o.compute_iters);
        CUDA_CHECK(cudaStreamSynchronize(s));
        char extra[96];
        std::snprintf(extra, sizeof extra, " compute_iters=%d calibrated_here=%d", o.compute_iters,
                      calibrated ? 1 : 0);
        for (int rep = 0; rep < o.reps; ++rep) {
            gpufl_scope_t scope = gpufl_scope_begin("compute_bound", nullptr);
            double t0 = now_s();
            spin.run(s, o.compute_kernels, o.compute_iters);
            CUDA_CHECK(cudaStreamSynchronize(s));
            double t1 = now_s();
            gpufl_scope_end(scope);
            print_run(o, "compute", rep, o.compute_kernels, t1 - t0, extra);
        }
    }
    CUDA_CHECK(cudaFree(spin.x));
    CUDA_CHECK(cudaStreamDestroy(s));

    // What the tracers recorded against what was launched.
    std::string tail;
    int status = 0;
    char buf[8192];
    if (runs_gpufl(o.config)) {
        if (gpufl_flush() != 0) die("gpufl_flush", gpufl_last_error());
        gpufl_stats_t st;
        std::memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (gpufl_get_stats(&st) != 0) die("gpufl_get_stats", gpufl_last_error());
        char dir[4096];
        if (gpufl_session_dir(dir, sizeof dir) < 0) die("gpufl_session_dir", gpufl_last_error());
        gpufl_shutdown();
        std::snprintf(buf, sizeof buf,
                      " ring_dropped=%llu threads_unbuffered=%llu write_errors=%llu "
                      "records_written=%llu bytes_written=%llu engine=%s session_dir=%s",
                      (unsigned long long)st.records_dropped,
                      (unsigned long long)st.threads_unbuffered,
                      (unsigned long long)st.write_errors, (unsigned long long)st.records_written,
                      (unsigned long long)st.bytes_written, engine_logged(dir).c_str(), dir);
        tail += buf;
        if (o.config == Config::trace) {
            std::string problem;
            long logged = count_kernel_rows(dir, &problem);
            // CUPTI's drops: the trace_stats total, else the drop events.
            auto stats = trace_stats(dir);
            long long stat_drops = stat_of(stats, "cupti_dropped", -1);
            unsigned long long drops =
                stat_drops >= 0 ? (unsigned long long)stat_drops : cupti_drops_logged(dir);
            std::snprintf(buf, sizeof buf,
                          " kernels_logged=%ld expected=%ld cupti_dropped=%llu trace_stats=%s"
                          " stats_kernels=%lld unattributed=%lld buffers_refused=%lld"
                          " configs=%lld callbacks_enabled=%lld",
                          logged, kernels_launched, drops, stats.empty() ? "missing" : "present",
                          stat_of(stats, "kernels", -1), stat_of(stats, "unattributed", -1),
                          stat_of(stats, "buffers_refused", -1), stat_of(stats, "configs", -1),
                          stat_of(stats, "callbacks_enabled", -1));
            tail += buf;
            if (!problem.empty()) {
                std::printf("FAIL  reading %s/device.log: %s\n", dir, problem.c_str());
                status = 3;
            }
            if (logged != kernels_launched || drops != 0 || st.records_dropped != 0) {
                std::printf("FAIL  trace: kernels_logged=%ld expected=%ld cupti_dropped=%llu "
                            "ring_dropped=%llu\n",
                            logged, kernels_launched, drops,
                            (unsigned long long)st.records_dropped);
                status = 3;
            }
        }
    } else if (o.config == Config::minimal) {
        minimal::stop();
        std::snprintf(buf, sizeof buf,
                      " minimal_kernel_records=%llu minimal_records=%llu expected=%ld "
                      "minimal_dropped=%llu buffers_requested=%llu buffers_refused=%llu "
                      "buffers_allocated=%d",
                      minimal::kernel_records.load(), minimal::records.load(), kernels_launched,
                      minimal::dropped.load(), minimal::buffers_requested.load(),
                      minimal::buffers_refused.load(), minimal::buffers_allocated);
        tail += buf;
        if ((long)minimal::kernel_records.load() != kernels_launched || minimal::dropped.load()) {
            std::printf("FAIL  minimal: kernel_records=%llu expected=%ld dropped=%llu\n",
                        minimal::kernel_records.load(), kernels_launched, minimal::dropped.load());
            status = 3;
        }
    }
    std::printf("kind=process config=%s round=%d kernels_launched=%ld rss_peak_kib=%ld "
                "device=\"%s\" status=%d%s\n",
                o.config_name, o.round, kernels_launched, peak_rss_kib(), prop.name, status,
                tail.c_str());
    return status;
}
