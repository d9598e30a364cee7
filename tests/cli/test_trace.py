#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`gpufl trace -- PROGRAM` over the fake libcuda and libcupti (docs/trace.md).

trace_target (tests/cli/trace_target.c) is a CPU-only program whose cuInit is the fake's, which
dlopens CUDA_INJECTION64_PATH and calls InitializeInjection as the driver does. Checked: a
session per process with the engine asked and the run id in its header; exit codes (0, 3, death
by a signal, a signal sent to gpufl forwarded); the program's stdin, stdout and stderr untouched;
a program that forks and execs, or execs, a child that also uses CUDA (two sessions of one run);
a program that calls gpufl_init itself, before or after cuInit, through the injection's copy of
libgpufl or its own (one session); CUDA_INJECTION64_PATH or NVTX_INJECTION64_PATH preset; another
CUPTI client; GPUFL_* variables and flags; the default output directory; the injection library
found beside the binary; bad flags and --help.

usage: test_trace.py GPUFL TRACE_TARGET LIBGPUFL_INJECT LIBGPUFL FAKE_CUDA FAKE_CUPTI OUT_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

GPUFL, TARGET, INJECT, LIBGPUFL, FAKE_CUDA, FAKE_CUPTI, OUT = sys.argv[1:8]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def base_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUFL_") and k not in ("CUDA_INJECTION64_PATH",
                                                        "NVTX_INJECTION64_PATH")}
    env.update(GPUFL_CUDA_LIBRARY=FAKE_CUDA, GPUFL_CUPTI_LIBRARY=FAKE_CUPTI,
               GPUFL_INJECT_LIBRARY=INJECT, TRACE_TARGET_LIBGPUFL=LIBGPUFL)
    env.update(extra)
    return env


def out_dir(name):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    return d


