#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The gpufl Python package with PyTorch on the GPU machine: Python lines in
sync stacks, aten operations on kernels (gpufl.torch), both import orders,
and their cost. tests/gpu/run_torch_checks.sh runs the whole set.

Subcommands (each workload in its own process: one CUPTI client per process):
  run DIR [--order gpufl-first|torch-first] [--no-stacks] [--no-ops] [--steps N]
      A training loop of a small transformer with torch.cuda.synchronize()
      inside the loop, under gpufl's Trace engine (enable_stack_trace and
      gpufl.torch unless turned off); the session goes under DIR.
  profile DIR [--steps N]
      The same loop under torch.profiler; its chrome trace goes to DIR.
  check DIR [--against-profiler] [--no-ops]
      Reads the session of `run` with gpufl.analyzer and checks: the in-loop
      sync insight names this file and the synchronize line; every sync's site
      is that line; kernels carry aten operations. With --against-profiler,
      each kernel's operation is compared with the operation torch.profiler
      puts it under (itself or an enclosing operation of it). Prints a JSON
      summary; exits 1 when a check fails.
  time VARIANT [--steps N] [--engine NAME]
      Milliseconds per training step (no sync in the loop) under VARIANT:
      none, trace, stacks (trace + enable_stack_trace, tagging disabled:
      syncs carry their line, launches not), ops (trace +
      gpufl.torch), both; --engine runs another engine than Trace (Deep:
      the repeated runs of run_torch_checks.sh --deep-runs). Prints one
      JSON line.
  reinit DIR [--sessions N] [--steps N] [--engine NAME]
      N sessions one after another in one process (init, steps, shutdown),
      PcSampling by default: CUPTI hands a later session the function-name
      strings of the first, so each session must still name its functions.
      Checks every session's pc_sample rows and prints a JSON summary; exits
      1 when a check fails.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.abspath(__file__)
PREFIX = "torch_check"
# gpufl_log.h: GPUFL_SYNC_TYPE_DEVICE, what the read API gives for a device
# (context) synchronization, in every log version.
SYNC_TYPE_DEVICE = 1


def sync_line():
    """The line of train_step holding torch.cuda.synchronize()."""
    with open(HERE, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith("# in-loop sync"):
                return number
    raise AssertionError("no in-loop sync line")


def build(torch, seed=7):
    nn = torch.nn
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, dropout=0.0)
    model = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(32, 256, 512, device="cuda")
    return model, opt, x


def train_step(torch, model, opt, x, sync):
    opt.zero_grad(set_to_none=True)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    if sync:
        torch.cuda.synchronize()  # in-loop sync


def do_run(args):
    if args.order == "gpufl-first":
        import gpufl
        import gpufl.torch as gt
        import torch
    else:
        import torch
        import gpufl
        import gpufl.torch as gt
    os.makedirs(args.dir, exist_ok=True)
    assert gpufl.init(app_name=PREFIX, log_path=os.path.join(args.dir, PREFIX + ".log"),
                      profiling_engine=gpufl.ProfilingEngine.Trace,
                      enable_stack_trace=not args.no_stacks, enable_synchronization=True)
    # With CPU stacks on, init() enables tagging itself when torch is loaded.
    assert gt.enabled() == (not args.no_stacks), gt.enabled()
    if args.no_ops:
        gt.disable()
    else:
        gt.enable()
    model, opt, x = build(torch)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        train_step(torch, model, opt, x, sync=True)
    elapsed = time.perf_counter() - t0
    gpufl.shutdown()
    print(json.dumps({"order": args.order, "steps": args.steps,
                      "ms_per_step": 1e3 * elapsed / args.steps}))


def do_profile(args):
    import torch
    os.makedirs(args.dir, exist_ok=True)
    model, opt, x = build(torch)
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                              torch.profiler.ProfilerActivity.CUDA])
    prof.start()
    for _ in range(args.steps):
        train_step(torch, model, opt, x, sync=True)
    prof.stop()
    prof.export_chrome_trace(os.path.join(args.dir, "torch_trace.json"))


