#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares tests/gpu/range_profiler_probe's range metrics with Nsight Compute.

Inputs, both from the GPU machine:
  PROBE_JSONL  the probe's output (range_profiler_probe > probe.jsonl);
  NCU_CSV      ncu's CSV for the same binary in --ncu-mode, which runs the same
               plan of launches with no CUPTI in the process, e.g.
                 ncu --csv --page raw --print-units base --cache-control none \\
                     --clock-control none --metrics <the probe's metrics> \\
                     --log-file ncu.csv .devbin/range_profiler_probe --ncu-mode
               (--page details, one row per metric, is read as well).

ncu measures each kernel launch on its own; a probe range holds several
launches (the "plan" line of the probe says which: segments of launches of one
kernel, in launch order). ncu's n-th profiled kernel is the plan's n-th launch,
so the script checks the kernel names in that order and fails if they differ.
For each range it aggregates ncu's launches of the range's segments:
  - counters ending in ".sum" (bytes, instructions, gpu__time_duration.sum):
    the sum over the launches, which is what one range over the same launches
    counts;
  - everything else (".pct", ".pct_of_peak_*", ".avg", ratios): the mean over
    the launches (--weighting time: weighted by each launch's
    gpu__time_duration.sum, closer to what a range's elapsed-cycle denominator
    does when launches differ). The launches of one probe range are launches of
    one kernel with the same arguments, so both give nearly the same number.
The probe's auto-range phase (one range per launch, kernel replay) is
aggregated the same way and shown beside, when present.

A user range also spans the host gaps between its launches, so its
gpu__time_duration.sum is expected to exceed ncu's summed kernel durations and
its "_elapsed" percentages to be lower; the table shows that rather than
hiding it.

Prints one table per range: metric, ours (the chosen phase), auto, ncu, ratios
and whether each is within the tolerance (default 5 %). A value the probe
marks "not_all_passes" (its collection stopped before CUPTI said all passes
were submitted) is shown as "part" and counted apart: null is expected there.
When values of the chosen phase are missing, the probe's "session" lines of
that phase follow the tables: Stop's pass outputs, the ranges found in the
counter data and each range's evaluation result. Exit status 0 when
every compared value of the chosen phase is within it, 1 when one is not or
when no value could be compared at all, 2 for unusable input. Python 3
standard library only.
"""
import argparse
import csv
import io
import json
import math
import sys


def number(text):
    """A value of ncu's CSV: thousands separators removed; n/a and empty are None."""
    if text is None:
        return None
    t = str(text).strip().replace(",", "")
    if t == "" or t.lower() in ("n/a", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def kernel_base(name):
    """ncu's kernel name without parameters or a leading return type."""
    n = (name or "").strip()
    if "(" in n:
        n = n[: n.index("(")]
    if n.startswith("void "):
        n = n[5:]
    return n.strip()


def read_probe(path):
    plan, ranges, device, sessions = None, [], None, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            kind = rec.get("kind")
            if kind == "plan" and plan is None:
                plan = rec
            elif kind == "range":
                ranges.append(rec)
            elif kind == "device" and device is None:
                device = rec
            elif kind in ("session", "reconfigure"):
                sessions.append(rec)
    return plan, ranges, device, sessions


# The session lines behind a phase of range lines.
SESSION_PHASE = {"user_groups": "groups"}


def print_sessions(sessions, phase):
    """What the probe saw while collecting this phase, to explain missing values."""
    want = SESSION_PHASE.get(phase, phase)
    shown = [s for s in sessions if s.get("kind") == "session" and s.get("phase") == want]
    if want.startswith("reconfigured_"):
        case = want[len("reconfigured_"):]
        shown += [s for s in sessions if s.get("kind") == "reconfigure" and s.get("case") == case]
    if not shown:
        return
    print()
    print(f"sessions of phase {want}:")
    for s in shown:
        if s.get("kind") == "reconfigure":
            print(f"  reconfigure {s.get('case')}: first stop {s.get('first_stop')}, set_config "
                  f"{s.get('set_config')}, second stop {s.get('second_stop')}, finite values "
                  f"{s.get('second_finite_values')} of {s.get('second_values')}")
            continue
        stops = s.get("stops") or []
        last = stops[-1] if stops else {}
        group = f" group {s['group']}" if "group" in s else ""
        print(f"  {s.get('label')}{group}: passes needed {s.get('passes_needed')} x levels "
              f"{s.get('nesting_levels')}, run {s.get('passes_run')}, last stop pass_index "
              f"{last.get('pass_index')} level {last.get('target_nesting_level')} all submitted "
              f"{last.get('is_all_pass_submitted')}, reused object {s.get('reused_object')}")
        print(f"    ranges in data {s.get('ranges_in_data')} (image for "
              f"{s.get('counter_data_max_ranges')}), dropped {s.get('ranges_dropped')}, refused "
              f"push/pop {s.get('refused_push_pop')}")
        for d in s.get("range_diagnostics") or []:
            print(f"    range {d.get('index')} {d.get('name')!r} (host API {d.get('host_api_name')!r})"
                  f": evaluate {d.get('evaluate')}, NaN {d.get('nan_values')}, inf "
                  f"{d.get('inf_values')}")
        f = s.get("foreign_metric")
        if f:
            print(f"    unconfigured metric {f.get('name')} on range 0: {f.get('result')}, value "
                  f"{f.get('value')}")


def read_ncu(path):
    """ncu's launches in ID order: [{"id", "kernel", "metrics": {name: float}}]."""
    text = open(path, encoding="utf-8", errors="replace").read()
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], rows[1:]
    launches = {}
    if "Metric Name" in header and "Metric Value" in header:  # --page details
        for r in body:
            if len(r) != len(header):
                continue
            d = dict(zip(header, r))
            if not d["ID"].strip().isdigit():
                continue
            i = int(d["ID"])
            entry = launches.setdefault(i, {"id": i, "kernel": kernel_base(d.get("Kernel Name")),
                                            "metrics": {}})
            entry["metrics"][d["Metric Name"]] = number(d["Metric Value"])
    else:  # --page raw: one row per launch, one column per metric, a units row first
        for r in body:
            if len(r) != len(header) or not r[0].strip().isdigit():
                continue
            d = dict(zip(header, r))
            i = int(d["ID"])
            metrics = {k: number(v) for k, v in d.items() if "__" in k}
            launches[i] = {"id": i, "kernel": kernel_base(d.get("Kernel Name")),
                           "metrics": metrics}
    return [launches[i] for i in sorted(launches)]


