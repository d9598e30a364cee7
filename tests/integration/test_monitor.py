#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-monitor as a whole process, on the fake libnvidia-ml (8 GPUs, two of
them in MIG mode with two instances each: 12 devices): the HTTP endpoints on
an ephemeral port, malformed and oversized requests on a raw socket, SIGHUP
(a new session directory), --window-s (segments sealed on time), SIGTERM (a
complete session, exit 0), the port taken (exit 1), bad flags (exit 2), no
driver (host only, with the reason), and per-process series for a child
process of the test that the fake's process list names (comm and user read
from the real /proc).

usage: test_monitor.py GPUFL_MONITOR FAKE_NVML_LIB SCRIPT_8GPUS LOG_ROOT
"""
import json
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import monitor_daemon as md
from monitor_daemon import check, failures, lines, session_ended, sessions, wait_for

MONITOR, FAKE_LIB, SCRIPT, LOG_ROOT = sys.argv[1:5]


def env_for(script):
    return md.env_for(script, FAKE_LIB)


def Daemon(args, script=SCRIPT, env_extra=None):
    return md.Daemon(MONITOR, FAKE_LIB, args, script, env_extra)


def fresh(name):
    return md.fresh(LOG_ROOT, name)


def test_serving_and_lifecycle():
    log_path = fresh("serving")
    d = Daemon(["--listen", "127.0.0.1:0", "--interval-ms", "100", "--window-s", "1",
                "--log-path", log_path])
    check(d.port is not None, "the daemon said where it listens: " + d.stderr())
    if d.port is None:
        d.p.kill()
        return
    # Readings arrive within a few intervals.
    check(wait_for(lambda: len(json.loads(d.get("/api/v1/gpus")[2])["gpus"]) == 12 and
                   all(g["ts_ns"] for g in json.loads(d.get("/api/v1/gpus")[2])["gpus"]), 10),
          "12 devices with readings")
    status, headers, body = d.get("/api/v1/gpus")
    check(status == 200 and headers.get("Content-Type") == "application/json", "api answers")
    api = json.loads(body)
    check(api["gpu_available"] is True and "gpu_why" not in api, "GPUs available")
    gpus = [g for g in api["gpus"] if g["uuid"].startswith("GPU-")]
    migs = [g for g in api["gpus"] if g["uuid"].startswith("MIG-")]
    check(len(gpus) == 8 and len(migs) == 4, "8 GPUs and 4 MIG devices")
    check(sorted(g["mig_profile"] for g in migs) == ["1g.10gb", "1g.10gb", "3g.40gb", "3g.40gb"],
          "MIG profiles")
    g3 = next(g for g in gpus if g["uuid"] == "GPU-00000003-fake")
    check(g3["pci_bus_id"] == "00000000:1B:00.0" and g3["model"] == "NVIDIA H100 80GB HBM3",
          "identity of GPU 3")
    check(g3["readings"]["mem_used_bytes"] == 4 * 1073741824, "GPU 3's memory used")
    check(g3["readings"]["fan_pct"] is None, "a reading the device lacks is null")
    check(api["host"].get("mem_total_bytes", 0) > 0, "host row")

    status, headers, body = d.get("/metrics")
    check(status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4"),
          "/metrics in the text format")
    check("# TYPE gpufl_gpu_memory_used_bytes gauge" in body, "a family with its TYPE")
    check('uuid="GPU-00000005-fake"' in body, "a series per GPU")
    status, headers, body = d.get("/metrics", {"Accept": "application/openmetrics-text; "
                                                         "version=1.0.0,text/plain;q=0.5"})
    check(headers["Content-Type"].startswith("application/openmetrics-text") and
          body.endswith("# EOF\n"), "OpenMetrics when asked for")
    m = re.search(r"^gpufl_monitor_scrapes_total(?:\{[^}]*\})? (\d+)", body, re.M)
    check(m and int(m.group(1)) >= 2, "scrapes counted")
    status, _, body = d.get("/healthz")
    check(status == 200 and body == "ok\n", "/healthz ok")
    check(d.get("/nope")[0] == 404, "404 for another path")
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % d.port, data=b"x",
                                 method="POST")
    try:
        urllib.request.urlopen(req, timeout=10)
        check(False, "POST refused")
    except urllib.error.HTTPError as e:
        check(e.code == 405, "405 for POST, got %d" % e.code)

    # Malformed and oversized requests: 4xx, and the daemon lives on.
    for what, data in [("garbage", b"GARBAGE\r\n\r\n"),
                       ("header without colon", b"GET /metrics HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n"),
                       ("bad version", b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n"),
                       ("oversized header", b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " +
                        b"a" * 40000 + b"\r\n\r\n"),
                       ("oversized url", b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\n\r\n")]:
        answer = d.raw(data)
        code = re.match(r"HTTP/1\.[01] (\d{3})", answer)
        # An unknown HTTP version is 505 Version Not Supported, the one 5xx that is right.
        want = ("505",) if what == "bad version" else ("400", "413", "414", "431")
        # A line that is no request at all is dropped without an answer by libmicrohttpd.
        if what == "garbage" and answer == "":
            code = re.match("(400)", "400")
        check(code is not None and code.group(1) in want,
              "%s gets %s: %r" % (what, "/".join(want), answer[:60]))
        check(d.p.poll() is None and d.get("/healthz")[0] == 200, "alive after " + what)

    # --window-s 1: segments sealed on time.
    first = sessions(log_path)[0]
    check(wait_for(lambda: os.path.exists(os.path.join(first, "device.log.1")) and
                   os.path.exists(os.path.join(first, "system.log.1")), 10),
          "device and system logs sealed into segments on time")
    if os.path.exists(os.path.join(first, "device.log.1")):
        check(lines(os.path.join(first, "device.log"))[-1]["type"] == "segment_end",
              "a sealed window ends with segment_end")

    # SIGHUP: a new session directory; the old one complete.
    d.p.send_signal(signal.SIGHUP)
    check(wait_for(lambda: len(sessions(log_path)) == 2, 10), "SIGHUP opens a new session")
    check(wait_for(lambda: session_ended(first), 10), "the session before SIGHUP ended cleanly")
    check(wait_for(lambda: d.get("/healthz")[0] == 200 and
                   len(json.loads(d.get("/api/v1/gpus")[2])["gpus"]) == 12, 10),
          "serving after SIGHUP")

    rc = d.stop(signal.SIGTERM)
    check(rc == 0, "SIGTERM exits 0, got %s" % rc)
    check(all(session_ended(s) for s in sessions(log_path)), "every session ended (session_end)")


def test_port_taken():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    d = Daemon(["--listen", "127.0.0.1:%d" % port, "--log-path",
                fresh("port_taken")])
    rc = d.p.wait(timeout=30)
    s.close()
    check(rc == 1, "port taken exits 1, got %s" % rc)
    check("Address already in use" in d.stderr(), "port taken says why: " + d.stderr())


def test_bad_flags():
    cases = [(["--interval-ms", "abc"], {}), (["--interval-ms", "0"], {}), (["--bogus"], {}),
             (["--listen", "nowhere"], {}), (["--listen", "127.0.0.1:70000"], {}),
             (["--window-s", "-1"], {}), (["--otlp-endpoint", "ftp://x"], {}), (["extra"], {}),
             (["--interval-ms"], {}), ([], {"GPUFL_MONITOR_WINDOW_S": "0"}),
             ([], {"GPUFL_MONITOR_DCGM_COMPAT": "maybe"})]
    for args, env in cases:
        e = env_for(SCRIPT)
        e.update(env)
        p = subprocess.run([MONITOR] + args, env=e, capture_output=True, text=True, timeout=30)
        check(p.returncode == 2, "%s %s exits 2, got %d" % (args, env, p.returncode))
        check(len(p.stderr.strip().splitlines()) == 1 and "gpufl-monitor:" in p.stderr,
              "%s %s: one line: %r" % (args, env, p.stderr))
    p = subprocess.run([MONITOR, "--help"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and "--window-s" in p.stdout and "SIGHUP" in p.stdout, "--help")
    p = subprocess.run([MONITOR, "--version"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and p.stdout.startswith("gpufl-monitor "), "--version")


def test_no_driver():
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write('{"init_error": 9, "gpus": []}')
    log_path = fresh("no_driver")
    d = Daemon(["--listen", "127.0.0.1:0", "--interval-ms", "100", "--log-path", log_path,
                "--otlp-endpoint", "http://collector:4318"], script=f.name,
               env_extra={"GPUFL_MONITOR_DCGM_COMPAT": "1"})
    check(d.port is not None, "host-only daemon serves: " + d.stderr())
    if d.port is not None:
        api = json.loads(d.get("/api/v1/gpus")[2])
        check(api["gpu_available"] is False and api["gpus"] == [], "host only")
        check("nvmlInit" in api.get("gpu_why", ""), "why no GPU: %r" % api.get("gpu_why"))
        check(wait_for(lambda: json.loads(d.get("/api/v1/gpus")[2])["host"].get(
            "mem_total_bytes"), 10), "host readings without a driver")
        check(d.get("/healthz")[0] == 200, "healthy without a driver")
        check("not built yet" not in d.stderr(), "OTLP push runs: " + d.stderr())
        check(wait_for(lambda: re.search(r'gpufl_monitor_otlp_exports_total\{[^}]*result="error"'
                                         r'[^}]*\} [1-9]', d.get("/metrics")[2]), 15),
              "host only: exports to an unreachable collector counted as errors")
        check(d.stop() == 0, "host-only daemon exits 0")
        caps = next(r for r in lines(os.path.join(sessions(log_path)[0], "device.log"))
                    if r["type"] == "capabilities")
        check("nvmlInit" in caps["features"]["nvml"]["why"], "the capability record says why")
    else:
        d.p.kill()
    os.unlink(f.name)


def script_with_processes(live_pid, gone_pid):
    """The 8-GPU script with a process list on GPU 0: a live process and one gone."""
    with open(SCRIPT) as f:
        script = json.load(f)
    script["gpus"][0]["samples"]["procs"] = [[[live_pid, 268435456], [gone_pid, 1048576]]]
    script["gpus"][0]["samples"]["proc_util"] = [[[live_pid, 33, 7], [gone_pid, 90, 90]]]
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(script, f)
    f.close()
    return f.name


def test_processes():
    child = subprocess.Popen(["sleep", "60"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    user = pwd.getpwuid(os.getuid()).pw_name
    script = script_with_processes(child.pid, gone.pid)
    log_path = fresh("processes")
    d = Daemon(["--listen", "127.0.0.1:0", "--interval-ms", "100", "--log-path", log_path],
               script=script)
    check(d.port is not None, "the daemon serves: " + d.stderr())
    try:
        if d.port is None:
            d.p.kill()
            return

        def gpu0():
            api = json.loads(d.get("/api/v1/gpus")[2])
            return next((g for g in api["gpus"] if g["uuid"] == "GPU-00000000-fake"), None)

        check(wait_for(lambda: gpu0() is not None and gpu0()["processes"], 10),
              "GPU 0's processes in /api/v1/gpus")
        procs = gpu0()["processes"] if gpu0() else []
        check([p["pid"] for p in procs] == [child.pid], "only the live process: %r" % procs)
        if procs:
            check(procs[0]["comm"] == "sleep" and procs[0]["user"] == user and
                  procs[0]["used_bytes"] == 268435456 and procs[0]["sm_util_pct"] == 33 and
                  procs[0]["mem_util_pct"] == 7,
                  "its comm, user, memory and utilization: %r" % procs[0])
        others = [g for g in json.loads(d.get("/api/v1/gpus")[2])["gpus"]
                  if g["uuid"] != "GPU-00000000-fake"]
        check(all(g["processes"] == [] for g in others), "no processes on the other devices")
        body = d.get("/metrics")[2]
        check("# TYPE gpufl_process_memory_used_bytes gauge" in body, "the process family's TYPE")
        series = re.findall(r"^gpufl_process_memory_used_bytes\{([^}]*)\} (\S+)$", body, re.M)
        check(len(series) == 1, "one process series: %r" % series)
        if series:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', series[0][0]))
            check(labels.get("gpu") == "0" and labels.get("uuid") == "GPU-00000000-fake" and
                  labels.get("pid") == str(child.pid) and labels.get("comm") == "sleep" and
                  labels.get("user") == user and series[0][1] == "268435456",
                  "the process series' labels and value: %r" % (series,))
            check(all(v for v in labels.values()), "no empty label: %r" % labels)
        check(d.stop() == 0, "exits 0")
        infos = [r for name in sorted(os.listdir(sessions(log_path)[0]))
                 if name.startswith("device.log")
                 for r in lines(os.path.join(sessions(log_path)[0], name))
                 if r["type"] == "process_info"]
        check([(r["pid"], r["comm"], r["user"]) for r in infos] == [(child.pid, "sleep", user)],
              "one process_info row, for the live process: %r" % infos)
    finally:
        child.kill()
        child.wait()
        os.unlink(script)


def test_xids():
    """Scripted XID events on GPU 1: counted per code on /metrics, one xid row each."""
    with open(SCRIPT) as f:
        script = json.load(f)
    script["gpus"][1]["xids"] = [[1, 79], [2, 79], [3, 31]]
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(script, f)
    f.close()
    uuid = script["gpus"][1]["uuid"]
    log_path = fresh("xids")
    d = Daemon(["--listen", "127.0.0.1:0", "--interval-ms", "100", "--log-path", log_path],
               script=f.name)
    check(d.port is not None, "the daemon serves: " + d.stderr())
    try:
        if d.port is None:
            d.p.kill()
            return

        def xids():
            body = d.get("/metrics")[2]
            found = {}
            for labels, value in re.findall(
                    r"^gpufl_gpu_xid_errors_total\{([^}]*)\} (\S+)$", body, re.M):
                lab = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
                found[(lab.get("uuid"), lab.get("xid"))] = float(value)
            return found

        want = {(uuid, "79"): 2.0, (uuid, "31"): 1.0}
        check(wait_for(lambda: xids() == want, 10), "the XID series on /metrics: %r" % xids())
        check(d.stop() == 0, "exits 0")
        rows = [r for name in sorted(os.listdir(sessions(log_path)[0]))
                if name.startswith("device.log")
                for r in lines(os.path.join(sessions(log_path)[0], name))
                if r["type"] == "xid"]
        check([r["code"] for r in rows] == [79, 79, 31], "one xid row per event: %r" % rows)
    finally:
        os.unlink(f.name)


for t in (test_bad_flags, test_port_taken, test_no_driver, test_serving_and_lifecycle,
          test_processes, test_xids):
    print("--", t.__name__, flush=True)
    t()
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
