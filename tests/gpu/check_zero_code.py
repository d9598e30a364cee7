#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Judges the zero-code checks of run_zero_code_checks.sh on the GPU machine.

  torch REF_TRACE SESSION_DIR REPORT_JSON
      `gpufl trace -- python3 train_nvtx.py` against the same script under
      torch.profiler (profile_script.py): the kernels (count and the multiset
      of names) must be equal, GPU time per kernel name within 2 % (names
      whose total is at least 1 ms; shorter ones shown), and each NVTX range
      of the script must be a scope whose GPU time and kernel count equal
      torch.profiler's for the record_function mirroring it (kernels whose
      launch lies inside the range on the range's thread, the rule both use).
  program IN_PROCESS_DIR TRACED_DIR
      The same CUDA program recorded in-process (gpufl_init) and by
      `gpufl trace`: the same kernels, copies, memsets, syncs and NVTX scopes,
      GPU time per kernel name within 2 %.
  snapshot ROOT REASON
      A flight-recorder snapshot under ROOT left by a program that died: one
      session directory whose snapshot event names REASON, readable by the
      analysis, with the program's last NVTX scopes and their kernels.
Each prints a JSON summary and exits 1 when a check fails.
"""
import collections
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpufl_log  # noqa: E402

TOL_PCT = 2.0


def pct(a, b):
    return 100.0 * (a - b) / b if b else (0.0 if a == b else float("inf"))


class Verdicts:
    def __init__(self):
        self.checks, self.failed = [], 0

    def add(self, name, ok, detail):
        self.checks.append({"check": name, "ok": bool(ok), "detail": detail})
        self.failed += 0 if ok else 1

    def skip(self, name, why):
        """A check the session cannot answer, and why (not a pass, not a failure)."""
        self.checks.append({"check": name, "ok": None, "detail": why})

    def done(self, extra):
        print(json.dumps({"failed": self.failed, "checks": self.checks, **extra}, indent=1,
                         default=str))
        return 1 if self.failed else 0


def torch_trace(path):
    """Kernels (name, dur ns, correlation), launches by correlation (ts, tid)
    and user annotations (name, ts, end, tid) of a torch.profiler chrome trace."""
    with open(path, encoding="utf-8", errors="replace") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    kernels, launches, notes = [], {}, []
    for e in events:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") != "X":
            continue
        args = e.get("args", {}) or {}
        if cat == "kernel":
            kernels.append((e["name"], int(round(float(e["dur"]) * 1000)), args.get("correlation")))
        elif cat in ("cuda_runtime", "cuda_driver") and args.get("correlation") is not None:
            launches[args["correlation"]] = (float(e["ts"]), e.get("tid"))
        elif cat == "user_annotation":
            ts = float(e["ts"])
            notes.append((e["name"], ts, ts + float(e["dur"]), e.get("tid")))
    return kernels, launches, notes


def name_totals(pairs):
    out = collections.defaultdict(lambda: [0, 0])
    for name, dur in pairs:
        out[name][0] += 1
        out[name][1] += dur
    return out


def compare_kernel_names(v, ref_pairs, our_pairs, ref_label, our_label):
    ref, ours = name_totals(ref_pairs), name_totals(our_pairs)
    v.add("kernel count", len(ref_pairs) == len(our_pairs),
          f"{our_label} {len(our_pairs)}, {ref_label} {len(ref_pairs)}")
    diff = {n: (ours.get(n, [0])[0], ref.get(n, [0])[0]) for n in set(ref) | set(ours)
            if ours.get(n, [0])[0] != ref.get(n, [0])[0]}
    v.add("kernel names (multiset)", not diff,
          "equal" if not diff else {k: f"{a} vs {b}" for k, (a, b) in list(diff.items())[:20]})
    worst, shown = 0.0, []
    for n, (cnt, tot) in sorted(ref.items(), key=lambda kv: -kv[1][1]):
        if n not in ours:
            continue
        d = pct(ours[n][1], tot)
        judged = tot >= 1_000_000
        if judged:
            worst = max(worst, abs(d))
        shown.append({"name": n[:90], "calls": cnt, "ref_ms": round(tot / 1e6, 3),
                      "ours_ms": round(ours[n][1] / 1e6, 3), "diff_pct": round(d, 2),
                      "judged": judged})
    v.add(f"GPU time per kernel name within {TOL_PCT} %", worst <= TOL_PCT,
          f"worst {worst:.2f} % over names with >= 1 ms")
    return shown


def report_scopes(report_json):
    with open(report_json, encoding="utf-8") as f:
        doc = json.load(f)
    sg = doc.get("scope_gpu") or {}
    return sg.get("paths", []), doc


def leaf(path):
    for sep in ("/", "|", ">"):
        if path and sep in path:
            return path.rsplit(sep, 1)[1].strip()
    return path


def launch_rows_check(v, session, kernels, launches, notes, report_json):
    """A session whose kernels are launch rows (PcSampling, Deep: no GPU
    times, the capability record says why): the kernel count and names from
    the report's kernel_launches, each NVTX range's kernels from the launch
    rows' scopes."""
    _, doc = report_scopes(report_json)
    kl = doc.get("kernel_launches") or {}
    ours = collections.Counter()
    for c in kl.get("configs") or []:
        ours[c["name"]] += int(c["launches"])
    ref = collections.Counter(n for n, _, _ in kernels)
    v.add("kernel count (launch rows)", kl.get("count") == len(kernels),
          f"gpufl {kl.get('count')}, torch.profiler {len(kernels)}")
    diff = {n: f"{ours[n]} vs {ref[n]}" for n in set(ref) | set(ours) if ours[n] != ref[n]}
    v.add("kernel names (multiset, launch rows)", not diff and not kl.get("more_configs"),
          "equal" if not diff else dict(list(diff.items())[:20]))
    feat = (session.capabilities() or {}).get("features", {}).get("kernel_times", {})
    v.skip(f"GPU time per kernel name within {TOL_PCT} %",
           f"no kernel GPU times: {feat.get('why', 'the capability record has no kernel_times')}")
    scopes = session.scopes()
    ranges = {}
    for name in ("step", "forward", "backward", "optimizer"):
        spans = [(t0, t1, tid) for n, t0, t1, tid in notes if n == name]
        n_ref = sum(1 for _, _, corr in kernels if (at := launches.get(corr)) and
                    any(t0 <= at[0] <= t1 and tid == at[1] for t0, t1, tid in spans))
        n_ours = 0
        for r in session.rows.get("launch", []):
            s = scopes.get(r.get("scope"))
            if s and name in (s.get("path") or "").split("/"):
                n_ours += 1
        ranges[name] = {"torch": n_ref, "gpufl": n_ours}
        v.add(f"range {name}: kernels attributed (launch rows)", n_ours == n_ref and n_ref > 0,
              f"gpufl {n_ours}, torch {n_ref}")
    return v.done({"ranges": ranges, "kernel_times": feat})