def profiler_kernel_ops(path):
    """[(kernel name, start us, [innermost op, enclosing ops...])] in start order,
    from torch.profiler's chrome trace: a kernel's op is the cpu_op with its
    External id; enclosing ops are the cpu_ops of that thread around it."""
    with open(path, encoding="utf-8", errors="replace") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    ops, kernels = [], []
    for e in events:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") != "X":
            continue
        if cat == "cpu_op":
            ops.append(e)
        elif cat == "kernel":
            kernels.append(e)
    by_ext = {}
    for o in ops:
        ext = o.get("args", {}).get("External id")
        if ext is not None:
            by_ext.setdefault(ext, o)
    by_tid = {}
    for o in ops:
        by_tid.setdefault(o.get("tid"), []).append(o)
    out = []
    for k in sorted(kernels, key=lambda e: float(e["ts"])):
        op = by_ext.get(k.get("args", {}).get("External id"))
        chain = []
        if op is not None:
            t0, t1 = float(op["ts"]), float(op["ts"]) + float(op["dur"])
            around = [o for o in by_tid[op.get("tid")]
                      if float(o["ts"]) <= t0 and float(o["ts"]) + float(o["dur"]) >= t1]
            around.sort(key=lambda o: float(o["dur"]))  # innermost first
            chain = [op["name"]] + [o["name"] for o in around if o is not op]
        out.append((k["name"], float(k["ts"]), chain))
    return out


def do_check(args):
    from gpufl.analyzer import GpuFlightSession
    session = GpuFlightSession(args.dir, log_prefix=PREFIX)
    line = sync_line()
    result = {"sync_line": line, "file": HERE, "checks": {}}
    checks = result["checks"]

    insights = session.insights
    in_loop = insights[insights["title"].str.startswith("In-loop sync")]
    result["in_loop_titles"] = list(in_loop["title"])
    checks["in_loop_sync_names_the_line"] = bool(
        len(in_loop) == 1 and in_loop.iloc[0]["file"] == HERE and
        int(in_loop.iloc[0]["line"]) == line)
    syncs = session.syncs
    sites = syncs.groupby(["site_file", "site_line", "site_function"], dropna=False).size()
    result["sync_sites"] = [[str(f), int(l), str(fn), int(n)] for (f, l, fn), n in sites.items()]
    # The loop's torch.cuda.synchronize() calls (device syncs: the read API
    # gives gpufl's values, gpufl_log.h); the copies that build() makes
    # synchronize streams at their own line.
    context = syncs[syncs["sync_type"] == SYNC_TYPE_DEVICE]
    result["context_syncs"] = int(len(context))
    checks["every_device_sync_at_the_line"] = bool(
        len(context) > 0 and (context["site_line"] == line).all() and
        (context["site_file"] == HERE).all())

    kernels = session.kernels
    tagged = kernels["op"].notna()
    result["kernels"] = int(len(kernels))
    result["kernels_tagged"] = int(tagged.sum())
    result["top_ops"] = kernels[tagged].groupby("op")["duration_ns"].agg(["count", "sum"]) \
        .sort_values("sum", ascending=False).head(12).reset_index().values.tolist()
    result["distinct_call_ids"] = int(kernels.loc[tagged, "external_id"].nunique())
    if args.no_ops:  # gpufl.torch not enabled: syncs still carry their line, kernels no op
        checks["kernels_untagged"] = bool(len(kernels) > 0 and tagged.sum() == 0)
    else:
        checks["kernels_tagged"] = bool(len(kernels) > 0 and tagged.mean() >= 0.95)
    stats = {}
    for root, _, files in os.walk(args.dir):
        if "device.log" in files:
            with open(os.path.join(root, "device.log"), encoding="utf-8") as f:
                for rec in map(json.loads, f):
                    if rec["type"] == "trace_stats":
                        stats = rec
    result["trace_stats"] = {k: stats.get(k) for k in
                             ("kernels", "syncs", "stacks", "stacks_interp", "stacks_interp_empty",
                              "stacks_interp_ns", "stacks_interp_max_ns", "ops",
                              "op_pops_mismatched", "cupti_dropped")}

    if args.against_profiler:
        ours = kernels.sort_values("start_ns")[["name", "op"]].values.tolist()
        theirs = profiler_kernel_ops(os.path.join(args.dir, "torch_trace.json"))
        # Match the n-th kernel of a name in one with the n-th of that name in the other.
        seen, index = {}, {}
        for i, (name, _, chain) in enumerate(theirs):
            n = seen.get(name, 0)
            seen[name] = n + 1
            index[(name, n)] = chain
        # same: torch.profiler's innermost operation; enclosing: an operation
        # around it (the one the program called, whose implementation called
        # the innermost); variant: the in-place and out-of-place forms of one
        # operation (aten::add against aten::add_).
        counts = dict(matched=0, same=0, enclosing=0, variant=0, untagged=0, different=0)
        pairs = {}
        seen = {}
        for name, op in ours:
            n = seen.get(name, 0)
            seen[name] = n + 1
            chain = index.get((name, n))
            if chain is None:
                continue
            counts["matched"] += 1
            base = [c.rstrip("_") for c in chain]
            kind = ("untagged" if op is None else "same" if chain and op == chain[0] else
                    "enclosing" if op in chain else
                    "variant" if op.rstrip("_") in base else "different")
            counts[kind] += 1
            if kind != "same":
                key = (kind, op, chain[0] if chain else None)
                pairs[key] = pairs.get(key, 0) + 1
        top = sorted(pairs.items(), key=lambda kv: -kv[1])[:15]
        result["against_profiler"] = dict(ours=len(ours), profiler=len(theirs), **counts,
                                          pairs=[[k[0], k[1], k[2], n] for k, n in top])
        agree = counts["same"] + counts["enclosing"] + counts["variant"]
        checks["ops_agree_with_profiler"] = bool(
            counts["matched"] >= 0.95 * len(ours) and agree >= 0.99 * counts["matched"])
    result["passed"] = all(checks.values())
    print(json.dumps(result, indent=1, default=str))
    return 0 if result["passed"] else 1


