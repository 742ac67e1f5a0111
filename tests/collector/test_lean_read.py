"""An export's protobuf bytes read once, the lean way, give what the full parse gives.

`ExportHandler.read_protobuf` skips the full parse of exports no translator claims
(pipeline.py). These properties hold it equal to `read` over the full parse: the same
kept columns, counts, drops and refusals for every body the full parse accepts, and a
`DecodeError` for exactly the bodies it refuses — broken bytes, and well-framed bodies
with one malformed part in each place the lean read leaves as bytes (a resource, a
scope, an attribute, an event, a link, a status) or checks as text (trace state, schema
URLs), in spans that are kept and in spans refused before their parts are read.
"""

from __future__ import annotations

from dataclasses import asdict

import pytest
from google.protobuf.message import DecodeError as ProtobufDecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from support.evidence import request_attributes
from support.otlp import export_request, otlp_span

from handoffscope.collector.metrics import Metrics
from handoffscope.collector.otlp.decode import DecodeError
from handoffscope.collector.pipeline import ExportHandler
from handoffscope.collector.processor.allowlist import Allowlist
from handoffscope.instrumentation import semconv as sc

# The writer is not used by `read`/`read_protobuf` (they stop before queueing).
_NO_WRITER = None


def _handler() -> ExportHandler:
    return ExportHandler(Allowlist(), _NO_WRITER, Metrics())  # type: ignore[arg-type]


def _outcome(read, body: bytes) -> object:
    try:
        return asdict(read(body))
    except DecodeError:
        return "400"


def _full(body: bytes) -> object:
    handler = _handler()
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except ProtobufDecodeError:
        return "400"
    return _outcome(lambda b: handler.read(request, b), body)


def _lean(body: bytes) -> object:
    return _outcome(_handler().read_protobuf, body)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field, as it is on the wire."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


# Payloads for a length-delimited part: well-formed ones, and bytes that do not parse as a
# message (a truncated varint, a wrong wire type, a length past the end) or as UTF-8.
_BAD = [b"\x80", b"\x0a\x05ab", b"\x0f", b"\x12\xff\xff\xff\xff\x0f", b"\xff\xfe", b"\xc3\x28"]
_PAYLOADS = st.one_of(st.sampled_from(_BAD), st.binary(max_size=12))
_SPAN_PARTS = {  # Span field numbers the lean read leaves as bytes or checks as text
    "trace_state": 3,
    "attribute": 9,
    "event": 11,
    "link": 13,
    "status": 15,
}


@st.composite
def _span(draw) -> bytes:
    name = draw(st.sampled_from([sc.SPAN_REQUEST, sc.SPAN_ACCEPT, "llm.call"]))
    run_id = draw(st.sampled_from(["run-1", "run-2", None]))
    attributes = request_attributes(run_id, "h1") if run_id else {sc.HANDOFF_ID: "h1"}
    span = otlp_span(name, attributes, error=draw(st.sampled_from(["", "boom"])))
    if draw(st.booleans()):
        span.events.add(name="e", time_unix_nano=1).attributes.add(key="k").value.int_value = 1
    if draw(st.booleans()):
        span.links.add(trace_id=span.trace_id, span_id=span.span_id)
    if draw(st.booleans()):  # out of the sane time window: refused before its parts are read
        span.start_time_unix_nano = span.end_time_unix_nano = 1
    encoded = span.SerializeToString()
    if draw(st.booleans()):
        part = draw(st.sampled_from(sorted(_SPAN_PARTS)))
        encoded += _field(_SPAN_PARTS[part], draw(_PAYLOADS))
    return encoded


@st.composite
def _export(draw) -> bytes:
    spans = draw(st.lists(_span(), min_size=1, max_size=4))
    scope = ScopeSpans()
    if draw(st.booleans()):
        scope.scope.name = "handoffscope"
    scope_bytes = scope.SerializeToString() + b"".join(_field(2, s) for s in spans)
    resource = ResourceSpans()
    resource.resource.attributes.add(key=sc.SERVICE_NAME).value.string_value = "svc"
    resource_bytes = resource.SerializeToString() + _field(2, scope_bytes)
    where = draw(st.sampled_from(["", "resource", "scope", "scope schema", "resource schema"]))
    if where:
        bad = draw(_PAYLOADS)
        if where == "resource":
            resource_bytes += _field(1, bad)
        elif where == "resource schema":
            resource_bytes += _field(3, bad)
        elif where == "scope":
            resource_bytes = resource.SerializeToString() + _field(2, _field(1, bad) + scope_bytes)
        else:
            resource_bytes = resource.SerializeToString() + _field(2, scope_bytes + _field(3, bad))
    return _field(1, resource_bytes)


_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


@_SETTINGS
@given(_export())
def test_a_malformed_part_anywhere_is_refused_as_the_full_parse_refuses_it(body: bytes) -> None:
    assert _lean(body) == _full(body)


_VALID = export_request(
    [
        otlp_span(sc.SPAN_REQUEST, request_attributes("run-v", "h1")),
        otlp_span("llm.call", {"gen_ai.prompt": "x"}),
        otlp_span(sc.SPAN_ACCEPT, {sc.RUN_ID: "run-v", sc.DESTINATION_STARTED: True}),
    ]
).SerializeToString()


@_SETTINGS
@given(
    st.one_of(
        st.integers(0, len(_VALID) - 1).map(lambda k: _VALID[:k]),
        st.tuples(st.integers(0, len(_VALID) - 1), st.integers(1, 255)).map(
            lambda t: _VALID[: t[0]] + bytes([_VALID[t[0]] ^ t[1]]) + _VALID[t[0] + 1 :]
        ),
        st.tuples(st.integers(0, len(_VALID)), st.binary(min_size=1, max_size=16)).map(
            lambda t: _VALID[: t[0]] + t[1] + _VALID[t[0] :]
        ),
    )
)
def test_broken_bytes_get_what_the_full_parse_gives(body: bytes) -> None:
    assert _lean(body) == _full(body)


def _one_span_export(span: bytes) -> bytes:
    """An export of one resource (no attributes), one scope and this encoded span."""
    return _field(1, _field(2, _field(2, span)))


def test_the_lean_read_really_finds_the_malformed_parts() -> None:
    # The properties above would pass if both sides refused everything: a kept span must
    # stay kept, and each malformed part alone in it must make the export a 400.
    span = otlp_span(sc.SPAN_REQUEST, request_attributes("run-1", "h1")).SerializeToString()
    intact = _lean(_one_span_export(span))
    assert intact == _full(_one_span_export(span))
    assert isinstance(intact, dict) and intact["count"] == 1
    for part, number in _SPAN_PARTS.items():
        broken = _one_span_export(span + _field(number, b"\x80"))
        assert _full(broken) == "400", part
        assert _lean(broken) == "400", part


@pytest.mark.parametrize("claimed", [False, True])
def test_a_claimed_scope_still_goes_through_its_translator(claimed: bool) -> None:
    handler = _handler()
    scope = next(iter(handler.translators.scopes)) if claimed else "someone.else"
    body = export_request([otlp_span("agent run", {"x": 1})], scope=scope).SerializeToString()
    batch = handler.read_protobuf(body)
    assert asdict(batch) == asdict(_handler().read(ExportTraceServiceRequest.FromString(body)))
    # A claimed scope's span is translated (absorbed: no evidence in it); an unclaimed
    # one's is refused by name.
    assert (batch.received, batch.rejected) == ((1, 0) if claimed else (1, 1))
