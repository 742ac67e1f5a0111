"""A REAL PostgreSQL server for the tests: Debian's binaries, a temp cluster, a free port.

`PostgresServer.start()` runs `initdb` into a directory of its own and `pg_ctl start` on
a free TCP port of 127.0.0.1 (and a Unix socket in the same directory, so two servers
never share `/var/run/postgresql`), trusting local connections: the fixture is the only
client and the port is loopback-only. `.dsn` is the `postgresql://` URL a collector is
given; `.stop()` shuts it down (`pg_ctl stop -m fast`) and removes the directory;
`with .down():` stops it for the block and starts it again (a restart under clients).

PostgreSQL refuses to run as root, and CI runs as root, so when the tests are root the
cluster belongs to an unprivileged user (`nobody`) and every server command runs under
`runuser -u nobody`; the directory is created outside pytest's root-only tmp tree so
that user can reach it.

The binaries come from Debian's `postgresql` package (`/usr/lib/postgresql/<major>/bin`,
newest major first, or `pg_ctl` on PATH). Missing ones skip on a workstation and FAIL
under CI (`CI` set), which installs them (.ci/run).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

START_TIMEOUT_S = 120
"""A bound, not a measurement: a fresh cluster starts in about a second here."""
UNPRIVILEGED_USER = "nobody"
SUPERUSER = "postgres"
DATABASE = "handoffscope"


def bindir() -> Path:
    """Where `initdb` and `pg_ctl` live; skip (or fail under CI) when they are absent."""
    majors = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    for candidate in majors:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    reason = "PostgreSQL server binaries not installed (Debian: apt-get install postgresql)"
    if os.environ.get("CI"):
        pytest.fail(f"cannot run under CI: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One throwaway PostgreSQL cluster; `start()` it, use `.dsn`, `stop()` it."""

    def __init__(self, *, durable: bool = True) -> None:
        # durable=False turns fsync and synchronous_commit off: faster, and still safe
        # for everything the tests kill (collectors, never this server).
        self.durable = durable
        self.bin = bindir()
        self.root = Path(tempfile.mkdtemp(prefix="handoffscope-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        self.started = False

    @property
    def dsn(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    def _cmd(self, *args: str) -> list[str]:
        base = [str(self.bin / args[0]), *args[1:]]
        return ["runuser", "-u", UNPRIVILEGED_USER, "--", *base] if self.as_root else base

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            self._cmd(*args), capture_output=True, text=True, timeout=START_TIMEOUT_S
        )
        if done.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(
                f"{args[0]} failed ({done.returncode}): {done.stderr.strip()}\n{log[-2000:]}"
            )

    def start(self) -> PostgresServer:
        if self.as_root:
            shutil.chown(self.root, user=UNPRIVILEGED_USER)
        self._run(
            "initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
            "--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions",
        )  # fmt: skip
        self._start_server()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, DATABASE)
        return self

    def _start_server(self) -> None:
        options = [
            f"-p {self.port}",
            "-c listen_addresses=127.0.0.1",
            f"-c unix_socket_directories={self.root}",
        ]
        if not self.durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w",
            "-t", str(START_TIMEOUT_S), "-o", " ".join(options), "start",
        )  # fmt: skip
        self.started = True

    @contextmanager
    def down(self) -> Iterator[None]:
        """The server stopped for the block (fast shutdown: every session is cut, as in a
        restart or a fail-over), then started again on the same port with the same data."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        self.started = False
        try:
            yield
        finally:
            self._start_server()

    def stop(self) -> None:
        try:
            if self.started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
                self.started = False
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
