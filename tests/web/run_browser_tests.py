#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The dashboard's browser tests: a real gpufl-server on loopback serving the built app
(--web-root), seeded with the fixture sessions (tests/fixtures/sessions) of workspace alpha and
one session of workspace beta, a user of each; two generated gpufl-monitor sessions of
alpha that end an hour ago (the fleet page: several GPUs, processes, an XID, a lost GPU, ECC, a
throttle span), and workspace scale (user sam) with one monitor session of 64 GPUs over the last
24 h (the fleet heatmap's render time; --fleet-scale-interval-s sets its sampling, 1 s is
5.5 M rows); then Playwright (web/e2e) drives Debian's
Chromium headless against it. The expected sessions go to the tests in a JSON file, read from
the server's own API with a read key.

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--web-root", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chromium", default=os.environ.get("GPUFL_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--fleet-scale-interval-s", type=int, default=10)
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
        for w in sh.fixture_windows():
            st, doc = sh.send_until_answered(srv, ingest["alpha"], w)
            assert st == 200, (w[3], st, doc)
        # A session of another workspace: alpha's user must never see it.
        for w in sh.generated_session("beta-only-session", windows=1, kernels=10):
            st, doc = sh.send_until_answered(srv, ingest["beta"], w)
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
        st, doc, _ = srv.request("GET", "/api/v1/sessions?limit=500",
                                 headers={"Authorization": "Bearer " + read})
        assert st == 200 and doc["next_cursor"] is None, doc
        expected = os.path.join(args.out, "expected.json")
        with open(expected, "w") as f:
            json.dump({"base_url": "http://127.0.0.1:%d" % srv.port, "workspace": "alpha",
                       "user": "ann", "password": PASSWORD, "sessions": doc["sessions"],
                       "other_workspace_session": "beta-only-session",
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
