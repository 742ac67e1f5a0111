"""Shared fixtures over `support.collector`: the REAL collector as a subprocess, and real
OTel SDK senders into it.

- `collector_factory(env=..., args=..., db_name=..., cls=...)` starts a `CollectorProcess`
  with a fresh DuckDB file in the test's tmp dir (every one still running at teardown is
  stopped); `module_collector_factory` is the same for the whole module (starting a
  collector costs seconds: tests that need no clean file share one).
- `collector`: one started with defaults (function scope).
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

from handoffscope.instrumentation import stats


@pytest.fixture
def collector_factory(tmp_path: Path) -> Iterator[Collectors]:
    """`collector_factory(env=None, args=(), db_name='h.duckdb')` -> a started CollectorProcess."""
    numbers = itertools.count()

    def folder() -> Path:
        path = tmp_path / f"collector{next(numbers)}"
        path.mkdir()
        return path

    collectors = Collectors(folder)
    yield collectors
    collectors.close()


@pytest.fixture(scope="module")
def module_collector_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collectors]:
    """`collector_factory`, but its collectors live for the module."""
    collectors = Collectors(lambda: tmp_path_factory.mktemp("collector"))
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
