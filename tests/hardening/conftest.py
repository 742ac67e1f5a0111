"""Fixtures for the hardening suite (helpers live in hardening_support.py).

The collector under test is the real process of support.collector (the root conftest's
`collector_factory` / `module_collector_factory`). Added here: the servers the shim meets
when its collector misbehaves (`fault_server`), collectors that run with a lowered
file-descriptor limit (`fd_limited_collector_factory`), and the real OTLP exporter builder
as a fixture (`otlp_exporter`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import support.collector as support_collector
from hardening_support import FaultServer
from support.collector import CollectorProcess


@pytest.fixture
def fault_server() -> Iterator[Any]:
    """`fault_server(mode, delay_s=...)` -> a started FaultServer, stopped at teardown."""
    started: list[FaultServer] = []

    def start(mode: str, **kw: Any) -> FaultServer:
        server = FaultServer(mode, **kw).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


@pytest.fixture
def otlp_exporter() -> Any:
    """`otlp_exporter(collector, protocol, timeout=...)`: the real OTLP exporters, configured
    as every other suite configures them (support.collector)."""
    return support_collector.otlp_exporter


@pytest.fixture
def fd_limited_collector_factory(tmp_path_factory: Any) -> Iterator[Any]:
    """`start(nofile, args=())`: the real collector under `prlimit --nofile=N:N`, so a test
    can exhaust its descriptors with a few thousand connections instead of the machine's
    20,000 (which the test process itself could not open beside its own)."""

    class Limited(CollectorProcess):
        nofile = 0

        def command(self) -> list[str]:
            return ["prlimit", f"--nofile={self.nofile}:{self.nofile}", *super().command()]

    started: list[Any] = []

    def start(nofile: int, args: Any = ()) -> Any:
        proc = Limited(tmp_path_factory.mktemp("collector"), args=args)
        proc.nofile = nofile
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.close()
