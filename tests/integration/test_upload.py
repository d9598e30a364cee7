# SPDX-License-Identifier: Apache-2.0
"""`gpufl upload` (the library's gpufl_upload_logs_result and its upload module, lib/net)
against the real gpufl-server on loopback with a temporary SQLite database: the fixture
sessions arrive with exact line counts; a second upload sends nothing and says so; a lost or
damaged cursor makes the server answer duplicates and stores nothing twice; two uploads racing
on one log root store each window once; a refused key stops with the key's prefix only; a
server that is down is retried until the budget and reported.

usage: python3 -m pytest tests/integration/test_upload.py, with GPUFL_SERVER and GPUFL_CLI
naming the binaries (ctest sets them).
"""
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import time

import pytest

SERVER = os.environ.get("GPUFL_SERVER", "build-dev/cmd/gpufl-server/gpufl-server")
CLI = os.environ.get("GPUFL_CLI", "build-dev/cmd/gpufl/gpufl")
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "sessions")
SESSIONS = ("basic", "rotated", "killed", "gpu")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, db, port=None, args=()):
        self.db, self.port = db, port or free_port()
        self.p = subprocess.Popen([SERVER, "--db", "sqlite:" + db, "--listen",
                                   "127.0.0.1:%d" % self.port, *args], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("gpufl-server did not start: " + self.p.stderr.read())

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.p.terminate()
        _, err = self.p.communicate(timeout=30)
        return err


def admin(db, *args):
    r = subprocess.run([SERVER, "--db", "sqlite:" + db, "admin", *args], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def complete_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    return data[:data.rfind(b"\n") + 1].count(b"\n")


def sealed(path):
    with open(path, "rb") as f:
        data = f.read()
    last = data[:data.rfind(b"\n")].rsplit(b"\n", 1)[-1]
    return last.startswith(b'{"type":"segment_end"') or last.startswith(b'{"type":"session_end"')


def expected(root, tails=False):
    """(windows, lines) of the sealed segments under root; with tails, of every segment with
    a complete line too (open windows shipped up to their last complete line)."""
    windows = lines = 0
    for d in sorted(os.listdir(root)):
        full = os.path.join(root, d)
        if not os.path.isdir(full):
            continue
        for name in os.listdir(full):
            p = os.path.join(full, name)
            if name.split(".")[0] not in ("device", "scope", "system"):
                continue
            if sealed(p) or (tails and complete_lines(p) > 0):
                windows += 1
                lines += complete_lines(p)
    return windows, lines


def stored(db):
    with sqlite3.connect(db) as c:
        return (c.execute("select count(*) from windows").fetchone()[0],
                c.execute("select count(*) from lines").fetchone()[0])


def server_env(tmp_path, sessions, server_args=()):
    """A server on a new database with workspace "team", an ingest key in a file, and a log
    root holding copies of the fixture sessions named."""
    db = str(tmp_path / "server.db")
    admin(db, "workspace", "create", "team")
    key = tmp_path / "key"
    key.write_text(admin(db, "key", "create", "--workspace", "team", "--role", "ingest") + "\n")
    root = tmp_path / "logs"
    root.mkdir()
    for s in sessions:
        shutil.copytree(os.path.join(FIXTURES, s), root / s)
    return {"db": db, "key": str(key), "root": str(root), "srv": Server(db, args=server_args),
            "tmp": tmp_path}


@pytest.fixture
def env(tmp_path):
    e = server_env(tmp_path, SESSIONS)
    yield e
    e["srv"].stop()


def upload(env, *args, server=None, key=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    return subprocess.run([CLI, "upload", "--server", server or env["srv"].url,
                           "--api-key-file", key or env["key"], *args],
                          capture_output=True, text=True, timeout=120, env=e)


def test_all_sessions_arrive_exactly(env):
    r = upload(env, "--all", env["root"])
    assert r.returncode == 0, r.stdout + r.stderr
    windows, lines = expected(env["root"])
    assert stored(env["db"]) == (windows, lines)
    assert "%d windows sent" % windows in r.stdout
    # The killed session's open segments are not sent and are said not to be.
    assert "not sealed yet" in r.stdout
    # Again: nothing is sent, and the tool says the sessions are on the server.
    r = upload(env, "--all", env["root"])
    assert r.returncode == 0, r.stderr
    assert "0 windows sent" in r.stdout and "delivered before" in r.stdout
    assert stored(env["db"]) == (windows, lines)


def test_one_session_directory_and_completion(env):
    r = upload(env, os.path.join(env["root"], "basic"))
    assert r.returncode == 0, r.stderr
    assert "1 of 1 complete on the server" in r.stdout
    with sqlite3.connect(env["db"]) as c:
        states = c.execute("select state from sessions").fetchall()
    assert states == [("complete",)]


def test_lost_or_damaged_cursor_stores_nothing_twice(env):
    assert upload(env, "--all", env["root"]).returncode == 0
    before = stored(env["db"])
    cursor = os.path.join(env["root"], ".gpufl-upload.json")
    os.unlink(cursor)
    # The cursor is rebuilt from what the server says it has: nothing is sent again.
    r = upload(env, "--all", env["root"])
    assert r.returncode == 0, r.stderr
    assert "0 windows sent" in r.stdout and "%d delivered before" % before[0] in r.stdout
    assert stored(env["db"]) == before
    with open(cursor, "w") as f:
        f.write('{"version": 1, "sessions": [')  # cut short
    r = upload(env, "--all", env["root"])
    assert r.returncode == 0, r.stderr
    assert "damaged" in r.stderr and os.path.exists(cursor + ".damaged")
    assert stored(env["db"]) == before


def test_two_uploads_racing_store_each_window_once(env):
    procs = [subprocess.Popen([CLI, "upload", "--server", env["srv"].url, "--api-key-file",
                               env["key"], "--all", env["root"]], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    windows, lines = expected(env["root"])
    assert stored(env["db"]) == (windows, lines)
    # The cursor's lock is taken per window: they share the work, and none sends a window
    # another already delivered (no duplicates reach the server).
    counts = [re.search(r"(\d+) windows? sent \((\d+) the server had already\)", o[0]).groups()
              for o in outs]
    assert sum(int(c[0]) for c in counts) == windows, outs
    assert all(c[1] == "0" for c in counts), outs


def test_refused_key_names_its_prefix_only(env):
    bad = env["tmp"] / "bad"
    real = open(env["key"]).read().strip()
    forged = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    bad.write_text(forged)
    r = upload(env, "--all", env["root"], key=str(bad))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "refused the key gpfl_" in r.stderr
    assert forged not in r.stdout + r.stderr and real not in r.stdout + r.stderr
    assert stored(env["db"]) == (0, 0)


def test_server_down_is_retried_then_reported(env):
    port = free_port()
    t = time.monotonic()
    r = upload(env, "--budget-s", "3", os.path.join(env["root"], "basic"),
               server="http://127.0.0.1:%d" % port)
    took = time.monotonic() - t
    assert r.returncode == 2, r.stdout + r.stderr
    assert "gave up" in r.stderr and "retries" in r.stdout
    assert 1 <= took < 30
    # The server comes up: the same command delivers everything.
    r = upload(env, os.path.join(env["root"], "basic"))
    assert r.returncode == 0


def test_usage_errors(env):
    r = subprocess.run([CLI, "upload", "--bogus"], capture_output=True, text=True)
    assert r.returncode == 2 and "see gpufl upload --help" in r.stderr
    r = subprocess.run([CLI, "upload", "--budget-s", "x"], capture_output=True, text=True)
    assert r.returncode == 2
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    r = subprocess.run([CLI, "upload", env["root"]], capture_output=True, text=True, env=e)
    assert r.returncode == 2 and "no server" in r.stderr


def test_damaged_lines_are_shipped_as_written(env):
    """A line damaged on disk (not JSON) goes as written: the server stores it untyped and names
    it, the upload warns and counts it, and nothing else of the window is lost."""
    src = os.path.join(HERE, "..", "fixtures", "bad", "damaged")
    dst = os.path.join(env["root"], "damaged")
    shutil.copytree(src, dst)
    before = stored(env["db"])
    r = upload(env, dst)
    assert r.returncode == 0, r.stderr
    assert "damaged line" in r.stdout and "stored as written" in r.stderr
    with sqlite3.connect(env["db"]) as c:
        untyped = c.execute("select count(*) from lines where type is null").fetchone()[0]
    assert untyped >= 1
    after = stored(env["db"])
    assert after[1] - before[1] == complete_lines(os.path.join(dst, "scope.log"))


def test_a_full_disk_loses_nothing(env):
    """The cursor cannot be written (a file size limit stands in for a full disk: the same
    failed write): the upload stops with the reason; the windows the server stored meanwhile
    are answered as duplicates next time, and each is stored once."""
    import resource
    import signal

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256))

    e = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    r = subprocess.run([CLI, "upload", "--server", env["srv"].url, "--api-key-file", env["key"],
                        "--all", env["root"]], capture_output=True, text=True, env=e,
                       preexec_fn=small_files, timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "cannot write the cursor" in r.stderr
    assert stored(env["db"])[0] >= 1  # the server has the first window; the cursor does not
    r = upload(env, "--all", env["root"])
    assert r.returncode == 0, r.stderr
    assert stored(env["db"]) == expected(env["root"])
