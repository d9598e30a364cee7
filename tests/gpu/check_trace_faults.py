#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs tests/gpu/trace_faults.cu in each of its modes on a GPU machine and
checks the session logs against what the program says it launched.

Usage: check_trace_faults.py BINARY OUTDIR
  BINARY  the built trace_faults program
  OUTDIR  where each mode's logs go (OUTDIR/<mode>/...)
Prints PASS/FAIL lines and exits 1 when any check fails.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpufl_log  # noqa: E402

MODES = ["attribution", "late", "fork", "noshutdown", "noshutdown-early"]
failures = 0


def check(what, ok, detail=""):
    global failures
    print(f"{'PASS' if ok else 'FAIL'}  {what}{': ' + detail if detail else ''}")
    failures += 0 if ok else 1


def session_dir(root):
    """The session directory gpufl made under root (the newest one)."""
    found = []
    for dirpath, _, files in os.walk(root):
        if "device.log" in files:
            found.append((os.path.getmtime(os.path.join(dirpath, "device.log")), dirpath))
    if not found:
        raise gpufl_log.LogError(f"no session under {root}")
    return max(found)[1]


def per_scope(session, rows):
    """Rows counted by the path of their scope ("" for none)."""
    scopes = session.scopes()
    counts = {}
    for r in rows:
        sid = r.get("scope")
        path = scopes[sid]["path"] if sid in scopes else ""
        counts[path] = counts.get(path, 0) + 1
    return counts


def run_mode(binary, outdir, mode):
    logdir = os.path.join(outdir, mode)
    os.makedirs(logdir, exist_ok=True)
    p = subprocess.run([binary, mode, logdir], capture_output=True, text=True, timeout=300)
    print(f"--- {mode}: exit {p.returncode}")
    sys.stdout.write(p.stdout)
    if p.stderr.strip():
        sys.stdout.write("stderr: " + p.stderr[-2000:] + "\n")
    expect = {}
    for line in p.stdout.splitlines():
        if line.startswith("expect "):
            key, value = line[7:].split("=", 1)
            expect[key] = int(value)
    wanted_code = expect.get("exit_code", 0)
    check(f"{mode}: exit code", p.returncode == wanted_code,
          f"{p.returncode}, expected {wanted_code}")
    try:
        s = gpufl_log.Session(session_dir(logdir))
    except gpufl_log.LogError as e:
        check(f"{mode}: session readable", False, str(e))
        return
    check(f"{mode}: no damaged lines", s.skipped_lines == 0, f"{s.skipped_lines} skipped")
    engine, on, why = s.trace_state()
    check(f"{mode}: engine Trace", engine == "Trace" and on, f"{engine} {why}")
    kernels = s.kernels()
    by_scope = per_scope(s, kernels)
    stats = (s.records.get("trace_stats") or [{}])[0]
    if not stats:
        check(f"{mode}: trace_stats record", False, "missing (session not ended?)")
    for key, value in expect.items():
        kind, _, arg = key.partition(":")
        if kind == "kernels" and arg:
            check(f"{mode}: kernels in scope {arg}", by_scope.get(arg, 0) == value,
                  f"{by_scope.get(arg, 0)} of {value}")
        elif kind == "kernels":
            check(f"{mode}: kernel rows", len(kernels) == value, f"{len(kernels)} of {value}")
        elif kind == "graph_launches":
            got = per_scope(s, s.rows.get("graph_launch", [])).get(arg, 0)
            check(f"{mode}: graph launches in {arg}", got == value, f"{got} of {value}")
            launches = {g["correlation"] for g in s.rows.get("graph_launch", [])}
            in_graph = [k for k in kernels if k.get("graph_id")]
            check(f"{mode}: graph kernels share their launch's correlation",
                  in_graph and all(k["correlation"] in launches for k in in_graph),
                  f"{len(in_graph)} graph kernels")
        elif kind == "allocs":
            got = per_scope(s, s.rows.get("alloc", [])).get(arg, 0)
            check(f"{mode}: allocation rows in {arg}", got == value, f"{got} of {value}")
        elif kind == "external":
            got = sum(1 for k in kernels if k.get("external_id") == int(arg))
            check(f"{mode}: kernels with external id {arg}", got == value, f"{got} of {value}")
        elif kind == "sync_covers":
            # The stream sync in scope arg waits for the kernel launched just
            # before it in that scope: it must end after the kernel and last
            # at least most of the kernel's time.
            scopes = s.scopes()
            in_scope = lambda r: r.get("scope") in scopes and scopes[r["scope"]]["path"] == arg
            stream = s.value("sync_type", "stream")
            syncs = [r for r in s.rows.get("sync", []) if in_scope(r) and r["sync_type"] == stream]
            ks = [k for k in kernels if in_scope(k)]
            ok = len(syncs) == value and len(ks) == 1
            detail = f"{len(syncs)} stream syncs, {len(ks)} kernels in {arg}"
            if ok:
                k, y = ks[0], syncs[0]
                kd, yd = k["end_ns"] - k["start_ns"], y["end_ns"] - y["start_ns"]
                ok = y["end_ns"] >= k["end_ns"] and yd >= 0.9 * kd
                detail = (f"kernel {kd / 1e6:.3f} ms ending at {k['end_ns']}, sync "
                          f"{yd / 1e6:.3f} ms ending at {y['end_ns']}")
            check(f"{mode}: sync in {arg} covers its kernel", ok, detail)
        elif kind == "devices":
            used = {k["device"] for k in kernels}
            check(f"{mode}: kernels on every GPU", len(used) == value, f"{sorted(used)}")
    if mode == "attribution":
        check(f"{mode}: every kernel attributed", stats.get("unattributed") == 0,
              f"unattributed={stats.get('unattributed')}")
        configs = s.kernel_configs()
        with_occ = [c for c in configs.values() if "blocks_per_sm" in c]
        check(f"{mode}: kernel configs with occupancy", configs and len(with_occ) == len(configs),
              f"{len(with_occ)} of {len(configs)}")
        disagree = [c["name"] for c in with_occ if not c.get("breakdown_agrees")]
        check(f"{mode}: breakdown agrees with the driver", not disagree, ", ".join(disagree))
        for c in with_occ:
            print(f"  config {c['id']}: {c['name'][:40]} block {c['block_threads']} regs "
                  f"{c.get('registers')} smem {c.get('static_smem_bytes')}+"
                  f"{c['dynamic_smem_bytes']} -> {c['blocks_per_sm']} blocks/SM, occupancy "
                  f"{c['occupancy']}, limiter {c.get('limiter')} (warps {c.get('limit_warps')} "
                  f"regs {c.get('limit_registers')} smem {c.get('limit_smem')} blocks "
                  f"{c.get('limit_blocks')})")
    check(f"{mode}: no CUPTI drops", stats.get("cupti_dropped", 0) == 0,
          f"cupti_dropped={stats.get('cupti_dropped')}")
    print(f"  trace_stats: {stats}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) == 2 else 2
    binary, outdir = sys.argv[1], sys.argv[2]
    for mode in MODES:
        try:
            run_mode(binary, outdir, mode)
        except Exception as e:  # one broken mode must not hide the others
            check(f"{mode}: ran", False, repr(e))
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
