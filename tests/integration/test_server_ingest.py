# SPDX-License-Identifier: Apache-2.0
"""gpufl-server as a whole process on loopback, on each engine (a temporary SQLite file, then a
throwaway PostgreSQL of pg_harness.py; skipped only where its binaries are absent): the fixture
sessions shipped window by window (stored, then duplicate), every answer of the stream route
(400 with line numbers, 401, 403, 404, 405, 409, 413 for oversize and bomb bodies, gzip and zstd
bodies, 415, 429 with Retry-After) with nothing of a refused window stored, the routes x keys table, one window sent
many times at once (stored once), TLS with a self-signed certificate, the flags, the admin
subcommands and SIGTERM draining a request in flight.

Stored rows are counted through the engine (server_harness.py).

usage: python3 -m pytest tests/integration/test_server_ingest.py, with GPUFL_SERVER naming the
binary (ctest sets it); -k sqlite or -k postgresql picks one engine.
"""
import concurrent.futures
import gzip
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import threading
import time
import zlib

import http.client
import jsonschema
import pytest

import server_harness as sh
from server_harness import (COMPLETE, STREAM, VERSION, WINDOWS, fixture_windows, sent_digest,
                            window_headers)

SERVER = sh.SERVER
HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "..", "..", "docs", "schema", "protocol")


def schema(name):
    with open(os.path.join(SCHEMAS, name + ".schema.json")) as f:
        return json.load(f)


# The answer of each route, as docs/protocol.md documents it: every answer a test gets is
# checked against its schema.
ANSWER_SCHEMAS = {"/api/v1/events/stream": schema("stream-answer"),
                  "/api/v1/events/session-complete": schema("session-complete-answer"),
                  "/api/v1/info/version": schema("version-answer"),
                  "/api/v1/events/windows": schema("windows-answer"),
                  "/healthz": schema("health-answer"), "/readyz": schema("health-answer")}
ERROR_SCHEMA = schema("error")


def check_answer(path, status, doc):
    if status >= 400:
        jsonschema.validate(doc, ERROR_SCHEMA)
    elif path.split("?")[0] in ANSWER_SCHEMAS:
        jsonschema.validate(doc, ANSWER_SCHEMAS[path.split("?")[0]])


def Server(env, args=(), env_extra=None, scheme="http"):
    return sh.Server(env["db"].url, args, env_extra, scheme, log_dir=env["dir"],
                     check=check_answer)


def admin(env, *args, stdin=None):
    return sh.admin(env["db"].url, *args, stdin=stdin)


def new_key(env, workspace, role):
    return sh.new_key(env["db"].url, workspace, role)


def counts(db):
    return sh.counts(db)


@pytest.fixture(scope="module", params=sh.ENGINES)
def env(request, tmp_path_factory):
    """The server on each engine in turn, with workspaces alpha and beta and their keys."""
    d = tmp_path_factory.mktemp("server-" + request.param)
    with sh.engine(request.param, d) as db:
        e = {"db": db, "dir": str(d)}
        for ws in ("alpha", "beta"):
            sh.new_workspace(db.url, ws)
        keys = {"ingest": new_key(e, "alpha", "ingest"), "read": new_key(e, "alpha", "read"),
                "admin": new_key(e, "alpha", "admin"), "revoked": new_key(e, "alpha", "ingest"),
                "beta": new_key(e, "beta", "ingest")}
        prefix = keys["revoked"].split("_")[1]
        r = admin(e, "key", "revoke", "--workspace", "alpha", prefix)
        assert r.returncode == 0, r.stderr
        srv = Server(e, ["--max-body-mib", "1"])
        e.update(keys=keys, srv=srv)
        yield e
        assert srv.stop() == 0
        # A key is never written to the log, only its prefix.
        log = open(srv.log.name).read()
        for k in keys.values():
            assert k not in log


post_window = sh.post_window


def test_fixture_sessions_window_by_window(env):
    srv, db, key = env["srv"], env["db"], env["keys"]["ingest"]
    windows = fixture_windows()
    assert len(windows) > 20
    for w in windows:
        status, doc, _ = post_window(srv, key, w)
        assert status == 200, (w[:4], doc)
        assert doc["window"] == "stored"
    for w in windows:  # a retry after a lost answer
        status, doc, _ = post_window(srv, key, w)
        assert (status, doc["window"]) == (200, "duplicate")
    c = counts(db)
    assert c["windows"] == len(windows)
    assert c["lines"] == sum(w[4].count("\n") for w in windows)
    for sid in {w[0] for w in windows}:
        assert sh.lines_digest(db, sid) == sent_digest(windows, sid)
    # Typed rows: every kernel, copy, memset and sync row of the logs, counted from the text.
    expected = 0
    for w in windows:
        for line in w[4].split("\n")[:-1]:
            rec = json.loads(line)
            if rec["type"] in ("kernel", "copy", "memset", "sync"):
                expected += len(rec["start_ns"])
    assert c["activity"] == expected
    # Columns by name: the trace fixture's kernel names come back through their dict ids.
    names = {r[0] for r in db.query("SELECT DISTINCT mangled FROM activity a JOIN sessions s "
                                    "USING (workspace_id, session_id) WHERE s.app_name = "
                                    "'trace_demo' AND mangled IS NOT NULL")}
    assert names == {"_Z4gemmPKfS0_Pfiii", "_Z4reluPfi", "_Z7softmaxPKfPfi"}


def test_session_complete(env):
    srv, key = env["srv"], env["keys"]["ingest"]
    sid = fixture_windows()[0][0]
    post_window(srv, key, fixture_windows()[0])
    jsonschema.validate({"session_id": sid}, schema("session-complete-request"))
    for _ in range(2):  # idempotent
        status, doc, _ = srv.request("POST", COMPLETE, json.dumps({"session_id": sid}),
                                     {"Authorization": "Bearer " + key})
        assert (status, doc) == (200, {"session_id": sid, "state": "complete"})
    status, doc, _ = srv.request("POST", COMPLETE, json.dumps({"session_id": "nope"}),
                                 {"Authorization": "Bearer " + key})
    assert status == 404
    status, doc, _ = srv.request("POST", COMPLETE, "{not json",
                                 {"Authorization": "Bearer " + key})
    assert status == 400 and "error" in doc


