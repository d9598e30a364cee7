#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The Prometheus test harness (prom_harness.py) against a fixed exposition served by Python's
# http.server on loopback: its series and labels arrive through the query and series APIs, a
# malformed exposition shows up as the target's scrape error (and in wait_for_series's failure),
# promtool passes the fixed one and rejects the broken one, and the server is gone after stop,
# also when the test body raises. Exit 77 (skipped) without prometheus.

import http.server
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prom_harness as ph  # noqa: E402

# Base units, HELP and TYPE, counters ending in _total: what promtool's lint asks for. A label
# value with a quote, a backslash and a space checks the escaping end to end.
EXPOSITION = r"""# HELP harness_gpu_power_watts Power draw of the GPU.
# TYPE harness_gpu_power_watts gauge
harness_gpu_power_watts{gpu="0",uuid="GPU-aaaa",model="Fake GPU \"X\" 80GB"} 312.5
harness_gpu_power_watts{gpu="1",uuid="GPU-bbbb",model="Fake GPU \"X\" 80GB"} 95
# HELP harness_gpu_energy_joules_total Energy used by the GPU since the daemon started.
# TYPE harness_gpu_energy_joules_total counter
harness_gpu_energy_joules_total{gpu="0",uuid="GPU-aaaa",path="C:\\x"} 12345
"""

# A label value left open: the text parser rejects the whole scrape.
MALFORMED = 'harness_broken_ratio{gpu="0} 1\n'


def serve(body):
    """An HTTP server on a free loopback port answering every GET with `body` as the text format;
    returns (server, "127.0.0.1:port")."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass  # one line a scrape would drown the test's output

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_address[1]}"


def by_gpu(rows):
    return {r["metric"]["gpu"]: r for r in rows}


def check_series(prom, good):
    rows = prom.wait_for_series("harness_gpu_power_watts", min_count=2)
    assert len(rows) == 2, rows
    g = by_gpu(rows)
    m0 = g["0"]["metric"]
    assert m0["uuid"] == "GPU-aaaa", m0
    assert m0["model"] == 'Fake GPU "X" 80GB', m0
    assert m0["job"] == "harness" and m0["instance"] == good, m0
    assert m0["site"] == "test", m0  # the labels= of the harness, on every target
    assert float(g["0"]["value"][1]) == 312.5 and float(g["1"]["value"][1]) == 95.0, rows

    energy = prom.wait_for_series("harness_gpu_energy_joules_total")
    assert energy[0]["metric"]["path"] == "C:\\x", energy
    assert float(energy[0]["value"][1]) == 12345.0, energy

    # The series API gives the same label sets, with the metric's name.
    names = {(s["__name__"], s.get("gpu")) for s in prom.series(
        ['{__name__=~"harness_.*"}'])}
    assert names == {("harness_gpu_power_watts", "0"), ("harness_gpu_power_watts", "1"),
                     ("harness_gpu_energy_joules_total", "0")}, names


def check_scrape_error(prom, good, bad):
    prom.wait_for_scrapes()
    t_good, t_bad = prom.target(good), prom.target(bad)
    assert t_good["health"] == "up" and not t_good["lastError"], t_good
    assert t_bad["health"] == "down", t_bad
    # Prometheus 2.42 words it "... unexpected end of label value ..."; any parse error will do.
    assert "label value" in t_bad["lastError"] or "parsing" in t_bad["lastError"], t_bad
    up = {r["metric"]["instance"]: float(r["value"][1]) for r in prom.wait_for_series(
        'up{job="harness"}', min_count=2)}
    assert up == {good: 1.0, bad: 0.0}, up
    assert not prom.query("harness_broken_ratio"), "a malformed scrape stored a series"

    # wait_for_series's failure names the query and the broken target's error.
    try:
        prom.wait_for_series("harness_broken_ratio", timeout_s=2)
    except AssertionError as e:
        msg = str(e)
        assert "harness_broken_ratio" in msg and bad in msg and t_bad["lastError"] in msg, msg
    else:
        raise AssertionError("wait_for_series did not fail on a series that never arrives")


def check_promtool():
    ok, out = ph.promtool_check_metrics(EXPOSITION)
    assert ok, f"promtool check metrics on the fixed exposition:\n{out}"
    ok, out = ph.promtool_check_metrics(MALFORMED)
    assert not ok and out.strip(), f"promtool accepted a malformed exposition: {out!r}"


def check_bad_arguments():
    for targets in ([], ["127.0.0.1"], ["localhost:http"]):
        try:
            ph.Prometheus(targets)
        except ValueError:
            continue
        raise AssertionError(f"Prometheus({targets!r}) accepted")


def check_stop_on_failure(good):
    """A test body that raises still stops the server and removes its directory."""
    prom = ph.Prometheus([good], job="harness")
    try:
        with prom:
            proc, workdir, url = prom.proc, prom.workdir, prom.url
            raise KeyError("test body failed")
    except KeyError:
        pass
    assert proc.poll() is not None, "prometheus still running after an exception"
    assert not os.path.exists(workdir), workdir
    try:
        ph.http_get(url + "/-/ready", timeout_s=1)
    except OSError:
        return
    raise AssertionError(f"{url} still answers after stop")


def main():
    ph.require_prometheus()
    good_server, good = serve(EXPOSITION)
    bad_server, bad = serve(MALFORMED)
    try:
        check_bad_arguments()
        check_promtool()
        with ph.Prometheus([good, bad], job="harness", labels={"site": "test"}) as prom:
            assert prom.url.startswith("http://127.0.0.1:"), prom.url
            check_series(prom, good)
            check_scrape_error(prom, good, bad)
        check_stop_on_failure(good)
    finally:
        good_server.shutdown()
        bad_server.shutdown()
    print("prom_harness: all checks passed")


if __name__ == "__main__":
    main()
