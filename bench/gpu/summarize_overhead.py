#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarizes trace_overhead results (bench/gpu/run_trace_overhead.sh) and
checks the Trace engine's overhead targets.

Usage: summarize_overhead.py RUNS_TXT [RUNS_TXT ...]

Reads the key=value lines of trace_overhead ("kind=run", "kind=process",
"kind=exit"). Per workload and configuration: the median time per kernel over
all timed runs, its spread, kernels per second. The cost a tracer adds is the
median over rounds of (tracer - untraced) within the same round, so that the
alternation cancels slow drifts of the machine. The noise band is the spread
(max - min) of the untraced per-round medians.

Targets (launch-bound workload unless said):
  1. Trace adds <= 1.0 us per kernel (both workloads)
  2. Trace's added cost is within 10% of the minimal CUPTI tracer's
  3. Trace sustains >= 300k kernels/s with zero drops and every kernel logged
  4. Monitor adds no measurable time: within the noise band (both workloads)
  5. Trace's peak RSS is <= 64 MiB above the untraced process's
Prints PASS/FAIL per target; exit 0 when all pass, 1 otherwise.
Python 3 standard library only.
"""
import shlex
import statistics
import sys
from collections import defaultdict

CONFIGS = ["untraced", "monitor", "trace", "minimal", "pcsampling"]  # pcsampling: when run
WORKLOADS = ["launch", "compute"]
TRACE_ADDED_MAX_US = 1.0
RATIO_MAX = 1.10
KERNELS_PER_S_MIN = 300_000
RSS_ADDED_MAX_MIB = 64


def parse(paths):
    lines = []
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            for raw in f:
                raw = raw.strip()
                if not raw.startswith("kind="):
                    continue
                try:
                    tokens = shlex.split(raw)
                except ValueError:
                    continue
                lines.append(dict(t.split("=", 1) for t in tokens if "=" in t))
    return lines


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    lines = parse(sys.argv[1:])
    runs = [ln for ln in lines if ln.get("kind") == "run"]
    procs = [ln for ln in lines if ln.get("kind") == "process"]
    exits = [ln for ln in lines if ln.get("kind") == "exit"]
    if not runs:
        print("FAIL  no kind=run lines: nothing to summarize")
        return 1

    # us/kernel per (workload, config, round): median of the reps of that process.
    per_round = defaultdict(lambda: defaultdict(list))
    all_us = defaultdict(list)
    all_kps = defaultdict(list)
    kernels_per_run = {}
    for r in runs:
        key = (r["workload"], r["config"])
        us = float(r["us_per_kernel"])
        per_round[key][int(r.get("round", 0))].append(us)
        all_us[key].append(us)
        all_kps[key].append(float(r["kernels_per_s"]))
        kernels_per_run[r["workload"]] = r["kernels"]
    round_med = {k: {rd: statistics.median(v) for rd, v in d.items()} for k, d in per_round.items()}

    def added(workload, config):
        """Median over rounds of (config - untraced) in the same round."""
        a, b = round_med.get((workload, config), {}), round_med.get((workload, "untraced"), {})
        diffs = [a[rd] - b[rd] for rd in a if rd in b]
        return (statistics.median(diffs), diffs) if diffs else (None, [])

    def noise(workload):
        v = list(round_med.get((workload, "untraced"), {}).values())
        return (max(v) - min(v)) if len(v) >= 2 else None

    results = []  # (target, PASS/FAIL/INCONCLUSIVE, detail)

    for w in WORKLOADS:
        if not any(k[0] == w for k in all_us):
            continue
        rounds = len(round_med.get((w, "untraced"), {}))
        if rounds < 5:
            print(f"WARN  only {rounds} rounds of the {w} workload: the targets want at least 5")
        print(f"\n== {w}-bound workload: {kernels_per_run[w]} kernels per timed run, "
              f"{rounds} rounds ==")
        print(f"{'config':<10} {'runs':>4} {'us/kernel':>10} {'min':>8} {'max':>8} "
              f"{'kernels/s':>11} {'added us/kernel':>16} {'added %':>8}")
        base = statistics.median(all_us[(w, "untraced")]) if all_us.get((w, "untraced")) else None
        for c in CONFIGS:
            v = all_us.get((w, c))
            if not v:
                print(f"{c:<10} {'0':>4}  (no runs)")
                continue
            add, _ = added(w, c)
            pct = None if add is None or not base else 100.0 * add / base
            print(f"{c:<10} {len(v):>4} {fmt(statistics.median(v)):>10} {fmt(min(v)):>8} "
                  f"{fmt(max(v)):>8} {statistics.median(all_kps[(w, c)]):>11.0f} "
                  f"{fmt(add if c != 'untraced' else 0.0):>16} {fmt(pct, 1):>8}")
        nb = noise(w)
        print(f"noise band (spread of untraced per-round medians): {fmt(nb)} us/kernel")
        t_add, t_diffs = added(w, "trace")
        m_add, m_diffs = added(w, "minimal")
        mon_add, _ = added(w, "monitor")
        if t_add is not None and m_add is not None:
            ratio = t_add / m_add if m_add > 0 else None
            print(f"trace-added / minimal-added: {fmt(ratio, 2)} "
                  f"(trace {fmt(t_add)} us, minimal {fmt(m_add)} us; per-round trace "
                  f"{', '.join(fmt(d) for d in t_diffs)})")

        # Target 1, both workloads.
        if t_add is None:
            results.append((f"1 Trace adds <= {TRACE_ADDED_MAX_US} us/kernel ({w})", "FAIL",
                            "no trace or untraced runs"))
        else:
            results.append((f"1 Trace adds <= {TRACE_ADDED_MAX_US} us/kernel ({w})",
                            "PASS" if t_add <= TRACE_ADDED_MAX_US else "FAIL",
                            f"{t_add:.3f} us/kernel"))
        # Target 4, both workloads.
        if mon_add is None or nb is None:
            results.append((f"4 Monitor adds no measurable time ({w})", "INCONCLUSIVE",
                            "needs monitor runs and >= 2 untraced rounds"))
        else:
            results.append((f"4 Monitor adds no measurable time ({w})",
                            "PASS" if abs(mon_add) <= nb else "FAIL",
                            f"added {mon_add:+.3f} us/kernel, noise band {nb:.3f} us"))
        if w != "launch":
            continue
        # Target 2.
        if t_add is None or m_add is None:
            results.append(("2 Trace added cost within 10% of minimal's", "FAIL", "missing runs"))
        elif nb is not None and m_add <= nb:
            results.append(("2 Trace added cost within 10% of minimal's", "INCONCLUSIVE",
                            f"minimal adds {m_add:.3f} us, inside the noise band {nb:.3f} us"))
        else:
            ok = t_add <= RATIO_MAX * m_add
            results.append(("2 Trace added cost within 10% of minimal's", "PASS" if ok else "FAIL",
                            f"ratio {t_add / m_add:.2f} (trace {t_add:.3f} us, minimal "
                            f"{m_add:.3f} us)"))
        # Target 3.
        kps = all_kps.get(("launch", "trace"), [])
        tprocs = [p for p in procs if p.get("config") == "trace"]
        bad = [p for p in tprocs if p.get("status") != "0"
               or p.get("kernels_logged") != p.get("expected")
               or p.get("cupti_dropped", "0") != "0" or p.get("ring_dropped", "0") != "0"]
        detail = (f"median {statistics.median(kps):.0f} kernels/s over {len(kps)} runs; "
                  f"{len(tprocs) - len(bad)} of {len(tprocs)} trace processes logged every "
                  f"kernel with zero drops") if kps else "no trace runs"
        for p in bad:
            detail += (f"; round {p.get('round')}: logged {p.get('kernels_logged')} of "
                       f"{p.get('expected')}, cupti_dropped {p.get('cupti_dropped')}, "
                       f"ring_dropped {p.get('ring_dropped')}, buffers_refused "
                       f"{p.get('buffers_refused')}, engine {p.get('engine')}")
        ok = bool(kps) and bool(tprocs) and not bad and \
            statistics.median(kps) >= KERNELS_PER_S_MIN
        results.append((f"3 Trace >= {KERNELS_PER_S_MIN // 1000}k kernels/s, zero drops",
                        "PASS" if ok else "FAIL", detail))

    # Peak RSS per configuration.
    print("\n== peak RSS (VmHWM) per process ==")
    rss = defaultdict(list)
    for p in procs:
        if p.get("rss_peak_kib", "-1") != "-1":
            rss[p["config"]].append(int(p["rss_peak_kib"]) / 1024.0)
    for c in CONFIGS:
        if rss.get(c):
            print(f"{c:<10} median {statistics.median(rss[c]):8.1f} MiB  "
                  f"(min {min(rss[c]):.1f}, max {max(rss[c]):.1f}, {len(rss[c])} processes)")
    if rss.get("trace") and rss.get("untraced"):
        add = statistics.median(rss["trace"]) - statistics.median(rss["untraced"])
        results.append((f"5 Trace RSS <= {RSS_ADDED_MAX_MIB} MiB above untraced",
                        "PASS" if add <= RSS_ADDED_MAX_MIB else "FAIL",
                        f"+{add:.1f} MiB (trace {statistics.median(rss['trace']):.1f} MiB, "
                        f"untraced {statistics.median(rss['untraced']):.1f} MiB absolute; the "
                        f"CUDA context itself is in both)"))
    else:
        results.append((f"5 Trace RSS <= {RSS_ADDED_MAX_MIB} MiB above untraced", "FAIL",
                        "no process lines for trace and untraced"))

    # What the Trace engine said about itself (its trace_stats record).
    for p in procs:
        if p.get("config") == "trace" and p.get("trace_stats") == "missing":
            print(f"WARN  trace round {p.get('round')}: no trace_stats record in the session log")
        elif p.get("config") == "trace" and p.get("unattributed", "0") not in ("0", "-1"):
            print(f"INFO  trace round {p.get('round')}: {p.get('unattributed')} records without "
                  f"a launch note (no scope/config)")

    # Minimal tracer sanity: it must have seen every kernel, or its figure is no floor.
    for p in procs:
        if p.get("config") == "minimal" and p.get("status") != "0":
            print(f"WARN  minimal tracer, round {p.get('round')}: kernel records "
                  f"{p.get('minimal_kernel_records')} of {p.get('expected')}, dropped "
                  f"{p.get('minimal_dropped')}, buffers refused {p.get('buffers_refused')}")
    failed_exits = [e for e in exits if e.get("rc") != "0"]
    for e in failed_exits:
        print(f"WARN  {e.get('config')} round {e.get('round')} exited {e.get('rc')}")

    print("\n== targets ==")
    for name, verdict, detail in results:
        print(f"{verdict:<12} {name}: {detail}")
    ok = all(v == "PASS" for _, v, _ in results) and not failed_exits
    print("RESULT " + ("PASS" if ok else "FAIL") + " trace_overhead")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