def bad_window(text, sid="bad-session", channel="device", seq=0, wid=None):
    return (sid, channel, seq, wid or "w-%d" % time.monotonic_ns(), text)


HEADER = ('{"type":"header","v":1,"format":"gpufl-log","file":"device","segment":0,'
          '"session_id":"bad-session","app_name":"x","pid":1,"hostname":"h",'
          '"epoch_ns":"1","epoch_unix_us":1795000000000000,"clock":"monotonic",'
          '"gpufl_version":"0.1.0"}\n')
KERNEL = ('{"type":"dict","v":1,"id":[1],"str":["k"]}\n'
          '{"type":"kernel","v":1,"start_ns":[1,2],"end_ns":[2,3],"device":[0,0],'
          '"name":[1,1]}\n')


# The kernels of KERNEL (plus a config) as a compact line (docs/log-format.md, Compact batches).
COMPACT = ('{"type":"dict","v":1,"id":[1],"str":["k"]}\n'
           '{"type":"kernel","v":2,"start_ns":[1,3],"end_ns":[7,2],"device":0,"stream":7,'
           '"correlation":[5,1],"config":[1,2],"name":1,"registers":[32,16]}\n')


def assert_nothing_stored(env, before):
    assert counts(env["db"]) == before


@pytest.mark.parametrize("case,body,status,lines", [
    ("not json", HEADER + KERNEL + "{oops\n", 400, [4]),
    ("not an object", HEADER + "[1,2]\n" + KERNEL, 400, [2]),
    ("no type", HEADER + '{"v":1}\n', 400, [2]),
    ("no v", HEADER + '{"type":"event"}\n', 400, [2]),
    ("incomplete last line", HEADER + KERNEL + '{"type":"event","v":1', 400, [4]),
    ("first line not a header", KERNEL, 400, [1, 2]),  # then its dict is unknown
    ("session id mismatch", HEADER.replace("bad-session", "other") + KERNEL, 400, [1]),
    ("channel mismatch", HEADER.replace('"device"', '"scope"') + KERNEL, 400, [1]),
    ("segment mismatch", HEADER.replace('"segment":0', '"segment":3') + KERNEL, 400, [1]),
    ("columns of unequal length", HEADER + KERNEL.replace('"end_ns":[2,3]', '"end_ns":[2]'),
     400, [3]),
    ("undefined dict id", HEADER + KERNEL.replace('"name":[1,1]', '"name":[1,9]'), 400, [3]),
    ("wrong cell type", HEADER + KERNEL.replace('"device":[0,0]', '"device":[0,{}]'), 400, [3]),
    ("compact: a delta column of the wrong length", HEADER + COMPACT.replace(
        '"correlation":[5,1]', '"correlation":[5,1,1]'), 400, [3]),
    ("compact: fewer values than configs", HEADER + COMPACT.replace(
        '"registers":[32,16]', '"registers":[32]'), 400, [3]),
    ("compact: a marker for other than its configuration's rows", HEADER + COMPACT.replace(
        '"config":[1,2]', '"config":[1,1]').replace('"registers":[32,16]', '"registers":[-1]'),
     400, [3]),
    ("compact: a marker without its values", HEADER + COMPACT.replace(
        '"config":[1,2]', '"config":[1,1]').replace('"registers":[32,16]', '"registers":[-2]'),
     400, [3]),
    ("compact: a start with no end to count from", HEADER + COMPACT.replace(
        '"end_ns":[7,2],', ''), 400, [3]),
    ("empty", "", 400, None),
])
def test_malformed_window_is_refused_whole(env, case, body, status, lines):
    before = counts(env["db"])
    st, doc, _ = post_window(env["srv"], env["keys"]["ingest"], bad_window(body))
    assert st == status, (case, doc)
    assert "error" in doc
    if lines:
        assert [p["line"] for p in doc["lines"]] == lines, doc
        assert all(p["reason"] for p in doc["lines"])
    assert_nothing_stored(env, before)


def test_good_window_of_the_bad_session_stores(env):
    """The cases above fail for their one defect, not for the base window."""
    w = bad_window(HEADER + KERNEL, sid="bad-session")
    st, doc, _ = post_window(env["srv"], env["keys"]["ingest"], w)
    # rows: the records the lines hold (2 kernels); header and dict lines hold none.
    # stored_bytes: the window's bytes held, all of them; final: sealed (sent whole).
    assert (st, doc) == (200, {"rows": 2, "window": "stored", "stored_bytes": len(w[4]),
                               "final": True})


ACTIVITY = ("start_ns, end_ns, device, context, stream, correlation, name, mangled, grid_x, "
            "grid_y, grid_z, block_x, block_y, block_z, registers, static_smem_bytes, "
            "dynamic_smem_bytes, local_bytes_per_thread, graph_id, graph_node, config, "
            "external_kind, external_id, launch_ns, tid, stack, scope, bytes")


def activity(db, sid):
    return db.query("SELECT " + ACTIVITY + " FROM activity WHERE session_id = ? ORDER BY "
                    "start_ns, correlation", (sid,))


