#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks gpufl's Trace engine against torch.profiler on a PyTorch workload.

Default mode (the comparison): the deterministic training workload of
torch_workload.py runs in separate processes, alternating: A under
torch.profiler (CUDA activity, Kineto's CUPTI client), B with gpufl's Trace
engine loaded through ctypes (libgpufl.so; the Python package does not exist
yet). Both skip the same warmup iterations: A by starting the profiler after
them, B by keeping only the kernels inside a gpufl scope around the measured
iterations. Then:
  - the multiset of kernel names of the measured iterations must be equal
    (gpufl's demangled names against Kineto's), and so the count;
  - per kernel name the GPU time per run (the sum of its durations) must agree
    within --tolerance-pct (default 2%) for every name whose median is at least
    --min-us (20 us); shorter ones are shown, not judged. Medians are shown
    beside the totals (a name that covers launches of different shapes has a
    median that jumps between them),
    and with two or more torch runs the torch-against-torch difference shows
    the run-to-run noise of each name.

--coexist mode: both CUPTI clients in one process, in both orders.
  torch first: torch.profiler runs, then gpufl_init asks for Trace. gpufl must
    not crash, the workload must run, the process must exit 0, and gpufl must
    refuse Trace and say why in its capability record (printed).
  gpufl first: gpufl Trace runs, then torch.profiler starts and stops in the
    middle. Reported: what each recorded before, during and after, and what
    either printed; the process must exit 0 and the workload must finish.

Exit 0 when everything passes, 1 on a failed check, 2 when a run could not be
made. Needs PyTorch with CUDA on the GPU machine; the parent process itself
imports no torch. Python 3 standard library otherwise.
"""
import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpufl_ctypes  # noqa: E402
import gpufl_log  # noqa: E402

# ---------------------------------------------------------------------------
# Children: each scenario runs in a process of its own and writes its result
# as JSON (OUT/<tag>.json).
# ---------------------------------------------------------------------------


def torch_kernels(trace_path):
    """(name, duration ns) of every kernel event in a torch.profiler chrome trace."""
    with open(trace_path, encoding="utf-8", errors="replace") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    out = []
    for e in events:
        if str(e.get("cat", "")).lower() == "kernel" and e.get("ph", "X") == "X":
            out.append((e["name"], int(round(float(e["dur"]) * 1000))))
    return out


def start_profiler():
    import torch
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
    prof.start()
    return prof


def stop_profiler(prof, path):
    prof.stop()
    prof.export_chrome_trace(path)
    return torch_kernels(path)


def child_main(args):
    result = {"tag": args.tag, "done": False}
    res_path = os.path.join(args.out, args.tag + ".json")
    try:
        import torch
        import torch_workload

        result["torch"] = torch.__version__
        if args.child == "torch":
            wl = torch_workload.Workload()
            result["device"] = torch_workload.device_name()
            wl.run(args.warmup)
            prof = start_profiler()
            wl.run(args.iters)
            trace = os.path.join(args.out, args.tag + ".trace.json")
            result["kernels"] = stop_profiler(prof, trace)

        elif args.child == "gpufl":
            g = gpufl_ctypes.Gpufl(args.lib)
            result["library"] = g.path
            rc = g.init("compare_torch", os.path.join(args.out, "gpufl_logs"))  # before CUDA
            result["init_rc"], result["init_error"] = rc, g.last_error() if rc else ""
            wl = torch_workload.Workload()
            result["device"] = torch_workload.device_name()
            wl.run(args.warmup)
            h = g.scope_begin("measured")
            wl.run(args.iters)
            g.scope_end(h)
            result["session_dir"] = g.session_dir()
            g.shutdown()

        elif args.child == "coexist-torch-first":
            wl = torch_workload.Workload()
            wl.run(args.warmup)
            prof = start_profiler()
            wl.run(2)
            g = gpufl_ctypes.Gpufl(args.lib)
            rc = g.init("compare_torch_coexist", os.path.join(args.out, "coexist_logs"))
            result["init_rc"], result["init_error"] = rc, g.last_error() if rc else ""
            h = g.scope_begin("with_profiler")
            wl.run(args.iters)
            g.scope_end(h)
            k = stop_profiler(prof, os.path.join(args.out, args.tag + ".trace.json"))
            result["torch_kernel_events"] = len(k)
            result["torch_iterations"] = 2 + args.iters
            result["session_dir"] = g.session_dir()
            g.shutdown()

        elif args.child == "coexist-gpufl-first":
            g = gpufl_ctypes.Gpufl(args.lib)
            rc = g.init("compare_torch_coexist", os.path.join(args.out, "coexist_logs"))
            result["init_rc"], result["init_error"] = rc, g.last_error() if rc else ""
            wl = torch_workload.Workload()
            wl.run(args.warmup)
            for phase in ("before_profiler", "with_profiler", "after_profiler"):
                if phase == "with_profiler":
                    prof = start_profiler()
                h = g.scope_begin(phase)
                wl.run(args.iters)
                g.scope_end(h)
                if phase == "with_profiler":
                    k = stop_profiler(prof, os.path.join(args.out, args.tag + ".trace.json"))
                    result["torch_kernel_events"] = len(k)
                    result["torch_iterations"] = args.iters
            result["session_dir"] = g.session_dir()
            g.shutdown()
        result["done"] = True
    except Exception:
        result["error"] = traceback.format_exc()
        print(result["error"], file=sys.stderr)
    with open(res_path, "w") as f:
        json.dump(result, f)
    print(f"child {args.tag}: done={result['done']}", flush=True)
    return 0 if result["done"] else 3


# ---------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------


def run_child(args, child, tag, iters):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", child, "--tag", tag,
           "--out", args.out, "--iters", str(iters), "--warmup", str(args.warmup)]
    if args.lib:
        cmd += ["--lib", args.lib]
    print(f"--- {tag}: {' '.join(cmd[2:])}", flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=args.timeout)
        rc, text = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        rc, text = "timeout", (e.stdout or b"").decode(errors="replace") \
            if isinstance(e.stdout, bytes) else (e.stdout or "")
    with open(os.path.join(args.out, tag + ".out.txt"), "w") as f:
        f.write(text)
    res_path = os.path.join(args.out, tag + ".json")
    result = None
    if os.path.exists(res_path):
        with open(res_path) as f:
            result = json.load(f)
    return rc, result, text


def demangler():
    """A function mapping mangled names to demangled ones through c++filt, or None."""
    tool = shutil.which("c++filt") or shutil.which("cu++filt")
    if not tool:
        return None

    def demangle(names):
        names = list(names)
        p = subprocess.run([tool], input="\n".join(names) + "\n", stdout=subprocess.PIPE,
                           text=True, timeout=60)
        return dict(zip(names, p.stdout.splitlines()))

    return demangle


def gpufl_measured_kernels(session, scope_name, notes):
    """(name, duration ns) of the kernels that ran inside the named scope, and
    the count of those outside it."""
    scope = session.scope_named(scope_name)
    if scope["end_ns"] is None:
        raise gpufl_log.LogError(f"scope {scope_name} never closed")
    rows = session.kernels()
    inside = [r for r in rows
              if r["start_ns"] >= scope["begin_ns"] and r["end_ns"] <= scope["end_ns"]]
    if rows and "demangled_str" not in rows[0]:
        dm = demangler()
        if dm:
            table = dm({r["name_str"] for r in inside})
            for r in inside:
                r["demangled_str"] = table.get(r["name_str"], r["name_str"])
            notes.append("the kernel rows have no demangled column: names demangled with c++filt")
        else:
            notes.append("the kernel rows have no demangled column and no c++filt: mangled names")
    return [(gpufl_log.kernel_name(r), r["end_ns"] - r["start_ns"]) for r in inside], \
        len(rows) - len(inside)


def scope_attribution(session, scope_name):
    """How the kernels inside the scope's time window are attributed (the
    `scope` column): to the scope, to none (launched by a thread without an
    open scope, such as autograd's backward thread), or elsewhere."""
    scope = session.scope_named(scope_name)
    inside = [r for r in session.kernels()
              if r["start_ns"] >= scope["begin_ns"] and r["end_ns"] <= scope["end_ns"]]
    if not inside or "scope" not in inside[0]:
        return "scope attribution: the kernel rows have no scope column"
    c = collections.Counter("this" if r["scope"] == scope["id"] else
                            "none" if r["scope"] is None else "other" for r in inside)
    return (f"scope attribution in the measured window: {c['this']} to '{scope_name}', "
            f"{c['none']} to no scope (other threads, e.g. autograd), {c['other']} elsewhere")


def pct(a, b):
    return None if not b else 100.0 * (a - b) / b


def fmt_pct(v):
    return "-" if v is None else f"{v:+.2f}%"


def compare(args):
    failures, notes = [], []

    def fail(msg):
        failures.append(msg)
        print("FAIL  " + msg, flush=True)

    torch_runs, gpufl_runs = [], []
    for i in range(args.pairs):
        rc, res, text = run_child(args, "torch", f"torch_{i + 1}", args.iters)
        if rc != 0 or not res or not res.get("done"):
            print(text[-3000:])
            fail(f"torch run {i + 1} failed (exit {rc}); see {args.out}/torch_{i + 1}.out.txt")
            return 2
        torch_runs.append(res["kernels"])
        print(f"INFO  torch run {i + 1}: {len(res['kernels'])} kernel events, torch "
              f"{res.get('torch')}, {res.get('device')}")

        rc, res, text = run_child(args, "gpufl", f"gpufl_{i + 1}", args.iters)
        if rc != 0 or not res or not res.get("done"):
            print(text[-3000:])
            fail(f"gpufl run {i + 1} failed (exit {rc}); see {args.out}/gpufl_{i + 1}.out.txt")
            return 2
        if res.get("init_rc"):
            fail(f"gpufl_init returned {res['init_rc']}: {res.get('init_error')}")
            return 2
        session = gpufl_log.Session(res["session_dir"])
        engine, on, why = session.trace_state()
        if not on:
            fail(f"gpufl run {i + 1}: Trace not running (engine {engine}): {why}")
            return 1
        drops = session.events("cupti_records_dropped")
        if drops:
            fail(f"gpufl run {i + 1}: CUPTI dropped records: {drops[-1].get('message')}")
        stats = session.records.get("trace_stats", [{}])[-1]
        if stats.get("cupti_dropped") or stats.get("buffers_refused"):
            fail(f"gpufl run {i + 1}: trace_stats says cupti_dropped {stats.get('cupti_dropped')}"
                 f", buffers_refused {stats.get('buffers_refused')}")
        kernels, outside = gpufl_measured_kernels(session, "measured", notes)
        gpufl_runs.append(kernels)
        print(f"INFO  gpufl run {i + 1}: {len(kernels)} kernel rows in the measured scope, "
              f"{outside} outside it (warmup); session {res['session_dir']}")
        print("INFO  " + scope_attribution(session, "measured"))

    # Names: the measured iterations of each side must hold the same kernels.
    t_counts = [collections.Counter(n for n, _ in run) for run in torch_runs]
    g_counts = [collections.Counter(n for n, _ in run) for run in gpufl_runs]
    for side, counts in (("torch", t_counts), ("gpufl", g_counts)):
        for i in range(1, len(counts)):
            if counts[i] != counts[0]:
                fail(f"{side} run {i + 1} launched other kernels than {side} run 1: the "
                     f"workload is not deterministic")
    for i, (tc, gc) in enumerate(zip(t_counts, g_counts)):
        total_t, total_g = sum(tc.values()), sum(gc.values())
        print(f"INFO  pair {i + 1}: torch {total_t} kernels, gpufl {total_g} kernels, "
              f"{len(tc)} and {len(gc)} distinct names")
        if total_t != total_g:
            fail(f"pair {i + 1}: kernel count torch {total_t} != gpufl {total_g}")
        if tc != gc:
            only_t = tc - gc
            only_g = gc - tc
            fail(f"pair {i + 1}: the kernel names differ ({sum(only_t.values())} kernels only "
                 f"in torch, {sum(only_g.values())} only in gpufl)")
            squash = lambda s: "".join(s.split())  # noqa: E731
            by_squash = {squash(n): n for n in only_g}
            for n, c in sorted(only_t.items()):
                twin = by_squash.get(squash(n))
                extra = f"  (gpufl spells it: {twin})" if twin else ""
                print(f"        only torch x{c}: {n}{extra}")
            for n, c in sorted(only_g.items()):
                print(f"        only gpufl x{c}: {n}")

    # Durations per name, pooled over runs.
    t_dur, g_dur = collections.defaultdict(list), collections.defaultdict(list)
    for run in torch_runs:
        for n, d in run:
            t_dur[n].append(d)
    for run in gpufl_runs:
        for n, d in run:
            g_dur[n].append(d)
    noise = {}
    if len(torch_runs) >= 2:
        a = collections.defaultdict(list)
        b = collections.defaultdict(list)
        for n, d in torch_runs[0]:
            a[n].append(d)
        for n, d in torch_runs[1]:
            b[n].append(d)
        for n in a:
            if n in b:
                noise[n] = pct(statistics.median(b[n]), statistics.median(a[n]))
    rows = []
    for n in sorted(set(t_dur) & set(g_dur), key=lambda n: -sum(t_dur[n])):
        tm, gm = statistics.median(t_dur[n]), statistics.median(g_dur[n])
        tt, gt = sum(t_dur[n]) / len(torch_runs), sum(g_dur[n]) / len(gpufl_runs)
        judged = tm >= args.min_us * 1000
        d_med = pct(gm, tm)
        # Judged on the GPU time per name (per run): one name may stand for
        # launches of different shapes, whose median jumps between them.
        ok = not judged or abs(pct(gt, tt)) <= args.tolerance_pct
        rows.append((n, len(t_dur[n]), len(g_dur[n]), tm, gm, d_med, tt, gt, pct(gt, tt),
                     noise.get(n), judged, ok))
    lines = [f"{'calls t/g':>11} {'torch med us':>12} {'gpufl med us':>12} {'diff':>8} "
             f"{'torch tot us':>12} {'gpufl tot us':>12} {'diff':>8} {'t-t noise':>9}  "
             f"{'result':<8} kernel"]
    for n, ct, cg, tm, gm, dm, tt, gt, dt, nz, judged, ok in rows:
        verdict = ("ok" if ok else "MISMATCH") if judged else "short"
        lines.append(f"{ct:>5}/{cg:<5} {tm / 1e3:>12.2f} {gm / 1e3:>12.2f} {fmt_pct(dm):>8} "
                     f"{tt / 1e3:>12.1f} {gt / 1e3:>12.1f} {fmt_pct(dt):>8} {fmt_pct(nz):>9}  "
                     f"{verdict:<8} {n if args.full_names else n[:110]}")
        if judged and not ok:
            failures.append(f"{n[:80]}: total {tt / 1e3:.1f} us (torch) vs {gt / 1e3:.1f} us "
                            f"(gpufl), {dt:+.2f}%")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "durations.txt"), "w") as f:
        f.write(text + "\n")

    judged = [r for r in rows if r[10]]
    all_t = sum(d for run in torch_runs for _, d in run) / len(torch_runs)
    all_g = sum(d for run in gpufl_runs for _, d in run) / len(gpufl_runs)
    t_judged = sum(r[6] for r in judged)
    print(f"\nINFO  all kernels per run: torch {all_t / 1e3:.1f} us, gpufl {all_g / 1e3:.1f} us "
          f"({fmt_pct(pct(all_g, all_t))})")
    print(f"INFO  {len(judged)} of {len(rows)} names judged (median >= {args.min_us} us): "
          f"{100.0 * t_judged / all_t if all_t else 0:.1f}% of the GPU time, "
          f"{sum(r[1] for r in judged)} of {sum(r[1] for r in rows)} kernel calls")
    if judged:
        worst = max(judged, key=lambda r: abs(r[8]))
        print(f"INFO  worst judged: {fmt_pct(worst[8])} total ({fmt_pct(worst[5])} median) "
              f"for {worst[0][:100]}")
    else:
        fail("no kernel name has a median of at least the --min-us duration: nothing judged")
    if rows:
        worst_all = max(rows, key=lambda r: abs(r[5]))
        print(f"INFO  worst of all names: {fmt_pct(worst_all[5])} median for {worst_all[0][:100]}")
    for n in dict.fromkeys(notes):
        print("NOTE  " + n)
    print(f"\n{len(failures)} problems")
    for f in failures:
        print("  - " + f)
    print("RESULT " + ("PASS" if not failures else "FAIL") + " compare_torch")
    return 1 if failures else 0


