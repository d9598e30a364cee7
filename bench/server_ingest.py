#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-server's ingest rate against each engine's own limit, side by side in one run:

  server/sqlite   gzipped windows over loopback HTTP to committed rows (each 200 = committed)
  sqlite loop     the same kernel rows with Python's sqlite3: executemany of one prepared
                  INSERT in one transaction, into a table of activity's shape (its indexes too),
                  WAL and synchronous=FULL as the server uses
  server/pg       the same windows into a throwaway PostgreSQL (pg_harness.py)
  psql \\copy      the same kernel rows from a tab-separated file into the same activity table
                  (partitioned by day, its indexes) of that PostgreSQL

Prints rows/s, rows per CPU-second of the server's own process (from /proc) and the ratios.
usage: python3 bench/server_ingest.py [--rows N] [--senders N] [--server PATH]
"""
import argparse
import concurrent.futures
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pg_harness  # noqa: E402
import server_harness as sh  # noqa: E402

KERNEL_COLUMNS = ["start_ns", "end_ns", "device", "context", "stream", "correlation", "name",
                  "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers"]
# activity's columns the references fill: the log's kernel "name" (a dict id) is the table's
# "mangled", as the server stores it.
TABLE_COLUMNS = ["workspace_id", "session_id", "day", "kind"] + [
    "mangled" if k == "name" else k for k in KERNEL_COLUMNS]


def cpu_seconds(pid):
    """utime + stime of a process (its threads included), from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def windows_for(rows, per_window):
    out = []
    n = 0
    s = 0
    while n < rows:
        w = sh.generated_session("bench-%d" % s, 1, min(per_window, rows - n), seed=s)[0]
        out.append(w)
        n += min(per_window, rows - n)
        s += 1
    return out


def kernel_rows(windows):
    """The typed rows the windows hold, as the server stores them: (session, columns...) with
    the kernel name resolved through the window's dict."""
    for sid, _, _, _, text in windows:
        names = {}
        for line in text.split("\n")[:-1]:
            rec = json.loads(line)
            if rec["type"] == "dict":
                names.update(zip(rec["id"], rec["str"]))
            elif rec["type"] == "kernel":
                cols = [rec[c] for c in KERNEL_COLUMNS]
                for i in range(len(rec["start_ns"])):
                    row = [c[i] for c in cols]
                    row[6] = names[row[6]]
                    yield [sid] + row


def ship(url, windows, senders, tmp):
    """Starts a server on url, sends every window (gzipped beforehand), stops it: (seconds from
    the first send to the last 200, the server's CPU seconds meanwhile)."""
    sh.new_workspace(url, "bench")
    key = sh.new_key(url, "bench", "ingest")
    bodies = [gzip.compress(w[4].encode(), 6) for w in windows]
    srv = sh.Server(url, ["--max-windows", str(max(8, senders))], log_dir=tmp)
    try:
        def send(i):
            st, doc = sh.send_until_answered(srv, key, windows[i], body=bodies[i])
            assert st == 200 and doc["window"] == "stored", doc
        cpu0 = cpu_seconds(srv.p.pid)
        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(senders) as pool:
            list(pool.map(send, range(len(windows))))
        wall = time.perf_counter() - t0
        cpu = cpu_seconds(srv.p.pid) - cpu0
    finally:
        srv.stop()
    return wall, cpu


def sqlite_loop(path, server_db, rows):
    """executemany into a fresh file with activity's own CREATE statements (copied from the
    server's database): seconds."""
    src = sqlite3.connect(server_db)
    ddl = [r[0] for r in src.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'activity'"
                                     " AND sql IS NOT NULL ORDER BY type DESC")]
    src.close()
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=FULL")
    for d in ddl:
        c.execute(d)
    sql = "INSERT INTO activity (%s) VALUES (%s)" % (", ".join(TABLE_COLUMNS),
                                                      ", ".join("?" * len(TABLE_COLUMNS)))
    data = [(1, r[0], 20419, "kernel", *r[1:]) for r in rows]
    t0 = time.perf_counter()
    c.execute("BEGIN")
    c.executemany(sql, data)
    c.execute("COMMIT")
    wall = time.perf_counter() - t0
    c.close()
    return wall


def psql_copy(cluster, rows, tmp):
    """\\copy of the rows from a file into activity (workspace 0, a day of its own): seconds."""
    day = 20400
    cluster.psql("CREATE TABLE IF NOT EXISTS activity_d%d PARTITION OF activity FOR VALUES "
                 "FROM (%d) TO (%d)" % (day, day, day + 1))
    path = os.path.join(tmp, "rows.tsv")
    with open(path, "w") as f:
        for r in rows:
            f.write("0\t%s\t%d\tkernel\t%s\n" % (r[0], day, "\t".join(str(v) for v in r[1:])))
    argv = [os.path.join(cluster.bindir, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
            "-h", "127.0.0.1", "-p", str(cluster.port), "-U", pg_harness.SUPERUSER,
            "-d", cluster.dbname, "-c",
            "\\copy activity (%s) FROM '%s'" % (", ".join(TABLE_COLUMNS), path)]
    t0 = time.perf_counter()
    subprocess.run(argv, check=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--per-window", type=int, default=5000)
    ap.add_argument("--senders", type=int, default=4)
    ap.add_argument("--server", default=sh.SERVER)
    ap.add_argument("--engines", default="sqlite,postgresql")
    a = ap.parse_args()
    sh.SERVER = a.server
    windows = windows_for(a.rows, a.per_window)
    rows = list(kernel_rows(windows))
    n = len(rows)
    cores = os.cpu_count()
    print("%d kernel rows in %d windows of %d, %d senders, %d cores" % (
        n, len(windows), a.per_window, a.senders, cores))
    results = []
    with tempfile.TemporaryDirectory(prefix="gpufl-bench-") as tmp:
        if "sqlite" in a.engines:
            db = os.path.join(tmp, "server.db")
            wall, cpu = ship("sqlite:" + db, windows, a.senders, tmp)
            loop = sqlite_loop(os.path.join(tmp, "loop.db"), db, rows)
            results.append(("sqlite", wall, cpu, "bare prepared-statement loop", loop))
        if "postgresql" in a.engines:
            with pg_harness.Cluster(dbname="gpufl_bench") as c:
                wall, cpu = ship(c.url, windows, a.senders, tmp)
                copy = psql_copy(c, rows, tmp)
            results.append(("postgresql", wall, cpu, "psql \\copy", copy))
    print()
    print("| engine | server rows/s | server rows per CPU-second | reference | reference rows/s "
          "| server / reference |")
    print("|---|---|---|---|---|---|")
    for engine, wall, cpu, ref, ref_wall in results:
        print("| %s | %.0f | %.0f | %s | %.0f | %.2f |" % (
            engine, n / wall, n / cpu if cpu else float("nan"), ref, n / ref_wall,
            ref_wall / wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
