"""Helpers for the hardening suite: OTLP payload builders, fault servers, reading the file.

The collector under test is always the real process started by the fixtures of
tests/conftest.py; nothing here stands in for it. What this module adds:

- builders for `ExportTraceServiceRequest`s from the `opentelemetry.proto` classes, so a
  test can mix spans that keep the contract with spans that break it in one export, with
  span ids it chooses (and can later look for in the DuckDB file);
- `FaultServer`: a real HTTP server on a free loopback port that answers OTLP exports
  slowly, with 503 + Retry-After, or promptly (counting spans) — what the shim meets when
  its collector misbehaves; `closed_port_url()` for a collector that is down;
- `stored_keys(db_path)`: the (trace_id, span_id) rows of the collector's file, read with
  DuckDB once the collector has stopped (DuckDB is single-writer across processes);
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from handoffscope.instrumentation import semconv as sc

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

SECOND_NS = 1_000_000_000


# --- OTLP payload builders ----------------------------------------------------------------


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


def key_values(attributes: Mapping[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=any_value(v)) for k, v in attributes.items()]


_ids_lock = threading.Lock()
_next_id = [int.from_bytes(os.urandom(6), "big") << 16]


def new_ids() -> tuple[bytes, bytes]:
    """A fresh (trace_id, span_id): unique across this test process, never all zero."""
    with _ids_lock:
        _next_id[0] += 1
        n = _next_id[0]
    return n.to_bytes(16, "big"), n.to_bytes(8, "big")


def evidence_span(
    name: str = sc.SPAN_REQUEST,
    attributes: Mapping[str, Any] | None = None,
    *,
    trace_id: bytes | None = None,
    span_id: bytes | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> Span:
    """One OTLP span; ids fresh unless given, times `now` unless given."""
    if trace_id is None or span_id is None:
        fresh_trace, fresh_span = new_ids()
        trace_id = fresh_trace if trace_id is None else trace_id
        span_id = fresh_span if span_id is None else span_id
    now = time.time_ns()
    start = now - 1000 if start_ns is None else start_ns
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        name=name,
        start_time_unix_nano=start,
        end_time_unix_nano=now if end_ns is None else end_ns,
        attributes=key_values(attributes or {}),
    )


def request_attributes(run_id: str, handoff_id: str, **extra: Any) -> dict[str, Any]:
    """A healthy `handoff.request`'s attributes (declared route, closed tool call id)."""
    attrs: dict[str, Any] = {
        sc.RUN_ID: run_id,
        sc.HANDOFF_ID: handoff_id,
        sc.FROM_AGENT: "triage",
        sc.TO_AGENT: "billing",
        sc.TURN: 1,
        sc.STATE_VERSION: 1,
        sc.ROUTE_DECLARED: True,
        sc.TOOL_CALL_ID: f"call-{handoff_id}",
    }
    attrs.update(extra)
    return attrs


def export_request(
    spans: Iterable[Span],
    *,
    service: str | None = "hardening",
    resource_attributes: Mapping[str, Any] | None = None,
) -> ExportTraceServiceRequest:
    """One resource (with `service.name`), one scope, these spans."""
    attrs = dict(resource_attributes or {})
    if service is not None:
        attrs.setdefault(sc.SERVICE_NAME, service)
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=key_values(attrs)),
                scope_spans=[ScopeSpans(spans=list(spans))],
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


def to_otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON of `request`: proto3 JSON, except trace/span ids are hex, not base64."""
    doc = json_format.MessageToDict(request, use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                for field in _ID_FIELDS:
                    if field in span:
                        span[field] = base64.b64decode(span[field]).hex()
    return json.dumps(doc).encode()


# --- waiting -------------------------------------------------------------------------------


# --- reading what the collector kept -------------------------------------------------------


def stored_keys(db_path: str | Path) -> Counter:
    """(trace_id, span_id) -> rows in the `spans` table of a STOPPED collector's file."""
    import duckdb

    con = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = con.execute("SELECT trace_id, span_id FROM spans").fetchall()
    finally:
        con.close()
    return Counter((t, s) for t, s in rows)


# --- servers the shim meets when its collector misbehaves ----------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port_url() -> str:
    """A loopback URL where nothing listens (the port was free a moment ago)."""
    return f"http://127.0.0.1:{free_port()}"


class FaultServer:
    """A real OTLP/HTTP endpoint on loopback that answers the way `mode` says.

    - `ok`: 200 at once, counting the spans it decoded (`spans_received`);
    - `slow`: reads the body, sleeps `delay_s`, then answers 200 (a collector that is
      up but stalled — the exporter's timeout is what ends the wait);
    - `unavailable`: 503 with `Retry-After: 1`, which OTLP exporters retry.
    """

    def __init__(self, mode: str, *, delay_s: float = 2.0) -> None:
        if mode not in ("ok", "slow", "unavailable"):
            raise ValueError(mode)
        self.mode = mode
        self.delay_s = delay_s
        self.requests = 0
        self.spans_received = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.requests += 1
                if server.mode == "slow":
                    server._closing.wait(server.delay_s)
                if server.mode == "unavailable":
                    self._answer(503, {"Retry-After": "1"})
                    return
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                parsed = ExportTraceServiceRequest.FromString(body)
                with server._lock:
                    server.spans_received += len(span_keys(parsed))
                self._answer(200, {})

            def _answer(self, status: int, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", PROTOBUF)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the exporter gave up (its timeout) and closed the connection

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
