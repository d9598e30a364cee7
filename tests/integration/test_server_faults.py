# SPDX-License-Identifier: Apache-2.0
"""gpufl-server when things fail under it: PostgreSQL stopped mid-run (503, /readyz not ready,
the same window stored once after it comes back), the server killed with SIGKILL while windows
are being stored (each window whole or absent after a restart, then every one stored once), and
a SQLite file on a full disk (a small tmpfs, mounted as root; skipped with the reason otherwise).

usage: python3 -m pytest tests/integration/test_server_faults.py, with GPUFL_SERVER naming the
binary (ctest sets it).
"""
import concurrent.futures
import gzip
import http.client
import os
import subprocess
import threading
import time

import pytest

import server_harness as sh


def setup_workspace(db):
    sh.new_workspace(db.url, "faults")
    return sh.new_key(db.url, "faults", "ingest")


def one_window_sessions(prefix, n, kernels):
    """n sessions of one window each, so a session's rows are exactly one window's."""
    return [sh.generated_session("%s-%d" % (prefix, i), 1, kernels, seed=i)[0] for i in range(n)]


def test_postgresql_stopped_mid_run(tmp_path):
    with sh.engine("postgresql", tmp_path) as db:
        key = setup_workspace(db)
        # A short pool wait, so a request does not wait out the default 10 s for a connection.
        srv = sh.Server(db.url, ["--max-windows", "16"],
                        {"GPUFL_SERVER_PG_POOL_WAIT_MS": "2000",
                         "GPUFL_SERVER_TEST_STORE_DELAY_MS": "1000"}, log_dir=str(tmp_path))
        try:
            first, second = sh.generated_session("pg-down", 2, 500)
            assert sh.post_window(srv, key, first)[0] == 200
            assert srv.request("GET", "/readyz")[0] == 200
            # The second is in flight (waiting before its store) when PostgreSQL stops.
            result = {}
            t = threading.Thread(target=lambda: result.update(r=sh.post_window(srv, key, second)))
            t.start()
            time.sleep(0.3)
            db.stop()
            t.join()
            st, doc, _ = result["r"]
            assert st == 503 and "error" in doc, (st, doc)
            # While it is down: every window 503, /readyz 503, /healthz (the process) still 200.
            st, doc, _ = sh.post_window(srv, key, second)
            assert st == 503, doc
            assert srv.request("GET", "/readyz")[0] == 503
            assert srv.request("GET", "/healthz")[0] == 200
            db.start()
            deadline = time.time() + 30
            while srv.request("GET", "/readyz")[0] != 200:
                assert time.time() < deadline, "not ready after PostgreSQL came back"
                time.sleep(0.2)
            # Nothing of the refused window was stored: the session holds the first only.
            assert sh.session_checksums(db)["pg-down"] == sh.sent_checksums([first])["pg-down"]
            st, doc, _ = sh.post_window(srv, key, second)
            assert (st, doc["window"]) == (200, "stored"), doc
            st, doc, _ = sh.post_window(srv, key, second)
            assert (st, doc["window"]) == (200, "duplicate"), doc
            assert sh.session_checksums(db) == sh.sent_checksums([first, second])
        finally:
            assert srv.stop() == 0


@pytest.mark.parametrize("kind", sh.ENGINES)
def test_killed_mid_request(kind, tmp_path):
    with sh.engine(kind, tmp_path) as db:
        key = setup_workspace(db)
        windows = one_window_sessions("kill9-" + kind, 32, 20000)
        bodies = {w[3]: gzip.compress(w[4].encode(), 1) for w in windows}
        srv = sh.Server(db.url, ["--max-windows", "64"], log_dir=str(tmp_path))
        answered = []

        def send(w):
            try:
                answered.append((w[3], sh.post_window(srv, key, w, body=bodies[w[3]])[0]))
            except (OSError, http.client.HTTPException):
                pass  # the server died under the request

        pool = concurrent.futures.ThreadPoolExecutor(16)
        futures = [pool.submit(send, w) for w in windows]
        # Killed once some windows are committed and others are on their way in.
        deadline = time.time() + 60
        while not answered and time.time() < deadline:
            time.sleep(0.01)
        srv.kill()
        concurrent.futures.wait(futures)
        pool.shutdown()
        stored_at_kill = sh.assert_whole_or_absent(db, windows)
        # Every window answered 200 before the kill was committed (a 200 means stored).
        assert {wid.rsplit("-device-", 1)[0] for wid, st in answered if st == 200} <= \
            stored_at_kill
        assert len(stored_at_kill) < len(windows), "the kill came too late to cut a request"
        srv = sh.Server(db.url, [], log_dir=str(tmp_path))
        try:
            outcomes = [sh.send_until_answered(srv, key, w, body=bodies[w[3]]) for w in windows]
        finally:
            assert srv.stop() == 0
        assert all(st == 200 for st, _ in outcomes), outcomes
        assert sum(doc["window"] == "duplicate" for _, doc in outcomes) == len(stored_at_kill)
        assert sh.session_checksums(db) == sh.sent_checksums(windows)


def mount_tmpfs(path, size):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for a full disk needs root")
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + r.stderr.strip())


def test_sqlite_disk_full(tmp_path):
    mnt = str(tmp_path / "small")
    mount_tmpfs(mnt, "3m")
    try:
        db = sh.SqliteDb(os.path.join(mnt, "full.db"))
        key = setup_workspace(db)
        windows = one_window_sessions("full", 40, 3000)
        srv = sh.Server(db.url, [], log_dir=str(tmp_path))
        try:
            results = [sh.post_window(srv, key, w) for w in windows]
            statuses = [st for st, _, _ in results]
            assert 503 in statuses, statuses
            first_full = statuses.index(503)
            assert all(st == 200 for st in statuses[:first_full]), statuses
            assert set(statuses) <= {200, 503}, statuses
            stored = sh.assert_whole_or_absent(db, windows)
            assert stored == {w[0] for w, st in zip(windows, statuses) if st == 200}
            assert windows[first_full][0] not in stored
            # The server still answers.
            assert srv.request("GET", "/healthz")[0] == 200
        finally:
            assert srv.stop() == 0
    finally:
        subprocess.run(["umount", "-l", mnt], check=False)