def trace(args, env=None, stdin=None, cwd=None):
    return subprocess.run([GPUFL, "trace"] + args, env=env or base_env(), input=stdin,
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def sessions(d):
    """Each session directory under d: its header, device.log lines and kernel names."""
    found = []
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        path = os.path.join(d, name)
        device = os.path.join(path, "device.log")
        if not os.path.isfile(device):
            continue
        with open(device) as f:
            lines = [json.loads(l) for l in f if l.strip()]
        report = subprocess.run([GPUFL, "report", "--format", "json", path],
                                capture_output=True, text=True, timeout=60)
        kernels, scoped = set(), {}
        if report.returncode == 0:
            doc = json.loads(report.stdout)
            kernels = {k["name"] for k in (doc.get("kernels") or {}).get("hotspots") or []}
            # scope path -> the kernel names attributed to it
            scoped = {p["path"]: sorted(k["name"] for k in p["top_kernels"])
                      for p in (doc.get("scope_gpu") or {}).get("paths") or []}
        found.append({"path": path, "header": lines[0], "lines": lines, "kernels": kernels,
                      "scoped": scoped})
    return found


def record(s, type_):
    return [l for l in s["lines"] if l.get("type") == type_]


def engine_of(s):
    caps = record(s, "capabilities")
    return caps[0]["engine"] if caps else None


def one_session(name, r, d, kernels=None, engine="Trace"):
    found = sessions(d)
    if not check(len(found) == 1, f"{name}: one session, found {len(found)}; stderr: {r.stderr}"):
        return None
    s = found[0]
    check(s["header"].get("run_id"), f"{name}: the header has a run_id")
    check(engine_of(s) == engine, f"{name}: engine {engine_of(s)}, wanted {engine}")
    if kernels is not None:
        check(s["kernels"] == kernels, f"{name}: kernels {sorted(s['kernels'])}, wanted "
                                       f"{sorted(kernels)}")
    return s


# ---- a session, output, exit codes ----

d = out_dir("kernels")
r = trace(["--engine", "Trace", "--output", d, "--", TARGET, "kernels", "3", "0"])
check(r.returncode == 0, f"kernels: exit {r.returncode}: {r.stderr}")
check(r.stdout == "kernels 3\n", f"kernels: stdout {r.stdout!r}")
check(r.stderr.startswith("trace_target: to stderr\n"), f"kernels: stderr {r.stderr!r}")
s = one_session("kernels", r, d, {"kernel_0", "kernel_1", "kernel_2"})
if s:
    check(s["path"] in r.stderr and f"gpufl report {s['path']}" in r.stderr,
          f"kernels: stderr names the session and the report command: {r.stderr!r}")
    check(record(s, "session_end"), "kernels: the session ended at exit (session_end)")
    check(f"run {s['header']['run_id']}" in r.stderr, "kernels: stderr names the run")

d = out_dir("exit3")
r = trace(["-o", d, TARGET, "kernels", "1", "3"])  # "--" left out
check(r.returncode == 3, f"exit3: exit {r.returncode}")
one_session("exit3", r, d, {"kernel_0"})

for sig in (signal.SIGKILL, signal.SIGTERM):
    d = out_dir(f"signal{int(sig)}")
    r = trace(["-o", d, "--", TARGET, "signal", "1", str(int(sig))])
    check(r.returncode == 128 + sig, f"signal {sig}: exit {r.returncode}, wanted {128 + sig}")
    check(len(sessions(d)) == 1, f"signal {sig}: the session is on disk")

d = out_dir("echo")
r = trace(["-o", d, "--", TARGET, "echo"], stdin="line one\nline two\n")
check(r.returncode == 0 and r.stdout == "line one\nline two\n",
      f"echo: stdin reaches the program: {r.returncode} {r.stdout!r}")

# A signal sent to gpufl reaches the program.
d = out_dir("forward")
p = subprocess.Popen([GPUFL, "trace", "-o", d, "--", TARGET, "wait"], env=base_env(),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.stdout.readline() == "ready\n", "forward: the program started")
p.send_signal(signal.SIGTERM)
try:
    p.wait(timeout=30)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
check(p.returncode == 128 + signal.SIGTERM, f"forward: exit {p.returncode}, wanted 143")
p.stdout.close()
p.stderr.close()

# ---- processes: one session each, one run ----

def two_sessions(name, args):
    """Runs the target under gpufl trace; its two sessions, of one run, or None."""
    d = out_dir(name)
    r = trace(["-o", d, "--", TARGET] + args)
    check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
    found = sessions(d)
    if not check(len(found) == 2, f"{name}: two sessions, found {len(found)}"):
        return None
    check(found[0]["header"]["run_id"] == found[1]["header"]["run_id"], f"{name}: one run id")
    check("2 sessions" in r.stderr, f"{name}: stderr counts the sessions: {r.stderr!r}")
    return found


found = two_sessions("fork", ["fork", "2"])
if found:
    check(found[0]["header"]["pid"] != found[1]["header"]["pid"], "fork: two pids")
    check(sorted(sorted(s["kernels"]) for s in found) ==
          [["kernel_0", "kernel_1"], ["parent_0", "parent_1"]],
          f"fork: each process's kernels in its session: {[s['kernels'] for s in found]}")
found = two_sessions("exec", ["exec", "1"])  # a session per program image
if found:
    check(found[0]["header"]["pid"] == found[1]["header"]["pid"], "exec: one pid")

# ---- the program's own init: one session ----

for mode in ("init-shared-after", "init-static-after", "init-shared-first", "init-static-first"):
    d = out_dir(mode)
    r = trace(["-o", d, "--", TARGET, mode, "1"])
    check(r.returncode == 0 and r.stdout == "init 0\n",
          f"{mode}: its init succeeds: exit {r.returncode}, stdout {r.stdout!r}, {r.stderr}")
    injected = mode.endswith("after")
    s = one_session(mode, r, d)
    if not s:
        continue
    check(record(s, "session_end"), f"{mode}: the session ended")
    # The program's scope reaches the session whichever copy holds it (the static copy that
    # joined after cuInit forwards to libgpufl.so's), with its kernel.
    check(s["scoped"] == {"own_scope": ["before_shutdown_0"]},
          f"{mode}: own_scope and its kernel recorded: {s['scoped']}; {r.stderr}")
    joined = [e for e in record(s, "event") if e["code"] == "program_init_joined"]
    if mode == "init-shared-after":
        # Joined: its options noted, its shutdown does not end the session.
        check(len(joined) == 1 and "own_init" in joined[0]["message"],
              f"{mode}: the join is noted with the options asked: {joined}")
        check(s["kernels"] == {"before_shutdown_0", "after_shutdown_0"},
              f"{mode}: the program's shutdown left the session running: {s['kernels']}")
        check(s["header"]["app_name"] == "trace_target", f"{mode}: the injected session's name")
    elif mode == "init-static-after":
        check("another copy" not in r.stderr, f"{mode}: its copy forwards, nothing to say")
        check(s["kernels"] == {"before_shutdown_0", "after_shutdown_0"}, f"{mode}: {s['kernels']}")
    else:
        # The program's session came first; the injection stood down quietly.
        check(s["header"]["app_name"] == "own_init", f"{mode}: the program's own session")
        check(not joined, f"{mode}: nothing joined")
        check("before_shutdown_0" in s["kernels"], f"{mode}: {s['kernels']}")

# ---- other tools ----

d = out_dir("preset")
other = os.path.join(OUT, "libother_injector.so")
r = trace(["-o", d, "--", TARGET, "kernels", "1", "0"],
          env=base_env(CUDA_INJECTION64_PATH=other))
check(r.returncode == 2 and "CUDA_INJECTION64_PATH is already set" in r.stderr
      and "--force" in r.stderr and r.stdout == "",
      f"preset: refused with exit 2: {r.returncode} {r.stderr!r}")
r = trace(["--force", "-o", d, "--", TARGET, "kernels", "1", "0"],
          env=base_env(CUDA_INJECTION64_PATH=other))
check(r.returncode == 0, f"preset --force: exit {r.returncode}: {r.stderr}")
one_session("preset --force", r, d, {"kernel_0"})

d = out_dir("nvtx")
r = trace(["-o", d, "--", TARGET, "kernels", "1", "0"],
          env=base_env(NVTX_INJECTION64_PATH="/opt/other/libnvtx_tool.so"))
check(r.returncode == 0 and r.stderr.count("NVTX_INJECTION64_PATH is set to "
                                           "/opt/other/libnvtx_tool.so") == 1,
      f"nvtx: said once: {r.stderr!r}")

d = out_dir("subscribed")
r = trace(["-o", d, "--", TARGET, "subscribe", "1"])
check(r.returncode == 0 and r.stdout == "subscribed\n",
      f"subscribed: the program runs on unchanged: {r.returncode} {r.stdout!r}")
check(r.stderr.count("another CUPTI client") == 1, f"subscribed: why, once: {r.stderr!r}")
one_session("subscribed", r, d, engine="Monitor")

# ---- options ----

d = out_dir("env")
r = trace(["-o", d, "--stacks", "--", TARGET, "kernels", "1", "0"],
          env=base_env(GPUFL_APP_NAME="from_env", GPUFL_PROFILING_ENGINE="Monitor"))
s = one_session("env", r, d, engine="Monitor")
if s:
    opts = record(s, "options")[0]
    check(s["header"]["app_name"] == "from_env", "env: GPUFL_APP_NAME passes through")
    check(opts["enable_stack_trace"]["value"] == 1, "env: --stacks sets enable_stack_trace")
d = out_dir("flags")
r = trace(["-o", d, "--app-name", "flag_name", "--engine", "Trace", "--", TARGET, "kernels",
           "1", "0"], env=base_env(GPUFL_APP_NAME="from_env", GPUFL_PROFILING_ENGINE="Monitor"))
s = one_session("flags", r, d, {"kernel_0"}, engine="Trace")
if s:
    check(s["header"]["app_name"] == "flag_name", "flags: --app-name wins over the environment")

d = out_dir("flight")
r = trace(["-o", d, "--flight-recorder", "30", "--", TARGET, "kernels", "1", "0"])
check(r.returncode == 0 and sessions(d) == [] and "took no snapshot" in r.stderr,
      f"flight: nothing written without a snapshot: {r.returncode} {r.stderr!r}")

# The default output: a new gpufl-trace-<time> in the working directory; the injection library
# found beside the binary (a build tree's lib/) without GPUFL_INJECT_LIBRARY.
cwd = out_dir("default_dir")
os.makedirs(cwd)
env = base_env()
del env["GPUFL_INJECT_LIBRARY"]
r = trace(["--", TARGET, "kernels", "1", "0"], env=env, cwd=cwd)
made = [n for n in os.listdir(cwd) if n.startswith("gpufl-trace-")]
if check(r.returncode == 0 and len(made) == 1, f"default dir: {r.returncode} {made} {r.stderr}"):
    one_session("default dir", r, os.path.join(cwd, made[0]), {"kernel_0"})

# ---- usage ----

r = subprocess.run([GPUFL, "trace", "--help"], capture_output=True, text=True)
check(r.returncode == 0 and r.stdout.startswith("usage: gpufl trace") and "--flight-recorder"
      in r.stdout, f"--help: {r.returncode} {r.stdout[:80]!r}")
r = subprocess.run([GPUFL, "help", "trace"], capture_output=True, text=True)
check(r.returncode == 0 and "usage: gpufl trace" in r.stdout, "help trace")
for bad, why in ((["--bogus", "--", TARGET], "unknown option '--bogus'"),
                 (["--engine", "Fast", "--", TARGET], "unknown profiling engine 'Fast'"),
                 (["--flight-recorder", "soon", "--", TARGET], "--flight-recorder takes"),
                 (["--flight-recorder", "0", "--", TARGET], "--flight-recorder takes"),
                 (["--output"], "--output needs a value"),
                 (["--app-name", "", "--", TARGET], "--app-name is empty"),
                 ([], "no program given"),
                 (["--stacks", "--"], "no program given")):
    r = trace(bad)
    check(r.returncode == 2 and why in r.stderr and "see gpufl trace --help" in r.stderr,
          f"bad flags {bad}: exit {r.returncode}, stderr {r.stderr!r}")
d = out_dir("missing")
r = trace(["-o", d, "--", os.path.join(OUT, "no-such-program")])
check(r.returncode == 127 and "cannot run" in r.stderr, f"missing program: {r.returncode}")
env = base_env(GPUFL_INJECT_LIBRARY=os.path.join(OUT, "nowhere.so"))
r = trace(["--", TARGET, "kernels", "1", "0"], env=env)
check(r.returncode == 1 and "GPUFL_INJECT_LIBRARY" in r.stderr, f"no injection library: {r}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
