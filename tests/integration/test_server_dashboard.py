# SPDX-License-Identifier: Apache-2.0
"""What gpufl-server adds for the dashboard, on SQLite and (pg_harness.py, where PostgreSQL is
installed) on PostgreSQL: the sessions list's duration and insight columns and their filters
(min_duration_ns, max_duration_ns, severity) against the fixture sessions' own lines and
insights; and the API keys a logged-in user manages (GET/POST /api/v1/keys, revoke): the key
shown once and never stored or logged in plain, CSRF, the roles that may manage keys, and
another workspace's key answering 404.

usage: python3 -m pytest tests/integration/test_server_dashboard.py with GPUFL_SERVER set."""
import gzip
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import server_harness as sh  # noqa: E402

PASSWORD = "correct horse battery"
LEVEL = {"LOW": 1, "MEDIUM": 2, "HIGH": 3}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def env(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("dash-" + request.param)
    with sh.engine(request.param, d, "dash") as db:
        url = db.url
        for ws, user in (("alpha", "ann"), ("beta", "bob")):
            sh.new_workspace(url, ws)
            r = sh.admin(url, "user", "create", "--workspace", ws, user, stdin=PASSWORD + "\n")
            assert r.returncode == 0, r.stderr
        keys = {"ingest": sh.new_key(url, "alpha", "ingest"),
                "read": sh.new_key(url, "alpha", "read"),
                "admin": sh.new_key(url, "alpha", "admin"),
                "beta_admin": sh.new_key(url, "beta", "admin")}
        srv = sh.Server(url, log_dir=str(d))
        windows = sh.fixture_windows()
        for w in windows:
            st, doc = sh.send_until_answered(srv, keys["ingest"], w)
            assert st == 200, doc
        yield {"srv": srv, "keys": keys, "windows": windows, "db": db}
        assert srv.stop() == 0


def call(env, method, path, key="read", body=None, headers=None):
    h = dict(headers or {})
    if key:
        h["Authorization"] = "Bearer " + env["keys"][key]
    if body is not None:
        body = json.dumps(body)
        h["Content-Type"] = "application/json"
    st, doc, _ = env["srv"].request(method, path, body, h)
    return st, doc


def listed(env, query=""):
    st, doc = call(env, "GET", "/api/v1/sessions?limit=500" + query)
    assert st == 200, doc
    return {s["session_id"]: s for s in doc["sessions"]}


def ends_of(windows):
    """{session_id: the ts_ns of its session_end line, or None}: its duration."""
    out = {}
    for sid, _, _, _, text in windows:
        out.setdefault(sid, None)
        for line in text.splitlines():
            if '"session_end"' in line:
                rec = json.loads(line)
                if rec["type"] == "session_end":
                    out[sid] = max(out[sid] or 0, rec["ts_ns"])
    return out


def test_duration_column_and_filters(env):
    ends = ends_of(env["windows"])
    rows = listed(env)
    assert set(rows) == set(ends)
    for sid, end in ends.items():
        assert rows[sid]["duration_ns"] == end, sid
    known = sorted(e for e in ends.values() if e is not None)
    assert known and None in ends.values()  # a killed session: duration not known
    mid = known[len(known) // 2]
    got = listed(env, "&min_duration_ns=%d" % mid)
    assert set(got) == {s for s, e in ends.items() if e is not None and e >= mid}
    got = listed(env, "&min_duration_ns=%d&max_duration_ns=%d" % (known[0], mid))
    assert set(got) == {s for s, e in ends.items() if e is not None and known[0] <= e <= mid}
    for q in ("min_duration_ns=-1", "max_duration_ns=x", "severity=SEVERE", "severity=low"):
        st, doc = call(env, "GET", "/api/v1/sessions?" + q)
        assert st == 400 and doc["parameter"] == q.split("=")[0], (q, doc)


def test_insight_columns_and_severity_filter(env):
    rows = listed(env)
    # Before any report is built the insight figures are unknown (null), never 0.
    unbuilt = [s for s in rows.values() if s["insights"] is None]
    assert unbuilt and all(s["top_severity"] is None for s in unbuilt)
    expect = {}
    for sid in rows:
        st, doc = call(env, "GET", "/api/v1/sessions/%s/insights" % sid)  # builds the report
        assert st == 200, doc
        levels = [i["severity"] for i in doc["insights"]]
        expect[sid] = (len(levels), max(levels, key=LEVEL.get) if levels else None)
    rows = listed(env)
    for sid, (n, top) in expect.items():
        assert (rows[sid]["insights"], rows[sid]["top_severity"]) == (n, top), sid
    assert {t for _, t in expect.values()} & {"MEDIUM", "HIGH"}, "no fixture with findings"
    for sev, level in LEVEL.items():
        got = listed(env, "&severity=" + sev)
        assert set(got) == {s for s, (_, t) in expect.items() if t and LEVEL[t] >= level}, sev


# ---- API keys ---------------------------------------------------------------------------------

def login(env, user="ann", workspace="alpha"):
    body = json.dumps({"workspace": workspace, "user": user, "password": PASSWORD})
    st, doc, h = env["srv"].request("POST", "/api/v1/auth/login", body,
                                    {"Content-Type": "application/json"})
    assert st == 200, doc
    return {"Cookie": h["Set-Cookie"].split(";", 1)[0], "X-CSRF-Token": doc["csrf_token"]}


def test_a_user_creates_uses_and_revokes_a_key(env):
    who = login(env)
    st, doc = call(env, "GET", "/api/v1/keys", key=None, headers=who)
    assert st == 200, doc
    before = {k["prefix"]: k for k in doc["keys"]}
    for name in ("ingest", "read", "admin"):
        prefix = env["keys"][name].split("_")[1]
        assert before[prefix]["role"] == name and before[prefix]["revoked_at"] is None
    assert env["keys"]["beta_admin"].split("_")[1] not in before  # beta's keys stay beta's
    assert all(set(k) == {"prefix", "role", "label", "created_at", "last_used_at", "revoked_at"}
               for k in doc["keys"])

    st, made = call(env, "POST", "/api/v1/keys", key=None, headers=who,
                    body={"role": "read", "label": "notebook"})
    assert st == 201, made
    key, prefix = made["key"], made["prefix"]
    assert key.startswith("gpfl_" + prefix + "_") and made["role"] == "read"
    st, doc, _ = env["srv"].request("GET", "/api/v1/sessions?limit=1",
                                    headers={"Authorization": "Bearer " + key})
    assert st == 200 and doc["sessions"]
    st, doc = call(env, "GET", "/api/v1/keys", key=None, headers=who)
    mine = next(k for k in doc["keys"] if k["prefix"] == prefix)
    assert mine["label"] == "notebook" and mine["role"] == "read"
    assert mine["last_used_at"] is not None  # the use above, flushed for the list
    assert key not in json.dumps(doc)
    # At rest: only the hash.
    stored = env["db"].query("SELECT hash FROM api_keys WHERE prefix = ?", (prefix,))
    assert len(stored) == 1 and key not in str(stored[0][0])

    st, doc = call(env, "POST", "/api/v1/keys/%s/revoke" % prefix, key=None, headers=who)
    assert (st, doc["state"]) == (200, "revoked")
    # At once, not after the key cache's seconds.
    st, _, _ = env["srv"].request("GET", "/api/v1/sessions?limit=1",
                                  headers={"Authorization": "Bearer " + key})
    assert st == 401
    st, doc = call(env, "GET", "/api/v1/keys", key=None, headers=who)
    assert next(k for k in doc["keys"] if k["prefix"] == prefix)["revoked_at"] is not None
    assert key not in env["srv"].stderr()  # never logged


def test_key_management_is_guarded(env):
    who = login(env)
    no_csrf = {"Cookie": who["Cookie"]}
    # A state change on a cookie needs its CSRF token.
    st, _ = call(env, "POST", "/api/v1/keys", key=None, headers=no_csrf, body={"role": "read"})
    assert st == 403
    target = env["keys"]["ingest"].split("_")[1]
    st, _ = call(env, "POST", "/api/v1/keys/%s/revoke" % target, key=None, headers=no_csrf)
    assert st == 403
    # Read and ingest keys manage no keys.
    for name in ("read", "ingest"):
        assert call(env, "GET", "/api/v1/keys", key=name)[0] == 403
        assert call(env, "POST", "/api/v1/keys", key=name, body={"role": "read"})[0] == 403
        assert call(env, "POST", "/api/v1/keys/%s/revoke" % target, key=name)[0] == 403
    # A login makes and revokes read and ingest keys, not admin keys.
    st, doc = call(env, "POST", "/api/v1/keys", key=None, headers=who, body={"role": "admin"})
    assert st == 403 and "admin" in doc["error"]
    admin_prefix = env["keys"]["admin"].split("_")[1]
    assert call(env, "POST", "/api/v1/keys/%s/revoke" % admin_prefix, key=None,
                headers=who)[0] == 403
    # An admin key may make an admin key.
    st, doc = call(env, "POST", "/api/v1/keys", key="admin", body={"role": "admin"})
    assert st == 201 and doc["role"] == "admin"
    # Another workspace's key is 404, as a missing one; bad bodies are 400.
    bob = login(env, "bob", "beta")
    st, doc = call(env, "POST", "/api/v1/keys/%s/revoke" % target, key=None, headers=bob)
    assert (st, doc["error"]) == (404, "no such key in this workspace")
    assert call(env, "POST", "/api/v1/keys/%s/revoke" % target, key="beta_admin")[0] == 404
    assert call(env, "POST", "/api/v1/keys/aaaaaaaaaa/revoke", key="admin")[0] == 404
    assert call(env, "GET", "/api/v1/sessions?limit=1", key="ingest")[0] == 403  # still alive
    for body in ({"role": "owner"}, {}, {"role": "read", "label": 5},
                 {"role": "read", "label": "x" * 129}):
        assert call(env, "POST", "/api/v1/keys", key=None, headers=who, body=body)[0] == 400, body
    st, _, _ = env["srv"].request("POST", "/api/v1/keys", "not json",
                                  {**who, "Content-Type": "application/json"})
    assert st == 400
