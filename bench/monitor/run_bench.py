#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-monitor's own cost on the fake libnvidia-ml (8 GPUs, two in MIG mode:
12 devices), three processes side by side in one run:

  daemon     gpufl-monitor serving HTTP, scraped at a steady rate (default
             100 scrapes/s on one keep-alive connection, a Python load loop)
  unscraped  the same daemon serving HTTP, never scraped (a Prometheus scrape
             every 15 s is closer to this than to the load above)
  no-http    the same daemon with --listen none: the library's Monitor
             session and the snapshot alone, the reference this machine has
             (nvidia-smi dmon is not available without a GPU)
  idle       `sleep`: the floor of the measurement itself

CPU is utime+stime from /proc/<pid>/stat over the measured window (after a
warm-up), as a fraction of one core; memory is VmRSS sampled each second and
VmHWM at the end; scrape latency is from the request's send to the last byte
of the body, at p50/p99/max.

usage: run_bench.py --monitor BIN --fake-lib LIB [--script JSON] [--duration S]
                    [--rate N] [--interval-ms N] [--out DIR]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCRIPT = os.path.join(HERE, "..", "..", "tests", "integration", "monitor_8gpus.json")
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def start_daemon(args, monitor, env, log_path):
    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen([monitor, "--log-path", log_path] + args, env=env,
                         stdout=subprocess.DEVNULL, stderr=err)
    port = None
    deadline = time.time() + 20
    while time.time() < deadline and p.poll() is None:
        err.seek(0)
        text = err.read()
        if "logs in" in text:
            m = re.search(r"listening on http://[^:]+:(\d+)/", text)
            port = int(m.group(1)) if m else None
            break
        time.sleep(0.05)
    if p.poll() is not None:
        err.seek(0)
        sys.exit("gpufl-monitor did not start: " + err.read())
    return p, port


class Load(threading.Thread):
    """GET /metrics at a steady rate: request k is sent at t0 + k/rate (or as
    soon as the one before ends, when it ran late; the lateness is counted)."""

    def __init__(self, port, rate, seconds):
        super().__init__(daemon=True)
        self.port, self.rate, self.seconds = port, rate, seconds
        self.latencies, self.errors, self.late, self.body_bytes = [], 0, 0, 0

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        t0 = time.perf_counter()
        n = int(self.seconds * self.rate)
        for k in range(n):
            due = t0 + k / self.rate
            now = time.perf_counter()
            if now < due:
                time.sleep(due - now)
            elif now - due > 1 / self.rate:
                self.late += 1
            start = time.perf_counter()
            try:
                conn.request("GET", "/metrics")
                r = conn.getresponse()
                body = r.read()
                if r.status != 200:
                    self.errors += 1
                    continue
                self.latencies.append(time.perf_counter() - start)
                self.body_bytes = len(body)
            except (OSError, http.client.HTTPException):
                self.errors += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)


def pct(sorted_values, q):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--monitor", required=True)
    ap.add_argument("--fake-lib", required=True)
    ap.add_argument("--script", default=DEFAULT_SCRIPT)
    ap.add_argument("--duration", type=float, default=60, help="measured seconds (default 60)")
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--rate", type=float, default=100, help="scrapes per second (default 100)")
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--out", help="directory for result.json and the daemons' stderr")
    a = ap.parse_args()

    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    env["GPUFL_FAKE_NVML"] = os.path.abspath(a.script)
    env["GPUFL_NVML_LIBRARY"] = os.path.abspath(a.fake_lib)
    logs = tempfile.mkdtemp(prefix="gpufl-monitor-bench-")
    common = ["--interval-ms", str(a.interval_ms)]
    procs = {}
    procs["daemon"], port = start_daemon(common + ["--listen", "127.0.0.1:0"], a.monitor, env,
                                         os.path.join(logs, "daemon"))
    procs["unscraped"], _ = start_daemon(common + ["--listen", "127.0.0.1:0"], a.monitor, env,
                                         os.path.join(logs, "unscraped"))
    procs["no-http"], _ = start_daemon(common + ["--listen", "none"], a.monitor, env,
                                       os.path.join(logs, "no-http"))
    procs["idle"] = subprocess.Popen(["sleep", str(a.duration + a.warmup + 30)])
    time.sleep(a.warmup)

    load = Load(port, a.rate, a.duration)
    cpu0 = {k: cpu_seconds(p.pid) for k, p in procs.items()}
    wall0 = time.monotonic()
    load.start()
    rss_max = {k: 0 for k in procs}
    while load.is_alive():
        for k, p in procs.items():
            rss_max[k] = max(rss_max[k], status_kib(p.pid, "VmRSS"))
        load.join(1.0)
    wall = time.monotonic() - wall0
    result = {"duration_s": round(wall, 3), "rate_per_s": a.rate, "interval_ms": a.interval_ms,
              "load": "python http.client, one keep-alive connection, steady rate",
              "loadavg_end": open("/proc/loadavg").read().split()[:3], "processes": {}}
    for k, p in procs.items():
        cpu = cpu_seconds(p.pid) - cpu0[k]
        result["processes"][k] = {
            "cpu_core_fraction": cpu / wall, "cpu_s": cpu,
            "rss_max_kib": rss_max[k], "hwm_kib": status_kib(p.pid, "VmHWM"),
            "threads": threads(p.pid)}
    lat = sorted(load.latencies)
    result["scrape"] = {"count": len(lat), "errors": load.errors, "late": load.late,
                        "body_bytes": load.body_bytes, "p50_ms": pct(lat, 0.50) * 1e3,
                        "p99_ms": pct(lat, 0.99) * 1e3, "max_ms": (lat[-1] if lat else 0) * 1e3}
    for k, p in procs.items():
        p.send_signal(signal.SIGTERM)
    result["exit"] = {k: p.wait(timeout=30) for k, p in procs.items()}
    shutil.rmtree(logs, ignore_errors=True)

    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
    print("| process | CPU (of one core) | VmRSS max | VmHWM | threads |")
    print("|---|---|---|---|---|")
    for k, r in result["processes"].items():
        print("| %s | %.3f %% | %.2f MiB | %.2f MiB | %d |" % (
            k, 100 * r["cpu_core_fraction"], r["rss_max_kib"] / 1024, r["hwm_kib"] / 1024,
            r["threads"]))
    s = result["scrape"]
    print("\nscrapes %d (errors %d, late %d), body %d bytes: p50 %.3f ms, p99 %.3f ms, "
          "max %.3f ms" % (s["count"], s["errors"], s["late"], s["body_bytes"], s["p50_ms"],
                           s["p99_ms"], s["max_ms"]))
    ok = all(v in (0, -signal.SIGTERM) for v in result["exit"].values()) and s["errors"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
