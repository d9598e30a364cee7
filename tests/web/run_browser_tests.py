#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The dashboard's browser tests: a real gpufl-server on loopback serving the built app
(--web-root), seeded with the fixture sessions of workspace alpha (the hand-written ones of
tests/fixtures/sessions and those recorded on GPUs of tests/fixtures/gpu-runs, every segment of
every channel its own window) and one session of workspace beta, a user of each, and a
multi-rank job (job_sessions: four ranks of one job id, rank 3 slower in its GEMM kernel); two
generated gpufl-monitor sessions of alpha that end an hour ago (the fleet page: several GPUs,
processes, an XID, a lost GPU, ECC, a throttle span), and workspace scale (user sam) with one
monitor session of 64 GPUs over the last 24 h (the fleet heatmap's render time;
--fleet-scale-interval-s sets its sampling, 1 s is 5.5 M rows); then Playwright (web/e2e)
drives Debian's Chromium headless against it. The expected sessions go to the tests in a JSON
file, read from the server's own API with a read key, with what the gpufl CLI says of each
fixture directory (`report --format json`, `insights --format json`, a Chrome export;
`fixtures` and `gpu_runs`, each keyed by directory name) for the pages' tests.

usage: run_browser_tests.py --server BIN --web-root DIR --out DIR [playwright args...]
       (tests/web/run.sh builds the app first; ctest -R web runs that.)"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

PASSWORD = "correct horse battery"
PERF_SESSION = "20261127T120000.000Z-1000-perf"

JOB_ID = "ddp-4242"
JOB_APP = "ddp_train"
JOB_RANKS = 4
JOB_SLOW_RANK = 3
JOB_SLOW_GEMM = 1.18  # the slow rank's GEMM takes 18 % longer than the others'
JOB_KERNELS = ["sgemm_128x64", "relu", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"]


def job_sessions():
    """The windows of a data-parallel job: JOB_RANKS sessions (one device window each) with the
    header's job_id, 50 steps of GEMM, ReLU and an NCCL all-reduce, and a session_end; the
    GEMM of rank JOB_SLOW_RANK takes JOB_SLOW_GEMM times as long."""
    out = []
    for rank in range(JOB_RANKS):
        sid = "20261126T080000.000Z-%d-job%d" % (3000 + rank, rank)
        gemm = int(2_000_000 * (JOB_SLOW_GEMM if rank == JOB_SLOW_RANK else 1))
        durations = [gemm, 300_000, 1_000_000]
        start, end, name = [], [], []
        t = 1_000_000
        for _ in range(50):
            for k, d in enumerate(durations):
                start.append(t)
                end.append(t + d)
                name.append(k + 1)
                t += d + 20_000
        n = len(start)
        lines = [
            {"type": "header", "v": 1, "format": "gpufl-log", "file": "device", "segment": 0,
             "session_id": sid, "app_name": JOB_APP, "pid": 3000 + rank,
             "hostname": "gpu-node%d" % (10 + rank), "epoch_ns": "5000000000",
             "epoch_unix_us": 1795420800000000 + rank * 1000, "clock": "monotonic",
             "gpufl_version": "0.1.0", "job_id": JOB_ID, "job_id_from": "GPUFL_JOB_ID"},
            {"type": "dict", "v": 1, "id": [1, 2, 3], "str": JOB_KERNELS},
            {"type": "kernel", "v": 1, "start_ns": start, "end_ns": end, "device": [0] * n,
             "context": [1] * n, "stream": [7] * n, "correlation": list(range(1, n + 1)),
             "name": name, "grid_x": [132] * n, "grid_y": [1] * n, "grid_z": [1] * n,
             "block_x": [256] * n, "block_y": [1] * n, "block_z": [1] * n,
             "registers": [32] * n},
            {"type": "session_end", "v": 1, "ts_ns": t + 1_000_000, "duration_ns": t + 1_000_000,
             "records_written": n, "records_dropped": 0, "bytes_written": 0, "write_errors": 0},
        ]
        text = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines)
        out.append((sid, "device", 0, sid + "-device-0", text))
    return out


