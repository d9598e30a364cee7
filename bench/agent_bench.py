#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-agent's CPU and its end-to-end lag while a host writes RATE kernels a second.

A writer seals one window of the session's device log every WINDOW seconds, RATE x WINDOW
kernels each (bench/gen_session.py's rows, written to a temporary name and renamed, as a sealed
segment appears to the agent). A gpufl-agent watches the log root and ships to a gpufl-server
(SQLite) on loopback. Measured over the run:
  - the agent's CPU (utime + stime of its process, /proc) in % of one core;
  - per window, the lag from its seal (the rename) to its being queryable on the server (the
    server's GET /api/v1/events/windows lists it), polled every 20 ms.
The issue's goals: the agent's CPU <= 2 % of one core at 100 k kernels/s; lag <= window + 2 s,
so the seal-to-queryable part <= 2 s.

usage: python3 bench/agent_bench.py [--rate N] [--window S] [--seconds S] [--server PATH]
                                    [--agent PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import gen_session  # noqa: E402
import server_harness as sh  # noqa: E402

SID = "20261127T120000.000Z-777-a9e1"


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=int, default=100000, help="kernels a second (default 100000)")
    ap.add_argument("--window", type=float, default=1.0, help="seconds a window (default 1)")
    ap.add_argument("--seconds", type=float, default=30, help="how long to write (default 30)")
    ap.add_argument("--server", default="build-dev/cmd/gpufl-server/gpufl-server")
    ap.add_argument("--agent", default="build-dev/cmd/gpufl-agent/gpufl-agent")
    a = ap.parse_args()
    sh.SERVER = a.server
    n_windows = int(a.seconds / a.window)
    per_window = int(a.rate * a.window)
    print("generating %d windows of %d kernels" % (n_windows, per_window), flush=True)
    texts = ["".join(line + "\n" for line in seg)
             for seg in gen_session.segments(n_windows * per_window, session_id=SID,
                                             segment_kernels=per_window)]
    tmp = tempfile.mkdtemp(prefix="gpufl-agent-bench.")
    root = os.path.join(tmp, "logs")
    session = os.path.join(root, SID)
    os.makedirs(session)
    db = sh.SqliteDb(os.path.join(tmp, "server.db"))
    sh.new_workspace(db.url, "bench")
    key = sh.new_key(db.url, "bench", "admin")
    with open(os.path.join(tmp, "key"), "w") as f:
        f.write(key + "\n")
    srv = sh.Server(db.url, log_dir=tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    agent = subprocess.Popen([a.agent, "--log-path", root, "--server",
                              "http://127.0.0.1:%d" % srv.port, "--api-key-file",
                              os.path.join(tmp, "key"), "--listen", "none"],
                             stderr=subprocess.DEVNULL, env=env)
    sealed, seen = {}, {}
    done = threading.Event()

    def poll():
        url = ("http://127.0.0.1:%d/api/v1/events/windows?session_id=%s&channel=device"
               % (srv.port, SID))
        req = urllib.request.Request(url, headers={"Authorization": "Bearer " + key})
        while not done.is_set():
            with urllib.request.urlopen(req, timeout=10) as r:
                doc = json.loads(r.read())
            now = time.monotonic()
            for w in doc["windows"]:
                seen.setdefault(w["sequence"], now)
            if len(seen) >= len(texts):
                break
            time.sleep(0.02)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    time.sleep(1.0)  # the agent's first pass over the empty root
    cpu0, wall0 = cpu_seconds(agent.pid), time.monotonic()
    for i, text in enumerate(texts):
        next_at = wall0 + (i + 1) * a.window
        name = "device.log" + (".%d" % i if i else "")
        part = os.path.join(session, "." + name + ".tmp")
        with open(part, "w") as f:
            f.write(text)
        os.rename(part, os.path.join(session, name))
        sealed[i] = time.monotonic()
        time.sleep(max(0.0, next_at - time.monotonic()))
    poller.join(timeout=60)
    done.set()
    cpu1, wall1 = cpu_seconds(agent.pid), time.monotonic()
    agent.terminate()
    agent.wait(timeout=60)
    srv.stop()
    lags = [seen[i] - sealed[i] for i in sealed if i in seen]
    missing = len(sealed) - len(lags)
    cpu_pct = 100 * (cpu1 - cpu0) / (wall1 - wall0)
    bytes_total = sum(len(t) for t in texts)
    print("kernels written: %d in %d windows of %.1f s (%.1f MB of log, %.0f kernels/s)"
          % (n_windows * per_window, n_windows, a.window, bytes_total / 1e6,
             n_windows * per_window / (wall1 - wall0)))
    print("agent CPU: %.2f %% of one core over %.1f s (goal <= 2 %%)" % (cpu_pct, wall1 - wall0))
    if lags:
        lags.sort()
        print("seal to queryable: median %.3f s, p90 %.3f s, max %.3f s over %d windows "
              "(goal <= 2 s: lag <= window + 2 s)"
              % (statistics.median(lags), lags[int(0.9 * (len(lags) - 1))], lags[-1], len(lags)))
    if missing:
        print("windows not queryable by the end: %d" % missing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
