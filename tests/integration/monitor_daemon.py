# SPDX-License-Identifier: Apache-2.0
"""gpufl-monitor as a child process for the tests (test_monitor.py,
test_monitor_faults.py, test_monitor_churn.py, test_monitor_crash.py): started
on the fake libnvidia-ml, its port read from its stderr, asked over HTTP and on
raw sockets, and its session files read; check() and exit_status() for tests
that go on past a failed expectation."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request


def env_for(script, fake_lib):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    env["GPUFL_FAKE_NVML"] = script
    env["GPUFL_NVML_LIBRARY"] = fake_lib
    return env


class Daemon:
    def __init__(self, monitor, fake_lib, args, script, env_extra=None):
        env = env_for(script, fake_lib)
        env.update(env_extra or {})
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen([monitor] + args, env=env, stdout=subprocess.DEVNULL,
                                  stderr=self.err)
        self.port = None
        deadline = time.time() + 20
        while time.time() < deadline and self.p.poll() is None:
            m = re.search(r"listening on http://[^:]+:(\d+)/", self.stderr())
            if m and "logs in" in self.stderr():
                self.port = int(m.group(1))
                break
            time.sleep(0.05)

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def get(self, path, headers=None, timeout=10):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path),
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def raw(self, data):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            out = b""
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except OSError:  # the server closed first: what it answered before counts
            try:
                out += s.recv(65536)
            except OSError:
                pass
        finally:
            s.close()
        return out.decode(errors="replace")

    def rss_kib(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            return next(int(x.split()[1]) for x in f if x.startswith("VmRSS:"))

    def stop(self, sig=signal.SIGTERM):
        self.p.send_signal(sig)
        return self.p.wait(timeout=30)


def fresh(root, name):
    path = os.path.join(root, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def sessions(log_path):
    if not os.path.isdir(log_path):
        return []
    return sorted(os.path.join(log_path, d) for d in os.listdir(log_path))


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def session_ended(d):
    return any(r.get("type") == "session_end"
               for name in os.listdir(d) if name.startswith("device.log")
               for r in lines(os.path.join(d, name)))


def wait_for(cond, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


# Expectations a test checks as it goes: a failure is said at once and the test goes on.
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def exit_status(name):
    """Says how the test went; its exit status (1 after any failed check)."""
    print("%s: %s" % (name, "FAILED" if failures else "ok"))
    return 1 if failures else 0
