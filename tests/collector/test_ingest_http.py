"""OTLP/HTTP ingest into the real collector: encodings, errors, partial success, idempotence.

Everything goes over real HTTP into a real collector process with a real DuckDB file;
spans are made by the real OTel SDK and sent by its real OTLP exporter where it can send
them (it speaks protobuf only), as raw bodies where the test needs a precise payload.
"""

from __future__ import annotations

import gzip
import json
import threading

from google.rpc import code_pb2, status_pb2
from ingest_support import encode, handoff, json_body, read_db, span_keys, to_otlp_json
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from handoffscope.instrumentation import semconv as sc

PB = "application/x-protobuf"
JSON = "application/json"


def test_sdk_exporter_protobuf_is_stored_before_the_200(collector, otlp_sender_factory) -> None:
    sender = otlp_sender_factory(collector, "http")
    handoff(sender, "run-pb-1")
    assert sender.send() is SpanExportResult.SUCCESS
    # No waiting: the 200 came after the commit, so the count already includes them.
    assert collector.healthz()["spans_stored"] == 2
    assert collector.metric("handoffscope_spans_stored_total") == 2

    assert collector.stop() == 0
    rows = read_db(
        collector.store,
        "SELECT trace_id, span_id, name, service, handoff_run_id, handoff_turn, "
        "handoff_route_declared, handoff_context_required_keys, handoff_destination_started "
        "FROM spans ORDER BY name DESC",
    )
    assert {(r[0], r[1]) for r in rows} == span_keys(sender.sent)
    request, accept = rows
    assert request[2:] == (
        sc.SPAN_REQUEST,
        "test-app",
        "run-pb-1",
        1,
        True,
        ["account_id", "invoice_id"],
        None,
    )
    assert accept[2:] == (sc.SPAN_ACCEPT, "test-app", "run-pb-1", None, None, None, True)


def test_sdk_exporter_gzip_is_accepted(collector, otlp_sender_factory) -> None:
    sender = otlp_sender_factory(collector, "http", compression="gzip")
    handoff(sender, "run-gz-1")
    assert sender.send() is SpanExportResult.SUCCESS
    assert collector.healthz()["spans_stored"] == 2


def test_json_plain_and_gzip_with_hex_ids(collector, otlp_sender_factory) -> None:
    sender = otlp_sender_factory(collector, "http", service="json-app")
    handoff(sender, "run-json-1")
    plain = sender.take()
    response = collector.post_traces(json_body(plain), JSON)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(JSON)
    assert response.json() == {}  # no partial_success: everything was accepted

    handoff(sender, "run-json-2")
    zipped = sender.take()
    response = collector.post_traces(
        gzip.compress(json_body(zipped)), JSON, headers={"Content-Encoding": "gzip"}
    )
    assert response.status_code == 200, response.text
    assert collector.healthz()["spans_stored"] == 4

    assert collector.stop() == 0
    stored = read_db(collector.store, "SELECT trace_id, span_id, service, handoff_turn FROM spans")
    assert {(r[0], r[1]) for r in stored} == span_keys(plain + zipped)
    assert {r[2] for r in stored} == {"json-app"}
    assert sorted(r[3] for r in stored if r[3] is not None) == [1, 1]  # intValue "1" -> BIGINT


def test_partial_success_refuses_non_evidence_and_keeps_the_rest(
    collector, otlp_sender_factory
) -> None:
    sender = otlp_sender_factory(collector, "http")
    handoff(sender, "run-partial-1")
    sender.emit("openai.chat", {sc.RUN_ID: "run-partial-1"})  # another instrumentation's span
    sender.emit(sc.SPAN_REQUEST, {sc.HANDOFF_ID: "orphan", sc.TO_AGENT: "billing"})  # no run id
    sender.emit(sc.SPAN_REQUEST, {sc.RUN_ID: "has a space but fine", sc.TO_AGENT: "x"})
    spans = sender.pending()
    valid = [spans[0], spans[1], spans[4]]

    response = collector.post_traces(encode(spans), PB)
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 2
    message = answer.partial_success.error_message
    assert "'openai.chat'" in message and sc.SPAN_REQUEST in message
    assert sc.RUN_ID in message
    assert collector.healthz()["spans_stored"] == 3
    assert collector.metric("handoffscope_spans_rejected_total") == 2

    # Same over JSON, answered in JSON.
    response = collector.post_traces(json.dumps(to_otlp_json(spans)).encode(), JSON)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 2 and "openai.chat" in partial["errorMessage"]

    assert collector.stop() == 0
    stored = read_db(collector.store, "SELECT trace_id, span_id FROM spans")
    assert set(stored) == span_keys(valid)


