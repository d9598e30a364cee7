#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL harness itself (pg_harness.py): a cluster starts on loopback and answers,
belongs to an unprivileged user, and leaves no process and no directory behind, whether the
harness stops it, the command it ran fails, or the harness is killed with SIGKILL. Skips (77)
where the PostgreSQL server binaries are absent, as every test that uses the harness does."""

import glob
import os
import pwd
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pg_harness as pg  # noqa: E402

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pg_harness.py")


def running(pid):
    """The process's state letter, or None when it is gone. A zombie counts as gone: it has
    exited, and only the reaper it was handed to (outside the test) has yet to collect it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    return None if state in ("Z", "X") else state


def wait_gone(pids, timeout_s=30.0):
    """Waits until none of pids runs; returns {pid: state} of those still running."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = {p: s for p in pids if (s := running(p))}
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.1)


def test_cluster_and_cleanup():
    with pg.Cluster(dbname="harness_db") as c:
        assert c.url.startswith("postgresql://gpufl@127.0.0.1:"), c.url
        assert c.url.endswith("/harness_db"), c.url
        assert c.psql("SELECT current_database(), 6 * 7") == [["harness_db", "42"]]
        # loopback only, fsync off, the socket in the cluster's own directory
        assert c.psql("SHOW listen_addresses") == [["127.0.0.1"]]
        assert c.psql("SHOW fsync") == [["off"]]
        assert os.path.exists(os.path.join(c.socket_dir, f".s.PGSQL.{c.port}"))
        owner = os.stat(os.path.join(c.workdir, "data")).st_uid
        if os.geteuid() == 0:
            assert pwd.getpwuid(owner).pw_name == pg.SYSTEM_USER
        pids, workdir = c.postgres_pids(), c.workdir
        assert c.proc.pid in pids and len(pids) > 1, pids  # postmaster and its workers
    left = wait_gone(pids)
    assert not left, f"postgres processes left: {left}"
    assert not os.path.exists(workdir), workdir


def test_command_mode_passes_url_and_status():
    r = subprocess.run([sys.executable, HARNESS, "--", "sh", "-c",
                        'case "$GPUFL_TEST_DB" in postgresql://*) exit 3;; esac; exit 9'],
                       capture_output=True, timeout=120)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert b"pg_harness: postgresql://" in r.stderr


def cluster_dir_of(harness_pid):
    """The cluster directory a harness process made (its harness.pid names it): other tests'
    harnesses may run at the same time."""
    for d in glob.glob(os.path.join(tempfile.gettempdir(), pg.DIR_PREFIX + "*")):
        try:
            with open(os.path.join(d, "harness.pid")) as f:
                if int(f.read().strip()) == harness_pid:
                    return d
        except (OSError, ValueError):
            continue
    return None


def test_killed_harness_leaves_nothing():
    # A harness killed by SIGKILL (a ctest timeout) cannot run its cleanup: the server and the
    # command die with it (parent-death signal), and the next harness removes its directory.
    h = subprocess.Popen([sys.executable, HARNESS, "--", "sleep", "60"],
                         stderr=subprocess.PIPE)
    try:
        line = h.stderr.readline()
        assert b"pg_harness: postgresql://" in line, line
        workdir = cluster_dir_of(h.pid)
        assert workdir, "the harness's cluster directory was not found"
        probe = pg.Cluster()
        probe.workdir = workdir
        pids = probe.postgres_pids()
        assert pids, "no postgres process of the harness found"
        deadline = time.monotonic() + 20
        while not (sleeper := [p for p in pg.children_of(h.pid) if p not in pids]):
            assert time.monotonic() < deadline, "the harness's command did not start"
            time.sleep(0.05)
        pids += sleeper
        h.send_signal(signal.SIGKILL)
        h.wait()
        left = wait_gone(pids)
        assert not left, f"postgres or the command outlived the harness: {left}"
        pg.sweep_stale()  # another test's harness may have swept it already
        assert not os.path.exists(workdir)
    finally:
        if h.poll() is None:
            h.kill()
            h.wait()


def test_absent_binaries_skip():
    env = dict(os.environ, GPUFL_PG_BIN="/nonexistent", GPUFL_REQUIRE_POSTGRES="")
    r = subprocess.run([sys.executable, HARNESS, "--", "true"], env=env, capture_output=True,
                       timeout=60)
    assert r.returncode == pg.SKIP_RETURN_CODE, r
    assert b"SKIP" in r.stdout
    env["GPUFL_REQUIRE_POSTGRES"] = "1"
    r = subprocess.run([sys.executable, HARNESS, "--", "true"], env=env, capture_output=True,
                       timeout=60)
    assert r.returncode == 1 and b"FAIL" in r.stderr, r


def main():
    pg.require_postgres()
    tests = [test_cluster_and_cleanup, test_command_mode_passes_url_and_status,
             test_killed_harness_leaves_nothing, test_absent_binaries_skip]
    for t in tests:
        print(f"-- {t.__name__}", flush=True)
        t()
    print(f"pg_harness: {len(tests)} tests passed")


if __name__ == "__main__":
    main()
