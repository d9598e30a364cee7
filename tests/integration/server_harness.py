# SPDX-License-Identifier: Apache-2.0
"""What every gpufl-server test shares: the server as a process on loopback (on SQLite or on a
throwaway PostgreSQL of pg_harness.py), keys made by the admin subcommands, windows shipped over
HTTP, generated sessions, and the stored rows counted and checksummed through the engine itself
(Python's sqlite3 for SQLite, the cluster's own psql for PostgreSQL: no Python driver needed).

    import server_harness as sh
    with sh.engine("postgresql", tmpdir) as db:      # or "sqlite"; PostgreSQL skips when absent
        key = sh.new_key(db.url, "alpha", "ingest")   # after sh.admin(db.url, "workspace", ...)
        srv = sh.Server(db.url)
        sh.ship(srv, key, sh.generated_session("s1", windows=4, kernels=100))
        db.counts(); db.lines_digest("s1"); srv.stop()
"""
import contextlib
import gzip
import hashlib
import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from unittest import mock

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pg_harness  # noqa: E402

SERVER = os.environ.get("GPUFL_SERVER", "build-dev/cmd/gpufl-server/gpufl-server")
FIXTURES = os.path.join(HERE, "..", "fixtures", "sessions")
# Sessions recorded on GPUs (its README.md says which runs): seeded beside FIXTURES.
GPU_RUNS = os.path.join(HERE, "..", "fixtures", "gpu-runs")
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import gpufl_compact  # noqa: E402  (compact lines read as the plain lines they stand for)
STREAM = "/api/v1/events/stream"
COMPLETE = "/api/v1/events/session-complete"
VERSION = "/api/v1/info/version"
WINDOWS = "/api/v1/events/windows?session_id=%s&channel=device"
ENGINES = ("sqlite", "postgresql")
COUNTED = ("windows", "lines", "activity", "sessions")


# ---- engines -------------------------------------------------------------------------------

class SqliteDb:
    """A SQLite database file; `url` is what --db takes."""
    name = "sqlite"

    def __init__(self, path):
        self.path = path
        self.url = "sqlite:" + path

    def query(self, sql, params=()):
        c = sqlite3.connect(self.path, timeout=30)
        try:
            return [tuple(r) for r in c.execute(sql, params).fetchall()]
        finally:
            c.close()

    def close(self):
        pass


_NULL = "\\N"


class PgDb:
    """A database on a pg_harness cluster, read through the cluster's psql. Values come back as
    text, integers as int, NULL as None. `stop()`/`start()` take the server down and up again
    on the same port (the fault tests)."""
    name = "postgresql"

    def __init__(self, cluster):
        self.cluster = cluster
        self.url = cluster.url

    def query(self, sql, params=()):
        for p in params:  # literal parameters, quoted for SQL
            sql = sql.replace("?", "'" + str(p).replace("'", "''") + "'", 1)
        argv = [os.path.join(self.cluster.bindir, "psql"), "-X", "-q", "-A", "-t",
                "-F", "\x1f", "-R", "\x1e", "-P", "null=" + _NULL, "-v", "ON_ERROR_STOP=1",
                "-h", "127.0.0.1", "-p", str(self.cluster.port), "-U", pg_harness.SUPERUSER,
                "-d", self.cluster.dbname, "-c", sql]
        r = subprocess.run(argv, capture_output=True, timeout=120,
                           env=dict(os.environ, PGCONNECT_TIMEOUT="10"))
        if r.returncode != 0:
            raise pg_harness.PostgresError("psql: %s: %s" % (sql[:200], r.stderr.decode()))
        out = r.stdout.decode().rstrip("\n")
        return [tuple(_pg_value(v) for v in rec.split("\x1f"))
                for rec in out.split("\x1e") if rec != ""]

    def stop(self):
        """Stops PostgreSQL, keeping its data directory (fast shutdown: clients are cut)."""
        self.cluster.proc.send_signal(signal.SIGINT)
        self.cluster.proc.wait(timeout=60)

    def start(self):
        """Starts PostgreSQL again on the same data and port."""
        data = os.path.join(self.cluster.workdir, "data")
        port = self.cluster.port
        # The server must come back on the port its clients hold in their URL.
        with mock.patch.object(pg_harness, "free_port", lambda: port):
            self.cluster._start_once(data, time.monotonic_ns())

    def close(self):
        self.cluster.stop()


def _pg_value(v):
    if v == _NULL:
        return None
    return int(v) if re.fullmatch(r"-?\d+", v) else v


