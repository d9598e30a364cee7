#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""python_analyzer.py - how fast gpufl.analyzer turns a large session into a
DataFrame: GpuFlightSession(dir).kernels on a synthetic session of N kernel
rows (default 1,000,000), beside `gpufl report` on the same session (which
loads it with the same C reader, then renders the text report), runs
alternating. Target (issue 6): 1 M kernel rows in under 2 s.

The session has the shape bench_reader.c writes: a device.log of kernel
batches of 4096 rows (21 columns, 40 kernel names with demangled forms,
three scopes), a scope.log of the three scopes.

Usage: PYTHONPATH=<build>/python python3 bench/python_analyzer.py
           [--kernels N] [--runs R] [--cli <build>/cmd/gpufl/gpufl] [--keep DIR]
Each analyzer run is a fresh interpreter, timed from inside (import excluded).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BATCH = 4096
NAMES = 40
HEADER = ('{"type":"header","v":1,"format":"gpufl-log","file":"%s","segment":0,'
          '"session_id":"20261122T000000.000Z-1-bench","app_name":"bench_analyzer","pid":1,'
          '"hostname":"bench","epoch_ns":"1000000000000","epoch_unix_us":1795305600000000,'
          '"clock":"monotonic","gpufl_version":"0.1.0"}\n')

# name -> value of row i, as bench_reader.c has them
COLUMNS = [
    ("start_ns", lambda i: 1000000 + i * 3000),
    ("end_ns", lambda i: 1000000 + i * 3000 + 1000 + (i % 17) * 50),
    ("device", lambda i: 0), ("context", lambda i: 1), ("stream", lambda i: 7 + i % 4),
    ("correlation", lambda i: 100 + i), ("name", lambda i: 1 + 2 * (i % NAMES)),
    ("grid_x", lambda i: 64 << (i % 5)), ("grid_y", lambda i: 1), ("grid_z", lambda i: 1),
    ("block_x", lambda i: 128 << (i % 3)), ("block_y", lambda i: 1), ("block_z", lambda i: 1),
    ("registers", lambda i: 32 + (i % 6) * 16), ("static_smem_bytes", lambda i: (i % 4) * 4096),
    ("dynamic_smem_bytes", lambda i: 0), ("local_bytes_per_thread", lambda i: 0),
    ("graph_id", lambda i: 0), ("graph_node", lambda i: 0),
    ("demangled", lambda i: 2 + 2 * (i % NAMES)), ("scope", lambda i: 1 + (i // 1000) % 3),
]


def write_session(directory, kernels):
    os.makedirs(directory, exist_ok=True)
    end_ns = 1000000 + kernels * 3000 + 1000 + (kernels % 17) * 50 + 1000
    ending = '{"type":"session_end","v":1,"ts_ns":%d,"duration_ns":%d}\n' % (end_ns, end_ns)
    with open(os.path.join(directory, "device.log"), "w") as f:
        f.write(HEADER % "device")
        ids = ",".join(str(k + 1) for k in range(2 * NAMES))
        strs = ",".join('"_Z7kernel%dPfi","kernel%d(float*, int)"' % (k, k) for k in range(NAMES))
        f.write('{"type":"dict","v":1,"id":[%s],"str":[%s]}\n' % (ids, strs))
        for first in range(0, kernels, BATCH):
            rows = range(first, min(first + BATCH, kernels))
            cells = ",".join('"%s":[%s]' % (name, ",".join(str(value(i)) for i in rows))
                             for name, value in COLUMNS)
            f.write('{"type":"kernel","v":1,%s}\n' % cells)
        f.write(ending)
    with open(os.path.join(directory, "scope.log"), "w") as f:
        f.write(HEADER % "scope")
        f.write('{"type":"dict","v":1,"id":[200,201,202,203],"str":["step","forward",'
                '"step/forward","step/backward"]}\n')
        f.write('{"type":"scope_begin","v":1,"ts_ns":[1000,2000,3000],"tid":[9,9,9],'
                '"id":[1,2,3],"parent":[0,1,1],"depth":[1,2,2],"name":[200,201,201],'
                '"tag":[0,0,0],"path":[200,202,203],"repeat":[0,0,0]}\n')
        f.write('{"type":"scope_end","v":1,"ts_ns":[%d,%d,%d],"id":[2,3,1],"implicit":[0,0,0]}\n'
                % (end_ns - 3, end_ns - 2, end_ns - 1))
        f.write(ending)


# Run in a fresh interpreter: prints "<open s> <kernels s> <rows> <columns> <peak RSS KiB>".
CHILD = """
import resource, sys, time
from gpufl.analyzer import GpuFlightSession
import pandas
t0 = time.perf_counter()
s = GpuFlightSession(sys.argv[1])
t1 = time.perf_counter()
k = s.kernels
t2 = time.perf_counter()
assert k.name.iloc[0] == "kernel0(float*, int)", k.name.iloc[0]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(t1 - t0, t2 - t1, len(k), len(k.columns), rss)
"""


def run_analyzer(directory):
    out = subprocess.run([sys.executable, "-c", CHILD, directory], check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2]), int(out[3]), int(out[4])


def run_cli(cli, directory):
    t0 = time.perf_counter()
    subprocess.run([cli, "report", directory], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", type=int, default=1000000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cli", default=os.environ.get("GPUFL_CLI"),
                   help="the gpufl binary, for the side-by-side `gpufl report`")
    p.add_argument("--keep", help="write the session here and keep it")
    args = p.parse_args()

    directory = args.keep or tempfile.mkdtemp(prefix="gpufl-bench-analyzer-")
    try:
        t0 = time.perf_counter()
        write_session(directory, args.kernels)
        size = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory))
        print("session: %d kernel rows, %.1f MiB, written in %.1f s"
              % (args.kernels, size / 1048576, time.perf_counter() - t0))
        opens, frames, totals, reports, rss = [], [], [], [], []
        for r in range(args.runs):
            o, k, rows, cols, peak = run_analyzer(directory)
            rss.append(peak)
            assert rows == args.kernels
            opens.append(o)
            frames.append(k)
            totals.append(o + k)
            line = ("run %d: analyzer %.3f s (open %.3f + kernels %.3f; %d x %d; peak RSS %d MiB)"
                    % (r + 1, o + k, o, k, rows, cols, peak // 1024))
            if args.cli:
                reports.append(run_cli(args.cli, directory))
                line += ", gpufl report %.3f s" % reports[-1]
            print(line)
        med = statistics.median
        print("GpuFlightSession(dir).kernels: median %.3f s (best %.3f): open %.3f s, "
              "DataFrame %.3f s; %.2f M rows/s" % (med(totals), min(totals), med(opens),
                                                   med(frames), args.kernels / med(totals) / 1e6))
        if reports:
            print("gpufl report (load + text report): median %.3f s (best %.3f)"
                  % (med(reports), min(reports)))
            print("ratio analyzer / gpufl report: %.2f" % (med(totals) / med(reports)))
        print("target: 1 M kernel rows under 2 s: %s"
              % ("met" if args.kernels >= 1000000 and med(totals) < 2 else
                 "not met" if args.kernels >= 1000000 else "n/a (fewer rows)"))
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
