#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summary of tests/gpu/run_pcs_candidates.sh: PcSampling's activity candidates side by side.

Reads what the script wrote under OUT and writes OUT/summary.md (tables) and
OUT/summary.json (every figure):
  - per mode and reference kernel: samples, the share of samples that keep
    their PC (recorded / (recorded + non_user)), the stall mix's largest
    difference in points from mode `none` (per-reason shares of the plain
    reasons, `selected` left out, as check_pc_fidelity.py), the dominant
    stall against ncu's, and the kernel rows' GPU time against the Trace
    session's (count and mean duration);
  - per mode the added time per launch over untraced (the launch loop);
  - per mode the transformer training step against untraced and Trace.
CUPTI counts non-user samples per hand-over, not per function: a window's
non_user samples are given to the kernels sampled in that window in
proportion to their recorded samples (the reference kernels run one after
another, so most windows hold one kernel). That is the analysis-side
"non-user samples attributed by time" of docs/design/pcs-with-trace.md, done
here in Python; the library's report does not do it.
Usage: summarize_pcs_candidates.py OUT [--modes late,none,kernels,all,alternate,events]
"""
import argparse
import collections
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_pc_fidelity import KERNELS, dominant, kernel_of, short  # noqa: E402
from gpufl_log import Session  # noqa: E402


def session_of(path):
    """The session directory a program's stdout names, or None."""
    try:
        with open(path) as f:
            found = re.findall(r'"session":"([^"]*)"', f.read())
    except OSError:
        return None
    return found[-1] if found else None


def stall_mix(pc_rows):
    """kernel -> {reason: share}, over the plain reasons without `selected`."""
    counts = {k: collections.Counter() for k in KERNELS}
    for r in pc_rows:
        k = kernel_of(r.get("demangled_str") or r.get("function_str"))
        reason = short(r.get("reason_str") or "")
        if k and reason != "selected":
            counts[k][reason] += r["samples"]
    out = {}
    for k, c in counts.items():
        total = sum(c.values())
        out[k] = {r: v / total for r, v in c.items()} if total else {}
    return out


def largest_difference_points(mix, base):
    """The largest |share - base share| over the reasons of either, in points."""
    reasons = set(mix) | set(base)
    if not mix or not base:
        return None
    return round(100 * max(abs(mix.get(r, 0) - base.get(r, 0)) for r in reasons), 2)


def kept_shares(pc_rows, windows):
    """kernel -> (recorded, non_user given to it by time, kept share). A
    window's non_user samples go to the kernels sampled in the same window
    (context, t0, t1) in proportion to their recorded samples."""
    per_window = collections.defaultdict(collections.Counter)
    for r in pc_rows:
        k = kernel_of(r.get("demangled_str") or r.get("function_str"))
        if k:
            per_window[(r["context"], r["t0_ns"], r["t1_ns"])][k] += r["samples"]
    recorded, non_user = collections.Counter(), collections.Counter()
    for w in windows:
        here = per_window.get((w["context"], w["t0_ns"], w["t1_ns"]), collections.Counter())
        total = sum(here.values())
        for k, v in here.items():
            recorded[k] += v
            non_user[k] += w["non_user"] * v / total
    out = {}
    for k in KERNELS:
        denominator = recorded[k] + non_user[k]
        out[k] = {"recorded": recorded[k], "non_user": round(non_user[k]),
                  "kept": round(recorded[k] / denominator, 4) if denominator else None}
    return out


def kernel_times(kernels):
    """kernel -> (count, mean ns) of the kernel rows."""
    spans = collections.defaultdict(list)
    for r in kernels:
        k = kernel_of(r.get("demangled_str") or r.get("name_str"))
        if k:
            spans[k].append(r["end_ns"] - r["start_ns"])
    return {k: (len(v), statistics.mean(v)) for k, v in spans.items()}