@pytest.mark.parametrize("name", ["v2/trace", "v2/scoped", "sessions/stacks"])
def test_compact_window_stores_the_same_rows(env, name):
    """A session's window with its lines rewritten as compact lines (kernel v 2; copy, memset,
    sync v 3 from their v 2) stores the same typed rows as the plain one."""
    srv, db, key = env["srv"], env["db"], env["keys"]["ingest"]
    text = open(os.path.join(HERE, "..", "fixtures", name, "device.log")).read()
    compact = sh.gpufl_compact
    sids, compacted = [], 0
    for form in ("plain", "compact"):
        sid = "compact-%s-%s" % (name.replace("/", "-"), form)
        lines = []
        for line in text.splitlines():
            rec = json.loads(line)
            if rec["type"] == "header":
                rec["session_id"] = sid
            v = rec.get("v", 0) + 1
            if form == "compact" and (rec["type"], v) in compact.CODES and \
                    compact._fits(rec, compact.CODES[(rec["type"], v)]):
                rec = compact.encode(rec, v)
                compacted += 1
            lines.append(json.dumps(rec, separators=(",", ":")))
        w = (sid, "device", 0, "w-" + sid, "\n".join(lines) + "\n")
        status, doc, _ = post_window(srv, key, w)
        assert status == 200 and doc["window"] == "stored", doc
        sids.append(sid)
    assert compacted >= 1
    rows = [activity(db, sid) for sid in sids]
    assert rows[0] and rows[0] == rows[1]


def test_problems_listed_up_to_100(env):
    before = counts(env["db"])
    st, doc, _ = post_window(env["srv"], env["keys"]["ingest"],
                             bad_window(HEADER + "x\n" * 150))
    assert st == 400 and len(doc["lines"]) == 100 and doc["malformed"] == 150
    assert_nothing_stored(env, before)


def test_damaged_lines_kept_on_request(env):
    body = HEADER + KERNEL + "{cut sho\n" + '{"type":"event","v":1,"ts_ns":5}\n'
    w = bad_window(body, sid="bad-session", seq=7)
    w = (w[0], w[1], 7, w[3], body.replace('"segment":0', '"segment":7'))
    st, doc, _ = post_window(env["srv"], env["keys"]["ingest"], w,
                             extra={"X-GpuFlight-Damaged-Lines": "keep"})
    assert st == 200 and doc["damaged"] == [4] and doc["window"] == "stored", doc
    # The answer numbers lines from 1, the lines table from 0.
    rows = env["db"].query("SELECT type, body FROM lines WHERE session_id='bad-session' AND "
                           "sequence=7 AND line_no=3")
    assert rows == [(None, "{cut sho")]


def test_bad_gzip_oversize_bomb(env):
    srv, key = env["srv"], env["keys"]["ingest"]
    before = counts(env["db"])
    good = gzip.compress((HEADER + KERNEL).encode())
    for body, status in [(b"not gzip at all", 400), (good[:-9], 400),   # cut short
                         (good + b"trailing junk", 400),
                         (gzip.compress(b"\n" * (3 << 20)), 413)]:   # a bomb: 3 MiB of newlines
        st, doc, _ = post_window(srv, key, bad_window(HEADER + KERNEL), body=body)
        assert st == status, (body[:20], doc)
        assert "error" in doc
    # Past the cap as sent, said by Content-Length: refused before the body is read.
    w = bad_window(HEADER + KERNEL)
    h = window_headers(key, *w[:4])
    c = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    c.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n"
               % (STREAM, 2 << 20) + "".join("%s: %s\r\n" % kv for kv in h.items()) +
               "\r\n").encode())
    answer = c.recv(65536).decode()
    c.close()
    assert answer.startswith("HTTP/1.1 413"), answer
    # Past the cap without a length (chunked, identity): stopped while it arrives.
    h = window_headers(key, *w[:4], gz=False)
    chunks = [(HEADER + KERNEL).encode()] + [b" " * 65536] * 40
    conn = srv.conn()
    conn.request("POST", STREAM, body=iter(chunks), headers=h, encode_chunked=True)
    r = conn.getresponse()
    doc = json.loads(r.read())
    conn.close()
    check_answer(STREAM, r.status, doc)
    assert r.status == 413 and doc["max_bytes"] == 1 << 20
    assert_nothing_stored(env, before)


