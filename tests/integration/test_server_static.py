# SPDX-License-Identifier: Apache-2.0
"""gpufl-server's dashboard files (routes_static.c) on loopback: a web root of made-up built
files served at / with their content types and caching, app routes answered with index.html,
path traversal (dot segments, encoded or not, and a symlink out of the root) refused without
leaking the file, the API routes unchanged, and a missing web root answered with a 404 page that
says the dashboard is not installed.

usage: python3 -m pytest tests/integration/test_server_static.py, with GPUFL_SERVER set."""
import http.client
import os
import subprocess

import pytest

from server_harness import SERVER, Server, new_key, new_workspace

INDEX = b"<!doctype html><title>gpufl</title><script type=module src=/assets/app-1a2b3c.js>"
ASSET = b"console.log('app')\n"
SECRET = b"not for the web\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("static")
    root = d / "root"
    (root / "assets").mkdir(parents=True)
    (root / "index.html").write_bytes(INDEX)
    (root / "assets" / "app-1a2b3c.js").write_bytes(ASSET)
    (root / "assets" / "app-1a2b3c.css").write_bytes(b"body{}\n")
    (root / "favicon.svg").write_bytes(b"<svg xmlns='http://www.w3.org/2000/svg'/>\n")
    (d / "secret.txt").write_bytes(SECRET)
    os.symlink(d / "secret.txt", root / "leak.txt")  # a symlink out of the root
    os.symlink(d, root / "up")                       # a directory symlink out of the root
    url = "sqlite:" + str(d / "t.db")
    new_workspace(url, "alpha")
    key = new_key(url, "alpha", "read")
    srv = Server(url, ["--web-root", str(root)], log_dir=str(d))
    yield {"srv": srv, "key": key, "dir": d}
    assert srv.stop() == 0


def raw_get(srv, path, method="GET"):
    """GET with the path sent byte for byte (no client-side normalisation)."""
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    try:
        c.putrequest(method, path, skip_accept_encoding=True)
        c.endheaders()
        r = c.getresponse()
        return r.status, r.read(), {k.lower(): v for k, v in r.getheaders()}
    finally:
        c.close()


def test_index_and_assets_with_types_and_caching(site):
    st, body, h = raw_get(site["srv"], "/")
    assert st == 200 and body == INDEX
    assert h["content-type"] == "text/html; charset=utf-8"
    assert h["cache-control"] == "no-cache"
    assert "default-src 'self'" in h["content-security-policy"]
    st, body, h = raw_get(site["srv"], "/index.html")
    assert st == 200 and body == INDEX and h["cache-control"] == "no-cache"
    st, body, h = raw_get(site["srv"], "/assets/app-1a2b3c.js")
    assert st == 200 and body == ASSET
    assert h["content-type"] == "text/javascript; charset=utf-8"
    assert h["cache-control"] == "public, max-age=31536000, immutable"
    assert h["x-content-type-options"] == "nosniff"
    st, _, h = raw_get(site["srv"], "/assets/app-1a2b3c.css")
    assert st == 200 and h["content-type"] == "text/css; charset=utf-8"
    st, _, h = raw_get(site["srv"], "/favicon.svg")
    assert st == 200 and h["content-type"] == "image/svg+xml" and h["cache-control"] == "no-cache"
    st, body, h = raw_get(site["srv"], "/assets/app-1a2b3c.js", "HEAD")
    assert st == 200 and body == b"" and h["content-length"] == str(len(ASSET))


def test_app_routes_fall_back_to_index(site):
    for path in ("/sessions", "/sessions/20261123T120000.000Z-7070-c3d4", "/login", "/x/y/z/"):
        st, body, h = raw_get(site["srv"], path)
        assert (st, body) == (200, INDEX), path
        assert h["cache-control"] == "no-cache"
    # A missing file (a stale hashed asset, a name with an extension) stays 404, never HTML.
    for path in ("/assets/app-000000.js", "/missing.png", "/assets/sessions"):
        st, body, h = raw_get(site["srv"], path)
        assert st == 404 and b"<!doctype" not in body, path


@pytest.mark.parametrize("path", [
    "/../secret.txt", "/assets/../../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt",
    "/assets/%2e%2e/%2e%2e/secret.txt", "/./index.html", "/..%2fsecret.txt",
    "/assets/..\\..\\secret.txt", "/assets%5c..%5c..%5csecret.txt"])
def test_traversal_is_refused(site, path):
    st, body, _ = raw_get(site["srv"], path)
    assert st in (400, 404), path
    assert SECRET not in body


def test_symlinks_out_of_the_root_are_not_followed(site):
    for path in ("/leak.txt", "/up/secret.txt"):
        st, body, _ = raw_get(site["srv"], path)
        assert st == 404 and SECRET not in body, path


def test_api_routes_unaffected(site):
    srv, key = site["srv"], site["key"]
    st, doc, h = srv.request("GET", "/api/v1/sessions", headers={"Authorization": "Bearer " + key})
    assert st == 200 and doc["sessions"] == [] and h["Cache-Control"] == "no-store"
    st, doc, _ = srv.request("GET", "/api/v1/sessions")
    assert st == 401
    # Unknown API paths stay JSON 404s, not the app's page.
    for path in ("/api/v1/nothing", "/api", "/api/"):
        st, doc, h = srv.request("GET", path)
        assert st == 404 and doc == {"error": "no such route"}, path
    st, doc, _ = srv.request("GET", "/healthz")
    assert st == 200 and doc == {"status": "ok"}
    # Only GET and HEAD reach the files.
    st, doc, _ = srv.request("POST", "/index.html", body=b"x")
    assert st == 404 and doc == {"error": "no such route"}


def test_missing_web_root_says_not_installed(tmp_path):
    url = "sqlite:" + str(tmp_path / "t.db")
    missing = tmp_path / "no-such-dir"
    srv = Server(url, ["--web-root", str(missing)], log_dir=str(tmp_path))
    try:
        for path in ("/", "/sessions", "/assets/app.js"):
            st, body, h = raw_get(srv, path)
            assert st == 404, path
            assert h["content-type"] == "text/html; charset=utf-8"
            assert b"dashboard is not installed" in body and str(missing).encode() in body
        st, doc, _ = srv.request("GET", "/healthz")
        assert st == 200
    finally:
        assert srv.stop() == 0
    # A root without index.html is not a dashboard either.
    empty = tmp_path / "empty"
    empty.mkdir()
    srv = Server(url, ["--web-root", str(empty)], log_dir=str(tmp_path))
    try:
        st, body, _ = raw_get(srv, "/")
        assert st == 404 and b"not installed" in body
    finally:
        assert srv.stop() == 0


def test_default_web_root_is_the_install_directory(tmp_path):
    r = subprocess.run([SERVER, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    assert "--web-root DIR" in r.stdout and "/share/gpufl/web" in r.stdout
