"""An OTLP trace export read as only what the allowlist looks at, attributes left encoded.

`parse_lean(body)` parses the same protobuf bytes as `ExportTraceServiceRequest` into a
message type declared here, wire-compatible with it field for field, in which
- a span keeps its ids, name, start and end time,
- its attributes and events stay what they are on the wire: one `bytes` each (an encoded
  `KeyValue`, an encoded `Span.Event`),
- a resource and a scope stay their encoded bytes too (parsed once per resource or scope),
- a span's links and status stay bytes, parsed only to check them when present,
- every string field is declared as a string, so its UTF-8 is checked as the full parse
  checks it; every other field (kind, parent id, flags, counts) is skipped as unknown.

Why: reading an attribute through the full message costs three objects (the `KeyValue`,
its `AnyValue`, the string) and several attribute lookups — ≈2 µs an attribute, ≈19 µs
a span of 7 attributes, most of the allowlist's time (profiled, docs/storage.md). As
bytes it is one object, and the same encoded attribute (`handoff.from_agent = "triage"`)
recurs across spans and exports, so the allowlist decides it once and looks the answer up
by its bytes (`processor/allowlist.py`).

Read this way alone, an export is accepted exactly when the full message would parse:
what the lean parse leaves as bytes (resource, scope, attributes, events, links, status)
is parsed by the allowlist for every span it keeps, and an export with a span refused
before its bytes were read is parsed whole once more to check them
(`pipeline.ExportHandler.read_protobuf`; a property test compares the two parses on
broken bodies). So the shim's own exports, which no translator claims, are parsed once,
not twice (≈ 1 µs a span, ≈ 0.7–1 ms of a 512-span export's answer).

Repeated singular fields merge as protobuf merges them: the last scalar wins, and a
resource, scope or status sent in several pieces is kept as every piece (they are
repeated here); `merged` parses each piece and merges them, as the full parse does (their
concatenation would parse a truncated piece together with the next one).
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "handoffscope.lean"
_F = descriptor_pb2.FieldDescriptorProto


def _declare() -> descriptor_pb2.FileDescriptorProto:
    # Field numbers are opentelemetry/proto/trace/v1/trace.proto's; names are kept too,
    # so the code reading these messages reads like code reading the real ones.
    file = descriptor_pb2.FileDescriptorProto(
        name="handoffscope/lean_trace.proto", package=_PACKAGE, syntax="proto3"
    )

    def message(name: str, *fields: tuple[str, int, int, bool, str | None]) -> None:
        declared = file.message_type.add(name=name)
        for field_name, number, type_, repeated, type_name in fields:
            field = declared.field.add(
                name=field_name,
                number=number,
                type=type_,  # type: ignore[arg-type]
                label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL,
            )
            if type_name:
                field.type_name = f".{_PACKAGE}.{type_name}"

    message(
        "ExportTraceServiceRequest", ("resource_spans", 1, _F.TYPE_MESSAGE, True, "ResourceSpans")
    )
    message(
        "ResourceSpans",
        ("resource", 1, _F.TYPE_BYTES, True, None),
        ("scope_spans", 2, _F.TYPE_MESSAGE, True, "ScopeSpans"),
        ("schema_url", 3, _F.TYPE_STRING, False, None),
    )
    message(
        "ScopeSpans",
        ("scope", 1, _F.TYPE_BYTES, True, None),
        ("spans", 2, _F.TYPE_MESSAGE, True, "Span"),
        ("schema_url", 3, _F.TYPE_STRING, False, None),
    )
    message(
        "Span",
        ("trace_id", 1, _F.TYPE_BYTES, False, None),
        ("span_id", 2, _F.TYPE_BYTES, False, None),
        ("trace_state", 3, _F.TYPE_STRING, False, None),
        ("name", 5, _F.TYPE_STRING, False, None),
        ("start_time_unix_nano", 7, _F.TYPE_FIXED64, False, None),
        ("end_time_unix_nano", 8, _F.TYPE_FIXED64, False, None),
        ("attributes", 9, _F.TYPE_BYTES, True, None),
        ("events", 11, _F.TYPE_BYTES, True, None),
        ("links", 13, _F.TYPE_BYTES, True, None),
        ("status", 15, _F.TYPE_BYTES, True, None),
    )
    return file


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_declare())
LeanExport = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName(f"{_PACKAGE}.ExportTraceServiceRequest")
)


def parse_lean(body: bytes | bytearray):
    """`body` (an encoded ExportTraceServiceRequest) as a `LeanExport`."""
    return LeanExport.FromString(bytes(body) if isinstance(body, bytearray) else body)


def merged(message_class, pieces):
    """The message a singular field sent in `pieces` parses to (protobuf's DecodeError if a
    piece does not parse)."""
    message = message_class()
    for piece in pieces:
        message.MergeFromString(piece)
    return message
