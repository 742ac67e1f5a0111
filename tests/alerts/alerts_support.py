"""Helpers for the alert tests (fixtures live in tests/alerts/conftest.py).

- `Receiver`: a REAL local HTTP server (stdlib `ThreadingHTTPServer` on a free port)
  that records every POST (arrival time, headers, body) and answers from a script:
  `Receiver(answers=[500, 500])` answers 500 twice, then 200; `"hang"` holds the
  request open longer than any notify timeout the tests set, then answers 200.
- `until(fetch, ok, timeout=...)`: support.polling.eventually, under the name these tests
  read best with: wait for something the collector does on its own time.
- `need_binary(name)`: the path of a Debian binary (promtool, prometheus…); a missing one
  skips on a workstation and FAILS under CI (`CI` set), which installs them (.ci/run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from support.polling import eventually as until  # noqa: F401  (re-exported for the tests here)

HANG_S = 3.0


def need_binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        reason = (
            f"{name} not installed (Debian: apt-get install prometheus prometheus-alertmanager)"
        )
        if os.environ.get("CI"):
            pytest.fail(f"cannot run under CI: {reason}")
        pytest.skip(reason)
    return path


@dataclass
class Post:
    at: float
    """time.monotonic() at arrival."""
    path: str
    headers: dict[str, str]
    body: bytes
    answer: Any

    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    """A real webhook receiver on 127.0.0.1; `.url`, `.posts`, `.events()`."""

    def __init__(self, answers: list[Any] | None = None) -> None:
        self.answers = list(answers or [])
        self.posts: list[Post] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                with receiver._lock:
                    answer = receiver.answers.pop(0) if receiver.answers else 200
                    receiver.posts.append(
                        Post(time.monotonic(), self.path, dict(self.headers), body, answer)
                    )
                if answer == "hang":
                    time.sleep(HANG_S)
                    answer = 200
                try:
                    self.send_response(int(answer))
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a hung answer: the notifier timed out and hung up, as it should

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def snapshot(self) -> list[Post]:
        with self._lock:
            return list(self.posts)

    def events(self, *, only_ok: bool = True) -> list[dict[str, Any]]:
        """Every event of the generic-JSON posts answered 200, in arrival order, each
        delivery once — as docs/alerts.md tells receivers to do: a post whose answer the
        notifier missed (its timeout, on a loaded machine) is retried with the same
        `X-Handoffscope-Delivery`. A second delivery id for one event still counts twice."""
        seen: set[str] = set()
        events = []
        for p in self.snapshot():
            if only_ok and p.answer != 200:
                continue
            delivery = {k.lower(): v for k, v in p.headers.items()}.get("x-handoffscope-delivery")
            if delivery is not None:
                if delivery in seen:
                    continue
                seen.add(delivery)
            events.extend(p.json()["events"])
        return events

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def samples(text: str, name: str) -> dict[frozenset, float]:
    """Every sample of family `name` in Prometheus text, keyed by its label set."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            series, _, value = line.rpartition(" ")
            out[frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', series))] = float(value)
    return out


def sample(text: str, name: str, **labels: str) -> float:
    """One sample (labels matched exactly), 0 when absent."""
    return samples(text, name).get(frozenset(labels.items()), 0.0)


class Daemon:
    """A real Prometheus or Alertmanager process in a temp dir; stopped by `close()`."""

    def __init__(self, name: str, cmd: list[str], url: str, workdir: Any) -> None:
        import subprocess

        self.name, self.url = name, url
        self.log_path = workdir / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (open for the process's life)
        self.proc = subprocess.Popen(cmd, cwd=workdir, stdout=self._log, stderr=subprocess.STDOUT)

    def get(self, path: str, **params: Any) -> Any:
        import httpx

        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited:\n{self.log()}")
        try:
            r = httpx.get(self.url + path, params=params, timeout=10)
        except httpx.TransportError:
            return None
        return r.json() if r.status_code == 200 else None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
