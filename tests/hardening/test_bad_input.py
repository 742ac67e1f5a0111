"""Bad input: malformed, truncated, oversized, wrongly typed and deeply nested OTLP exports.

Property-based (hypothesis) against the real collector process over OTLP/HTTP (protobuf,
JSON, gzip) and OTLP/gRPC. For every payload the collector answers with an OTLP status —
never a 5xx, never a hang — and stays healthy; what it answers is the status the OTLP
specification gives that kind of input:

| input | HTTP | gRPC |
|---|---|---|
| decodes (whatever it holds) | 200, `partial_success` for refused spans | OK |
| does not decode, truncated gzip, nesting past the decoder's depth | 400 | INVALID_ARGUMENT |
| over `--max-body-bytes` (declared, streamed, or once inflated) | 413 | RESOURCE_EXHAUSTED |
| unknown Content-Type or Content-Encoding | 415 | — |

Mixed exports — spans that keep the contract beside spans that break it in each way the
allowlist refuses — must store exactly the valid spans, once each (checked in the DuckDB
file after a clean stop), and report the others in `partial_success.rejected_spans`.

Fast runs use a few hundred examples (tens of seconds); `make soak` runs thousands.
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from collections.abc import Callable
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from hardening_support import SECOND_NS, stored_keys
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from support.evidence import request_attributes
from support.otlp import (
    JSON,
    PROTOBUF,
    export_request,
    gzipped,
    new_ids,
    otlp_span,
    span_keys,
    to_otlp_json,
)

from handoffscope.instrumentation import semconv as sc

MAX_BODY = 64 * 1024
"""The collector under test runs with --max-body-bytes 64 KiB so oversize is cheap to send."""
EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

FAST_EXAMPLES = 200
SOAK_EXAMPLES = 3000


def hypothesis_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@pytest.fixture(scope="module")
def small_collector(module_collector_factory: Any) -> Any:
    """Shared by the tests that only need the collector to survive and answer right."""
    return module_collector_factory(args=["--max-body-bytes", str(MAX_BODY)])


def valid_request(run_id: str = "run-valid") -> ExportTraceServiceRequest:
    return export_request(
        [
            otlp_span(sc.SPAN_REQUEST, request_attributes(run_id, "h1")),
            otlp_span(
                sc.SPAN_ACCEPT,
                {sc.RUN_ID: run_id, sc.HANDOFF_ID: "h1", sc.DESTINATION_STARTED: True},
            ),
        ]
    )


VALID_PROTO = valid_request().SerializeToString()
VALID_JSON = to_otlp_json(valid_request())


# --- what counts as a well-formed answer -------------------------------------------------


def check_http_answer(response: httpx.Response, content_type: str, allowed: set[int]) -> None:
    assert response.status_code in allowed, (response.status_code, response.content[:300])
    if response.status_code == 200:
        # An OTLP ExportTraceServiceResponse in the request's encoding.
        if content_type == JSON:
            json_format.Parse(response.content, ExportTraceServiceResponse())
        else:
            ExportTraceServiceResponse.FromString(response.content)
        return
    # Every error body is a google.rpc.Status saying what is wrong.
    if response.headers["content-type"].startswith(PROTOBUF):
        message = status_pb2.Status.FromString(response.content).message
    else:
        message = response.json()["message"]
    assert message


def assert_still_healthy(collector: Any) -> None:
    assert collector.running
    assert collector.healthz()["status"] == "ok"


def grpc_export(channel: grpc.Channel) -> Callable[..., bytes]:
    # Raw bytes both ways: the point is to send what no well-behaved client would.
    return channel.unary_unary(EXPORT_METHOD, request_serializer=None, response_deserializer=None)


# --- strategies: broken bytes --------------------------------------------------------------


def broken_bytes(valid: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes, truncations, bit flips, splices and trailing junk of a valid export."""
    n = len(valid)
    return st.one_of(
        st.binary(max_size=2048),
        st.integers(0, n - 1).map(lambda k: valid[:k]),
        st.tuples(st.integers(0, n - 1), st.integers(1, 255)).map(
            lambda t: valid[: t[0]] + bytes([valid[t[0]] ^ t[1]]) + valid[t[0] + 1 :]
        ),
        st.tuples(st.integers(0, n), st.binary(min_size=1, max_size=64)).map(
            lambda t: valid[: t[0]] + t[1] + valid[t[0] :]
        ),
        st.binary(min_size=1, max_size=256).map(lambda junk: valid + junk),
    )


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=40),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _paths(v, (*prefix, i))
    return found


_VALID_DOC = json.loads(VALID_JSON)
_DOC_PATHS = _paths(_VALID_DOC)


def _replace(path: tuple, value: Any) -> bytes:
    doc = json.loads(VALID_JSON)
    if not path:
        return json.dumps(value).encode()
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return json.dumps(doc).encode()


