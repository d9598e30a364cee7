#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""RangeProfiler fidelity: gpufl's per-scope metrics against Nsight Compute.

Reads a RangeProfiler session of tests/gpu/pcs_kernels (each reference kernel
launched N times inside each of R scopes of its name, PCS_KERNELS_SCOPES=R)
and an ncu CSV of the same program run with GPUFL_DISABLED=1 and R = 1
(`ncu --csv --page raw --print-units base --cache-control none
--clock-control none --metrics <METRICS>`), and compares per scope path.

The engine collects several one-pass metric groups and rotates them between
collections (range_profiler record: groups, sm_throughput_of, left_out;
range_metrics: group, and that group's metrics only), so a path has several
ranges, each with some of the metrics. Both sides are brought to one launch:
  - ours, per metric over the path's ranges that have it: a ".sum" counter
    is the mean per launch, sum / (ranges x --launches-per-scope; default:
    ncu's launches of the kernel, which is what one range held when ncu and
    gpufl ran the same launches in one scope); anything else (ratios,
    percentages) is weighted by each range's gpu__time_duration.sum;
  - ncu, over the kernel's launches: a ".sum" counter is the mean per
    launch, anything else weighted by each launch's GPU time.
Derived rows, from inputs in different groups (so different ranges):
  - sm_throughput (max of N parts) against ncu's sm__throughput: the largest
    of the time-weighted means of the range_profiler record's
    sm_throughput_of parts; the part that is largest (the limiter) is
    printed, ours and ncu's;
  - the L2 hit rate h / s against ncu's lts__t_sector_hit_rate.pct, with
    h = sum of lts__t_sectors_lookup_hit.sum / sum of GPU time over the
    ranges that have it, s the same for lts__t_sectors.sum (ncu's hit rate
    is exactly lookup hits over sectors, per launch); without the sector
    count, h / (h + m) with m the same for lookup_miss.
The run must cover every group on every path: a metric without a value on
a path prints "n/a (group g not seen)" (or "n/a (no value)" when its group's
ranges were null there), a derived value whose inputs were not all seen
"n/a (groups k of K seen)" (K: the groups that hold its inputs), and either
makes the exit status 1. A derived value the engine does not collect at all
(an input in no group) is shown as "n/a (not collected)", like a metric left
out, and not counted.

Tolerance: within --tolerance-pct (default 5) of ncu; --abs-slack (default
0.5) accepts an absolute difference, for percentages near zero. DRAM byte
counters (".sum" with "bytes" in the name) of kernels that move almost
nothing (KB against a range that could move GB) take an absolute slack
instead: --bytes-slack-frac (default 1e-4) of what DRAM could move in the
launch's time, frac x peak bytes/ns x our GPU time per launch (ncu's when
ours is missing). The peak is ncu's dram__bytes.sum.peak_sustained (bytes
per DRAM cycle) x dram__cycles_elapsed.avg.per_second (converted with the
CSV's units row), the mean over the kernel's launches: asked of ncu with the
other metrics, independent of the kernels' own traffic. Without them in the
CSV no bytes slack applies. The L2 sector counts (lookup hits, lookup misses,
sectors) take an absolute slack of --abs-slack / 100 x the kernel's L2
sectors per launch (lts__t_sectors.sum: ours, else ncu's kernel replay,
else its range replay). The L2 hit rate is lookup hits over sectors, so a
count off by no more than that moves the rate by less than --abs-slack
percentage points, the absolute slack the rate itself gets: tens of
lookup misses a launch out of 150,000 sectors (a compute-bound kernel,
where what a range's first launch finds in L2 depends on the kernel run
before) are noise for the rate, and 5 % of so small a count is no measure of
fidelity. A row that passes only through a slack says "ok (slack)".

Settling ranges (range_metrics "settling": the first ranges on a context
after the profiler was configured there, at its start and at each switch of
metric group, whose kernels write back what L2 then held dirty and run
slower) are set aside on a path wherever their group has other ranges of the
path; the per-path line says how many. --keep-settling compares them too.

A second reference, --ncu-range CSV: ncu's range replay of the same program
with PCS_KERNELS_PROFILER_RANGES=1 and R = 1 (`ncu --replay-mode range`, the
options above), one row per cudaProfilerStart/Stop range ("Kernel Name"
"range"), in program order: the i-th is the i-th kernel of divergent,
strided, stream_triad, fma_chains (the CSV must have one for each). A ".sum"
counter is the range's total over --ncu-range-launches (default
--launches-per-scope, else ours), anything else is taken as it is. Kernel
replay measures each launch alone, after ncu restored memory; a range, ours
and ncu's, holds back-to-back launches that find L2 warm from the one
before. So for what depends on L2's contents across launches (L2 lookup
hits and misses, L2 sectors, DRAM bytes and throughput, the L2 hit rate)
range replay is the like-for-like reference and decides the row; kernel
replay decides every other row, and those too where range replay has no
value. The table adds "ncu range" and its ratio, the verdict against each
reference and which decided ("ok (range)", "DIFF (kernel)").

