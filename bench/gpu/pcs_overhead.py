#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Overhead of gpufl's engines on real PyTorch workloads, on the GPU machine.

Workloads (each a loop of identical steps after warmup):
  gemm         torch.matmul of two 8192 x 8192 bf16 matrices per step;
  transformer  a training step of a 6-layer transformer encoder (d_model 1024,
               16 heads, feed-forward 4096, batch 16 x 512 tokens, bf16
               autocast, AdamW), 30 measured steps.
Variants: `untraced` (no gpufl loaded), `trace` (engine Trace),
`pcs<P>` (engine PcSampling at period P; `pcs<P>+<MODE>`, given in --variants, with
Trace's activity kept as MODE, GPUFL_PC_SAMPLING_TRACE; with --drains, also `pcs<P>d<MS>`,
GetData every MS ms; `pcs<P>w<MS>`, given in --variants, has CUPTI decode
every MS ms; any variant with `-late` appended, given in --variants, starts
its session on the live context after warmup), and with --deep-engines also
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

With --in-process N, every variant runs in each of N processes instead,
session after session on one model (child_in_process), and a variant's
overhead is the median over rounds of its block against the untraced block
of the same round: drift between processes (which CPUs, which memory) then
falls on no variant. With --timeline the library's debug output gives the
time of every cuptiPCSamplingGetData call, and each run compares the steps
that overlap one with those that do not.

Prints one JSON line per run and, last, one JSON summary; --markdown FILE
also writes the summary as a table.
Usage: pcs_overhead.py [--rounds 3] [--periods 16,18] [--workloads gemm,transformer] [--steps N]
                      [--drains 500,1000] [--deep-engines] [--pin-local] [--free-running]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "gpu"))


def gpufl_init(g, variant, log_dir):
    """Starts a session of `variant` (trace, sassm, deep, pcs<P>, pcs<P>d<MS>)."""
    import gpufl_ctypes
    if variant == "trace":
        rc = g.init("pcs_overhead", log_dir, gpufl_ctypes.ENGINE_TRACE)
    elif variant == "sassm":
        rc = g.init("pcs_overhead", log_dir, gpufl_ctypes.ENGINE_SASS_METRICS)
    elif variant == "deep":
        rc = g.init("pcs_overhead", log_dir, gpufl_ctypes.ENGINE_DEEP)
    else:
        # pcs<P>[d<MS>][w<MS>][+<MODE>]: GetData every MS ms (GPUFL_PC_SAMPLING_DRAIN_MS),
        # CUPTI's decode every MS ms (GPUFL_PC_SAMPLING_DECODE_MS), Trace's
        # activity kept as MODE (GPUFL_PC_SAMPLING_TRACE: late, the default, none,
        # kernels, all, events, alternate; docs/design/pcs-with-trace.md)
        m = re.fullmatch(r"pcs(\d+)(?:d(\d+))?(?:w(\d+))?"
                         r"(?:\+(late|none|kernels|all|alternate|events))?", variant)
        if m is None:
            raise SystemExit(f"unknown variant {variant}")
        for env, value in (("GPUFL_PC_SAMPLING_DRAIN_MS", m.group(2)),
                           ("GPUFL_PC_SAMPLING_DECODE_MS", m.group(3)),
                           ("GPUFL_PC_SAMPLING_TRACE", m.group(4))):
            if value:
                os.environ[env] = value
            else:
                os.environ.pop(env, None)
        rc = g.init("pcs_overhead", log_dir, gpufl_ctypes.ENGINE_PC_SAMPLING,
                    pc_sampling_period=int(m.group(1)))
    if rc != 0:
        raise SystemExit(f"gpufl_init ({variant}): {g.last_error()}")


def make_workload(workload):
    """The workload's step function, warmup steps, measured steps and calls
    per step."""
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
        return step, 10, 30, 10
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
    return step, 5, 30, 1