def test_malformed_payloads_get_400_and_the_collector_keeps_working(
    collector, otlp_sender_factory
) -> None:
    # A length-delimited field claiming more bytes than the body has: not protobuf.
    response = collector.post_traces(b"\x0a\xff\xff\xff\x0f\x01", PB)
    assert response.status_code == 400
    status = status_pb2.Status.FromString(response.content)
    assert status.code == code_pb2.INVALID_ARGUMENT and "protobuf" in status.message

    response = collector.post_traces(b'{"resourceSpans": [', JSON)
    assert response.status_code == 400
    assert response.json()["code"] == code_pb2.INVALID_ARGUMENT
    assert "not JSON" in response.json()["message"]

    response = collector.post_traces(b'{"resourceSpans": [{"scopeSpans": 7}]}', JSON)
    assert response.status_code == 400, response.text

    response = collector.post_traces(b"\x1f\x8b not gzip", PB, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 400

    # A span with an id that is not hex is refused alone; its neighbour is stored.
    sender = otlp_sender_factory(collector, "http")
    handoff(sender, "run-badid-1")
    doc = to_otlp_json(sender.take())
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "not-hex!"
    response = collector.post_traces(json.dumps(doc).encode(), JSON)
    assert response.status_code == 200, response.text
    assert int(response.json()["partialSuccess"]["rejectedSpans"]) == 1
    assert collector.healthz()["spans_stored"] == 1

    # ...and a good export right after is stored as usual.
    handoff(sender, "run-after-bad")
    assert sender.send() is SpanExportResult.SUCCESS
    assert collector.healthz()["spans_stored"] == 3
    assert (
        collector.metric(
            "handoffscope_export_requests_total", transport="http", result="bad_request"
        )
        == 4
    )


def test_unknown_content_type_and_encoding_get_415(collector, otlp_sender_factory) -> None:
    sender = otlp_sender_factory(collector, "http")
    handoff(sender, "run-415")
    body = encode(sender.pending())
    response = collector.post_traces(body, "text/plain")
    assert response.status_code == 415
    assert "application/x-protobuf" in response.json()["message"]
    response = collector.post_traces(body, PB, headers={"Content-Encoding": "br"})
    assert response.status_code == 415
    assert collector.healthz()["spans_stored"] == 0


def test_bodies_over_the_limit_get_413(collector_factory, otlp_sender_factory) -> None:
    collector = collector_factory(args=["--max-body-bytes", "4096"])
    sender = otlp_sender_factory(collector, "http")
    for i in range(60):
        handoff(sender, f"run-big-{i}")
    big = encode(sender.pending())
    assert len(big) > 4096

    # by Content-Length
    assert collector.post_traces(big, PB).status_code == 413
    # while reading a chunked body (no Content-Length to go by)
    import httpx

    response = httpx.post(
        collector.http_endpoint + "/v1/traces",
        content=iter([big[i : i + 1000] for i in range(0, len(big), 1000)]),
        headers={"Content-Type": PB},
    )
    assert response.status_code == 413
    # a small gzip body that inflates past the limit (a "zip bomb")
    small = gzip.compress(bytes(1_000_000))
    assert len(small) < 4096
    response = collector.post_traces(small, PB, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 413
    status = status_pb2.Status.FromString(response.content)
    assert "max-body-bytes" in status.message
    assert collector.healthz()["spans_stored"] == 0


def test_the_same_export_sent_twice_is_stored_once(collector, otlp_sender_factory) -> None:
    sender = otlp_sender_factory(collector, "http")
    for i in range(5):
        handoff(sender, f"run-dup-{i}")
    spans = sender.pending()
    assert sender.send(spans) is SpanExportResult.SUCCESS
    assert sender.send(spans) is SpanExportResult.SUCCESS  # a retry of an acknowledged export
    assert collector.healthz()["spans_stored"] == 10
    assert collector.metric("handoffscope_spans_duplicate_total") == 10

    # Eight copies at once, so several land in one group commit: still once each.
    others = otlp_sender_factory(collector, "http")
    for i in range(5):
        handoff(others, f"run-burst-{i}")
    body = encode(others.pending())
    codes: list[int] = []
    threads = [
        threading.Thread(target=lambda: codes.append(collector.post_traces(body, PB).status_code))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes == [200] * 8
    assert collector.healthz()["spans_stored"] == 20

    assert collector.stop() == 0
    count, distinct = read_db(
        collector.store, "SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans"
    )[0]
    assert count == distinct == 20


def test_metrics_count_received_spans_and_dropped_attributes(
    collector, otlp_sender_factory
) -> None:
    # That docs/api.md lists exactly the families served (notifier ones included) is
    # tests/alerts/test_health_metrics.py::test_docs_list_exactly_the_families_served.
    sender = otlp_sender_factory(collector, "http")
    handoff(sender, "run-metrics")
    sender.emit(sc.SPAN_ACCEPT, {sc.RUN_ID: "run-metrics", "gen_ai.prompt": "x"})
    assert sender.send() is SpanExportResult.SUCCESS
    assert (
        collector.metric(
            "handoffscope_attributes_dropped_total", service="test-app", attribute="gen_ai.prompt"
        )
        == 1
    )
    assert collector.metric("handoffscope_spans_received_total") == 3
    assert collector.metric("handoffscope_queue_depth") == 0
