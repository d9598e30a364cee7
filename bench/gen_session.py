#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a valid session log (docs/log-format.md) with N kernels, for gpufl-server's query
benchmarks and tests: device.log segments of SEGMENT_KERNELS kernels, each a header, a dict of
kernel names and kernel batch lines of BATCH rows, then segment_end (session_end in the last).
Kernels are deterministic (a seed): names drawn from a few, durations spread over three orders
of magnitude, on two streams of one device.

usage: gen_session.py N OUT_DIR [--session-id ID] [--app NAME]
       (writes OUT_DIR/device.log, device.log.1, ...; import it for windows():
       [(channel, sequence, text)], one window per segment)
"""
import argparse
import json
import os
import random

NAMES = ["_Z4gemmPKfS0_Pfiii", "_Z4reluPfi", "_Z7softmaxPKfPfi", "_Z9layernormPfi",
         "_Z6reducePfS_i", "_Z9transposePfS_ii"]
BATCH = 5000                 # kernels per batch line
SEGMENT_KERNELS = 200000     # kernels per segment: each segment is one window


def _dump(rec):
    return json.dumps(rec, separators=(",", ":"))


def segments(n, session_id="20261127T000000.000Z-4242-beef", app="gen_1m", seed=1,
             segment_kernels=SEGMENT_KERNELS):
    """[[line, ...], ...]: the device log's segments, each with its header and dict, all but
    the last ended by segment_end, the last by session_end (as the writer rotates)."""
    rnd = random.Random(seed)
    out = []
    t, done = 1000, 0
    while True:
        k_seg = min(segment_kernels, n - done)
        seg = [_dump({"type": "header", "v": 1, "format": "gpufl-log", "file": "device",
                      "segment": len(out), "session_id": session_id, "app_name": app,
                      "pid": 4242, "hostname": "gen-host", "epoch_ns": "1000000000000",
                      "epoch_unix_us": 1795737600000000, "clock": "monotonic",
                      "gpufl_version": "0.1.0"}),
               _dump({"type": "dict", "v": 1, "id": list(range(1, len(NAMES) + 1)),
                      "str": NAMES})]
        left = k_seg
        while left:
            k = min(BATCH, left)
            start, end, name, stream, corr = [], [], [], [], []
            for i in range(k):
                d = rnd.choice((1000, 5000, 20000)) + rnd.randrange(1000)
                start.append(t)
                end.append(t + d)
                t += d + 500
                name.append(rnd.randrange(len(NAMES)) + 1)
                stream.append(7 + (i & 1))
                corr.append(done + i + 1)
            seg.append(_dump({"type": "kernel", "v": 1, "start_ns": start, "end_ns": end,
                              "device": [0] * k, "context": [1] * k, "stream": stream,
                              "correlation": corr, "name": name}))
            done += k
            left -= k
        out.append(seg)
        if done >= n:
            seg.append(_dump({"type": "session_end", "v": 1, "ts_ns": t, "duration_ns": t,
                              "records_written": n, "records_dropped": 0, "bytes_written": 0,
                              "write_errors": 0}))
            return out
        seg.append(_dump({"type": "segment_end", "v": 1, "ts_ns": t,
                          "next": "device.log.%d" % len(out)}))


def windows(n, **kw):
    """[(channel, sequence, text)]: one window per segment, as gpufl ships them."""
    return [("device", i, "".join(line + "\n" for line in seg))
            for i, seg in enumerate(segments(n, **kw))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("out_dir")
    ap.add_argument("--session-id", default="20261127T000000.000Z-4242-beef")
    ap.add_argument("--app", default="gen_1m")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    for _, seq, text in windows(a.n, session_id=a.session_id, app=a.app):
        name = "device.log" + (".%d" % seq if seq else "")
        with open(os.path.join(a.out_dir, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
