#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Memory per second of recording of the flight recorder, per engine.

Each engine runs in a process of its own: a workload of SECONDS (a matmul training-like step per
scope with PyTorch on a GPU where torch.cuda is available, else a CPU step per scope) under
gpufl with the flight recorder on (GPUFL_FLIGHT_RECORDER_S, a window and a cap larger than the
run, so nothing leaves), then gpufl.snapshot(). The snapshot's flight_recorder_snapshot event
says what the ring took in (in_bytes, every row since init) over the session's time (ts_ns)
and what it kept (kept_bytes over span_ns); this prints bytes per second of both and how many
seconds the default cap (flight_recorder_bytes, 64 MiB) holds at that rate.

usage: bench/flight_recorder_rate.py [--engines Monitor,Trace,PcSampling] [--seconds 10]
                                     [--sample-ms 100] [--out DIR] [--json FILE]
(PYTHONPATH names the gpufl package, e.g. build/python.)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT_CAP = 64 << 20


def workload(seconds):
    import gpufl
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if cuda:
        a = torch.randn(2048, 2048, device="cuda")
    steps, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        with gpufl.Scope("step"):
            if cuda:
                for _ in range(8):
                    a = torch.tanh(a @ a)
                torch.cuda.synchronize()
            else:
                sum(i * i for i in range(20000))
        steps += 1
    return steps, "cuda" if cuda else "cpu"


def child(engine, seconds, sample_ms, log_path):
    import gpufl
    os.environ["GPUFL_FLIGHT_RECORDER_S"] = str(int(seconds) + 60)
    os.environ["GPUFL_FLIGHT_RECORDER_BYTES"] = str(4 << 30)
    gpufl.init("flight_rate", log_path=log_path,
               profiling_engine=getattr(gpufl.ProfilingEngine, engine),
               system_sample_rate_ms=sample_ms, continuous_system_sampling=True)
    steps, device = workload(seconds)
    snap = gpufl.snapshot()
    gpufl.shutdown()
    event = None
    with open(os.path.join(snap, "device.log")) as f:
        for line in f:
            j = json.loads(line)
            if j.get("code") == "flight_recorder_snapshot":
                event = j
    print(json.dumps({"engine": engine, "steps": steps, "device": device, "snapshot": snap,
                      "event": event}))


def measure(engine, args, out):
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", engine,
                        "--seconds", str(args.seconds), "--sample-ms", str(args.sample_ms),
                        "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s: the workload failed (%d):\n%s" % (engine, r.returncode, r.stderr))
    got = json.loads(r.stdout.strip().splitlines()[-1])
    e = got["event"]
    rate_in = e["in_bytes"] / (e["ts_ns"] / 1e9)
    rate_kept = e["kept_bytes"] / (e["span_ns"] / 1e9) if e["span_ns"] > 0 else 0.0
    return dict(engine=engine, device=got["device"], steps=got["steps"],
                recorded_s=e["ts_ns"] / 1e9, in_bytes=e["in_bytes"], kept_bytes=e["kept_bytes"],
                pinned_bytes=e["pinned_bytes"], bytes_per_s=rate_in, kept_bytes_per_s=rate_kept,
                default_cap_s=DEFAULT_CAP / rate_in if rate_in > 0 else None,
                running_engine=running_engine(got["snapshot"]))


def running_engine(snapshot):
    with open(os.path.join(snapshot, "device.log")) as f:
        for line in f:
            j = json.loads(line)
            if j.get("type") == "capabilities":
                return j.get("engine_running", j.get("engine"))
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engines", default="Monitor,Trace,PcSampling")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--sample-ms", type=int, default=100)
    p.add_argument("--out", default=None, help="where the snapshots go (default: a temp dir)")
    p.add_argument("--json", default=None, help="also write the figures here")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="flight_rate.")
    if args.child:
        return child(args.child, args.seconds, args.sample_ms, out)
    rows = [measure(e.strip(), args, out) for e in args.engines.split(",") if e.strip()]
    print("%-12s %-10s %-6s %8s %12s %12s %14s" % ("engine", "running", "device", "steps",
                                                   "bytes/s", "kept B/s", "64 MiB holds"))
    for r in rows:
        holds = "%.0f s" % r["default_cap_s"] if r["default_cap_s"] else "-"
        print("%-12s %-10s %-6s %8d %12.0f %12.0f %14s" % (
            r["engine"], r["running_engine"], r["device"], r["steps"], r["bytes_per_s"],
            r["kept_bytes_per_s"], holds))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                       "seconds": args.seconds, "sample_ms": args.sample_ms, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
