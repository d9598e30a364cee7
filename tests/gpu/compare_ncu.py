#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks gpufl's occupancy records against Nsight Compute.

Runs tests/gpu/occupancy_kernels (kernels of deliberately different resource
use) twice, in separate processes: once alone, where gpufl's Trace engine
writes a kernel_config record per configuration, and once under ncu (itself a
CUPTI client, so gpufl's numbers never come from that run). Then matches the
launches by mangled kernel name, block size and dynamic shared memory and
compares, per launch: theoretical occupancy (to 0.1 percentage point),
theoretical active warps, the four block limits (warps, registers, shared
memory, blocks), the limiter, blocks per SM, registers per thread and static
and dynamic shared memory. The CUDA runtime's own occupancy answer (printed by
the program) is shown beside them.

Prints a table and exits 1 on any mismatch or missing launch, 2 when a run
itself failed. Python 3 standard library only.
"""
import argparse
import csv
import io
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpufl_log  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Raw metric names (ncu's Occupancy and LaunchStats sections).
REQUIRED_METRICS = [
    "sm__maximum_warps_per_active_cycle_pct",  # theoretical occupancy, %
    "sm__maximum_warps_avg_per_active_cycle",  # theoretical active warps per SM
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_blocks",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__block_size",
    "launch__grid_size",
]
# Shown when ncu has them; the run is retried without them if ncu refuses.
OPTIONAL_METRICS = [
    "launch__shared_mem_config_size",
    "launch__shared_mem_per_block_driver",
]
# gpufl's limiter names in tie order, with the ncu metric each comes from.
LIMITS = [
    ("warps", "limit_warps", "launch__occupancy_limit_warps"),
    ("registers", "limit_registers", "launch__occupancy_limit_registers"),
    ("shared_memory", "limit_smem", "launch__occupancy_limit_shared_mem"),
    ("blocks", "limit_blocks", "launch__occupancy_limit_blocks"),
]


def number(text):
    """A value of ncu's CSV: digits may carry thousands separators; 'inf' stays inf."""
    if text is None:
        return None
    t = str(text).strip().replace(",", "")
    if t == "" or t.lower() in ("n/a", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def close(a, b, tol=0.0):
    return a is not None and b is not None and abs(float(a) - float(b)) <= tol


def compare_launch(g, n):
    """(value, gpufl, ncu, ok, note) for one launch: g its kernel_config
    record, n ncu's metrics (numbers)."""
    checks = []
    if g.get("occupancy_unknown"):
        checks.append(("occupancy_unknown", g["occupancy_unknown"], None, False,
                       "gpufl could not ask the driver"))
    occ_g = None if g.get("occupancy") is None else 100.0 * float(g["occupancy"])
    occ_n = n["sm__maximum_warps_per_active_cycle_pct"]
    checks.append(("occupancy_pct", occ_g, occ_n, close(occ_g, occ_n, 0.1), ""))
    warps_n = n["sm__maximum_warps_avg_per_active_cycle"]
    checks.append(("active_warps", g.get("active_warps"), warps_n,
                   close(g.get("active_warps"), warps_n, 0.01), ""))
    block_cap = n["launch__occupancy_limit_blocks"]
    ncu_limits = {}
    for lname, gkey, metric in LIMITS:
        gv, nv = g.get(gkey), n[metric]
        ncu_limits[lname] = nv
        ok, note = close(gv, nv), ""
        # A resource that allows more blocks than the SM's block limit does not
        # limit; ncu and gpufl may cap that number differently.
        if (not ok and lname != "blocks" and None not in (gv, nv, block_cap)
                and float(gv) >= block_cap and float(nv) >= block_cap):
            ok, note = True, "both at or above the block limit: not limiting"
        # ncu gives the shared-memory limit under the carveout the driver
        # picked for that launch (launch__shared_mem_config_size), gpufl under
        # the largest one, as the driver's occupancy API assumes. They differ
        # only where shared memory does not limit, on either side.
        blocks_g = g.get("blocks_per_sm")
        if (not ok and lname == "shared_memory" and None not in (gv, nv, blocks_g)
                and float(gv) > blocks_g and float(nv) > blocks_g):
            ok, note = True, "not limiting on either side; ncu under the launch's carveout"
        checks.append(("limit_" + lname, gv, nv, ok, note))
    valid = {k: v for k, v in ncu_limits.items() if v is not None}
    order = [x[0] for x in LIMITS]
    ncu_limiter = min(valid, key=lambda k: (valid[k], order.index(k))) if valid else None
    note = "ncu's = its smallest limit, ties in gpufl's order"
    g_lim = {x[0]: g.get(x[1]) for x in LIMITS}
    if g.get("limiter") != ncu_limiter and None not in (ncu_limiter, g_lim.get(g.get("limiter"))) \
            and close(g_lim[g.get("limiter")], valid[ncu_limiter]):
        note += "; a tie: both name a resource that allows the same number of blocks"
    # Where limits tie, each tied resource binds: gpufl's limiter is right when
    # ncu's limit for it is ncu's smallest.
    same = g.get("limiter") == ncu_limiter
    if not same and valid and g.get("limiter") in valid and \
            close(valid[g["limiter"]], min(valid.values())):
        same, note = True, note + "; a tie in ncu's limits, gpufl's limiter among them"
    checks.append(("limiter", g.get("limiter"), ncu_limiter, same, note))
    ncu_blocks = min(valid.values()) if valid else None
    checks.append(("blocks_per_sm", g.get("blocks_per_sm"), ncu_blocks,
                   close(g.get("blocks_per_sm"), ncu_blocks), ""))
    # ncu reports registers as allocated: at least 16 a thread.
    regs = g.get("registers")
    allocated = None if regs is None else max(int(regs), 16)
    checks.append(("registers (allocated)", allocated, n["launch__registers_per_thread"],
                   close(allocated, n["launch__registers_per_thread"]),
                   f"compiled {regs}" if regs is not None and regs != allocated else ""))
    for what, metric in (("static_smem_bytes", "launch__shared_mem_per_block_static"),
                         ("dynamic_smem_bytes", "launch__shared_mem_per_block_dynamic")):
        checks.append((what, g.get(what), n[metric], close(g.get(what), n[metric]), ""))
    if g.get("breakdown_agrees") is False:
        checks.append(("breakdown_agrees", False, True, False,
                       "gpufl's limits disagree with its own blocks_per_sm"))
    return checks


def run(cmd, env=None, timeout=300):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env, timeout=timeout)
    return p.returncode, p.stdout


