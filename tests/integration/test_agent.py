# SPDX-License-Identifier: Apache-2.0
"""gpufl-agent against the real gpufl-server on loopback (SQLite): --once ships every window
of the fixture sessions exactly (open ones up to their last complete line; --live-s 0: sealed
ones only); a running agent delivers a session that appears under
its root (inotify), counts on /metrics, and with --exit-when-drained exits 0 once everything
ended is delivered; killed with SIGKILL at random moments and restarted each time, it loses
nothing and stores nothing twice; racing `gpufl upload` on the same root, each window is stored
once; bad flags exit 2 with one line.

usage: python3 -m pytest tests/integration/test_agent.py, with GPUFL_SERVER, GPUFL_CLI and
GPUFL_AGENT naming the binaries (ctest sets them).
"""
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest

from test_upload import (CLI, FIXTURES, SERVER, Server, expected, free_port, server_env,
                         stored)

AGENT = os.environ.get("GPUFL_AGENT", "build-dev/cmd/gpufl-agent/gpufl-agent")
ENDED = ("basic", "rotated", "gpu", "scoped", "timeline")


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}


@pytest.fixture
def env(tmp_path):
    e = server_env(tmp_path, ())
    yield e
    e["srv"].stop()


def copy_sessions(root, names):
    for s in names:
        shutil.copytree(os.path.join(FIXTURES, s), os.path.join(root, s))