Prints per path: the ranges and the groups seen, then metric, ranges, ours,
ncu, ratio and whether within; then the session's range_profiler,
range_profiler_stats and capabilities records and a JSON summary (with
--ncu-range, also the counts against each reference and how many rows each
decided). Exit 0 when every compared value agrees with the reference that
decides it and every derived value could be compared, 1 otherwise (or when
none could be compared, or a path has no ranges), 2 on unusable input (an
--ncu-range CSV without one range per kernel included).
Usage: check_range_fidelity.py SESSION NCU_CSV [--launches-per-scope N] [--tolerance-pct 5]
                               [--abs-slack 0.5] [--bytes-slack-frac 1e-4] [--keep-settling]
                               [--ncu-range CSV [--ncu-range-launches N]]
       check_range_fidelity.py SESSION --metrics   (prints the ncu metric list)
"""
import argparse
import csv
import functools
import io
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_sass_fidelity as csf  # noqa: E402  (read_log)
import compare_range_ncu as crn  # noqa: E402  (read_ncu, aggregate, is_sum, ratio, fmt)

KERNELS = ("divergent", "strided", "stream_triad", "fma_chains")
GPU_TIME = "gpu__time_duration.sum"
SM_THROUGHPUT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
L2_RATE = "lts__t_sector_hit_rate.pct"
L2_HIT, L2_MISS = "lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum"
L2_SECTORS = "lts__t_sectors.sum"
PEAK_BYTES = "dram__bytes.sum.peak_sustained"  # bytes per DRAM cycle
DRAM_CLOCK = "dram__cycles_elapsed.avg.per_second"
L2_DERIVED = "l2_hit_rate.pct (lookup hits / sectors)"
L2_COUNTS = (L2_HIT, L2_MISS, L2_SECTORS)
# Rows whose value depends on what L2 holds when a launch starts: range replay decides them.
L2_STATE = L2_COUNTS + (L2_RATE, L2_DERIVED)
L2_STATE_PREFIXES = ("dram__bytes", "dram__throughput")

# ncu's units for a clock, as a factor to cycles per ns (lower case).
CLOCK_PER_NS = {"cycle/nsecond": 1.0, "cycle/ns": 1.0, "ghz": 1.0,
                "cycle/usecond": 1e-3, "cycle/us": 1e-3, "mhz": 1e-3,
                "cycle/msecond": 1e-6, "cycle/ms": 1e-6, "khz": 1e-6,
                "cycle/second": 1e-9, "cycle/s": 1e-9, "hz": 1e-9}
BYTES_PER_CYCLE = {"byte/cycle": 1.0, "kbyte/cycle": 1e3, "mbyte/cycle": 1e6}


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


def engine_plan(other):
    """The metric groups of the engine's range_profiler record (a session from before groups:
    one group, its metrics), the parts of SM throughput and what was left out, or None."""
    for rec in other:
        if rec.get("type") == "range_profiler" and "metrics" in rec:
            groups = rec.get("groups") or [rec["metrics"]]
            return {"groups": [list(g) for g in groups],
                    "sm_of": list(rec.get("sm_throughput_of") or []),
                    "left_out": dict(rec.get("left_out") or {})}
    return None


def dedup(names):
    seen, out = set(), []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def group_metrics(plan):
    return dedup(m for g in plan["groups"] for m in g)


def ncu_metrics(plan):
    """What ncu is asked for: every group's metrics, those left out, the references of the
    derived rows and DRAM's peak for the bytes slack. A name the chip does not know would
    stop ncu, so those are not asked (and said)."""
    unknown = [m for m, why in plan["left_out"].items() if str(why).startswith("not a metric")]
    if unknown:
        print("check_range_fidelity: not asking ncu for " + ", ".join(unknown) +
              " (not metrics of the chip)", file=sys.stderr)
    left = [m for m in plan["left_out"] if m not in unknown]
    return dedup(group_metrics(plan) + left + [SM_THROUGHPUT, L2_RATE, PEAK_BYTES, DRAM_CLOCK])


def read_ncu_units(path):
    """ncu's unit of each metric: the units row under the header of --page raw, or the
    Metric Unit column of --page details."""
    text = open(path, encoding="utf-8", errors="replace").read()
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return {}
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, units = rows[0], {}
    if "Metric Name" in header and "Metric Unit" in header:
        name, unit = header.index("Metric Name"), header.index("Metric Unit")
        for r in rows[1:]:
            if len(r) == len(header):
                units.setdefault(r[name], r[unit].strip())
    elif len(rows) > 1 and len(rows[1]) == len(header) and not rows[1][0].strip():
        units = {h: u.strip() for h, u in zip(header, rows[1]) if "__" in h}
    return units


def dram_peak_per_ns(launches, units):
    """DRAM's peak bytes per ns over a kernel's ncu launches (their mean), or None."""
    bpc = BYTES_PER_CYCLE.get(units.get(PEAK_BYTES, "").lower())
    cpn = CLOCK_PER_NS.get(units.get(DRAM_CLOCK, "").lower())
    if bpc is None or cpn is None or not launches:
        return None
    peaks = [(l.get(PEAK_BYTES), l.get(DRAM_CLOCK)) for l in launches]
    if any(p is None or c is None for p, c in peaks):
        return None
    return sum(p * bpc * c * cpn for p, c in peaks) / len(peaks)


def finite(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def value_time(rec, metric):
    """A range's (value, GPU time) for a metric, the time None when not there."""
    m = rec.get("metrics") or {}
    v, t = m.get(metric), m.get(GPU_TIME)
    return (v if finite(v) else None), (t if finite(t) and t > 0 else None)


