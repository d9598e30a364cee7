# SPDX-License-Identifier: Apache-2.0
"""The bounded load test of gpufl-server on loopback: 16 concurrent uploaders for a fixed time
(GPUFL_LOAD_SECONDS, 60 by default), each shipping the windows of its own generated sessions
and sending about one window in five twice (at once, or later as a retry after a lost answer),
then every session's row counts and checksums must equal what was sent, each window stored
once. One engine per run: `-k sqlite` or `-k postgresql`.

usage: GPUFL_LOAD_SECONDS=60 python3 -m pytest tests/integration/test_server_load.py -k sqlite
"""
import gzip
import os
import random
import threading
import time

import pytest

import server_harness as sh

UPLOADERS = 16


def uploader(n, srv, key, deadline, sent, outcomes, errors):
    rnd = random.Random(n)
    retry_later = []
    session = 0
    try:
        while time.time() < deadline:
            sid = "load-%d-%d" % (n, session)
            session += 1
            windows = sh.generated_session(sid, rnd.randint(1, 6), rnd.choice((50, 200, 1500)),
                                           batch=500, seed=n * 1000 + session)
            for w in windows:
                body = gzip.compress(w[4].encode(), 1)
                copies = 2 if rnd.random() < 0.2 else 1
                if copies == 2 and rnd.random() < 0.5:
                    retry_later.append((w, body))
                    copies = 1
                for _ in range(copies):
                    st, doc = sh.send_until_answered(srv, key, w, body=body)
                    outcomes.append((w[3], st, doc.get("window")))
                sent.append(w)
        for w, body in retry_later:
            st, doc = sh.send_until_answered(srv, key, w, body=body)
            outcomes.append((w[3], st, doc.get("window")))
    except Exception as e:  # reported by the test, not lost in the thread
        errors.append(repr(e))


@pytest.mark.parametrize("kind", sh.ENGINES)
def test_sixteen_uploaders(kind, tmp_path):
    seconds = float(os.environ.get("GPUFL_LOAD_SECONDS", "60"))
    with sh.engine(kind, tmp_path, "load") as db:
        sh.new_workspace(db.url, "load")
        key = sh.new_key(db.url, "load", "ingest")
        srv = sh.Server(db.url, ["--threads", "16", "--max-windows", "8"], log_dir=str(tmp_path))
        sent, outcomes, errors = [], [], []
        deadline = time.time() + seconds
        threads = [threading.Thread(target=uploader,
                                    args=(n, srv, key, deadline, sent, outcomes, errors))
                   for n in range(UPLOADERS)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            assert srv.stop() == 0
        assert not errors, errors
        assert all(st == 200 for _, st, _ in outcomes), [o for o in outcomes if o[1] != 200][:5]
        stored = [wid for wid, _, o in outcomes if o == "stored"]
        assert sorted(stored) == sorted(w[3] for w in sent)  # each window stored once
        assert len(outcomes) - len(stored) > 0  # duplicates were sent and answered as such
        assert sh.session_checksums(db) == sh.sent_checksums(sent)
        rows = sum(c[3] for c in sh.sent_checksums(sent).values())
        print("%s: %d windows (%d sent twice), %d kernel rows in %.0f s" % (
            kind, len(sent), len(outcomes) - len(stored), rows, seconds))