def cpu_times():
    """The host's CPU time so far, in clock ticks: (all, stolen by the
    hypervisor), from /proc/stat; (0, 0) where it cannot be read."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        return sum(fields[:8]), fields[7] if len(fields) > 7 else 0
    except (OSError, ValueError):
        return 0, 0


def time_steps(step, steps, inner, free_running):
    """Per-step times in ms (CUDA events) and, per block, its host
    CLOCK_MONOTONIC start and end in ns. Free-running: one block, one
    synchronization at the end (the CPU runs ahead of the GPU); else each
    step (of `inner` calls) timed alone."""
    import torch
    times, mono = [], []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    blocks, per = (1, steps * inner) if free_running else (steps, inner)
    for _ in range(blocks):
        t0 = time.monotonic_ns()
        start.record()
        for _ in range(per):
            step()
        end.record()
        end.synchronize()
        mono.append((t0, time.monotonic_ns()))
        times.append(start.elapsed_time(end) / per)
    return times, mono


def child(workload, variant, log_dir, steps_wanted=0, free_running=False, timeline=False):
    t_start = time.time()
    label = variant
    g = None
    # A variant ending in "-late" starts its session after the model is
    # built and warm (a live context, as a script that imports torch first).
    late = variant.endswith("-late")
    variant = variant[:-5] if late else variant
    if variant != "untraced":
        import gpufl_ctypes
        # A variant ending in "-alt" uses the library given by --alt-library
        # (a diagnosis build, to tell gpufl's own per-launch work from CUPTI's).
        alt = variant.endswith("-alt")
        variant = variant[:-4] if alt else variant
        g = gpufl_ctypes.Gpufl(os.environ["GPUFL_ALT_LIBRARY"] if alt else None)
        if not late:
            gpufl_init(g, variant, log_dir)
    t_init = time.time()
    import torch
    step, warmup, steps, inner = make_workload(workload)
    if steps_wanted > 0:
        steps = steps_wanted
    t_warm = time.time()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    if late:
        if g is not None:
            gpufl_init(g, variant, log_dir)
        t_late = time.time()  # as --in-process: steps for 1.5 s after the start
        while time.time() - t_late < 1.5:
            step()
        torch.cuda.synchronize()
    warmup_s = time.time() - t_warm
    times, mono = time_steps(step, steps, inner, free_running)
    session = None
    t_down = time.time()
    if g is not None:
        session = g.session_dir()
        g.shutdown()
    res = {"workload": workload, "variant": label, "step_ms": times,
           "init_s": round(t_init - t_start, 3), "warmup_s": round(warmup_s, 3),
           "shutdown_s": round(time.time() - t_down, 3),
           "median_ms": statistics.median(times), "session": session,
           "device": torch.cuda.get_device_name(0)}
    if timeline:
        res["step_mono_ns"] = mono
    print(json.dumps(res))


def child_in_process(workload, variants, log_dir, rounds, steps_wanted, free_running, timeline,
                     warm_s):
    """Every variant in one process, block after block: each round runs each
    variant once (the order turned by one each round), a gpufl session
    started before its block and shut down after it; `untraced` blocks run
    with no session. The model, its memory and the process's CPUs stay the
    same for all, so what differs between blocks is the session alone. Each
    block first runs steps for warm_s seconds (a session started on a live
    context enables sampling at its first launch, and the first launches
    after are slower), then the measured steps. One JSON line per block."""
    import gpufl_ctypes
    import torch
    g = gpufl_ctypes.Gpufl(None)
    step, warmup, steps, inner = make_workload(workload)
    if steps_wanted > 0:
        steps = steps_wanted
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    device = torch.cuda.get_device_name(0)
    for r in range(rounds):
        k = r % len(variants)
        for variant in variants[k:] + variants[:k]:
            t0 = time.time()
            if variant != "untraced":
                gpufl_init(g, variant, log_dir)
            t_init = time.time()
            while time.time() - t_init < warm_s:
                step()
            torch.cuda.synchronize()
            cpu0 = cpu_times()
            times, mono = time_steps(step, steps, inner, free_running)
            cpu1 = cpu_times()
            session = None
            t_down = time.time()
            if variant != "untraced":
                session = g.session_dir()
                g.shutdown()
            res = {"workload": workload, "variant": variant, "round": r, "step_ms": times,
                   "init_s": round(t_init - t0, 3), "shutdown_s": round(time.time() - t_down, 3),
                   "median_ms": statistics.median(times), "session": session, "device": device,
                   "in_process": True,
                   # CPU time the hypervisor gave to others while the block ran
                   "steal_pct": round(100 * (cpu1[1] - cpu0[1]) / max(1, cpu1[0] - cpu0[0]), 2)}
            if timeline:
                res["step_mono_ns"] = mono
            print(json.dumps(res), flush=True)


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


GETDATA = re.compile(r"GetData at [\d.]+ ms \(mono (\d+) ns, took (\d+) ns\)")


def getdata_calls(stderr):
    """(start, end) in CLOCK_MONOTONIC ns of each GetData call that the
    library's debug output names."""
    return [(int(m.group(1)), int(m.group(1)) + int(m.group(2)))
            for m in GETDATA.finditer(stderr)]