def ours_value(metric, recs, launches_per_range):
    """(value, ranges used): a ".sum" counter's mean per launch, anything else weighted by
    the ranges' GPU time (a plain mean when a range has none)."""
    pairs = [value_time(r, metric) for r in recs]
    pairs = [(v, t) for v, t in pairs if v is not None]
    if not pairs:
        return None, 0
    if crn.is_sum(metric):
        return sum(v for v, _ in pairs) / (len(pairs) * launches_per_range), len(pairs)
    if all(t for _, t in pairs):
        return sum(v * t for v, t in pairs) / sum(t for _, t in pairs), len(pairs)
    return sum(v for v, _ in pairs) / len(pairs), len(pairs)


def ours_rate(metric, recs):
    """(sum of values / sum of GPU time over the ranges that have both, ranges used)."""
    pairs = [value_time(r, metric) for r in recs]
    pairs = [(v, t) for v, t in pairs if v is not None and t is not None]
    if not pairs:
        return None, 0
    return sum(v for v, _ in pairs) / sum(t for _, t in pairs), len(pairs)


def settled(recs):
    """(the ranges to compare, how many were set aside): of each group the ranges without
    "settling", or all of the group's when every one of them is settling."""
    calm = {int(r.get("group", 0)) for r in recs if r.get("settling") is not True}
    kept = [r for r in recs if r.get("settling") is not True or int(r.get("group", 0)) not in calm]
    return kept, len(recs) - len(kept)


