#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-agent's CPU and its end-to-end lag while a host writes RATE kernels a second.

A writer produces one window of the session's device log every WINDOW seconds, RATE x WINDOW
kernels each (bench/gen_session.py's rows). By default it appends each window's lines to the
open segment every --chunk-s seconds, as the library writes a running session, and the agent
ships them live (its --live-s, default 1 s); with --sealed-only a window appears whole when it
seals (written to a temporary name and renamed) and the agent runs with --live-s 0. A
gpufl-agent watches the log root and ships to a gpufl-server (SQLite) on loopback. Measured:
  - the agent's CPU (utime + stime of its process, /proc) in % of one core;
  - the lag from a line's write to its being queryable on the server: per appended chunk, until
    the server's GET /api/v1/events/windows says it holds the window's bytes up to the chunk's
    end (with --sealed-only: from the seal to the window's listing), polled every 20 ms.
The issue's goals: the agent's CPU <= 2 % of one core at 100 k kernels/s; lag <= window + 2 s.

--encoding gzip makes the agent send gzip (GPUFL_UPLOAD_ENCODING=gzip) to compare with the
default, zstd (the server takes it).

usage: python3 bench/agent_bench.py [--rate N] [--window S] [--seconds S] [--chunk-s S]
                                    [--sealed-only] [--encoding auto|gzip] [--server PATH]
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
    ap.add_argument("--chunk-s", type=float, default=0.1,
                    help="seconds between appends to the open window (default 0.1)")
    ap.add_argument("--sealed-only", action="store_true",
                    help="windows appear whole when sealed; the agent ships no tails")
    ap.add_argument("--encoding", choices=("auto", "gzip"), default="auto",
                    help="the agent's GPUFL_UPLOAD_ENCODING (default auto: zstd here)")
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
    env["GPUFL_UPLOAD_ENCODING"] = a.encoding
    agent = subprocess.Popen([a.agent, "--log-path", root, "--server",
                              "http://127.0.0.1:%d" % srv.port, "--api-key-file",
                              os.path.join(tmp, "key"), "--listen", "none",
                              "--live-s", "0" if a.sealed_only else "1"],
                             stderr=subprocess.DEVNULL, env=env)
    # The pieces written, (window, end offset in it) -> when; and when the server held them.
    sealed, seen = {}, {}
    done = threading.Event()
    pieces = []  # [(window, end offset)], in writing order
    for i, text in enumerate(texts):
        data = text.encode()
        n = 1 if a.sealed_only else max(1, int(round(a.window / a.chunk_s)))
        ends, at = [], 0
        for k in range(1, n + 1):
            cut = data.rfind(b"\n", 0, len(data) * k // n) + 1 if k < n else len(data)
            if cut > at:
                ends.append(cut)
                at = cut
        pieces.extend((i, e) for e in ends)

    def poll():
        url = ("http://127.0.0.1:%d/api/v1/events/windows?session_id=%s&channel=device"
               % (srv.port, SID))
        req = urllib.request.Request(url, headers={"Authorization": "Bearer " + key})
        while not done.is_set():
            with urllib.request.urlopen(req, timeout=10) as r:
                doc = json.loads(r.read())
            now = time.monotonic()
            held = {w["sequence"]: w.get("bytes", len(texts[w["sequence"]].encode()))
                    for w in doc["windows"]}
            for piece in pieces:
                if piece not in seen and held.get(piece[0], -1) >= piece[1]:
                    seen[piece] = now
            if len(seen) >= len(pieces):
                break
            time.sleep(0.02)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    time.sleep(1.0)  # the agent's first pass over the empty root
    cpu0, wall0 = cpu_seconds(agent.pid), time.monotonic()
    per = {}
    for piece in pieces:
        per.setdefault(piece[0], []).append(piece[1])
    for i, text in enumerate(texts):
        data = text.encode()
        name = "device.log" + (".%d" % i if i else "")
        if a.sealed_only:
            part = os.path.join(session, "." + name + ".tmp")
            with open(part, "wb") as f:
                f.write(data)
            os.rename(part, os.path.join(session, name))
            sealed[(i, len(data))] = time.monotonic()
        else:
            at = 0
            with open(os.path.join(session, name), "ab") as f:
                for k, end in enumerate(per[i]):
                    f.write(data[at:end])
                    f.flush()
                    sealed[(i, end)] = time.monotonic()
                    at = end
                    chunk_at = wall0 + i * a.window + (k + 1) * a.window / len(per[i])
                    time.sleep(max(0.0, chunk_at - time.monotonic()))
        time.sleep(max(0.0, wall0 + (i + 1) * a.window - time.monotonic()))
    poller.join(timeout=60)
    done.set()
    cpu1, wall1 = cpu_seconds(agent.pid), time.monotonic()
    agent.terminate()
    agent.wait(timeout=60)
    srv.stop()
    lags = [seen[p] - sealed[p] for p in sealed if p in seen]
    missing = len(sealed) - len(lags)
    cpu_pct = 100 * (cpu1 - cpu0) / (wall1 - wall0)
    bytes_total = sum(len(t) for t in texts)
    print("kernels written: %d in %d windows of %.1f s (%.1f MB of log, %.0f kernels/s)"
          % (n_windows * per_window, n_windows, a.window, bytes_total / 1e6,
             n_windows * per_window / (wall1 - wall0)))
    print("agent CPU: %.2f %% of one core over %.1f s (goal <= 2 %%), encoding %s"
          % (cpu_pct, wall1 - wall0, a.encoding))
    if lags:
        lags.sort()
        print("%s to queryable: median %.3f s, p90 %.3f s, max %.3f s over %d %s "
              "(goal: lag <= window + 2 s = %.1f s)"
              % ("seal" if a.sealed_only else "write", statistics.median(lags),
                 lags[int(0.9 * (len(lags) - 1))], lags[-1], len(lags),
                 "windows" if a.sealed_only else "appends", a.window + 2))
    if missing:
        print("%s not queryable by the end: %d" % ("windows" if a.sealed_only else "appends",
                                                   missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