def cli_views(cli, root, out):
    """What `gpufl` says of each session directory under a fixtures root, by directory name:
    its session id, the JSON report and insights, and the path of its Chrome export (the
    pages' numbers and download are compared with these)."""
    import server_harness as sh
    if not os.access(cli, os.X_OK):
        sys.exit("run_browser_tests: no gpufl CLI at %s (--cli or GPUFL_CLI)" % cli)
    os.makedirs(out, exist_ok=True)
    views = {}
    for name, d in sh.fixture_dirs(root).items():

        def run(*a):
            r = subprocess.run([cli, *a, d], capture_output=True, timeout=120)
            assert r.returncode == 0, (name, a, r.stderr)
            return r.stdout
        report = json.loads(run("report", "--format", "json"))
        chrome = os.path.join(out, name + ".trace.json")
        with open(chrome, "wb") as f:
            f.write(run("export", "--format", "chrome", "-o", "-"))
        views[name] = {"session_id": report["session"]["session_id"], "report": report,
                       "insights": json.loads(run("insights", "--format", "json"))["insights"],
                       "chrome_export": chrome}
    return views


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--web-root", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chromium", default=os.environ.get("GPUFL_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--cli", default=os.environ.get("GPUFL_CLI"),
                    help="the gpufl CLI (default: cmd/gpufl/gpufl beside the server's build)")
    ap.add_argument("--fleet-scale-interval-s", type=int,
                    default=int(os.environ.get("GPUFL_WEB_FLEET_INTERVAL_S", "10")))
    args, rest = ap.parse_known_args()
    os.environ["GPUFL_SERVER"] = os.path.abspath(args.server)
    import server_harness as sh  # after GPUFL_SERVER: the harness reads it at import
    import fleet_session as fs

    if not os.access(args.chromium, os.X_OK):
        sys.exit("run_browser_tests: no Chromium at %s (apt-get install chromium, or "
                 "scripts/deps.sh)" % args.chromium)
    os.makedirs(args.out, exist_ok=True)
    db = os.path.join(args.out, "web.db")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    url = "sqlite:" + db
    for ws, user in (("alpha", "ann"), ("beta", "bob"), ("scale", "sam")):  # user names are the server's, not a workspace's
        sh.new_workspace(url, ws)
        r = sh.admin(url, "user", "create", "--workspace", ws, user, stdin=PASSWORD + "\n")
        assert r.returncode == 0, r.stderr
    ingest = {ws: sh.new_key(url, ws, "ingest") for ws in ("alpha", "beta", "scale")}
    read = sh.new_key(url, "alpha", "read")
    srv = sh.Server(url, ["--web-root", os.path.abspath(args.web_root)], log_dir=args.out)
    try:
        for w in sh.fixture_windows() + sh.fixture_windows(sh.GPU_RUNS):
            st, doc = sh.send_until_answered(srv, ingest["alpha"], w)
            assert st == 200, (w[3], st, doc)
        # The timeline's performance session (web/e2e/timeline.spec.ts alone uses it): 1 M
        # kernels unless GPUFL_WEB_KERNELS says fewer, in windows of the library's size.
        kernels = int(os.environ.get("GPUFL_WEB_KERNELS", "1000000"))
        per = min(kernels, 200000)
        for w in sh.generated_session(PERF_SESSION, windows=max(1, kernels // per), kernels=per,
                                      batch=5000, end=True, t0=1_000_000):
            st, doc = sh.send_until_answered(srv, ingest["alpha"], w)
            assert st == 200, (w[3], st, doc)
        # A session of another workspace: alpha's user must never see it.
        for w in sh.generated_session("beta-only-session", windows=1, kernels=10):
            st, doc = sh.send_until_answered(srv, ingest["beta"], w)
            assert st == 200, (w[3], st, doc)
        for w in job_sessions():
            st, doc = sh.send_until_answered(srv, ingest["alpha"], w)
            assert st == 200, (w[3], st, doc)
        # The fleet: monitor sessions of the last hours, so the page's default range (24 h)
        # holds them; the ids and epochs go to the spec, which asks the API for the numbers.
        now_us = int(time.time()) * 10**6
        fleet = []
        for sid, host, gpus, ago_s in (("fleet-mon-a", "gpu-node7", 4, 7200),
                                       ("fleet-mon-b", "gpu-node8", 2, 5400)):
            epoch = now_us - ago_s * 10**6
            for w in fs.monitor_session(sid, host, gpus, 3600, interval_s=5, window_s=600,
                                        epoch_us=epoch, lost_at_s=3000):
                st, doc = sh.send_until_answered(srv, ingest["alpha"], w)
                assert st == 200, (w[3], st, doc)
            fleet.append({"session_id": sid, "hostname": host, "gpus": gpus,
                          "epoch_unix_us": epoch})
        for w in fs.scale_session("fleet-scale", "scale-host", 64, 86400,
                                  interval_s=args.fleet_scale_interval_s,
                                  epoch_us=now_us - 86400 * 10**6):
            st, doc = sh.send_until_answered(srv, ingest["scale"], w)
            assert st == 200, (w[3], st, doc)
        auth = {"Authorization": "Bearer " + read}
        st, doc, _ = srv.request("GET", "/api/v1/sessions?limit=500", headers=auth)
        assert st == 200 and doc["next_cursor"] is None, doc
        # Reports built for all but the newest session, so the list shows insight figures and
        # one "not built yet" row alike.
        for s in doc["sessions"][1:]:
            st, _, _ = srv.request("GET", "/api/v1/sessions/%s/insights" % s["session_id"],
                                   headers=auth)
            assert st == 200
        st, doc, _ = srv.request("GET", "/api/v1/sessions?limit=500", headers=auth)
        assert st == 200 and doc["next_cursor"] is None, doc
        cli = args.cli or os.path.join(os.path.dirname(os.path.dirname(
            os.path.abspath(args.server))), "gpufl", "gpufl")
        fixtures = cli_views(cli, sh.FIXTURES, os.path.join(args.out, "cli"))
        # The GPU runs apart: their directory names (trace) are also the hand-written ones'.
        gpu_runs = cli_views(cli, sh.GPU_RUNS, os.path.join(args.out, "cli-gpu-runs"))
        expected = os.path.join(args.out, "expected.json")
        with open(expected, "w") as f:
            json.dump({"base_url": "http://127.0.0.1:%d" % srv.port, "workspace": "alpha",
                       "user": "ann", "password": PASSWORD, "sessions": doc["sessions"],
                       "other_workspace_session": "beta-only-session",
                       "fixtures": fixtures, "gpu_runs": gpu_runs,
                       "job": {"id": JOB_ID, "app": JOB_APP, "ranks": JOB_RANKS,
                               "slow_rank": JOB_SLOW_RANK, "slow_kernel": JOB_KERNELS[0],
                               "slow_pct": round((JOB_SLOW_GEMM - 1) * 100)},
                       "perf_session": PERF_SESSION,
                       "perf_kernels": per * max(1, kernels // per),
                       "fleet": {"sessions": fleet, "read_key": read,
                                 "ingest_key": ingest["alpha"],
                                 "scale": {"workspace": "scale", "user": "sam", "gpus": 64,
                                           "interval_s": args.fleet_scale_interval_s}}},
                      f, indent=1)
        env = dict(os.environ, GPUFL_WEB_EXPECTED=expected, GPUFL_CHROMIUM=args.chromium,
                   GPUFL_WEB_OUT=os.path.abspath(args.out), PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1",
                   CI="1")
        npx = os.path.join(ROOT, "web", "node_modules", ".bin", "playwright")
        r = subprocess.run([npx, "test", "--config", os.path.join(ROOT, "web",
                            "playwright.config.ts"), *rest], cwd=os.path.join(ROOT, "web"),
                           env=env)
        return r.returncode
    finally:
        rc = srv.stop()
        if rc != 0:
            print(srv.stderr()[-4000:], file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