def zstd(data, *flags):
    """zstd bytes of data, from the zstd CLI (no Python binding is packaged here)."""
    return subprocess.run(["zstd", "-q", "-c", *flags], input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def test_zstd_windows(env):
    srv, key, db = env["srv"], env["keys"]["ingest"], env["db"]
    zst = {"Content-Encoding": "zstd"}
    text = HEADER + KERNEL
    # One frame, then the same bytes as two concatenated frames split mid-line (frames follow
    # each other like gzip members): both store the window's lines as sent.
    for sid, frames in [("zstd-one", 1), ("zstd-two", 2)]:
        w = bad_window(text.replace("bad-session", sid), sid=sid)
        data = w[4].encode()
        body = zstd(data, "-1") if frames == 1 else zstd(data[:150]) + zstd(data[150:], "-19")
        st, doc, _ = post_window(srv, key, w, gz=False, extra=zst, body=body)
        assert (st, doc.get("window"), doc.get("rows")) == (200, "stored", 2), doc
        assert sh.lines_digest(db, sid) == sent_digest([w], sid)
    before = counts(db)
    good = zstd(text.encode())
    for body, status, why in [
            (b"not zstd at all", 400, "not valid zstd"),
            (good[:-5], 400, "not valid zstd (cut short?)"),
            (good + b"trailing junk", 400, "not valid zstd"),
            (b"", 400, "not valid zstd"),  # an empty body is no zstd
            (gzip.compress(text.encode()), 400, "not valid zstd"),
            (zstd(b"\n" * (3 << 20), "-19"), 413, "past the server's cap")]:  # a bomb
        st, doc, _ = post_window(srv, key, bad_window(text), gz=False, extra=zst, body=body)
        assert (st, why in doc["error"]) == (status, True), (body[:20], doc)
    assert_nothing_stored(env, before)


def test_header_errors(env):
    srv, key = env["srv"], env["keys"]["ingest"]
    before = counts(env["db"])
    w = bad_window(HEADER + KERNEL)
    body = gzip.compress(w[4].encode())
    base = window_headers(key, w[0], w[1], w[2], w[3])
    cases = [
        ({"X-GpuFlight-Wire-Version": "2"}, 400, "supported"),
        ({"X-GpuFlight-Wire-Version": None}, 400, "supported"),
        ({"X-GpuFlight-Session-Id": None}, 400, None),
        ({"X-GpuFlight-Session-Id": "bad id/../x"}, 400, None),
        ({"X-GpuFlight-Window-Channel": "gpu"}, 400, None),
        ({"X-GpuFlight-Window-Sequence": "-1"}, 400, None),
        ({"X-GpuFlight-Window-Sequence": "x"}, 400, None),
        ({"X-GpuFlight-Window-Id": None}, 400, None),
        ({"X-GpuFlight-Window-Id": "a" * 129}, 400, None),
        ({"Idempotency-Key": "other"}, 400, None),
        ({"X-GpuFlight-Damaged-Lines": "maybe"}, 400, None),
        ({"Content-Encoding": "br"}, 415, None),
        ({"Content-Encoding": "zstd, gzip"}, 415, None),
    ]
    for change, status, member in cases:
        h = dict(base)
        for k, v in change.items():
            if v is None:
                h.pop(k)
            else:
                h[k] = v
        st, doc, _ = srv.request("POST", STREAM, body, h)
        assert st == status, (change, doc)
        assert "error" in doc
        if member:
            assert doc[member] == [1]
        if status == 415:
            assert "gzip, identity or zstd" in doc["error"]
    assert_nothing_stored(env, before)
    # Idempotency-Key equal to the window id is fine.
    h = dict(base, **{"Idempotency-Key": w[3]})
    assert srv.request("POST", STREAM, body, h)[0] == 200


def test_conflict(env):
    srv, key = env["srv"], env["keys"]["ingest"]
    w = bad_window(HEADER + KERNEL, seq=11)
    w = (w[0], w[1], 11, w[3], w[4].replace('"segment":0', '"segment":11'))
    assert post_window(srv, key, w)[0] == 200
    before = counts(env["db"])
    other = (w[0], w[1], 11, w[3], w[4] + '{"type":"event","v":1}\n')
    st, doc, _ = post_window(srv, key, other)
    assert st == 409 and doc["window_id"] == w[3]
    # The same identity and bytes under another window id: the identity decides, a duplicate
    # (both engines alike).
    st, doc, _ = post_window(srv, key, (w[0], w[1], 11, w[3] + "-again", w[4]))
    assert (st, doc["window"]) == (200, "duplicate")
    # The same window id under another identity.
    moved = (w[0], w[1], 12, w[3], w[4].replace('"segment":11', '"segment":12'))
    assert post_window(srv, key, moved)[0] == 409
    assert_nothing_stored(env, before)


# ---- a window in slices (docs/protocol.md) ---------------------------------------------------

def sliced_copy(sid):
    """The trace fixture's device window (header, capabilities, dict, frames, stacks, a kernel
    batch naming the dict's ids, sync, session_end) as session sid."""
    w = next(w for w in fixture_windows() if w[0].endswith("9090-e5f6") and w[1] == "device")
    return (sid, "device", 0, sid + "-device-0", w[4].replace(w[0], sid))


def line_ends(text):
    """The byte offset after each line."""
    ends, at = [], 0
    for line in text.encode().split(b"\n")[:-1]:
        at += len(line) + 1
        ends.append(at)
    return ends


def post_slice(srv, key, w, offset, final, body=None, crc=None, extra=None):
    """Bytes [offset, ...) of window w's text (body: those bytes unless given), with the
    prefix crc32 of its own [0, offset) unless crc is given."""
    data = w[4].encode()
    if body is None:
        body = data[offset:]
    h = {"X-GpuFlight-Window-Offset": str(offset), "X-GpuFlight-Window-Final": str(int(final))}
    if offset:
        h["X-GpuFlight-Window-Prefix-Crc32"] = str(zlib.crc32(data[:offset]) if crc is None
                                                   else crc)
    h.update(extra or {})
    return post_window(srv, key, w, extra=h, body=gzip.compress(body, 1))


def held(doc):
    return doc["stored_bytes"], doc["final"]


def windows_listed(srv, key, sid):
    st, doc, _ = srv.request("GET", WINDOWS % sid, headers={"Authorization": "Bearer " + key})
    assert st == 200, doc
    return [(x["bytes"], x["final"]) for x in doc["windows"]]


def stored_rows(db, sid, sql):
    """Rows of sql (session_id = ? its parameter) with the session id masked."""
    return [tuple("SID" if v == sid else v for v in row) for row in db.query(sql, (sid,))]


def test_window_in_slices_stores_what_the_whole_window_stores(env):
    srv, db, key = env["srv"], env["db"], env["keys"]["ingest"]
    n = "%d" % time.monotonic_ns()
    w, whole = sliced_copy("slices-" + n), sliced_copy("wholes-" + n)  # one length
    data = w[4].encode()
    ends = line_ends(w[4])
    a, b = ends[2], ends[8]  # header, capabilities and dict | frames and a stack | the rest
    # Each slice stored, then its retry a duplicate; the answers say what the server holds.
    for offset, end, final in ((0, a, False), (a, b, False), (b, len(data), True)):
        for outcome in ("stored", "duplicate"):
            st, doc, _ = post_slice(srv, key, w, offset, final, data[offset:end])
            assert st == 200, doc
            assert (doc["window"], held(doc)) == (outcome, (end, final))
        assert windows_listed(srv, key, w[0]) == [(end, final)]
    # An older slice again overlaps what is stored: 416 says where the window stands.
    st, doc, _ = post_slice(srv, key, w, a, False, data[a:b])
    assert st == 416 and held(doc) == (len(data), True), doc
    # The whole window after its slices: a duplicate.
    st, doc, _ = post_window(srv, key, w)
    assert st == 200 and doc["window"] == "duplicate" and held(doc) == (len(data), True)
    assert post_window(srv, key, whole)[1]["window"] == "stored"
    # The same lines in order, line_no continuing across the slices, the same typed rows.
    lines = "SELECT line_no, type, rows, body FROM lines WHERE session_id = ? ORDER BY line_no"
    got = [(i, t, r, body.replace(w[0], "S")) for i, t, r, body in stored_rows(db, w[0], lines)]
    want = [(i, t, r, body.replace(whole[0], "S"))
            for i, t, r, body in stored_rows(db, whole[0], lines)]
    assert got == want and len(got) == len(ends)
    kernels = ("SELECT * FROM activity WHERE session_id = ? ORDER BY kind, start_ns, end_ns")
    assert stored_rows(db, w[0], kernels) == stored_rows(db, whole[0], kernels)
    assert len(stored_rows(db, w[0], kernels)) > 0
    names = {r[0] for r in db.query("SELECT DISTINCT mangled FROM activity WHERE session_id = ?"
                                    " AND mangled IS NOT NULL", (w[0],))}
    assert names  # the kernel batch's dict ids resolved through the first slice's dict line
    facts = ("SELECT app_name, hostname, pid, engine, epoch_unix_us, end_ns, state FROM sessions"
             " WHERE session_id = ?")
    assert db.query(facts, (w[0],)) == db.query(facts, (whole[0],))
    assert db.query("SELECT rows, bytes FROM windows WHERE session_id = ?", (w[0],)) == \
        db.query("SELECT rows, bytes FROM windows WHERE session_id = ?", (whole[0],))


def test_slices_that_do_not_continue_the_window(env):
    srv, db, key = env["srv"], env["db"], env["keys"]["ingest"]
    w = sliced_copy("slices-bad-%d" % time.monotonic_ns())
    data = w[4].encode()
    ends = line_ends(w[4])
    a, b = ends[2], ends[8]
    before = counts(db)
    # Nothing stored yet: a slice at an offset is out of range.
    st, doc, _ = post_slice(srv, key, w, a, False, data[a:b])
    assert st == 416 and held(doc) == (0, False), doc
    assert_nothing_stored(env, before)
    assert post_slice(srv, key, w, 0, False, data[:a])[0] == 200
    before = counts(db)
    for offset, end in ((b, len(data)),   # a gap
                        (0, b),           # an overlap from the start
                        (0, len(data))):  # the whole window, more than is stored
        st, doc, _ = post_slice(srv, key, w, offset, offset == 0 and end == len(data),
                                data[offset:end])
        assert st == 416 and held(doc) == (a, False), (offset, end, doc)
    # Other bytes before the offset than the stored ones.
    st, doc, _ = post_slice(srv, key, w, a, False, data[a:b], crc=zlib.crc32(data[:a]) ^ 1)
    assert st == 409 and doc["window_id"] == w[3], doc
    # A bad line is numbered within the body; the slice's dict ids may be the stored ones.
    st, doc, _ = post_slice(srv, key, w, a, False, data[a:ends[3]] + b"{oops\n")
    assert st == 400 and [p["line"] for p in doc["lines"]] == [2], doc
    assert_nothing_stored(env, before)
    assert windows_listed(srv, key, w[0]) == [(a, False)]
    # The rest, then an empty last slice seals the window.
    st, doc, _ = post_slice(srv, key, w, a, False)
    assert st == 200 and held(doc) == (len(data), False), doc
    st, doc, _ = post_slice(srv, key, w, len(data), True, b"")
    assert (st, doc["window"], held(doc)) == (200, "stored", (len(data), True)), doc
    assert doc["rows"] == 0
    assert windows_listed(srv, key, w[0]) == [(len(data), True)]
    # Sealed: it never grows, whatever comes after its end.
    grown = (w[0], w[1], w[2], w[3], w[4] + '{"type":"event","v":1}\n')
    st, doc, _ = post_slice(srv, key, grown, len(data), True)
    assert st == 416 and held(doc) == (len(data), True), doc
    # The whole window sent again with other bytes: 409, as before slices.
    st, doc, _ = post_window(srv, key, grown)
    assert st == 409, doc
    st, doc, _ = post_window(srv, key, w)
    assert (st, doc["window"]) == (200, "duplicate")
    assert sh.lines_digest(db, w[0]) == sent_digest([w], w[0])


@pytest.mark.parametrize("change,header", [
    ({"X-GpuFlight-Window-Offset": "x"}, "X-GpuFlight-Window-Offset"),
    ({"X-GpuFlight-Window-Offset": "-5"}, "X-GpuFlight-Window-Offset"),
    ({"X-GpuFlight-Window-Offset": "9007199254740993"}, "X-GpuFlight-Window-Offset"),
    ({"X-GpuFlight-Window-Final": "2"}, "X-GpuFlight-Window-Final"),
    ({"X-GpuFlight-Window-Final": "yes"}, "X-GpuFlight-Window-Final"),
    ({"X-GpuFlight-Window-Offset": "10"}, "X-GpuFlight-Window-Prefix-Crc32"),  # crc missing
    ({"X-GpuFlight-Window-Offset": "10", "X-GpuFlight-Window-Prefix-Crc32": "4294967296"},
     "X-GpuFlight-Window-Prefix-Crc32"),
    ({"X-GpuFlight-Window-Prefix-Crc32": "abc"}, "X-GpuFlight-Window-Prefix-Crc32"),
])
def test_slice_header_errors(env, change, header):
    srv, key = env["srv"], env["keys"]["ingest"]
    before = counts(env["db"])
    w = bad_window(HEADER + KERNEL)
    st, doc, _ = post_window(srv, key, w, extra=change)
    assert st == 400 and header in doc["error"], doc
    assert_nothing_stored(env, before)


def test_empty_slice_must_end_the_window(env):
    srv, key = env["srv"], env["keys"]["ingest"]
    w = sliced_copy("slices-empty-%d" % time.monotonic_ns())
    a = line_ends(w[4])[2]
    assert post_slice(srv, key, w, 0, False, w[4].encode()[:a])[0] == 200
    before = counts(env["db"])
    st, doc, _ = post_slice(srv, key, w, a, False, b"")
    assert st == 400 and "empty" in doc["error"], doc
    st, doc, _ = post_slice(srv, key, w, 0, True, b"")  # an empty whole window, as before
    assert st == 400, doc
    assert_nothing_stored(env, before)


def test_appended_slice_makes_the_report_stale(env):
    srv, key, read = env["srv"], env["keys"]["ingest"], env["keys"]["read"]
    w = sliced_copy("slices-stale-%d" % time.monotonic_ns())
    data = w[4].encode()
    a = line_ends(w[4])[2]

    def kernels():
        st, doc, _ = srv.request("GET", "/api/v1/sessions/%s/kernels" % w[0],
                                 headers={"Authorization": "Bearer " + read})
        assert st == 200, doc
        return doc["built"], doc["count"]

    assert post_slice(srv, key, w, 0, False, data[:a])[0] == 200
    st, _, _ = srv.request("GET", "/api/v1/sessions/%s/insights" % w[0],
                           headers={"Authorization": "Bearer " + read})  # builds the report
    assert st == 200
    assert kernels() == (True, 0)
    assert post_slice(srv, key, w, a, False)[0] == 200  # the kernel batch, still open
    built, count = kernels()
    assert not built and count > 0  # stale: counted from the rows, not the old build


def test_version_and_unknown_routes(env):
    srv, key = env["srv"], env["keys"]["read"]
    st, doc, _ = srv.request("GET", VERSION, headers={"Authorization": "Bearer " + key})
    assert st == 200 and doc["supported"] == [1] and doc["server"]
    assert doc["encodings"] == ["gzip", "identity", "zstd"]
    assert srv.request("GET", "/api/v1/nothing")[0] == 404
    st, _, h = srv.request("GET", STREAM)
    assert st == 405 and h["Allow"] == "POST"
    assert srv.request("GET", "/healthz")[0:2] == (200, {"status": "ok"})
    assert srv.request("GET", "/readyz")[0:2] == (200, {"status": "ready"})


def test_routes_by_key(env):
    """Every route x {no key, revoked key, another workspace's key, a read key on a write
    route}: 401/403/404 and nothing of alpha changes or shows."""
    srv, keys = env["srv"], env["keys"]
    alpha_sid = fixture_windows()[0][0]
    w = bad_window(HEADER + KERNEL, sid="bad-session", seq=20)
    w = (w[0], w[1], 20, w[3], w[4].replace('"segment":0', '"segment":20'))
    routes = {
        STREAM: ("POST", lambda: gzip.compress(w[4].encode()),
                 window_headers(None, w[0], w[1], w[2], w[3])),
        COMPLETE: ("POST", lambda: json.dumps({"session_id": alpha_sid}), {}),
        VERSION: ("GET", lambda: None, {}),
        WINDOWS % alpha_sid: ("GET", lambda: None, {}),
    }
    expect = {  # route -> {key: status}
        STREAM: {None: 401, "revoked": 401, "read": 403, "bogus": 401},
        COMPLETE: {None: 401, "revoked": 401, "read": 403, "beta": 404, "bogus": 401},
        VERSION: {None: 401, "revoked": 401, "bogus": 401},
        WINDOWS % alpha_sid: {None: 401, "revoked": 401, "read": 403, "bogus": 401},
    }
    keys = dict(keys, bogus="gpfl_aaaaaaaaaa_" + "A" * 43)
    before = counts(env["db"])
    for route, (method, body, headers) in routes.items():
        for who, status in expect[route].items():
            h = dict(headers)
            if who:
                h["Authorization"] = "Bearer " + keys[who]
            st, doc, _ = srv.request(method, route, body(), h)
            assert st == status, (route, who, doc)
            assert set(doc) <= {"error", "role"}, doc  # nothing else is said
            assert alpha_sid not in json.dumps(doc)
    assert_nothing_stored(env, before)
    # What the server has of a session: the workspace's own windows; another workspace's key
    # learns nothing (an empty list, as for a session it never sent).
    st, doc, _ = srv.request("GET", WINDOWS % alpha_sid, None,
                             {"Authorization": "Bearer " + keys["ingest"]})
    assert st == 200 and doc["windows"] and doc["next_after"] is None, doc
    assert all(x["channel"] == "device" for x in doc["windows"])
    st, doc, _ = srv.request("GET", WINDOWS % alpha_sid, None,
                             {"Authorization": "Bearer " + keys["beta"]})
    assert st == 200 and doc["windows"] == [], doc
    st, doc, _ = srv.request("GET", WINDOWS.replace("channel=device", "channel=gpu") % alpha_sid,
                             None, {"Authorization": "Bearer " + keys["ingest"]})
    assert st == 400 and doc.get("parameter") == "channel", doc
    # Another workspace's key stores into its own workspace only.
    st, doc, _ = post_window(srv, keys["beta"], w)
    assert st == 200
    ws = dict(env["db"].query("SELECT name, id FROM workspaces"))
    n = env["db"].query("SELECT workspace_id FROM windows WHERE window_id = ?", (w[3],))
    assert n == [(ws["beta"],)]
    # The admin key may ingest.
    w2 = (w[0], w[1], 21, w[3] + "x", w[4].replace('"segment":20', '"segment":21'))
    assert post_window(srv, keys["admin"], w2)[0] == 200


def test_same_window_concurrently_stored_once(env):
    srv, key, db = env["srv"], env["keys"]["ingest"], env["db"]
    sid = "concurrent-session"
    windows = []
    for seq in range(6):
        text = (HEADER.replace("bad-session", sid).replace('"segment":0', '"segment":%d' % seq)
                + KERNEL + '{"type":"event","v":1,"ts_ns":%d}\n' % seq)
        windows.append((sid, "device", seq, "%s-%d" % (sid, seq), text))
    jobs = windows * 8

    def send(w):
        for _ in range(50):
            st, doc, _ = post_window(srv, key, w)
            if st != 429:
                return st, doc["window"]
            time.sleep(0.05)
        return st, None

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(send, jobs))
    assert all(st == 200 for st, _ in results), results
    assert sum(1 for _, o in results if o == "stored") == len(windows)
    assert sh.lines_digest(db, sid) == sent_digest(windows, sid)
    assert sh.kernel_checksum(db, sid) == sh.sent_kernel_checksum(windows, sid)
    assert sh.kernel_checksum(db, sid)[0] == 2 * len(windows)