def agent(env, *args, **kw):
    return subprocess.Popen([AGENT, "--log-path", env["root"], "--server", env["srv"].url,
                             "--api-key-file", env["key"], *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env(), **kw)


def wait_for(cond, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def metrics(port):
    """The agent's gpufl_agent_* values; {} while it does not answer yet."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^(gpufl_agent_\w+) (\S+)$", text, re.M)}


def test_once_ships_everything(env):
    """Sealed windows whole, and the open windows of the session that died up to their last
    complete line (live tails are on by default)."""
    copy_sessions(env["root"], ENDED + ("killed",))
    p = agent(env, "--once")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert stored(env["db"]) == expected(env["root"], tails=True)
    # Again: the cursor says everything is there; nothing is sent.
    p = agent(env, "--once")
    p.communicate(timeout=120)
    assert p.returncode == 0 and stored(env["db"]) == expected(env["root"], tails=True)


def test_live_s_0_ships_sealed_windows_only(env):
    copy_sessions(env["root"], ("basic", "killed"))
    p = agent(env, "--once", "--live-s", "0")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert stored(env["db"]) == expected(env["root"]) != expected(env["root"], tails=True)


def test_running_agent_delivers_new_sessions_and_counts(env):
    port = free_port()
    p = agent(env, "--rescan-s", "30", "--listen", "127.0.0.1:%d" % port)
    try:
        assert wait_for(lambda: metrics(port).get("gpufl_agent_passes_total", -1) >= 0, 10)
        copy_sessions(env["root"], ENDED)  # after start: inotify, not the 30 s rescan
        want = expected(env["root"])
        assert wait_for(lambda: stored(env["db"]) == want, 20), stored(env["db"])
        # The counts follow the pass's end (after the spool's weighing), not the last window.
        assert wait_for(lambda: metrics(port).get("gpufl_agent_windows_sent_total") == want[0],
                        20), metrics(port)
        m = metrics(port)
        assert m["gpufl_agent_windows_failed_total"] == 0
        assert m["gpufl_agent_windows_open"] == 0
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
    assert p.returncode == 0


def test_exit_when_drained(env):
    copy_sessions(env["root"], ENDED)
    p = agent(env, "--exit-when-drained", "--listen", "none")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "every session delivered" in err
    assert stored(env["db"]) == expected(env["root"])


def test_kill_9_at_random_moments_loses_nothing(env):
    """Restarted after each SIGKILL, the agent resumes from the cursor: at the end every window
    (the open ones up to their last complete line) is stored exactly once (the server's unique window identity would refuse a second
    copy; the counts prove none was lost)."""
    copy_sessions(env["root"], ENDED + ("killed",))
    rng = random.Random(7)
    kills = int(os.environ.get("GPUFL_AGENT_KILLS", "100"))
    for _ in range(kills):
        p = agent(env, "--listen", "none", "--rescan-s", "1")
        time.sleep(rng.uniform(0.0, 0.25))
        p.kill()
        p.communicate(timeout=30)
    p = agent(env, "--once")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert stored(env["db"]) == expected(env["root"], tails=True)


def test_agent_and_upload_racing(env):
    copy_sessions(env["root"], ENDED)
    a = agent(env, "--once")
    u = subprocess.Popen([CLI, "upload", "--server", env["srv"].url, "--api-key-file", env["key"],
                          "--all", env["root"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=clean_env())
    a.communicate(timeout=120)
    u.communicate(timeout=120)
    assert a.returncode == 0 and u.returncode == 0
    assert stored(env["db"]) == expected(env["root"])


def test_refused_key_is_reported_and_the_agent_goes_on(env):
    copy_sessions(env["root"], ("basic",))
    bad = env["tmp"] / "bad"
    bad.write_text("gpfl_abcdefghij_notakeythisserverknowsatall")
    port = free_port()
    p = subprocess.Popen([AGENT, "--log-path", env["root"], "--server", env["srv"].url,
                          "--api-key-file", str(bad), "--rescan-s", "1", "--listen",
                          "127.0.0.1:%d" % port], stderr=subprocess.PIPE, text=True,
                         env=clean_env())
    try:
        assert wait_for(lambda: metrics(port).get("gpufl_agent_key_refused_total", 0) >= 2, 20)
        assert p.poll() is None  # still running: a new key in the file is read on restart
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    assert "refused the key gpfl_abcdefghij" in err
    assert "notakeythisserverknows" not in err
    assert stored(env["db"]) == (0, 0)


def test_spool_bound_drops_oldest_windows_and_says_so(env):
    """The server away, the undelivered windows past --spool-max-mib: the oldest sealed windows
    are replaced by a spool_dropped record (counted, logged), the newest kept whole; once the
    server is back, every window arrives, the dropped ones as their records."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "bench"))
    import gen_session
    sess = os.path.join(env["root"], "gen")
    os.mkdir(sess)
    wins = gen_session.windows(200000, segment_kernels=40000)
    for i, (_, seq, text) in enumerate(wins):
        path = os.path.join(sess, "device.log" + ("" if seq == 0 else ".%d" % seq))
        with open(path, "w") as f:
            f.write(text)
        os.utime(path, (1000 + i, 1000 + i))  # oldest first: sequence 0
    sizes = [len(text.encode()) for _, _, text in wins]
    assert len(wins) == 5 and min(sizes) > 1024 * 1024
    bound_mib = (sizes[-1] + sizes[-2]) // (1 << 20) + 1  # the newest two fit, three do not
    assert sum(sizes[-3:]) > bound_mib << 20
    dead = "http://127.0.0.1:%d" % free_port()
    r = subprocess.run([AGENT, "--log-path", env["root"], "--server", dead, "--api-key-file",
                        env["key"], "--once", "--budget-s", "1", "--spool-max-mib",
                        str(bound_mib)], capture_output=True, text=True, env=clean_env(),
                       timeout=120)
    assert r.returncode == 2, r.stderr
    dropped = [i for i in range(5) if '"spool_dropped"' in open(
        os.path.join(sess, "device.log" + ("" if i == 0 else ".%d" % i))).read()]
    kept = sum(sizes[i] for i in range(5) if i not in dropped)
    assert dropped == list(range(len(dropped))) and 0 < len(dropped) < 5, dropped
    assert kept <= bound_mib << 20 < kept + sizes[dropped[-1]]
    assert "dropped unsent" in r.stderr and "spool_dropped" in r.stderr
    for i in dropped:
        lines = open(os.path.join(sess, "device.log" + ("" if i == 0 else ".%d" % i))).read()
        assert len(lines.splitlines()) == 3
        assert lines.splitlines()[0].startswith('{"type":"header"')
    # The report says so, segment by segment.
    rep = subprocess.run([CLI, "report", sess], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.count("gpufl-agent dropped this segment unsent") == len(dropped)
    p = agent(env, "--once")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert stored(env["db"]) == expected(env["root"])
    with sqlite3.connect(env["db"]) as c:
        assert c.execute("select count(*) from lines where type = 'spool_dropped'"
                         ).fetchone()[0] == len(dropped)
        assert c.execute("select count(*) from activity").fetchone()[0] == \
            40000 * (5 - len(dropped))


def test_key_revoked_mid_run(env):
    """A session delivered, then the key revoked: the next session is refused and counted, the
    agent keeps running, and nothing of the new session is stored."""
    copy_sessions(env["root"], ("basic",))
    port = free_port()
    p = agent(env, "--rescan-s", "1", "--listen", "127.0.0.1:%d" % port)
    try:
        want = expected(env["root"])
        assert wait_for(lambda: stored(env["db"]) == want, 20)
        with open(env["key"]) as f:
            prefix = f.read().split("_")[1]
        r = subprocess.run([SERVER, "--db", "sqlite:" + env["db"], "admin", "key", "revoke",
                            "--workspace", "team", prefix], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        time.sleep(6)  # the server's key cache: a revoked key stops working within 5 s
        copy_sessions(env["root"], ("gpu",))
        assert wait_for(lambda: metrics(port).get("gpufl_agent_key_refused_total", 0) >= 1, 20)
        assert p.poll() is None
        assert stored(env["db"]) == want
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    assert "refused the key gpfl_%s" % prefix in err


def test_server_restarts_under_the_agent(env):
    """The server stops while sessions arrive and comes back on the same port: the agent retries
    and delivers everything once."""
    port = free_port()
    p = agent(env, "--rescan-s", "1", "--budget-s", "2", "--listen", "127.0.0.1:%d" % port)
    try:
        copy_sessions(env["root"], ("basic",))
        assert wait_for(lambda: stored(env["db"]) == expected(env["root"]), 20)
        srv_port = env["srv"].port
        env["srv"].stop()
        copy_sessions(env["root"], ("gpu", "scoped"))
        assert wait_for(lambda: metrics(port).get("gpufl_agent_windows_failed_total", 0) >= 1,
                        30)
        env["srv"] = Server(env["db"], port=srv_port)
        assert wait_for(lambda: stored(env["db"]) == expected(env["root"]), 60), \
            (stored(env["db"]), expected(env["root"]))
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)


def test_a_window_truncated_under_the_agent(env):
    """Part of an open window delivered, then the file cut below that: reported at each pass,
    never sent over what the server holds; the other sessions go on."""
    src = os.path.join(FIXTURES, "gpu")
    sess = os.path.join(env["root"], "gpu")
    shutil.copytree(src, sess)
    dev = os.path.join(sess, "device.log")
    with open(dev, "rb") as f:
        data = f.read()
    body = data[:data.rfind(b"\n", 0, len(data) - 1) + 1]  # without the session_end line
    with open(dev, "wb") as f:
        f.write(body)
    p = agent(env, "--once")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    held = stored(env["db"])
    with open(dev, "wb") as f:  # cut below what the server holds
        f.write(body[:body.find(b"\n") + 1])
    copy_sessions(env["root"], ("basic",))
    p = agent(env, "--once")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 1, err
    assert "shorter than what the server acknowledged" in err
    only_basic = env["tmp"] / "only-basic"
    shutil.copytree(os.path.join(FIXTURES, "basic"), only_basic / "basic")
    assert stored(env["db"]) == (held[0] + expected(str(only_basic))[0],
                                 held[1] + expected(str(only_basic))[1])


def test_bad_flags(env):
    for args, what in ((["--bogus"], "unknown"), (["--rescan-s", "0", "--log-path", "x"], "1..3600"),
                       (["--live-s", "-1", "--log-path", "x"], "0..3600"),
                       (["--spool-max-mib", "x", "--log-path", "x"], "--spool-max-mib"),
                       ([], "no log root"), (["--log-path", "x"], "no server"),
                       (["--log-path", "x", "--once", "--exit-when-drained", "--server",
                         "http://127.0.0.1:1", "--api-key-file", env["key"]], "--once")):
        r = subprocess.run([AGENT, *args], capture_output=True, text=True, env=clean_env())
        assert r.returncode == 2 and what in r.stderr and len(r.stderr.splitlines()) == 1, \
            (args, r.stderr)
    r = subprocess.run([AGENT, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--log-path" in r.stdout
