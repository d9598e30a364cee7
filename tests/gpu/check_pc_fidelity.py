#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PC sampling against independent references, on the GPU machine.

For each kernel of tests/gpu/pcs_kernels.cu, from one gpufl session run
under the PcSampling engine and one ncu run of the same program without
gpufl:
  - the stall-reason distribution gpufl recorded (pc_sample rows), and its
    dominant stall (the largest reason other than `selected`, which is the
    warp issuing, not stalling);
  - ncu's warp-state statistics of the same kernel (its per-reason
    `smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`, or
    its own PC-sampling counters `smsp__pcsamp_warps_issue_stalled_<reason>`
    when the CSV has them) and their dominant reason;
  - the sample count against what the period predicts: the kernels' GPU
    time x SM clock x SMs / 2^period. One sample per SM every 2^period
    cycles (docs/design/pc-sampling.md). The GPU time comes from the kernel
    rows of a Trace session of the same program and launches (--times;
    PcSampling sessions carry launch rows, not GPU times); the clock is
    given (--clock-mhz, nvidia-smi's SM clock under load).
Also every sample is accounted for: pc_window's samples = recorded +
non_user + dropped, and no drain found the hardware buffer full.

Prints one JSON object; exits 1 when a dominant stall disagrees, an
accounting check fails, or a kernel has no samples.
Usage: check_pc_fidelity.py SESSION_DIR NCU_CSV --clock-mhz MHZ --times TRACE_SESSION [--sms N]
"""
import argparse
import csv
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpufl_log import Session  # noqa: E402

KERNELS = ("divergent", "strided", "stream_triad", "fma_chains")
PREFIXES = ("smsp__pcsamp_warps_issue_stalled_", "smsp__average_warps_issue_stalled_")


def short(reason):
    """CUPTI's or ncu's metric name of a reason -> its bare name."""
    for p in PREFIXES:
        if reason.startswith(p):
            reason = reason[len(p):]
    reason = re.sub(r"_per_issue_active\.ratio$", "", reason)
    return {"no_instruction": "no_instructions"}.get(reason, reason)


def dominant(dist):
    stalls = {r: v for r, v in dist.items() if r != "selected" and v > 0}
    return max(stalls, key=stalls.get) if stalls else None


def shares(dist):
    total = sum(v for r, v in dist.items() if r != "selected")
    return {r: round(v / total, 4) for r, v in sorted(dist.items(), key=lambda kv: -kv[1])
            if r != "selected" and total > 0 and v / total >= 0.01}


def kernel_of(name):
    for k in KERNELS:
        if name and k in name:
            return k
    return None


def ours(session):
    dist = {k: {} for k in KERNELS}
    for r in session.rows.get("pc_sample", []):
        k = kernel_of(r.get("demangled_str") or r.get("function_str"))
        if k:
            reason = short(r["reason_str"])
            dist[k][reason] = dist[k].get(reason, 0) + r["samples"]
    return dist


def ncu(path):
    """kernel -> {reason: value}, from ncu --csv (one row per metric)."""
    avg, pcsamp = {k: {} for k in KERNELS}, {k: {} for k in KERNELS}
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]  # ncu prints its own notes first
    for row in csv.DictReader(lines):
        k = kernel_of(row.get("Kernel Name"))
        metric = row.get("Metric Name", "")
        try:
            value = float(row.get("Metric Value", "").replace(",", ""))
        except ValueError:
            continue
        if not k:
            continue
        if metric.startswith(PREFIXES[1]) and metric.endswith("_per_issue_active.ratio"):
            avg[k][short(metric)] = avg[k].get(short(metric), 0) + value
        elif metric.startswith(PREFIXES[0]) and not metric.endswith("_not_issued"):
            pcsamp[k][short(metric)] = pcsamp[k].get(short(metric), 0) + value
    return avg, pcsamp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("session")
    ap.add_argument("ncu_csv")
    ap.add_argument("--clock-mhz", type=float, required=True)
    ap.add_argument("--sms", type=int, default=None, help="SM count (default: gpu_info)")
    ap.add_argument("--times", default=None,
                    help="a Trace session of the same run, for the kernels' GPU time "
                         "(default: the sampled session's own kernel rows)")
    a = ap.parse_args()

    s = Session(a.session)
    failures = []
    cfg = s.records.get("pc_sampling", [])
    if not cfg or "error" in cfg[0]:
        print(json.dumps({"error": "no PC sampling in the session", "pc_sampling": cfg}))
        return 1
    period = cfg[0]["period"]
    sms = a.sms or next((g["sm_count"] for g in s.records.get("gpu_info", [])), None)
    dist = ours(s)
    avg, pcsamp = ncu(a.ncu_csv)
    gpu_ns = {k: 0 for k in KERNELS}
    for r in (Session(a.times) if a.times else s).kernels():
        k = kernel_of(r.get("demangled_str") or r.get("name_str"))
        if k:
            gpu_ns[k] += r["end_ns"] - r["start_ns"]
    out = {"period": period, "sms": sms, "clock_mhz": a.clock_mhz, "kernels": {}}
    for k in KERNELS:
        got = sum(dist[k].values())
        expected = gpu_ns[k] * 1e-9 * a.clock_mhz * 1e6 * (sms or 0) / 2 ** period
        ref = pcsamp[k] if pcsamp[k] else avg[k]
        row = {
            "samples": got,
            "expected_samples": round(expected),
            "samples_over_expected": round(got / expected, 4) if expected else None,
            "gpufl_dominant": dominant(dist[k]),
            "ncu_dominant": dominant(ref),
            "ncu_source": "pcsamp" if pcsamp[k] else "warp_state_ratio",
            "gpufl_shares": shares(dist[k]),
            "ncu_shares": shares(ref),
            "ncu_warp_state_dominant": dominant(avg[k]),
        }
        row["agree"] = row["gpufl_dominant"] is not None and \
            row["gpufl_dominant"] == row["ncu_dominant"]
        if got == 0:
            failures.append(f"{k}: no samples")
        elif not row["agree"]:
            failures.append(f"{k}: dominant {row['gpufl_dominant']} against ncu's "
                            f"{row['ncu_dominant']}")
        out["kernels"][k] = row
    w = s.rows.get("pc_window", [])
    acc = {c: sum(r[c] for r in w) for c in ("samples", "recorded", "non_user", "dropped",
                                                "buffer_full", "drains")}
    acc["unaccounted"] = acc["samples"] - acc["recorded"] - acc["non_user"] - acc["dropped"]
    out["accounting"] = acc
    out["stats"] = (s.records.get("pc_sampling_stats") or [None])[0]
    out["pc_sampling"] = {k: v for k, v in cfg[0].items() if k != "reasons"}
    if acc["buffer_full"]:
        failures.append(f"{acc['buffer_full']} drains found the hardware buffer full")
    if acc["unaccounted"] != 0:
        failures.append(f"{acc['unaccounted']} samples neither recorded nor counted")
    out["failures"] = failures
    print(json.dumps(out, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
