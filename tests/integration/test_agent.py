# SPDX-License-Identifier: Apache-2.0
"""gpufl-agent against the real gpufl-server on loopback (SQLite): --once ships every sealed
window of the fixture sessions exactly; a running agent delivers a session that appears under
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
import subprocess
import time
import urllib.request

import pytest

from test_upload import CLI, FIXTURES, expected, free_port, server_env, stored

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


def test_once_ships_everything_sealed(env):
    copy_sessions(env["root"], ENDED + ("killed",))
    p = agent(env, "--once")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert stored(env["db"]) == expected(env["root"])
    # Again: the cursor says everything is there; nothing is sent.
    p = agent(env, "--once")
    p.communicate(timeout=120)
    assert p.returncode == 0 and stored(env["db"]) == expected(env["root"])


def test_running_agent_delivers_new_sessions_and_counts(env):
    port = free_port()
    p = agent(env, "--rescan-s", "30", "--listen", "127.0.0.1:%d" % port)
    try:
        assert wait_for(lambda: metrics(port).get("gpufl_agent_passes_total", -1) >= 0, 10)
        copy_sessions(env["root"], ENDED)  # after start: inotify, not the 30 s rescan
        want = expected(env["root"])
        assert wait_for(lambda: stored(env["db"]) == want, 20), stored(env["db"])
        m = metrics(port)
        assert m["gpufl_agent_windows_sent_total"] == want[0]
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
    """Restarted after each SIGKILL, the agent resumes from the cursor: at the end every sealed
    window is stored exactly once (the server's unique window identity would refuse a second
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
    assert stored(env["db"]) == expected(env["root"])


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


def test_bad_flags(env):
    for args, what in ((["--bogus"], "unknown"), (["--rescan-s", "0", "--log-path", "x"], "1..3600"),
                       ([], "no log root"), (["--log-path", "x"], "no server"),
                       (["--log-path", "x", "--once", "--exit-when-drained", "--server",
                         "http://127.0.0.1:1", "--api-key-file", env["key"]], "--once")):
        r = subprocess.run([AGENT, *args], capture_output=True, text=True, env=clean_env())
        assert r.returncode == 2 and what in r.stderr and len(r.stderr.splitlines()) == 1, \
            (args, r.stderr)
    r = subprocess.run([AGENT, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--log-path" in r.stdout
