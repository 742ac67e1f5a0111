"""Fixtures for the framework adapters (OpenAI Agents SDK, LangGraph).

In-memory: `provider` and `exporter` (tests/conftest.py), a real TracerProvider with an
InMemorySpanExporter, to assert exact span and attribute names and types. End to end: `otlp_provider` sends the same spans with the real
OTLP/HTTP exporter to the real collector subprocess (`collector`, tests/conftest.py), and
`fetch_run` polls its query API until a run's evidence has arrived; `langgraph_e2e` is the
LangGraph adapter instrumented into that pipeline, with what the end-to-end tests read back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

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


@dataclass
class LangGraphE2E:
    """The LangGraph adapter reporting into the real collector (`langgraph_e2e`)."""

    ins: Any
    provider: TracerProvider
    fetch: Callable[..., dict[str, Any]]
    sent: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    """The same spans the OTLP exporter serialises, kept to check the bytes on the wire."""
    answers: list[Any] = field(default_factory=list)
    """Every API answer read, for the content-free check at the end."""

    def get(self, run_id: str, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The run once `until(run)` holds (asserted), its answer kept."""
        self.provider.force_flush()
        run = self.fetch(run_id, until)
        self.answers.append(run)
        assert until(run), run
        return run

    @staticmethod
    def ended(status: str, handoffs: int) -> Callable[[dict[str, Any]], bool]:
        return lambda r: r.get("status") == status and len(r.get("handoffs", ())) == handoffs


@pytest.fixture
def langgraph_e2e(
    otlp_provider: TracerProvider, fetch_run: Callable[..., dict[str, Any]]
) -> Iterator[LangGraphE2E]:
    from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

    e2e = LangGraphE2E(LangGraphInstrumentor(), otlp_provider, fetch_run)
    otlp_provider.add_span_processor(SimpleSpanProcessor(e2e.sent))
    e2e.ins.instrument(tracer_provider=otlp_provider)
    yield e2e
    e2e.ins.uninstrument()