def ranges_with(recs, names):
    """How many of the ranges have a value for one of the names at least."""
    return sum(1 for r in recs if any(value_time(r, n)[0] is not None for n in names))


def ncu_value(metric, launches):
    return crn.aggregate(metric, launches, "time", per_launch=True)


def read_ncu_ranges(path):
    """(ncu range replay's rows by kernel, None), or (None, why the CSV is unusable)."""
    rows = [l["metrics"] for l in crn.read_ncu(path) if l["kernel"] == "range"]
    if len(rows) != len(KERNELS):
        return None, (f"{len(rows)} ranges in {path}, expected {len(KERNELS)} (one per kernel, "
                      f"in the order {', '.join(KERNELS)})")
    return dict(zip(KERNELS, rows)), None


def range_value(metric, row, launches):
    """A range row's value per launch: a ".sum" counter over the range's launches, anything
    else as it is; None without a row or a finite value."""
    v = (row or {}).get(metric)
    if not finite(v):
        return None
    return v / launches if crn.is_sum(metric) else v


def decided_by_range(name):
    return name in L2_STATE or name.startswith(L2_STATE_PREFIXES)


def judge(ours, ref, tol, slack):
    """"ok", "slack" (only through the absolute slack), "diff", or None (a side missing)."""
    if ours is None or ref is None:
        return None
    if ours == ref or (ref != 0 and abs(ours - ref) <= tol * abs(ref)):
        return "ok"
    if abs(ours - ref) <= slack:
        return "slack"
    return "diff"


MARK = {"ok": "ok", "slack": "ok (slack)", "diff": "DIFF", None: "-"}
DECIDED = {"ok": "ok ({})", "slack": "ok (slack, {})", "diff": "DIFF ({})"}


def groups_holding(plan, names):
    return {g for g, members in enumerate(plan["groups"]) if any(n in members for n in names)}


def not_seen(plan, names, seen):
    """"n/a (groups k of K seen)" for inputs spread over groups, k of them seen on the path."""
    holding = groups_holding(plan, names)
    return f"n/a (groups {len(holding & seen)} of {len(holding)} seen)"


class Tally:
    """Verdicts against one reference."""

    def __init__(self):
        self.compared = self.agree = self.by_slack = 0

    def add(self, verdict):
        if verdict is not None:
            self.compared += 1
            self.agree += verdict != "diff"
            self.by_slack += verdict == "slack"

    def as_dict(self):
        return {"compared": self.compared, "within": self.agree, "within_by_slack": self.by_slack}