def cmd_torch(ref_trace, session_dir, report_json):
    v = Verdicts()
    kernels, launches, notes = torch_trace(ref_trace)
    session = gpufl_log.Session(session_dir)
    if not session.kernels() and session.rows.get("launch"):
        return launch_rows_check(v, session, kernels, launches, notes, report_json)
    ours = [(gpufl_log.kernel_name(r), r["end_ns"] - r["start_ns"]) for r in session.kernels()]
    table = compare_kernel_names(v, [(n, d) for n, d, _ in kernels], ours, "torch.profiler",
                                 "gpufl trace")
    # The reference GPU time of each NVTX range: kernels launched inside one of
    # its instances on the instance's thread (inclusive of nested ranges).
    by_name = collections.defaultdict(list)
    for name, t0, t1, tid in notes:
        by_name[name].append((t0, t1, tid))
    ref_ranges = {}
    for name, spans in by_name.items():
        n = tot = 0
        for kname, dur, corr in kernels:
            at = launches.get(corr)
            if at and any(t0 <= at[0] <= t1 and tid == at[1] for t0, t1, tid in spans):
                n, tot = n + 1, tot + dur
        ref_ranges[name] = {"instances": len(spans), "kernels": n, "gpu_ms": round(tot / 1e6, 3)}
    paths, _ = report_scopes(report_json)
    our_ranges = collections.defaultdict(lambda: {"kernels": 0, "gpu_ns": 0, "paths": []})
    for p in paths:
        r = our_ranges[leaf(p.get("path") or "")]
        r["kernels"] += int(p.get("kernels") or 0)
        r["gpu_ns"] += int(p.get("gpu_ns") or 0)
        r["paths"].append(p.get("path"))
    ranges = {}
    for name in ("step", "forward", "backward", "optimizer"):
        ref = ref_ranges.get(name, {"instances": 0, "kernels": 0, "gpu_ms": 0.0})
        ours = our_ranges.get(name)
        ranges[name] = {"torch": ref, "gpufl": None if ours is None else
                        {"kernels": ours["kernels"], "gpu_ms": round(ours["gpu_ns"] / 1e6, 3),
                         "paths": ours["paths"]}}
        if ref["instances"] == 0:
            v.add(f"range {name}: in the reference", False, "torch.profiler has no such annotation")
            continue
        if ours is None:
            v.add(f"range {name}: a scope", False, "no scope of that name in the report")
            continue
        v.add(f"range {name}: kernels attributed", ours["kernels"] == ref["kernels"],
              f"gpufl {ours['kernels']}, torch {ref['kernels']}")
        d = pct(ours["gpu_ns"] / 1e6, ref["gpu_ms"]) if ref["gpu_ms"] else 0.0
        v.add(f"range {name}: GPU time within {TOL_PCT} %", abs(d) <= TOL_PCT or
              (ref["gpu_ms"] == 0 and ours["gpu_ns"] == 0),
              f"gpufl {ours['gpu_ns'] / 1e6:.3f} ms, torch {ref['gpu_ms']:.3f} ms ({d:+.2f} %)")
    return v.done({"kernels_by_name": table[:40], "ranges": ranges})


