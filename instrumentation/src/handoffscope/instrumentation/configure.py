"""`configure()`: one call that points the app's traces at a handoffscope collector.

    from handoffscope.instrumentation import configure, HandoffRecorder
    provider = configure(service_name="support-bot")
    recorder = HandoffRecorder(provider)

It builds a TracerProvider with an OTLP exporter behind `BoundedBatchSpanProcessor`
(a 200 ms export delay so the live board is fresh; a queue sized for a 10k handoffs/s
burst that drops and counts rather than block). Standard variables are honoured:
`OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or
`grpc`), `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`. When `HANDOFFSCOPE_TOKEN` is
set, its bearer header is added. Explicit arguments win over the environment.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from .processor import (
    DEFAULT_MAX_EXPORT_BATCH_SIZE,
    DEFAULT_MAX_QUEUE_SIZE,
    DEFAULT_SCHEDULE_DELAY_MS,
    DEFAULT_SHUTDOWN_TIMEOUT_MS,
    BoundedBatchSpanProcessor,
)

_log = logging.getLogger(__name__)

PROTOCOL_HTTP = "http/protobuf"
PROTOCOL_GRPC = "grpc"
DEFAULT_HTTP_ENDPOINT = "http://127.0.0.1:4318"
DEFAULT_GRPC_ENDPOINT = "http://127.0.0.1:4317"
DEFAULT_TIMEOUT_S = 5.0
"""Per export request. Short: the exporter thread, not the app, waits on it, but a long
timeout makes the app's exit (which flushes) hang when the collector is down."""


def configure(
    *,
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    export_delay_ms: float = DEFAULT_SCHEDULE_DELAY_MS,
    max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE,
    max_export_batch_size: int = DEFAULT_MAX_EXPORT_BATCH_SIZE,
    shutdown_timeout_ms: int = DEFAULT_SHUTDOWN_TIMEOUT_MS,
    exporter: SpanExporter | None = None,
    set_global: bool = True,
) -> TracerProvider:
    """Build (and by default install globally) a TracerProvider exporting to handoffscope.

    `exporter` replaces the OTLP exporter (tests pass an in-memory one). Returns the
    provider; call `provider.shutdown()` at exit to flush (the SDK also does at exit).
    That flush waits at most `shutdown_timeout_ms`; what is left is dropped and counted.
    """
    name = service_name or os.environ.get("OTEL_SERVICE_NAME") or "unknown_service"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    if exporter is None:
        exporter = _otlp_exporter(
            endpoint=endpoint, protocol=protocol, headers=headers, timeout=timeout
        )
    provider.add_span_processor(
        BoundedBatchSpanProcessor(
            exporter,
            max_queue_size=max_queue_size,
            schedule_delay_millis=export_delay_ms,
            max_export_batch_size=max_export_batch_size,
            shutdown_timeout_millis=shutdown_timeout_ms,
        )
    )
    if set_global:
        trace.set_tracer_provider(provider)
    return provider


def _otlp_exporter(
    *,
    endpoint: str | None,
    protocol: str | None,
    headers: Mapping[str, str] | None,
    timeout: float | None,
) -> SpanExporter:
    proto = (
        (
            protocol
            or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or PROTOCOL_HTTP
        )
        .strip()
        .lower()
    )
    if proto not in (PROTOCOL_HTTP, PROTOCOL_GRPC):
        raise ValueError(
            f"unsupported OTLP protocol {proto!r}: use {PROTOCOL_HTTP!r} (default) or {PROTOCOL_GRPC!r}"
        )
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        # The exporter would only log "No connection adapters" from its thread, forever.
        raise ValueError(
            f"OTLP endpoint {endpoint!r} needs a scheme: http://host:port or https://host:port"
        )
    merged = _headers(headers)
    if timeout is None and not os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT"):
        timeout = DEFAULT_TIMEOUT_S
    if proto == PROTOCOL_GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        ep = endpoint or _env_endpoint() or DEFAULT_GRPC_ENDPOINT
        return GrpcExporter(
            endpoint=ep,
            insecure=ep.startswith("http://"),
            headers=tuple(merged.items()) or None,
            timeout=timeout,
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )

    ep = endpoint or _env_endpoint() or DEFAULT_HTTP_ENDPOINT
    if not ep.rstrip("/").endswith("/v1/traces"):
        ep = ep.rstrip("/") + "/v1/traces"
    return HttpExporter(endpoint=ep, headers=merged or None, timeout=timeout)


def _env_endpoint() -> str | None:
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    return os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None


def _headers(explicit: Mapping[str, str] | None) -> dict[str, str]:
    # Passing headers to an exporter makes it ignore OTEL_EXPORTER_OTLP_HEADERS, so merge here.
    from opentelemetry.util.re import parse_env_headers

    merged: dict[str, str] = {}
    for var in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        raw = os.environ.get(var)
        if raw:
            merged.update(parse_env_headers(raw, liberal=True))
    token = os.environ.get("HANDOFFSCOPE_TOKEN")
    if token:
        merged["authorization"] = f"Bearer {token}"
    if explicit:
        merged.update({k.lower(): v for k, v in explicit.items()})
    return merged
