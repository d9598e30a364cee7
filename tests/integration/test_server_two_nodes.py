# SPDX-License-Identifier: Apache-2.0
"""Two gpufl-server processes on one PostgreSQL, as behind a load balancer: sessions ingested
through one, the same windows again through the other (all duplicates), then new sessions sent
to both at once, every window to each (each stored exactly once); row counts and per-session
checksums exact, read through either server's database.

usage: python3 -m pytest tests/integration/test_server_two_nodes.py, with GPUFL_SERVER naming
the binary (ctest sets it).
"""
import concurrent.futures
import gzip

import server_harness as sh


def test_two_servers_one_postgresql(tmp_path):
    with sh.engine("postgresql", tmp_path) as db:
        sh.new_workspace(db.url, "fleet")
        key = sh.new_key(db.url, "fleet", "ingest")
        a = sh.Server(db.url, ["--max-windows", "32"], log_dir=str(tmp_path))
        b = sh.Server(db.url, ["--max-windows", "32"], log_dir=str(tmp_path))
        try:
            first = [w for i in range(4)
                     for w in sh.generated_session("node-a-%d" % i, 5, 2000, seed=i)]
            for w in first:
                st, doc = sh.send_until_answered(a, key, w)
                assert (st, doc["window"]) == (200, "stored"), doc
            for w in first:  # the agent's retry landing on the other replica
                st, doc = sh.send_until_answered(b, key, w)
                assert (st, doc["window"]) == (200, "duplicate"), doc
            assert sh.session_checksums(db) == sh.sent_checksums(first)

            second = [w for i in range(6)
                      for w in sh.generated_session("both-%d" % i, 6, 3000, seed=10 + i)]
            bodies = {w[3]: gzip.compress(w[4].encode(), 1) for w in second}
            jobs = [(srv, w) for w in second for srv in (a, b, b, a)]
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                results = list(pool.map(
                    lambda job: (job[1][3], sh.send_until_answered(job[0], key, job[1],
                                                                   body=bodies[job[1][3]])),
                    jobs))
            assert all(st == 200 for _, (st, _) in results), results
            stored = [wid for wid, (_, doc) in results if doc["window"] == "stored"]
            assert sorted(stored) == sorted(w[3] for w in second)
            assert sh.session_checksums(db) == sh.sent_checksums(first + second)
            for sid in ("node-a-0", "both-5"):
                assert sh.lines_digest(db, sid) == sh.sent_digest(first + second, sid)
            n_windows = db.query("SELECT count(*) FROM windows")[0][0]
            assert n_windows == len(first) + len(second)
        finally:
            assert a.stop() == 0
            assert b.stop() == 0
