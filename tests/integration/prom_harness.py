# SPDX-License-Identifier: Apache-2.0
"""A real Prometheus server for tests: started on 127.0.0.1 with its own config and storage,
scraping the targets a test names every second, asked through its HTTP API, and stopped with the
test. Python's standard library only; skips (exit 77, ctest's SKIP_RETURN_CODE) where no
`prometheus` is installed, unless GPUFL_REQUIRE_PROMETHEUS=1 (CI) makes that a failure.

Typical use (gpufl-monitor's test):

    import prom_harness as ph
    ph.require_prometheus()                     # exit 77 with a message if absent
    port = ph.free_port()
    ... start the program under test on 127.0.0.1:port ...
    with ph.Prometheus([f"127.0.0.1:{port}"]) as prom:
        rows = prom.wait_for_series('gpufl_gpu_power_watts', min_count=8)
        assert rows[0]["metric"]["uuid"] ...
    ph.promtool_check_metrics(exposition_text)  # (ok, promtool's output)

Never uses a Prometheus service the system may run: every server here is started by the test,
on a free loopback port, and dies with the process that started it.
"""

import atexit
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from service_process import ServiceProcess

SKIP_RETURN_CODE = 77

# Loopback requests must not go through a proxy the environment names.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class PrometheusError(RuntimeError):
    """The server did not start, or its API answered with an error."""


def _find(env, name):
    path = os.environ.get(env)
    if path:
        return path if os.access(path, os.X_OK) else None
    return shutil.which(name)


def find_prometheus():
    """Path of the `prometheus` server: $GPUFL_PROMETHEUS, else PATH; None if absent."""
    return _find("GPUFL_PROMETHEUS", "prometheus")


def find_promtool():
    """Path of `promtool`: $GPUFL_PROMTOOL, else PATH; None if absent."""
    return _find("GPUFL_PROMTOOL", "promtool")


