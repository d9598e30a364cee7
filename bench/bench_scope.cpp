// SPDX-License-Identifier: Apache-2.0
// bench_scope.cpp - cost of one scope (begin + end) through the C++ API.
//
// Three configurations in one run, so their ratios share the machine's
// state: gpufl never initialised, gpufl disabled (enabled=false), and a
// running session with the Monitor engine. Each timed batch opens and closes
// BATCH scopes, which fit in the thread's ring; the collector drains between
// batches (untimed), so no record is dropped and the figure is the real
// recording path, not the drop path. Prints the median and p90 per scope and
// the bytes each scope costs on disk.
#include <gpufl/gpufl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace {

constexpr int BATCH = 2000; // 4000 records: half the default ring
constexpr int BATCHES = 400;

struct Figures {
    double median_ns, p90_ns;
};

Figures time_batches(bool drain) {
    std::vector<double> per_scope;
    per_scope.reserve(BATCHES);
    for (int b = 0; b < BATCHES; ++b) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < BATCH; ++i) {
            GFL_SCOPE("bench_scope") { asm volatile("" ::: "memory"); }
        }
        auto t1 = std::chrono::steady_clock::now();
        per_scope.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / BATCH);
        if (drain) gpufl_flush();
    }
    std::sort(per_scope.begin(), per_scope.end());
    return {per_scope[per_scope.size() / 2], per_scope[per_scope.size() * 9 / 10]};
}

// The floor: two TSC reads, what any scope with a begin and an end time
// must pay on this CPU.
Figures time_two_tsc_reads() {
    std::vector<double> per_pair;
    for (int b = 0; b < BATCHES; ++b) {
        unsigned long long sink = 0;
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < BATCH; ++i) {
#if defined(__x86_64__)
            sink += __rdtsc();
            asm volatile("" ::: "memory");
            sink += __rdtsc();
#endif
        }
        auto t1 = std::chrono::steady_clock::now();
        asm volatile("" ::"r"(sink));
        per_pair.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / BATCH);
    }
    std::sort(per_pair.begin(), per_pair.end());
    return {per_pair[per_pair.size() / 2], per_pair[per_pair.size() * 9 / 10]};
}

long long dir_bytes(const std::string &dir, const char *file) {
    struct stat st;
    return stat((dir + "/" + file).c_str(), &st) == 0 ? (long long)st.st_size : -1;
}

} // namespace

int main(int argc, char **argv) {
    const char *log_path = "/tmp/gpufl-bench-scope";
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--help")) {
            std::puts("usage: bench_scope [--log-path DIR]\n"
                      "Times scope begin+end through the C++ API: uninitialised, disabled and "
                      "Monitor.");
            return 0;
        }
        if (!std::strcmp(argv[i], "--log-path") && i + 1 < argc) log_path = argv[++i];
    }

    Figures floor = time_two_tsc_reads();
    Figures never = time_batches(false);

    gpufl::InitOptions off;
    off.enabled = false;
    gpufl::init(off);
    Figures disabled = time_batches(false);

    gpufl::InitOptions on;
    on.app_name = "bench_scope";
    on.log_path = log_path;
    if (!gpufl::init(on)) {
        std::fprintf(stderr, "bench_scope: init failed: %s\n", gpufl_last_error());
        return 1;
    }
    time_batches(true); // warm the ring's pages and the dictionary
    char dir[4096];
    gpufl_session_dir(dir, sizeof dir);
    gpufl_flush();
    long long before = dir_bytes(dir, "scope.log");
    Figures monitor = time_batches(true);
    gpufl_flush();
    long long after = dir_bytes(dir, "scope.log");
    gpufl_stats_t stats;
    stats.size = sizeof stats;
    gpufl_get_stats(&stats);
    gpufl::shutdown();

    double scopes = double(BATCH) * BATCHES;
    std::printf("scope begin+end, C++ API (median / p90 of %d batches of %d scopes)\n", BATCHES,
                BATCH);
    std::printf("  never initialised : %6.2f ns / %6.2f ns\n", never.median_ns, never.p90_ns);
    std::printf("  disabled          : %6.2f ns / %6.2f ns\n", disabled.median_ns, disabled.p90_ns);
    std::printf("  Monitor engine    : %6.2f ns / %6.2f ns\n", monitor.median_ns, monitor.p90_ns);
    std::printf("  two rdtsc (floor) : %6.2f ns / %6.2f ns\n", floor.median_ns, floor.p90_ns);
    std::printf("  records dropped   : %llu\n", (unsigned long long)stats.records_dropped);
    std::printf("bytes on disk per scope (begin+end rows): %.1f (%.1f per event)\n",
                double(after - before) / scopes, double(after - before) / scopes / 2);
    return stats.records_dropped == 0 ? 0 : 1;
}
