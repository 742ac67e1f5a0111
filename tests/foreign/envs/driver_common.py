"""What every scenario driver shares: the sentinel, the tracer provider, the exit protocol.

Imported by `tests/foreign/envs/<name>/scenario.py`, which runs with THAT framework's env
python (see tests/foreign/framework_envs.py), so this module uses only the standard library and the
OpenTelemetry SDK + OTLP/HTTP exporter every env's requirements pin.

- `SENTINEL`: `$HANDOFFSCOPE_SENTINEL` (the test picks a fresh one per run); the driver plants
  it in the prompt, tool arguments, tool outputs and an exception message.
- `install_tracing(service)`: the GLOBAL tracer provider (each framework takes its tracer
  from the global API unless told otherwise) with a BatchSpanProcessor and the real OTLP/HTTP
  protobuf exporter, which reads `OTEL_EXPORTER_OTLP_ENDPOINT` itself (+ `/v1/traces`).
- `finish(provider, outcome)`: flush and shut down the exporter (a short-lived process would
  otherwise exit before the batch is sent), then print one `SCENARIO-RESULT {json}` line the
  test reads: the scenario's own account of what happened (never content: agent names and
  counts only), with `spans`, how many spans ended (each one exported).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

SENTINEL = os.environ.get("HANDOFFSCOPE_SENTINEL", "SENTINEL-unset-7f3a")
SCENARIOS = ("healthy", "pingpong", "limit", "error")


def scenario_from_argv(extra: tuple[str, ...] = ()) -> str:
    """The scenario named on the command line: one of SCENARIOS, or of a driver's `extra`."""
    known = (*SCENARIOS, *extra)
    if len(sys.argv) != 2 or sys.argv[1] not in known:
        sys.exit(f"usage: scenario.py {{{','.join(known)}}}")
    return sys.argv[1]


class _Count(SpanProcessor):
    """Counts the spans that ended, so the test can check that every one reached the collector."""

    ended = 0

    def on_end(self, span: ReadableSpan) -> None:
        _Count.ended += 1


def install_tracing(service: str) -> TracerProvider:
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        sys.exit("OTEL_EXPORTER_OTLP_ENDPOINT is not set (the collector's http endpoint)")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(_Count())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def finish(provider: TracerProvider, **outcome: Any) -> None:
    flushed = provider.force_flush(30_000)
    provider.shutdown()
    result = {"flushed": flushed, "spans": _Count.ended, **outcome}
    print("SCENARIO-RESULT " + json.dumps(result), flush=True)