def parse_program_lines(text):
    """'launch key=value ...' lines of occupancy_kernels, and its session_dir."""
    launches, session = [], None
    for line in text.splitlines():
        if line.startswith("launch "):
            launches.append(dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv))
        elif line.startswith("session_dir="):
            session = line.split("=", 1)[1].strip()
    return launches, session


def parse_ncu_csv(text):
    """Rows of ncu's --csv --page raw output (header row, units row, data rows)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return [], {}
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], rows[1:]
    units = {}
    if body and not body[0][0].strip().isdigit():  # the units row
        units = dict(zip(header, body[0]))
        body = body[1:]
    return [dict(zip(header, r)) for r in body if len(r) == len(header)], units


def run_ncu(ncu, binary, log_dir, out_dir, metrics, env):
    csv_path = os.path.join(out_dir, "ncu.csv")
    if os.path.exists(csv_path):
        os.remove(csv_path)
    cmd = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--print-kernel-base",
           "mangled", "--target-processes", "all", "--metrics", ",".join(metrics),
           "--log-file", csv_path, binary, log_dir]
    rc, out = run(cmd, env=env, timeout=400)
    text = open(csv_path, encoding="utf-8", errors="replace").read() if os.path.exists(
        csv_path) else ""
    rows, units = parse_ncu_csv(text)
    if not rows:  # older ncu versions print the CSV on stdout
        rows, units = parse_ncu_csv(out)
    return rc, out, text, rows, units


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(REPO, ".devbin", "occupancy_kernels"),
                    help="the occupancy_kernels program (default: .devbin/occupancy_kernels)")
    ap.add_argument("--ncu", default=shutil.which("ncu") or "/usr/local/cuda/bin/ncu",
                    help="the ncu executable (default: from PATH)")
    ap.add_argument("--out", default="/tmp/gpufl-compare-ncu",
                    help="directory for the logs, ncu's CSV and the table (default: %(default)s)")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    failures = []

    def fail(msg):
        failures.append(msg)
        print("FAIL  " + msg, flush=True)

    if not os.access(args.binary, os.X_OK):
        print(f"FAIL  {args.binary} not found: run tests/gpu/build_for_device.sh first")
        return 2
    if not os.access(args.ncu, os.X_OK):
        print(f"FAIL  ncu not found ({args.ncu}); pass --ncu")
        return 2

    # Run 1: gpufl alone.
    rc, out = run([args.binary, os.path.join(args.out, "gpufl_logs")])
    open(os.path.join(args.out, "gpufl_run.txt"), "w").write(out)
    print(out, end="")
    if rc != 0:
        print(f"FAIL  occupancy_kernels exited {rc} (output above)")
        return 2
    launches, session_dir = parse_program_lines(out)
    if not session_dir or session_dir == "none":
        print("FAIL  occupancy_kernels printed no session directory")
        return 2
    session = gpufl_log.Session(session_dir)
    engine, trace_on, why = session.trace_state()
    print(f"INFO  gpufl session {session_dir}: engine {engine}, cupti_trace "
          f"{'on' if trace_on else 'off: ' + str(why)}")
    if not trace_on:
        fail(f"gpufl ran without Trace ({why}): nothing to compare")
    configs = session.kernel_configs()
    kernels = session.kernels()
    if not configs:
        fail(f"no kernel_config records in {session_dir}/device.log "
             f"({len(kernels)} kernel rows): the engine does not write occupancy yet?")

    # Run 2: the same program under ncu (gpufl inside it may lose CUPTI; that is fine).
    env = dict(os.environ)
    metrics = REQUIRED_METRICS + OPTIONAL_METRICS
    ncu_logs = os.path.join(args.out, "ncu_gpufl_logs")
    rc, nout, ncsv, rows, units = run_ncu(args.ncu, args.binary, ncu_logs, args.out, metrics, env)
    if not rows and re.search(r"metric", nout + ncsv, re.I):
        print("WARN  ncu returned no rows and mentions a metric: retrying without the optional "
              f"metrics {OPTIONAL_METRICS}")
        metrics = REQUIRED_METRICS
        rc, nout, ncsv, rows, units = run_ncu(args.ncu, args.binary, ncu_logs, args.out,
                                              metrics, env)
    gpufl_disabled = False
    if not rows:
        gpufl_disabled = True
        print("WARN  no rows from ncu with gpufl active in the program: retrying with "
              "GPUFL_DISABLED=1 to tell a gpufl/ncu conflict from an ncu problem")
        env2 = dict(env, GPUFL_DISABLED="1")
        rc2, nout2, ncsv2, rows, units = run_ncu(args.ncu, args.binary, ncu_logs, args.out,
                                                 metrics, env2)
        if rows:
            fail("ncu profiles the program only with gpufl disabled: gpufl's CUPTI use breaks "
                 "ncu (first attempt's output in ncu_stdout.txt)")
        nout += "\n--- retry with GPUFL_DISABLED=1 ---\n" + nout2
        rc = rc2
    open(os.path.join(args.out, "ncu_stdout.txt"), "w").write(nout)
    if rc != 0:
        fail(f"ncu (or the program under it) exited {rc}; see {args.out}/ncu_stdout.txt")
    if not rows:
        print(nout[-4000:])
        print("FAIL  ncu produced no kernel rows")
        return 2
    under_ncu_launches, under_ncu_session = parse_program_lines(nout)
    if under_ncu_session and under_ncu_session != "none" and os.path.isdir(under_ncu_session):
        try:
            e2, on2, why2 = gpufl_log.Session(under_ncu_session).trace_state()
            print(f"INFO  under ncu gpufl ran engine {e2}; cupti_trace "
                  f"{'on' if on2 else 'off: ' + str(why2)} (log written: {under_ncu_session})")
        except gpufl_log.LogError as e:
            fail(f"under ncu the program's gpufl log is unreadable: {e}")
    elif not gpufl_disabled:
        fail("under ncu the program wrote no gpufl session (gpufl must degrade, not stop)")
    if len(under_ncu_launches) != len(launches):
        fail(f"under ncu the program described {len(under_ncu_launches)} launches, alone "
             f"{len(launches)}")
    print("INFO  ncu units: " + ", ".join(f"{m}={units.get(m, '?')}" for m in metrics))

    # Match ncu rows to gpufl configs (by name, block size, dynamic shared
    # memory) and to the program's own lines (by launch order: the program
    # launches every configuration once, in order, and ncu numbers launches).
    by_key = {}
    names_of = {}  # config id -> the names it is known by (its own, its rows')
    for cid, c in configs.items():
        names_of[cid] = {c.get("name")}
    for k in kernels:
        cid = k.get("config")
        if cid in names_of:
            names_of[cid].update(x for x in (k.get("name_str"), k.get("demangled_str")) if x)
    for cid, c in configs.items():
        for nm in names_of[cid]:
            key = (nm, int(c.get("block_threads", -1)), int(c.get("dynamic_smem_bytes", -1)))
            by_key.setdefault(key, set()).add(cid)
    rows.sort(key=lambda r: number(r.get("ID")) or 0)
    if len(rows) != len(launches):
        fail(f"ncu profiled {len(rows)} kernels, the program described {len(launches)} launches")

    table = []
    matched = set()
    for i, r in enumerate(rows):
        name = r.get("Kernel Name", "")
        block = number(r.get("launch__block_size"))
        dyn = number(r.get("launch__shared_mem_per_block_dynamic"))
        key = (name, int(block or -1), int(dyn if dyn is not None else -1))
        rt = launches[i] if i < len(launches) else {}
        if rt and (int(rt["block"]), int(rt["dynamic_smem_bytes"])) != key[1:]:
            fail(f"ncu row {i} ({key}) is not the program's launch {i} ({rt.get('label')})")
            rt = {}
        label = rt.get("label", name)
        cands = by_key.get(key, set())
        g = {}
        if len(cands) == 1:
            cid = next(iter(cands))
            matched.add(cid)
            g = configs[cid]
        else:  # still shown, with ncu's and the runtime's values
            fail(f"{label}: {len(cands)} gpufl kernel_config records match {key}")
        n = {m: number(r.get(m)) for m in metrics}
        table.append((label, name, r, rt, g, n, compare_launch(g, n)))
    if not matched:
        fail("no launch could be compared")

    # The table: one block per launch, one line per compared value.
    lines = []
    lines.append(f"{'launch':<24} {'value':<20} {'gpufl':>12} {'ncu':>12} {'runtime':>10}  result")
    rt_keys = {"occupancy_pct": "occupancy_pct", "active_warps": "active_warps",
               "blocks_per_sm": "blocks_per_sm", "registers": "registers",
               "static_smem_bytes": "static_smem_bytes",
               "dynamic_smem_bytes": "dynamic_smem_bytes"}
    for label, name, r, rt, g, n, checks in table:
        extra = ""
        if n.get("launch__shared_mem_config_size") is not None:
            extra = f", smem config {n['launch__shared_mem_config_size']:.0f} B"
        if n.get("launch__shared_mem_per_block_driver") is not None:
            extra += f", driver smem/block {n['launch__shared_mem_per_block_driver']:.0f} B"
        lines.append(f"{label} ({name}, block {r.get('launch__block_size', '?')}, grid "
                     f"{r.get('launch__grid_size', '?')}, how {rt.get('how', '?')}{extra})")
        for what, gv, nv, ok, note in checks:
            rv = rt.get(rt_keys.get(what, ""), "")
            fmt = lambda v: "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
            lines.append(f"{'':<24} {what:<20} {fmt(gv):>12} {fmt(nv):>12} {str(rv):>10}  "
                         f"{'ok' if ok else 'MISMATCH'}{'  (' + note + ')' if note else ''}")
            if not ok and g:
                failures.append(f"{label}: {what} gpufl {gv} ncu {nv}")
    text = "\n".join(lines)
    print(text)
    open(os.path.join(args.out, "table.txt"), "w").write(text + "\n")

    print(f"\n{len(matched)} launches compared, {len(failures)} problems")
    for f in failures:
        print("  - " + f)
    print("RESULT " + ("PASS" if not failures else "FAIL") + " compare_ncu")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