WRONGLY_TYPED_JSON = st.one_of(
    # any node of a valid OTLP/JSON export replaced by any JSON value: wrong types everywhere
    st.tuples(st.sampled_from(_DOC_PATHS), JSON_VALUES).map(lambda t: _replace(*t)),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    broken_bytes(VALID_JSON),
)


# --- properties over HTTP ------------------------------------------------------------------


def run_http_fuzz(collector: Any, examples: int) -> None:
    client = httpx.Client(base_url=collector.http_endpoint, timeout=30)

    @hypothesis_settings(examples)
    @given(
        st.one_of(
            st.tuples(st.just(PROTOBUF), broken_bytes(VALID_PROTO)),
            st.tuples(st.just(JSON), WRONGLY_TYPED_JSON),
        ),
        st.booleans(),
    )
    def property_(case: tuple[str, bytes], compress: bool) -> None:
        content_type, body = case
        headers = {"Content-Type": content_type}
        if compress:
            body = gzipped(body)
            headers["Content-Encoding"] = "gzip"
        response = client.post("/v1/traces", content=body, headers=headers)
        check_http_answer(response, content_type, {200, 400})

    try:
        property_()
    finally:
        client.close()
    assert_still_healthy(collector)


def test_malformed_http_payloads_get_200_or_400_and_collector_stays_up(small_collector) -> None:
    run_http_fuzz(small_collector, FAST_EXAMPLES)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_malformed_http_payloads_soak(small_collector) -> None:
    run_http_fuzz(small_collector, SOAK_EXAMPLES)


def run_grpc_fuzz(collector: Any, examples: int) -> None:
    with grpc.insecure_channel(collector.grpc_endpoint) as channel:
        export = grpc_export(channel)

        @hypothesis_settings(examples)
        @given(broken_bytes(VALID_PROTO))
        def property_(body: bytes) -> None:
            try:
                answer = export(body, timeout=30)
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, (exc.code(), exc.details())
                assert exc.details()
            else:
                ExportTraceServiceResponse.FromString(answer)

        property_()
    assert_still_healthy(collector)


def test_malformed_grpc_payloads_get_ok_or_invalid_argument(small_collector) -> None:
    run_grpc_fuzz(small_collector, FAST_EXAMPLES)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_malformed_grpc_payloads_soak(small_collector) -> None:
    run_grpc_fuzz(small_collector, SOAK_EXAMPLES)


# --- each kind of bad input, and its status ----------------------------------------------


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field, by hand (the encoder refuses deep nesting)."""
    size, varint = len(payload), b""
    while True:
        byte, size = size & 0x7F, size >> 7
        varint += bytes([byte | 0x80 if size else byte])
        if not size:
            return bytes([number << 3 | 2]) + varint + payload


def nested_protobuf(depth: int) -> bytes:
    """A valid export whose one span carries an attribute nested `depth` kvlists deep."""
    value = _field(1, b"leaf")  # AnyValue.string_value
    for _ in range(depth):
        # AnyValue.kvlist_value(6) -> KeyValueList.values(1) -> KeyValue.value(2)
        value = _field(6, _field(1, _field(1, b"k") + _field(2, value)))
    request = valid_request(f"run-deep-{depth}")
    # Concatenated protobuf messages merge: this appends one attribute to span 0.
    span = request.resource_spans[0].scope_spans[0].spans[0].SerializeToString()
    span += _field(9, _field(1, b"deep") + _field(2, value))  # Span.attributes(9)
    del request.resource_spans[0].scope_spans[0].spans[0]
    return request.SerializeToString() + _field(1, _field(2, _field(2, span)))


def nested_json(depth: int) -> bytes:
    # Built as text: json.dumps itself would hit the recursion limit at these depths.
    head = '{"kvlistValue":{"values":[{"key":"k","value":' * depth
    tail = "}]}}" * depth
    doc = json.loads(VALID_JSON)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append(
        {"key": "deep", "value": "@@"}
    )
    return json.dumps(doc).replace('"@@"', head + '{"stringValue":"leaf"}' + tail).encode()


def test_deep_nesting_is_dropped_or_refused_never_a_5xx(small_collector) -> None:
    """Shallow nesting decodes (the attribute is dropped); past the decoder's depth, 400."""
    for depth in (3, 40, 300, 1200):  # 1200: past Python's recursion limit as JSON
        for content_type, body in ((PROTOBUF, nested_protobuf(depth)), (JSON, nested_json(depth))):
            response = small_collector.post_traces(
                gzipped(body), content_type, headers={"Content-Encoding": "gzip"}
            )
            check_http_answer(response, content_type, {200} if depth == 3 else {400})
    # Nesting past Python's recursion limit in no OTLP shape at all.
    body = b"[" * 30_000 + b"]" * 30_000
    response = small_collector.post_traces(
        gzipped(body), JSON, headers={"Content-Encoding": "gzip"}
    )
    check_http_answer(response, JSON, {400})
    with grpc.insecure_channel(small_collector.grpc_endpoint) as channel:
        for depth in (3, 300):
            try:
                ExportTraceServiceResponse.FromString(
                    grpc_export(channel)(nested_protobuf(depth), timeout=30)
                )
                code = grpc.StatusCode.OK
            except grpc.RpcError as exc:
                code = exc.code()
            assert code == (grpc.StatusCode.OK if depth == 3 else grpc.StatusCode.INVALID_ARGUMENT)
    assert_still_healthy(small_collector)