def overlap_stats(res, calls):
    """How steps that overlap a GetData call compare with those that do not."""
    mono, ms = res.get("step_mono_ns"), res["step_ms"]
    if not mono:
        return None
    hit = [any(a < t1 and b > t0 for a, b in calls) for t0, t1 in mono]
    on = [m for m, h in zip(ms, hit) if h]
    off = [m for m, h in zip(ms, hit) if not h]
    q = statistics.quantiles(ms, n=10) if len(ms) >= 10 else [None] * 9
    inside = [(b - a) / 1e6 for a, b in calls if a < mono[-1][1] and b > mono[0][0]]
    return {"getdata_calls": len(inside),
            "getdata_ms_median": round(statistics.median(inside), 3) if inside else None,
            "steps_with_getdata": len(on),
            "median_ms_with_getdata": round(statistics.median(on), 4) if on else None,
            "median_ms_without": round(statistics.median(off), 4) if off else None,
            "p90_ms": round(q[8], 4) if q[8] else None}


def run_child(args, pin):
    """Runs this script as a child; (lines of JSON it printed, its stderr) or
    an error line."""
    p = subprocess.run([sys.executable, __file__] + args, capture_output=True, text=True,
                       preexec_fn=pin)
    out = []
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    if p.returncode != 0:
        out.append({"error": p.stderr[-2000:]})
    return out, p.stderr


def lower_quartile(run):
    ms = run["step_ms"]
    return statistics.quantiles(ms, n=4)[0] if len(ms) >= 2 else ms[0]