def test_429_when_the_store_is_behind(env):
    srv = Server(env, ["--max-windows", "1"], {"GPUFL_SERVER_TEST_STORE_DELAY_MS": "1500"})
    try:
        key = env["keys"]["ingest"]
        slow = bad_window(HEADER + KERNEL, seq=30)
        slow = (slow[0], slow[1], 30, slow[3], slow[4].replace('"segment":0', '"segment":30'))
        t = threading.Thread(target=lambda: post_window(srv, key, slow))
        t.start()
        time.sleep(0.5)
        st, doc, h = post_window(srv, key, bad_window(HEADER + KERNEL, seq=0))
        assert st == 429 and h["Retry-After"] == "1", doc
        t.join()
        # The slot is free again once the first is stored.
        st, doc, _ = post_window(srv, key, slow)
        assert (st, doc["window"]) == (200, "duplicate")
    finally:
        assert srv.stop() == 0


def test_revoked_key_refused_within_the_cache_time(env):
    srv = env["srv"]
    key = new_key(env, "alpha", "read")
    auth = {"Authorization": "Bearer " + key}
    assert srv.request("GET", VERSION, headers=auth)[0] == 200  # now cached
    assert admin(env, "key", "revoke", "--workspace", "alpha", key.split("_")[1]).returncode == 0
    time.sleep(5.5)  # GPUFL__KEY_CACHE_S, as docs/server.md states
    assert srv.request("GET", VERSION, headers=auth)[0] == 401


