// SPDX-License-Identifier: Apache-2.0
// bench_scope.cpp - cost of one scope (begin + end) through the C++ API.
//
// Three configurations in one run, so their ratios share the machine's
// state: gpufl never initialised, gpufl disabled (enabled=false), and a
// running session with the Monitor engine. Each timed batch opens and closes
// BATCH scopes, which fit in the thread's ring; the collector drains between
// batches (untimed), so no record is dropped and the figure is the real
// recording path, not the drop path. Every scope batch is timed beside a
// batch of two TSC reads (the floor) in the same loop, so each configuration
// is compared with the floor of its own moment. Prints the median and p90 per
// scope, the median ratio to the floor and the bytes each scope costs on disk.
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

Figures summarise(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v[v.size() * 9 / 10]};
}

// One timed batch of BATCH scopes, in ns per scope.
__attribute__((noinline)) double scope_batch() {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < BATCH; ++i) {
        GFL_SCOPE("bench_scope") { asm volatile("" ::: "memory"); }
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / BATCH;
}

// The floor: two TSC reads, what any scope with a begin and an end time
// must pay on this CPU. The same loop as scope_batch, with the same barrier
// in the body; both reads are kept (they feed `sink`).
__attribute__((noinline)) double floor_batch() {
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
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / BATCH;
}

struct Phase {
    Figures scope, floor;
    double ratio; // median over the batch pairs of scope / floor
};

// Times BATCHES scope batches, each beside a floor batch taken right before
// or after it (the order alternates), so that both see the same state of a
// shared, noisy machine. With drain, the collector empties the ring after
// every scope batch, untimed.
Phase time_phase(bool drain) {
    std::vector<double> scope, floor, ratio;
    scope.reserve(BATCHES);
    floor.reserve(BATCHES);
    ratio.reserve(BATCHES);
    for (int b = 0; b < BATCHES; ++b) {
        double s, f;
        if (b & 1) {
            f = floor_batch();
            s = scope_batch();
        } else {
            s = scope_batch();
            f = floor_batch();
        }
        if (drain) gpufl_flush();
        scope.push_back(s);
        floor.push_back(f);
        ratio.push_back(s / f);
    }
    std::sort(ratio.begin(), ratio.end());
    return {summarise(scope), summarise(floor), ratio[ratio.size() / 2]};
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

    Phase never = time_phase(false);

    gpufl::InitOptions off;
    off.enabled = false;
    gpufl::init(off);
    Phase disabled = time_phase(false);

    gpufl::InitOptions on;
    on.app_name = "bench_scope";
    on.log_path = log_path;
    if (!gpufl::init(on)) {
        std::fprintf(stderr, "bench_scope: init failed: %s\n", gpufl_last_error());
        return 1;
    }
    time_phase(true); // warm the ring's pages and the dictionary
    char dir[4096];
    gpufl_session_dir(dir, sizeof dir);
    gpufl_flush();
    long long before = dir_bytes(dir, "scope.log");
    Phase monitor = time_phase(true);
    gpufl_flush();
    long long after = dir_bytes(dir, "scope.log");
    gpufl_stats_t stats;
    stats.size = sizeof stats;
    gpufl_get_stats(&stats);
    gpufl::shutdown();

    double scopes = double(BATCH) * BATCHES;
    std::printf("scope begin+end, C++ API (median / p90 of %d batches of %d scopes; each batch "
                "beside a batch of two rdtsc)\n",
                BATCHES, BATCH);
    const struct {
        const char *name;
        const Phase &p;
    } rows[] = {{"never initialised", never}, {"disabled", disabled}, {"Monitor engine", monitor}};
    for (const auto &r : rows)
        std::printf("  %-17s : %6.2f ns / %6.2f ns   two rdtsc (floor) %6.2f ns / %6.2f ns   "
                    "ratio %.3f\n",
                    r.name, r.p.scope.median_ns, r.p.scope.p90_ns, r.p.floor.median_ns,
                    r.p.floor.p90_ns, r.p.ratio);
    std::printf("  records dropped   : %llu\n", (unsigned long long)stats.records_dropped);
    std::printf("bytes on disk per scope (begin+end rows): %.1f (%.1f per event)\n",
                double(after - before) / scopes, double(after - before) / scopes / 2);
    return stats.records_dropped == 0 ? 0 : 1;
}
