"""Fixtures for the instrumentation core: an in-memory exporter behind a real TracerProvider."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import HandoffRecorder, stats


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({"service.name": "test-app"}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


@pytest.fixture
def recorder(provider: TracerProvider) -> HandoffRecorder:
    stats.reset()
    return HandoffRecorder(provider)
