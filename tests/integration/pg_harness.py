#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A throwaway PostgreSQL cluster for tests: initdb into a temporary directory, a server on
127.0.0.1 (a free port) and a unix socket in that directory, trust authentication, fsync off, one
database, and everything stopped and removed when the test ends (context manager, atexit, and the
server dies with the process that started it, even after SIGKILL). Python's standard library only.

PostgreSQL refuses to run as root, and CI runs as root: there the cluster belongs to a system
user `gpufl-pg` (created with useradd when missing) and the server runs under it. The binaries
come from the newest /usr/lib/postgresql/<version>/bin (or $GPUFL_PG_BIN). Where they are absent
the tests skip (exit 77, ctest's SKIP_RETURN_CODE), unless GPUFL_REQUIRE_POSTGRES=1 (CI) makes
that a failure.

From Python:

    import pg_harness as pg
    pg.require_postgres()                 # exit 77 with a message if absent
    with pg.Cluster() as c:
        c.url                             # postgresql://gpufl@127.0.0.1:PORT/gpufl_test
        c.psql("SELECT 1")                # rows as lists of text

From a shell (how ctest runs the storage suite on PostgreSQL):

    python3 pg_harness.py -- CMD ARGS...  # CMD runs with GPUFL_TEST_DB=<url>; its exit status
    python3 pg_harness.py                 # prints the URL and serves until interrupted
"""

import atexit
import ctypes
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from service_process import ServiceProcess

SKIP_RETURN_CODE = 77
SYSTEM_USER = "gpufl-pg"
SUPERUSER = "gpufl"  # the cluster's own superuser role, whatever OS user runs it
DEFAULT_DB = "gpufl_test"
DIR_PREFIX = "gpufl-pg-"


class PostgresError(RuntimeError):
    """The cluster could not be made or started, or psql failed."""


def _version_key(path):
    name = os.path.basename(os.path.dirname(path))
    return [int(p) for p in re.findall(r"\d+", name)] or [0]


def find_bindir():
    """The directory with initdb and postgres: $GPUFL_PG_BIN, else the newest
    /usr/lib/postgresql/<version>/bin that has both; None when absent."""
    env = os.environ.get("GPUFL_PG_BIN")
    candidates = [env] if env else sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                          key=_version_key, reverse=True)
    for d in candidates:
        if all(os.access(os.path.join(d, t), os.X_OK) for t in ("initdb", "postgres")):
            return d
    return None


def require_postgres():
    """Returns the binaries' directory. Without them, exits the test: 77 (skipped) with a line
    that says how to install them, or 1 when GPUFL_REQUIRE_POSTGRES=1 (CI installs them, so a
    skip there would hide the test)."""
    d = find_bindir()
    if d:
        return d
    msg = "PostgreSQL server binaries not found (Debian: apt-get install postgresql, or scripts/deps.sh)"
    if os.environ.get("GPUFL_REQUIRE_POSTGRES") == "1":
        print(f"FAIL: {msg}, and GPUFL_REQUIRE_POSTGRES=1", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {msg}")
    sys.exit(SKIP_RETURN_CODE)


def free_port():
    """A TCP port free on 127.0.0.1 now (start() retries when another process takes it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _system_user():
    """(uid, gid) to run the server under: the caller's own unless root, else gpufl-pg's."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        # Two tests may race to create it: whoever loses finds it made by the other.
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", SYSTEM_USER],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        try:
            pw = pwd.getpwnam(SYSTEM_USER)
        except KeyError:
            raise PostgresError(f"cannot create the system user {SYSTEM_USER} (useradd failed); "
                                "PostgreSQL refuses to run as root") from None
    return pw.pw_uid, pw.pw_gid


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl


def _child_setup(ids, die_signal):
    # In the child before exec: drop root, then ask for a signal when the thread that started us
    # ends, even by SIGKILL (a ctest timeout). The order matters: a change of credentials clears
    # the parent-death signal. PR_SET_PDEATHSIG is 1.
    def setup():
        if ids:
            os.setgroups([])
            os.setgid(ids[1])
            os.setuid(ids[0])
        if die_signal:
            _PRCTL(1, int(die_signal), 0, 0, 0)
    return setup


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def sweep_stale(tmp=None):
    """Removes the directories of clusters whose harness process is gone (killed before its
    atexit ran; the server itself died with it). Returns how many were removed."""
    n = 0
    for d in glob.glob(os.path.join(tmp or tempfile.gettempdir(), DIR_PREFIX + "*")):
        try:
            with open(os.path.join(d, "harness.pid")) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if not _pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)
            n += 1
    return n


class Cluster(ServiceProcess):
    """One PostgreSQL cluster with one database `dbname`. Use it as a context manager (stopped
    and removed on leaving, also on an exception) or call start() and stop().

    Attributes once started: `port`, `url` (postgresql://gpufl@127.0.0.1:PORT/DBNAME),
    `socket_dir` (also the cluster's directory), `bindir`, `proc` (the postmaster)."""

    STOP_SIGNAL = signal.SIGINT  # fast shutdown: clients cut, no checkpoint wait
    STOP_TIMEOUT_S = 30
    KEEP_VARIABLE = "GPUFL_KEEP_POSTGRES"

    def __init__(self, dbname=DEFAULT_DB, bindir=None, ready_timeout_s=60.0, settings=None):
        self.dbname = dbname
        self.bindir = bindir or find_bindir()
        self.ready_timeout_s = ready_timeout_s
        self.settings = dict(settings or {})
        self.workdir = None
        self.socket_dir = None
        self.port = None
        self.url = None
        self.proc = None
        self._log = None
        self._ids = None

    # -- life cycle --------------------------------------------------------------------------

    def start(self):
        """initdb, start the server, wait until it accepts connections, create the database.
        Raises PostgresError with the server's log when any step fails."""
        if not self.bindir:
            raise PostgresError("PostgreSQL binaries not found (see require_postgres())")
        sweep_stale()
        self._ids = _system_user()
        self.workdir = tempfile.mkdtemp(prefix=DIR_PREFIX)
        atexit.register(self.stop)
        with open(os.path.join(self.workdir, "harness.pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
        if self._ids:
            os.chown(self.workdir, *self._ids)
        self.socket_dir = self.workdir
        data = os.path.join(self.workdir, "data")
        try:
            self._run([os.path.join(self.bindir, "initdb"), "-D", data, "-U", SUPERUSER,
                       "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"], "initdb")
            for attempt in range(3):  # the free port may be taken before the server binds it
                try:
                    self._start_once(data, attempt)
                    break
                except PostgresError as e:
                    self._kill()
                    if "already in use" not in str(e) or attempt == 2:
                        raise
            self.psql(f'CREATE DATABASE "{self.dbname}"', dbname="postgres")
        except BaseException:
            self.stop()
            raise
        self.url = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{self.dbname}"
        return self

    def _run(self, argv, what):
        r = subprocess.run(argv, cwd=self.workdir, capture_output=True,
                           preexec_fn=_child_setup(self._ids, None))
        if r.returncode != 0:
            raise PostgresError(f"{what} failed ({r.returncode}):\n"
                                + (r.stdout + r.stderr).decode(errors="replace")[-4000:])
        return r

    def _start_once(self, data, attempt):
        self.port = free_port()
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": self.socket_dir,
            # A throwaway cluster: durability costs time and buys nothing here.
            "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
            "max_connections": "100", "shared_buffers": "32MB",
            "log_min_messages": "warning", "logging_collector": "off",
        }
        settings.update(self.settings)
        argv = [os.path.join(self.bindir, "postgres"), "-D", data]
        for k, v in settings.items():
            argv += ["-c", f"{k}={v}"]
        log_path = os.path.join(self.workdir, f"postgres-{attempt}.log")
        self._log = open(log_path, "w+b")
        # SIGQUIT (immediate shutdown) when the harness dies: nothing here needs a clean stop.
        self.proc = subprocess.Popen(argv, cwd=self.workdir, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     preexec_fn=_child_setup(self._ids, signal.SIGQUIT))
        deadline = time.monotonic() + self.ready_timeout_s
        isready = os.path.join(self.bindir, "pg_isready")
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PostgresError(f"postgres exited with {self.proc.returncode} while "
                                    "starting:\n" + self.server_log())
            if os.access(isready, os.X_OK):
                r = subprocess.run([isready, "-q", "-h", "127.0.0.1", "-p", str(self.port)],
                                   check=False)
                if r.returncode == 0:
                    return
            elif os.path.exists(os.path.join(self.socket_dir, f".s.PGSQL.{self.port}")):
                return
            time.sleep(0.1)
        raise PostgresError(f"postgres not ready within {self.ready_timeout_s:g} s on port "
                            f"{self.port}:\n" + self.server_log())

    def server_log(self, tail_chars=4000):
        """The last tail_chars of the server's own output."""
        if not self._log:
            return ""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-tail_chars:]

    # -- use ---------------------------------------------------------------------------------

    def psql(self, sql, dbname=None):
        """Runs sql through psql; returns the rows as lists of text (tab-separated, unaligned).
        Raises PostgresError with psql's message on an error."""
        argv = [os.path.join(self.bindir, "psql"), "-X", "-q", "-A", "-t", "-F", "\t",
                "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port),
                "-U", SUPERUSER, "-d", dbname or self.dbname, "-c", sql]
        r = subprocess.run(argv, capture_output=True, env=dict(os.environ, PGCONNECT_TIMEOUT="10"))
        if r.returncode != 0:
            raise PostgresError(f"psql: {sql[:200]}: " + r.stderr.decode(errors="replace"))
        out = r.stdout.decode()
        return [line.split("\t") for line in out.splitlines() if line != ""]

    def postgres_pids(self):
        """Pids of this cluster's processes now: the postmaster (from data/postmaster.pid) and
        its children, read from /proc (the children retitle themselves, so no command line
        names the cluster). What the cleanup test expects to be gone after stop()."""
        try:
            with open(os.path.join(self.workdir or "", "data", "postmaster.pid")) as f:
                pm = int(f.readline().strip())
        except (OSError, ValueError):
            return []
        return ([pm] if os.path.exists(f"/proc/{pm}") else []) + children_of(pm)


def children_of(pid):
    """Pids of the live processes whose parent is pid, from /proc (racing exits skipped)."""
    kids = []
    for p in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(p) as f:
                # "pid (comm) state ppid ...": comm may hold spaces, so split after ")"
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            kids.append(int(p.split("/")[2]))
    return kids


def _main(argv):
    args = argv[1:]
    dbname = DEFAULT_DB
    if args[:1] == ["--help"]:
        print(__doc__.strip())
        return 0
    if len(args) >= 2 and args[0] == "--db":
        dbname, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    require_postgres()
    # SIGTERM (ctest's timeout, a CI cancel) unwinds through the context manager and atexit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    with Cluster(dbname=dbname) as c:
        print(f"pg_harness: {c.url}", file=sys.stderr, flush=True)
        if not args:
            print(c.url, flush=True)
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
            return 0
        env = dict(os.environ, GPUFL_TEST_DB=c.url)
        # The command ends with the harness too (SIGTERM), so a killed harness leaves no test
        # running against a cluster that is gone.
        return subprocess.run(args, env=env, check=False,
                              preexec_fn=_child_setup(None, signal.SIGTERM)).returncode


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
