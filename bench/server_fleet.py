#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-server's fleet heatmap at fleet scale, on SQLite and on PostgreSQL: a generated
gpufl-monitor session of --gpus GPUs sampled every second for --hours (64 x 24 h: 5.5 M
gpu_sample rows; tests/integration/fleet_session.py), shipped in windows of 30 minutes, then
GET /api/v1/fleet/heatmap over the whole range at 720 points timed over loopback HTTP (median
of --runs), with the answer's size. The fleet page's target is "renders in <= 1 s": the
server's part must be well under it. health and usage over the same range are timed too.

usage: python3 bench/server_fleet.py [--gpus N] [--hours H] [--runs N] [--engines ...]"""
import argparse
import gzip
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import fleet_session as fs  # noqa: E402
import server_harness as sh  # noqa: E402


def timed(srv, key, path, runs):
    times, size = [], 0
    for _ in range(runs):
        c = srv.conn(timeout=600)
        t = time.monotonic()
        c.request("GET", path, headers={"Authorization": "Bearer " + key,
                                        "Accept-Encoding": "identity"})
        r = c.getresponse()
        body = r.read()
        times.append(time.monotonic() - t)
        c.close()
        assert r.status == 200, body[:300]
        size = len(body)
    return statistics.median(times) * 1000, size, len(gzip.compress(body, 6))


def run_engine(kind, args, tmp):
    import pg_harness
    cluster = None
    if kind == "sqlite":
        url = "sqlite:" + os.path.join(tmp, "fleet.db")
    else:
        cluster = pg_harness.Cluster().start()
        url = cluster.url
    sh.new_workspace(url, "bench")
    ingest, read = sh.new_key(url, "bench", "ingest"), sh.new_key(url, "bench", "read")
    srv = sh.Server(url, log_dir=tmp)
    try:
        seconds = int(args.hours * 3600)
        t = time.monotonic()
        rows = 0
        for w in fs.scale_session("bench-fleet-" + kind, "bench-host", args.gpus, seconds):
            st, doc = sh.send_until_answered(srv, ingest, w)
            assert st == 200, doc
            rows += doc["rows"]
        ingest_s = time.monotonic() - t
        frm, to = fs.EPOCH_US, fs.EPOCH_US + seconds * 10**6
        q = "from=%d&to=%d" % (frm, to)
        out = {"rows": rows, "ingest_s": ingest_s}
        for name, path in (("heatmap", "/api/v1/fleet/heatmap?points=720&" + q),
                           ("health", "/api/v1/fleet/health?" + q),
                           ("usage", "/api/v1/fleet/usage?group=process&" + q)):
            out[name] = timed(srv, read, path, args.runs if name == "heatmap" else 1)
        return out
    finally:
        srv.stop()
        if cluster:
            cluster.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--engines", nargs="+", default=["sqlite", "postgresql"])
    args = ap.parse_args()
    print("fleet views: %d GPUs x %g h at 1 s samples" % (args.gpus, args.hours))
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.engines:
            r = run_engine(kind, args, tmp)
            print("%-10s rows %d, ingest %.1f s" % (kind, r["rows"], r["ingest_s"]))
            for name in ("heatmap", "health", "usage"):
                ms, size, gz = r[name]
                print("%-10s %-8s %8.1f ms  answer %d bytes (%d gzip-6)" % (kind, name, ms, size,
                                                                          gz))


if __name__ == "__main__":
    main()
