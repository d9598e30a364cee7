// SPDX-License-Identifier: Apache-2.0
// demo.cpp - a small sample program profiled with gpufl, then its report.
//
// It does CPU work in named phases (nested scopes, a GFL_BENCH loop, worker
// threads) with the host sampler on, the way a training loop would use gpufl
// around its GPU work, and prints the text report built from the session logs.
#include "demo_args.h"

#include <gpufl/gpufl.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

static double busy_work(int n) {
    double acc = 0;
    for (int i = 1; i <= n; ++i) acc += std::sqrt(static_cast<double>(i)) / i;
    return acc;
}

static const char usage[] =
    "usage: gpufl_demo [--log-path DIR] [--steps N]\n"
    "Runs a small CPU workload in gpufl scopes and prints the gpufl report.\n"
    "  --log-path DIR  where session logs go (default: gpufl_demo.log)\n"
    "  --steps N       training steps to simulate (default: 5)\n";

int main(int argc, char **argv) {
    gpufl::InitOptions opts;
    opts.app_name = "gpufl_demo";
    opts.continuous_system_sampling = true;
    opts.system_sample_rate_ms = 20;
    int steps = 5;
    int rc = demo_parse_args(argc, argv, "gpufl_demo", usage, opts, &steps);
    if (rc >= 0) return rc;

    if (!gpufl::init(opts)) std::fprintf(stderr, "gpufl_demo: gpufl is off; running unprofiled\n");

    double sink = 0;
    GFL_SCOPE("load_data") { sink += busy_work(2000000); }
    for (int step = 0; step < steps; ++step) {
        GFL_SCOPE("train_step") {
            GFL_SCOPE("forward_pass") { sink += busy_work(800000); }
            GFL_SCOPE("backward_pass") { sink += busy_work(1600000); }
            gpufl::monitor("optimizer_step", [&] { sink += busy_work(300000); });
        }
    }
    // Two workers preprocess in parallel, each in its own scopes.
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w)
        workers.emplace_back([w] {
            gpufl::ScopedMonitor scope("preprocess", "worker_" + std::to_string(w));
            volatile double v = busy_work(3000000);
            (void)v;
        });
    for (auto &t : workers) t.join();

    GFL_BENCH("kernel_bench", gpufl::ScopeMeta{}.setRepeat(10).setWarmup(3)) {
        sink += busy_work(100000);
    };

    gpufl::shutdown();
    gpufl::generateReport();
    return sink > 0 ? 0 : 1;
}
