# SPDX-License-Identifier: Apache-2.0
"""gpufl-server's query API as a whole process on loopback, on a temporary SQLite database and,
where the PostgreSQL binaries are installed, on a throwaway cluster (pg_harness.py): every
fixture session shipped window by window, then its report (text, json, html) and insights
compared byte for byte with what `gpufl report` and `gpufl insights` print for the same lines;
the session list walked by cursor, filters, 404 for another workspace's session on every route,
bad parameters, timeline downsampling, metric buckets against the logged samples, kernels per
name against the report, and a generated session of many kernels timed.

usage: python3 -m pytest tests/integration/test_server_query.py, with GPUFL_SERVER and GPUFL_CLI
naming the binaries (ctest sets them); GPUFL_TEST_KERNELS the generated session's kernels.
"""
import gzip
import json
import math
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import gen_session  # noqa: E402
import pg_harness  # noqa: E402
from server_harness import (SERVER, STREAM, COMPLETE, Server, fixture_windows,  # noqa: E402
                            window_headers)

CLI = os.environ.get("GPUFL_CLI", "build-dev/cmd/gpufl/gpufl")
N_KERNELS = int(os.environ.get("GPUFL_TEST_KERNELS", "1000000"))
# The query of one timeline tile of the dashboard (web/src/timeline/tiles.ts) and the most it
# may weigh: the largest answer a timeline view asks for, at full zoom-out of 1 M kernels.
TILE_QUERY = "kinds=gpu,launches,scopes,counters&max_events=2000&points=100"
TILE_BYTES_MAX = 384 << 10
ROUTES = ["", "/insights", "/kernels", "/scopes", "/timeline", "/metrics", "/report",
          "/export?format=perfetto"]


