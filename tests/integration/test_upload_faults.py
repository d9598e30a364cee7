# SPDX-License-Identifier: Apache-2.0
"""`gpufl upload` through a fault-injecting proxy written for this test, to the real gpufl-server
on loopback, on SQLite and PostgreSQL. The proxy drops connections in the middle of a body,
answers 500, 429 and 503 itself, delays, and forwards a request but cuts the server's answer
short (the window is stored, the sender does not know: it sends again and the server says
duplicate). The fixture sessions and a generated session of 1 M kernel rows (GPUFL_FAULT_KERNELS)
must arrive with exact line counts, line digests and kernel checksums per session.

usage: python3 -m pytest tests/integration/test_upload_faults.py, with GPUFL_SERVER and
GPUFL_CLI naming the binaries (ctest sets them).
"""
import os
import json
import random
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import gen_session  # noqa: E402
import server_harness as sh  # noqa: E402

CLI = os.environ.get("GPUFL_CLI", "build-dev/cmd/gpufl/gpufl")
KERNELS = int(os.environ.get("GPUFL_FAULT_KERNELS", "1000000"))
SESSIONS = ("basic", "rotated", "gpu", "scoped", "timeline", "killed")
FAULTS = ("drop_mid_body", "500", "429", "503", "delay", "cut_answer")


def read_request(sock):
    """(head bytes, body bytes) of one HTTP request (Content-Length bodies: what curl sends)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
        if k.strip().lower() == b"expect" and b"100-continue" in v.lower():
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    while len(body) < length:
        chunk = sock.recv(min(1 << 20, length - len(body)))
        if not chunk:
            return None, None
        body += chunk
    return head, body


class Proxy:
    """One request per connection; a fault on about a third of them, from a seeded RNG."""

    def __init__(self, upstream_port, seed):
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.seen = {f: 0 for f in FAULTS}
        self.requests = 0
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                outer.serve(self.request, upstream_port)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def pick(self):
        """Every other request takes a fault not seen yet, until each was; then a third of them
        take one at random."""
        with self.lock:
            self.requests += 1
            unseen = [f for f in FAULTS if not self.seen[f]]
            if unseen and self.requests % 2 == 0:
                f = unseen[0]
            else:
                f = self.rng.choice(FAULTS) if self.rng.random() < 0.35 else None
            if f:
                self.seen[f] += 1
            return f

    def serve(self, client, upstream_port):
        fault = self.pick()
        if fault == "drop_mid_body":
            data = client.recv(4096)  # the head and the body's start, then the line goes dead
            if data:
                client.shutdown(socket.SHUT_RDWR)
            client.close()
            return
        head, body = read_request(client)
        if head is None:
            return
        if fault in ("500", "429", "503"):
            msg = b'{"error":"injected"}'
            client.sendall(b"HTTP/1.1 " + fault.encode() + b" Injected\r\nRetry-After: 0\r\n"
                           b"Content-Type: application/json\r\nConnection: close\r\n"
                           b"Content-Length: " + str(len(msg)).encode() + b"\r\n\r\n" + msg)
            client.close()
            return
        if fault == "delay":
            time.sleep(self.rng.uniform(0.2, 1.0))
        # Forward, one request per connection.
        lines = head.split(b"\r\n")
        lines = [ln for ln in lines if not ln.lower().startswith((b"connection:", b"expect:"))]
        up = socket.create_connection(("127.0.0.1", upstream_port), timeout=120)
        up.sendall(b"\r\n".join(lines) + b"\r\nConnection: close\r\n\r\n" + body)
        answer = b""
        while True:
            chunk = up.recv(65536)
            if not chunk:
                break
            answer += chunk
        up.close()
        if fault == "cut_answer":
            answer = answer[:len(answer) // 2]  # stored on the server; the sender never knows
        client.sendall(answer)
        client.close()

    def close(self):
        self.server.shutdown()


def windows_of(root):
    """(sid, channel, seq, window_id, text) of every sealed segment under root, whole lines."""
    out = []
    for d in sorted(os.listdir(root)):
        full = os.path.join(root, d)
        if not os.path.isdir(full):
            continue
        for name in sorted(os.listdir(full)):
            parts = name.split(".")
            if parts[0] not in ("device", "scope", "system") or parts[1] != "log":
                continue
            with open(os.path.join(full, name)) as f:
                text = f.read()
            text = text[:text.rfind("\n") + 1]
            last = text[:-1].rsplit("\n", 1)[-1]
            if not (last.startswith('{"type":"segment_end"') or
                    last.startswith('{"type":"session_end"')):
                continue
            sid = json.loads(text.split("\n", 1)[0])["session_id"]
            seq = int(parts[2]) if len(parts) > 2 else 0
            out.append((sid, parts[0], seq, "%s-%s-%d" % (sid, parts[0], seq), text))
    return out


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_every_line_arrives_once_through_faults(kind, tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    for s in SESSIONS:
        shutil.copytree(os.path.join(sh.FIXTURES, s), root / s)
    gen = root / "20261127T000000.000Z-4242-beef"
    gen.mkdir()
    for _, seq, text in gen_session.windows(KERNELS, segment_kernels=100000):
        with open(gen / ("device.log" + (".%d" % seq if seq else "")), "w") as f:
            f.write(text)
    sent = windows_of(str(root))
    with sh.engine(kind, tmp_path, "faults") as db:
        sh.new_workspace(db.url, "team")
        key = tmp_path / "key"
        key.write_text(sh.new_key(db.url, "team", "ingest") + "\n")
        srv = sh.Server(db.url, log_dir=str(tmp_path))
        proxy = Proxy(srv.port, seed=11 if kind == "sqlite" else 12)
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
            for attempt in range(20):
                r = subprocess.run([CLI, "upload", "--server", "http://127.0.0.1:%d" % proxy.port,
                                    "--api-key-file", str(key), "--budget-s", "60", "--all",
                                    str(root)], capture_output=True, text=True, timeout=600,
                                   env=env)
                if r.returncode == 0:
                    break
            assert r.returncode == 0, r.stdout + r.stderr
            assert sum(proxy.seen.values()) >= 5 and all(proxy.seen[f] for f in FAULTS), \
                proxy.seen
            for sid in sorted({w[0] for w in sent}):
                assert sh.lines_digest(db, sid) == sh.sent_digest(sent, sid), sid
                assert sh.kernel_checksum(db, sid) == sh.sent_kernel_checksum(sent, sid), sid
            assert sh.kernel_checksum(db, gen.name)[0] == KERNELS
            n = db.query("SELECT count(*) FROM windows")[0][0]
            assert n == len(sent)
        finally:
            proxy.close()
            srv.stop()
