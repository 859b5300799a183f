"""Start the real ``triage serve`` (uvicorn, loopback) in a subprocess, and talk to it.

:class:`Server` runs ``python -m triage serve`` in the test's directory with
the knowledge base there, GITHUB_API_URL pointing at the fake GitHub, and
TRIAGE_WEBHOOK_SECRET; its log goes to ``serve.log``.  :func:`signed` builds
a delivery's headers as GitHub does (HMAC-SHA256 of the body).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.support.fakegithub import fixtures_dir

SECRET = "webhook-secret-for-tests-5d1c0e"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fixture_bytes(name: str) -> bytes:
    return (fixtures_dir() / "webhooks" / name).read_bytes()  # in the project: missing is a failure


def signed(body: bytes, event: str, delivery: str | None = None, secret: str = SECRET) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": f"sha256={digest}", "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/tests"}


def with_run(body: bytes, run_id: int, **changes: Any) -> bytes:
    """The payload with another workflow run id (a next completed run)."""
    data = json.loads(body)
    data["workflow_run"]["id"] = run_id
    data["workflow_run"].update(changes)
    return json.dumps(data).encode()


class Server:
    def __init__(self, where: Path, fake: Any, *args: str, env: dict[str, str] | None = None) -> None:
        self.where, self.fake, self.args = where, fake, list(args)
        self.env_extra = env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log_path = where / "serve.log"

    def start(self, timeout: float = 30.0) -> "Server":
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIAGE_", "GH_", "GITHUB_"))}
        env.update(GITHUB_API_URL=self.fake.url, GITHUB_TOKEN=self.fake.token, TRIAGE_WEBHOOK_SECRET=SECRET,
                   PYTHONUNBUFFERED="1")
        env.update(self.env_extra)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "triage", "serve", "--port", str(self.port), *self.args],
                                     cwd=self.where, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"triage serve exited {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"triage serve did not answer /healthz:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def log_lines(self) -> list[dict]:
        out = []
        for line in self.log().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code, self.proc = self.proc.returncode, None
        return code

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def send(self, body: bytes, event: str, delivery: str | None = None, **kw: Any) -> httpx.Response:
        headers = signed(body, event, delivery, **kw)
        return httpx.post(f"{self.url}/webhook", content=body, headers=headers, timeout=30)

    def declared(self, length: int, event: str, start: bytes = b'{"pad": "') -> tuple[int, bytes]:
        """A signed delivery that declares a body of ``length`` bytes and sends only its ``start``:
        the server's status and body, answered from the headers alone.  (A client that sends
        the whole of a body the server refused at once may find the connection reset before
        it reads the answer, which the server sent.)"""
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        head = "".join(f"{k}: {v}\r\n" for k, v in signed(start, event).items())
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(f"POST /webhook HTTP/1.1\r\nHost: {host}:{port}\r\n{head}Content-Length: {length}\r\n"
                         f"\r\n".encode() + start)
            got = b""
            while b"\r\n\r\n" not in got and (chunk := sock.recv(65536)):
                got += chunk
            head_text, _, body = got.partition(b"\r\n\r\n")
            lines = head_text.decode("latin-1").split("\r\n")
            size = next(int(v) for k, _, v in (x.partition(":") for x in lines[1:]) if k.lower() == "content-length")
            while len(body) < size and (chunk := sock.recv(65536)):
                body += chunk
        return int(lines[0].split()[1]), body

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", timeout=30, **kw)

    def deliveries(self) -> list[tuple]:
        return query(self.where, "select id, state, attempts, outcome from delivery order by received_at")

    def wait_settled(self, count: int, timeout: float = 60.0) -> list[tuple]:
        """Wait until ``count`` deliveries are stored and none is queued or running."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.deliveries()
            if len(rows) >= count and all(r[1] not in ("queued", "running") for r in rows):
                return rows
            time.sleep(0.1)
        raise AssertionError(f"deliveries not settled: {self.deliveries()}\n{self.log()[-3000:]}")


def query(where: Path, sql: str) -> list[tuple]:
    path = where / "kb.sqlite"
    if not path.exists():
        return []
    con = sqlite3.connect(path, timeout=30)
    try:
        return con.execute(sql).fetchall()
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return []
        raise
    finally:
        con.close()
