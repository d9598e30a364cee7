// SPDX-License-Identifier: Apache-2.0
// spec_program.cpp - the C++ API exactly as the spec documents it, built against an installed
// gpufl. It checks behaviour, not only that it compiles: run it with `--mode enabled`, and with
// `--mode disabled` under GPUFL_DISABLED=1. Exits non-zero after naming every failed check.
#include <gpufl/gpufl.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

int failures = 0;

void check(bool ok, const std::string &what) {
    if (!ok) {
        std::fprintf(stderr, "spec_program: FAIL: %s\n", what.c_str());
        ++failures;
    }
}

// How often each instrumented body ran.
struct Runs {
    int outer = 0, inner = 0, search = 0, probe = 0, named = 0, tagged = 0, lambda = 0, bench = 0;
};

// A GFL_SCOPE left by `return` from inside two open scopes: both must still close.
int first_even(const std::vector<int> &values, Runs &runs) {
    GFL_SCOPE("search") {
        ++runs.search;
        for (int v : values) {
            GFL_SCOPE("probe") {
                ++runs.probe;
                if (v % 2 == 0) return v;
            }
        }
    }
    return -1;
}

// The instrumented workload; the same calls run whether gpufl is on or off.
void workload(Runs &runs) {
    GFL_SCOPE("outer") {
        ++runs.outer;
        GFL_SCOPE("inner") { ++runs.inner; }
        GFL_SCOPE("inner") { ++runs.inner; }
    }
    check(first_even({1, 3, 4, 5}, runs) == 4, "first_even returned the first even value");
    {
        gpufl::ScopedMonitor scope("scoped_name");
        ++runs.named;
    }
    {
        gpufl::ScopedMonitor scope("scoped_tagged", "batch_42");
        ++runs.tagged;
    }
    int answer = gpufl::monitor("lambda", [&]() {
        ++runs.lambda;
        return 42;
    });
    check(answer == 42, "gpufl::monitor returns the lambda's value");
    std::string label = gpufl::monitor("lambda", [&]() -> std::string {
        ++runs.lambda;
        return "label";
    });
    check(label == "label", "gpufl::monitor returns a std::string");

    GFL_BENCH("matmul", gpufl::ScopeMeta{}.setRepeat(10).setWarmup(3)) { ++runs.bench; };

    check(runs.outer == 1 && runs.inner == 2, "nested GFL_SCOPE bodies ran once each");
    check(runs.search == 1 && runs.probe == 3, "GFL_SCOPE bodies around the early return ran");
    check(runs.named == 1 && runs.tagged == 1, "ScopedMonitor blocks ran");
    check(runs.lambda == 2, "gpufl::monitor ran each lambda once");
    check(runs.bench == 13,
          "GFL_BENCH body ran warmup + repeat = 13 times (ran " + std::to_string(runs.bench) + ")");
}

std::string read_file(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

bool has_type(const std::string &line, const char *type) {
    return line.find(std::string("\"type\":\"") + type + "\"") != std::string::npos;
}

// The integers of the column "key":[...] of a batch line; empty when absent.
std::vector<long long> int_column(const std::string &line, const std::string &key) {
    std::vector<long long> out;
    const std::string pat = "\"" + key + "\":[";
    size_t p = line.find(pat);
    if (p == std::string::npos) return out;
    const char *s = line.c_str() + p + pat.size();
    while (*s && *s != ']') {
        char *end = nullptr;
        out.push_back(std::strtoll(s, &end, 10));
        if (end == s) break;
        s = end;
        if (*s == ',') ++s;
    }
    return out;
}

// The strings of "key":["...",...]; enough JSON unescaping for ASCII names.
std::vector<std::string> str_column(const std::string &line, const std::string &key) {
    std::vector<std::string> out;
    const std::string pat = "\"" + key + "\":[";
    size_t p = line.find(pat);
    if (p == std::string::npos) return out;
    p += pat.size();
    while (p < line.size() && line[p] == '"') {
        std::string cur;
        for (++p; p < line.size() && line[p] != '"'; ++p) {
            if (line[p] == '\\' && p + 1 < line.size()) ++p;
            cur += line[p];
        }
        out.push_back(cur);
        ++p; // closing quote
        if (p < line.size() && line[p] == ',') ++p;
    }
    return out;
}

struct ScopeRow {
    long long id, parent, depth, repeat, warmup;
    std::string name, tag;
};

// The only subdirectory of dir (the session), or an empty path.
fs::path only_subdir(const fs::path &dir) {
    fs::path found;
    int n = 0;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(dir, ec)) {
        if (e.is_directory()) {
            found = e.path();
            ++n;
        }
    }
    return n == 1 ? found : fs::path();
}

