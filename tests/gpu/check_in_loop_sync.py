#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_in_loop_sync.py - runs the in-loop sync program on the GPU and checks
what gpufl makes of it: `gpufl insights` must name the program's own
synchronization line (file:line, function) in an in-loop sync insight and a
sync attribution insight of the documented title shape, and the blocked time
the sync rows add up to must match the time the program measured around its
cudaStreamSynchronize calls (clock_gettime, an independent reference).
Also runs `gpufl report` and both `gpufl export` formats on the session.

usage: check_in_loop_sync.py PROGRAM GPUFL OUTDIR [trace|pcsampling]
Under pcsampling (its default activity mode, docs/design/pcs-with-trace.md)
the same insights must come from the launch rows and sync rows; the rules
that read kernel GPU times (gpu_idle, launch_bound) are skipped with the
reason, and the capability record's kernel_times says why it is off. With
GPUFL_PC_SAMPLING_TRACE=kernels (kernel_times on) those rules are judged.
Prints one line per check and RESULT at the end; exit 0 when all pass.
"""
import json
import os
import re
import subprocess
import sys

STEPS = 50
KERNELS_PER_STEP = 4
BLOCKED_TOLERANCE = 0.02  # relative, plus 20 us a call for the clock reads around the call


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    program, gpufl, out = sys.argv[1:4]
    engine = sys.argv[4] if len(sys.argv) == 5 else "trace"
    os.makedirs(out, exist_ok=True)
    failures = []

    def check(ok, what):
        print(("PASS  " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    run = subprocess.run([program, os.path.join(out, "logs"), str(STEPS), engine],
                         capture_output=True, text=True, timeout=120)
    sys.stderr.write(run.stderr)
    check(run.returncode == 0, f"program exit code {run.returncode}")
    facts = json.loads(run.stdout.strip().splitlines()[-1])
    print("program:", json.dumps(facts))
    session = facts["session"]
    base = os.path.basename(facts["file"])
    where = f"{base}:{facts['line']}"

    ins = subprocess.run([gpufl, "insights", "--format", "json", session],
                         capture_output=True, text=True, timeout=120)
    check(ins.returncode == 0, f"gpufl insights exit code {ins.returncode}: {ins.stderr.strip()}")
    with open(os.path.join(out, "insights.json"), "w") as f:
        f.write(ins.stdout)
    text = subprocess.run([gpufl, "insights", session], capture_output=True, text=True, timeout=120)
    with open(os.path.join(out, "insights.txt"), "w") as f:
        f.write(text.stdout)
    doc = json.loads(ins.stdout) if ins.returncode == 0 else {"insights": []}
    by_rule = {}
    for x in doc["insights"]:
        by_rule.setdefault(x["rule"], []).append(x)

    skipped = {s["rule"]: s.get("why") for s in doc.get("skipped", [])}
    print("skipped rules:", json.dumps(skipped))
    if engine == "pcsampling":
        caps = {}
        with open(os.path.join(session, "device.log")) as f:
            for line in f:
                if '"type":"capabilities"' in line:
                    caps = json.loads(line).get("features", {}).get("kernel_times", {})
                    break
        print("kernel_times:", json.dumps(caps))
        if caps.get("on"):  # GPUFL_PC_SAMPLING_TRACE=kernels or all: Trace's kernel rows
            for rule in ("gpu_idle", "launch_bound"):
                check(rule not in skipped, f"{rule} judged under PcSampling with kernel times")
        else:  # the default, late: kernels are launch rows
            for rule in ("gpu_idle", "launch_bound"):
                check("needs kernel GPU times" in (skipped.get(rule) or ""),
                      f"{rule} skipped under PcSampling, saying why ({skipped.get(rule)})")
            check("CUPTI" in (caps.get("why") or ""),
                  "capability kernel_times off, with CUPTI's reason")
    loops = [x for x in by_rule.get("in_loop_sync", []) if x.get("line") == facts["line"]]
    check(len(loops) == 1, f"one in_loop_sync insight at {where} (got {len(by_rule.get('in_loop_sync', []))} in all)")
    if loops:
        x = loops[0]
        print("in_loop_sync:", x["title"], "|", x["message"])
        check(x.get("file", "").endswith("/" + base) or x.get("file") == base, f"file {x.get('file')} is {base}")
        check(facts["function"] in x.get("function", ""), f"function {x.get('function')} names {facts['function']}")
        check(where in x["message"], f"message names {where}")
        check(x["title"].startswith(f"In-loop sync \u00d7 {STEPS} "), f"title counts {STEPS} calls")
        check("cudaStreamSynchronize" in x.get("source", ""), f"quoted source line: {x.get('source')!r}")
        median = next((e["value"] for e in x["evidence"] if e["name"] == "median_launches_between"), None)
        check(median == KERNELS_PER_STEP, f"median launches between syncs {median} == {KERNELS_PER_STEP}")

    attrs = [x for x in by_rule.get("sync_attribution", []) if x.get("line") == facts["line"]]
    check(len(attrs) == 1, f"one sync_attribution insight at {where}")
    if attrs:
        x = attrs[0]
        print("sync_attribution:", x["title"])
        shape = re.compile(r"^cudaStreamSynchronize \u00d7 (\d+) @ (\S+) \u00b7 \S+ \((\d+\.\d)% of session\)$")
        m = shape.match(x["title"])
        check(m is not None and int(m.group(1)) == STEPS and m.group(2) == where,
              f"title shape 'cudaStreamSynchronize \u00d7 {STEPS} @ {where} \u00b7 T (P% of session)'")
        blocked = next((e["value"] for e in x["evidence"] if e["name"] == "blocked_ns"), 0)
        ref = facts["blocked_ns"]
        err = abs(blocked - ref)
        check(err <= BLOCKED_TOLERANCE * ref + 20000 * STEPS,
              f"blocked time {blocked / 1e6:.3f} ms vs the program's own {ref / 1e6:.3f} ms "
              f"({100 * (blocked - ref) / ref:+.2f} %)")
        share = next((e["value"] for e in x["evidence"] if e["name"] == "session_share"), 0)
        sev = "HIGH" if share > 50 else "MEDIUM" if share > 10 else "LOW"
        check(x["severity"] == sev, f"severity {x['severity']} for {share:.1f} % of the session")

    rep = subprocess.run([gpufl, "report", session], capture_output=True, text=True, timeout=120)
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write(rep.stdout)
    check(rep.returncode == 0 and where in rep.stdout, f"gpufl report exit {rep.returncode}, names {where}")
    for fmt, name in (("chrome", "trace.json"), ("perfetto", "trace.perfetto-trace")):
        path = os.path.join(out, name)
        exp = subprocess.run([gpufl, "export", "--format", fmt, "--output", path, session],
                             capture_output=True, text=True, timeout=120)
        ok = exp.returncode == 0 and os.path.exists(path) and os.path.getsize(path) > 0
        check(ok, f"gpufl export --format {fmt}: exit {exp.returncode} {exp.stderr.strip()[:200]}")
        if ok and fmt == "chrome":
            with open(path) as f:
                events = json.load(f)["traceEvents"]
            # Trace: kernel slices; PcSampling: the launches (no GPU times)
            kernels = [e for e in events if "step_kernel" in e.get("name", "") and
                       (e.get("ph") == "X" or engine != "trace")]
            check(len(kernels) == STEPS * KERNELS_PER_STEP,
                  f"chrome trace has {len(kernels)} step_kernel events")

    print(f"RESULT {'PASS' if not failures else 'FAIL'}: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
