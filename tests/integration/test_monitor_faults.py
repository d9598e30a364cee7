#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-monitor's faults (issue 21, point 6) on the fake libnvidia-ml: 1000
scrapers at once, idle (slowloris) connections, clients that close in the
middle of a response, the log disk full (a tiny tmpfs), a GPU that falls off
the bus mid-run (GPU_IS_LOST) and an NVML call that hangs on one GPU. Each
asserts that the daemon lives on, keeps serving, and that the session it had
written stays complete (every line whole JSON, session_end after SIGTERM).
The port taken and malformed requests are test_monitor.py's.

usage: test_monitor_faults.py GPUFL_MONITOR FAKE_NVML_LIB SCRIPT_8GPUS LOG_ROOT
"""
import json
import os
import re
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import monitor_daemon as md
from monitor_daemon import check, failures, sessions, wait_for

MONITOR, FAKE_LIB, SCRIPT, LOG_ROOT = sys.argv[1:5]
# Under AddressSanitizer the process's RSS is mostly the sanitizer's (shadow memory, the
# quarantine of freed blocks, per-thread state), not the daemon's: its bound is not judged there.
with open(MONITOR, "rb") as _f:
    SANITIZED = b"__asan_init" in _f.read()
os.makedirs(LOG_ROOT, exist_ok=True)
skips = []


def skip(what):
    skips.append(what)
    print("SKIP:", what, flush=True)


def daemon(name, extra=None, script=SCRIPT):
    log_path = md.fresh(LOG_ROOT, name)
    d = md.Daemon(MONITOR, FAKE_LIB, ["--listen", "127.0.0.1:0", "--interval-ms", "100",
                                      "--log-path", log_path] + (extra or []), script)
    check(d.port is not None, name + ": the daemon serves: " + d.stderr())
    return d, log_path


def scripted(name, change):
    """A copy of the 8-GPU script with change(gpus) applied."""
    with open(SCRIPT) as f:
        spec = json.load(f)
    change(spec["gpus"])
    path = os.path.join(LOG_ROOT, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def read_lines(path):
    """(records, torn): the whole JSON lines and the count of the others."""
    records, torn = [], 0
    with open(path) as f:
        for x in f:
            try:
                records.append(json.loads(x)) if x.strip() else None
            except ValueError:
                torn += 1
    return records, torn


def finish(d, log_path, what, torn_max=0):
    """SIGTERM: exit 0, every session ends with session_end, and every line is
    whole JSON except, with torn_max, that many per file (a write the full
    disk cut short: the writer closes it with a newline, so the damage stays
    inside that line)."""
    alive = d.p.poll() is None
    check(alive, what + ": the daemon is alive (exit %s): %s" % (d.p.poll(), d.stderr()[-400:]))
    if not alive:
        return
    check(d.stop() == 0, what + ": SIGTERM exits 0")
    ended = bool(sessions(log_path))
    for s in sessions(log_path):
        end = False
        for name in sorted(os.listdir(s)):
            if ".log" not in name:
                continue
            records, torn = read_lines(os.path.join(s, name))
            check(torn <= torn_max, "%s: %s has %d torn lines" % (what, name, torn))
            end = end or any(r.get("type") == "session_end" for r in records)
        ended = ended and end
    check(ended, what + ": the session ends with session_end")


def metric(body, name, labels=""):
    m = re.search(r"^%s\{[^}]*%s[^}]*\} (\S+)$" % (re.escape(name), labels), body, re.M) or \
        re.search(r"^%s (\S+)$" % re.escape(name), body, re.M)
    return float(m.group(1)) if m else None


def device_ts(d):
    return {g["uuid"]: g["ts_ns"] or 0 for g in json.loads(d.get("/api/v1/gpus")[2])["gpus"]}


def full_answer(raw):
    """A whole HTTP/1.x answer: status 200 and a body as long as Content-Length."""
    head, _, body = raw.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    return head.startswith(b"HTTP/1.1 200") and m and len(body) == int(m.group(1))


def test_many_scrapers():
    """1000 connections opened at once: each gets a whole answer or a clean
    refusal (refused, reset or closed before any byte); memory stays bounded."""
    d, log_path = daemon("many_scrapers")
    if d.port is None:
        return d.p.kill()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))
    rss_before = d.rss_kib()
    results = []
    go = threading.Event()

    def scraper():
        go.wait()
        try:
            s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
        except OSError:
            return results.append("refused")
        try:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            out = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
            results.append("full" if full_answer(out) else "closed" if not out else
                           "partial:" + out[:40].decode(errors="replace"))
        except OSError:
            results.append("reset")
        finally:
            s.close()

    threads = [threading.Thread(target=scraper) for _ in range(1000)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(120)
    kinds = {k: results.count(k) for k in set(results)}
    print("   1000 scrapers:", kinds, flush=True)
    check(len(results) == 1000, "every scraper finished")
    check(all(r in ("full", "refused", "reset", "closed") for r in results),
          "whole answers or clean refusals only: %s" % kinds)
    check(kinds.get("full", 0) >= 100, "most scrapers answered: %s" % kinds)
    rss_after = d.rss_kib()
    print("   RSS %d KiB before, %d KiB after" % (rss_before, rss_after), flush=True)
    if SANITIZED:
        print("   SKIP memory bound: an AddressSanitizer build (its own memory dominates RSS)",
              flush=True)
    else:
        check(rss_after < rss_before + 32 * 1024, "memory bounded: %d -> %d KiB" %
              (rss_before, rss_after))
    check(d.get("/healthz")[0] == 200, "healthy after 1000 scrapers")
    finish(d, log_path, "1000 scrapers")


def test_slow_and_vanishing_clients():
    """Idle connections (a request never finished) neither block scrapes nor
    stay open past the connection timeout; clients that reset the connection
    in the middle of a response leave the daemon serving."""
    d, log_path = daemon("slow_clients")
    if d.port is None:
        return d.p.kill()
    idle = []
    for i in range(50):
        s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " if i % 2 else b"")
        idle.append(s)
    t0 = time.monotonic()
    status = d.get("/metrics", timeout=5)[0]
    took = time.monotonic() - t0
    check(status == 200 and took < 2, "a scrape beside 50 idle connections: %d in %.2f s" %
          (status, took))

    for i in range(100):  # reset after the first bytes of the answer
        s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(100 if i % 2 else 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    check(d.p.poll() is None and d.get("/metrics")[0] == 200,
          "serving after 100 clients reset mid-response")

    def closed_by_server(s):
        try:
            s.settimeout(0.2)
            return s.recv(1) == b""
        except socket.timeout:
            return False
        except OSError:
            return True

    # The connection timeout is 10 s: idle ones are closed by then (slack for a busy host).
    check(wait_for(lambda: all(closed_by_server(s) for s in idle), 25),
          "idle connections closed by the server")
    for s in idle:
        s.close()
    finish(d, log_path, "slow clients")


def can_mount_tmpfs(path):
    os.makedirs(path, exist_ok=True)
    if os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", path],
                       capture_output=True)
    return r.returncode == 0


def test_disk_full():
    """The log disk full: writes fail and are counted on /metrics, sampling
    and serving go on; once space returns, SIGTERM still ends the session."""
    mnt = tempfile.mkdtemp(prefix="gpufl-monitor-full-")
    if not can_mount_tmpfs(mnt):
        os.rmdir(mnt)
        return skip("the log disk full: needs root and a tmpfs mount (mount -t tmpfs)")
    d = None
    try:
        log_path = os.path.join(mnt, "logs")
        filler = os.path.join(mnt, "filler")
        d = md.Daemon(MONITOR, FAKE_LIB, ["--listen", "127.0.0.1:0", "--interval-ms", "50",
                                          "--window-s", "1", "--log-path", log_path], SCRIPT)
        check(d.port is not None, "disk full: the daemon serves: " + d.stderr())
        if d.port is None:
            return d.p.kill()
        check(wait_for(lambda: sessions(log_path) and all(device_ts(d).values()), 10),
              "disk full: readings before the disk fills")
        with open(filler, "wb", buffering=0) as f:  # the rest of the disk
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        errors = lambda: metric(d.get("/metrics")[2], "gpufl_monitor_log_write_errors_total")
        check(wait_for(lambda: (errors() or 0) > 0, 15),
              "disk full: write errors counted on /metrics (%s)" % errors())
        before = device_ts(d)
        check(wait_for(lambda: all(device_ts(d)[u] > before[u] for u in before), 10),
              "disk full: sampling goes on (every device's reading newer)")
        check(d.get("/healthz")[0] == 200, "disk full: /healthz ok")
        os.unlink(filler)
        finish(d, log_path, "disk full", torn_max=1)
    finally:
        if d is not None and d.p.poll() is None:
            d.p.kill()
            d.p.wait()
        subprocess.run(["umount", mnt])
        os.rmdir(mnt)


def test_gpu_lost():
    """GPU 3 falls off the bus after a few samples: served as lost, the others
    keep going."""
    lost_uuid = "GPU-00000003-fake"

    def lose(gpus):
        next(g for g in gpus if g["uuid"] == lost_uuid)["lost_at_sample"] = 5

    d, log_path = daemon("gpu_lost", script=scripted("gpu_lost", lose))
    if d.port is None:
        return d.p.kill()
    api = lambda: {g["uuid"]: g for g in json.loads(d.get("/api/v1/gpus")[2])["gpus"]}
    check(wait_for(lambda: api()[lost_uuid]["lost"], 10), "GPU 3 served as lost")
    before = device_ts(d)
    check(wait_for(lambda: all(device_ts(d)[u] > before[u] for u in before if u != lost_uuid),
                   10), "the other devices keep sampling")
    check(device_ts(d)[lost_uuid] == before[lost_uuid], "no new reading of the lost GPU")
    body = d.get("/metrics")[2]
    check(metric(body, "gpufl_gpu_lost", 'uuid="%s"' % lost_uuid) == 1, "gpufl_gpu_lost 1")
    check(metric(body, "gpufl_gpu_lost", 'uuid="GPU-00000004-fake"') == 0,
          "gpufl_gpu_lost 0 for a GPU still there")
    finish(d, log_path, "GPU lost")


def test_nvml_hang():
    """One GPU's energy read hangs for 6 s: /metrics answers at once meanwhile
    (a scrape reads the snapshot, never NVML), and the other GPUs' readings
    and the host's keep coming (each device has its own sampling thread)."""
    slow_uuid = "GPU-00000002-fake"
    hang_s = 6

    def hang(gpus):
        g = next(g for g in gpus if g["uuid"] == slow_uuid)
        g["energy_delay_us"] = hang_s * 1000000
        g["samples"].setdefault("energy_mj", [1000])

    d, log_path = daemon("nvml_hang", script=scripted("nvml_hang", hang))
    if d.port is None:
        return d.p.kill()
    time.sleep(1)  # into the hang: the first sample reads the energy counter
    host_rows = lambda: metric(d.get("/metrics")[2], "gpufl_monitor_samples_total") or 0
    before, host_before = device_ts(d), host_rows()
    worst = 0
    t_end = time.monotonic() + hang_s - 2
    while time.monotonic() < t_end:
        t0 = time.monotonic()
        status = d.get("/metrics", timeout=5)[0]
        worst = max(worst, time.monotonic() - t0)
        check(status == 200, "a scrape during the hang answers 200")
        time.sleep(0.1)
    print("   slowest scrape during the hang: %.1f ms" % (worst * 1e3), flush=True)
    check(worst < 1.0, "scrapes answer within 1 s while a GPU hangs (%.3f s)" % worst)
    now = device_ts(d)
    others = [u for u in before if u != slow_uuid]
    check(all(now[u] > before[u] for u in others),
          "the other devices keep sampling while one GPU hangs (%s -> %s)" % (before, now))
    check(now[slow_uuid] == before[slow_uuid], "no new reading of the hanging GPU")
    check(host_rows() > host_before, "the host keeps sampling while one GPU hangs")
    check(d.get("/healthz")[0] == 200, "/healthz ok while one GPU hangs")
    finish(d, log_path, "NVML hang")


ALL = (test_gpu_lost, test_nvml_hang, test_slow_and_vanishing_clients, test_disk_full,
       test_many_scrapers)
for t in [t for t in ALL if t.__name__ in os.environ.get("ONLY", t.__name__)]:
    print("--", t.__name__, flush=True)
    t()
print("%d failures, %d skipped parts" % (len(failures), len(skips)))
sys.exit(1 if failures else 0)
