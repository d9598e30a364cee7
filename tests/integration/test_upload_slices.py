# SPDX-License-Identifier: Apache-2.0
"""Windows in slices (docs/protocol.md, "A window in slices") against the real gpufl-server on
loopback (SQLite): a running session's open window reaches the server line by line while it is
written (gpufl-agent's live tails), and its lines end up stored once and in order when it seals;
`gpufl upload --tails` ships a session that died up to its last complete line; a window larger
than the server's body cap is split into slices at line ends (413) and arrives whole; a cursor
lost after part of a window was shipped makes the sender learn where the server's bytes end
instead of sending them again.

usage: python3 -m pytest tests/integration/test_upload_slices.py, with GPUFL_SERVER, GPUFL_CLI
and GPUFL_AGENT naming the binaries (ctest sets them).
"""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys

import pytest

from test_agent import AGENT, clean_env, metrics, wait_for
from test_upload import FIXTURES, complete_lines, expected, free_port, server_env, stored, upload

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import gen_session  # noqa: E402


def stored_lines(db, channel="device", sequence=0):
    """The stored lines of one window, in order."""
    with sqlite3.connect(db) as c:
        return [r[0] for r in c.execute(
            "select body from lines where channel = ? and sequence = ? order by line_no",
            (channel, sequence))]


def window_row(db, channel="device", sequence=0):
    with sqlite3.connect(db) as c:
        c.row_factory = sqlite3.Row
        r = c.execute("select * from windows where channel = ? and sequence = ?",
                      (channel, sequence)).fetchone()
        return dict(r) if r else None


def lines_of(path):
    with open(path, "rb") as f:
        data = f.read()
    return [line.decode() for line in data[:data.rfind(b"\n") + 1].split(b"\n")[:-1]]


@pytest.fixture
def env(tmp_path):
    e = server_env(tmp_path, ())
    yield e
    e["srv"].stop()