WRONG_HEADERS = [
    ({"Content-Type": "text/plain"}, 415),
    ({"Content-Type": "application/protobuf+garbage"}, 415),
    ({}, 415),
    ({"Content-Type": PROTOBUF, "Content-Encoding": "br"}, 415),
    ({"Content-Type": PROTOBUF, "Content-Encoding": "zstd"}, 415),
    ({"Content-Type": PROTOBUF, "Content-Encoding": "gzip"}, 400),  # not gzip at all
    ({"Content-Type": f"{JSON}; charset=utf-8"}, 400),  # protobuf bytes sent as JSON
]


def raw_post(endpoint: str, head: bytes, body: bytes) -> int:
    """POST with headers no HTTP library will send (a lying Content-Length); the status."""
    host, port = endpoint.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n" + head + b"\r\n" + body)
        status_line = sock.makefile("rb").readline()
    return int(status_line.split()[1])


def test_oversize_truncation_and_wrong_headers_get_their_status(small_collector) -> None:
    url = small_collector.http_endpoint + "/v1/traces"
    for headers, status in WRONG_HEADERS:
        response = httpx.post(url, content=VALID_PROTO, headers=headers, timeout=30)
        assert response.status_code == status, (headers, response.content[:300])
    # A Content-Length far past the limit is refused before any body is read.
    head = f"Content-Type: {PROTOBUF}\r\nContent-Length: 99999999999\r\n".encode()
    assert raw_post(small_collector.http_endpoint, head, VALID_PROTO) == 413

    truncated = gzipped(VALID_PROTO)[:-8]
    response = small_collector.post_traces(
        truncated, PROTOBUF, headers={"Content-Encoding": "gzip"}
    )
    check_http_answer(response, PROTOBUF, {400})

    big = export_request(
        [otlp_span(sc.SPAN_REQUEST, request_attributes("run-big", f"h{i}")) for i in range(2000)]
    ).SerializeToString()
    assert len(big) > MAX_BODY
    # declared by Content-Length
    check_http_answer(small_collector.post_traces(big), PROTOBUF, {413})

    # streamed without a Content-Length (chunked): refused while reading
    def chunks():
        for i in range(0, len(big), 8192):
            yield big[i : i + 8192]

    response = httpx.post(url, content=chunks(), headers={"Content-Type": PROTOBUF}, timeout=30)
    check_http_answer(response, PROTOBUF, {413})
    # small on the wire, huge once inflated (a "zip bomb")
    bomb = gzipped(b"\x00" * (50 * MAX_BODY))
    assert len(bomb) < MAX_BODY
    response = small_collector.post_traces(bomb, PROTOBUF, headers={"Content-Encoding": "gzip"})
    check_http_answer(response, PROTOBUF, {413})
    # over gRPC: gRPC's own receive limit
    with (
        grpc.insecure_channel(small_collector.grpc_endpoint) as channel,
        pytest.raises(grpc.RpcError) as refused,
    ):
        grpc_export(channel)(big, timeout=30)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert_still_healthy(small_collector)


# --- mixed exports: the valid spans are kept, once ----------------------------------------

BROKEN_KINDS = (
    "foreign_name",
    "no_run_id",
    "run_id_wrong_type",
    "run_id_too_long",
    "short_trace_id",
    "zero_span_id",
    "zero_start",
    "time_past_int64",
    "year_2262",
    "year_2100",
    "before_2000",
    "run_id_control_char",
)
KEPT_KINDS = ("valid", "valid_with_junk")