class Table:
    """The rows of all paths; when ranged, each row against ncu's kernel replay and its range
    replay, the one decided_by_range names deciding (kernel replay where range has no value)."""

    def __init__(self, width, tol, abs_slack, ranged=False):
        self.width, self.tol, self.abs_slack, self.ranged = width, tol, abs_slack, ranged
        self.decided, self.kernel, self.range = Tally(), Tally(), Tally()
        self.by_range = self.not_seen = 0

    def header(self):
        head = (f"{'scope':<13} {'metric':<{self.width}} {'ranges':>6} {'ours':>14} {'ncu':>14} "
                f"{'ratio':>7}")
        if self.ranged:
            head += f" {'ncu range':>14} {'ratio':>7}  {'kernel':<10} {'range':<10}"
        print(head + "  within")

    def row(self, path, name, used, ours, ref, slack=None, why=None, fails=False, rref=None):
        """One row; with why, not compared: ours shows "left out" or "n/a" and the within
        column why; fails counts it as a gap in the run's coverage (exit status 1). rref:
        range replay's value, compared when the table is ranged."""
        slack = self.abs_slack if slack is None else slack
        verdict = None if why else judge(ours, ref, self.tol, slack)
        rverdict = None if why or not self.ranged else judge(ours, rref, self.tol, slack)
        by_range = rverdict is not None and decided_by_range(name)
        decided = rverdict if by_range else verdict
        self.decided.add(decided)
        self.kernel.add(verdict)
        self.range.add(rverdict)
        self.by_range += by_range
        self.not_seen += bool(fails)
        r = crn.ratio(ours, ref) if verdict is not None else None
        shown = ("left out" if why == "left out" else "n/a") if why else crn.fmt(ours)
        line = (f"{path:<13} {name:<{self.width}} {used if used else '-':>6} {shown:>14} "
                f"{crn.fmt(ref):>14} {crn.fmt(r) if r is not None else '-':>7}")
        if not self.ranged:
            said = "-" if why == "left out" else why or MARK[verdict]
            print(f"{line}  {said}")
            return
        rr = crn.ratio(ours, rref) if rverdict is not None else None
        said = "-" if why == "left out" else why or (
            DECIDED[decided].format("range" if by_range else "kernel") if decided else "-")
        print(f"{line} {crn.fmt(rref):>14} {crn.fmt(rr) if rr is not None else '-':>7}  "
              f"{MARK[verdict]:<10} {MARK[rverdict]:<10}  {said}")

    def note(self, path, text):
        print(f"{path:<13} {'':<{self.width}} {text}")


def short(part):
    """sm__<unit>.avg.pct_of_peak_sustained_elapsed -> <unit>."""
    return part.replace("sm__", "", 1).replace(".avg.pct_of_peak_sustained_elapsed", "")


def sm_throughput_rows(t, k, plan, recs, seen, lpr, mine, in_range):
    """The derived SM throughput row; in_range(metric): range replay's value, or None."""
    parts = plan["sm_of"]
    in_groups = set(group_metrics(plan))
    ref, rref = ncu_value(SM_THROUGHPUT, mine), in_range(SM_THROUGHPUT)
    if not parts:
        if SM_THROUGHPUT not in in_groups:  # neither itself nor its parts: not collected
            t.row(k, "sm_throughput (max of its parts)", 0, None, ref, rref=rref,
                  why="n/a (not collected)")
        return
    name = f"sm_throughput (max of {len(parts)} parts)"
    ours = {p: ours_value(p, recs, lpr) for p in parts}
    if any(v is None for v, _ in ours.values()):
        t.row(k, name, 0, None, ref, rref=rref, why=not_seen(plan, parts, seen), fails=True)
        missing = [p for p, (v, _) in ours.items() if v is None]
        t.note(k, f"no value for {len(missing)} of {len(parts)} parts, e.g. {missing[0]}")
        return
    top = max(parts, key=lambda p: ours[p][0])
    t.row(k, name, ranges_with(recs, parts), ours[top][0], ref, rref=rref)
    theirs = {p: ncu_value(p, mine) for p in parts}
    known = [p for p in parts if theirs[p] is not None]
    ncu_top = max(known, key=lambda p: theirs[p]) if known else None
    text = f"limiter: ours {short(top)} ({crn.fmt(ours[top][0])})"
    text += (f", ncu {short(ncu_top)} ({crn.fmt(theirs[ncu_top])})" if ncu_top
             else ", ncu n/a (no parts in the CSV)")
    t.note(k, text)


