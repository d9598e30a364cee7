#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-server's query API on a 1 M-kernel session, on SQLite and on PostgreSQL: the session of
bench/gen_session.py shipped in windows of the size the library writes (one segment each,
200,000 kernels), completed and its report built, then each route timed over loopback HTTP
(median of --runs):

  summary            GET /api/v1/sessions/{id}
  insights           GET /api/v1/sessions/{id}/insights
  kernels per name   GET /api/v1/sessions/{id}/kernels
  timeline window    GET /api/v1/sessions/{id}/timeline?from=..&to=..: exactly 10,000 kernels,
                     from the middle of the session, none dropped
  whole timeline     GET /api/v1/sessions/{id}/timeline?max_events=10000: all of the session,
                     downsampled server-side (not a target)

Targets (issue 22): summary, insights and kernels per name <= 100 ms; the 10,000-event window
<= 200 ms.
usage: python3 bench/server_query.py [--kernels N] [--runs N] [--server PATH] [--engines ...]
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.path.insert(0, HERE)
import gen_session  # noqa: E402
import server_harness as sh  # noqa: E402

SID = "20261127T000000.000Z-4242-beef"
WINDOW_EVENTS = 10000
TARGETS_MS = {"summary": 100, "insights": 100, "kernels per name": 100, "timeline window": 200}


def starts_of(windows):
    """Every kernel's start_ns, in order."""
    out = []
    for _, _, text in windows:
        for line in text.split("\n")[:-1]:
            rec = json.loads(line)
            if rec["type"] == "kernel":
                out.extend(rec["start_ns"])
    return out


def get(srv, key, path):
    st, doc, _ = srv.request("GET", "/api/v1/sessions/%s%s" % (SID, path),
                             headers={"Authorization": "Bearer " + key}, timeout=600)
    assert st == 200, (path, st, doc)
    return doc


def run_engine(kind, windows, starts, runs, tmp):
    n = len(starts)
    mid = n // 2
    window_path = "/timeline?from=%d&to=%d&max_events=%d" % (
        starts[mid], starts[mid + WINDOW_EVENTS], WINDOW_EVENTS)
    routes = [("summary", ""), ("insights", "/insights"), ("kernels per name", "/kernels"),
              ("timeline window", window_path),
              ("whole timeline", "/timeline?max_events=%d" % WINDOW_EVENTS)]
    with sh.engine(kind, tmp, "query") as db:
        sh.new_workspace(db.url, "bench")
        ingest = sh.new_key(db.url, "bench", "ingest")
        read = sh.new_key(db.url, "bench", "read")
        srv = sh.Server(db.url, log_dir=tmp)
        try:
            t0 = time.perf_counter()
            for ch, seq, text in windows:
                st, doc = sh.send_until_answered(
                    srv, ingest, (SID, ch, seq, "%s-%s-%d" % (SID, ch, seq), text),
                    body=gzip.compress(text.encode(), 6))
                assert st == 200, doc
            ship_s = time.perf_counter() - t0
            st, doc, _ = srv.request("POST", sh.COMPLETE, json.dumps({"session_id": SID}),
                                     {"Authorization": "Bearer " + ingest})
            assert st == 200, doc
            t0 = time.perf_counter()
            get(srv, read, "/insights")  # builds the report if the builder has not yet
            build_s = time.perf_counter() - t0
            deadline = time.time() + 600  # kernels per name are stored with the report
            while not get(srv, read, "/kernels")["built"] and time.time() < deadline:
                time.sleep(0.2)
            # The answers are what they claim before they are timed.
            assert get(srv, read, "/kernels")["count"] == n
            doc = get(srv, read, window_path)
            assert doc["total"] == WINDOW_EVENTS and len(doc["events"]) == WINDOW_EVENTS
            assert not doc["downsampled"]
            doc = get(srv, read, "/timeline?max_events=%d" % WINDOW_EVENTS)
            assert doc["total"] == n and len(doc["events"]) <= WINDOW_EVENTS
            times = {}
            for name, path in routes:
                samples = []
                for _ in range(runs):
                    t0 = time.perf_counter()
                    get(srv, read, path)
                    samples.append((time.perf_counter() - t0) * 1e3)
                times[name] = (statistics.median(samples), min(samples), max(samples))
        finally:
            srv.stop()
    return ship_s, build_s, times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--server", default=sh.SERVER)
    ap.add_argument("--engines", default="sqlite,postgresql")
    a = ap.parse_args()
    sh.SERVER = a.server
    windows = gen_session.windows(a.kernels, session_id=SID)
    starts = starts_of(windows)
    print("%d kernels in %d windows (%.1f MiB of lines), %d runs a route, %d cores" % (
        len(starts), len(windows), sum(len(w[2]) for w in windows) / 2**20, a.runs,
        os.cpu_count()))
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpufl-bench-") as tmp:
        for kind in a.engines.split(","):
            ship_s, build_s, times = run_engine(kind, windows, starts, a.runs, tmp)
            print("%s: shipped in %.1f s, report built in %.1f s" % (kind, ship_s, build_s))
            rows += [(kind, name, t) for name, t in times.items()]
    print()
    print("| engine | route | median ms | min ms | max ms | target ms | met |")
    print("|---|---|---|---|---|---|---|")
    for kind, name, (med, lo, hi) in rows:
        target = TARGETS_MS.get(name)
        print("| %s | %s | %.1f | %.1f | %.1f | %s | %s |" % (
            kind, name, med, lo, hi, target or "-",
            ("yes" if med <= target else "**no**") if target else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
