"""The two ways an OpenInference-traced app exports, for the Agno and smolagents drivers.

OpenInference's quickstarts (openinference-instrumentation-agno and -smolagents READMEs)
export with a `SimpleSpanProcessor`: one OTLP request per span, as each ends — so a
member's span never travels with its caller's. Apps in production batch
(`BatchSpanProcessor`, driver_common.install_tracing): a caller usually goes with its
members. `$HANDOFFSCOPE_OI_EXPORT` = `simple` picks the quickstart's way, anything else
the batch; the collector must judge both the same (docs/foreign-spans.md).
"""

from __future__ import annotations

import os

from driver_common import _Count, install_tracing
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

EXPORT_ENV = "HANDOFFSCOPE_OI_EXPORT"


def install(service: str) -> TracerProvider:
    if os.environ.get(EXPORT_ENV) != "simple":
        return install_tracing(service)
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        raise SystemExit("OTEL_EXPORTER_OTLP_ENDPOINT is not set (the collector's http endpoint)")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(_Count())  # what driver_common.finish reports as `spans`
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider
