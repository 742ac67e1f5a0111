"""The allowlist on decoded exports: what is kept, what is dropped and counted, what is
refused — and its compiled checks agree with `semconv.check_value` on every input."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from support.otlp import export_request, otlp_span

from handoffscope.collector.otlp.values import read_as
from handoffscope.collector.processor.allowlist import (
    EARLIEST_NS,
    MAX_DROP_KEYS,
    OTHER_NAMES,
    REFUSED_TIME_OUT_OF_WINDOW,
    UNKNOWN_SERVICE,
    UNREADABLE_NAME,
    Allowlist,
    compile_check,
)
from handoffscope.instrumentation import semconv as sc

# Values of every kind an attribute can carry, biased toward the contract's edges:
# vocabulary words, codes, over-long strings, free text, 0/False, mixed arrays.
_words = st.sampled_from(
    [
        "",
        "completed",
        "started",
        "invalid",
        "pass",
        "billing",
        "a b",
        "x" * 65,
        "x" * 129,
        "ok-code_1.2:3",
    ]
)
_text = st.one_of(_words, st.text(max_size=140))
_scalar = st.one_of(
    _text.map(lambda s: AnyValue(string_value=s)),
    st.integers(-(2**63), 2**63 - 1).map(lambda n: AnyValue(int_value=n)),
    st.sampled_from([0, 1, -1]).map(lambda n: AnyValue(int_value=n)),
    st.booleans().map(lambda b: AnyValue(bool_value=b)),
    st.floats(allow_nan=False).map(lambda f: AnyValue(double_value=f)),
    st.binary(max_size=8).map(lambda b: AnyValue(bytes_value=b)),
    st.just(AnyValue()),
)


def _array(items: list[AnyValue]) -> AnyValue:
    value = AnyValue()
    value.array_value.values.extend(items)
    return value


_any_value = st.one_of(
    _scalar,
    st.lists(_text.map(lambda s: AnyValue(string_value=s)), max_size=70).map(_array),
    st.lists(_scalar, max_size=4).map(_array),
)


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(sorted(sc.ATTRIBUTES)), value=_any_value)
def test_compiled_checks_equal_check_value(name: str, value: AnyValue) -> None:
    spec = sc.ATTRIBUTES[name]
    expected = sc.check_value(spec, read_as(spec.type, value))
    assert compile_check(spec)(value) == expected


AT_NS = 1_750_000_000 * 10**9
"""2025-06-15: a time inside the window the allowlist accepts."""


def _export(*spans: tuple[str, dict], resource: dict | None = None) -> ExportTraceServiceRequest:
    """Spans of (name, {key: AnyValue}); one resource, `service.name` "svc" by default."""
    built = [
        otlp_span(
            name,
            attributes,
            trace_id=bytes([1]) * 16,
            span_id=(i + 1).to_bytes(8, "big"),
            start_ns=AT_NS,
            end_ns=AT_NS + 10,
        )
        for i, (name, attributes) in enumerate(spans)
    ]
    if resource is None:
        return export_request(built, service="svc")
    return export_request(built, service=None, resource_attributes=resource)


def s(text: str) -> AnyValue:
    return AnyValue(string_value=text)


def test_keeps_contract_values_and_counts_the_rest() -> None:
    batch = Allowlist().process(
        _export(
            (
                sc.SPAN_REQUEST,
                {
                    sc.RUN_ID: s("r1"),
                    sc.TO_AGENT: s("billing"),
                    sc.TURN: AnyValue(int_value=0),
                    sc.ROUTE_DECLARED: AnyValue(bool_value=False),
                    sc.REASON: s("free text is not a code"),
                    "gen_ai.prompt": s("hello"),
                    "bad name with spaces": s("x"),
                },
            ),
            resource={sc.SERVICE_NAME: "svc", "host.name": "box"},
        )
    )
    assert batch.count == 1 and batch.rejected == 0
    row = {name: values[0] for name, values in batch.columns.items()}
    assert row["handoff_run_id"] == "r1" and row["handoff_to_agent"] == "billing"
    assert row["handoff_turn"] == 0 and row["handoff_route_declared"] is False
    assert row["handoff_reason"] is None
    assert row["trace_id"] == "01" * 16 and row["span_id"] == "0000000000000001"
    assert dict(batch.drops) == {
        ("svc", sc.REASON): 1,
        ("svc", "gen_ai.prompt"): 1,
        ("svc", UNREADABLE_NAME): 1,
        ("svc", "host.name"): 1,
    }


def test_refuses_whole_spans_with_reasons_and_keeps_the_others() -> None:
    batch = Allowlist().process(
        _export(
            ("llm.call", {sc.RUN_ID: s("r1")}),
            (
                sc.SPAN_ACCEPT,
                {sc.HANDOFF_ID: s("h1"), sc.DESTINATION_STARTED: AnyValue(bool_value=True)},
            ),
            (sc.SPAN_ACCEPT, {sc.RUN_ID: s(""), sc.DESTINATION_STARTED: AnyValue(bool_value=True)}),
            (sc.SPAN_RUN, {sc.RUN_ID: s("r1"), sc.RUN_STATUS: s("completed")}),
            resource={},
        )
    )
    assert (batch.received, batch.count, batch.rejected) == (4, 1, 3)
    assert batch.columns["name"] == [sc.SPAN_RUN]
    assert batch.columns["service"] == [UNKNOWN_SERVICE]
    # The refused accept span's values did not leak into the kept row.
    assert batch.columns["handoff_destination_started"] == [None]
    assert "refused 3 of 4 spans" in batch.error_message
    assert (
        "'llm.call'" in batch.error_message
        and f"2 with no valid {sc.RUN_ID}" in batch.error_message
    )


def test_drop_labels_are_bounded() -> None:
    allowlist = Allowlist()
    attributes = {f"custom.key_{i}": s("v") for i in range(MAX_DROP_KEYS + 50)}
    attributes[sc.RUN_ID] = s("r1")
    batch = allowlist.process(_export((sc.SPAN_RUN, attributes)))
    assert len(batch.drops) == MAX_DROP_KEYS + 1
    assert batch.drops[("svc", OTHER_NAMES)] == 50


def test_spans_outside_the_time_window_are_refused_one_by_one() -> None:
    now = AT_NS
    day = 86_400 * 10**9
    cases = {
        # (start, end): kept?
        (EARLIEST_NS - 1, now): False,  # 1999-12-31T23:59:59.999999999
        (EARLIEST_NS, EARLIEST_NS + 1): True,
        (now - 1000, now): True,
        (now, now + day): True,  # a sender's clock a day fast: still believed
        (now, now + day + 1): False,
        (4_102_444_800 * 10**9, 4_102_444_800 * 10**9): False,  # 2100-01-01
        (2**63 - 1001, 2**63 - 1): False,  # 2262, the end of int64 nanoseconds
    }
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    for i, (start, end) in enumerate(cases):
        span = ss.spans.add(
            name=sc.SPAN_REQUEST,
            trace_id=bytes([1]) * 16,
            span_id=(i + 1).to_bytes(8, "big"),
            start_time_unix_nano=start,
            end_time_unix_nano=end,
        )
        span.attributes.append(KeyValue(key=sc.RUN_ID, value=s(f"run-{i}")))
    batch = Allowlist(max_clock_skew_s=86_400, clock=lambda: now).process(request)
    kept = [(start, end) for (start, end), keep in cases.items() if keep]
    assert list(zip(batch.columns["start_ns"], batch.columns["end_ns"], strict=True)) == kept
    refused = len(cases) - len(kept)
    assert batch.rejected == refused
    assert batch.refused == {REFUSED_TIME_OUT_OF_WINDOW: refused}
    assert "too far ahead of the collector's clock" in batch.error_message


# --- the allowlist reads encoded attributes and remembers its decisions -----------------
# An oracle over the full protobuf message, written from the rules (semconv.check_value
# on `read_as`), against which the allowlist's reading of the same bytes is compared:
# once cold and once with every decision remembered.

_attribute = st.one_of(
    st.tuples(st.sampled_from(sorted(sc.ATTRIBUTES)), _any_value),
    st.tuples(st.sampled_from(["gen_ai.prompt", "input.value", "bad name"]), _scalar),
)
_span = st.tuples(
    st.sampled_from([*sc.SPAN_NAMES, "llm.call"]),
    st.lists(_attribute, max_size=8),
    st.sampled_from([AT_NS, 0, EARLIEST_NS - 1]),
    st.lists(st.sampled_from(["exception.message", "gen_ai.choice"]), max_size=2),
)


def _random_export(spans: list, service: str) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.add(key=sc.SERVICE_NAME, value=s(service))
    rs.resource.attributes.add(key="host.name", value=s("box"))
    ss = rs.scope_spans.add()
    ss.scope.name = sc.INSTRUMENTATION_SCOPE
    ss.scope.attributes.add(key="scope.extra", value=s("x"))
    for i, (name, attributes, start, events) in enumerate(spans):
        span = ss.spans.add(
            name=name,
            trace_id=bytes([1]) * 16,
            span_id=(i % 3 + 1).to_bytes(8, "big"),
            start_time_unix_nano=start,
            end_time_unix_nano=start + 10,
        )
        for key, value in attributes:
            span.attributes.append(KeyValue(key=key, value=value))
        for key in events:
            span.events.add(name="e").attributes.add(key=key, value=s("SENTINEL-event"))
    return request


def _oracle(request: ExportTraceServiceRequest) -> tuple[list[dict], Counter]:
    rows, drops = [], Counter()
    for rs in request.resource_spans:
        service = next(kv.value.string_value for kv in rs.resource.attributes)
        drops[(service, "host.name")] += 1
        for ss in rs.scope_spans:
            drops[(service, "scope.extra")] += len(ss.scope.attributes)
            for span in ss.spans:
                if span.name not in sc.SPAN_NAMES or span.start_time_unix_nano < EARLIEST_NS:
                    continue
                row: dict = {}
                span_drops: Counter = Counter()
                for kv in span.attributes:
                    spec = sc.ATTRIBUTES.get(kv.key)
                    value = (
                        None if spec is None else sc.check_value(spec, read_as(spec.type, kv.value))
                    )
                    if value is None:
                        label = kv.key if sc.CODE_PATTERN.match(kv.key) else UNREADABLE_NAME
                        span_drops[(service, label)] += 1
                    else:
                        row[kv.key.replace(".", "_")] = value
                for event in span.events:
                    for kv in event.attributes:
                        span_drops[(service, kv.key)] += 1
                drops.update(span_drops)  # a span refused for its run id still counts them
                if row.get("handoff_run_id") is not None:
                    rows.append({"name": span.name, "span_id": span.span_id.hex(), **row})
    return rows, drops


def _rows_of(batch) -> list[dict]:
    names = set(batch.columns) - {"trace_id", "service", "start_ns", "end_ns"}
    return [
        {n: batch.columns[n][i] for n in names if batch.columns[n][i] is not None}
        for i in range(batch.count)
    ]


@settings(max_examples=150, deadline=None)
@given(spans=st.lists(_span, max_size=12), service=st.sampled_from(["svc", "billing-bot"]))
def test_reading_the_encoded_export_equals_the_rules_cold_and_remembered(spans, service) -> None:
    request = _random_export(spans, service)
    rows, drops = _oracle(request)
    allowlist = Allowlist(clock=lambda: AT_NS)
    body = request.SerializeToString()
    for batch in (allowlist.process(request, body=body), allowlist.process(request, body=body)):
        assert _rows_of(batch) == rows
        assert batch.drops == drops
        assert batch.count + batch.rejected == len(spans)
    # What the allowlist remembers is only kept contract values, never dropped content.
    remembered = b"".join(allowlist._decided)
    assert b"SENTINEL" not in remembered and b"gen_ai.prompt" not in remembered


def test_a_resource_sent_in_two_pieces_is_read_as_merged() -> None:
    # Protobuf merges a singular message field given twice; the allowlist must too.
    first = _export((sc.SPAN_RUN, {sc.RUN_ID: s("r1")}), resource={"host.name": "box"})
    body = first.SerializeToString()
    extra = ExportTraceServiceRequest()
    extra.resource_spans.add().resource.attributes.add(key=sc.SERVICE_NAME, value=s("split-svc"))
    # A second `resource` (field 1) appended to the encoded ResourceSpans, by hand.
    piece = extra.resource_spans[0].resource.SerializeToString()
    merged = ExportTraceServiceRequest.FromString(body)
    rs_bytes = merged.resource_spans[0].SerializeToString() + b"\x0a" + bytes([len(piece)]) + piece
    spliced = b"\x0a" + _varint(len(rs_bytes)) + rs_bytes
    request = ExportTraceServiceRequest.FromString(spliced)
    assert request.resource_spans[0].resource.attributes[1].key == sc.SERVICE_NAME
    batch = Allowlist().process(request, body=spliced)
    assert batch.columns["service"] == ["split-svc"]
    assert dict(batch.drops) == {("split-svc", "host.name"): 1}
    assert Allowlist().process(request).columns == batch.columns


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)