def last_used(db, key):
    return db.query("SELECT last_used_at FROM api_keys WHERE prefix = ?",
                    (key.split("_")[1],))[0][0]


def test_sigterm_drains_a_request_in_flight(env):
    key = new_key(env, "alpha", "ingest")
    srv = Server(env, [], {"GPUFL_SERVER_TEST_STORE_DELAY_MS": "1500"})
    w = bad_window(HEADER + KERNEL, seq=40)
    w = (w[0], w[1], 40, w[3], w[4].replace('"segment":0', '"segment":40'))
    result = {}
    t = threading.Thread(target=lambda: result.update(r=post_window(srv, key, w)))
    t.start()
    time.sleep(0.5)
    # The key was used, but last_used waits in memory (no database write per request).
    assert last_used(env["db"], key) is None
    srv.p.send_signal(signal.SIGTERM)
    t.join()
    assert srv.p.wait(timeout=40) == 0
    assert result["r"][0] == 200 and result["r"][1]["window"] == "stored"
    # last_used reached the database at exit.
    used = last_used(env["db"], key)
    assert used and abs(used - time.time()) < 120


def test_tls(env, tmp_path):
    cert, keyf = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyf,
                    "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    srv = Server(env, ["--tls-cert", cert, "--tls-key", keyf], scheme="https")
    try:
        ctx = ssl.create_default_context(cafile=cert)
        st, doc, _ = srv.request("GET", VERSION, context=ctx,
                                 headers={"Authorization": "Bearer " + env["keys"]["read"]})
        assert (st, doc["supported"]) == (200, [1])
        w = bad_window(HEADER + KERNEL, seq=50)
        w = (w[0], w[1], 50, w[3], w[4].replace('"segment":0', '"segment":50'))
        h = window_headers(env["keys"]["ingest"], *w[:4])
        st, doc, _ = srv.request("POST", STREAM, gzip.compress(w[4].encode()), h, context=ctx)
        assert (st, doc["window"]) == (200, "stored")
        # Plain HTTP on the TLS port gets no answer in the clear.
        with pytest.raises((http.client.HTTPException, ConnectionError, OSError)):
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
            c.request("GET", "/healthz")
            r = c.getresponse()
            assert r.status != 200
            raise ConnectionError("answered: %d" % r.status)
    finally:
        assert srv.stop() == 0
    r = subprocess.run([SERVER, "--tls-cert", cert], capture_output=True, text=True)
    assert r.returncode == 2 and "--tls-key" in r.stderr


