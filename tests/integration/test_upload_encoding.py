# SPDX-License-Identifier: Apache-2.0
"""`gpufl upload`'s Content-Encoding, against a small fake server written for this test that
records each window's encoding and decodes its body: zstd when the version answer lists it in
"encodings"; gzip for a server whose answer has none (older than zstd), for a version request
that fails, with GPUFL_UPLOAD_ENCODING=gzip, and when libzstd does not load. Either way the
decoded bodies are the session's lines. The real server's side is test_server_ingest.py.

usage: python3 -m pytest tests/integration/test_upload_encoding.py, with GPUFL_CLI naming the
binary (ctest sets it).
"""
import gzip
import http.server
import json
import os
import shutil
import subprocess
import threading

import pytest

CLI = os.environ.get("GPUFL_CLI", "build-dev/cmd/gpufl/gpufl")
HERE = os.path.dirname(os.path.abspath(__file__))
SESSION = os.path.join(HERE, "..", "fixtures", "sessions", "basic")


class FakeServer:
    """Answers the upload's routes; version as given (None: 404). Keeps (encoding, decoded
    body) of every window."""

    def __init__(self, version):
        self.windows = []
        self.version_asked = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status, doc):
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.endswith("/info/version"):
                    outer.version_asked += 1
                    if version is None:
                        return self.answer(404, {"error": "no such route"})
                    return self.answer(200, version)
                self.answer(200, {"windows": [], "next_after": None})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if not self.path.endswith("/events/stream"):
                    return self.answer(200, {})
                enc = self.headers.get("Content-Encoding")
                if enc == "zstd":
                    text = subprocess.run(["zstd", "-d", "-q", "-c"], input=body,
                                          stdout=subprocess.PIPE, check=True).stdout
                else:
                    text = gzip.decompress(body)
                outer.windows.append((enc, text))
                self.answer(200, {"window": "stored", "rows": 0})

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def session_lines():
    """The complete lines of the session's logs, sorted (windows arrive in any order)."""
    lines = []
    for name in ("device.log", "scope.log", "system.log"):
        with open(os.path.join(SESSION, name), "rb") as f:
            data = f.read()
        lines += data[:data.rfind(b"\n") + 1].splitlines()
    return sorted(lines)


def upload(tmp_path, server, env_extra=None):
    root = tmp_path / "logs"
    shutil.copytree(SESSION, root / "basic")
    key = tmp_path / "key"
    key.write_text("gpfl_testkey0123456789\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    env.update(env_extra or {})
    return subprocess.run([CLI, "upload", "--server", server.url, "--api-key-file", str(key),
                           "--all", str(root)], capture_output=True, text=True, timeout=60,
                          env=env)


CURRENT = {"supported": [1], "encodings": ["gzip", "identity", "zstd"], "server": "0.1.0"}
OLDER = {"supported": [1], "server": "0.1.0"}


@pytest.mark.parametrize("version,env_extra,encoding,asked", [
    (CURRENT, None, "zstd", 1),
    (OLDER, None, "gzip", 1),  # a server older than zstd
    (None, None, "gzip", 1),  # the version request fails (404)
    (CURRENT, {"GPUFL_UPLOAD_ENCODING": "gzip"}, "gzip", 0),  # forced: not even asked
    (CURRENT, {"GPUFL_UPLOAD_ENCODING": "auto"}, "zstd", 1),
    (CURRENT, {"GPUFL_ZSTD_LIBRARY": "/nonexistent/libzstd.so.1"}, "gzip", 0),  # no libzstd
], ids=["zstd", "older-server", "version-fails", "forced-gzip", "auto", "no-libzstd"])
def test_encoding_chosen(tmp_path, version, env_extra, encoding, asked):
    srv = FakeServer(version)
    try:
        r = upload(tmp_path, srv, env_extra)
    finally:
        srv.close()
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(srv.windows) == 3
    assert {enc for enc, _ in srv.windows} == {encoding}
    assert sorted(l for _, text in srv.windows for l in text.splitlines()) == session_lines()
    assert srv.version_asked == asked  # once per client, before its first window


def test_bad_encoding_setting_is_refused(tmp_path):
    srv = FakeServer(CURRENT)
    try:
        r = upload(tmp_path, srv, {"GPUFL_UPLOAD_ENCODING": "brotli"})
    finally:
        srv.close()
    assert r.returncode != 0
    assert "GPUFL_UPLOAD_ENCODING 'brotli': expected auto or gzip" in r.stderr
    assert srv.windows == []
