#!/usr/bin/env python3
"""RangeProfiler fidelity: gpufl's per-scope metrics against Nsight Compute.

Reads a RangeProfiler session of tests/gpu/pcs_kernels (each reference kernel
launched N times inside a scope of its name) and an ncu CSV of the same
program run with GPUFL_DISABLED=1 (`ncu --csv --page raw --print-units base
--cache-control none --clock-control none --metrics <METRICS>`). ncu's
launches of each kernel are aggregated the way compare_range_ncu.py does for
the probe (`.sum` counters summed, ratios weighted by kernel time) and
compared with the scope's range_metrics record. The L2 hit rate, which needs
2 passes and is left out by gpufl, is compared as gpufl's
lookup_hit / (lookup_hit + lookup_miss) against ncu's lts__t_sector_hit_rate.

Prints per scope: metric, ours, ncu, ratio and whether within --tolerance-pct
(default 5; --abs-slack for percentages near zero); then a summary and the
session's range_profiler and range_profiler_stats records. A user range's
elapsed time includes gaps between its kernels: `_elapsed` percentages and
gpu__time_duration.sum may differ by more than the tolerance while the
counters agree (docs/design/range-profiler.md). Exit 0 when every compared
value agrees, 1 when one does not or none could be compared, 2 on unusable
input.
Usage: check_range_fidelity.py SESSION NCU_CSV [--tolerance-pct 5] [--abs-slack 0.5]
       check_range_fidelity.py --metrics   (prints the ncu metric list)
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_sass_fidelity as csf  # noqa: E402  (read_log)
import compare_range_ncu as crn  # noqa: E402  (read_ncu, aggregate, within)

KERNELS = ("divergent", "strided", "stream_triad", "fma_chains")
L2_DERIVED = "l2_hit_rate.pct (lookup hit / (hit + miss))"


def read_session(session):
    """range_metrics records by scope path, and the engine's other records."""
    lines, names = csf.read_log(session)
    ranges, other = {}, []
    for rec in lines:
        t = rec.get("type")
        if t == "range_metrics":
            ranges.setdefault(names.get(rec["path"], "?"), []).append(rec)
        elif t in ("range_profiler", "range_profiler_stats", "capabilities"):
            other.append(rec)
    return ranges, other


def session_metrics(other):
    """The metrics the engine chose (its range_profiler record), then those it left out: the
    list ncu is asked for, so that both sides name the same counters."""
    for rec in other:
        if rec.get("type") == "range_profiler" and "metrics" in rec:
            return list(rec["metrics"]) + list(rec.get("left_out", {}))
    return []


def l2_rate(m):
    hit, miss = m.get("lts__t_sectors_lookup_hit.sum"), m.get("lts__t_sectors_lookup_miss.sum")
    if hit is None or miss is None or hit + miss == 0:
        return None
    return 100.0 * hit / (hit + miss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("session", nargs="?")
    ap.add_argument("ncu_csv", nargs="?")
    ap.add_argument("--tolerance-pct", type=float, default=5.0)
    ap.add_argument("--abs-slack", type=float, default=0.5)
    ap.add_argument("--metrics", action="store_true",
                    help="print the session's metrics (counted and left out) for ncu, and exit")
    a = ap.parse_args()
    if not a.session or (not a.ncu_csv and not a.metrics):
        ap.print_usage()
        return 2
    ranges, other = read_session(a.session)
    metrics = session_metrics(other)
    if not metrics:
        print("check_range_fidelity: the session has no range_profiler record", file=sys.stderr)
        return 2
    if a.metrics:
        print(",".join(metrics))
        return 0
    launches = crn.read_ncu(a.ncu_csv)
    if not launches:
        print("check_range_fidelity: no launches in the ncu CSV", file=sys.stderr)
        return 2
    tol = a.tolerance_pct / 100.0
    compared = agree = 0
    print(f"{'scope':<13} {'metric':<72} {'ours':>14} {'ncu':>14} {'ratio':>7}  within")
    for k in KERNELS:
        recs = ranges.get(k, [])
        if len(recs) != 1:
            print(f"{k:<13} {len(recs)} range_metrics records (want 1)")
            continue
        ours = recs[0]["metrics"]
        mine = [l["metrics"] for l in launches if l["kernel"] == k]
        if not mine:
            print(f"{k:<13} no ncu launches")
            continue
        rows = [(m, ours.get(m), crn.aggregate(m, mine, "time")) for m in metrics]
        ncu_l2 = crn.aggregate("lts__t_sector_hit_rate.pct", mine, "time")
        rows.append((L2_DERIVED, l2_rate(ours), ncu_l2))
        for m, v, ref in rows:
            ok = crn.within(v, ref, tol, a.abs_slack)
            if ok is not None:
                compared += 1
                agree += ok
            r = crn.ratio(v, ref)
            shown = "left out" if m in metrics and m not in ours else crn.fmt(v)
            print(f"{k:<13} {m:<72} {shown:>14} {crn.fmt(ref):>14} "
                  f"{crn.fmt(r) if r is not None else '-':>7}  {crn.mark(ok)}")
    for rec in other:
        print(json.dumps(rec))
    print(json.dumps({"compared": compared, "within": agree,
                      "tolerance_pct": a.tolerance_pct}))
    return 0 if compared and agree == compared else 1


if __name__ == "__main__":
    sys.exit(main())
