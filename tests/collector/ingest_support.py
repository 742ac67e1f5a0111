"""Helpers for the ingest tests (fixtures live in tests/conftest.py).

- `handoff(sender, run_id, ...)`: record the evidence spans of one healthy handoff;
- `encode(spans)` / `to_otlp_json(spans)`: the OTLP/protobuf and OTLP/JSON bodies of
  spans recorded with the real SDK (JSON ids as hex, per the OTLP/JSON mapping);
- `handoff_body(run_id, service)`: the OTLP/protobuf body of one healthy handoff, recorded
  with the real SDK (for in-process tests that post to the app);
- `read_db(store, sql)`: rows of a collector's store (`collector.store`: its DuckDB file,
  which must be STOPPED first — DuckDB is single-writer across processes — or its
  PostgreSQL database under `--store postgresql`; support/stores.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from support import evidence as ev
from support.otlp import otlp_json_doc
from support.stores import query

from handoffscope.instrumentation import semconv as sc


def handoff(
    sender: Any, run_id: str, handoff_id: str = "h1", frm: str = "triage", to: str = "billing"
) -> None:
    ids = {sc.RUN_ID: run_id, sc.HANDOFF_ID: handoff_id}
    required = {sc.CONTEXT_REQUIRED_KEYS: ["account_id", "invoice_id"]}
    sender.emit(sc.SPAN_REQUEST, {**ids, **ev.request(frm, to, turn=1, **required)})
    sender.emit(sc.SPAN_ACCEPT, {**ids, **ev.accept()})


def encode(spans: Sequence[ReadableSpan]) -> bytes:
    return encode_spans(list(spans)).SerializeToString()


def to_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """OTLP/JSON of `spans`: proto3 JSON with trace/span ids as lowercase hex, enums by
    name (as some senders write them; the receiver takes both)."""
    return otlp_json_doc(encode_spans(list(spans)), integer_enums=False)


def json_body(spans: Sequence[ReadableSpan]) -> bytes:
    return json.dumps(to_otlp_json(spans)).encode()


def read_db(store: str | Path, sql: str, params: object = None) -> list[tuple]:
    return query(store, sql, params)


def span_keys(spans: Sequence[ReadableSpan]) -> set[tuple[str, str]]:
    return {(format(s.context.trace_id, "032x"), format(s.context.span_id, "016x")) for s in spans}


def handoff_body(run_id: str, service: str = "ingest-app") -> bytes:
    """The OTLP/protobuf export body of one healthy handoff, recorded with the real SDK."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("handoffscope.tests")

    class Recorder:
        def emit(self, name: str, attributes: Any) -> None:
            tracer.start_span(name, attributes=attributes).end()

    handoff(Recorder(), run_id)
    return encode(memory.get_finished_spans())
