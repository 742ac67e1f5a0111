"""Fixtures for the framework adapters (OpenAI Agents SDK, LangGraph).

In-memory: `provider` and `exporter` (tests/conftest.py), a real TracerProvider with an
InMemorySpanExporter, to assert exact span and attribute names and types. End to end: `otlp_provider` sends the same spans with the real
OTLP/HTTP exporter to the real collector subprocess (`collector`, tests/conftest.py), and
`fetch_run` polls its query API until a run's evidence has arrived.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from handoffscope.instrumentation import configure, stats


@pytest.fixture
def otlp_provider(collector: Any) -> Iterator[TracerProvider]:
    """The shipped pipeline (`configure()`: OTLP/HTTP + bounded batch processor) into `collector`."""
    stats.reset()
    tp = configure(
        service_name="adapter-e2e",
        endpoint=collector.http_endpoint,
        set_global=False,
    )
    yield tp
    tp.shutdown()


@pytest.fixture
def fetch_run(collector: Any) -> Callable[..., dict[str, Any]]:
    """`fetch_run(run_id, until=lambda run: ...)`: the collector's run once `until` holds
    (support.collector.CollectorProcess.run: export is asynchronous, so it polls, and after
    `timeout` s returns the last answer, letting the test's own assertions say what is
    missing)."""
    return collector.run
