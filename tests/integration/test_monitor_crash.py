#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-monitor says why it died: a fatal signal (SIGSEGV, SIGBUS, SIGABRT,
sent here with kill) writes one line naming the signal, the address, the
sender, the thread and the version, then the native backtrace, to stderr and
to crash.txt in the current session directory (the new one after SIGHUP),
and the process still dies of that signal.

A real fault is mon_crash_fault's (the same handler in a program that writes
to a read-only page): its line gives the faulting address and code.

usage: test_monitor_crash.py GPUFL_MONITOR FAKE_NVML_LIB SCRIPT LOG_ROOT MON_CRASH_FAULT
"""
import os
import re
import signal
import subprocess
import sys
import time

import monitor_daemon as md
from monitor_daemon import check

MONITOR, FAKE_LIB, SCRIPT, LOG_ROOT, FAULT = sys.argv[1:6]
os.makedirs(LOG_ROOT, exist_ok=True)

def line_re(sig, name, pid):
    return re.compile(r"gpufl-monitor: fatal signal %d \(%s\) sent by pid %d, thread \d+, pid %d, "
                      r"unix time \d{10}, gpufl \S+; backtrace:\n((?:.*\[0x[0-9a-f]+\]\n)+)"
                      % (sig, name, os.getpid(), pid))


def crash(name, sig, reopen=False):
    log_path = md.fresh(LOG_ROOT, name)
    d = md.Daemon(MONITOR, FAKE_LIB, ["--listen", "127.0.0.1:0", "--interval-ms", "100",
                                      "--log-path", log_path], SCRIPT)
    check(d.port is not None, name + ": the daemon serves: " + d.stderr())
    if d.port is None:
        d.p.kill()
        return
    if reopen:
        d.p.send_signal(signal.SIGHUP)
        check(md.wait_for(lambda: "logs reopened" in d.stderr(), 10), name + ": reopened")
    time.sleep(0.3)
    os.kill(d.p.pid, sig)
    rc = d.p.wait(timeout=30)
    err = d.stderr()
    check(rc == -sig, "%s: died of signal %d as before: %r" % (name, sig, rc))
    m = line_re(sig, signal.Signals(sig).name, d.p.pid).search(err)
    check(m is not None, "%s: the line and a backtrace on stderr: %s" % (name, err[-2000:]))
    sessions = md.sessions(log_path)
    check(len(sessions) == (2 if reopen else 1), "%s: sessions %r" % (name, sessions))
    where = [s for s in sessions if os.path.exists(os.path.join(s, "crash.txt"))]
    check(where == sessions[-1:], "%s: crash.txt in the current session only: %r" % (name, where))
    if where:
        with open(os.path.join(where[0], "crash.txt")) as f:
            text = f.read()
        check(line_re(sig, signal.Signals(sig).name, d.p.pid).fullmatch(text) is not None,
              "%s: crash.txt holds the line and the backtrace: %r" % (name, text[:500]))


def real_fault():
    where = md.fresh(LOG_ROOT, "fault")
    os.makedirs(where)
    p = subprocess.Popen([FAULT, where], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = (x.decode(errors="replace") for x in p.communicate(timeout=60))
    check(p.returncode == -signal.SIGSEGV, "the fault kills with SIGSEGV: %r" % p.returncode)
    page = out.strip() or "(none)"
    fault = re.compile(r"gpufl-monitor: fatal signal 11 \(SIGSEGV\) at address %s, code 2, "
                       r"thread %d, pid %d, unix time \d{10}, gpufl test; backtrace:\n"
                       r"((?:.*\[0x[0-9a-f]+\]\n)+)" % (re.escape(page), p.pid, p.pid))
    m = fault.search(err)
    check(m is not None and "mon_crash_fault" in m.group(1),
          "a real fault: its address, code and a backtrace through the program: %s" % err)
    path = os.path.join(where, "crash.txt")
    check(os.path.exists(path) and fault.fullmatch(open(path).read()) is not None,
          "the fault's crash.txt: %r" % (open(path).read() if os.path.exists(path) else None))


real_fault()
crash("segv", signal.SIGSEGV)
crash("bus_after_reopen", signal.SIGBUS, reopen=True)
crash("abort", signal.SIGABRT)
sys.exit(md.exit_status("test_monitor_crash"))
