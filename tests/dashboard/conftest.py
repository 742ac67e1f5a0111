"""Fixtures for the dashboard tests: real collectors, empty or seeded with real spans.

The collector is the real process of support.collector (`CollectorProcess`: `python -m
handoffscope.collector` on free ports with its own DuckDB file, started by the root
conftest's `module_collector_factory`); the seed is sent with the
real OTLP exporter (`dashboard_support.seed`). The pages only read, so one seeded
collector serves a whole test module, a second one stays empty, and a third requires a
token. For the browser tests: `chromium_path` (Debian's Chromium, or a skip — a failure
under CI), `browser` (headless Chromium, per module) and `dashboard_factory(api, *flags)` (per test) or `module_dashboard_factory` (per module),
`handoffscope dashboard` as a real subprocess on a free port.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import (
    BILLING,
    CHROMIUM,
    CHROMIUM_ARGS,
    FLOW_SERVICE,
    RUN_BIG,
    RUN_LAST_WEEK,
    RUN_ROUTE,
    build_big_run,
    build_flow_scenario,
    seed,
    stop,
    wait_http,
    wait_visible,
)
from support.ports import free_port

TOKEN = "dashboard-test-token"


@pytest.fixture(scope="module")
def seeded_api(module_collector_factory: Any) -> str:
    """URL of a real collector holding the dashboard scenario (one run of every kind)."""
    proc = module_collector_factory()
    seed(proc.http_endpoint)
    wait_visible(proc.http_endpoint, (RUN_ROUTE, RUN_LAST_WEEK))
    return proc.http_endpoint


@pytest.fixture(scope="module")
def board_api(module_collector_factory: Any) -> str:
    """URL of a real collector holding the board scenario (seed_board: >100 open waits at
    run and handoff level, runs stuck for longer than the live window), seeded once."""
    from seed_board import SEARCH_RUN, seed_board

    proc = module_collector_factory()
    seed_board(proc.http_endpoint)
    wait_visible(proc.http_endpoint, ("board-stuck-old-", "board-wait-r-", SEARCH_RUN))
    return proc.http_endpoint


@pytest.fixture(scope="module")
def flow_api(module_collector_factory: Any) -> str:
    """URL of a real collector holding the 20-agent control-flow scenario (a cycle, a
    self-loop, an undeclared route, refusals)."""
    proc = module_collector_factory()
    seed(proc.http_endpoint, build=build_flow_scenario, services=(FLOW_SERVICE,))
    wait_visible(proc.http_endpoint, ("flow-",))
    return proc.http_endpoint


@pytest.fixture(scope="module")
def big_run_api(module_collector_factory: Any) -> str:
    """URL of a real collector holding one run of 10,000 handoffs (dashboard_support.RUN_BIG),
    sent in one export by the real OTLP exporter and judged by the collector."""
    proc = module_collector_factory()
    seed(proc.http_endpoint, build=build_big_run, services=(BILLING,))
    wait_visible(proc.http_endpoint, (RUN_BIG,))
    proc.judged()
    return proc.http_endpoint


@pytest.fixture(scope="module")
def empty_api(module_collector_factory: Any) -> str:
    """URL of a real collector that has stored nothing."""
    return module_collector_factory().http_endpoint


@pytest.fixture(scope="module")
def token_api(module_collector_factory: Any) -> tuple[str, str]:
    """(URL, token) of a real, seeded collector that requires `Authorization: Bearer <token>`."""
    proc = module_collector_factory(env={"HANDOFFSCOPE_TOKEN": TOKEN})
    seed(proc.http_endpoint, token=TOKEN)
    wait_visible(proc.http_endpoint, (RUN_ROUTE,), token=TOKEN)
    return proc.http_endpoint, TOKEN


FOREIGN_APP = Path(__file__).resolve().parents[1] / "foreign" / "agents_app.py"
FOREIGN_APP_TIMEOUT_S = 240.0


@pytest.fixture(scope="module")
def foreign_api(module_collector_factory: Any) -> tuple[str, dict[str, Any]]:
    """(URL, run ids) of a real collector holding the same Agents SDK run twice: traced by
    the real OpenInference instrumentation (translated: `healthy`) and by our shim on the
    same provider (`shim`), both through the real OTLP exporter (tests/foreign/agents_app.py
    --mixed, in a subprocess: the instrumentation registers itself globally)."""
    import json

    proc = module_collector_factory()
    done = subprocess.run(
        [sys.executable, str(FOREIGN_APP), "openinference", proc.http_endpoint, "--mixed"],
        capture_output=True,
        text=True,
        timeout=FOREIGN_APP_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    ids = {"foreign": out["healthy"], "shim": out["shim"]["healthy"]}
    wait_visible(proc.http_endpoint, tuple(ids.values()))
    return proc.http_endpoint, ids


@pytest.fixture
def closed_port_api() -> Iterator[str]:
    """A URL where nothing listens: bind a free port, then close it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def chromium_path() -> str:
    reason = None
    if not Path(CHROMIUM).exists():
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright Python package is not installed"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run under CI: {reason}")
        pytest.skip(reason)
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    """Real headless Chromium (Playwright), one per test module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@contextlib.contextmanager
def _dashboards(folder: Path) -> Iterator[Any]:
    """`start(api, *flags)`: `handoffscope dashboard --api api` as a real subprocess on a
    free port, logging into `folder`, stopped on exit; returns its URL."""
    procs: list[subprocess.Popen] = []

    def start(api: str, *flags: str) -> str:
        port = free_port()
        log = folder / f"dashboard-{port}.log"
        env = dict(os.environ)
        env.pop("HANDOFFSCOPE_TOKEN", None)
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [
                    sys.executable, "-m", "handoffscope.dashboard.cli",
                    "--api", api, "--port", str(port), "--host", "127.0.0.1", *flags,
                ],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder,
            )  # fmt: skip
        procs.append(proc)
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/_stcore/health", proc, log)
        return base

    try:
        yield start
    finally:
        stop(procs)


@pytest.fixture
def dashboard_factory(tmp_path: Path) -> Iterator[Any]:
    """`start(api, *flags)` (see `_dashboards`), dashboards stopped after the test."""
    with _dashboards(tmp_path) as start:
        yield start


@pytest.fixture(scope="module")
def module_dashboard_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """`start(api, *flags)`, dashboards shared by a module's tests (pages only read)."""
    with _dashboards(tmp_path_factory.mktemp("dashboards")) as start:
        yield start
