"""OTLP payloads built by hand from the `opentelemetry.proto` classes: the one vocabulary
for tests that need spans the real SDK would not make (a span that breaks the contract
beside one that keeps it, chosen ids and times, a foreign instrumentation's scope).

Tests that can use the real SDK do (`support.collector.OTLPSender`); these builders are
for the receiver, allowlist and translator tests that must say exactly which bytes arrive.

- `any_value` / `key_values` / `kv`: Python values as OTLP attributes;
- `new_ids()`: a fresh (trace_id, span_id), unique across the test process;
- `otlp_span(name, attributes, ...)`: one `Span` (ids fresh, times `now`, unless given);
- `export_request(spans, service=..., scope=...)`: one resource, one scope, those spans;
- `span_keys(request)`: (trace_id hex, span_id hex) of each span, as the store writes them;
- `to_otlp_json(request)`: OTLP/JSON (ids as hex, not proto3 JSON's base64); `gzipped(body)`.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from handoffscope.instrumentation import semconv as sc

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def any_value(value: Any) -> AnyValue:
    """A Python value as an OTLP AnyValue (bool before int: bool is an int in Python)."""
    if isinstance(value, AnyValue):
        return value
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, (list, tuple)):
        return AnyValue(array_value=ArrayValue(values=[any_value(v) for v in value]))
    return AnyValue(string_value=str(value))


def kv(key: str, value: Any) -> KeyValue:
    """One attribute (a list or tuple becomes an array)."""
    return KeyValue(key=key, value=any_value(value))


def key_values(attributes: Mapping[str, Any]) -> list[KeyValue]:
    return [kv(k, v) for k, v in attributes.items()]


_ids_lock = threading.Lock()
_next_id = [int.from_bytes(os.urandom(6), "big") << 16]


def new_ids() -> tuple[bytes, bytes]:
    """A fresh (trace_id, span_id): unique across this test process, never all zero."""
    with _ids_lock:
        _next_id[0] += 1
        n = _next_id[0]
    return n.to_bytes(16, "big"), n.to_bytes(8, "big")


def otlp_span(
    name: str = sc.SPAN_REQUEST,
    attributes: Mapping[str, Any] | Iterable[KeyValue] | None = None,
    *,
    trace_id: bytes | None = None,
    span_id: bytes | None = None,
    parent_span_id: bytes = b"",
    start_ns: int | None = None,
    end_ns: int | None = None,
    error: str = "",
) -> Span:
    """One OTLP span; ids fresh unless given, times `now` unless given; `attributes` a
    mapping of Python values or `KeyValue`s as they are; `error` sets an ERROR status."""
    if trace_id is None or span_id is None:
        fresh_trace, fresh_span = new_ids()
        trace_id = fresh_trace if trace_id is None else trace_id
        span_id = fresh_span if span_id is None else span_id
    now = time.time_ns()
    if isinstance(attributes, Mapping):
        attributes = key_values(attributes)
    span = Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_span_id,
        name=name,
        start_time_unix_nano=now - 1000 if start_ns is None else start_ns,
        end_time_unix_nano=now if end_ns is None else end_ns,
        attributes=list(attributes or ()),
    )
    if error:
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = error
    return span


def export_request(
    spans: Iterable[Span],
    *,
    service: str | None = "tests",
    resource_attributes: Mapping[str, Any] | None = None,
    scope: str = "",
) -> ExportTraceServiceRequest:
    """One resource (with `service.name`, unless None), one scope (named, if `scope`),
    these spans."""
    attrs = dict(resource_attributes or {})
    if service is not None:
        attrs.setdefault(sc.SERVICE_NAME, service)
    scope_spans = ScopeSpans(spans=list(spans))
    if scope:
        scope_spans.scope.name = scope
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=key_values(attrs)), scope_spans=[scope_spans]
            )
        ]
    )


def span_keys(request: ExportTraceServiceRequest) -> list[tuple[str, str]]:
    """(trace_id hex, span_id hex) of every span in `request`, as the store writes them."""
    return [
        (span.trace_id.hex(), span.span_id.hex())
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]


def gzipped(body: bytes) -> bytes:
    return gzip.compress(body, compresslevel=1)


_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def otlp_json_doc(
    request: ExportTraceServiceRequest, *, integer_enums: bool = True
) -> dict[str, Any]:
    """OTLP/JSON of `request` as a dict: proto3 JSON, except trace/span ids are hex, not
    base64 (the OTLP/JSON mapping). Enums are integers, as OTLP/JSON says; with
    `integer_enums=False`, their names (which a receiver must take as well)."""
    doc = json_format.MessageToDict(request, use_integers_for_enums=integer_enums)
    for rs in doc.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                for field in _ID_FIELDS:
                    if field in span:
                        span[field] = base64.b64decode(span[field]).hex()
    return doc


def to_otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """The OTLP/JSON body of `request` (`otlp_json_doc`, integer enums)."""
    return json.dumps(otlp_json_doc(request)).encode()
