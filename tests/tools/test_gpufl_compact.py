#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl_compact.py agrees with the C writer and decoder: the lines bench_log_bytes writes
through lib/core/wire.c (plain and compact, the same rows) decode to each other in Python, and
Python's encoder writes the compact lines byte for byte; malformed encodings raise.

usage: test_gpufl_compact.py BENCH_LOG_BYTES SCRATCH_DIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpufl_compact  # noqa: E402


def main(bench, scratch):
    os.makedirs(scratch, exist_ok=True)
    subprocess.run([bench, "20000", scratch], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(scratch, "kernel-v1.log")) as f:
        plain = f.read().splitlines()
    with open(os.path.join(scratch, "kernel-v2.log")) as f:
        compact = f.read().splitlines()
    assert len(plain) == len(compact) == 5, (len(plain), len(compact))
    for p, c in zip(plain, compact):
        a, b = json.loads(p), gpufl_compact.decode(json.loads(c))
        assert (a.pop("v"), b.pop("v")) == (1, 2)
        assert a == b, "a compact line decodes to other rows than its plain line"
        enc = json.dumps(gpufl_compact.encode(json.loads(p), 2), separators=(",", ":"))
        assert enc == c, "Python's encoder and the writer differ"
    for bad in ('{"type":"kernel","v":2,"start_ns":[1,2],"end_ns":[1],"device":0}',
                '{"type":"kernel","v":2,"end_ns":[1,2],"device":[0,0]}',
                '{"type":"kernel","v":2,"start_ns":[1,2],"end_ns":[1,1],"config":[1,2],'
                '"registers":[8]}',
                # an exception's marker for other than its configuration's rows, too few
                # values after a marker, more values than rows
                '{"type":"kernel","v":2,"start_ns":[1,1,1,1,1,1],"end_ns":[0,0,0,0,0,0],'
                '"config":[1,1,1,2,2,2],"registers":[-2,8,9,16]}',
                '{"type":"kernel","v":2,"start_ns":[1,1,1,1,1,1],"end_ns":[0,0,0,0,0,0],'
                '"config":[1,1,1,2,2,2],"registers":[16,-3,8,9]}',
                '{"type":"kernel","v":2,"start_ns":[1,1],"end_ns":[0,0],"config":[1,2],'
                '"registers":[-1,8,9]}'):
        try:
            gpufl_compact.decode(json.loads(bad))
        except gpufl_compact.CompactError:
            continue
        raise AssertionError("not refused: " + bad)
    # an exception decodes: config 1's rows one by one, config 2's once
    rec = gpufl_compact.decode(json.loads(
        '{"type":"kernel","v":2,"start_ns":[1,1,1,1,1],"end_ns":[0,0,0,0,0],'
        '"config":[1,2,1,2,2],"registers":[-2,8,9,16],'
        '"external_id":[3298534883353,4398046511108,1,2,1]}'))
    assert rec["registers"] == [8, 16, 9, 16, 16], rec["registers"]
    assert rec["external_id"] == [3 << 40 | 25, 4 << 40 | 29, 3 << 40 | 30, 4 << 40 | 32,
                                  4 << 40 | 33], rec["external_id"]
    print("test_gpufl_compact: ok")


if __name__ == "__main__":
    main(*sys.argv[1:])