def admin(url, *args):
    r = subprocess.run([SERVER, "--db", url, "admin", *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def start_server(url, log_dir, args=()):
    return Server(url, args, log_dir=log_dir)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def env(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("query-" + request.param)
    cluster = None
    if request.param == "sqlite":
        url = "sqlite:" + str(d / "q.db")
    else:
        if not pg_harness.find_bindir():
            pytest.skip("PostgreSQL server binaries not found")
        cluster = pg_harness.Cluster().start()
        url = cluster.url
    for ws in ("alpha", "beta"):
        admin(url, "workspace", "create", ws)
    keys = {"ingest": admin(url, "key", "create", "--workspace", "alpha", "--role", "ingest"),
            "read": admin(url, "key", "create", "--workspace", "alpha", "--role", "read"),
            "beta": admin(url, "key", "create", "--workspace", "beta", "--role", "read")}
    srv = start_server(url, str(d), ["--quiet-s", "3"])
    windows = fixture_windows()
    for w in windows:
        sid, ch, seq, wid, text = w
        st, doc, _ = srv.request("POST", STREAM, gzip.compress(text.encode()),
                                 window_headers(keys["ingest"], sid, ch, seq, wid))
        assert st == 200, doc
    yield {"srv": srv, "keys": keys, "windows": windows, "dir": str(d), "engine": request.param}
    assert srv.stop() == 0
    if cluster:
        cluster.stop()


def get(env, path, key="read"):
    h = {"Authorization": "Bearer " + env["keys"][key]} if key else {}
    c = env["srv"].conn()
    c.request("GET", path, headers=h)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body, dict(r.getheaders())


def get_json(env, path, key="read"):
    st, body, _ = get(env, path, key)
    return st, json.loads(body)


def sessions_of(env):
    """{session_id: {channel_file: text}} as shipped (whole lines only)."""
    out = {}
    for sid, ch, seq, _, text in env["windows"]:
        out.setdefault(sid, {})[ch + ".log" + (".%d" % seq if seq else "")] = text
    return out


def cli(args):
    r = subprocess.run([CLI, *args], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def shipped_dir(env, sid, files):
    d = os.path.join(env["dir"], "shipped", sid.replace(":", "_"))
    os.makedirs(d, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    return d


def test_report_and_insights_equal_the_cli(env):
    sessions = sessions_of(env)
    assert len(sessions) >= 10
    for sid, files in sessions.items():
        d = shipped_dir(env, sid, files)
        for fmt, ctype in (("text", "text/plain"), ("json", "application/json"),
                           ("html", "text/html")):
            st, body, h = get(env, "/api/v1/sessions/%s/report?format=%s" % (sid, fmt))
            assert st == 200, body
            assert h["Content-Type"].startswith(ctype)
            assert body == cli(["report", "--format", fmt, d]), (sid, fmt)
        st, body, _ = get(env, "/api/v1/sessions/%s/insights" % sid)
        assert st == 200 and body == cli(["insights", "--format", "json", d]), sid
        st, body, _ = get(env, "/api/v1/sessions/%s/insights?format=text" % sid)
        assert st == 200 and body == cli(["insights", d]), sid


def test_session_summary(env):
    sid = next(s for s, ch, _, _, t in env["windows"] if '"app_name":"trace_demo"' in t)
    st, doc = get_json(env, "/api/v1/sessions/" + sid)
    assert st == 200, doc
    assert (doc["app_name"], doc["hostname"], doc["pid"]) == ("trace_demo", "gpu-node5", 7070)
    assert doc["windows"] == sum(1 for w in env["windows"] if w[0] == sid)
    assert doc["start_unix_us"] == 1795435200000000
    gpu_sid = next(s for s, ch, _, _, t in env["windows"] if '"type":"gpu_info"' in t)
    st, doc = get_json(env, "/api/v1/sessions/" + gpu_sid)
    assert st == 200 and doc["devices"] and "name" in doc["devices"][0]
    caps = [t for s, ch, _, _, t in env["windows"] if s == gpu_sid and '"capabilities"' in t]
    assert (doc["capabilities"] is not None) == bool(caps)


def test_pagination_walks_every_session_once(env):
    all_ids = set(sessions_of(env))
    for sort in ("start_desc", "start_asc"):
        seen, cursor, pages = [], None, 0
        while True:
            path = "/api/v1/sessions?limit=3&sort=" + sort + ("&cursor=" + cursor if cursor else "")
            st, doc = get_json(env, path)
            assert st == 200, doc
            assert len(doc["sessions"]) <= 3
            seen += [(s["start_unix_us"], s["session_id"]) for s in doc["sessions"]]
            pages += 1
            cursor = doc["next_cursor"]
            if not cursor:
                break
        assert len(seen) == len(set(seen)) and {s for _, s in seen} == all_ids
        assert seen == sorted(seen, reverse=(sort == "start_desc"))
        assert pages == (len(all_ids) + 2) // 3
    st, doc = get_json(env, "/api/v1/sessions?cursor=zz")
    assert (st, doc["parameter"]) == (400, "cursor")


def test_filters(env):
    st, doc = get_json(env, "/api/v1/sessions?app=trace_demo")
    assert st == 200 and [s["app_name"] for s in doc["sessions"]] == ["trace_demo"]
    st, doc = get_json(env, "/api/v1/sessions?host=gpu-node5&limit=500")
    assert doc["sessions"] and all(s["hostname"] == "gpu-node5" for s in doc["sessions"])
    st, doc = get_json(env, "/api/v1/sessions?app=no-such-app")
    assert (st, doc["sessions"], doc["next_cursor"]) == (200, [], None)
    st, doc = get_json(env, "/api/v1/sessions?from=1795435200000000&to=1795435200000001")
    assert [s["start_unix_us"] for s in doc["sessions"]] == [1795435200000000] * len(doc["sessions"])
    assert doc["sessions"]
    st, doc = get_json(env, "/api/v1/sessions?engine=Trace")
    assert st == 200 and all(s["engine"] == "Trace" for s in doc["sessions"])


def test_other_workspace_and_missing_session_are_404(env):
    sid = env["windows"][0][0]
    for route in ROUTES:
        st, doc = get_json(env, "/api/v1/sessions/%s%s" % (sid, route), key="beta")
        assert st == 404, (route, doc)
        assert sid not in json.dumps(doc)
        st, doc = get_json(env, "/api/v1/sessions/no-such-session%s" % route)
        assert st == 404, (route, doc)
    st, doc = get_json(env, "/api/v1/sessions", key="beta")
    assert (st, doc["sessions"]) == (200, [])
    st, _, _ = get(env, "/api/v1/sessions", key=None)
    assert st == 401
    st, _, _ = get(env, "/api/v1/sessions", key="ingest")
    assert st == 403


@pytest.mark.parametrize("path,param", [
    ("/api/v1/sessions?limit=0", "limit"), ("/api/v1/sessions?limit=501", "limit"),
    ("/api/v1/sessions?sort=name", "sort"), ("/api/v1/sessions?from=x", "from"),
    ("/api/v1/sessions/SID/report?format=pdf", "format"),
    ("/api/v1/sessions/SID/insights?format=html", "format"),
    ("/api/v1/sessions/SID/timeline?max_events=100001", "max_events"),
    ("/api/v1/sessions/SID/timeline?from=10&to=5", "to"),
    ("/api/v1/sessions/SID/timeline?kinds=gpu,flames", "kinds"),
    ("/api/v1/sessions/SID/timeline?kinds=", "kinds"),
    ("/api/v1/sessions/SID/timeline?kinds=counters&counters=ts_ns", "counters"),
    ("/api/v1/sessions/SID/timeline?kinds=counters&counters=gpu_util_pct,bogus", "counters"),
    ("/api/v1/sessions/SID/timeline?kinds=counters&points=2001", "points"),
    ("/api/v1/sessions/SID/metrics?points=0", "points"),
    ("/api/v1/sessions/SID/metrics?device=-2", "device"),
    ("/api/v1/sessions/SID/kernels?limit=abc", "limit"),
    ("/api/v1/sessions/SID/export", "format"), ("/api/v1/sessions/SID/export?format=pdf", "format"),
    # A CTF trace is a directory of files: the CLI writes it, the server has no one body to send.
    ("/api/v1/sessions/SID/export?format=ctf", "format")])
def test_bad_parameters_are_400_naming_them(env, path, param):
    st, doc = get_json(env, path.replace("SID", env["windows"][0][0]))
    assert (st, doc.get("parameter")) == (400, param), doc


def records_of(env, sid, types):
    """The records of those types shipped for sid, in the order sent."""
    for s, _, _, _, text in env["windows"]:
        if s == sid:
            yield from (r for r in map(json.loads, text.splitlines()) if r["type"] in types)


def activity_of(env, sid):
    """(start_ns, end_ns) of every kernel, copy, memset and sync row shipped for sid."""
    return [row for rec in records_of(env, sid, ("kernel", "copy", "memset", "sync"))
            for row in zip(rec["start_ns"], rec.get("end_ns", rec["start_ns"]))]


def test_timeline_downsampling_keeps_counts(env):
    sid = max(sessions_of(env), key=lambda s: len(activity_of(env, s)))
    rows = activity_of(env, sid)
    assert len(rows) > 6
    st, full = get_json(env, "/api/v1/sessions/%s/timeline" % sid)
    assert st == 200 and not full["downsampled"] and full["total"] == len(rows)
    assert sorted(e["start_ns"] for e in full["events"]) == sorted(r[0] for r in rows)
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline?max_events=3" % sid)
    assert st == 200 and doc["downsampled"] and doc["total"] == len(rows)
    assert len(doc["events"]) <= 3
    assert sum(b["count"] for b in doc["buckets"]) == len(rows)
    assert sum(b["kept"] for b in doc["buckets"]) == len(doc["events"])
    for b in doc["buckets"]:  # the kept events are the longest of their bucket
        lo, hi = b["from_ns"], b["from_ns"] + doc["bucket_ns"]
        inside = sorted((e - s for s, e in rows if lo <= s < hi), reverse=True)
        kept = sorted((e["end_ns"] - e["start_ns"] for e in doc["events"]
                       if lo <= e["start_ns"] < hi), reverse=True)
        assert len(inside) == b["count"] and kept == inside[:b["kept"]]
    lo = sorted(r[0] for r in rows)[2]
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline?from=%d" % (sid, lo))
    assert doc["total"] == sum(1 for s, _ in rows if s >= lo)


def dict_of(env, sid):
    """{dict id: string} of every dict line shipped for sid (per file, ids do not collide in
    the fixtures)."""
    out = {}
    for rec in records_of(env, sid, ("dict",)):
        out.update(zip(rec["id"], rec["str"]))
    return out


def columns_of(env, sid, rtype, names):
    """Rows (dicts of names) of one record type shipped for sid; a scalar column repeats."""
    out = []
    for rec in records_of(env, sid, (rtype,)):
        n = len(rec[names[0]])
        for i in range(n):
            out.append({k: (rec[k][i] if isinstance(rec.get(k), list) else rec.get(k))
                        for k in names})
    return out


def session_with(env, *types):
    return next(s for s in sessions_of(env)
                if all(any(True for _ in records_of(env, s, (t,))) for t in types))


def test_timeline_without_kinds_answers_the_first_version(env):
    sid = session_with(env, "kernel", "scope_begin", "gpu_sample")
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline" % sid)
    assert st == 200
    assert set(doc) == {"from_ns", "to_ns", "total", "returned", "downsampled", "events"}
    assert all(set(e) == {"kind", "name", "start_ns", "end_ns", "device", "stream"}
               for e in doc["events"])
    st, gpu = get_json(env, "/api/v1/sessions/%s/timeline?kinds=gpu" % sid)
    assert gpu["events"] == [{k: v for k, v in e.items() if v is not None}
                             for e in doc["events"]]


def test_timeline_scopes_are_the_logged_begin_end_pairs(env):
    sid = session_with(env, "kernel", "scope_begin", "gpu_sample")
    names = dict_of(env, sid)
    ends = {r["id"]: r["ts_ns"] for r in columns_of(env, sid, "scope_end", ["id", "ts_ns"])}
    begins = columns_of(env, sid, "scope_begin", ["id", "ts_ns", "tid", "depth", "name"])
    want = sorted((b["tid"], names[b["name"]], b["depth"], b["ts_ns"], ends.get(b["id"]))
                  for b in begins)
    assert len(want) >= 10
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline?kinds=scopes" % sid)
    assert st == 200 and "events" not in doc, doc
    sc = doc["scopes"]
    assert not sc["downsampled"] and sc["total"] == len(want) == sc["returned"]
    got = sorted((s["tid"], s["name"], s["depth"], s["start_ns"], s["end_ns"])
                 for s in sc["spans"])
    assert got == want
    # A window: the scopes that overlap it, also those begun before it.
    lo, hi = want[len(want) // 2][3] + 1, want[len(want) // 2][3] + 2
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline?kinds=scopes&from=%d&to=%d"
                       % (sid, lo, hi))
    inside = [w for w in want if w[3] < hi and (w[4] is None or w[4] >= lo)]
    assert sorted((s["tid"], s["name"], s["depth"], s["start_ns"], s["end_ns"])
                  for s in doc["scopes"]["spans"]) == sorted(inside)
    assert any(w[3] < lo for w in inside)
    # Downsampled: each bucket keeps its longest, the counts add up.
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline?kinds=scopes&max_events=4" % sid)
    sc = doc["scopes"]
    assert sc["downsampled"] and sc["total"] == len(want) and len(sc["spans"]) <= 4
    assert sum(b["count"] for b in sc["buckets"]) == len(want)
    assert sum(b["kept"] for b in sc["buckets"]) == len(sc["spans"])


def test_timeline_launches_and_details_are_the_kernel_rows(env):
    for sid in sessions_of(env):
        # columns_of reads plain columns: compact kernel lines (v 2) hold deltas and codes.
        if any(rec.get("v", 1) >= 2 for rec in records_of(env, sid, ("kernel",))):
            continue
        rows = columns_of(env, sid, "kernel", ["start_ns", "correlation", "tid", "launch_ns",
                                               "grid_x", "block_x"])
        rows = [r for r in rows if r["launch_ns"] is not None]
        if rows:
            break
    else:
        pytest.fail("no fixture session has a kernel with launch_ns")
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline?kinds=gpu,launches,details" % sid)
    assert st == 200
    by_start = {e["start_ns"]: e for e in doc["events"] if e["kind"] == "kernel"}
    for r in rows:
        e = by_start[r["start_ns"]]
        assert (e["correlation"], e["tid"], e["launch_ns"], e["grid_x"], e["block_x"]) == (
            r["correlation"], r["tid"], r["launch_ns"], r["grid_x"], r["block_x"])
    # Without launches= the answer holds no launch columns.
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline?kinds=gpu" % sid)
    assert not any("launch_ns" in e or "grid_x" in e for e in doc["events"])


def test_timeline_counters_bucket_the_samples(env):
    sid = session_with(env, "kernel", "scope_begin", "gpu_sample")
    samples = samples_of(env, sid, "gpu_sample", "gpu_util_pct")
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline?kinds=counters&points=4" % sid)
    assert st == 200, doc
    c = doc["counters"]
    frm, to, width = doc["from_ns"], doc["to_ns"], c["bucket_ns"]
    assert c["points"] == 4 and width == (to - frm + 3) // 4
    inside = [s for s in samples if frm <= s[0] < to]
    assert sum(b["count"] for d in c["gpu"] for b in d["buckets"]) == len(inside) > 0
    for d in c["gpu"]:
        for b in d["buckets"]:
            assert set(b) <= {"bucket", "count", "gpu_util_pct", "sm_active_pct",
                              "mem_used_bytes", "power_mw"}
            vals = [v for t, dev, v in inside if dev == d["device"]
                    and b["bucket"] == (t - frm) // width and v is not None]
            assert b["gpu_util_pct"]["max"] == max(vals)
    st, doc = get_json(env, "/api/v1/sessions/%s/timeline?kinds=counters&counters=temp_gpu_c"
                       % sid)
    assert all(set(b) <= {"bucket", "count", "temp_gpu_c"}
               for d in doc["counters"]["gpu"] for b in d["buckets"])


def samples_of(env, sid, rtype, column):
    """(ts_ns, device, value) of one column of the sample records shipped for sid."""
    return [row for rec in records_of(env, sid, (rtype,)) if column in rec
            for row in zip(rec["ts_ns"], rec.get("device", [None] * len(rec["ts_ns"])),
                           rec[column])]


def test_metric_buckets_against_the_samples(env):
    sid = next(s for s, _, _, _, t in env["windows"] if '"type":"gpu_sample"' in t)
    samples = samples_of(env, sid, "gpu_sample", "gpu_util_pct")
    assert len(samples) >= 4
    st, doc = get_json(env, "/api/v1/sessions/%s/metrics?points=3" % sid)
    assert st == 200, doc
    frm, width = doc["from_ns"], doc["bucket_ns"]
    assert doc["to_ns"] == max(max(t for t, _, _ in samples),
                               max([t for t, _, _ in samples_of(env, sid, "host_sample", "cpu_pct")]
                                   or [0])) + 1
    for series in doc["gpu"]:
        want = {}
        for t, dev, v in samples:
            if dev == series["device"] and v is not None:
                want.setdefault((t - frm) // width, []).append(v)
        got = {b["bucket"]: b["gpu_util_pct"] for b in series["buckets"] if "gpu_util_pct" in b}
        assert set(got) == set(want)
        for k, vals in want.items():
            assert got[k]["min"] == min(vals) and got[k]["max"] == max(vals)
            assert abs(got[k]["mean"] - sum(vals) / len(vals)) < 1e-6
        assert len(series["buckets"]) <= 3
    dev = doc["gpu"][0]["device"]
    st, one = get_json(env, "/api/v1/sessions/%s/metrics?points=3&device=%d" % (sid, dev))
    assert [s["device"] for s in one["gpu"]] == [dev]


def test_kernels_per_name_match_the_report(env):
    for sid in sessions_of(env):
        st, rep = get_json(env, "/api/v1/sessions/%s/report?format=json" % sid)
        st, doc = get_json(env, "/api/v1/sessions/%s/kernels?limit=10000" % sid)
        assert st == 200, doc
        assert doc["built"]
        want = {h["name"]: h for h in (rep.get("kernels") or {}).get("hotspots", [])}
        got = {k["name"]: k for k in doc["kernels"]}
        assert doc["count"] == (rep.get("kernels") or {}).get("count", 0), sid
        for name, h in want.items():
            k = got[name]
            assert (k["count"], k["total_ns"], k["p50_ns"], k["p99_ns"]) == \
                (h["calls"], h["total_ns"], h["p50_ns"], h["p99_ns"]), (sid, name)
            assert k["min_ns"] <= k["p50_ns"] <= k["p90_ns"] <= k["p99_ns"] <= k["max_ns"]


def edge(i):
    """Where duration bucket i starts: four buckets per doubling (docs/server-api.md)."""
    return 0 if i < 0 else math.ceil(2 ** (i // 4) * 2 ** ((i % 4) / 4))


def test_kernel_duration_histograms(env):
    checked = 0
    for sid in sessions_of(env):
        st, tl = get_json(env, "/api/v1/sessions/%s/timeline?max_events=100000" % sid)
        assert st == 200 and not tl["downsampled"]
        st, doc = get_json(env, "/api/v1/sessions/%s/kernels?limit=10000" % sid)
        for k in doc["kernels"]:
            durs = sorted(e["end_ns"] - e["start_ns"] for e in tl["events"]
                          if e["kind"] == "kernel" and e["name"] == k["name"])
            want = {}
            for d in durs:
                i = -1 if d < 1 else max(i for i in range(252) if edge(i) <= d)
                lo, hi = (0, 1) if i < 0 else (edge(i), edge(i + 1))
                want[(lo, hi)] = want.get((lo, hi), 0) + 1
            got = {(b["from_ns"], b["to_ns"]): b["count"] for b in k["histogram"]}
            assert got == want, (sid, k["name"])
            assert [b["from_ns"] for b in k["histogram"]] == sorted(lo for lo, _ in want)
            assert sum(got.values()) == k["count"]
            checked += 1
    assert checked >= 5


def test_export_equals_the_cli(env):
    sessions = sessions_of(env)
    for sid, files in sessions.items():
        d = shipped_dir(env, sid, files)
        for fmt, ctype in (("perfetto", "application/octet-stream"),
                           ("chrome", "application/json")):
            st, body, h = get(env, "/api/v1/sessions/%s/export?format=%s" % (sid, fmt))
            assert st == 200, body
            assert h["Content-Type"] == ctype and h["Content-Disposition"] == "attachment"
            assert body == cli(["export", "--format", fmt, "-o", "-", d]), (sid, fmt)
            assert len(body) > 0


def test_scope_tree(env):
    sid = next(s for s, _, _, _, t in env["windows"] if '"app_name":"scoped_demo"' in t)
    st, doc = get_json(env, "/api/v1/sessions/%s/scopes" % sid)
    assert st == 200, doc
    st, rep = get_json(env, "/api/v1/sessions/%s/report?format=json" % sid)

    def walk(nodes, depth=0):
        for n in nodes:
            assert n["depth"] == depth
            yield n
            yield from walk(n["children"], depth + 1)
    nodes = list(walk(doc["tree"]))
    assert len(nodes) == doc["paths_count"] == rep["scopes"]["paths_count"]
    gpu = {p["path"]: p["gpu_ns"] for p in rep["scope_gpu"]["paths"]}
    assert any(n.get("gpu_ns") for n in nodes)
    for n in nodes:
        if n["path"] in gpu:
            assert n["gpu_ns"] == gpu[n["path"]]


def test_complete_and_quiet_sessions_get_built(env):
    """The builder thread builds a completed session without being asked: its report is there
    while the session's windows stay as they were."""
    sid = "20261127T010000.000Z-1-quiet"
    srv, key = env["srv"], env["keys"]["ingest"]
    first, second = gen_session.windows(80, session_id=sid, app="quiet", segment_kernels=50)
    st, doc, _ = srv.request("POST", STREAM, gzip.compress(first[2].encode()),
                             window_headers(key, sid, "device", 0, sid + "-0"))
    assert st == 200, doc
    st, doc, _ = srv.request("POST", COMPLETE, json.dumps({"session_id": sid}).encode(),
                             {"Authorization": "Bearer " + key})
    assert st == 200
    deadline = time.time() + 20
    while time.time() < deadline:
        st, doc = get_json(env, "/api/v1/sessions/%s/kernels" % sid)
        if doc.get("built"):
            break
        time.sleep(0.2)
    assert doc["built"] and doc["count"] == 50
    # A window after the build makes it stale: the kernels come from the rows again, then the
    # builder (the session is complete) builds it anew.
    st, doc, _ = srv.request("POST", STREAM, gzip.compress(second[2].encode()),
                             window_headers(key, sid, "device", 1, sid + "-1"))
    assert st == 200, doc
    st, doc = get_json(env, "/api/v1/sessions/%s/kernels" % sid)
    assert doc["count"] == 80
    deadline = time.time() + 20
    while time.time() < deadline and not doc["built"]:
        time.sleep(0.2)
        st, doc = get_json(env, "/api/v1/sessions/%s/kernels" % sid)
    assert doc["built"] and doc["count"] == 80


def test_many_kernels_session(env):
    """A generated session of GPUFL_TEST_KERNELS kernels (default 1 M): shipped, then the
    summary, insights, kernels per name and a 10 000-event timeline timed. Only generous
    bounds are asserted here; bench/ holds the targets."""
    sid = "20261127T000000.000Z-4242-beef"
    srv, key = env["srv"], env["keys"]["ingest"]
    t0 = time.monotonic()
    # Windows of the library's size (a segment of 200,000 kernels each): ingest holds one
    # rowset of typed cells at a time, whatever a window's rows.
    for ch, seq, text in gen_session.windows(N_KERNELS, session_id=sid):
        st, doc, _ = srv.request("POST", STREAM, gzip.compress(text.encode()),
                                 window_headers(key, sid, ch, seq, "%s-%d" % (sid, seq)))
        assert st == 200, doc
    ingest_s = time.monotonic() - t0
    t0 = time.monotonic()
    st, _, _ = get(env, "/api/v1/sessions/%s/insights" % sid)  # builds the report
    build_s = time.monotonic() - t0
    assert st == 200
    times, sizes = {}, {}
    for name, path in (("summary", ""), ("insights", "/insights"), ("kernels", "/kernels"),
                       ("timeline", "/timeline?max_events=10000"),
                       ("timeline_10k_window", "/timeline?from=1000&to=%d" % (1000 + 10000 * 9000)),
                       # The dashboard's tile at full zoom-out (web/src/timeline/tiles.ts):
                       # every kind, the whole session in one answer.
                       ("timeline_tile", "/timeline?" + TILE_QUERY)):
        t0 = time.monotonic()
        st, body, _ = get(env, "/api/v1/sessions/%s%s" % (sid, path))
        times[name] = (time.monotonic() - t0) * 1e3
        assert st == 200, body
        if name == "kernels":
            assert json.loads(body)["count"] == N_KERNELS
        if name.startswith("timeline"):
            doc = json.loads(body)
            assert len(doc["events"]) <= 10000 and len(body) < 4 << 20
            sizes[name] = len(body)
        if name == "timeline_tile":
            assert doc["total"] == N_KERNELS and len(doc["events"]) <= 2000
            assert sum(b["count"] for b in doc["buckets"]) == N_KERNELS
            assert len(body) < TILE_BYTES_MAX, len(body)
            if name == "timeline":
                assert doc["total"] == N_KERNELS
                assert sum(b["count"] for b in doc["buckets"]) == N_KERNELS
    print("\n%s: %d kernels: ingest %.1f s, report build %.1f s; %s" % (
        env["engine"], N_KERNELS, ingest_s, build_s,
        ", ".join("%s %.0f ms" % kv for kv in times.items())))
    print("answer sizes: " + ", ".join("%s %d bytes" % kv for kv in sizes.items()))
    for name in ("summary", "insights", "kernels"):
        assert times[name] < 2000, times