def l2_rows(t, k, plan, recs, seen, mine, in_range):
    """The derived L2 hit rate row; in_range(metric): range replay's value, or None."""
    ref, rref = ncu_value(L2_RATE, mine), in_range(L2_RATE)
    in_groups = set(group_metrics(plan))
    other = L2_SECTORS if L2_SECTORS in in_groups else L2_MISS
    if L2_HIT not in in_groups or other not in in_groups:
        t.row(k, L2_DERIVED, 0, None, ref, rref=rref, why="n/a (not collected)")
        return
    (h, _), (o, _) = ours_rate(L2_HIT, recs), ours_rate(other, recs)
    if h is None or o is None:
        t.row(k, L2_DERIVED, 0, None, ref, rref=rref,
              why=not_seen(plan, (L2_HIT, other), seen), fails=True)
        return
    whole = o if other == L2_SECTORS else h + o
    rate = 100.0 * h / whole if whole > 0 else None
    t.row(k, L2_DERIVED, ranges_with(recs, (L2_HIT, other)), rate, ref, rref=rref)


def first_known(*values):
    return next((v for v in values if v is not None), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("session", nargs="?")
    ap.add_argument("ncu_csv", nargs="?")
    ap.add_argument("--launches-per-scope", type=int, default=0,
                    help="launches in each range (default: ncu's launches of the kernel)")
    ap.add_argument("--tolerance-pct", type=float, default=5.0)
    ap.add_argument("--abs-slack", type=float, default=0.5)
    ap.add_argument("--bytes-slack-frac", type=float, default=1e-4,
                    help="absolute slack of byte counters, as a fraction of what DRAM could "
                         "move in the launch's time (default 1e-4)")
    ap.add_argument("--ncu-range", metavar="CSV",
                    help="ncu's range replay of the same program, one range per kernel: the "
                         "reference of the counters that depend on L2's contents")
    ap.add_argument("--ncu-range-launches", type=int, default=0,
                    help="launches in each of ncu's ranges (default --launches-per-scope)")
    ap.add_argument("--keep-settling", action="store_true",
                    help="compare the settling ranges too (the first after each configuration)")
    ap.add_argument("--metrics", action="store_true",
                    help="print the metric list for ncu (groups, left out, references), and exit")
    a = ap.parse_args()
    if not a.session or (not a.ncu_csv and not a.metrics):
        ap.print_usage()
        return 2
    ranges, other = read_session(a.session)
    plan = engine_plan(other)
    if plan is None:
        print("check_range_fidelity: the session has no range_profiler record", file=sys.stderr)
        return 2
    if a.metrics:
        print(",".join(ncu_metrics(plan)))
        return 0
    launches = crn.read_ncu(a.ncu_csv)
    if not launches:
        print("check_range_fidelity: no launches in the ncu CSV", file=sys.stderr)
        return 2
    units = read_ncu_units(a.ncu_csv)
    in_ranges = {}
    if a.ncu_range:
        in_ranges, why = read_ncu_ranges(a.ncu_range)
        if in_ranges is None:
            print(f"check_range_fidelity: {why}", file=sys.stderr)
            return 2
    rows = group_metrics(plan) + [m for m in plan["left_out"] if m not in group_metrics(plan)]
    width = max([len(m) for m in rows] + [len(L2_DERIVED), 40])
    t = Table(width, a.tolerance_pct / 100.0, a.abs_slack, ranged=bool(a.ncu_range))
    n_groups = len(plan["groups"])
    print(f"metric groups {n_groups} (group 0: {len(plan['groups'][0])} metrics), SM throughput "
          f"from {len(plan['sm_of'])} parts, left out {len(plan['left_out'])}; tolerance "
          f"{a.tolerance_pct:g} %, abs slack {a.abs_slack:g}, bytes slack "
          f"{a.bytes_slack_frac:g} x DRAM peak x GPU time per launch, L2 count slack "
          f"{a.abs_slack:g} % of L2 sectors per launch")
    if a.ncu_range:
        print(f"ncu range replay {a.ncu_range}: decides the L2 and DRAM counters and the L2 hit "
              "rate, kernel replay the rest")
    paths_missing = 0
    for k in KERNELS:
        print()
        recs, set_aside = ranges.get(k, []), 0
        if not a.keep_settling:
            recs, set_aside = settled(recs)
        mine = [l["metrics"] for l in launches if l["kernel"] == k]
        if not recs or not mine:
            print(f"{k}: {len(recs)} range_metrics records, {len(mine)} ncu launches: "
                  "not compared")
            paths_missing += 1
            continue
        lpr = a.launches_per_scope or len(mine)
        nr = a.ncu_range_launches or lpr
        in_range = functools.partial(range_value, row=in_ranges.get(k), launches=nr)
        seen = {int(r.get("group", 0)) for r in recs}
        peak = dram_peak_per_ns(mine, units)
        sectors = first_known(ours_value(L2_SECTORS, recs, lpr)[0], ncu_value(L2_SECTORS, mine),
                              in_range(L2_SECTORS))
        count_slack = a.abs_slack / 100.0 * sectors if sectors else None
        print(f"{k}: {len(recs)} ranges ({set_aside} settling set aside), groups "
              f"{' '.join(str(g) for g in sorted(seen))} seen "
              f"({len(seen)} of {n_groups}), {lpr} launches per range"
              f"{'' if a.launches_per_scope else ' (as ncu)'}; ncu {len(mine)} launches"
              f"{f', range replay {nr} per range' if a.ncu_range else ''}; DRAM "
              f"peak {crn.fmt(peak) + ' B/ns' if peak else 'n/a (no bytes slack)'}; L2 count "
              f"slack {crn.fmt(count_slack) + ' sectors' if count_slack else 'n/a (no sectors)'}")
        t.header()
        time_ours, _ = ours_value(GPU_TIME, recs, lpr)
        time_ns = time_ours if time_ours is not None else ncu_value(GPU_TIME, mine)
        counted = set(group_metrics(plan))
        for m in rows:
            ref, rref = ncu_value(m, mine), in_range(m)
            if m in counted:
                v, used = ours_value(m, recs, lpr)
                if v is None:  # a group not seen on the path, or no value where it was
                    holding = groups_holding(plan, (m,))
                    why = ("n/a (no value)" if holding & seen else
                           f"n/a (group {' '.join(str(g) for g in sorted(holding))} not seen)")
                    t.row(k, m, 0, None, ref, rref=rref, why=why, fails=True)
                    continue
                slack = None
                if crn.is_sum(m) and "bytes" in m and peak and time_ns:
                    slack = max(a.abs_slack, a.bytes_slack_frac * peak * time_ns)
                elif m in L2_COUNTS and count_slack:
                    slack = max(a.abs_slack, count_slack)
                t.row(k, m, used, v, ref, slack=slack, rref=rref)
            else:
                t.row(k, m, 0, None, ref, rref=rref, why="left out")
        sm_throughput_rows(t, k, plan, recs, seen, lpr, mine, in_range)
        l2_rows(t, k, plan, recs, seen, mine, in_range)
    print()
    for rec in other:
        print(json.dumps(rec))
    d = t.decided
    summary = {"compared": d.compared, "within": d.agree, "within_by_slack": d.by_slack,
               "not_seen": t.not_seen, "paths_missing": paths_missing,
               "tolerance_pct": a.tolerance_pct, "bytes_slack_frac": a.bytes_slack_frac}
    if a.ncu_range:  # "compared" and "within" are then against the reference that decided
        summary.update({"kernel_replay": t.kernel.as_dict(), "range_replay": t.range.as_dict(),
                        "decided_by_kernel": d.compared - t.by_range,
                        "decided_by_range": t.by_range})
    print(json.dumps(summary))
    ok = d.compared and d.agree == d.compared and not t.not_seen and not paths_missing
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
