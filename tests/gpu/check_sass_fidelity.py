#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""SassMetrics fidelity: gpufl's per-instruction counts against Nsight Compute.

Reads a SassMetrics (or Deep) session of tests/gpu/pcs_kernels and an ncu CSV
of the same program run without gpufl (`ncu --csv --print-units base
--metrics <HW_METRICS>`), and compares per kernel:
  - warp instructions per launch (smsp__inst_executed.sum);
  - thread efficiency: thread instructions / (32 x warp instructions)
    (smsp__thread_inst_executed.sum over smsp__inst_executed.sum);
  - global sectors per launch (l1tex__t_sectors_pipe_lsu_mem_global_op_ld +
    _op_st);
  - sectors per request (those sectors over l1tex__t_requests_..._op_ld +
    _op_st; ours: sectors over the warp instructions of the instructions that
    moved global sectors).
Launches per kernel come from the session's launch rows. Each figure must be
within --tolerance (default 5 %) of ncu's. With --deep-session and
--pcs-session, also prints each kernel's stall-reason shares under Deep and
under PcSampling, and whether the dominant reason is the same.

Prints one JSON line per kernel and a summary; exit status 1 when a figure is
out of tolerance, 2 on unusable input.
Usage: check_sass_fidelity.py SESSION NCU_CSV [--tolerance 0.05]
                              [--deep-session DIR --pcs-session DIR] [--markdown FILE]
"""
import argparse
import csv
import json
import os
import sys

HW_METRICS = ("smsp__inst_executed.sum,smsp__thread_inst_executed.sum,"
              "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,"
              "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,"
              "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,"
              "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")


def read_log(session):
    """The device.log's lines as dicts, with the dict of interned strings."""
    path = os.path.join(session, "device.log")
    lines, names = [], {}
    try:
        with open(path) as f:
            for raw in f:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue  # an incomplete last line
                if rec.get("type") == "dict":
                    names.update(zip(rec["id"], rec["str"]))
                else:
                    lines.append(rec)
    except OSError as e:
        raise SystemExit(f"check_sass_fidelity: cannot read {path}: {e}")
    return lines, names


def rows(lines, rtype):
    """The rows of a batched record type, as dicts."""
    for rec in lines:
        if rec.get("type") != rtype:
            continue
        cols = [k for k, v in rec.items() if isinstance(v, list)]
        for i in range(len(rec[cols[0]]) if cols else 0):
            yield {k: rec[k][i] for k in cols}


def ours(session):
    lines, names = read_log(session)
    configs = {r["id"]: r["name"] for r in lines if r.get("type") == "kernel_config"}
    launches = {}
    for r in rows(lines, "launch"):
        name = configs.get(r.get("config"))
        if name:
            launches[name] = launches.get(name, 0) + 1
    per = {}
    for r in rows(lines, "sass_metric"):
        fn = names.get(r["function"], "?")
        k = per.setdefault(fn, {"inst": 0, "thread_inst": 0, "sectors": 0, "ideal": 0,
                                "requests": 0})
        k["inst"] += r["inst"] or 0
        k["thread_inst"] += r["thread_inst"] or 0
        k["sectors"] += r["sectors"] or 0
        k["ideal"] += r["sectors_ideal"] or 0
        if (r["sectors"] or 0) > 0:
            k["requests"] += r["inst"] or 0
    for fn, k in per.items():
        k["launches"] = launches.get(fn, 0)
    return per


def ncu(path):
    per = {}
    with open(path) as f:
        text = [l for l in f if l.startswith('"')]
    reader = csv.reader(text)
    header = next(reader, None)
    if not header or "Metric Name" not in header:
        raise SystemExit(f"check_sass_fidelity: {path} is not an ncu CSV")
    ki, mi, vi = header.index("Kernel Name"), header.index("Metric Name"), header.index("Metric Value")
    for row in reader:
        name = row[ki].split("(")[0]
        launch_id = row[header.index("ID")] if "ID" in header else None
        k = per.setdefault(name, {"launches": set(), "m": {}})
        k["launches"].add(launch_id)
        try:
            v = float(row[vi].replace(",", ""))
        except ValueError:
            continue
        k["m"][row[mi]] = k["m"].get(row[mi], 0.0) + v
    return per


def ratio(a, b):
    return a / b if b else float("nan")


