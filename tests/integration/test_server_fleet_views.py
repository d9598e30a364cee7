# SPDX-License-Identifier: Apache-2.0
"""gpufl-server's fleet views (heatmap, health, usage) on SQLite and, where the binaries are, on
a throwaway PostgreSQL: two generated gpufl-monitor sessions (fleet_session.py: several GPUs,
processes, an XID, a lost GPU, ECC increments, a throttle span) shipped window by window, and
every figure compared with one computed here from the lines sent; another workspace's key sees
nothing; bad parameters are 400.

usage: python3 -m pytest tests/integration/test_server_fleet_views.py, with GPUFL_SERVER naming
the binary (ctest sets it)."""
import json
import os
import sqlite3
import subprocess
import sys
import urllib.parse

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fleet_session as fs  # noqa: E402
import server_harness as sh  # noqa: E402
from server_harness import SERVER, Server, post_window  # noqa: E402

SECONDS = 60
SESSIONS = (("fleet-a", "gpu-node7", 4, fs.EPOCH_US), ("fleet-b", "gpu-node8", 2,
                                                      fs.EPOCH_US + 20 * 10**6))


def admin(url, *args):
    r = subprocess.run([SERVER, "--db", url, "admin", *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def env(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet-" + request.param)
    with sh.engine(request.param, d, "fleet") as db:
        url = db.url
        for ws in ("alpha", "beta"):
            admin(url, "workspace", "create", ws)
        keys = {"ingest": admin(url, "key", "create", "--workspace", "alpha", "--role", "ingest"),
                "read": admin(url, "key", "create", "--workspace", "alpha", "--role", "read"),
                "beta": admin(url, "key", "create", "--workspace", "beta", "--role", "read")}
        srv = Server(url, log_dir=str(d))
        windows = []
        for sid, host, gpus, epoch in SESSIONS:
            windows += fs.monitor_session(sid, host, gpus, SECONDS, epoch_us=epoch)
        for w in windows:
            st, doc, _ = post_window(srv, keys["ingest"], w)
            assert st == 200, doc
        yield {"srv": srv, "keys": keys, "windows": windows}
        assert srv.stop() == 0


def get(env, path, key="read", **params):
    q = "?" + urllib.parse.urlencode(params) if params else ""
    st, doc, _ = env["srv"].request("GET", path + q,
                                    headers={"Authorization": "Bearer " + env["keys"][key]})
    return st, doc


# ---- what the lines say, computed here ---------------------------------------------------------

def records(env):
    """Per (session, device): samples [(ts_ns, row)] and listings [(ts_ns, pids, utils)]; per
    session: its header, gpu_info by device, process_info by pid and other records."""
    out = {}
    for sid, _, _, _, text in env["windows"]:
        s = out.setdefault(sid, {"samples": {}, "listings": {}, "info": {}, "procs": {},
                                 "records": []})
        for line in text.splitlines():
            rec = json.loads(line)
            t = rec["type"]
            if t == "header":
                s["header"] = rec
            elif t == "gpu_info":
                s["info"][rec["device"]] = rec
            elif t == "process_info":
                s["procs"][rec["pid"]] = rec
            elif t == "gpu_processes":
                s["listings"].setdefault(rec["device"], []).append(
                    (rec["ts_ns"], rec["pid"], rec.get("sm_util_pct")))
            elif t == "gpu_sample":
                cols = [k for k in rec if k not in ("type", "v")]
                for i in range(len(rec["ts_ns"])):
                    row = {k: rec[k][i] for k in cols}
                    s["samples"].setdefault(row["device"], []).append((row["ts_ns"], row))
            else:
                s["records"].append(rec)
    return out


def wall(s, ts_ns):
    return s["header"]["epoch_unix_us"] + ts_ns // 1000


def in_force(listings, ts):
    best = None
    for lst in sorted(listings, key=lambda x: x[0]):
        if lst[0] <= ts:
            best = lst
    return best


# ---- heatmap -----------------------------------------------------------------------------------

S = 10**6


@pytest.mark.parametrize("frm,to,points,rollup_s", [
    (fs.EPOCH_US + 5 * S, fs.EPOCH_US + 65 * S, 12, None),       # 5 s buckets: the raw rows
    (fs.EPOCH_US - 7 * S, fs.EPOCH_US + 200 * S, 2, 60),          # 104 s: whole minutes
    (fs.EPOCH_US + 13 * S, fs.EPOCH_US + 93 * S, 4, 10),          # 20 s: 10 s slots
    (fs.EPOCH_US - 3600 * S, fs.EPOCH_US + 3 * 3600 * S, 3, 600),  # 80 min: 10 min slots
])
def test_heatmap_means_and_held_against_the_lines(env, frm, to, points, rollup_s):
    st, doc = get(env, "/api/v1/fleet/heatmap", **{"from": frm, "to": to, "points": points})
    assert st == 200, doc
    bucket = doc["bucket_us"]
    assert doc["rollup_s"] == rollup_s
    if rollup_s is None:
        assert bucket == (to - frm + points - 1) // points and doc["points"] == points
    else:
        # Whole slots: the range widened to them, the bucket a whole number of them.
        slot = rollup_s * S
        assert doc["from_unix_us"] == frm // slot * slot and bucket % slot == 0
        assert doc["to_unix_us"] >= to and doc["points"] <= points + 1
        assert bucket == -(-((to - frm + points - 1) // points) // slot) * slot
        frm, to, points = doc["from_unix_us"], doc["to_unix_us"], doc["points"]
    recs = records(env)
    expected = {}
    for sid, s in recs.items():
        for dev, rows in s["samples"].items():
            uuid = s["info"][dev]["uuid"]
            util = [[] for _ in range(points)]
            sm = [[] for _ in range(points)]
            last = None
            for ts, row in rows:
                at = wall(s, ts)
                if frm <= at < to:
                    b = (at - frm) // bucket
                    util[b].append(row["gpu_util_pct"])
                    sm[b].append(row["sm_active_pct"])
                    last = ts
            if last is None:
                continue
            held = [None if not util[b] else 0 for b in range(points)]
            lst = sorted(s["listings"].get(dev, []), key=lambda x: x[0])
            for k, (ts, pids, _) in enumerate(lst):
                if not pids:
                    continue
                a = wall(s, ts)
                z = wall(s, lst[k + 1][0]) if k + 1 < len(lst) else wall(s, last) + 1
                for b in range(points):
                    if a < frm + (b + 1) * bucket and z > frm + b * bucket:
                        held[b] = 1
            expected[uuid] = (s["header"]["hostname"], util, sm, held)
    got = {g["uuid"]: g for g in doc["gpus"]}
    assert sorted(got) == sorted(expected)
    assert len(got) == 6  # 4 GPUs of gpu-node7, 2 of gpu-node8
    assert all(len(g["gpu_util_pct"]) == points for g in got.values())
    for uuid, (host, util, sm, held) in expected.items():
        g = got[uuid]
        assert g["hostname"] == host
        for b in range(points):
            for name, vals in (("gpu_util_pct", util), ("sm_active_pct", sm)):
                if not vals[b]:
                    assert g[name][b] is None, (uuid, name, b)
                else:
                    assert abs(g[name][b] - sum(vals[b]) / len(vals[b])) <= 0.0501, (uuid, name, b)
        assert g["held"] == held, uuid
    # GPU 1 is held by a process and idle: the page's "allocated but idle".
    idle = got["GPU-gpu-node7-0001"]
    assert 1 in idle["held"] and all(u in (0, None) for u in idle["gpu_util_pct"])
    # GPU 2 of gpu-node7 has no process at all.
    assert 1 not in got["GPU-gpu-node7-0002"]["held"]


def test_heatmap_default_range_is_the_last_day_and_points_capped(env):
    st, doc = get(env, "/api/v1/fleet/heatmap")
    # 24 h in 720 points: 2 min buckets read from the 1 min rollup, the range widened to whole
    # minutes: one point more where that widening passes a bucket.
    assert st == 200 and doc["rollup_s"] == 60 and doc["bucket_us"] == 120 * S
    assert 86400 * S <= doc["to_unix_us"] - doc["from_unix_us"] <= 86400 * S + 120 * S
    assert doc["points"] in (720, 721)
    assert doc["gpus"] == []  # the generated sessions are from 2026-11-23, long before now
    st, doc = get(env, "/api/v1/fleet/heatmap", points=2001)
    assert st == 400 and doc["parameter"] == "points"


# ---- health ------------------------------------------------------------------------------------

def test_health_events_against_the_lines(env):
    frm, to = fs.EPOCH_US, fs.EPOCH_US + 200 * 10**6
    st, doc = get(env, "/api/v1/fleet/health", **{"from": frm, "to": to})
    assert st == 200, doc
    recs = records(env)
    expected = []
    for sid, s in recs.items():
        host = s["header"]["hostname"]
        for dev, rows in s["samples"].items():
            uuid = s["info"][dev]["uuid"]
            prev = None
            since = None
            for ts, row in rows:
                thr = row["throttle_reasons"] & 4  # sw_power_cap; gpu_idle is not throttling
                if prev is not None:
                    for kind in ("ecc_sbe", "ecc_dbe"):
                        d = row[kind + "_volatile"] - prev[kind + "_volatile"]
                        if d > 0:
                            expected.append((wall(s, ts), uuid, host, kind, d))
                if thr and since is None:
                    since = ts
                if not thr and since is not None:
                    expected.append((wall(s, since), uuid, host, "throttle", wall(s, ts)))
                    since = None
                prev = row
        for rec in s["records"]:
            if rec["type"] == "xid":
                expected.append((wall(s, rec["ts_ns"]), s["info"][rec["device"]]["uuid"], host,
                                 "xid", rec["code"]))
            if rec["type"] == "event" and rec["code"] == "gpu_lost":
                expected.append((wall(s, rec["ts_ns"]), s["info"][1]["uuid"], host, "gpu_lost",
                                 None))
    got = []
    for e in doc["events"]:
        extra = {"ecc_sbe": e.get("count"), "ecc_dbe": e.get("count"), "xid": e.get("code"),
                 "throttle": e.get("end_unix_us"), "gpu_lost": None}[e["kind"]]
        got.append((e["unix_us"], e["uuid"], e["hostname"], e["kind"], extra))
        if e["kind"] == "throttle":
            assert e["reason"] == "sw_power_cap" and e["detail"] == "sw_power_cap"
    assert sorted(got, key=str) == sorted(expected, key=str)
    kinds = {e["kind"] for e in doc["events"]}
    assert kinds == {"xid", "ecc_sbe", "ecc_dbe", "throttle", "gpu_lost"}
    assert [e["unix_us"] for e in doc["events"]] == sorted(e["unix_us"] for e in doc["events"])
    assert doc["truncated"] is False


# ---- usage -------------------------------------------------------------------------------------

def expected_usage(env, frm, to, group):
    rows = {}
    for sid, s in records(env).items():
        host = s["header"]["hostname"]
        for dev, samples in s["samples"].items():
            lst = s["listings"].get(dev, [])
            prev = None
            for ts, row in samples:
                if not frm <= wall(s, ts) < to:
                    continue
                if prev is not None:
                    pts, prow = prev
                    dt = ts - pts
                    if row["energy_mj"] is not None and prow["energy_mj"] is not None:
                        mj = row["energy_mj"] - prow["energy_mj"]
                    else:
                        mj = row["power_mw"] * dt / 1e9
                    held = in_force(lst, pts)
                    if held and held[1]:
                        utils = held[2] or [0] * len(held[1])
                        total = sum(u for u in utils if u and u > 0)
                        for pid, u in zip(held[1], utils):
                            share = (u / total if u and u > 0 else 0) if total > 0 else \
                                1 / len(held[1])
                            info = s["procs"].get(pid, {})
                            key = {"process": (host, pid), "job": info.get("slurm_job_id"),
                                   "user": info.get("user")}[group]
                            r = rows.setdefault(key, [0.0, 0.0, set()])
                            r[0] += dt * share
                            r[1] += mj * share
                            r[2].add(s["info"][dev]["uuid"])
                prev = (ts, row)
    return rows


@pytest.mark.parametrize("group", ["process", "job", "user"])
def test_usage_split_against_the_lines(env, group):
    frm, to = fs.EPOCH_US + 3 * 10**6, fs.EPOCH_US + 70 * 10**6
    st, doc = get(env, "/api/v1/fleet/usage", **{"from": frm, "to": to, "group": group})
    assert st == 200, doc
    want = expected_usage(env, frm, to, group)
    got = {}
    for r in doc["rows"]:
        key = {"process": lambda: (r["hostname"], r["pid"]), "job": lambda: r["job_id"],
               "user": lambda: r["user"]}[group]()
        got[key] = r
    assert sorted(got, key=str) == sorted(want, key=str)
    for key, (ns, mj, gpus) in want.items():
        r = got[key]
        assert abs(r["gpu_seconds"] - ns / 1e9) < 0.002, key
        assert abs(r["gpu_hours"] - ns / 3.6e12) < 1e-9, key
        assert abs(r["energy_j"] - mj / 1e3) < 0.002, key
        assert abs(r["energy_kwh"] - mj / 3.6e9) < 1e-12, key
        assert r["gpus"] == len(gpus), key
    secs = [r["gpu_seconds"] for r in doc["rows"]]
    assert secs == sorted(secs, reverse=True)
    if group == "process":
        # pid 100 shares GPU 0 with pid 101 from 30 s on at 60 : 20 by SM utilization.
        assert got[("gpu-node7", 100)]["comm"] == "python3"
        assert got[("gpu-node7", 100)]["job_id"] == "J100"


# ---- scope and parameters ----------------------------------------------------------------------

@pytest.mark.parametrize("path", ["heatmap", "health", "usage"])
def test_another_workspace_sees_nothing(env, path):
    frm, to = fs.EPOCH_US, fs.EPOCH_US + 200 * 10**6
    st, doc = get(env, "/api/v1/fleet/" + path, key="beta", **{"from": frm, "to": to})
    assert st == 200, doc
    assert doc.get("gpus", doc.get("events", doc.get("rows"))) == []
    st, doc = get(env, "/api/v1/fleet/" + path, **{"from": frm, "to": to})
    assert doc.get("gpus", doc.get("events", doc.get("rows")))


@pytest.mark.parametrize("path,params,param", [
    ("heatmap", {"points": "0"}, "points"),
    ("heatmap", {"from": "10", "to": "10"}, "from"),
    ("health", {"from": "x"}, "from"),
    ("usage", {"group": "team"}, "group"),
])
def test_bad_parameters_are_400(env, path, params, param):
    st, doc = get(env, "/api/v1/fleet/" + path, **params)
    assert st == 400 and doc["parameter"] == param, doc


def test_fleet_gpus_lists_a_gpu_info_without_optional_fields(env):
    # A gpu_info record with only device and uuid (a driver that answered nothing else) is
    # still a GPU of the fleet: fleet/gpus used to drop it.
    sid = "fleet-bare"
    text = "\n".join(json.dumps(x) for x in (
        json.loads(fs.header(sid, "bare-node", 0, fs.EPOCH_US)),
        {"type": "gpu_info", "v": 1, "device": 0, "uuid": "GPU-bare-0"})) + "\n"
    st, doc, _ = post_window(env["srv"], env["keys"]["ingest"],
                             (sid, "device", 0, sid + "-device-0", text))
    assert st == 200, doc
    st, doc = get(env, "/api/v1/fleet/gpus")
    bare = [g for g in doc["gpus"] if g["uuid"] == "GPU-bare-0"]
    assert len(bare) == 1 and bare[0]["name"] is None and bare[0]["mem_total_bytes"] is None
    assert bare[0]["hostname"] == "bare-node" and bare[0]["latest"] is None


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_rollups_are_filled_for_rows_stored_before_them(kind, tmp_path):
    """A database whose gpu_sample rows were stored before migration 6 (made here by removing
    the rollups and the migration's record) gets them rolled up when the server opens it: the
    heatmap is the same as before."""
    with sh.engine(kind, tmp_path, "rollup") as db:
        admin(db.url, "workspace", "create", "alpha")
        ingest = admin(db.url, "key", "create", "--workspace", "alpha", "--role", "ingest")
        read = admin(db.url, "key", "create", "--workspace", "alpha", "--role", "read")
        q = "/api/v1/fleet/heatmap?from=%d&to=%d&points=2" % (fs.EPOCH_US, fs.EPOCH_US + 240 * S)
        srv = Server(db.url, log_dir=str(tmp_path))
        try:
            for w in fs.monitor_session("old-a", "gpu-node7", 3, SECONDS):
                assert post_window(srv, ingest, w)[0] == 200
            st, before, _ = srv.request("GET", q, headers={"Authorization": "Bearer " + read})
            assert st == 200 and before["rollup_s"] == 60 and len(before["gpus"]) == 3
        finally:
            assert srv.stop() == 0
        undo = "DROP TABLE gpu_rollup; DELETE FROM schema_migrations WHERE version = 6"
        if kind == "sqlite":  # the harness's query() does not commit
            with sqlite3.connect(db.path) as c:
                c.executescript(undo)
        else:
            db.query(undo)
        srv = Server(db.url, log_dir=str(tmp_path))
        try:
            st, after, _ = srv.request("GET", q, headers={"Authorization": "Bearer " + read})
            assert st == 200 and after == before
        finally:
            assert srv.stop() == 0


def test_needs_a_key(env):
    st, _, _ = env["srv"].request("GET", "/api/v1/fleet/heatmap")
    assert st == 401
