#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-monitor while processes come and go on every GPU, on the fake
libnvidia-ml: what the daemon was doing when it died of SIGSEGV on two H200s
(docs/gpu-results/monitor-crash.md). Four GPUs and a MIG GPU list a different
set of processes at each read: live children (plain, a 1.5 MiB environment,
SLURM_JOB_ID set, odd command names), children killed mid-run (their /proc
entries vanish while the sampler reads them), pids that never existed, more
processes than one NVML call takes (INSUFFICIENT_SIZE, then fewer), the same
pid on both lists, and utilization samples for pids not listed; XID events of
many codes arrive, and one GPU's first samples come back late. Meanwhile
scrapers hammer /metrics (both formats), /api/v1/gpus and /healthz, an OTLP
collector on loopback takes a push every interval, and SIGHUP reopens the logs.

The daemon must live through it, answer every request, exit 0 on SIGTERM,
and (in a sanitizer build) report nothing; every process it serves is one the
script listed, at most GPUFL_READINGS_MAX_PROCESSES per device.

usage: test_monitor_churn.py GPUFL_MONITOR FAKE_NVML_LIB LOG_ROOT [SECONDS]
"""
import http.server
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

import monitor_daemon as md
from monitor_daemon import check

MONITOR, FAKE_LIB, LOG_ROOT = sys.argv[1:4]
SECONDS = float(sys.argv[4]) if len(sys.argv) > 4 else 12.0
PROCS_MAX = 16  # GPUFL_READINGS_MAX_PROCESSES
CALL_ENTRIES = 256  # what nvml.c asks one processes call for (PROC_ENTRIES_MAX)
LISTS = 40  # process lists per GPU; read once a second, the last repeats
os.makedirs(LOG_ROOT, exist_ok=True)

def spawn_children(tmp):
    """(children, kinds): sleepers of several sorts, their pid -> kind."""
    children, kinds = [], {}
    odd = [b'q"uote', b"back\\slash", b"new\nline", b"\xff\xfebad-utf8", b"sp ace-and-long-name"]
    for i, name in enumerate(odd):
        link = os.path.join(tmp.encode(), name)
        os.symlink(b"/bin/sleep", link)
        children.append(subprocess.Popen([link, "600"]))
        kinds[children[-1].pid] = "odd"
    big = {k: v for k, v in os.environ.items()}
    for i in range(12):  # ~1.5 MiB: past what proc_attrib reads of environ
        big["GPUFL_CHURN_PAD_%d" % i] = "x" * (128 * 1024 - 64)
    big["SLURM_JOB_ID"] = "4242"  # past the cap: not seen
    for _ in range(4):
        children.append(subprocess.Popen(["sleep", "600"], env=big))
        kinds[children[-1].pid] = "big_environ"
    for j in range(4):
        env = dict(os.environ, SLURM_JOB_ID=str(1000 + j))
        children.append(subprocess.Popen(["sleep", "600"], env=env))
        kinds[children[-1].pid] = "slurm"
    for _ in range(12):
        children.append(subprocess.Popen(["sleep", "600"]))
        kinds[children[-1].pid] = "plain"
    return children, kinds


def gone_pids(n):
    """Pids of processes that have exited and been reaped."""
    out = []
    for _ in range(n):
        p = subprocess.Popen(["true"])
        p.wait()
        out.append(p.pid)
    return out


def churn_script(pool, unknown, rng):
    """Four GPUs and one in MIG mode with two instances, each listing a new
    set of processes at every read."""

    def entry(pid):
        return [pid, rng.choice([None, 0, 1 << 20, 268435456, (1 << 63) - 1])]

    def one_list(k):
        if k % 7 == 3:  # more than one call takes: counted, not listed
            return [[100000 + i, 4096] for i in range(CALL_ENTRIES + 44)]
        n = rng.choice([0, 1, 3, PROCS_MAX - 1, PROCS_MAX, PROCS_MAX + 5, 60])
        pids = rng.sample(pool + unknown, min(n, len(pool + unknown)))
        return [entry(p) for p in pids]

    def util_list(k, listed):
        if k % 5 == 4:  # more samples than one call takes: that read fails
            return [[pool[0], 50, 50]] * 300
        samples = [[p[0], rng.randrange(0, 250), rng.randrange(0, 250)] for p in listed[:20]]
        samples += [[p, 99, 99] for p in rng.sample(unknown, 3)]  # pids not listed
        return samples

    def samples(seed):
        procs = [one_list(k) for k in range(LISTS)]
        graphics = [rng.sample(procs[k], min(len(procs[k]), 4)) if k % 3 else one_list(k + seed)
                    for k in range(LISTS)]
        return {
            "util_gpu": [rng.randrange(0, 101) for _ in range(50)], "util_mem": [5],
            "mem_used": [1 << 30], "mem_free": [1 << 34], "temp_gpu": [50],
            "power_mw": [300000, 310000], "power_limit_mw": [700000], "clock_sm": [1980],
            "clock_gfx": [1980], "clock_mem": [2619], "throttle": [0, 4, 0, 68],
            "energy_mj": [1000000 + 1000 * i for i in range(200)],
            "procs": procs, "graphics_procs": graphics,
            "proc_util": [util_list(k, procs[k]) for k in range(LISTS)],
        }

    gpus = []
    for i in range(4):
        gpus.append({"name": "NVIDIA H200", "uuid": "GPU-churn-%d" % i,
                     "pci_bus_id": "00000000:%02X:00.0" % (0x18 + i), "cc": [9, 0],
                     "memory_total": 150 << 30, "mig_mode": 0, "samples": samples(i)})
    # XID events of more codes than are counted apart, while the lists churn.
    gpus[0]["xids"] = [[5 + 3 * k, 13 + k % 40] for k in range(60)]
    # A device whose first samples miss the pass's budget (its worker comes back late).
    gpus[1]["energy_delay_us"] = 250000
    gpus.append({"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-churn-mig",
                 "pci_bus_id": "00000000:40:00.0", "cc": [9, 0], "memory_total": 80 << 30,
                 "mig_mode": 1, "max_mig": 7, "samples": samples(9),
                 "xids": [[10 + k, 79 if k % 2 else 43, k % 2 + 1, 0] for k in range(8)],
                 "mig": [{"slot": s, "gi": s + 1, "name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
                          "uuid": "MIG-churn-%d" % s, "memory_total": 40 << 30,
                          "samples": samples(20 + s)} for s in range(2)]})
    return {"driver_version": "580.159.04", "nvml_version": "13.580.159.04",
            "cuda_driver_version": 13000, "gpus": gpus}


class Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that takes every push."""
    pushes = 0
    bad = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            json.loads(body)
            Collector.pushes += 1
        except ValueError as e:
            Collector.bad.append(str(e))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def main():
    rng = random.Random(20261127)
    tmp = tempfile.mkdtemp(prefix="gpufl-churn-")
    children, kinds = spawn_children(tmp)
    pool = [c.pid for c in children]
    unknown = gone_pids(6) + [4194305, 2147483647]  # exited, and never a pid
    script_path = os.path.join(LOG_ROOT, "churn.json")
    with open(script_path, "w") as f:
        json.dump(churn_script(pool, unknown, rng), f)
    listable = set(pool) | set(unknown) | set(range(100000, 100000 + CALL_ENTRIES + 44))

    otlp = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=otlp.serve_forever, daemon=True).start()
    log_path = md.fresh(LOG_ROOT, "churn")
    d = md.Daemon(MONITOR, FAKE_LIB,
                  ["--listen", "127.0.0.1:0", "--interval-ms", "20", "--window-s", "2",
                   "--log-path", log_path,
                   "--otlp-endpoint", "http://127.0.0.1:%d" % otlp.server_address[1]],
                  script_path)
    check(d.port is not None, "the daemon serves: " + d.stderr())
    if d.port is None:
        d.p.kill()
        return

    stop = threading.Event()
    answers = {"ok": 0, "error": []}
    seen = {}  # pid -> a served process object
    lock = threading.Lock()

    def scraper(path, headers=None):
        while not stop.is_set():
            try:
                status, _, body = d.get(path, headers=headers, timeout=20)
            except Exception as e:  # the daemon died or hung: said once below
                with lock:
                    answers["error"].append("%s: %r" % (path, e))
                return
            with lock:
                if status == 200 or (path == "/healthz" and status == 503):
                    answers["ok"] += 1
                else:
                    answers["error"].append("%s: %d %s" % (path, status, body[:200]))
            if path == "/api/v1/gpus" and status == 200:
                api = json.loads(body)
                for g in api["gpus"]:
                    check(len(g["processes"]) <= PROCS_MAX,
                          "%s serves at most %d processes: %d" % (g["uuid"], PROCS_MAX,
                                                                  len(g["processes"])))
                    for p in g["processes"]:
                        with lock:
                            seen[p["pid"]] = p

    scrapers = [threading.Thread(target=scraper, args=a) for a in [
        ("/metrics",), ("/metrics",),
        ("/metrics", {"Accept": "application/openmetrics-text; version=1.0.0"}),
        ("/api/v1/gpus",), ("/api/v1/gpus",), ("/healthz",)]]
    for t in scrapers:
        t.start()

    # Children die while they are listed; logs reopen now and then.
    start = time.time()
    victims = [c for c in children if kinds[c.pid] == "plain"][:8]
    next_hup = start + SECONDS / 3
    while time.time() - start < SECONDS and d.p.poll() is None:
        time.sleep(SECONDS / 20)
        if victims:
            v = victims.pop()
            v.kill()
            v.wait()
        if time.time() >= next_hup:
            d.p.send_signal(signal.SIGHUP)
            next_hup += SECONDS / 3
    stop.set()
    for t in scrapers:
        t.join(60)
    alive = d.p.poll() is None
    rc = d.stop() if alive else d.p.returncode
    err = d.stderr()
    check(alive, "the daemon lived through the churn (exit %r): %s" % (rc, err[-3000:]))
    check(rc == 0, "exits 0 on SIGTERM: %r" % rc)
    for word in ("AddressSanitizer", "runtime error:", "ThreadSanitizer", "LeakSanitizer"):
        check(word not in err, "no sanitizer report (%s): %s" % (word, err[-6000:]))
    check(not answers["error"], "every request answered: %r" % answers["error"][:5])
    check(answers["ok"] > 50, "the scrapers were served: %d" % answers["ok"])
    check(not (set(seen) - listable), "only listed pids served: %r" % (set(seen) - listable))
    live_kinds = {kinds[p] for p in seen if p in kinds}
    check({"plain", "odd", "slurm", "big_environ"} <= live_kinds,
          "every sort of child was served: %r" % live_kinds)
    slurm = [p for pid, p in seen.items() if kinds.get(pid) == "slurm"]
    check(slurm and all(p["slurm_job"] in ("1000", "1001", "1002", "1003") for p in slurm),
          "SLURM_JOB_ID read from environ: %r" % slurm[:2])
    big = [p for pid, p in seen.items() if kinds.get(pid) == "big_environ"]
    check(big and all(p["slurm_job"] is None for p in big),
          "a job id past the environ cap is not seen: %r" % big[:2])
    check(Collector.pushes > 10 and not Collector.bad,
          "OTLP pushes: %d, bad: %r" % (Collector.pushes, Collector.bad[:2]))
    sessions = md.sessions(log_path)
    check(len(sessions) >= 2, "SIGHUP reopened the logs: %r" % sessions)
    torn = 0
    for s in sessions:
        for name in os.listdir(s):
            with open(os.path.join(s, name)) as f:
                for x in f:
                    try:
                        json.loads(x)
                    except ValueError:
                        torn += 1
    check(torn == 0, "every log line is whole JSON: %d torn" % torn)
    check(all(md.session_ended(s) for s in sessions), "every session ended")
    otlp.shutdown()
    for c in children:
        c.kill()
        c.wait()


main()
sys.exit(md.exit_status("test_monitor_churn"))