def stall_shares(session):
    lines, names = read_log(session)
    per = {}
    for r in rows(lines, "pc_sample"):
        fn = names.get(r["function"], "?")
        reason = names.get(r["reason"], "?").replace("smsp__pcsamp_warps_issue_stalled_", "")
        per.setdefault(fn, {})
        per[fn][reason] = per[fn].get(reason, 0) + r["samples"]
    out = {}
    for fn, reasons in per.items():
        total = sum(reasons.values())
        top = sorted(reasons.items(), key=lambda kv: -kv[1])[:3]
        out[fn] = {"samples": total, "top": [(r, round(100.0 * n / total, 1)) for r, n in top]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("session")
    ap.add_argument("ncu_csv")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--deep-session")
    ap.add_argument("--pcs-session")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    mine, ref = ours(a.session), ncu(a.ncu_csv)
    if not mine:
        print(json.dumps({"error": "no sass_metric rows in the session"}))
        return 2
    failed = 0
    table = []
    for fn in ("divergent", "strided", "stream_triad", "fma_chains"):
        if fn not in mine or fn not in ref:
            print(json.dumps({"kernel": fn, "error": "missing in " +
                              ("the session" if fn not in mine else "the ncu CSV")}))
            failed += 1
            continue
        k, r = mine[fn], ref[fn]
        n_ref = len(r["launches"])
        m = r["m"]
        ref_sectors = m.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0) + \
            m.get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 0)
        ref_requests = m.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 0) + \
            m.get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 0)
        figures = {
            "inst_per_launch": (ratio(k["inst"], k["launches"]),
                                ratio(m.get("smsp__inst_executed.sum", 0), n_ref)),
            "thread_efficiency": (ratio(k["thread_inst"], 32 * k["inst"]),
                                  ratio(m.get("smsp__thread_inst_executed.sum", 0),
                                        32 * m.get("smsp__inst_executed.sum", 0))),
            "sectors_per_launch": (ratio(k["sectors"], k["launches"]), ratio(ref_sectors, n_ref)),
            "sectors_per_request": (ratio(k["sectors"], k["requests"]),
                                    ratio(ref_sectors, ref_requests)),
        }
        line = {"kernel": fn, "launches": k["launches"], "ncu_launches": n_ref,
                "ideal_sectors_per_request": round(ratio(k["ideal"], k["requests"]), 4)}
        for name, (o, n) in figures.items():
            dev = abs(o / n - 1) if n else float("inf")
            ok = dev <= a.tolerance
            failed += not ok
            line[name] = {"gpufl": round(o, 4), "ncu": round(n, 4),
                          "diff_pct": round(100 * (o / n - 1), 3) if n else None, "ok": ok}
            table.append((fn, name, o, n, line[name]["diff_pct"], ok))
        print(json.dumps(line))
    stalls = None
    if a.deep_session and a.pcs_session:
        deep, pcs = stall_shares(a.deep_session), stall_shares(a.pcs_session)
        stalls = {}
        for fn in ("divergent", "strided", "stream_triad", "fma_chains"):
            d, p = deep.get(fn), pcs.get(fn)
            same = bool(d and p and d["top"][0][0] == p["top"][0][0])
            stalls[fn] = {"deep": d, "pc_sampling": p, "same_dominant": same}
        print(json.dumps({"stalls_deep_vs_pcsampling": stalls}))
    print(json.dumps({"summary": {"figures_out_of_tolerance": failed,
                                  "tolerance": a.tolerance}}))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| kernel | figure | gpufl | ncu | diff | within 5 % |\n|---|---|---|---|---|---|\n")
            for fn, name, o, n, d, ok in table:
                f.write(f"| {fn} | {name} | {o:.6g} | {n:.6g} | {d:+.3f} % | "
                        f"{'yes' if ok else 'NO'} |\n")
            if stalls:
                f.write("\n| kernel | dominant stall, Deep | dominant stall, PcSampling | same |\n"
                        "|---|---|---|---|\n")
                for fn, s in stalls.items():
                    d = s["deep"]["top"][0] if s["deep"] else ("-", 0)
                    p = s["pc_sampling"]["top"][0] if s["pc_sampling"] else ("-", 0)
                    f.write(f"| {fn} | {d[0]} ({d[1]} %) | {p[0]} ({p[1]} %) | "
                            f"{'yes' if s['same_dominant'] else 'no'} |\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
