"""Shared fixtures over `support.collector`: the REAL collector as a subprocess, and real
OTel SDK senders into it.

- `--store duckdb|postgresql` (default duckdb): the store every collector and every
  `store_target` gets (support/stores.py). With `postgresql`, one real PostgreSQL server
  per test process (`stores`, session scope) and a fresh database per collector; tests
  marked `duckdb_only` (about the file itself) are skipped.
- `collector_factory(env=..., args=..., db_name=..., cls=...)` starts a `CollectorProcess`
  on a fresh store (a DuckDB file in the test's tmp dir by default; every one still
  running at teardown is stopped); `module_collector_factory` is the same for the whole
  module (starting a collector costs seconds: tests that need no clean file share one).
- `collector`: one started with defaults (function scope).
- `store_target(path)`: a fresh store for an in-process test (`path` itself on DuckDB, a
  new database's DSN on PostgreSQL), to open with `support.stores.open_store`.
- `exporter` / `provider`: an in-memory exporter behind a real SDK `TracerProvider`
  (`SimpleSpanProcessor`: a span is in `exporter` when it ends), the shim's counters reset.
- `otlp_http_provider` / `otlp_grpc_provider`: a real SDK `TracerProvider` with a
  `BatchSpanProcessor` and the real OTLP exporter pointed at `collector`.
- `otlp_sender_factory(collector, protocol=...)`: an `OTLPSender`, which records spans with
  a real tracer and sends exactly the ones recorded, in ONE export, through the real
  exporter, returning its `SpanExportResult` — for tests that need to know which spans
  travelled together and whether the export succeeded.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.collector import CollectorProcess, Collectors, OTLPSender, otlp_exporter
from support.stores import DUCKDB, KINDS, POSTGRESQL, Stores

from handoffscope.instrumentation import stats


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store",
        choices=KINDS,
        default=DUCKDB,
        help="the store collectors under test write: a DuckDB file (default) or a real "
        "PostgreSQL started for the run (make test-postgres)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--store") != POSTGRESQL:
        return
    for item in items:
        marker = item.get_closest_marker("duckdb_only")
        if marker is not None:
            why = marker.args[0] if marker.args else "about the DuckDB file itself"
            item.add_marker(pytest.mark.skip(reason=f"duckdb_only: {why}"))


@pytest.fixture(scope="session")
def stores(request: pytest.FixtureRequest) -> Iterator[Stores]:
    """Fresh stores of the kind `--store` names (one PostgreSQL server per xdist worker)."""
    made = Stores(request.config.getoption("--store"))
    yield made
    made.close()


@pytest.fixture
def postgres_dsn(stores: Stores) -> str:
    """A fresh database on this worker's real PostgreSQL server, whatever `--store` says
    (for the tests of the shared store itself: several collectors, the api process)."""
    return stores.database()


@pytest.fixture
def store_target(stores: Stores) -> Any:
    """`store_target(path)` -> a fresh store's target (`path` on DuckDB, a DSN on PostgreSQL)."""
    return stores.new


@pytest.fixture
def collector_factory(tmp_path: Path, stores: Stores) -> Iterator[Collectors]:
    """`collector_factory(env=None, args=(), db_name='h.duckdb')` -> a started CollectorProcess."""
    numbers = itertools.count()

    def folder() -> Path:
        path = tmp_path / f"collector{next(numbers)}"
        path.mkdir()
        return path

    collectors = Collectors(folder, stores)
    yield collectors
    collectors.close()


@pytest.fixture(scope="module")
def module_collector_factory(
    tmp_path_factory: pytest.TempPathFactory, stores: Stores
) -> Iterator[Collectors]:
    """`collector_factory`, but its collectors live for the module."""
    collectors = Collectors(lambda: tmp_path_factory.mktemp("collector"), stores)
    yield collectors
    collectors.close()


@pytest.fixture
def collector(collector_factory: Collectors) -> CollectorProcess:
    return collector_factory()


# --- in memory ----------------------------------------------------------------------------


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    stats.reset()
    tp = TracerProvider(resource=Resource.create({"service.name": "test-app"}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


# --- real SDK senders ---------------------------------------------------------------------


@pytest.fixture
def otlp_sender_factory() -> Iterator[Any]:
    """`otlp_sender_factory(collector, protocol='http', service='test-app', token=None, compression=None)`."""
    made: list[OTLPSender] = []

    def make(
        collector: CollectorProcess,
        protocol: str = "http",
        service: str = "test-app",
        *,
        token: str | None = None,
        compression: str | None = None,
        **resource: Any,
    ) -> OTLPSender:
        sender = OTLPSender(
            otlp_exporter(collector, protocol, token=token, compression=compression),
            service,
            **resource,
        )
        made.append(sender)
        return sender

    yield make
    for sender in made:
        sender.close()


def _batch_provider(collector: CollectorProcess, protocol: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": f"test-{protocol}"}))
    provider.add_span_processor(BatchSpanProcessor(otlp_exporter(collector, protocol)))
    return provider


@pytest.fixture
def otlp_http_provider(collector: CollectorProcess) -> Iterator[TracerProvider]:
    provider = _batch_provider(collector, "http")
    yield provider
    provider.shutdown()


@pytest.fixture
def otlp_grpc_provider(collector: CollectorProcess) -> Iterator[TracerProvider]:
    provider = _batch_provider(collector, "grpc")
    yield provider
    provider.shutdown()