def session_summary(s):
    scopes = collections.Counter(x["name"] for x in s.scopes().values())
    return {
        "kernels": [(gpufl_log.kernel_name(r), r["end_ns"] - r["start_ns"]) for r in s.kernels()],
        "copies": len(s.rows.get("copy", [])), "memsets": len(s.rows.get("memset", [])),
        "syncs": len(s.rows.get("sync", [])), "scopes": dict(scopes),
    }


def only_session(root):
    dirs = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "**", "device.log"),
                                                         recursive=True))
    if len(dirs) != 1:
        raise gpufl_log.LogError(f"expected one session under {root}, found {len(dirs)}: {dirs}")
    return dirs[0]


def cmd_program(in_root, traced_root):
    v = Verdicts()
    a = session_summary(gpufl_log.Session(only_session(in_root)))
    b = session_summary(gpufl_log.Session(only_session(traced_root)))
    table = compare_kernel_names(v, a["kernels"], b["kernels"], "in-process", "gpufl trace")
    for k in ("copies", "memsets", "syncs", "scopes"):
        v.add(f"{k} equal", a[k] == b[k], f"gpufl trace {b[k]}, in-process {a[k]}")
    return v.done({"kernels_by_name": table, "scopes": b["scopes"]})


def cmd_snapshot(root, reason, gpufl_cli):
    v = Verdicts()
    dirs = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "**", "device.log"),
                                                        recursive=True))
    v.add("one snapshot written", len(dirs) == 1, dirs)
    if not dirs:
        return v.done({})
    s = gpufl_log.Session(dirs[-1])
    ev = [e for e in s.events() if e.get("code") == "flight_recorder_snapshot"]
    v.add("snapshot event", len(ev) == 1, ev)
    text = json.dumps(ev)
    v.add(f"reason names {reason}", reason in text, text[:300])
    scopes = collections.Counter(x["name"] for x in s.scopes().values())
    v.add("holds the last NVTX scopes", scopes.get("iteration", 0) > 0, dict(scopes))
    v.add("holds kernels", len(s.kernels()) > 0, len(s.kernels()))
    p = subprocess.run([gpufl_cli, "report", dirs[-1]], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    v.add("gpufl report reads it", p.returncode == 0, p.stderr[-500:] or p.stdout[:300])
    return v.done({"dir": dirs[-1], "scopes": dict(scopes), "kernels": len(s.kernels())})


def main():
    a = sys.argv[1:]
    try:
        if a[:1] == ["torch"] and len(a) == 4:
            return cmd_torch(*a[1:])
        if a[:1] == ["program"] and len(a) == 3:
            return cmd_program(*a[1:])
        if a[:1] == ["snapshot"] and len(a) == 4:
            return cmd_snapshot(*a[1:])
    except (gpufl_log.LogError, OSError, ValueError, KeyError) as e:
        print(json.dumps({"failed": 1, "error": f"{type(e).__name__}: {e}"}))
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
