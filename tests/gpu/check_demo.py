#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the GPU demo's session (examples/demo_gpu.cu) against what the
program did and against Nsight Compute.

The demo's own code fixes what the Trace engine must have seen: per step six
kernels (three matmuls, bias_relu, row_loss, sgd_update), one memset and one
device-to-host copy of the loss; four host-to-device copies from pageable
memory before the loop; one matmul and one copy back after it. The report's
JSON must hold exactly those counts, GPU time under each scope, the step tags,
at least one insight, and for each kernel the theoretical occupancy Nsight
Compute gives for the same launch (ncu's CSV from a run of the demo with gpufl
disabled, ncu being a CUPTI client itself).

Usage: check_demo.py REPORT_JSON STEPS [NCU_CSV]. Prints one line per check
and exits 1 when any fails. Python 3 standard library only.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_ncu import parse_ncu_csv  # noqa: E402

KERNELS_PER_STEP = {"matmul_tiled": 3, "bias_relu": 1, "row_loss": 1, "sgd_update": 1}


def short(name):
    """'matmul_tiled(const float*, ...)' -> 'matmul_tiled'."""
    base = name.replace("(anonymous namespace)::", "").split("(")[0]
    return base.split("::")[-1].strip()


def ncu_occupancy(path):
    """{kernel short name: theoretical occupancy %} from ncu's raw CSV."""
    rows, _ = parse_ncu_csv(open(path, encoding="utf-8", errors="replace").read())
    out = {}
    for row in rows:
        value = row.get("sm__maximum_warps_per_active_cycle_pct", "").replace(",", "")
        if value:
            out[short(row.get("Kernel Name", "?"))] = float(value)
    return out


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    report = json.load(open(sys.argv[1], encoding="utf-8"))
    steps = int(sys.argv[2])
    results = []

    def check(name, ok, detail):
        results.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'}  {name}: {detail}")

    engine = (report["session"].get("engine") or {}).get("running")
    check("engine", engine == "Trace", f"running {engine}")
    kernels = report.get("kernel_details") or {"kernels": []}
    calls = {}
    for k in kernels["kernels"]:
        calls[short(k["name"])] = calls.get(short(k["name"]), 0) + k["calls"]
    for name, per_step in KERNELS_PER_STEP.items():
        want = per_step * steps + (1 if name == "matmul_tiled" else 0)
        check(f"launches of {name}", calls.get(name) == want, f"{calls.get(name)} (program: {want})")
    copies = report.get("transfers") or {"directions": []}
    by_dir = {d["direction"]: d for d in copies["directions"]}
    htod, dtoh = by_dir.get("htod", {}), by_dir.get("dtoh", {})
    check("host-to-device copies", htod.get("count") == 4 and htod.get("pageable") == 4,
          f"{htod.get('count')} ({htod.get('pageable')} pageable; program: 4, all pageable)")
    check("device-to-host copies", dtoh.get("count") == steps + 1,
          f"{dtoh.get('count')} (program: {steps + 1})")
    memsets = report["session"]["records"].get("memsets")
    check("memsets", memsets == steps, f"{memsets} (program: {steps})")

    gpu = report.get("scope_gpu") or {"paths": []}
    per_path = {p["path"]: p for p in gpu["paths"]}
    for path in ("train_step/forward_pass", "train_step/backward_pass",
                 "train_step/optimizer_step", "evaluate"):
        p = per_path.get(path)
        check(f"GPU time in {path}", bool(p and p["gpu_ns"] > 0),
              f"{p['gpu_ns'] if p else None} ns")
    scopes = {p["path"]: p for p in report["scopes"]["paths"]}
    train = scopes.get("train_step", {})
    check("train_step calls and tags", train.get("calls") == steps and bool(train.get("tags")),
          f"{train.get('calls')} calls, tags {train.get('tags')!r}")
    findings = report["insights"]["findings"]
    rules = sorted({f["rule"] for f in findings})
    check("insights", len(findings) >= 1, f"{len(findings)}: {', '.join(rules)}")
    located = [f for f in findings if (f.get("location") or {}).get("file", "").endswith("demo_gpu.cu")]
    check("an insight names a line of demo_gpu.cu", bool(located),
          "; ".join(f"{f['rule']} at line {f['location']['line']}" for f in located) or "none")

    if len(sys.argv) == 4:
        ncu = ncu_occupancy(sys.argv[3])
        for k in kernels["kernels"]:
            name = short(k["name"])
            for c in k["configs"]:
                ours, theirs = c.get("occupancy_pct"), ncu.get(name)
                ok = ours is not None and theirs is not None and abs(ours - theirs) <= 0.1
                check(f"occupancy of {name} vs ncu", ok,
                      f"gpufl {ours} %, ncu {theirs} % (limiter {c.get('limiter')})")
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