void check_scope_log(const fs::path &scope_log) {
    std::map<long long, std::string> dict;
    std::vector<ScopeRow> begins;
    std::map<long long, int> ends;
    bool session_end = false;
    for (const std::string &line : lines_of(read_file(scope_log))) {
        if (has_type(line, "dict")) {
            auto ids = int_column(line, "id");
            auto strs = str_column(line, "str");
            check(ids.size() == strs.size() && !ids.empty(), "dict line has matching id/str");
            for (size_t i = 0; i < ids.size() && i < strs.size(); i++) dict[ids[i]] = strs[i];
        } else if (has_type(line, "scope_begin")) {
            auto id = int_column(line, "id"), parent = int_column(line, "parent"),
                 depth = int_column(line, "depth"), name = int_column(line, "name"),
                 tag = int_column(line, "tag"), repeat = int_column(line, "repeat"),
                 warmup = int_column(line, "warmup");
            size_t n = id.size();
            bool same = n > 0 && parent.size() == n && depth.size() == n && name.size() == n &&
                        tag.size() == n && repeat.size() == n && warmup.size() == n;
            check(same, "scope_begin batch has all columns with equal lengths");
            if (!same) continue;
            for (size_t i = 0; i < n; i++) {
                begins.push_back({id[i], parent[i], depth[i], repeat[i], warmup[i],
                                  dict.count(name[i]) ? dict[name[i]] : "?",
                                  tag[i] == 0 ? "" : (dict.count(tag[i]) ? dict[tag[i]] : "?")});
            }
        } else if (has_type(line, "scope_end")) {
            auto id = int_column(line, "id"), implicit = int_column(line, "implicit");
            check(!id.empty() && id.size() == implicit.size(), "scope_end batch columns");
            for (size_t i = 0; i < id.size() && i < implicit.size(); i++) {
                ends[id[i]]++;
                check(implicit[i] == 0, "no scope was closed implicitly");
            }
        } else if (has_type(line, "session_end")) {
            session_end = true;
        }
    }
    check(session_end, "scope.log ends the session with session_end");

    std::map<std::string, int> count;
    std::map<long long, std::string> name_of;
    for (const ScopeRow &r : begins) {
        count[r.name]++;
        name_of[r.id] = r.name;
        check(ends.count(r.id) == 1 && ends[r.id] == 1,
              "scope '" + r.name + "' id " + std::to_string(r.id) + " has exactly one scope_end");
    }
    check(ends.size() == begins.size(), "as many scope_end ids as scope_begin rows");
    const std::map<std::string, int> want = {
        {"outer", 1},       {"inner", 2},         {"search", 1}, {"probe", 3},
        {"scoped_name", 1}, {"scoped_tagged", 1}, {"lambda", 2}, {"matmul", 1}};
    check(count == want, "scope.log has each scope name the expected number of times");
    for (const ScopeRow &r : begins) {
        if (r.name == "matmul") {
            check(r.repeat == 10 && r.warmup == 3,
                  "matmul scope_begin has repeat 10 and warmup 3 (got " + std::to_string(r.repeat) +
                      "/" + std::to_string(r.warmup) + ")");
        } else {
            check(r.repeat == 0 && r.warmup == 0, "plain scope '" + r.name + "' has no repeat");
        }
        if (r.name == "inner")
            check(r.depth == 2 && name_of[r.parent] == "outer", "inner is nested in outer");
        if (r.name == "probe")
            check(r.depth == 2 && name_of[r.parent] == "search", "probe is nested in search");
        if (r.name == "outer" || r.name == "search" || r.name == "matmul")
            check(r.depth == 1 && r.parent == 0, r.name + " is a top-level scope");
        check((r.name == "scoped_tagged") == (r.tag == "batch_42"),
              "only scoped_tagged carries the tag batch_42 ('" + r.name + "')");
    }
}

