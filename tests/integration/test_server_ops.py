# SPDX-License-Identifier: Apache-2.0
"""gpufl-server's users, operations, live events and fleet views, as a whole process on loopback,
on SQLite and (through pg_harness.py, where PostgreSQL is installed) on PostgreSQL: login, me,
logout, a bad password and an unknown user alike, CSRF, the cookie's flags, the login rate limit,
CORS off and on, /metrics moving with ingest (and promtool's lint), structured logs without
secrets, SSE samples, heartbeats and a slow client's `dropped` event, the fleet views after a
GPU session, jobs grouped by the header's job id, and another workspace seeing nothing.

usage: python3 -m pytest tests/integration/test_server_ops.py, with GPUFL_SERVER naming the
binary (ctest sets it).
"""
import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pg_harness  # noqa: E402
import server_harness as sh  # noqa: E402

SERVER = os.environ.get("GPUFL_SERVER", "build-dev/cmd/gpufl-server/gpufl-server")
FIXTURES = os.path.join(HERE, "..", "fixtures", "sessions")
STREAM = "/api/v1/events/stream"
PASSWORD = "correct horse battery"
ORIGIN = "https://dash.example"


# ---- the server and its database -----------------------------------------------------------

def admin(url, *args, stdin=None):
    return subprocess.run([SERVER, "--db", url, "admin", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def must(r):
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


class Server(sh.Server):
    """server_harness's server process; its answers keep every header (Set-Cookie twice)."""

    def __init__(self, url, log_path, args=(), env_extra=None):
        super().__init__(url, args, env_extra, log_dir=os.path.dirname(log_path))

    def request(self, method, path, body=None, headers=None):
        c = self.conn()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        try:
            doc = json.loads(data) if data else None
        except ValueError:
            doc = data.decode()
        return r.status, doc, r.headers


def bearer(key):
    return {"Authorization": "Bearer " + key}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def db(request, tmp_path_factory):
    """A fresh database with workspaces alpha and beta, their keys and a user of alpha."""
    d = tmp_path_factory.mktemp(request.param)
    cluster = None
    if request.param == "sqlite":
        url = "sqlite:" + str(d / "ops.db")
    else:
        if pg_harness.find_bindir() is None:
            if os.environ.get("GPUFL_REQUIRE_POSTGRES") == "1":
                pytest.fail("PostgreSQL is required (GPUFL_REQUIRE_POSTGRES=1) but not installed")
            pytest.skip("PostgreSQL not installed: the PostgreSQL half is skipped")
        cluster = pg_harness.Cluster()
        cluster.start()
        url = cluster.url
    for ws in ("alpha", "beta"):
        must(admin(url, "workspace", "create", ws))
    keys = {role: must(admin(url, "key", "create", "--workspace", "alpha", "--role", role))
            for role in ("ingest", "read", "admin")}
    keys["beta_read"] = must(admin(url, "key", "create", "--workspace", "beta", "--role", "read"))
    keys["beta_ingest"] = must(admin(url, "key", "create", "--workspace", "beta", "--role",
                                     "ingest"))
    keys["revoked"] = must(admin(url, "key", "create", "--workspace", "alpha", "--role", "read"))
    must(admin(url, "key", "revoke", "--workspace", "alpha", keys["revoked"].split("_")[1]))
    for user in ("ann", "bob", "cat"):
        must(admin(url, "user", "create", "--workspace", "alpha", user, stdin=PASSWORD + "\n"))
    yield {"url": url, "dir": str(d), "keys": keys, "engine": request.param}
    if cluster:
        cluster.stop()


@pytest.fixture(scope="module")
def srv(db):
    s = Server(db["url"], os.path.join(db["dir"], "server.log"),
               env_extra={"GPUFL_SERVER_TEST_LIVE_HEARTBEAT_MS": "300"})
    yield s
    assert s.stop() == 0


# ---- windows -------------------------------------------------------------------------------

def session_windows(name, sid=None, job=None):
    """The windows of a fixture session: (sid, channel, seq, window_id, text), the session id
    replaced by sid and, with job, the headers naming that job as GPUFL_JOB_ID."""
    out = []
    d = os.path.join(FIXTURES, name)
    for f in sorted(os.listdir(d)):
        m = re.match(r"(device|scope|system)\.log(?:\.(\d+))?$", f)
        if not m:
            continue
        text = open(os.path.join(d, f)).read()
        text = text[: text.rfind("\n") + 1]
        old = json.loads(text.split("\n", 1)[0])["session_id"]
        new = sid or old
        text = text.replace(old, new)
        if job:
            head, rest = text.split("\n", 1)
            h = json.loads(head)
            h["job_id"], h["job_id_from"] = job, "GPUFL_JOB_ID"
            text = json.dumps(h, separators=(",", ":")) + "\n" + rest
        seq = int(m.group(2) or 0)
        out.append((new, m.group(1), seq, "%s-%s-%d" % (new, m.group(1), seq), text))
    return out


def post(srv, key, w):
    sid, ch, seq, wid, text = w
    h = {"X-GpuFlight-Session-Id": sid, "X-GpuFlight-Window-Channel": ch,
         "X-GpuFlight-Window-Sequence": str(seq), "X-GpuFlight-Window-Id": wid,
         "X-GpuFlight-Wire-Version": "1", "Content-Encoding": "gzip",
         "Content-Type": "application/x-ndjson", **bearer(key)}
    return srv.request("POST", STREAM, gzip.compress(text.encode()), h)


def rows_of(text):
    n = 0
    for line in text.split("\n")[:-1]:
        rec = json.loads(line)
        if rec["type"] in ("header", "dict"):
            continue
        cols = [v for v in rec.values() if isinstance(v, list)]
        n += len(cols[0]) if rec["type"] in ("kernel", "copy", "memset", "sync", "gpu_sample",
                                             "host_sample", "scope_begin", "scope_end") and cols \
            else 1
    return n


# ---- logins ----------------------------------------------------------------------------------

def login(srv, user="ann", password=PASSWORD, workspace="alpha"):
    body = json.dumps({"workspace": workspace, "user": user, "password": password})
    return srv.request("POST", "/api/v1/auth/login", body, {"Content-Type": "application/json"})


def cookie_of(headers):
    return headers["Set-Cookie"].split(";", 1)[0]


def test_login_me_logout(srv):
    st, doc, h = login(srv)
    assert st == 200, doc
    assert doc["role"] == "read" and doc["user"] == "ann" and doc["workspace"] == "alpha"
    flags = [f.strip() for f in h["Set-Cookie"].split(";")]
    name, value = flags[0].split("=", 1)
    assert name == "gpufl_session" and len(value) == 43
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(flags)
    assert "Secure" not in flags  # no TLS here (test_server_ingest covers TLS)
    cookie = {"Cookie": flags[0]}
    st, me, _ = srv.request("GET", "/api/v1/auth/me", headers=cookie)
    assert (st, me) == (200, {"kind": "login", "workspace": "alpha", "user": "ann",
                              "role": "read"})
    # A cookie session reads (role read) ...
    assert srv.request("GET", "/api/v1/fleet/hosts", headers=cookie)[0] == 200
    # ... and may not ingest.
    assert srv.request("POST", "/api/v1/events/session-complete", "{}",
                       {**cookie, "X-CSRF-Token": doc["csrf_token"]})[0] == 403
    # State-changing requests on a cookie need the login's CSRF token.
    st, err, _ = srv.request("POST", "/api/v1/auth/logout", headers=cookie)
    assert st == 403 and "CSRF" in err["error"]
    st, _, _ = srv.request("POST", "/api/v1/auth/logout",
                           headers={**cookie, "X-CSRF-Token": "x" * 43})
    assert st == 403
    st, _, h = srv.request("POST", "/api/v1/auth/logout",
                           headers={**cookie, "X-CSRF-Token": doc["csrf_token"]})
    assert st == 200 and "Max-Age=0" in h["Set-Cookie"]
    assert srv.request("GET", "/api/v1/auth/me", headers=cookie)[0] == 401
    # A key needs no CSRF token, and me says which key.
    st, me, _ = srv.request("GET", "/api/v1/auth/me", headers=bearer(keys_of(srv)["read"]))
    assert st == 200 and me["kind"] == "key" and me["role"] == "read"


def keys_of(srv):
    return srv.keys


@pytest.fixture(autouse=True)
def _keys(srv, db):
    srv.keys = db["keys"]


def test_bad_password_and_unknown_user_alike(srv):
    timings = {}
    answers = {}
    # Three rounds, each case's fastest kept: a loaded machine delays single requests (3
    # failures of a name stay under the rate limit's 5).
    for _ in range(3):
        for case, user, pw in (("wrong", "bob", "not the password"),
                               ("unknown", "nobody", PASSWORD), ("no workspace", "bob", PASSWORD)):
            ws = "nowhere" if case == "no workspace" else "alpha"
            t = time.monotonic()
            st, doc, h = login(srv, user, pw, ws)
            took = time.monotonic() - t
            timings[case] = min(timings.get(case, took), took)
            answers[case] = (st, doc)
            assert "Set-Cookie" not in h
    assert answers["wrong"] == answers["unknown"] == answers["no workspace"]
    assert answers["wrong"][0] == 401
    # Each costs one Argon2id verification: within a factor of 3 of each other.
    assert max(timings.values()) < 3 * min(timings.values()) + 0.05, timings
    assert login(srv, "bob")[0] == 200  # the right password still works
    st, doc, _ = srv.request("POST", "/api/v1/auth/login", "not json")
    assert st == 400


def test_login_rate_limit(srv):
    for _ in range(5):
        assert login(srv, "cat", "wrong password")[0] == 401
    st, doc, h = login(srv, "cat")  # even the right password, while the window lasts
    assert st == 429 and 1 <= int(h["Retry-After"]) <= 60, doc
    assert login(srv, "ann")[0] == 200  # other users are not limited


def test_cors_off_by_default(srv):
    st, _, h = srv.request("GET", "/healthz", headers={"Origin": ORIGIN})
    assert st == 200 and "Access-Control-Allow-Origin" not in h
    assert srv.request("OPTIONS", "/api/v1/fleet/hosts", headers={"Origin": ORIGIN})[0] in (404,
                                                                                            405)


def test_cors_on_for_one_origin(db):
    s = Server(db["url"], os.path.join(db["dir"], "cors.log"), ["--cors-origin", ORIGIN])
    try:
        st, _, h = s.request("GET", "/api/v1/fleet/hosts",
                             headers={"Origin": ORIGIN, **bearer(db["keys"]["read"])})
        assert st == 200 and h["Access-Control-Allow-Origin"] == ORIGIN
        assert h["Access-Control-Allow-Credentials"] == "true"
        st, _, h = s.request("GET", "/healthz", headers={"Origin": "https://evil.example"})
        assert st == 200 and "Access-Control-Allow-Origin" not in h
        st, _, h = s.request("OPTIONS", "/api/v1/auth/logout", headers={
            "Origin": ORIGIN, "Access-Control-Request-Method": "POST"})
        assert st == 204 and "X-CSRF-Token" in h["Access-Control-Allow-Headers"]
    finally:
        assert s.stop() == 0
    bad = subprocess.run([SERVER, "--cors-origin", "*", "--help"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "--cors-origin" in bad.stderr


# ---- metrics and logs ------------------------------------------------------------------------

def scrape(srv):
    st, text, h = srv.request("GET", "/metrics")
    assert st == 200 and h["Content-Type"].startswith("text/plain; version=0.0.4")
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return text, values


def test_metrics_move_with_ingest(srv, db):
    _, before = scrape(srv)
    windows = session_windows("basic", sid="metrics-%s" % db["engine"])
    for w in windows:
        st, doc, _ = post(srv, db["keys"]["ingest"], w)
        assert st == 200 and doc["window"] == "stored", doc
    post(srv, db["keys"]["ingest"], windows[0])  # a duplicate
    # A request is counted when the server has finished it, which may be just after the client
    # read its answer: scrape until the last one is in (at most 5 s).
    code = 'gpufl_server_requests_total{method="POST",route="/api/v1/events/stream",code="200"}'
    hist = ('gpufl_server_request_duration_seconds_count{method="POST",'
            'route="/api/v1/events/stream"}')
    deadline = time.monotonic() + 5
    while True:
        text, after = scrape(srv)
        if (after.get(code, 0) - before.get(code, 0) >= len(windows) + 1 and
                after.get(hist, 0) - before.get(hist, 0) >= len(windows) + 1) or \
                time.monotonic() > deadline:
            break
        time.sleep(0.05)

    def moved(name):
        return after.get(name, 0) - before.get(name, 0)

    assert moved('gpufl_server_windows_total{outcome="stored"}') == len(windows)
    assert moved('gpufl_server_windows_total{outcome="duplicate"}') == 1
    assert moved("gpufl_server_ingested_bytes_total") == sum(len(w[4]) for w in windows)
    assert moved("gpufl_server_ingested_rows_total") == sum(rows_of(w[4]) for w in windows)
    assert moved(code) == len(windows) + 1
    assert moved(hist) == len(windows) + 1
    assert after["gpufl_server_windows_in_progress"] == 0
    assert after["gpufl_server_store_errors_total"] == 0
    if shutil.which("promtool"):
        r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True)
        assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), \
            r.stdout + r.stderr


def test_logs_are_json_lines_without_secrets(srv, db):
    st, doc, h = login(srv, "ann")
    assert st == 200
    cookie = cookie_of(h)
    srv.request("GET", "/api/v1/auth/me", headers={"Cookie": cookie})
    srv.request("GET", "/api/v1/fleet/hosts", headers=bearer(db["keys"]["read"]))
    time.sleep(0.2)  # the access log is written when a request completes
    log = srv.stderr()
    requests = 0
    for line in log.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)  # one object a line
            assert rec["event"] == "request" and rec["ts"].endswith("Z")
            requests += 1
        else:  # the few lifecycle lines: plain, prefixed
            assert line.startswith("gpufl-server: "), line
    assert requests >= 3
    for secret in [*db["keys"].values(), PASSWORD, cookie.split("=", 1)[1], doc["csrf_token"]]:
        assert secret not in log


# ---- live ------------------------------------------------------------------------------------

class Sse:
    """A raw SSE client: it reads only when asked, and undoes the chunked transfer coding so
    that a chunk boundary never splits an event for the tests' patterns."""

    def __init__(self, port, key, rcvbuf=None):
        self.s = socket.socket()
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.connect(("127.0.0.1", port))
        self.s.sendall(("GET /api/v1/live HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                        "Accept: text/event-stream\r\n\r\n" % key).encode())
        self.raw = b""

    @property
    def buf(self):
        """The response head and the body's complete chunks, decoded."""
        head, sep, rest = self.raw.partition(b"\r\n\r\n")
        if not sep:
            return self.raw
        if b"chunked" not in head.lower():
            return head + sep + rest
        body = b""
        while True:
            size_line, crlf, after = rest.partition(b"\r\n")
            if not crlf:
                break
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0 or len(after) < size + 2:
                break
            body += after[:size]
            rest = after[size + 2:]
        return head + sep + body

    def read_until(self, pred, timeout=10):
        """Reads until pred(text so far) is true; returns the text."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = self.buf.decode(errors="replace")
            if pred(text):
                return text
            self.s.settimeout(max(0.05, deadline - time.time()))
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            self.raw += chunk
        return self.buf.decode(errors="replace")

    def events(self, name, text=None):
        """The data of each complete event called name."""
        if text is None:
            text = self.buf.decode(errors="replace")
        return [json.loads(m) for m in re.findall(r"event: %s\r?\ndata: (.*)\r?\n\r?\n" % name, text)]

    def close(self):
        self.s.close()


def test_live_samples_states_and_heartbeat(srv, db):
    alpha = Sse(srv.port, db["keys"]["read"])
    beta = Sse(srv.port, db["keys"]["beta_read"])
    try:
        text = alpha.read_until(lambda t: "text/event-stream" in t and t.count(": heartbeat") >= 2)
        assert "200 OK" in text and t_count(text, ": heartbeat") >= 2  # every 300 ms here
        sid = "live-%s" % db["engine"]
        for w in session_windows("gpu", sid=sid):
            assert post(srv, db["keys"]["ingest"], w)[0] == 200
        srv.request("POST", "/api/v1/events/session-complete", json.dumps({"session_id": sid}),
                    bearer(db["keys"]["ingest"]))
        alpha.read_until(lambda t: any(e["state"] == "complete" for e in alpha.events("session", t)))
        samples = [e for e in alpha.events("sample") if e["session_id"] == sid]
        assert samples, alpha.buf[-2000:]
        latest = {d["device"]: d for d in samples[-1]["devices"]}
        # The last gpu_sample row of device 0 in the log.
        rows = []
        for line in open(os.path.join(FIXTURES, "gpu", "device.log")):
            rec = json.loads(line)
            if rec["type"] == "gpu_sample":
                for i, dev in enumerate(rec["device"]):
                    if dev == 0:
                        rows.append({k: v[i] for k, v in rec.items() if isinstance(v, list)})
        assert latest[0]["ts_ns"] == rows[-1]["ts_ns"]
        assert latest[0]["gpu_util_pct"] == rows[-1]["gpu_util_pct"]
        states = [e["state"] for e in alpha.events("session") if e["session_id"] == sid]
        assert states[0] == "new" and states[-1] == "complete" and "ended" in states
        assert any(e["session_id"] == sid for e in alpha.events("window"))
        # The other workspace's client heard nothing of it.
        beta.read_until(lambda t: t.count(": heartbeat") >= 3)
        assert sid not in beta.buf.decode()
    finally:
        alpha.close()
        beta.close()


def t_count(text, s):
    return text.count(s)


def test_slow_live_client_does_not_block_ingest(db):
    s = Server(db["url"], os.path.join(db["dir"], "slow.log"),
               env_extra={"GPUFL_SERVER_TEST_LIVE_QUEUE": "4",
                          "GPUFL_SERVER_TEST_LIVE_HEARTBEAT_MS": "60000"})
    slow = Sse(s.port, db["keys"]["read"], rcvbuf=2048)
    try:
        slow.read_until(lambda t: ": heartbeat" in t)
        # A window of the GPU session: its sample events make a few KB a window, past what
        # the kernel's buffers (a 64 KiB send buffer on the server's side) hold.
        base = [w for w in session_windows("gpu", sid="slow-0") if w[1] == "device"][0]
        worst = 0.0
        n = 400
        for i in range(n):
            sid = "slow-%s-%d" % (db["engine"], i)
            w = (sid, base[1], 0, sid + "-w", base[4].replace("slow-0", sid))
            t = time.monotonic()
            st, doc, _ = post(s, db["keys"]["ingest"], w)
            worst = max(worst, time.monotonic() - t)
            assert st == 200, doc
        assert worst < 2.0, worst  # never waits on the client that does not read
        text = slow.read_until(lambda t: slow.events("dropped", t), timeout=20)
        dropped = slow.events("dropped")
        assert dropped and dropped[0]["count"] > 0, text[-500:]
    finally:
        slow.close()
        assert s.stop() == 0


# ---- fleet -----------------------------------------------------------------------------------

def test_fleet_views(srv, db):
    key = db["keys"]["ingest"]
    gpu_sid = "fleet-gpu-%s" % db["engine"]
    for w in session_windows("gpu", sid=gpu_sid):
        assert post(srv, key, w)[0] == 200
    st, doc, _ = srv.request("GET", "/api/v1/fleet/gpus", headers=bearer(db["keys"]["read"]))
    assert st == 200, doc
    gpus = {g["uuid"]: g for g in doc["gpus"]}
    g0 = gpus["GPU-5f2c9a1e-7b3d-4c2a-9e8f-0123456789ab"]
    assert g0["hostname"] == "gpu-node3" and g0["name"] == "NVIDIA H100 80GB HBM3"
    last = None
    for line in open(os.path.join(FIXTURES, "gpu", "device.log")):
        rec = json.loads(line)
        if rec["type"] == "gpu_sample":
            for i, dev in enumerate(rec["device"]):
                if dev == 0:
                    last = {k: v[i] for k, v in rec.items() if isinstance(v, list)}
    for col in ("ts_ns", "gpu_util_pct", "mem_used_bytes", "temp_gpu_c", "power_mw"):
        assert g0["latest"][col] == last[col], col
    header = json.loads(open(os.path.join(FIXTURES, "gpu", "device.log")).readline())
    assert g0["as_of_unix_us"] == header["epoch_unix_us"] + last["ts_ns"] // 1000
    st, doc, _ = srv.request("GET", "/api/v1/fleet/hosts", headers=bearer(db["keys"]["admin"]))
    hosts = {h["hostname"]: h for h in doc["hosts"]}
    assert hosts["gpu-node3"]["gpus"] == len([g for g in gpus.values()
                                              if g["hostname"] == "gpu-node3"])
    assert hosts["gpu-node3"]["sessions"] >= 1 and hosts["gpu-node3"]["last_seen_unix_s"] > 0


def kernel_ns(name):
    total = 0
    for f in os.listdir(os.path.join(FIXTURES, name)):
        if f.startswith("device.log"):
            for line in open(os.path.join(FIXTURES, name, f)):
                if line.endswith("\n"):
                    rec = json.loads(line)
                    if rec["type"] == "kernel":
                        total += sum(e - s for s, e in zip(rec["start_ns"], rec["end_ns"]))
    return total


def test_jobs_grouped_by_job_id(srv, db):
    key = db["keys"]["ingest"]
    e = db["engine"]
    for name, sid, job in (("trace", "job-a1-" + e, "J-" + e), ("timeline", "job-a2-" + e,
                                                                 "J-" + e),
                           ("trace", "job-b1-" + e, "K-" + e), ("basic", "nojob-" + e, None)):
        for w in session_windows(name, sid=sid, job=job):
            assert post(srv, key, w)[0] == 200
    st, doc, _ = srv.request("GET", "/api/v1/fleet/jobs", headers=bearer(db["keys"]["read"]))
    assert st == 200, doc
    jobs = {j["job_id"]: j for j in doc["jobs"]}
    assert jobs["J-" + e]["sessions"] == 2 and jobs["K-" + e]["sessions"] == 1
    assert jobs["J-" + e]["gpu_time_ns"] == kernel_ns("trace") + kernel_ns("timeline")
    assert jobs["K-" + e]["gpu_time_ns"] == kernel_ns("trace")
    hosts = {json.loads(open(os.path.join(FIXTURES, n, "device.log")).readline())["hostname"]
             for n in ("trace", "timeline")}
    assert sorted(jobs["J-" + e]["hosts"]) == sorted(hosts)


# ---- workspaces and roles --------------------------------------------------------------------

NEW_ROUTES = [("GET", "/api/v1/fleet/hosts"), ("GET", "/api/v1/fleet/gpus"),
              ("GET", "/api/v1/fleet/jobs"), ("GET", "/api/v1/auth/me"),
              ("POST", "/api/v1/auth/logout"), ("GET", "/api/v1/live")]


def test_new_routes_by_key(srv, db):
    keys = db["keys"]
    # Something of alpha's to leak, whatever the test order.
    for w in session_windows("gpu", sid="leak-%s" % db["engine"], job="LEAK"):
        post(srv, keys["ingest"], w)
    for method, route in NEW_ROUTES:
        for who, want in ((None, 401), ("revoked", 401), ("bogus", 401)):
            h = bearer(keys[who]) if who in keys else (
                bearer("gpfl_aaaaaaaaaa_" + "A" * 43) if who else {})
            st, doc, _ = srv.request(method, route, headers=h)
            assert st == want, (route, who, doc)
            assert set(doc) == {"error"}
        if route.startswith("/api/v1/fleet") or route == "/api/v1/live":
            assert srv.request(method, route, headers=bearer(keys["ingest"]))[0] == 403, route
    # Another workspace's read key: its own (empty) fleet, nothing of alpha's.
    for route in ("/api/v1/fleet/hosts", "/api/v1/fleet/gpus", "/api/v1/fleet/jobs"):
        st, doc, _ = srv.request("GET", route, headers=bearer(keys["beta_read"]))
        assert st == 200 and not doc[route.rsplit("/", 1)[1]], (route, doc)
        assert "gpu-node3" not in json.dumps(doc) and "LEAK" not in json.dumps(doc)
    # A key may not log out: logout ends a login.
    assert srv.request("POST", "/api/v1/auth/logout", headers=bearer(keys["read"]))[0] == 400
