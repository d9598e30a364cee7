#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""RangeProfiler cases that run_range_checks.sh does not cover, on the GPU
machine with PyTorch and the gpufl package:
  threads    two Python threads open an outer scope each on the one context
             and run GEMMs inside at the same time: one user range per
             context at a time, so one scope is profiled and the other is
             counted as concurrent (each thread does CUDA work first, so
             its context is current when its scope opens);
  single     a scope alone afterwards: profiled as usual;
  left_open  a scope still open at shutdown: counted as open_at_end, and
             the process exits cleanly;
  early      gpufl is initialised before PyTorch creates the context, so the
             profiler starts in the context-created callback
             (range_profiler.started_at "context_created").
Prints one JSON summary (the range_metrics paths and GPU times, the
range_profiler_stats record, the kernels traced) and exits 1 when the
process-level expectations fail: a profiled `single`, open_at_end 1, and
every scope accounted for.

Usage: range_cases.py OUT_DIR
"""
import json
import os
import sys
import threading

import torch

import gpufl


def gemms(x, n):
    for _ in range(n):
        x @ x
    torch.cuda.synchronize()


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) == 2 else 2
    out = sys.argv[1]
    log = os.path.join(out, "range_cases.log")
    assert gpufl.init(app_name="range_cases", log_path=log,
                      profiling_engine=gpufl.ProfilingEngine.RangeProfiler)
    x = torch.randn(4096, 4096, device="cuda")
    gemms(x, 2)
    both_inside = threading.Barrier(2)

    def work(name):
        gemms(x, 1)  # makes the context current on this thread, as any CUDA work would
        with gpufl.Scope(name):
            both_inside.wait()
            gemms(x, 20)

    threads = [threading.Thread(target=work, args=("thread%d" % i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with gpufl.Scope("single"):
        gemms(x, 20)
    left = gpufl.Scope("left_open")
    left.__enter__()
    gemms(x, 5)
    gpufl.shutdown()

    session = os.path.join(log, sorted(os.listdir(log))[-1])
    ranges, stats, kernels, paths, started = [], {}, 0, {}, []
    with open(os.path.join(session, "device.log"), encoding="utf-8") as f:
        for rec in map(json.loads, f):
            if rec["type"] == "dict":
                paths.update(zip(rec["id"], rec["str"]))
            elif rec["type"] == "range_metrics":
                ranges.append(rec)
            elif rec["type"] == "range_profiler":
                started.append(rec.get("started_at"))
            elif rec["type"] == "range_profiler_stats":
                stats = rec
            elif rec["type"] == "kernel":
                kernels += len(rec["start_ns"])
    summary = {
        "ranges": [{"path": paths.get(r.get("path"), r.get("path")),
                    "gpu_time_ms": (r["metrics"].get("gpu__time_duration.sum") or 0) / 1e6}
                   for r in ranges],
        "stats": {k: v for k, v in stats.items() if k not in ("type", "v")},
        "kernel_rows": kernels,
        "started_at": started,
    }
    profiled = [r["path"] for r in summary["ranges"]]
    threads_seen = sum(p.startswith("thread") for p in profiled)
    accounted = threads_seen + stats.get("concurrent", 0)
    summary["checks"] = {
        "single_profiled": "single" in profiled,
        "open_at_end_counted": stats.get("open_at_end") == 1,
        "one_thread_scope_profiled": threads_seen == 1,
        "both_thread_scopes_accounted": accounted == 2,
        "started_at_context_creation": started == ["context_created"],
    }
    print(json.dumps(summary, indent=1))
    return 0 if all(summary["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
