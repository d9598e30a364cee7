# SPDX-License-Identifier: Apache-2.0
"""gpufl-server on the sessions recorded on GPUs (tests/fixtures/gpu-runs: a monitor over two
GPUs in segments, a two-rank job, PyTorch under Trace with stacks, our kernels under Deep), on a
temporary SQLite database and, where the PostgreSQL binaries are installed, on a throwaway
cluster: every segment of every channel shipped as its own window, then the report (json, text,
html), the insights and the Chrome export compared byte for byte with what the gpufl CLI prints
for the same directories, and the kernels per name with the report's kernel table.

usage: python3 -m pytest tests/integration/test_server_gpu_runs.py, with GPUFL_SERVER and
GPUFL_CLI naming the binaries (ctest sets them).
"""
import gzip
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from server_harness import (ENGINES, GPU_RUNS, SERVER, STREAM, Server, engine,  # noqa: E402
                            fixture_dirs, fixture_windows, new_key, new_workspace,
                            window_headers)

CLI = os.environ.get("GPUFL_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(SERVER))), "gpufl", "gpufl")
# The runs the fixtures' README lists: a directory missing is a broken fixture, not a pass.
RUNS = ("deep", "job-rank0", "job-rank1", "monitor", "trace")


@pytest.fixture(scope="module", params=ENGINES)
def env(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("gpu-runs-" + request.param)
    with engine(request.param, d, "gpuruns") as db:
        new_workspace(db.url, "alpha")
        keys = {role: new_key(db.url, "alpha", role) for role in ("ingest", "read")}
        srv = Server(db.url, log_dir=str(d))
        windows = fixture_windows(GPU_RUNS)
        for sid, ch, seq, wid, text in windows:
            st, doc, _ = srv.request("POST", STREAM, gzip.compress(text.encode()),
                                     window_headers(keys["ingest"], sid, ch, seq, wid))
            assert st == 200, (wid, doc)
        yield {"srv": srv, "keys": keys, "windows": windows}
        assert srv.stop() == 0


def get(env, path):
    c = env["srv"].conn(timeout=120)
    try:
        c.request("GET", path, headers={"Authorization": "Bearer " + env["keys"]["read"]})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def cli(*args):
    r = subprocess.run([CLI, *args], capture_output=True, timeout=120)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def runs():
    """[(directory name, path, session id)] of the GPU runs."""
    out = []
    for name, d in fixture_dirs(GPU_RUNS).items():
        with open(os.path.join(d, "device.log")) as f:
            out.append((name, d, json.loads(f.readline())["session_id"]))
    return out


def test_every_run_and_segment_is_shipped(env):
    assert tuple(n for n, _, _ in runs()) == RUNS
    # The monitor's five segments of device and system, two of scope: each its own window.
    monitor = next(s for n, _, s in runs() if n == "monitor")
    seqs = sorted((ch, seq) for s, ch, seq, _, _ in env["windows"] if s == monitor)
    assert seqs == [("device", i) for i in range(5)] + [("scope", 0), ("scope", 1)] + \
        [("system", i) for i in range(5)]
    for name, _, sid in runs():
        st, body = get(env, "/api/v1/sessions/" + sid)
        assert st == 200, (name, body)
        doc = json.loads(body)
        assert doc["windows"] == sum(1 for w in env["windows"] if w[0] == sid), name


@pytest.mark.parametrize("fmt", ["json", "text", "html"])
def test_report_equals_the_cli(env, fmt):
    for name, d, sid in runs():
        st, body = get(env, "/api/v1/sessions/%s/report?format=%s" % (sid, fmt))
        assert st == 200, (name, body[:300])
        assert body == cli("report", "--format", fmt, d), (name, fmt)


def test_insights_equal_the_cli(env):
    for name, d, sid in runs():
        st, body = get(env, "/api/v1/sessions/%s/insights" % sid)
        assert st == 200 and body == cli("insights", "--format", "json", d), name
        st, body = get(env, "/api/v1/sessions/%s/insights?format=text" % sid)
        assert st == 200 and body == cli("insights", d), name
    # Real runs give findings: the Deep run's divergence and strides, the job's idle GPU.
    rules = {n: {i["rule"] for i in json.loads(cli("insights", "--format", "json", d))["insights"]}
             for n, d, _ in runs()}
    assert {"warp_divergence", "uncoalesced_global"} <= rules["deep"]
    assert "in_loop_sync" in rules["trace"]


def test_kernels_equal_the_report(env):
    """The kernels route's figures per name are the report's kernel table (docs/server-api.md:
    nearest-rank percentiles, as the report's)."""
    checked = 0
    for name, d, sid in runs():
        rep = json.loads(cli("report", "--format", "json", d))
        st, body = get(env, "/api/v1/sessions/%s/kernels?limit=10000" % sid)
        assert st == 200, (name, body)
        doc = json.loads(body)
        k = rep["kernels"] or {"count": 0, "distinct_names": 0, "total_ns": 0, "hotspots": []}
        assert (doc["count"], doc["distinct_names"], doc["total_ns"], doc["truncated"]) == \
            (k["count"], k["distinct_names"], k["total_ns"], False), name
        want = [(h["name"], h["calls"], h["total_ns"], h["p50_ns"], h["p99_ns"], h["max_ns"])
                for h in k["hotspots"]]
        got = [(x["name"], x["count"], x["total_ns"], x["p50_ns"], x["p99_ns"], x["max_ns"])
               for x in doc["kernels"]]
        assert sorted(got) == sorted(want), name
        checked += len(want)
    assert checked > 60  # the Trace run's and the job's cuDNN and cuBLAS kernels


def test_chrome_export_equals_the_cli(env):
    for name, d, sid in runs():
        st, body = get(env, "/api/v1/sessions/%s/export?format=chrome" % sid)
        assert st == 200, (name, body[:300])
        assert body == cli("export", "--format", "chrome", "-o", "-", d), name