@contextlib.contextmanager
def engine(kind, tmpdir, name="t"):
    """An empty database of engine `kind` ("sqlite" or "postgresql") for one test module.
    PostgreSQL skips the test where pg_harness finds no binaries, unless
    GPUFL_REQUIRE_POSTGRES=1 (CI), which fails it."""
    if kind == "sqlite":
        db = SqliteDb(os.path.join(str(tmpdir), name + ".db"))
    else:
        if not pg_harness.find_bindir():
            if os.environ.get("GPUFL_REQUIRE_POSTGRES") == "1":
                pytest.fail("PostgreSQL binaries not found, and GPUFL_REQUIRE_POSTGRES=1")
            pytest.skip("PostgreSQL binaries not found (apt-get install postgresql)")
        db = PgDb(pg_harness.Cluster(dbname="gpufl_" + name).start())
    try:
        yield db
    finally:
        db.close()


def counts(db, sid=None):
    """Rows of the tables a window fills, of one session or of all."""
    where, params = ("", ()) if sid is None else (" WHERE session_id = ?", (sid,))
    return {t: db.query("SELECT count(*) FROM " + t + where, params)[0][0] for t in COUNTED}


def lines_digest(db, sid):
    """(sha256, n) of a session's stored lines in (channel, sequence, line) order."""
    rows = db.query("SELECT channel, sequence, body FROM lines WHERE session_id = ? "
                    "ORDER BY channel, sequence, line_no", (sid,))
    h = hashlib.sha256()
    for ch, seq, body in rows:
        h.update(("%s/%d/%s\n" % (ch, seq, body)).encode())
    return h.hexdigest(), len(rows)


def sent_digest(windows, sid):
    """lines_digest of what a session's windows hold, computed from the sent text."""
    h = hashlib.sha256()
    n = 0
    for s, ch, seq, _, text in sorted(windows, key=lambda w: (w[1], w[2])):
        if s != sid:
            continue
        for line in text.split("\n")[:-1]:
            h.update(("%s/%d/%s\n" % (ch, seq, line)).encode())
            n += 1
    return h.hexdigest(), n


def kernel_checksum(db, sid):
    """(rows, sum of durations) of a session's stored activity rows."""
    n, total = db.query("SELECT count(*), coalesce(sum(end_ns - start_ns), 0) FROM activity "
                        "WHERE session_id = ?", (sid,))[0]
    return int(n), int(total)


def sent_kernel_checksum(windows, sid):
    n = total = 0
    for s, _, _, _, text in windows:
        if s != sid:
            continue
        for line in text.split("\n")[:-1]:
            rec = gpufl_compact.decode(json.loads(line))
            if rec["type"] in ("kernel", "copy", "memset", "sync"):
                n += len(rec["start_ns"])
                total += sum(e - b for b, e in zip(rec["start_ns"], rec["end_ns"]))
    return n, total


# ---- the server ----------------------------------------------------------------------------

