"""Start, watch and stop the demo's collector and dashboard as child processes."""

from __future__ import annotations

import contextlib
import os
import signal
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
        self._log = open(log_path, "ab")  # noqa: SIM115 (kept open for the child's life)
        self.proc = subprocess.Popen(
            self.args, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )

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
            raise DemoError(f"the {child.name} exited during start-up (see its log)")
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.3)
    raise DemoError(f"the {child.name} did not answer {url} within {timeout:.0f} s (see its log)")


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