def require_prometheus():
    """Returns the server's path. Without one, exits the test: 77 (skipped) with a line that says
    how to install it, or 1 when GPUFL_REQUIRE_PROMETHEUS=1 (CI installs it, so a skip there would
    hide the test)."""
    path = find_prometheus()
    if path and find_promtool():
        return path
    msg = ("prometheus/promtool not found (Debian: apt-get install --no-install-recommends "
           "prometheus, or scripts/deps.sh)")
    if os.environ.get("GPUFL_REQUIRE_PROMETHEUS") == "1":
        print(f"FAIL: {msg}, and GPUFL_REQUIRE_PROMETHEUS=1", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {msg}")
    sys.exit(SKIP_RETURN_CODE)


def free_port():
    """A TCP port free on 127.0.0.1 now (the kernel's pick; another process may still take it
    before the caller binds it, which Prometheus.start() retries)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout_s=5.0, headers=None):
    """(status, headers, body bytes) of a GET on a loopback URL; HTTP errors are answers too."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with _OPENER.open(req, timeout=timeout_s) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def promtool_check_metrics(text):
    """Runs `promtool check metrics` on an exposition (str or bytes). Returns (ok, output): ok is
    True when promtool exits 0 (it lints as well as parses: HELP, counter suffixes, units)."""
    tool = find_promtool()
    if not tool:
        raise PrometheusError("promtool not found")
    data = text.encode() if isinstance(text, str) else text
    r = subprocess.run([tool, "check", "metrics"], input=data, capture_output=True, timeout=60)
    return r.returncode == 0, (r.stdout + r.stderr).decode(errors="replace")


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent():
    # In the child before exec: SIGTERM when the thread that started the server ends, even by
    # SIGKILL (a ctest timeout), so no server outlives its test. PR_SET_PDEATHSIG is 1. The
    # function is looked up before the fork: the child only calls it.
    _PRCTL(1, int(signal.SIGTERM), 0, 0, 0)


def _yaml_str(s):
    # A JSON string is a valid YAML flow scalar: quoting without a YAML library.
    return json.dumps(str(s))


class Prometheus(ServiceProcess):
    """One Prometheus server scraping `targets` ("host:port" strings) every `scrape_interval_s`
    under the job `job`, at `metrics_path`, with `labels` added to every target. Use it as a
    context manager (stopped on leaving, also on an exception), or call start() and stop().

    `addresses` is the list of targets. Attributes once started: `port`, `url`
    (http://127.0.0.1:port), `workdir` (config, storage and the server's log, removed by stop()
    unless GPUFL_KEEP_PROMETHEUS=1)."""

    STOP_SIGNAL = signal.SIGTERM  # Prometheus closes its storage and exits
    STOP_TIMEOUT_S = 15
    KEEP_VARIABLE = "GPUFL_KEEP_PROMETHEUS"

    def __init__(self, targets, job="gpufl", scrape_interval_s=1.0, metrics_path="/metrics",
                 labels=None, binary=None, ready_timeout_s=60.0):
        if not targets:
            raise ValueError("Prometheus needs at least one target")
        for t in targets:
            host, sep, port = t.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"target {t!r} is not host:port")
        self.addresses = list(targets)
        self.job = job
        self.scrape_interval_s = scrape_interval_s
        self.metrics_path = metrics_path
        self.labels = dict(labels or {})
        self.binary = binary or find_prometheus()
        self.ready_timeout_s = ready_timeout_s
        self.proc = None
        self.port = None
        self.url = None
        self.workdir = None
        self._log = None

    # -- life cycle --------------------------------------------------------------------------

    def config_text(self):
        """The prometheus.yml the server runs with."""
        interval = f"{int(self.scrape_interval_s * 1000)}ms"
        lines = [
            "global:",
            f"  scrape_interval: {interval}",
            f"  scrape_timeout: {interval}",
            f"  evaluation_interval: {interval}",
            "scrape_configs:",
            f"  - job_name: {_yaml_str(self.job)}",
            f"    metrics_path: {_yaml_str(self.metrics_path)}",
            "    static_configs:",
            "      - targets: [" + ", ".join(_yaml_str(t) for t in self.addresses) + "]",
        ]
        if self.labels:
            lines.append("        labels:")
            lines += [f"          {_yaml_str(k)}: {_yaml_str(v)}" for k, v in self.labels.items()]
        return "\n".join(lines) + "\n"

    def start(self):
        """Starts the server and waits until /-/ready answers 200. Raises PrometheusError with the
        server's log when it exits or is not ready within ready_timeout_s."""
        if not self.binary:
            raise PrometheusError("prometheus not found (see require_prometheus())")
        self.workdir = tempfile.mkdtemp(prefix="gpufl-prom-")
        config = os.path.join(self.workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(self.config_text())
        atexit.register(self.stop)
        for attempt in range(3):  # the free port may be taken between free_port() and bind
            try:
                self._start_once(config, attempt)
                return self
            except PrometheusError as e:
                self._kill()
                if "address already in use" not in str(e) or attempt == 2:
                    self.stop()
                    raise
        return self

    def _start_once(self, config, attempt):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log_path = os.path.join(self.workdir, f"prometheus-{attempt}.log")
        self._log = open(log_path, "w+b")
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(self.workdir, f'data-{attempt}')}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent)
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PrometheusError(
                    f"prometheus exited with {self.proc.returncode} while starting:\n"
                    + self.server_log())
            try:
                status, _, _ = http_get(self.url + "/-/ready", timeout_s=1.0)
                if status == 200:
                    return
            except OSError:
                pass  # not listening yet
            time.sleep(0.1)
        raise PrometheusError(f"prometheus not ready within {self.ready_timeout_s:g} s at "
                              f"{self.url}:\n" + self.server_log())

    def server_log(self, tail_chars=4000):
        """The last tail_chars of the server's own output (its errors and warnings)."""
        if not self._log:
            return ""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-tail_chars:]

    # -- HTTP API ----------------------------------------------------------------------------

    def api(self, path, params=None):
        """GET /api/v1/<path> with params (a dict, or a list of pairs for repeated keys); returns
        the answer's "data". Raises PrometheusError on an error answer."""
        query = urllib.parse.urlencode(params or {}, doseq=True)
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        status, _, body = http_get(url, timeout_s=10.0)
        try:
            answer = json.loads(body)
        except ValueError:
            raise PrometheusError(f"GET {url}: HTTP {status}, not JSON: {body[:200]!r}") from None
        if status != 200 or answer.get("status") != "success":
            raise PrometheusError(f"GET {url}: HTTP {status}: {answer.get('errorType')}: "
                                  f"{answer.get('error')}")
        return answer["data"]

    def query(self, expr):
        """An instant query: the list of {"metric": labels, "value": [time, "text"]} of a vector
        result (for a scalar or string result, its [time, "text"] pair)."""
        data = self.api("query", {"query": expr})
        return data["result"]

    def series(self, match):
        """/api/v1/series: the label sets (dicts, with __name__) of series that match a selector
        (str) or any of several (list)."""
        matches = [match] if isinstance(match, str) else list(match)
        return self.api("series", [("match[]", m) for m in matches])

    def targets(self):
        """The active targets of /api/v1/targets: dicts with "labels", "scrapeUrl", "health"
        ("up", "down", "unknown"), "lastError" and "lastScrape"."""
        return self.api("targets", {"state": "active"})["activeTargets"]

    def target(self, address):
        """The active target whose address (host:port) is `address`, or None."""
        for t in self.targets():
            if t["labels"].get("instance") == address or t["scrapeUrl"].split("/")[2] == address:
                return t
        return None

    def describe_targets(self):
        """One line a target: address, health, last scrape and its error, for failure messages."""
        try:
            ts = self.targets()
        except (PrometheusError, OSError) as e:
            return f"  (targets unavailable: {e})"
        return "\n".join(
            f"  {t['scrapeUrl']}: health={t['health']} lastScrape={t.get('lastScrape')} "
            f"lastError={t.get('lastError') or '-'}" for t in ts)

    def wait_for_scrapes(self, timeout_s=30.0):
        """Waits until every target has been scraped at least once (health no longer "unknown");
        returns the targets. Raises AssertionError with their state on timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            ts = self.targets()
            if len(ts) == len(self.addresses) and all(t["health"] != "unknown" for t in ts):
                return ts
            if time.monotonic() >= deadline:
                raise AssertionError(f"not every target scraped within {timeout_s:g} s:\n"
                                     + self.describe_targets())
            time.sleep(0.2)

    def wait_for_series(self, expr, timeout_s=30.0, min_count=1):
        """Waits until the instant query `expr` returns at least min_count series; returns them.
        On timeout raises AssertionError naming the query, what it returned, and each target's
        health and last scrape error (a malformed exposition shows up there)."""
        deadline = time.monotonic() + timeout_s
        while True:
            rows = self.query(expr)
            if isinstance(rows, list) and len(rows) >= min_count:
                return rows
            if time.monotonic() >= deadline:
                got = len(rows) if isinstance(rows, list) else rows
                raise AssertionError(
                    f"query {expr!r} returned {got} series, wanted at least {min_count}, "
                    f"after {timeout_s:g} s; the targets:\n" + self.describe_targets())
            time.sleep(0.2)
