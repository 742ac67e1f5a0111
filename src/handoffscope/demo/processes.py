"""Start, watch and stop the demo's collector and dashboard as child processes."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field


class DemoError(RuntimeError):
    """Something the user must fix (a port in use, a process that died): said in words."""


@dataclass
class Child:
    name: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    def start(self, log_path: str) -> None:
        env = {**os.environ, **self.env}
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 (kept open for the child's life)
        self.proc = subprocess.Popen(
            self.args, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )

    def last_words(self, lines: int = 3) -> str:
        """The last lines the child wrote (its reason for stopping, when it had one)."""
        try:
            with open(self.log_path, "rb") as f:
                tail = f.read()[-4000:].decode("utf-8", "replace")
        except (AttributeError, OSError):
            return ""
        kept = [ln.strip() for ln in tail.splitlines() if ln.strip()]
        return " | ".join(kept[-lines:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)


def wait_http(url: str, child: Child, timeout: float, token: str | None = None) -> None:
    deadline = time.monotonic() + timeout
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    while time.monotonic() < deadline:
        if not child.alive():
            said = child.last_words()
            raise DemoError(
                f"the {child.name} exited during start-up"
                + (f": {said}" if said else f" (log: {getattr(child, 'log_path', '?')})")
            )
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.3)
    raise DemoError(
        f"the {child.name} did not answer {url} within {timeout:.0f} s "
        f"(log: {getattr(child, 'log_path', '?')})"
    )


def check_port_free(host: str, port: int, what: str, flag: str) -> None:
    """Fail before starting anything when `port` is taken, naming it and the way out.

    Binding is the only reliable test (a connect can be refused by a firewall, and a port
    bound to another address of the machine still conflicts); SO_REUSEADDR matches what
    the servers themselves set, so a socket merely in TIME_WAIT is not reported."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            reason = (
                "is already in use (is another handoffscope demo, collector or dashboard running?)"
                if exc.errno == errno.EADDRINUSE
                else f"cannot be bound: {exc.strerror or exc}"
            )
            raise DemoError(
                f"port {port} on {host} for the {what} {reason}; stop the other process or "
                f"choose another with {flag} (e.g. make demo DEMO_ARGS='{flag} {port + 10}')"
            ) from None


def collector_child(
    db: str,
    host: str,
    http_port: int,
    grpc_port: int,
    grace: float,
    *,
    notify: str = "",
    notify_secret: str = "",
    dashboard_url: str = "",
) -> Child:
    extra = ["--notify", notify, "--dashboard-url", dashboard_url] if notify else []
    env = {"HANDOFFSCOPE_NOTIFY_SECRET": notify_secret} if notify_secret else {}
    return Child(
        "collector",
        [
            sys.executable,
            "-m",
            "handoffscope.cli",
            "collector",
            "--db",
            db,
            "--host",
            host,
            "--http-port",
            str(http_port),
            "--grpc-port",
            str(grpc_port),
            "--grace-seconds",
            str(grace),
            *extra,
        ],
        env,
    )


def dashboard_child(api: str, host: str, port: int) -> Child:
    return Child(
        "dashboard",
        [
            sys.executable,
            "-m",
            "handoffscope.cli",
            "dashboard",
            "--api",
            api,
            "--host",
            host,
            "--port",
            str(port),
        ],
    )
