#!/usr/bin/env python3
"""Overhead of gpufl's engines on real PyTorch workloads, on the GPU machine.

Workloads (each a loop of identical steps after warmup):
  gemm         torch.matmul of two 8192 x 8192 bf16 matrices per step;
  transformer  a training step of a 6-layer transformer encoder (d_model 1024,
               16 heads, feed-forward 4096, batch 16 x 512 tokens, bf16
               autocast, AdamW), 30 measured steps.
Variants: `untraced` (no gpufl loaded), `trace` (engine Trace),
`pcs<P>` (engine PcSampling at period P; with --drains, also `pcs<P>d<MS>`,
GetData every MS ms), and with --deep-engines also
`sassm` (engine SassMetrics) and `deep` (engine Deep), each in a fresh
process. gpufl is
loaded through ctypes (tests/gpu/gpufl_ctypes.py) and initialised before the
first CUDA call, as the documentation asks; sampling then starts on the
context's creation.

Rounds interleave the variants (untraced, trace, pcs..., untraced, ...) so
that drift of the machine falls on all of them; a variant's figure is the
median over its runs of the median step time, and its overhead is measured
against the untraced median of the same workload.

Each step is timed alone (CUDA events, a synchronization after it), so
the CPU's launch path of every step is on its critical path. With
--free-running the measured steps are timed as one block with a single
synchronization at the end instead, as in a training loop that never waits
for the GPU: the CPU runs ahead, and what remains is the GPU-side cost (on
an H100 the transformer's PcSampling cost was under 0.3 % so, and 9 to 16 %
per step, docs/gpu-results/2026-11-22-pc-sampling.md).

With --pin-local every run is kept to the CPUs the GPU's PCI device calls
local (sysfs local_cpulist, within the CPUs this process may use): on a
two-socket host a run scheduled on the far socket launches more slowly,
which splits runs of one variant into groups. The CPUs used go into the
summary.

Prints one JSON line per run and, last, one JSON summary; --markdown FILE
also writes the summary as a table.
Usage: pcs_overhead.py [--rounds 3] [--periods 16,18] [--workloads gemm,transformer] [--steps N]
                      [--drains 500,1000] [--deep-engines] [--pin-local] [--free-running]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "gpu"))


def child(workload, variant, log_dir, steps_wanted=0, free_running=False):
    t_start = time.time()
    label = variant
    g = None
    if variant != "untraced":
        import gpufl_ctypes
        # A variant ending in "-alt" uses the library given by --alt-library
        # (a diagnosis build, to tell gpufl's own per-launch work from CUPTI's).
        alt = variant.endswith("-alt")
        variant = variant[:-4] if alt else variant
        g = gpufl_ctypes.Gpufl(os.environ["GPUFL_ALT_LIBRARY"] if alt else None)
        if variant == "trace":
            rc = g.init("pcs_overhead", log_dir, gpufl_ctypes.ENGINE_TRACE)
        elif variant == "sassm":
            rc = g.init("pcs_overhead", log_dir, gpufl_ctypes.ENGINE_SASS_METRICS)
        elif variant == "deep":
            rc = g.init("pcs_overhead", log_dir, gpufl_ctypes.ENGINE_DEEP)
        else:  # pcs<P>, or pcs<P>d<MS>: GetData every MS ms (GPUFL_PC_SAMPLING_DRAIN_MS)
            period, _, drain = variant[3:].partition("d")
            if drain:
                os.environ["GPUFL_PC_SAMPLING_DRAIN_MS"] = drain
            rc = g.init("pcs_overhead", log_dir, gpufl_ctypes.ENGINE_PC_SAMPLING,
                        pc_sampling_period=int(period))
        if rc != 0:
            raise SystemExit(f"gpufl_init: {g.last_error()}")
    t_init = time.time()
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    dev = "cuda"
    if workload == "gemm":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        c = torch.empty_like(a)

        def step():
            torch.matmul(a, b, out=c)
        warmup, steps, inner = 10, 30, 10
    else:
        layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, dropout=0.0)
        model = nn.TransformerEncoder(layer, 6).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        x = torch.randn(16, 512, 1024, device=dev)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x).float().pow(2).mean()
            loss.backward()
            opt.step()
        warmup, steps, inner = 5, 30, 1
    if steps_wanted > 0:
        steps = steps_wanted
    t_warm = time.time()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    warmup_s = time.time() - t_warm
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # Free-running: one block, one synchronization at the end (the CPU runs
    # ahead of the GPU); else each step (of `inner` calls) timed alone.
    blocks, per = (1, steps * inner) if free_running else (steps, inner)
    for _ in range(blocks):
        start.record()
        for _ in range(per):
            step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per)
    session = None
    t_down = time.time()
    if g is not None:
        session = g.session_dir()
        g.shutdown()
    print(json.dumps({"workload": workload, "variant": label, "step_ms": times,
                      "init_s": round(t_init - t_start, 3), "warmup_s": round(warmup_s, 3),
                      "shutdown_s": round(time.time() - t_down, 3),
                      "median_ms": statistics.median(times), "session": session,
                      "device": torch.cuda.get_device_name(0)}))


def session_stats(path):
    """pc_sampling_stats and trace_stats of a session, when it has them."""
    out = {}
    if not path:
        return out
    try:
        with open(os.path.join(path, "device.log")) as f:
            for line in f:
                if '"type":"sass"' in line:
                    out["sass"] = out.get("sass", 0) + 1
                    out["sass_errors"] = out.get("sass_errors", 0) + ('"error"' in line)
                    continue
                if '"pc_sampling_stats"' in line or '"trace_stats"' in line or \
                        '"type":"pc_sampling"' in line or '"sass_metrics_stats"' in line:
                    rec = json.loads(line)
                    rec.pop("reasons", None)
                    out[rec["type"]] = rec
    except (OSError, ValueError) as e:
        out["error"] = str(e)
    return out


def parse_cpulist(text):
    """CPU numbers of a sysfs list such as "0-15,32-47"."""
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def gpu_local_cpus():
    """The CPUs local to GPU 0 that this process may use, and how they were
    found; raises SystemExit with the reason when they cannot be told."""
    p = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader", "-i",
                        "0"], capture_output=True, text=True)
    bus = p.stdout.strip().lower()
    if p.returncode != 0 or len(bus) < 12:
        raise SystemExit(f"--pin-local: no PCI bus id from nvidia-smi: {p.stderr.strip()}")
    path = f"/sys/bus/pci/devices/{bus[-12:]}/local_cpulist"  # sysfs: 4-digit domain
    try:
        with open(path) as f:
            local = parse_cpulist(f.read())
    except OSError as e:
        raise SystemExit(f"--pin-local: {e}")
    usable = local & os.sched_getaffinity(0)
    if not usable:
        raise SystemExit(f"--pin-local: none of {path}'s CPUs may be used here")
    return sorted(usable), path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--periods", default="16")
    ap.add_argument("--workloads", default="gemm,transformer")
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--log-root", default=None, help="where the sessions go (default: a temp dir)")
    ap.add_argument("--steps", type=int, default=0, help="measured steps (default 30)")
    ap.add_argument("--alt-library", default=None,
                    help="also run trace and pcs variants (named -alt) with this libgpufl.so")
    ap.add_argument("--drains", default="",
                    help="also run PcSampling with GetData every N ms (comma list)")
    ap.add_argument("--deep-engines", action="store_true",
                    help="also run the SassMetrics and Deep engines")
    ap.add_argument("--pin-local", action="store_true",
                    help="keep every run on the CPUs local to GPU 0")
    ap.add_argument("--free-running", action="store_true",
                    help="time all steps as one block with a single synchronization at the end "
                         "(a loop that never waits for the GPU), instead of each step")
    ap.add_argument("--child", nargs=3, metavar=("WORKLOAD", "VARIANT", "LOG_DIR"))
    a = ap.parse_args()
    if a.child:
        child(*a.child, steps_wanted=a.steps, free_running=a.free_running)
        return 0
    variants = ["untraced", "trace"] + [f"pcs{p}" for p in a.periods.split(",") if p]
    variants += [f"pcs{p}d{d}" for p in a.periods.split(",") if p
                 for d in a.drains.split(",") if d]
    if a.deep_engines:
        variants += ["sassm", "deep"]
    if a.alt_library:
        os.environ["GPUFL_ALT_LIBRARY"] = os.path.abspath(a.alt_library)
        variants += [v + "-alt" for v in variants if v != "untraced"]
    log_root = a.log_root or tempfile.mkdtemp(prefix="gpufl-pcs-overhead-")
    cpus, cpus_from = (gpu_local_cpus() if a.pin_local else (None, None))
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    runs = []
    for r in range(a.rounds):
        for w in a.workloads.split(","):
            for v in variants:
                t0 = time.time()
                p = subprocess.run([sys.executable, __file__, "--child", w, v, log_root,
                                    "--steps", str(a.steps)] +
                                   (["--free-running"] if a.free_running else []),
                                   capture_output=True, text=True, preexec_fn=pin)
                if p.returncode != 0:
                    print(json.dumps({"workload": w, "variant": v, "round": r,
                                      "error": p.stderr[-2000:]}), flush=True)
                    continue
                res = json.loads(p.stdout.strip().splitlines()[-1])
                res["round"] = r
                res["wall_s"] = round(time.time() - t0, 1)
                res["stats"] = session_stats(res.get("session"))
                res["stderr_tail"] = p.stderr[-600:]
                runs.append(res)
                print(json.dumps(res), flush=True)
    summary = {"device": runs[0]["device"] if runs else None, "rounds": a.rounds,
               "timing": "free-running block" if a.free_running else "each step synchronized",
               "cpus": cpus, "cpus_from": cpus_from, "workloads": {}}
    for w in a.workloads.split(","):
        base = [x["median_ms"] for x in runs if x["workload"] == w and x["variant"] == "untraced"]
        if not base:
            continue
        b = statistics.median(base)
        summary["workloads"][w] = {}
        for v in variants:
            m = [x["median_ms"] for x in runs if x["workload"] == w and x["variant"] == v]
            if m:
                summary["workloads"][w][v] = {
                    "median_ms": round(statistics.median(m), 4),
                    "runs_ms": [round(x, 4) for x in m],
                    "overhead_pct": round(100 * (statistics.median(m) / b - 1), 2)}
    print(json.dumps({"summary": summary}), flush=True)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| workload | variant | median step (ms) | runs (ms) | overhead |\n")
            f.write("|---|---|---|---|---|\n")
            for w, vs in summary["workloads"].items():
                for v, s in vs.items():
                    f.write(f"| {w} | {v} | {s['median_ms']} | "
                            f"{', '.join(map(str, s['runs_ms']))} | {s['overhead_pct']:+.2f} % |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
