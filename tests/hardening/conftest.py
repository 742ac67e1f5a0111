"""Fixtures for the hardening suite (helpers live in hardening_support.py).

The collector under test is the real process of tests/conftest.py. Added here: the servers
the shim meets when its collector misbehaves (`fault_server`), a module-scoped variant of
the shared collector factory (`module_collector_factory`), one whose collectors run with a
lowered file-descriptor limit (`fd_limited_collector_factory`), and the shared conftest's
real OTLP exporter builder (`otlp_exporter`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hardening_support import FaultServer


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


ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def root_conftest(config: pytest.Config) -> Any:
    """The module of tests/conftest.py as pytest loaded it (both files are modules named
    `conftest`, so it cannot be imported by name)."""
    return next(
        plugin
        for plugin in config.pluginmanager.get_plugins()
        if Path(getattr(plugin, "__file__", "") or "") == ROOT_CONFTEST
    )


@pytest.fixture(scope="module")
def module_collector_factory(
    request: pytest.FixtureRequest, tmp_path_factory: Any
) -> Iterator[Any]:
    """`collector_factory` of tests/conftest.py, but its collectors live for the module.

    Starting a collector costs seconds (imports, schema, engine load); tests that need no
    clean file share one. Same `CollectorProcess` as the shared fixture.
    """
    root = root_conftest(request.config)
    started: list[Any] = []

    def start(env: Any = None, args: Any = ()) -> Any:
        proc = root.CollectorProcess(tmp_path_factory.mktemp("collector"), env=env, args=args)
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        if proc.running:
            try:
                proc.stop()
            except RuntimeError:
                proc.kill()


@pytest.fixture
def otlp_exporter(request: pytest.FixtureRequest) -> Any:
    """`otlp_exporter(collector, protocol, timeout=...)` of tests/conftest.py: the real OTLP
    exporters, configured as every other suite configures them."""
    return root_conftest(request.config).otlp_exporter


@pytest.fixture
def fd_limited_collector_factory(
    request: pytest.FixtureRequest, tmp_path_factory: Any
) -> Iterator[Any]:
    """`start(nofile, args=())`: the real collector under `prlimit --nofile=N:N`, so a test
    can exhaust its descriptors with a few thousand connections instead of the machine's
    20,000 (which the test process itself could not open beside its own)."""
    root = root_conftest(request.config)

    class Limited(root.CollectorProcess):
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
        if proc.running:
            try:
                proc.stop()
            except RuntimeError:
                proc.kill()
