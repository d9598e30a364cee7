#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-monitor's OTLP push (--otlp-endpoint) against a collector of our own:
a python http.server on 127.0.0.1 receives the POSTs to /v1/metrics; their
JSON is checked (structure, hw.* names and units, attributes, values against
the fake NVML's script); a collector answering 500 or hanging past the
request timeout neither slows /metrics nor stops sampling (exports counted as
errors); a collector that starts late receives data once it is up.

usage: test_monitor_otlp.py MONITOR FAKE_LIB SCRIPT LOG_ROOT"""
import http.server
import json
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from monitor_daemon import Daemon, fresh, wait_for  # noqa: E402

MONITOR, FAKE_LIB, SCRIPT, LOG_ROOT = sys.argv[1:5]
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


class Collector:
    """An OTLP/HTTP collector: mode "ok" (200), "error" (500) or "hang"."""

    def __init__(self, mode="ok", port=0):
        self.mode, self.bodies, self.paths = mode, [], []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.paths.append((self.path, self.headers.get("Content-Type")))
                if outer.mode == "hang":
                    time.sleep(5)
                    return
                outer.bodies.append(json.loads(body))
                self.send_response(200 if outer.mode == "ok" else 500)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def attrs(lst):
    return {a["key"]: a["value"].get("stringValue", a["value"].get("intValue")) for a in lst}


def script_devices():
    with open(SCRIPT) as f:
        gpus = json.load(f)["gpus"]
    whole = {g["uuid"]: g for g in gpus if not g.get("mig_mode")}
    mig = {m["uuid"] for g in gpus if g.get("mig_mode") for m in g["mig"]}
    return whole, mig


def metrics_counter(d, result):
    _, _, text = d.get("/metrics")
    for line in text.splitlines():
        if line.startswith('gpufl_monitor_otlp_exports_total{') and f'result="{result}"' in line:
            return float(line.split()[-1])
    return None


def scrape_ms(d):
    t = time.monotonic()
    status, _, _ = d.get("/metrics", timeout=5)
    return status, (time.monotonic() - t) * 1000


def enriched_script():
    """The 8-GPU script plus a process list (this test's own process) with utilization on GPU 0,
    GPM and PCIe counters on GPU 0 and two XID 79 on GPU 1: every metric family has points."""
    with open(SCRIPT) as f:
        d = json.load(f)
    g0 = d["gpus"][0]
    g0["samples"]["procs"] = [[[os.getpid(), 268435456]]]
    g0["samples"]["proc_util"] = [[[os.getpid(), 40, 8], [os.getpid(), 50, 12]]]
    g0["gpm"] = True
    g0["samples"]["gpm"] = {"sm_util": [50.0], "sm_occupancy": [25.0], "tensor": [40.0],
                            "dram_bw": [30.0], "pcie_tx_mib": [100.0], "pcie_rx_mib": [50.0]}
    d["gpus"][1]["xids"] = [[1, 79], [2, 79]]
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(d, f)
    f.close()
    return f.name, d


def test_push():
    c = Collector("ok")
    script_path, script = enriched_script()
    d = Daemon(MONITOR, FAKE_LIB, ["--interval-ms", "200", "--listen", "127.0.0.1:0",
                                   "--log-path", fresh(LOG_ROOT, "push"),
                                   "--otlp-endpoint", "http://127.0.0.1:%d/" % c.port], script_path)
    try:
        check(d.port is not None, "push: the daemon started: " + d.stderr())
        check("not built" not in d.stderr(), "push: no 'not built yet' line")
        # GPM ratios need two snapshots a second apart, and process lists come once a second:
        # wait for an export that has the process series.
        def full(b):
            names = {m["name"] for sm in b["resourceMetrics"][0]["scopeMetrics"]
                     for m in sm["metrics"]}
            return {"gpufl.process.gpu.sm.utilization", "gpufl.gpu.sm.active"} <= names
        check(wait_for(lambda: len(c.bodies) >= 6 and full(c.bodies[-1]), 20),
              "push: six exports arrived, the last with process and GPM series")
        check(all(p == ("/v1/metrics", "application/json") for p in c.paths),
              "push: POST /v1/metrics as application/json: %r" % c.paths[:2])
        body = c.bodies[-1]
        rm = body["resourceMetrics"]
        check(len(rm) == 1, "push: one resourceMetrics")
        res = attrs(rm[0]["resource"]["attributes"])
        check(res.get("service.name") == "gpufl-monitor", "push: service.name: %r" % res)
        check(res.get("host.name") == socket.gethostname(), "push: host.name: %r" % res)
        metrics = {m["name"]: m for sm in rm[0]["scopeMetrics"] for m in sm["metrics"]}
        # name: (unit, kind, monotonic); every device metric carries hw.id/hw.type/hw.vendor.
        want = {"hw.gpu.utilization": ("1", "gauge", None),
                "hw.gpu.memory.usage": ("By", "sum", False),
                "hw.gpu.memory.limit": ("By", "sum", False),
                "hw.gpu.memory.utilization": ("1", "gauge", None),
                "hw.power": ("W", "gauge", None), "hw.energy": ("J", "sum", True),
                "hw.temperature": ("Cel", "gauge", None), "hw.gpu.io": ("By", "sum", True),
                "hw.errors": ("{error}", "sum", True),
                "gpufl.gpu.clock.sm": ("Hz", "gauge", None),
                "gpufl.gpu.clock.memory": ("Hz", "gauge", None),
                "gpufl.gpu.sm.active": ("1", "gauge", None),
                "gpufl.gpu.sm.occupancy": ("1", "gauge", None),
                "gpufl.gpu.tensor.active": ("1", "gauge", None),
                "gpufl.gpu.dram.active": ("1", "gauge", None),
                "gpufl.gpu.throttle.time": ("s", "sum", True)}
        process_want = {"gpufl.process.gpu.memory.usage": ("By", "sum", False, 268435456),
                        "gpufl.process.gpu.sm.utilization": ("1", "gauge", None, 0.45),
                        "gpufl.process.gpu.memory.utilization": ("1", "gauge", None, 0.10)}
        host_want = {"system.cpu.utilization": ("1", "gauge", None),
                     "system.memory.usage": ("By", "sum", False),
                     "system.memory.limit": ("By", "sum", False)}
        check(set(metrics) == set(want) | set(process_want) | set(host_want),
              "push: metric names %s" % sorted(metrics))
        whole, mig = script_devices()
        whole = {g["uuid"]: g for g in script["gpus"] if g["uuid"] in whole}
        scale = {"hw.gpu.utilization": ("util_gpu", 0.01), "hw.power": ("power_mw", 0.001),
                 "hw.temperature": ("temp_gpu", 1), "hw.gpu.memory.usage": ("mem_used", 1),
                 "gpufl.gpu.clock.sm": ("clock_sm", 1e6), "gpufl.gpu.clock.memory": ("clock_mem", 1e6)}
        for name, (unit, kind, monotonic, *_) in {**want, **process_want, **host_want}.items():
            m = metrics.get(name)
            if not m:
                continue
            check(m["unit"] == unit, f"{name}: unit {m['unit']!r}, want {unit!r}")
            check(kind in m, f"{name}: a {kind}")
            data = m.get(kind, {})
            if kind == "sum":
                check(data.get("aggregationTemporality") == 2, f"{name}: cumulative")
                check(data.get("isMonotonic") == monotonic, f"{name}: isMonotonic")
            for p in data.get("dataPoints", []):
                check(isinstance(p["timeUnixNano"], str) and
                      abs(int(p["timeUnixNano"]) / 1e9 - time.time()) < 60,
                      f"{name}: timeUnixNano a recent string: {p['timeUnixNano']!r}")
        for name in want:
            seen = set()
            for p in metrics.get(name, {}).get(want[name][1], {}).get("dataPoints", []):
                a = attrs(p["attributes"])
                uuid = a.get("hw.id")
                seen.add(uuid)
                check(a.get("hw.type") == "gpu" and a.get("hw.vendor") == "NVIDIA",
                      f"{name} {uuid}: hw.type/hw.vendor {a}")
                v = p["asDouble"]
                g = whole.get(uuid)
                if g is None:
                    continue
                check(a.get("hw.name") == g["name"], f"{name} {uuid}: hw.name {a.get('hw.name')}")
                if name == "hw.gpu.utilization":
                    check(a.get("hw.gpu.task") == "general", f"{name}: hw.gpu.task")
                if name in scale:
                    key, k = scale[name]
                    allowed = [x * k for x in g["samples"][key]]
                    check(any(abs(v - x) < 1e-6 * max(1, abs(x)) for x in allowed),
                          f"{name} {uuid}: {v} not among {allowed}")
                elif name == "hw.gpu.memory.limit":
                    check(v == g["memory_total"], f"{name} {uuid}: {v}")
                elif name == "hw.gpu.memory.utilization":
                    allowed = [x / g["memory_total"] for x in g["samples"]["mem_used"]]
                    check(any(abs(v - x) < 1e-9 for x in allowed), f"{name} {uuid}: {v}")
                elif name == "hw.energy":
                    check(0 <= v <= 2000, f"{name} {uuid}: joules since start {v}")
                elif name == "hw.gpu.io":
                    check(a.get("network.io.direction") in ("transmit", "receive") and
                          a.get("gpufl.link") == "pcie" and v >= 0, f"{name} {uuid}: {a} {v}")
                elif name == "hw.errors":
                    check(uuid == script["gpus"][1]["uuid"] and a.get("error.type") == "xid_79"
                          and v == 2, f"{name}: two XID 79 on GPU 1: {uuid} {a} {v}")
                elif name == "gpufl.gpu.sm.active":
                    check(abs(v - 0.5) < 1e-9, f"{name} {uuid}: {v}")
                elif name == "gpufl.gpu.throttle.time":
                    check(a.get("gpufl.throttle.reason") and v > 0, f"{name} {uuid}: {a} {v}")
            if name in ("hw.gpu.utilization", "hw.power", "hw.energy", "gpufl.gpu.clock.sm"):
                check(set(whole) <= seen, f"{name}: every whole GPU's uuid: {sorted(seen)}")
        check(mig <= {attrs(p["attributes"]).get("hw.id") for p in
                      metrics["hw.gpu.memory.usage"]["sum"]["dataPoints"]},
              "push: the MIG instances' memory by their uuid")
        for name, (unit, kind, monotonic, value) in process_want.items():
            points = metrics.get(name, {}).get(kind, {}).get("dataPoints", [])
            check(len(points) == 1, f"{name}: one process: {points}")
            for p in points:
                a = {x["key"]: x["value"] for x in p["attributes"]}
                check(a.get("process.pid") == {"intValue": str(os.getpid())} or
                      a.get("process.pid") == {"intValue": os.getpid()},
                      f"{name}: process.pid {a.get('process.pid')}")
                check(a.get("hw.id", {}).get("stringValue") == script["gpus"][0]["uuid"],
                      f"{name}: on GPU 0: {a.get('hw.id')}")
                check(a.get("process.executable.name", {}).get("stringValue", "").startswith("python")
                      and a.get("process.owner"), f"{name}: who: {a}")
                check(abs(p["asDouble"] - value) < 1e-9, f"{name}: {p['asDouble']}, want {value}")
        for name in host_want:
            points = metrics.get(name, {}).get(host_want[name][1], {}).get("dataPoints", [])
            check(len(points) == 1, f"{name}: one point: {points}")
            for p in points:
                v = p["asDouble"]
                if name == "system.cpu.utilization":
                    check(0 <= v <= 1, f"{name}: {v}")
                else:
                    check(v > 0, f"{name}: {v}")
                if name == "system.memory.usage":
                    check(attrs(p["attributes"]).get("system.memory.state") == "used",
                          f"{name}: system.memory.state")
        check(wait_for(lambda: (metrics_counter(d, "ok") or 0) >= 4, 5),
              "push: gpufl_monitor_otlp_exports_total{result=ok} counts them")
        check(metrics_counter(d, "error") == 0, "push: no errors counted")
    finally:
        check(d.stop() == 0, "push: clean exit")
        c.close()
        os.unlink(script_path)


def test_faulty(mode):
    c = Collector(mode)
    d = Daemon(MONITOR, FAKE_LIB, ["--interval-ms", "200", "--listen", "127.0.0.1:0",
                                   "--log-path", fresh(LOG_ROOT, mode),
                                   "--otlp-endpoint", "http://127.0.0.1:%d" % c.port], SCRIPT)
    try:
        check(d.port is not None, f"{mode}: the daemon started: " + d.stderr())
        # the hang's requests time out after 0.5 s: errors come at most that often
        check(wait_for(lambda: (metrics_counter(d, "error") or 0) >= 3, 20),
              f"{mode}: exports counted as errors")
        _, _, text = d.get("/metrics")
        samples0 = float(next(x for x in text.splitlines()
                              if x.startswith("gpufl_monitor_samples_total")).split()[-1])
        times = [scrape_ms(d) for _ in range(20)]
        check(all(s == 200 for s, _ in times), f"{mode}: scrapes answered")
        check(max(ms for _, ms in times) < 250, f"{mode}: scrapes fast: {times}")
        time.sleep(1.0)
        _, _, text = d.get("/metrics")
        samples1 = float(next(x for x in text.splitlines()
                              if x.startswith("gpufl_monitor_samples_total")).split()[-1])
        check(samples1 >= samples0 + 3, f"{mode}: sampling goes on: {samples0} -> {samples1}")
        check(metrics_counter(d, "ok") == 0, f"{mode}: nothing counted ok")
        if mode == "hang":
            _, _, text = d.get("/metrics")
            dropped = [x for x in text.splitlines() if x.startswith("gpufl_monitor_otlp_dropped")]
            check(dropped and float(dropped[0].split()[-1]) > 0,
                  f"hang: snapshots replaced while a request hangs are counted: {dropped}")
        t = time.monotonic()
        check(d.stop() == 0, f"{mode}: clean exit")
        check(time.monotonic() - t < 5, f"{mode}: stops within a request's timeout")
    finally:
        if d.p.poll() is None:
            d.stop()
        c.close()


def test_late():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there yet: connections are refused
    d = Daemon(MONITOR, FAKE_LIB, ["--interval-ms", "200", "--listen", "127.0.0.1:0",
                                   "--log-path", fresh(LOG_ROOT, "late"),
                                   "--otlp-endpoint", "http://127.0.0.1:%d" % port], SCRIPT)
    c = None
    try:
        check(wait_for(lambda: (metrics_counter(d, "error") or 0) >= 2, 20),
              "late: refused exports counted as errors")
        c = Collector("ok", port)
        check(wait_for(lambda: len(c.bodies) >= 2, 20), "late: data once the collector is up")
        check(wait_for(lambda: (metrics_counter(d, "ok") or 0) >= 2, 5), "late: counted ok")
    finally:
        d.stop()
        if c:
            c.close()


def test_bad_url():
    import subprocess
    for url in ["ftp://x", "http://", "not a url"]:
        p = subprocess.run([MONITOR, "--otlp-endpoint", url], capture_output=True, text=True)
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
              f"bad URL {url!r}: exit 2 with one line: {p.returncode} {p.stderr!r}")


if __name__ == "__main__":
    test_bad_url()
    test_push()
    test_faulty("error")
    test_faulty("hang")
    test_late()
    print("FAILED: %d" % len(FAILS) if FAILS else "ok")
    sys.exit(1 if FAILS else 0)