gpufl::InitOptions options_for(const fs::path &log_path, const fs::path &config) {
    gpufl::InitOptions o;
    o.app_name = "spec_program";
    o.log_path = log_path.string();
    o.backend_url = "https://gpufl.invalid";
    o.api_key = "gpfl_secret_key_not_for_logs";
    o.api_path = "/proxy/api/v1";
    o.remote_upload = true; // deprecated: a notice, no effect
    o.enable_stack_trace = true;
    o.enable_source_collection = false;
    o.enable_external_correlation = false;
    o.enable_synchronization = false;
    o.enable_memory_tracking = true;
    o.enable_cuda_graphs_tracking = true;
    o.system_sample_rate_ms = 10;
    o.kernel_sample_rate_ms = 5; // deprecated: a notice, no effect
    o.continuous_system_sampling = true;
    o.backend = gpufl::BackendKind::None;
    o.profiling_engine = gpufl::ProfilingEngine::Monitor;
    o.config_file = config.string();
    o.flush_logs_always = true;
    o.enable_debug_output = false;
    o.enabled = true;
    return o;
}

// While the session runs (enabled) uploadLogs refuses at once: it uploads after shutdown();
// disabled, it succeeds with nothing sent.
bool upload_quickly(const fs::path &log_path, bool expect) {
    gpufl::UploadOptions u;
    u.log_path = log_path.string();
    u.backend_url = "https://gpufl.invalid";
    u.api_key = "gpfl_secret_key_not_for_logs";
    u.api_path = "/api/v1";
    auto t0 = std::chrono::steady_clock::now();
    bool ok = gpufl::uploadLogs(u);
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    check(ok == expect, std::string("uploadLogs returned ") + (ok ? "true" : "false"));
    check(ms < 2000, "uploadLogs returned at once (" + std::to_string(ms) + " ms)");
    return ok;
}