def launch_costs(lines):
    """variant -> median over rounds of (variant - untraced) us per launch,
    and the untraced median."""
    per = collections.defaultdict(lambda: collections.defaultdict(list))
    for line in lines:
        v = re.search(r"variant=(\S+)", line)
        r = re.search(r"round=(\d+)", line)
        us = re.search(r"us_per_kernel=([\d.]+)", line)
        if v and r and us:
            per[int(r.group(1))][v.group(1)].append(float(us.group(1)))
    added = collections.defaultdict(list)
    base_all = []
    for d in per.values():
        if not d.get("untraced"):
            continue
        base = statistics.median(d["untraced"])
        base_all.append(base)
        for v, xs in d.items():
            if v != "untraced":
                added[v].append(statistics.median(xs) - base)
    return ({v: round(statistics.median(x), 3) for v, x in added.items()},
            round(statistics.median(base_all), 3) if base_all else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--modes", default="late,none,kernels,all,alternate,events")
    a = ap.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    out = {"modes": modes, "kernels": {}, "launch": {}, "train": {}}
    md = ["# PcSampling with Trace's activity: candidates side by side", ""]
    try:
        with open(os.path.join(a.out, "machine.txt")) as f:
            md += ["```", f.read().strip(), "```", ""]
    except OSError:
        pass

    trace_dir = session_of(os.path.join(a.out, "kernels_trace.txt"))
    trace_times = kernel_times(Session(trace_dir).kernels()) if trace_dir else {}
    mixes = {}
    for mode in modes:
        d = session_of(os.path.join(a.out, f"kernels_{mode}.txt"))
        if not d or not os.path.isdir(d):
            out["kernels"][mode] = {"error": "no session"}
            continue
        s = Session(d)
        pc_rows = s.rows.get("pc_sample", [])
        mixes[mode] = stall_mix(pc_rows)
        kept = kept_shares(pc_rows, s.rows.get("pc_window", []))
        times = kernel_times(s.kernels())
        try:
            with open(os.path.join(a.out, f"fidelity_{mode}.json")) as f:
                fid = json.load(f).get("kernels", {})
        except (OSError, ValueError):
            fid = {}
        rows = {}
        for k in KERNELS:
            count, mean = times.get(k, (0, None))
            tcount, tmean = trace_times.get(k, (0, None))
            rows[k] = dict(kept[k],
                           gpufl_dominant=dominant(mixes[mode][k]),
                           ncu_dominant=fid.get(k, {}).get("ncu_dominant"),
                           kernel_rows=count, trace_kernel_rows=tcount,
                           duration_vs_trace=round(mean / tmean - 1, 4) if mean and tmean else None)
        out["kernels"][mode] = rows
    base = mixes.get("none", {})
    for mode, rows in out["kernels"].items():
        for k, row in rows.items() if "error" not in rows else ():
            row["mix_diff_points"] = largest_difference_points(mixes[mode][k], base.get(k, {}))
    md += ["## Reference kernels (pcs_kernels, 200 launches each)", "",
           "| mode | kernel | recorded | non-user (by time) | kept | largest stall-share "
           "difference from none (points) | dominant | ncu's | kernel rows (Trace's) | "
           "mean duration vs Trace |", "|---|---|---|---|---|---|---|---|---|---|"]
    for mode, rows in out["kernels"].items():
        if "error" in rows:
            md.append(f"| {mode} | {rows['error']} |||||||||")
            continue
        for k, r in rows.items():
            dur = f"{100 * r['duration_vs_trace']:+.2f} %" if r["duration_vs_trace"] is not None \
                else "-"
            md.append(f"| {mode} | {k} | {r['recorded']} | {r['non_user']} | {r['kept']} | "
                      f"{r['mix_diff_points']} | {r['gpufl_dominant']} | {r['ncu_dominant']} | "
                      f"{r['kernel_rows']} ({r['trace_kernel_rows']}) | {dur} |")

    try:
        with open(os.path.join(a.out, "launch.txt")) as f:
            added, base_us = launch_costs(f)
        out["launch"] = {"untraced_us_per_launch": base_us, "added_us_per_launch": added}
        md += ["", "## Cost per launch (empty kernels, median over rounds of the added time)", "",
               f"untraced: {base_us} us per launch", "", "| variant | added us per launch |",
               "|---|---|"]
        md += [f"| {v} | {us:+.3f} |" for v, us in sorted(added.items())]
    except OSError:
        pass

    try:
        with open(os.path.join(a.out, "train.jsonl")) as f:
            lines = [json.loads(x) for x in f if x.startswith("{")]
        runs = [x for x in lines if "variant" in x and "stats" in x]
        summary = next((x["summary"] for x in lines if "summary" in x), {})
        tw = summary.get("workloads", {}).get("transformer", {})
        trace_ms = tw.get("trace", {}).get("median_ms")
        md += ["", "## Transformer training loop (each step synchronized)", "",
               "| variant | median step (ms) | vs untraced | vs Trace | kept share of samples |",
               "|---|---|---|---|---|"]
        for v, r in tw.items():
            st = [x["stats"].get("pc_sampling_stats", {}) for x in runs if x["variant"] == v]
            rec = sum(x.get("recorded", 0) for x in st)
            nu = sum(x.get("non_user", 0) for x in st)
            kept = round(rec / (rec + nu), 4) if rec + nu else None
            vs_trace = round(100 * (r["median_ms"] / trace_ms - 1), 2) if trace_ms else None
            out["train"][v] = dict(r, kept=kept, vs_trace_pct=vs_trace)
            md.append(f"| {v} | {r['median_ms']} | {r['overhead_pct']:+.2f} % | "
                      f"{'-' if vs_trace is None else f'{vs_trace:+.2f} %'} | {kept} |")
    except (OSError, ValueError):
        pass

    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(out, f, indent=1)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