def test_flags_and_admin(env, tmp_path):
    def run(*args, **kw):
        return subprocess.run([SERVER, *args], capture_output=True, text=True, timeout=30, **kw)

    r = run("--help")
    assert r.returncode == 0 and "--max-body-mib" in r.stdout and "GPUFL_SERVER_DB" in r.stdout
    assert run("--version").stdout.startswith("gpufl-server ")
    for bad in (["--bogus"], ["--listen", "nope"], ["--max-body-mib", "0"], ["--db", "mysql://x"],
                ["--threads"], ["extra"]):
        r = run(*bad)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)
    env_bad = dict(os.environ, GPUFL_SERVER_MAX_BODY_MIB="lots")
    assert run(env=env_bad).returncode == 2
    # The port taken: exit 1 with the reason.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    r = run("--db", "sqlite:" + str(tmp_path / "p.db"), "--listen",
            "127.0.0.1:%d" % s.getsockname()[1])
    s.close()
    assert r.returncode == 1 and "in use" in r.stderr
    # The admin commands, in a workspace of their own on this engine.
    db = env["db"]
    assert admin(env, "workspace", "create", "w").returncode == 0
    assert admin(env, "workspace", "create", "w").returncode == 1  # taken
    r = admin(env, "key", "create", "--workspace", "w", "--role", "read")
    assert r.returncode == 0 and re.fullmatch(r"gpfl_[a-z2-9]{10}_[A-Za-z0-9_-]{43}\n", r.stdout)
    printed = r.stdout.strip()
    assert admin(env, "key", "create", "--workspace", "nope", "--role", "read").returncode == 1
    assert admin(env, "key", "create", "--workspace", "w", "--role", "root").returncode == 2
    assert admin(env, "key", "revoke", "--workspace", "w", "abcdefghij").returncode == 1
    for sub in (["workspace", "create"], ["key", "create"], ["key", "revoke"],
                ["user", "create"]):
        r = admin(env, *sub, "--help")
        assert r.returncode == 0 and "usage:" in r.stdout
    r = admin(env, "user", "create", "--workspace", "w", "ana", stdin="correct horse battery\n")
    assert r.returncode == 0, r.stderr
    assert admin(env, "user", "create", "--workspace", "w", "bob",
                 stdin="short\n").returncode == 1
    h = db.query("SELECT password_hash FROM users WHERE name = 'ana'")[0][0]
    assert h.startswith("$argon2id$") and "correct" not in h
    # The key is stored only as a hash.
    stored = db.query("SELECT k.* FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id "
                      "WHERE w.name = 'w'")
    assert len(stored) == 1
    assert printed not in repr(stored) and printed.split("_")[2] not in repr(stored)


