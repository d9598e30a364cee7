// SPDX-License-Identifier: Apache-2.0
/*
 * gpufl.hpp - the documented C++ API of gpufl, header-only over gpufl.h.
 *
 * Everything here is inline: the library exports only the C API, so this
 * header adds no symbols and no ABI of its own. Requires C++17.
 */
#ifndef GPUFL_HPP
#define GPUFL_HPP

#include <gpufl/gpufl.h>

#include <string>
#include <type_traits>
#include <utility>

namespace gpufl {

enum class BackendKind { Auto, Nvidia, Amd, None };

enum class ProfilingEngine { Monitor, Trace, PcSampling, SassMetrics, RangeProfiler, Deep };

struct InitOptions {
    // identity
    std::string app_name = "gpufl";
    std::string log_path = ""; // empty: "<app_name>.log"

    // fleet upload: where uploadLogs() sends after shutdown() (it may also name them itself)
    std::string backend_url = "";
    std::string api_key = "";
    std::string api_path = "";  // empty: "/api/v1"
    bool remote_upload = false; // deprecated: no effect, notice at init (call uploadLogs())

    // what to capture
    bool enable_stack_trace = false;
    bool enable_source_collection = true;
    bool enable_external_correlation = true;
    bool enable_synchronization = true;
    bool enable_memory_tracking = false;
    bool enable_cuda_graphs_tracking = false;

    // sampling
    int system_sample_rate_ms = 0; // 0: no periodic sampling
    int kernel_sample_rate_ms = 0; // deprecated: no effect, notice at init
    bool continuous_system_sampling = false;

    // profiling engine
    BackendKind backend = BackendKind::Auto;
    ProfilingEngine profiling_engine = ProfilingEngine::Monitor;

    // advanced
    std::string config_file = "";
    bool flush_logs_always = false;
    bool enable_debug_output = false;
    bool enabled = true; // false: init and every later call do nothing
};

/** Starts a session; false when disabled or on error (the reason is logged). */
inline bool init(const InitOptions &o) {
    gpufl_options_t c;
    gpufl_options_init(&c);
    c.app_name = o.app_name.c_str();
    c.log_path = o.log_path.c_str();
    c.backend_url = o.backend_url.c_str();
    c.api_key = o.api_key.c_str();
    c.api_path = o.api_path.c_str();
    c.remote_upload = o.remote_upload;
    c.enable_stack_trace = o.enable_stack_trace;
    c.enable_source_collection = o.enable_source_collection;
    c.enable_external_correlation = o.enable_external_correlation;
    c.enable_synchronization = o.enable_synchronization;
    c.enable_memory_tracking = o.enable_memory_tracking;
    c.enable_cuda_graphs_tracking = o.enable_cuda_graphs_tracking;
    c.system_sample_rate_ms = o.system_sample_rate_ms;
    c.kernel_sample_rate_ms = o.kernel_sample_rate_ms;
    c.continuous_system_sampling = o.continuous_system_sampling;
    c.backend = static_cast<gpufl_backend_t>(o.backend);
    c.profiling_engine = static_cast<gpufl_engine_t>(o.profiling_engine);
    c.config_file = o.config_file.c_str();
    c.flush_logs_always = o.flush_logs_always;
    c.enable_debug_output = o.enable_debug_output;
    c.enabled = o.enabled;
    return gpufl_init(&c) == 0;
}

inline void shutdown() { gpufl_shutdown(); }

/** Text report of the last session; to the console when output_path is empty. */
inline void generateReport(const std::string &output_path = "") {
    gpufl_report_write(output_path.c_str());
}

/** Flight recorder (flight_recorder_s > 0, GPUFL_FLIGHT_RECORDER_S): writes what it holds as
 * a session directory of its own and returns its path; "" when no flight recorder runs or
 * the snapshot failed (gpufl_last_error() says why). */
inline std::string snapshot() {
    char dir[4096];
    return gpufl_snapshot(dir, sizeof dir) == 0 ? std::string(dir) : std::string();
}

inline bool systemStart(const std::string &name = "system") {
    return gpufl_system_start(name.c_str()) == 0;
}
inline bool systemStop(const std::string &name = "system") {
    return gpufl_system_stop(name.c_str()) == 0;
}

struct UploadOptions {
    std::string log_path = "";    // a log root; empty: the last session's
    std::string backend_url = ""; // empty: $GPUFL_BACKEND_URL, else init's
    std::string api_key = "";     // empty: $GPUFL_API_KEY, else init's
    std::string api_path = "";    // empty: $GPUFL_API_PATH, else init's, else /api/v1
    std::string session = "";     // a session id or directory; empty: the latest
    bool all = false;             // every session under log_path
    long long budget_ms = 0;      // the whole upload, retries included; 0: 5 minutes
};

/** After shutdown(): sends the sealed windows of the session(s) to gpufl-server, each once
 *  (gpufl_upload_logs_result in gpufl.h). True when everything sealed is on the server (or
 *  gpufl is disabled); false otherwise, with one warning line and gpufl_last_error(). A
 *  network failure never throws. */
inline bool uploadLogs(const UploadOptions &o) {
    gpufl_upload_options_t c;
    gpufl_upload_options_init(&c);
    c.log_path = o.log_path.c_str();
    c.backend_url = o.backend_url.c_str();
    c.api_key = o.api_key.c_str();
    c.api_path = o.api_path.c_str();
    c.session = o.session.c_str();
    c.all = o.all ? 1 : 0;
    c.budget_ms = o.budget_ms;
    int rc = gpufl_upload_logs(&c);
    return rc == 0 || rc == GPUFL_EDISABLED;
}

/** Benchmark metadata for GFL_BENCH: measured repeats, warmup runs, a tag. */
struct ScopeMeta {
    int repeat = 1;
    int warmup = 0;
    std::string tag;

