# SPDX-License-Identifier: Apache-2.0
"""gpufl.Scope in a PyTorch script run under `gpufl trace` (docs/trace.md): the
script's own gpufl.init joins the injected session, and its scopes, made by the
Python extension's copy of the library, are forwarded to the copy that records
(lib/core/forward.c). On the GPU machine:
  gpufl trace --engine trace --output ROOT -- python3 tests/gpu/trace_scope_check.py run STEPS
  python3 tests/gpu/trace_scope_check.py check ROOT STEPS
`check` wants one session under ROOT, STEPS scopes named py_step each with the
step's kernels inside it (by the kernel rows' scope column), and prints a JSON
verdict; exit 1 when a check fails."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def run(steps):
    import gpufl
    import torch
    from torch_workload import Workload

    w = Workload()
    joined = gpufl.init("trace_scope_check", profiling_engine="trace")
    w.run(1)  # warm-up, outside every scope
    for _ in range(steps):
        with gpufl.Scope("py_step"):
            w.run(1)
    torch.cuda.synchronize()
    gpufl.shutdown()
    print(json.dumps({"init": bool(joined), "steps": steps,
                      "trace_process": os.environ.get("GPUFL_TRACE_PROCESS")}))


def check(root, steps):
    import gpufl_log

    logs = glob.glob(os.path.join(root, "**", "device.log"), recursive=True)
    checks = []

    def verdict(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    verdict("one session", len(logs) == 1, [os.path.dirname(p) for p in logs])
    if logs:
        s = gpufl_log.Session(os.path.dirname(logs[0]))
        steps_seen = {i: sc for i, sc in s.scopes().items() if sc["name"] == "py_step"}
        verdict("py_step scopes", len(steps_seen) == steps,
                {"found": len(steps_seen), "want": steps})
        kernels = s.kernels()
        inside = {}
        for k in kernels:
            sid = k.get("scope")
            if sid in steps_seen:
                inside[sid] = inside.get(sid, 0) + 1
        counts = sorted(inside.values())
        verdict("kernels inside every py_step", len(inside) == steps and counts and counts[0] > 0,
                {"kernels": len(kernels), "in_steps": sum(counts), "per_step": counts[:3] + counts[-3:]})
        closed = all(sc["end_ns"] is not None for sc in steps_seen.values())
        verdict("every py_step closed", closed, None)
    ok = all(c["ok"] for c in checks)
    print(json.dumps({"ok": ok, "checks": checks}))
    return 0 if ok else 1


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("run", "check"):
        print(__doc__)
        return 2
    if sys.argv[1] == "run":
        run(int(sys.argv[2]))
        return 0
    return check(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)


if __name__ == "__main__":
    sys.exit(main())