def is_sum(metric):
    return metric.endswith(".sum")


def aggregate(metric, launches, weighting, per_launch=False):
    """One number for a metric over per-launch values (dicts of metric: value); with
    per_launch, a ".sum" counter is the mean per launch instead of the total."""
    vals = [(l.get(metric), l.get("gpu__time_duration.sum")) for l in launches]
    vals = [(v, t) for v, t in vals if v is not None and not math.isnan(v)]
    if not vals or len(vals) != len(launches):
        return None
    if is_sum(metric):
        return sum(v for v, _ in vals) / (len(vals) if per_launch else 1)
    if weighting == "time" and all(t for _, t in vals):
        total = sum(t for _, t in vals)
        return sum(v * t for v, t in vals) / total
    return sum(v for v, _ in vals) / len(vals)


def within(ours, ref, tol, abs_slack):
    if ours is None or ref is None:
        return None
    if abs(ours - ref) <= abs_slack:
        return True
    if ref == 0:
        return abs(ours) <= 1e-9
    return abs(ours - ref) <= tol * abs(ref)


def fmt(v):
    if v is None:
        return "n/a"
    if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
        return f"{v:.4e}"
    return f"{v:.4f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def mark(ok):
    return {True: "ok", False: "DIFF", None: "-"}[ok]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("probe_jsonl", help="output of range_profiler_probe (normal mode)")
    ap.add_argument("ncu_csv", help="ncu --csv output for range_profiler_probe --ncu-mode")
    ap.add_argument("--phase", default="user_groups",
                    help="the probe phase to compare: user_groups (default), user_replay_all, "
                         "one_pass_of_multipass, nested2, reconfigured_after_complete, "
                         "reconfigured_again_without_set_config, reconfigured_after_partial")
    ap.add_argument("--tolerance-pct", type=float, default=5.0,
                    help="relative tolerance in percent (default 5)")
    ap.add_argument("--abs-slack", type=float, default=0.0,
                    help="absolute difference always accepted, e.g. 0.5 for percentage "
                         "metrics near zero (default 0)")
    ap.add_argument("--weighting", choices=("mean", "time"), default="mean",
                    help="how ncu's per-launch non-sum metrics are combined (default mean)")
    args = ap.parse_args()
    tol = args.tolerance_pct / 100.0

    plan, ranges, device, sessions = read_probe(args.probe_jsonl)
    if plan is None:
        print(f"FAIL  no plan line in {args.probe_jsonl}")
        return 2
    ncu = read_ncu(args.ncu_csv)
    if not ncu:
        print(f"FAIL  no ncu rows in {args.ncu_csv} (expected --csv output with an ID column)")
        return 2

    # Launch i of the plan -> segment; ncu's i-th kernel must be that kernel.
    seg_of_launch, seg_kernel = [], {}
    for seg in plan["segments"]:
        seg_kernel[seg["index"]] = seg["kernel"]
        seg_of_launch += [seg["index"]] * seg["launches"]
    if len(ncu) != len(seg_of_launch):
        print(f"FAIL  ncu profiled {len(ncu)} kernels, the plan has {len(seg_of_launch)} launches "
              "(was ncu run on --ncu-mode with the same --launches?)")
        return 2
    for i, (l, seg) in enumerate(zip(ncu, seg_of_launch)):
        if l["kernel"] != seg_kernel[seg]:
            print(f"FAIL  ncu's kernel {i} is {l['kernel']!r}, the plan's launch {i} is "
                  f"{seg_kernel[seg]!r}")
            return 2
    ncu_by_seg = {}
    for l, seg in zip(ncu, seg_of_launch):
        ncu_by_seg.setdefault(seg, []).append(l["metrics"])

    auto_by_seg = {}
    for r in ranges:
        if r.get("phase") == "auto" and r.get("segment", -1) >= 0:
            auto_by_seg.setdefault(r["segment"], []).append(r.get("metrics", {}))

    chosen = [r for r in ranges if r.get("phase") == args.phase]
    if not chosen:
        phases = sorted({r.get("phase") for r in ranges})
        print(f"FAIL  no range lines of phase {args.phase!r} (present: {', '.join(phases)})")
        return 2

    if device:
        print(f"device {device.get('name')}  launches per range {plan.get('launches_per_range')}"
              f"  phase {args.phase}  tolerance {args.tolerance_pct:g} %  weighting "
              f"{args.weighting}")
    compared = mismatched = missing = partial = 0
    for r in chosen:
        segs = r.get("segments") or []
        ncu_launches = [m for s in segs for m in ncu_by_seg.get(s, [])]
        auto_launches = [m for s in segs for m in auto_by_seg.get(s, [])]
        kernels = ", ".join(r.get("kernels") or [])
        print()
        print(f"range {r['name']}: {kernels}, {r.get('launches')} launches (segments "
              f"{segs}); ncu launches {len(ncu_launches)}, auto ranges {len(auto_launches)}")
        print(f"  kernel ms: with profiler {fmt(r.get('ms_with_profiler'))}, without "
              f"{fmt(r.get('ms_without_profiler'))}, overhead {fmt(r.get('overhead_pct'))} %")
        if not segs:
            print("  (no segments: CUPTI's range name is not one the plan pushed)")
            continue
        if len(r.get("kernels") or []) > 1:
            print("  (more than one kernel: for ratios and percentages ncu's mean over launches "
                  "is not what one range over all of them measures)")
        not_all = r.get("not_all_passes") or {}
        head = (f"  {'metric':<72} {'ours':>12} {'auto':>12} {'ncu':>12} {'ours/ncu':>9} "
                f"{'':>4} {'auto/ncu':>9} {'':>4}")
        print(head)
        for metric, ours in sorted(r.get("metrics", {}).items()):
            ref = aggregate(metric, ncu_launches, args.weighting)
            auto = (aggregate(metric, auto_launches, args.weighting)
                    if len(auto_launches) == len(ncu_launches) else None)
            ok = within(ours, ref, tol, args.abs_slack)
            ok_auto = within(auto, ref, tol, args.abs_slack)
            ours_mark = mark(ok)
            if ok is None and metric in not_all:
                partial += 1
                ours_mark = "part"
            elif ok is None:
                missing += 1
            else:
                compared += 1
                mismatched += 0 if ok else 1
            print(f"  {metric:<72} {fmt(ours):>12} {fmt(auto):>12} {fmt(ref):>12} "
                  f"{fmt(ratio(ours, ref)):>9} {ours_mark:>4} {fmt(ratio(auto, ref)):>9} "
                  f"{mark(ok_auto):>4}")
        for metric, err in sorted((r.get("errors") or {}).items()):
            print(f"  {metric}: evaluation failed: {err}")
        for metric, passes in sorted(not_all.items()):
            print(f"  {metric}: not all passes submitted ({passes})")
    if missing or partial:
        print_sessions(sessions, args.phase)
    print()
    print(f"summary: {compared} values compared, {mismatched} outside {args.tolerance_pct:g} %, "
          f"{missing} without a value on one side, {partial} without a value because not all "
          "passes ran")
    return 1 if mismatched or not compared else 0


if __name__ == "__main__":
    sys.exit(main())
