#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bytes per kernel of a recorded session's device.log, plain and compact, raw and gzipped at
levels 1 (what the uploader sends) and 6. Plain lines are
rewritten as compact ones by tests/tools/gpufl_compact.py (which encodes as lib/core/wire.c
does), compact ones as the plain lines they stand for: a session recorded either way gives
both figures.

usage: bench/log_bytes_of.py SESSION_DIR [...]
"""
import json
import os
import sys
import gzip

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "tools"))
import gpufl_compact  # noqa: E402


def segments(d):
    path, n, out = os.path.join(d, "device.log"), 1, []
    while os.path.exists(path):
        out.append(path)
        path = os.path.join(d, "device.log.%d" % n)
        n += 1
    return out


def measure(d):
    plain, compact, kernels, kernel_lines = [], [], 0, 0
    for path in segments(d):
        with open(path, encoding="utf-8") as f:
            for line in f.read().splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # an incomplete last line
                v = rec.get("v", 0)
                if (rec.get("type"), v) in gpufl_compact.CODES:  # written compact: its plain
                    plain_rec = dict(gpufl_compact.decode(dict(rec)), v=v - 1)
                    plain.append(json.dumps(plain_rec, separators=(",", ":")))
                    compact.append(line)
                    rec = plain_rec
                else:
                    plain.append(line)
                    codes = gpufl_compact.CODES.get((rec.get("type"), v + 1))
                    if codes and gpufl_compact._fits(rec, codes):
                        line = json.dumps(gpufl_compact.encode(rec, v + 1), separators=(",", ":"))
                    compact.append(line)
                if rec.get("type") == "kernel":
                    kernels += len(rec["start_ns"])
                    kernel_lines += 1
    if not kernels:
        raise SystemExit("%s: no kernel rows" % d)
    print("%s: %d kernels in %d lines (%.0f rows a line)" % (d, kernels, kernel_lines,
                                                           kernels / kernel_lines))
    for what, pick in (("kernel lines", lambda l: l.startswith('{"type":"kernel"')),
                       ("device.log", lambda l: True)):
        for name, lines in (("plain", plain), ("compact", compact)):
            data = ("\n".join(l for l in lines if pick(l)) + "\n").encode()
            print("  %-12s %-8s raw %6.1f B/kernel  gzip-1 %5.2f  gzip-6 %5.2f" % (
                what, name, len(data) / kernels, len(gzip.compress(data, 1, mtime=0)) / kernels,
                len(gzip.compress(data, 6, mtime=0)) / kernels))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for arg in sys.argv[1:]:
        measure(arg)