def summarize_in_process(runs, workloads, variants):
    """Per round, each block's median step against the untraced block of the
    same round and process; the median, and the lowest and highest, of those
    ratios."""
    out = {}
    for w in workloads:
        base = {(x["process"], x["round"]): x["median_ms"] for x in runs
                if x["workload"] == w and x["variant"] == "untraced"}
        base_q1 = {(x["process"], x["round"]): lower_quartile(x) for x in runs
                   if x["workload"] == w and x["variant"] == "untraced"}
        if not base:
            continue
        out[w] = {}
        for v in variants:
            xs = [x for x in runs if x["workload"] == w and x["variant"] == v and
                  (x["process"], x["round"]) in base]
            if not xs:
                continue
            pct = sorted(100 * (x["median_ms"] / base[(x["process"], x["round"])] - 1) for x in xs)
            # The lower quartile of a block's steps: interference from the
            # host only adds time, so this shows the cost that every step
            # pays, apart from slow phases and the steps a GetData holds up.
            pct_q1 = sorted(100 * (lower_quartile(x) / base_q1[(x["process"], x["round"])] - 1)
                            for x in xs if (x["process"], x["round"]) in base_q1)
            out[w][v] = {"median_ms": round(statistics.median(x["median_ms"] for x in xs), 4),
                         "blocks": len(xs),
                         "overhead_pct": round(statistics.median(pct), 2),
                         "overhead_pct_range": [round(pct[0], 2), round(pct[-1], 2)],
                         "overhead_pct_quartiles": [round(q, 2) for q in
                                                    statistics.quantiles(pct, n=4)]
                         if len(pct) >= 2 else None,
                         "overhead_lower_quartile_pct": round(statistics.median(pct_q1), 2)
                         if pct_q1 else None}
    return out


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
    ap.add_argument("--variants", default="",
                    help="run these variants instead (comma list: untraced, trace, sassm, deep, "
                         "pcs<P>[d<MS>][w<MS>], the last two GetData's and CUPTI's decode period)")
    ap.add_argument("--deep-engines", action="store_true",
                    help="also run the SassMetrics and Deep engines")
    ap.add_argument("--pin-local", action="store_true",
                    help="keep every run on the CPUs local to GPU 0")
    ap.add_argument("--free-running", action="store_true",
                    help="time all steps as one block with a single synchronization at the end "
                         "(a loop that never waits for the GPU), instead of each step")
    ap.add_argument("--in-process", type=int, default=0, metavar="PROCESSES",
                    help="run every variant in each of PROCESSES processes, session after "
                         "session, --rounds rounds in each (see child_in_process)")
    ap.add_argument("--warm-s", type=float, default=1.5,
                    help="--in-process: seconds of steps before each measured block")
    ap.add_argument("--timeline", action="store_true",
                    help="turn on the library's debug output and compare steps that overlap a "
                         "cuptiPCSamplingGetData call with those that do not")
    ap.add_argument("--child", nargs=3, metavar=("WORKLOAD", "VARIANT", "LOG_DIR"))
    a = ap.parse_args()
    if a.child:
        w, v, log_dir = a.child
        if v.startswith("in-process:"):
            child_in_process(w, v.split(":", 1)[1].split(","), log_dir, a.rounds, a.steps,
                             a.free_running, a.timeline, a.warm_s)
        else:
            child(w, v, log_dir, steps_wanted=a.steps, free_running=a.free_running,
                  timeline=a.timeline)
        return 0
    variants = ["untraced", "trace"] + [f"pcs{p}" for p in a.periods.split(",") if p]
    variants += [f"pcs{p}d{d}" for p in a.periods.split(",") if p
                 for d in a.drains.split(",") if d]
    if a.deep_engines:
        variants += ["sassm", "deep"]
    if a.variants:
        variants = a.variants.split(",")
    if a.alt_library:
        if a.in_process:
            raise SystemExit("--alt-library needs a process per run: not with --in-process")
        os.environ["GPUFL_ALT_LIBRARY"] = os.path.abspath(a.alt_library)
        variants += [v + "-alt" for v in variants if v != "untraced"]
    if a.timeline:
        os.environ["GPUFL_ENABLE_DEBUG_OUTPUT"] = "1"
    log_root = a.log_root or tempfile.mkdtemp(prefix="gpufl-pcs-overhead-")
    cpus, cpus_from = (gpu_local_cpus() if a.pin_local else (None, None))
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    common = ["--steps", str(a.steps)] + (["--free-running"] if a.free_running else []) + \
        (["--timeline"] if a.timeline else [])
    workloads = a.workloads.split(",")
    runs = []

    def keep(res, stderr, **extra):
        if "error" in res:
            print(json.dumps(dict(res, **extra)), flush=True)
            return
        res.update(extra)
        res["stats"] = session_stats(res.get("session"))
        if a.timeline:
            res["getdata"] = overlap_stats(res, getdata_calls(stderr))
            res.pop("step_mono_ns", None)
        runs.append(res)
        print(json.dumps(res), flush=True)

    if a.in_process:
        for proc in range(a.in_process):
            for w in workloads:
                t0 = time.time()
                out, err = run_child(["--child", w, "in-process:" + ",".join(variants), log_root,
                                      "--rounds", str(a.rounds), "--warm-s", str(a.warm_s)] +
                                     common, pin)
                for res in out:
                    keep(res, err, process=proc, workload=w, wall_s=round(time.time() - t0, 1))
    else:
        for r in range(a.rounds):
            for w in workloads:
                for v in variants:
                    t0 = time.time()
                    out, err = run_child(["--child", w, v, log_root] + common, pin)
                    for res in out:
                        keep(res, err, round=r, workload=w, variant=v,
                             wall_s=round(time.time() - t0, 1), stderr_tail=err[-600:])
    summary = {"device": runs[0]["device"] if runs else None, "rounds": a.rounds,
               "timing": "free-running block" if a.free_running else "each step synchronized",
               "in_process": a.in_process, "cpus": cpus, "cpus_from": cpus_from,
               "workloads": {}}
    if a.in_process:
        summary["workloads"] = summarize_in_process(runs, workloads, variants)
    for w in workloads if not a.in_process else []:
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
            if a.in_process:
                f.write("| workload | variant | blocks | median step (ms) | overhead (median of "
                        "per-round ratios) | quartiles | range | overhead of the lower quartile "
                        "step |\n|---|---|---|---|---|---|---|---|\n")
                for w, vs in summary["workloads"].items():
                    for v, s in vs.items():
                        q = s["overhead_pct_quartiles"] or [s["overhead_pct"]] * 3
                        f.write(f"| {w} | {v} | {s['blocks']} | {s['median_ms']} | "
                                f"{s['overhead_pct']:+.2f} % | {q[0]:+.2f} .. {q[2]:+.2f} % | "
                                f"{s['overhead_pct_range'][0]:+.2f} .. "
                                f"{s['overhead_pct_range'][1]:+.2f} % | "
                                f"{s['overhead_lower_quartile_pct']:+.2f} % |\n")
            else:
                f.write("| workload | variant | median step (ms) | runs (ms) | overhead |\n")
                f.write("|---|---|---|---|---|\n")
                for w, vs in summary["workloads"].items():
                    for v, s in vs.items():
                        f.write(f"| {w} | {v} | {s['median_ms']} | "
                                f"{', '.join(map(str, s['runs_ms']))} | "
                                f"{s['overhead_pct']:+.2f} % |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