def test_live_tail_of_a_running_session(env):
    """A session whose device.log is still being written: the agent ships each new complete
    line within a few seconds, never a cut line, and the sealed window is stored exactly as
    written (the same lines, in order, once)."""
    src = os.path.join(FIXTURES, "gpu")
    sess = os.path.join(env["root"], "gpu")
    os.mkdir(sess)
    for name in os.listdir(src):
        if name != "device.log":
            shutil.copy(os.path.join(src, name), sess)
    all_lines = [line + "\n" for line in lines_of(os.path.join(src, "device.log"))]
    assert all_lines[-1].startswith('{"type":"session_end"') and len(all_lines) >= 8
    dev = os.path.join(sess, "device.log")
    half = len(all_lines) // 2
    with open(dev, "w") as f:
        f.write("".join(all_lines[:half]))
    port = free_port()
    p = subprocess.Popen([AGENT, "--log-path", env["root"], "--server", env["srv"].url,
                          "--api-key-file", env["key"], "--live-s", "1", "--rescan-s", "30",
                          "--listen", "127.0.0.1:%d" % port], stderr=subprocess.PIPE, text=True,
                         env=clean_env())
    try:
        assert wait_for(lambda: len(stored_lines(env["db"])) == half, 15), stored_lines(env["db"])
        assert window_row(env["db"])["final"] == 0
        # More lines and a cut one: the complete ones follow, the cut one waits.
        cut = all_lines[-2]
        with open(dev, "a") as f:
            f.write("".join(all_lines[half:-2]) + cut[:len(cut) // 2])
        assert wait_for(lambda: len(stored_lines(env["db"])) == len(all_lines) - 2, 15)
        assert window_row(env["db"])["final"] == 0
        with open(dev, "a") as f:
            f.write(cut[len(cut) // 2:] + all_lines[-1])
        assert wait_for(lambda: (window_row(env["db"]) or {}).get("final") == 1, 15)
        assert wait_for(lambda: metrics(port).get("gpufl_agent_windows_open", 1) == 0, 15)
        m = metrics(port)
        assert m["gpufl_agent_slices_sent_total"] >= 3, m
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert stored_lines(env["db"]) == [line[:-1] for line in all_lines]
    row = window_row(env["db"])
    assert row["bytes"] == os.path.getsize(dev)
    assert stored(env["db"]) == expected(env["root"])
    # The window sent whole now is the same window: a duplicate, nothing stored twice.
    os.remove(os.path.join(env["root"], ".gpufl-upload.json"))
    r = upload(env, env["root"])
    assert r.returncode == 0, r.stderr
    assert stored_lines(env["db"]) == [line[:-1] for line in all_lines]


def test_upload_tails_ships_a_session_that_died(env):
    shutil.copytree(os.path.join(FIXTURES, "killed"), os.path.join(env["root"], "killed"))
    r = upload(env, env["root"])
    assert r.returncode == 0, r.stderr
    assert "--tails" in r.stdout
    sealed_only = stored(env["db"])
    assert sealed_only == expected(env["root"])
    r = upload(env, "--tails", env["root"])
    assert r.returncode == 0, r.stderr
    assert "sent up to their last complete line" in r.stdout
    assert stored(env["db"]) == expected(env["root"], tails=True) != sealed_only
    # Nothing new: nothing sent again.
    r = upload(env, "--tails", env["root"])
    assert r.returncode == 0 and stored(env["db"]) == expected(env["root"], tails=True)


def test_a_window_past_the_body_cap_is_split(tmp_path):
    """--max-body-mib 1 and a 100 000-kernel segment of several MiB: 413, then slices at line
    ends that the server appends; every kernel arrives once."""
    e = server_env(tmp_path, (), server_args=("--max-body-mib", "1"))
    try:
        sess = os.path.join(e["root"], "big")
        os.makedirs(sess)
        for _, seq, text in gen_session.windows(100000, segment_kernels=100000):
            assert seq == 0  # one segment: one window past the cap
            with open(os.path.join(sess, "device.log"), "w") as f:
                f.write(text)
        size = os.path.getsize(os.path.join(sess, "device.log"))
        assert size > 2 * 1024 * 1024
        r = upload(e, e["root"])
        assert r.returncode == 0, r.stderr
        assert " slices" in r.stdout, r.stdout
        with sqlite3.connect(e["db"]) as c:
            kernels = c.execute("select count(*) from activity where kind = 'kernel'").fetchone()
        assert kernels[0] == 100000
        assert stored_lines(e["db"]) == lines_of(os.path.join(sess, "device.log"))
        assert window_row(e["db"])["final"] == 1
    finally:
        e["srv"].stop()


def test_a_lost_cursor_mid_window_resumes_where_the_server_is(env):
    """Part of an open window shipped, the cursor lost, the window sealed: the sender asks the
    server, sends only the rest, and the window is stored once, whole."""
    src = os.path.join(FIXTURES, "basic")
    sess = os.path.join(env["root"], "basic")
    os.mkdir(sess)
    all_lines = [line + "\n" for line in lines_of(os.path.join(src, "device.log"))]
    dev = os.path.join(sess, "device.log")
    with open(dev, "w") as f:
        f.write("".join(all_lines[:-1]))
    r = upload(env, "--tails", env["root"])
    assert r.returncode == 0, r.stderr
    assert len(stored_lines(env["db"])) == len(all_lines) - 1
    cursor = os.path.join(env["root"], ".gpufl-upload.json")
    with open(cursor) as f:
        (state,) = json.load(f)["sessions"].values()
    assert "partial" in state  # the open window: how far the server holds it
    os.remove(cursor)
    with open(dev, "a") as f:
        f.write(all_lines[-1])
    r = upload(env, env["root"])
    assert r.returncode == 0, r.stderr
    assert stored_lines(env["db"]) == [line[:-1] for line in all_lines]
    assert window_row(env["db"])["final"] == 1
    assert complete_lines(dev) == len(all_lines)