def sanitized():
    """Under a sanitizer the server's RSS is mostly the sanitizer's (shadow memory, the
    quarantine of freed blocks): its memory bound is not judged there."""
    with open(SERVER, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


def vm_hwm_bytes(pid):
    """The peak resident set of a process so far (/proc/PID/status VmHWM)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM for %d" % pid)


def test_memory_cap_per_request(env):
    """A request holds its decompressed body and at most two rowsets of typed cells (4096 rows of
    its table's columns), whatever the window's rows: while the server stores a 16 MiB window
    of the library's kernel rows (~280,000 rows, 35 cells of 24 bytes each: ~14 times the body
    if held whole), its peak RSS grows by less than 1.5 times the body plus 32 MiB (27.6 MiB
    when measured, against ~240 MiB holding the cells whole). A window of rows far tinier than the
    library writes (2 bytes a row) is stored within the same bound, and a line longer than
    8 MiB is refused (413), nothing of its window stored."""
    key = env["keys"]["ingest"]
    trace = [w for w in fixture_windows() if w[4].count('"app_name":"trace_demo"')
             and w[1] == "device"][0][4].split("\n")
    kernel = json.loads([line for line in trace if '"type":"kernel"' in line][0])
    header = trace[0].replace('"segment":0', '"segment":70')
    sid = json.loads(header)["session_id"]
    dict_line = [line for line in trace if '"type":"dict"' in line][0]
    rows = len(kernel["start_ns"])
    # A batch line as the library writes it: 4096 kernel rows (the fixture's, repeated).
    k = {c: ((v * (4096 // rows + 1))[:4096] if isinstance(v, list) else v)
         for c, v in kernel.items()}
    batch = json.dumps(k, separators=(",", ":"))
    n_lines = (16 << 20) // (len(batch) + 1)
    big = "\n".join([header, dict_line] + [batch] * n_lines) + "\n"
    n = 4096 * n_lines
    # The library's density: ~60 bytes a kernel row of 35 cells (activity's columns).
    assert n > 250000 and 50 < len(big) / n < 70
    tiny_line = '{"type":"kernel","v":1,"start_ns":[%s],"end_ns":[%s]}' % (
        ",".join(["1"] * 4096), ",".join(["2"] * 4096))
    tiny = (HEADER.replace("bad-session", "tiny-rows") +
            "\n".join([tiny_line] * ((2 << 20) // len(tiny_line))) + "\n")
    srv = Server(env, ["--max-body-mib", "64", "--max-windows", "1"])
    try:
        # Warm up: connections, prepared statements and the database's caches in place.
        st, doc, _ = post_window(
            srv, key, bad_window(HEADER.replace("bad-session", "warm-up") + KERNEL, "warm-up"))
        assert st == 200, doc
        # The smaller window first: the peak is a high-water mark.
        for what, w, want in [("tiny rows", bad_window(tiny, sid="tiny-rows"),
                               4096 * tiny.count('"kernel"')),
                              ("kernel rows", (sid, "device", 70, sid + "-cap-70", big), n)]:
            body = w[4].encode()
            before = vm_hwm_bytes(srv.p.pid)
            st, doc, _ = post_window(srv, key, w, timeout=600)
            assert (st, doc.get("rows")) == (200, want), doc
            grew = vm_hwm_bytes(srv.p.pid) - before
            print("%s: body %.1f MiB, %d rows, peak RSS grew %.1f MiB" % (
                what, len(body) / 2**20, want, grew / 2**20))
            if not sanitized():
                assert grew < 1.5 * len(body) + (32 << 20), (what, len(body), grew)
        # A line past 8 MiB (the library's are ~0.25 MiB) is refused whole.
        before = counts(env["db"])
        huge = HEADER + '{"type":"kernel","v":1,"start_ns":[%s]}\n' % ",".join(
            ["1"] * ((9 << 20) // 2))
        st, doc, _ = post_window(srv, key, bad_window(huge))
        assert st == 413 and "more than the 8 MiB a line may" in doc["error"], doc
        assert_nothing_stored(env, before)
    finally:
        assert srv.stop() == 0