def make_span(kind: str, run_id: str, n: int):
    """A span of `kind`; True if the allowlist must keep it."""
    attrs = request_attributes(run_id, f"h{n}")
    if kind == "valid":
        return otlp_span(sc.SPAN_REQUEST, attrs), True
    if kind == "valid_with_junk":
        # Kept as a span; the wrongly typed contract values and the content are dropped.
        attrs.update(
            {
                sc.TURN: "three",
                sc.ROUTE_DECLARED: "yes",
                sc.CONTEXT_REQUIRED_KEYS: [1, 2],
                sc.TO_AGENT: "x" * 10_000,
                "gen_ai.prompt": "please refund",
                "input.value": b"\x00\x01",
            }
        )
        return otlp_span(sc.SPAN_TRANSFER, attrs), True
    if kind == "foreign_name":
        return otlp_span("openai.chat", attrs), False
    if kind == "no_run_id":
        del attrs[sc.RUN_ID]
        return otlp_span(sc.SPAN_ACCEPT, attrs), False
    if kind == "run_id_wrong_type":
        attrs[sc.RUN_ID] = 12345
        return otlp_span(sc.SPAN_ACCEPT, attrs), False
    if kind == "run_id_too_long":
        attrs[sc.RUN_ID] = "r" * (sc.MAX_ID_LEN + 1)
        return otlp_span(sc.SPAN_REQUEST, attrs), False
    if kind == "run_id_control_char":
        attrs[sc.RUN_ID] = f"{run_id}\n{n}"
        return otlp_span(sc.SPAN_REQUEST, attrs), False
    if kind == "year_2262":  # near the end of int64 nanoseconds
        return otlp_span(sc.SPAN_REQUEST, attrs, start_ns=2**63 - 1001, end_ns=2**63 - 1), False
    if kind == "year_2100":
        at = 4_102_444_800 * SECOND_NS
        return otlp_span(sc.SPAN_REQUEST, attrs, start_ns=at, end_ns=at + 1), False
    if kind == "before_2000":
        return otlp_span(sc.SPAN_REQUEST, attrs, start_ns=SECOND_NS, end_ns=2 * SECOND_NS), False
    trace_id, span_id = new_ids()
    if kind == "short_trace_id":
        return otlp_span(sc.SPAN_REQUEST, attrs, trace_id=trace_id[:7], span_id=span_id), False
    if kind == "zero_span_id":
        return otlp_span(sc.SPAN_REQUEST, attrs, trace_id=trace_id, span_id=bytes(8)), False
    if kind == "zero_start":
        return otlp_span(sc.SPAN_REQUEST, attrs, start_ns=0), False
    if kind == "time_past_int64":
        return otlp_span(sc.SPAN_REQUEST, attrs, end_ns=2**64 - 1), False
    raise AssertionError(kind)


TRANSPORTS = ("proto", "json", "proto+gzip", "json+gzip", "grpc")


def send_mixed(collector: Any, channel: grpc.Channel, transport: str, request) -> int:
    """Send; return partial_success.rejected_spans (the export itself must succeed)."""
    if transport == "grpc":
        answer = ExportTraceServiceResponse.FromString(
            grpc_export(channel)(request.SerializeToString(), timeout=30)
        )
        return answer.partial_success.rejected_spans
    content_type = JSON if transport.startswith("json") else PROTOBUF
    body = to_otlp_json(request) if content_type == JSON else request.SerializeToString()
    headers = {}
    if transport.endswith("+gzip"):
        body, headers = gzipped(body), {"Content-Encoding": "gzip"}
    response = collector.post_traces(body, content_type, headers=headers)
    assert response.status_code == 200, response.content[:300]
    if content_type == JSON:
        answer = json_format.Parse(response.content, ExportTraceServiceResponse())
    else:
        answer = ExportTraceServiceResponse.FromString(response.content)
    if answer.partial_success.rejected_spans:
        assert answer.partial_success.error_message
    return answer.partial_success.rejected_spans


def run_mixed(collector: Any, examples: int) -> None:
    expected: Counter = Counter()
    rejected_total = [0]
    with grpc.insecure_channel(collector.grpc_endpoint) as channel:

        @hypothesis_settings(examples)
        @given(
            st.lists(st.sampled_from(KEPT_KINDS + BROKEN_KINDS), min_size=1, max_size=12),
            st.sampled_from(TRANSPORTS),
            st.integers(0, 10**6),
        )
        def property_(kinds: list[str], transport: str, salt: int) -> None:
            spans, kept = [], []
            for n, kind in enumerate(kinds):
                span, keep = make_span(kind, f"run-mixed-{salt}", n)
                spans.append(span)
                kept.append(keep)
            request = export_request(spans)
            rejected = send_mixed(collector, channel, transport, request)
            assert rejected == kept.count(False)
            rejected_total[0] += rejected
            for key, keep in zip(span_keys(request), kept, strict=True):
                if keep:
                    expected[key] += 1

        property_()
    assert_still_healthy(collector)
    assert collector.metric("handoffscope_spans_rejected_total") == rejected_total[0]
    assert collector.stop() == 0
    assert stored_keys(collector.store) == expected  # every valid span, once; nothing else


def test_mixed_exports_store_exactly_the_valid_spans(collector) -> None:
    run_mixed(collector, 60)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_mixed_exports_soak(collector) -> None:
    run_mixed(collector, 1000)