def phase_count(session, phase):
    try:
        s = session.scope_named(phase)
    except gpufl_log.LogError:
        return None
    end = s["end_ns"] if s["end_ns"] is not None else float("inf")
    return sum(1 for r in session.kernels()
               if r["start_ns"] >= s["begin_ns"] and r["end_ns"] <= end)


def interesting_output(text):
    keys = ("cupti", "kineto", "profil", "gpufl", "warn", "error", "segmentation", "abort")
    return [ln for ln in text.splitlines() if any(k in ln.lower() for k in keys)][:25]


def coexist(args):
    failures, warnings = [], []

    def warn(msg):
        warnings.append(msg)
        print("WARN  " + msg, flush=True)

    def verdict(name, ok, detail):
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)
        if not ok:
            failures.append(name)

    # Kernels per iteration, for the expectations: from a plain torch run.
    rc, res, text = run_child(args, "torch", "coexist_reference", args.iters)
    per_iter = len(res["kernels"]) / args.iters if rc == 0 and res and res.get("done") else None
    if per_iter:
        print(f"INFO  reference: {per_iter} kernels per iteration")
    else:
        warn(f"reference torch run failed (exit {rc}): no expected counts")

    for child in ("coexist-torch-first", "coexist-gpufl-first"):
        print(f"\n=== {child} ===")
        rc, res, text = run_child(args, child, child, args.iters)
        verdict(f"{child}: process exit code", rc == 0, f"{rc}")
        for ln in interesting_output(text):
            print("  | " + ln)
        if not res:
            verdict(f"{child}: result", False, "the child wrote no result (crashed?)")
            continue
        err = (res.get("error") or "?").strip().splitlines() or ["?"]
        verdict(f"{child}: workload ran", bool(res.get("done")),
                "finished" if res.get("done") else err[-1])
        verdict(f"{child}: gpufl_init", res.get("init_rc") == 0,
                f"returned {res.get('init_rc')} {res.get('init_error', '')}")
        session = None
        if res.get("session_dir"):
            try:
                session = gpufl_log.Session(res["session_dir"])
            except gpufl_log.LogError as e:
                verdict(f"{child}: gpufl log", False, str(e))
        if session is None:
            verdict(f"{child}: gpufl log", False, "no session directory")
            continue
        engine, on, why = session.trace_state()
        print(f"INFO  gpufl capability record: engine {engine}, cupti_trace "
              f"{'on' if on else 'off'}{': ' + why if why else ''}")
        for e in session.events():
            if e.get("level") in ("warn", "error"):
                print(f"INFO  gpufl event {e.get('code')}: {e.get('message')}")
        t_events = res.get("torch_kernel_events")
        t_expect = per_iter * res.get("torch_iterations", 0) if per_iter else None
        print(f"INFO  torch.profiler recorded {t_events} kernel events"
              + (f" (a plain run has {t_expect:.0f} for these iterations)" if t_expect else ""))
        if child == "coexist-torch-first":
            verdict(f"{child}: gpufl refused Trace and said why", not on and bool(why),
                    f"why: {why}" if not on else
                    f"gpufl runs Trace beside torch.profiler "
                    f"({phase_count(session, 'with_profiler')} kernel rows)")
            if t_expect and t_events is not None and t_events < t_expect:
                warn(f"torch.profiler lost kernel events after gpufl_init: {t_events} of "
                      f"{t_expect:.0f}")
        else:
            for phase in ("before_profiler", "with_profiler", "after_profiler"):
                n = phase_count(session, phase)
                exp = f" of {per_iter * args.iters:.0f}" if per_iter else ""
                print(f"INFO  gpufl kernel rows {phase}: {n}{exp}")
            if per_iter and t_events is not None and t_events < per_iter * args.iters:
                warn(f"torch.profiler, started while gpufl traces, recorded {t_events} of "
                      f"{per_iter * args.iters:.0f} kernel events")
            if per_iter:
                for phase in ("with_profiler", "after_profiler"):
                    n = phase_count(session, phase)
                    if n is not None and n < per_iter * args.iters:
                        warn(f"gpufl lost kernels {phase}: {n} of "
                              f"{per_iter * args.iters:.0f}")
    print(f"\n{len(failures)} problems")
    for f in failures:
        print("  - " + f)
    print("RESULT " + ("PASS" if not failures else "FAIL") + " compare_torch --coexist"
          + (f" ({len(warnings)} warnings: records lost, see above)" if warnings else ""))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--coexist", action="store_true",
                    help="run the two-clients-in-one-process scenarios instead of the comparison")
    ap.add_argument("--out", default="/tmp/gpufl-compare-torch",
                    help="directory for logs, traces and tables (default: %(default)s)")
    ap.add_argument("--lib", default=None,
                    help="libgpufl.so to load (default: $GPUFL_LIBRARY, else .devbin/libgpufl.so)")
    ap.add_argument("--iters", type=int, default=30, help="measured iterations (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="warmup iterations (default 3)")
    ap.add_argument("--pairs", type=int, default=2,
                    help="torch/gpufl run pairs, alternating (default 2)")
    ap.add_argument("--tolerance-pct", type=float, default=2.0,
                    help="allowed difference of GPU time per name (default 2)")
    ap.add_argument("--min-us", type=float, default=20.0,
                    help="names with a shorter median are shown, not judged (default 20)")
    ap.add_argument("--full-names", action="store_true", help="do not shorten names in the table")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per child process")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--tag", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    args.out = os.path.abspath(args.out)
    if args.child:
        return child_main(args)
    lib = args.lib or gpufl_ctypes.default_library()
    if not os.path.exists(lib):
        print(f"FAIL  {lib} not found: run tests/gpu/build_for_device.sh first, or pass --lib")
        return 2
    args.lib = lib
    print(f"INFO  library {lib}, output under {args.out}")
    return coexist(args) if args.coexist else compare(args)


if __name__ == "__main__":
    sys.exit(main())