    ScopeMeta &setRepeat(int n) & {
        repeat = n;
        return *this;
    }
    ScopeMeta &setWarmup(int n) & {
        warmup = n;
        return *this;
    }
    ScopeMeta &setTag(std::string t) & {
        tag = std::move(t);
        return *this;
    }
    ScopeMeta &&setRepeat(int n) && {
        repeat = n;
        return std::move(*this);
    }
    ScopeMeta &&setWarmup(int n) && {
        warmup = n;
        return std::move(*this);
    }
    ScopeMeta &&setTag(std::string t) && {
        tag = std::move(t);
        return std::move(*this);
    }
};

/** A scope that lasts as long as the object (RAII). */
class ScopedMonitor {
  public:
    // For a string literal the compiler folds the length: no strlen at run time.
    explicit ScopedMonitor(const char *name, const char *tag = nullptr)
        : handle_(gpufl_internal_live()
                      ? gpufl_scope_begin_n(name, name ? __builtin_strlen(name) : 0, tag,
                                            tag ? __builtin_strlen(tag) : 0, 0, 0)
                      : 0) {}
    explicit ScopedMonitor(const std::string &name, const std::string &tag = std::string())
        : handle_(gpufl_internal_live()
                      ? gpufl_scope_begin_n(name.data(), name.size(),
                                            tag.empty() ? nullptr : tag.data(), tag.size(), 0, 0)
                      : 0) {}
    ScopedMonitor(const std::string &name, const ScopeMeta &meta)
        : handle_(gpufl_internal_live()
                      ? gpufl_scope_begin_n(name.data(), name.size(),
                                            meta.tag.empty() ? nullptr : meta.tag.data(),
                                            meta.tag.size(), meta.repeat, meta.warmup)
                      : 0) {}
    ~ScopedMonitor() {
        if (handle_ != 0) gpufl_scope_end(handle_);
    }
    ScopedMonitor(const ScopedMonitor &) = delete;
    ScopedMonitor &operator=(const ScopedMonitor &) = delete;

    /** @cond internal: lets GFL_SCOPE run its block exactly once. */
    bool gpufl_first_pass_() { return first_pass_ ? (first_pass_ = false, true) : false; }
    /** @endcond */

  private:
    gpufl_scope_t handle_;
    bool first_pass_ = true;
};

/** Runs fn inside a scope named name and returns what fn returns. */
template <typename F> decltype(auto) monitor(const std::string &name, F &&fn) {
    ScopedMonitor scope(name);
    return std::forward<F>(fn)();
}

namespace detail {
struct Bench {
    std::string name;
    ScopeMeta meta;
};
template <typename F> void operator+(Bench &&b, F &&body) {
    for (int i = 0; i < b.meta.warmup; ++i) body();
    ScopedMonitor scope(b.name, b.meta);
    for (int i = 0; i < b.meta.repeat; ++i) body();
}
} // namespace detail

} // namespace gpufl

#define GPUFL_HPP_CAT2(a, b) a##b
#define GPUFL_HPP_CAT(a, b)  GPUFL_HPP_CAT2(a, b)

/** GFL_SCOPE("name") { ... }: the block runs once inside a scope that closes when it exits. */
#define GFL_SCOPE(name)                                                                            \
    for (::gpufl::ScopedMonitor GPUFL_HPP_CAT(gpufl_scope_, __LINE__)(name);                       \
         GPUFL_HPP_CAT(gpufl_scope_, __LINE__).gpufl_first_pass_();)

/**
 * GFL_BENCH("name", gpufl::ScopeMeta{}.setRepeat(n).setWarmup(w)) { ... };
 * runs the body w times before the scope opens and n times inside it. The
 * body is a lambda capturing by reference: `return` leaves the body only.
 */
#define GFL_BENCH(name, meta) ::gpufl::detail::Bench{(name), (meta)} + [&]()

#endif /* GPUFL_HPP */
