# SPDX-License-Identifier: Apache-2.0
"""gpufl-server's SASS routes (routes_sass.c) as a whole process on loopback, on a temporary
SQLite database and, where the PostgreSQL binaries are installed, on a throwaway cluster
(pg_harness.py): every fixture session shipped window by window, then the functions of the
PC-sampled and SASS-metrics fixtures and each function's instructions and source lines compared
with the PC sampling and SASS metrics sections of `gpufl report --format json` on the same
lines; the name parameter (missing, empty, mangled, unknown), pagination, and the keys (another
workspace's 404, ingest 403, none 401).

usage: python3 -m pytest tests/integration/test_server_sass.py, with GPUFL_SERVER (and
GPUFL_CLI, else the gpufl beside it in the build tree) naming the binaries.
"""
import gzip
import json
import os
import subprocess
import sys
import urllib.parse

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from server_harness import (ENGINES, FIXTURES, SERVER, STREAM, Server, engine,  # noqa: E402
                            fixture_windows, new_key, new_workspace, window_headers)

CLI = os.environ.get("GPUFL_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(SERVER))), "gpufl", "gpufl")
FUNCTIONS = "/api/v1/sessions/%s/functions"
SASS = "/api/v1/sessions/%s/functions/sass"


@pytest.fixture(scope="module", params=ENGINES)
def env(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("sass-" + request.param)
    with engine(request.param, d, "sass") as db:
        for ws in ("alpha", "beta"):
            new_workspace(db.url, ws)
        keys = {role: new_key(db.url, "alpha", role) for role in ("ingest", "read", "admin")}
        keys["beta"] = new_key(db.url, "beta", "read")
        srv = Server(db.url, log_dir=str(d))
        windows = fixture_windows()
        for sid, ch, seq, wid, text in windows:
            st, doc, _ = srv.request("POST", STREAM, gzip.compress(text.encode()),
                                     window_headers(keys["ingest"], sid, ch, seq, wid))
            assert st == 200, doc
        yield {"srv": srv, "keys": keys, "windows": windows}
        assert srv.stop() == 0


def get(env, path, key="read", **params):
    if params:
        path += "?" + urllib.parse.urlencode(params)
    h = {"Authorization": "Bearer " + env["keys"][key]} if key else {}
    st, doc, _ = env["srv"].request("GET", path, headers=h)
    return st, doc


def sid_of(env, fixture):
    with open(os.path.join(FIXTURES, fixture, "device.log")) as f:
        return json.loads(f.readline())["session_id"]


def report(fixture):
    r = subprocess.run([CLI, "report", "--format", "json", os.path.join(FIXTURES, fixture)],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


COUNTERS = ("warp_inst", "thread_inst", "thread_efficiency_pct", "idle_lanes", "requests",
            "sectors", "sectors_ideal", "sectors_per_request", "ideal_sectors_per_request",
            "coalescing_efficiency_pct", "excess_sectors")


def assert_counters(got, want, where):
    """The SASS metric counters of the route against the report's, every one of them."""
    assert got is not None, where
    for k in COUNTERS:
        if want[k] is None or got[k] is None:
            assert got[k] == want[k], (where, k)
        else:
            assert got[k] == pytest.approx(want[k], rel=1e-9), (where, k, got[k], want[k])


def functions_of(env, sid):
    st, doc = get(env, FUNCTIONS % sid, limit=1000)
    assert st == 200, doc
    return doc


def one(env, sid, name, key="read"):
    st, doc = get(env, SASS % sid, key=key, name=name)
    assert st == 200, doc
    return doc


def test_functions_of_the_pc_sampled_session_match_the_report(env):
    sid, rep = sid_of(env, "pcsampled"), report("pcsampled")["pc_sampling"]
    doc = functions_of(env, sid)
    assert doc["pc_sampling"] and not doc["sass_metrics"]
    assert [f["name"] for f in doc["functions"]] == [k["kernel"] for k in rep["kernels"]]
    assert doc["total"] == len(rep["kernels"]) and doc["next_offset"] is None
    assert sum(f["samples"] for f in doc["functions"]) == rep["recorded"]
    for f, k in zip(doc["functions"], rep["kernels"]):
        assert f["samples"] == k["samples"], f["name"]
        for r in k["top_reasons"]:
            assert f["reasons"][r["reason"]] == r["samples"], (f["name"], r)
        assert sum(f["reasons"].values()) == f["samples"]
        assert list(f["reasons"].values()) == sorted(f["reasons"].values(), reverse=True)
        assert f["metrics"] is None and f["mangled"].startswith("_Z")


def test_instructions_and_lines_of_pc_sampled_functions_match_the_report(env):
    sid, rep = sid_of(env, "pcsampled"), report("pcsampled")["pc_sampling"]
    checked = 0
    for k in rep["kernels"]:
        doc = one(env, sid, k["kernel"])
        assert (doc["name"], doc["samples"]) == (k["kernel"], k["samples"])
        insns = {i["pc"]: i for i in doc["instructions"]}
        assert [i["pc"] for i in doc["instructions"]] == sorted(insns)
        lines = {(l["file"], l["line"]): l for l in doc["lines"]}
        assert sum(l["samples"] for l in doc["lines"]) == k["samples"]
        for want in (l for l in rep["lines"] if l["kernel"] == k["kernel"]):
            if want["file"] is None:  # an instruction without line info: the report's own row
                got = insns[want["pc"]]
                assert got["file"] is None and got["line"] is None
            else:
                got = lines[(want["file"], want["line"])]
                assert sorted(got["pcs"]) == sorted(
                    i["pc"] for i in doc["instructions"]
                    if (i["file"], i["line"]) == (want["file"], want["line"]))
            assert got["samples"] == want["samples"], want
            assert got["reasons"][want["reason"]] == want["reason_samples"], want
            for hot in want["hot_pcs"]:
                i = insns[hot["pc"]]
                assert (i["sass"], i["samples"]) == (hot["sass"], hot["samples"]), hot
                assert next(iter(i["reasons"])) == hot["reason"]
                assert (i["file"], i["line"]) == (want["file"], want["line"])
            checked += 1
    assert checked == len(rep["lines"])


def test_functions_of_the_sass_metrics_session_match_the_report(env):
    sid, rep = sid_of(env, "sassmetrics"), report("sassmetrics")["sass_metrics"]
    doc = functions_of(env, sid)
    assert doc["sass_metrics"] and not doc["pc_sampling"]
    # No PC samples: by warp instructions, as the report ranks them.
    assert [f["name"] for f in doc["functions"]] == [k["kernel"] for k in rep["kernels"]]
    assert sum(f["instructions"] for f in doc["functions"]) == rep["instructions"]
    for f, k in zip(doc["functions"], rep["kernels"]):
        assert (f["mangled"], f["samples"], f["reasons"]) == (k["mangled"], 0, {})
        assert_counters(f["metrics"], k, f["name"])


def test_instructions_and_lines_of_sass_metrics_functions_match_the_report(env):
    sid, rep = sid_of(env, "sassmetrics"), report("sassmetrics")["sass_metrics"]
    checked = 0
    for k in rep["kernels"]:
        doc = one(env, sid, k["kernel"])
        assert_counters(doc["metrics"], k, k["kernel"])
        insns = {i["pc"]: i for i in doc["instructions"]}
        lines = {(l["file"], l["line"]): l for l in doc["lines"]}
        for want in (l for l in rep["divergent_lines"] + rep["uncoalesced_lines"]
                     if l["kernel"] == k["kernel"]):
            got = lines[(want["file"], want["line"])]
            assert_counters(got["metrics"], want, (k["kernel"], want["line"]))
            for w in want["sass"]:
                i = insns[w["pc"]]
                assert i["sass"] == w["sass"] and w["pc"] in got["pcs"]
                assert_counters(i["metrics"], w, (k["kernel"], w["pc"]))
                checked += 1
    shown = rep["divergent_lines"] + rep["uncoalesced_lines"]
    assert checked == sum(len(l["sass"]) for l in shown) > 0


def test_mangled_name_gives_the_same_answer(env):
    sid = sid_of(env, "sassmetrics")
    f = functions_of(env, sid)["functions"][0]
    assert one(env, sid, f["mangled"]) == one(env, sid, f["name"])


@pytest.mark.parametrize("params,status", [({}, 400), ({"name": ""}, 400),
                                           ({"name": "x" * 4097}, 400),
                                           ({"name": "no_such_kernel(int)"}, 404)])
def test_name_parameter(env, params, status):
    st, doc = get(env, SASS % sid_of(env, "pcsampled"), **params)
    assert (st, doc.get("parameter")) == (status, "name"), doc


def test_pagination(env):
    sid = sid_of(env, "sassmetrics")
    whole = functions_of(env, sid)["functions"]
    seen, offset = [], 0
    while offset is not None:
        st, doc = get(env, FUNCTIONS % sid, limit=1, offset=offset)
        assert st == 200 and len(doc["functions"]) <= 1, doc
        seen += doc["functions"]
        offset = doc["next_offset"]
    assert seen == whole
    for params, name in (({"limit": 0}, "limit"), ({"limit": 1001}, "limit"),
                         ({"offset": -1}, "offset"), ({"offset": "x"}, "offset")):
        st, doc = get(env, FUNCTIONS % sid, **params)
        assert (st, doc.get("parameter")) == (400, name), doc


def test_a_session_without_samples_has_no_functions(env):
    st, doc = get(env, FUNCTIONS % sid_of(env, "basic"))
    assert st == 200, doc
    assert (doc["functions"], doc["total"], doc["pc_sampling"], doc["sass_metrics"]) == \
        ([], 0, False, False)


def test_keys_and_workspaces(env):
    sid = sid_of(env, "pcsampled")
    name = "stencil(float*, float const*, int)"
    for path, params in ((FUNCTIONS % sid, {}), (SASS % sid, {"name": name})):
        for key in ("read", "admin"):
            assert get(env, path, key=key, **params)[0] == 200
        st, doc = get(env, path, key="beta", **params)
        assert st == 404, doc
        assert sid not in json.dumps(doc) and "stencil" not in json.dumps(doc)
        st, _ = get(env, path.replace(sid, "no-such-session"), **params)
        assert st == 404
        assert get(env, path, key="ingest", **params)[0] == 403
        assert get(env, path, key=None, **params)[0] == 401