int run_enabled(const fs::path &dir) {
    const fs::path logs = dir / "logs", config = dir / "config.json", report = dir / "report.txt";
    {
        std::ofstream cfg(config);
        cfg << "{\"flush_interval_ms\": 20}\n";
    }

    // The kill switch in code: init is a no-op and writes nothing.
    gpufl::InitOptions off;
    off.app_name = "spec_off";
    off.log_path = (dir / "off_logs").string();
    off.enabled = false;
    check(!gpufl::init(off), "init with enabled=false returns false");
    check(!fs::exists(dir / "off_logs"), "enabled=false creates no log directory");

    gpufl::InitOptions defaults;
    check(defaults.backend == gpufl::BackendKind::Auto, "the default backend is Auto");
    check(defaults.profiling_engine == gpufl::ProfilingEngine::Monitor,
          "the default engine is Monitor");

    check(gpufl::init(options_for(logs, config)), "init returns true");
    check(gpufl::systemStart("phase"), "systemStart returns true");
    Runs runs;
    workload(runs);
    check(gpufl::systemStop("phase"), "systemStop returns true");
    upload_quickly(logs, false);
    gpufl::shutdown();
    gpufl::shutdown(); // safe to repeat

    gpufl::generateReport();
    gpufl::generateReport(report.string());
    const std::string text = read_file(report);
    check(!text.empty(), "generateReport(path) wrote " + report.string());
    for (const char *name :
         {"outer", "inner", "search", "probe", "scoped_name", "scoped_tagged", "lambda", "matmul"})
        check(text.find(name) != std::string::npos,
              std::string("the report names scope '") + name + "'");

    const fs::path session = only_subdir(logs);
    check(!session.empty(), "log_path holds exactly one session directory");
    if (session.empty()) return 1;
    const std::string pid = "-" + std::to_string(getpid()) + "-";
    check(session.filename().string().find(pid) != std::string::npos,
          "the session id names this process's pid");
    for (const char *f : {"device.log", "scope.log", "system.log"}) {
        check(fs::is_regular_file(session / f), std::string("the session has ") + f);
        const std::string body = read_file(session / f);
        check(body.find("gpfl_secret_key_not_for_logs") == std::string::npos,
              std::string("the api key is not written to ") + f);
        check(body.find("\"type\":\"session_end\"") != std::string::npos,
              std::string(f) + " has session_end");
    }
    check_scope_log(session / "scope.log");

    const std::string device = read_file(session / "device.log");
    check(device.find("\"backend_requested\":\"None\"") != std::string::npos,
          "device.log records backend None as asked for");
    check(device.find("\"engine_requested\":\"Monitor\"") != std::string::npos,
          "device.log records engine Monitor");
    check(device.find("\"app_name\":{\"value\":\"spec_program\",\"from\":\"code\"}") !=
              std::string::npos,
          "options record: app_name from code");
    check(device.find("\"flush_interval_ms\":{\"value\":20,\"from\":\"config\"}") !=
              std::string::npos,
          "options record: the config file was applied");
    const std::string system = read_file(session / "system.log");
    check(system.find("\"type\":\"system_start\"") != std::string::npos &&
              system.find("\"type\":\"system_stop\"") != std::string::npos &&
              system.find("\"name\":\"phase\"") != std::string::npos,
          "system.log has system_start/system_stop of window 'phase'");

    // A second session in the same process, with BackendKind::Auto.
    gpufl::InitOptions autoopt = options_for(dir / "logs_auto", config);
    autoopt.backend = gpufl::BackendKind::Auto;
    check(gpufl::init(autoopt), "a second init after shutdown starts a new session");
    GFL_SCOPE("second") {}
    gpufl::shutdown();
    const fs::path second = only_subdir(dir / "logs_auto");
    check(!second.empty() && second.filename() != session.filename(),
          "the second session has its own id");
    if (!second.empty())
        check(read_file(second / "device.log").find("\"backend_requested\":\"Auto\"") !=
                  std::string::npos,
              "device.log of the second session records backend Auto");
    return 0;
}

int run_disabled(const fs::path &dir) {
    const fs::path logs = dir / "logs", config = dir / "config.json", report = dir / "report.txt";
    check(!gpufl::init(options_for(logs, config)), "init returns false under GPUFL_DISABLED");
    gpufl::systemStart("phase");
    Runs runs;
    workload(runs);
    gpufl::systemStop("phase");
    upload_quickly(logs, true);
    gpufl::shutdown();
    gpufl::generateReport();
    gpufl::generateReport(report.string());
    check(!fs::exists(logs), "no log directory is created when disabled");
    check(!fs::exists(report), "no report file is written when disabled");
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    std::string mode, dir;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--mode") == 0)
            mode = argv[i + 1];
        else if (std::strcmp(argv[i], "--dir") == 0)
            dir = argv[i + 1];
    }
    if ((mode != "enabled" && mode != "disabled") || dir.empty()) {
        std::fprintf(stderr, "usage: %s --mode enabled|disabled --dir WORKDIR\n", argv[0]);
        return 2;
    }
    const char *env = std::getenv("GPUFL_DISABLED");
    const bool env_off = env && *env && std::strcmp(env, "0") != 0;
    if (env_off != (mode == "disabled")) {
        std::fprintf(stderr, "spec_program: --mode %s needs GPUFL_DISABLED %s\n", mode.c_str(),
                     mode == "disabled" ? "=1" : "unset");
        return 2;
    }
    fs::create_directories(dir);
    if (mode == "enabled")
        run_enabled(dir);
    else
        run_disabled(dir);
    if (failures) {
        std::fprintf(stderr, "spec_program (%s): %d check(s) failed\n", mode.c_str(), failures);
        return 1;
    }
    std::printf("spec_program (%s): all checks passed\n", mode.c_str());
    return 0;
}
