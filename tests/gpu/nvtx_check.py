# SPDX-License-Identifier: Apache-2.0
"""Checks NVTX ranges recorded as scopes on the GPU machine (docs/nvtx.md),
from the JSON report of `gpufl report --format json`:

  nvtx_check.py cuda RUN_JSON      the output of nvtx_check.cu: per scope path the
                                   calls, kernels and GPU time (CUDA events) it must show
  nvtx_check.py torch RUN_JSON     the output of nvtx_torch.py: STEPS train_step ranges with
                                   a forward range in each, every step holding the same
                                   number of kernels (the backward kernels come from
                                   autograd's own thread, outside the ranges; the kernels
                                   against torch.profiler's are check_zero_code.py's)

Prints one JSON line of results; exits 1 when a check fails. GPUFL is the
gpufl command (default .devbin/gpufl)."""
import json
import os
import subprocess
import sys

GPUFL = os.environ.get("GPUFL", os.path.join(".devbin", "gpufl"))
TOLERANCE = 0.05  # GPU time against CUDA events around each kernel


def report(session):
    out = subprocess.run([GPUFL, "report", "--format", "json", session], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def paths(r):
    scopes = {p["path"]: p for p in r["scopes"]["paths"]}
    gpu = {p["path"]: p for p in (r.get("scope_gpu") or {}).get("paths", [])}
    return scopes, gpu


def check_cuda(run):
    r = report(run["session"])
    scopes, gpu = paths(r)
    results, ok = {}, True
    for path, want in run["expect"].items():
        s, g = scopes.get(path), gpu.get(path)
        got = {"calls": s and s["calls"], "kernels": g and g["kernels"],
               "gpu_ns": g and g["gpu_ns"], "source": s and s.get("source"),
               "domain": s and s.get("domain")}
        good = (s is not None and g is not None and s["calls"] == want["calls"]
                and g["kernels"] == want["kernels"]
                and abs(g["gpu_ns"] - want["gpu_ns"]) <= TOLERANCE * want["gpu_ns"]
                and s.get("source") == ("nvtx_start_end" if path == "epoch" else "nvtx")
                and s.get("domain", "") == want.get("domain", ""))
        results[path] = {"want": want, "got": got, "ok": good}
        ok &= good
    return ok, results


def check_torch(run):
    r = report(run["session"])
    scopes, gpu = paths(r)
    steps = run["steps"]
    step, fwd = scopes.get("train_step"), scopes.get("train_step/forward")
    no_scope = (r.get("scope_gpu") or {}).get("no_scope") or {}
    warm = no_scope.get("kernels", 0)
    total = gpu.get("train_step", {}).get("kernels", 0)
    results = {"train_step_calls": step and step["calls"], "forward_calls": fwd and fwd["calls"],
               "train_step_kernels": total, "warmup_kernels": warm,
               "forward_kernels": gpu.get("train_step/forward", {}).get("kernels"),
               "nvtx_injection": run.get("nvtx_injection")}
    fwd_total = gpu.get("train_step/forward", {}).get("kernels", 0)
    ok = (step is not None and step["calls"] == steps and step.get("source") == "nvtx"
          and fwd is not None and fwd["calls"] == steps and total > 0 and total % steps == 0
          and 0 < fwd_total <= total and fwd_total % steps == 0)
    return ok, results


def main():
    kind, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        run = json.loads(f.read().strip().splitlines()[-1])
    ok, results = (check_cuda if kind == "cuda" else check_torch)(run)
    print(json.dumps({"check": kind, "ok": ok, "results": results}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