def do_time(args):
    import torch
    gpufl = gt = None
    if args.variant != "none":
        import gpufl
        import gpufl.torch as gt
        assert gpufl.init(app_name="torch_time", log_path=os.path.join(args.dir, "time.log"),
                          profiling_engine=getattr(gpufl.ProfilingEngine, args.engine),
                          enable_stack_trace=args.variant in ("stacks", "both"))
        if args.variant in ("ops", "both"):
            gt.enable()
        else:  # stacks alone: no tagging (init enables it with stacks)
            gt.disable()
    model, opt, x = build(torch)
    for _ in range(5):
        train_step(torch, model, opt, x, sync=False)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        train_step(torch, model, opt, x, sync=False)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    print("time: %d steps done in %.1f s" % (args.steps, elapsed), file=sys.stderr, flush=True)
    if gpufl is not None:
        gpufl.shutdown()
    print(json.dumps({"variant": args.variant, "engine": args.engine, "steps": args.steps,
                      "ms_per_step": 1e3 * elapsed / args.steps}))


def do_reinit(args):
    import torch
    import gpufl
    sys.path.insert(0, os.path.dirname(HERE))
    from gpufl_log import Session
    model, opt, x = build(torch)
    dirs = []
    engines = args.engine.split(",")  # session k runs engines[k % len(engines)]
    for k in range(args.sessions):
        d = os.path.join(args.dir, "s%d" % k)
        dirs.append(d)
        engine = engines[k % len(engines)]
        print("reinit: session %d under %s" % (k, engine), file=sys.stderr, flush=True)
        assert gpufl.init(app_name="torch_reinit", log_path=os.path.join(d, "reinit.log"),
                          profiling_engine=getattr(gpufl.ProfilingEngine, engine))
        for _ in range(args.steps):
            train_step(torch, model, opt, x, sync=False)
        torch.cuda.synchronize()
        gpufl.shutdown()
    # What each engine writes: PC samples (weighted by samples) and SASS
    # metric rows (weighted by warp instructions).
    kinds = {"PcSampling": [("pc_sample", "samples", "pc_sampling_stats")],
             "SassMetrics": [("sass_metric", "inst", "sass_metrics_stats")]}
    kinds["Deep"] = kinds["PcSampling"] + kinds["SassMetrics"]
    sessions, checks = [], {}
    for k, d in enumerate(dirs):
        found = [root for root, _, files in os.walk(d) if "device.log" in files]
        s = Session(found[0]) if found else None
        # What ran: an engine may run as a lower one and say why.
        caps = (s.capabilities() or {}) if s else {}
        ran = caps.get("engine")
        entry = {"dir": found[0] if found else None, "asked": engines[k % len(engines)],
                 "ran": ran}
        if ran != entry["asked"]:
            entry["why"] = {f: v.get("why") for f, v in caps.get("features", {}).items()
                            if isinstance(v, dict) and not v.get("on") and f in
                            ("pc_sampling", "sass_metrics")}
        for row_type, weight, stats_type in kinds.get(ran, []):
            rows = s.rows.get(row_type, []) if s else []
            per = {}
            for r in rows:
                name = r.get("function_str") or ""
                per[name] = per.get(name, 0) + (r.get(weight) or 0)
            stats = (s.records.get(stats_type) or [{}])[-1] if s else {}
            entry[row_type] = {
                "rows": len(rows), "functions": len(per), "errors": stats.get("errors"),
                "samples": stats.get("samples"), "recorded": stats.get("recorded"),
                "configs_reused": stats.get("configs_reused"),
                "bad_names": [n for n in per if not n or not n.isprintable()][:5],
                "top": sorted(per, key=lambda n: -per[n])[:5]}
        sessions.append(entry)
    parts = [(x, k) for x in sessions for k in x if k in ("pc_sample", "sass_metric")]
    checks["every_session_recorded"] = bool(parts) and all(x[k]["rows"] > 0 for x, k in parts)
    checks["no_engine_errors"] = all(not x[k]["errors"] for x, k in parts)
    checks["every_name_readable"] = all(not x[k]["bad_names"] for x, k in parts)
    # The same loop: its five heaviest functions are the same in each session.
    first = {}
    for x, k in parts:
        first.setdefault(k, set(x[k]["top"]))
    checks["same_functions_named"] = all(set(x[k]["top"]) == first[k] for x, k in parts)
    result = {"engine": args.engine, "steps": args.steps, "sessions": sessions,
              "checks": checks, "passed": all(checks.values())}
    print(json.dumps(result, indent=1))
    return 0 if result["passed"] else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="the loop under Trace, stacks and gpufl.torch")
    r.add_argument("dir")
    r.add_argument("--order", choices=["gpufl-first", "torch-first"], default="gpufl-first")
    r.add_argument("--no-stacks", action="store_true")
    r.add_argument("--no-ops", action="store_true")
    r.add_argument("--steps", type=int, default=20)
    p = sub.add_parser("profile", help="the loop under torch.profiler")
    p.add_argument("dir")
    p.add_argument("--steps", type=int, default=20)
    c = sub.add_parser("check", help="check the session of run")
    c.add_argument("dir")
    c.add_argument("--against-profiler", action="store_true")
    c.add_argument("--no-ops", action="store_true", help="the run was made with --no-ops")
    t = sub.add_parser("time", help="ms per step of a variant")
    t.add_argument("variant", choices=["none", "trace", "stacks", "ops", "both"])
    t.add_argument("--dir", default="/tmp/gpufl_torch_time")
    t.add_argument("--steps", type=int, default=30)
    t.add_argument("--engine", default="Trace")
    i = sub.add_parser("reinit", help="sessions one after another in one process")
    i.add_argument("dir")
    i.add_argument("--sessions", type=int, default=3)
    i.add_argument("--steps", type=int, default=200)
    i.add_argument("--engine", default="PcSampling",
                   help="the engine, or a comma list that the sessions take in turn")
    args = ap.parse_args()
    return {"run": do_run, "profile": do_profile, "check": do_check,
            "time": do_time, "reinit": do_reinit}[args.cmd](args) or 0


if __name__ == "__main__":
    sys.exit(main())