def admin(url, *args, stdin=None):
    return subprocess.run([SERVER, "--db", url, "admin", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def new_key(url, workspace, role):
    r = admin(url, "key", "create", "--workspace", workspace, "--role", role)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def new_workspace(url, name):
    r = admin(url, "workspace", "create", name)
    assert r.returncode == 0, r.stderr


class Server:
    """gpufl-server on 127.0.0.1 (a free port) over the database `url`; its stderr goes to a
    file beside the test's files. `check` is called with (path, status, doc) for every answer
    (the ingest test validates them against the protocol's schemas)."""

    def __init__(self, url, args=(), env_extra=None, scheme="http", log_dir=None, check=None):
        env = dict(os.environ)
        env.update(env_extra or {})
        log_dir = log_dir or os.environ.get("TMPDIR", "/tmp")
        self.log = open(os.path.join(log_dir, "server.%d.log" % time.monotonic_ns()), "w+")
        self.url = url
        self.check = check
        self.p = subprocess.Popen([SERVER, "--db", url, "--listen", "127.0.0.1:0", *args],
                                  stderr=self.log, env=env)
        self.scheme = scheme
        self.port = None
        deadline = time.time() + 30
        while time.time() < deadline and self.port is None:
            self.log.seek(0)
            m = re.search(r"listening on https?://127\.0\.0\.1:(\d+)/", self.log.read())
            if m:
                self.port = int(m.group(1))
            elif self.p.poll() is not None:
                break
            else:
                time.sleep(0.05)
        assert self.port, "the server did not start: " + self.stderr()

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def conn(self, context=None, timeout=30):
        if self.scheme == "https":
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                               context=context)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, context=None, timeout=30):
        c = self.conn(context, timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
        finally:
            c.close()
        try:
            doc = json.loads(data) if data else None
        except ValueError:
            doc = data
        if self.check and method != "HEAD":
            self.check(path, r.status, doc)
        return r.status, doc, dict(r.getheaders())

    def kill(self):
        """SIGKILL: nothing is drained or flushed."""
        self.p.kill()
        self.p.wait(timeout=30)
        self.log.close()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            self.p.wait(timeout=60)
        if not self.log.closed:
            self.log.close()
        return self.p.returncode


# ---- windows -------------------------------------------------------------------------------

def window_headers(key, sid, channel, seq, wid, gz=True, version="1"):
    h = {"X-GpuFlight-Session-Id": sid, "X-GpuFlight-Window-Channel": channel,
         "X-GpuFlight-Window-Sequence": str(seq), "X-GpuFlight-Window-Id": wid,
         "X-GpuFlight-Wire-Version": version, "Content-Type": "application/x-ndjson"}
    if key:
        h["Authorization"] = "Bearer " + key
    if gz:
        h["Content-Encoding"] = "gzip"
    return h


def post_window(srv, key, w, gz=True, extra=None, body=None, timeout=30):
    """Sends one window (session_id, channel, sequence, window_id, text): (status, doc,
    headers)."""
    sid, ch, seq, wid, text = w
    h = window_headers(key, sid, ch, seq, wid, gz)
    h.update(extra or {})
    if body is None:
        body = gzip.compress(text.encode(), 1) if gz else text.encode()
    return srv.request("POST", STREAM, body, h, timeout=timeout)


def send_until_answered(srv, key, w, body=None, tries=600):
    """Sends a window as a shipper does: again after a 429 (waiting its Retry-After, capped at
    0.2 s here), until another answer comes. Returns (status, doc)."""
    for _ in range(tries):
        st, doc, h = post_window(srv, key, w, body=body)
        if st != 429:
            return st, doc
        time.sleep(min(0.2, float(h.get("Retry-After", "1"))))
    raise AssertionError("still 429 after %d tries" % tries)


def complete_lines(text):
    """A killed session's file ends in a cut line: a shipper sends only whole lines."""
    return text[: text.rfind("\n") + 1]


def fixture_dirs(root=FIXTURES):
    """{directory name: path} of the session directories under a fixtures root (a README
    beside them is not a session)."""
    return {n: os.path.join(root, n) for n in sorted(os.listdir(root))
            if os.path.isdir(os.path.join(root, n))}


def fixture_windows(root=FIXTURES):
    """(session_id, channel, sequence, window_id, text) for every segment of every channel of
    every session directory under `root` (tests/fixtures/sessions unless told), each its own
    window."""
    out = []
    for d in fixture_dirs(root).values():
        for f in sorted(os.listdir(d)):
            m = re.match(r"(device|scope|system)\.log(?:\.(\d+))?$", f)
            if not m:
                continue
            with open(os.path.join(d, f)) as fh:
                text = complete_lines(fh.read())
            h = json.loads(text.split("\n", 1)[0])
            seq = int(m.group(2) or 0)
            out.append((h["session_id"], m.group(1), seq,
                        "%s-%s-%d" % (h["session_id"], m.group(1), seq), text))
    return out


KERNEL_NAMES = ["_Z4gemmPKfS0_Pfiii", "_Z4reluPfi", "_Z7softmaxPKfPfi", "_Z6reduceILi256EEvPf"]


def generated_session(sid, windows, kernels, batch=1000, seed=1, end=False, t0=None):
    """A device channel of `windows` windows, each a header, a dict line
    and `kernels` kernel rows in batch lines of up to `batch` rows with the library's columns
    (every one the analysis reader needs, so `gpufl report` reads them too); with end, the last
    window closes with the session's session_end. Durations vary with seed and position, so two
    sessions' checksums differ. t0: the first kernel's start on the session clock (default: 20
    days in, large numbers for the stores' arithmetic)."""
    out = []
    t = 1_728_000_000_000_000 + seed * 10**12 if t0 is None else t0
    for seq in range(windows):
        lines = [json.dumps({
            "type": "header", "v": 1, "format": "gpufl-log", "file": "device", "segment": seq,
            "session_id": sid, "app_name": "gen", "pid": 1000 + seed, "hostname": "gen-host",
            "epoch_ns": "1", "epoch_unix_us": 1795000000000000, "clock": "monotonic",
            "gpufl_version": "0.1.0"}, separators=(",", ":"))]
        # Every window defines the names it uses: a window is read on its own.
        lines.append(json.dumps({"type": "dict", "v": 1,
                                 "id": list(range(1, len(KERNEL_NAMES) + 1)),
                                 "str": KERNEL_NAMES}, separators=(",", ":")))
        left = kernels
        while left > 0:
            n = min(batch, left)
            left -= n
            start, end = [], []
            for i in range(n):
                start.append(t)
                t += 1000 + (i * 7919 + seed * 104729 + seq) % 50000
                end.append(t)
                t += 500
            k = len(start)
            lines.append(json.dumps({
                "type": "kernel", "v": 1, "start_ns": start, "end_ns": end, "device": [0] * k,
                "context": [1] * k, "stream": [7] * k,
                "correlation": list(range(t, t + k)),
                "name": [1 + i % len(KERNEL_NAMES) for i in range(k)],
                "grid_x": [132] * k, "grid_y": [1] * k, "grid_z": [1] * k,
                "block_x": [256] * k, "block_y": [1] * k, "block_z": [1] * k,
                "registers": [32] * k, "static_smem_bytes": [0] * k,
                "dynamic_smem_bytes": [0] * k, "local_bytes_per_thread": [0] * k,
                "graph_id": [0] * k}, separators=(",", ":")))
        if end and seq == windows - 1:
            lines.append(json.dumps({
                "type": "session_end", "v": 1, "ts_ns": t + 1000, "duration_ns": t + 1000,
                "records_written": kernels * windows, "records_dropped": 0, "bytes_written": 0,
                "write_errors": 0}, separators=(",", ":")))
        out.append((sid, "device", seq, "%s-device-%d" % (sid, seq), "\n".join(lines) + "\n"))
    return out


# ---- whole-or-nothing and exact counts -----------------------------------------------------

START_MOD = 1_000_000_007  # start times summed modulo a prime: no 64-bit overflow in SQL


def session_checksums(db):
    """{session_id: (windows, lines, bytes of lines, activity rows, sum of durations, sum of
    starts modulo START_MOD)} of every stored session, computed by the engine (so a load
    test's millions of rows never travel to Python)."""
    out = {}
    for sid, n, nl, nb in db.query(
            "SELECT w.session_id, w.n, coalesce(l.n, 0), coalesce(l.b, 0) FROM"
            " (SELECT session_id, count(*) AS n FROM windows GROUP BY session_id) w LEFT JOIN"
            " (SELECT session_id, count(*) AS n, sum(length(body)) AS b FROM lines"
            "  GROUP BY session_id) l ON l.session_id = w.session_id"):
        out[sid] = [int(n), int(nl), int(nb), 0, 0, 0]
    for sid, n, d, s in db.query("SELECT session_id, count(*), sum(end_ns - start_ns),"
                                 " sum(start_ns %% %d) FROM activity GROUP BY session_id"
                                 % START_MOD):
        out.setdefault(sid, [0, 0, 0, 0, 0, 0])[3:] = [int(n), int(d), int(s)]
    return {k: tuple(v) for k, v in out.items()}


def sent_checksums(windows):
    """session_checksums of what `windows` hold, each window counted once."""
    out = {}
    seen = set()
    for sid, _, seq, _, text in windows:
        if (sid, seq, text) in seen:
            continue
        seen.add((sid, seq, text))
        c = out.setdefault(sid, [0, 0, 0, 0, 0, 0])
        c[0] += 1
        for line in text.split("\n")[:-1]:
            c[1] += 1
            c[2] += len(line)
            rec = gpufl_compact.decode(json.loads(line))
            if rec["type"] in ("kernel", "copy", "memset", "sync"):
                c[3] += len(rec["start_ns"])
                c[4] += sum(e - b for b, e in zip(rec["start_ns"], rec["end_ns"]))
                c[5] += sum(t % START_MOD for t in rec["start_ns"])
    return {k: tuple(v) for k, v in out.items()}


def assert_whole_or_absent(db, windows):
    """Each window of its own session is stored whole or not at all: every session's
    checksums are those of its window, or the session is absent (no window, line or row, and
    no session row). Returns the session ids stored."""
    want = sent_checksums(windows)
    got = session_checksums(db)
    sessions = {r[0] for r in db.query("SELECT session_id FROM sessions")}
    stored = set()
    for sid, c in want.items():
        if sid in got:
            assert got[sid] == c, (sid, got[sid], c)
            assert sid in sessions
            stored.add(sid)
        else:
            assert sid not in sessions, sid
    return stored
