"""OTLP/gRPC ingest into the real collector: the SDK's gRPC exporter, raw calls for errors."""

from __future__ import annotations

import grpc
from ingest_support import encode, handoff, read_db, span_keys
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from handoffscope.instrumentation import semconv as sc

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def raw_export(collector, body: bytes, metadata=()) -> bytes:
    """One Export call with a hand-made payload (bytes in, bytes out)."""
    with grpc.insecure_channel(collector.grpc_endpoint) as channel:
        call = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        return call(body, metadata=metadata, timeout=30)


def test_sdk_grpc_exporter_plain_and_gzip(collector, otlp_sender_factory) -> None:
    sender = otlp_sender_factory(collector, "grpc", service="grpc-app")
    handoff(sender, "run-grpc-1")
    assert sender.send() is SpanExportResult.SUCCESS
    assert collector.healthz()["spans_stored"] == 2  # acknowledged after commit

    zipped = otlp_sender_factory(collector, "grpc", service="grpc-app", compression="gzip")
    handoff(zipped, "run-grpc-2")
    assert zipped.send() is SpanExportResult.SUCCESS
    assert collector.healthz()["spans_stored"] == 4
    assert (
        collector.metric("handoffscope_export_requests_total", transport="grpc", result="ok") == 2
    )

    assert collector.stop() == 0
    rows = read_db(collector.store, "SELECT trace_id, span_id, service FROM spans")
    assert {(r[0], r[1]) for r in rows} == span_keys(sender.sent + zipped.sent)
    assert {r[2] for r in rows} == {"grpc-app"}


def test_grpc_partial_success_and_duplicates(collector, otlp_sender_factory) -> None:
    sender = otlp_sender_factory(collector, "grpc")
    handoff(sender, "run-grpc-partial")
    sender.emit("db.query", {sc.RUN_ID: "run-grpc-partial"})
    body = encode(sender.take())

    answer = ExportTraceServiceResponse.FromString(raw_export(collector, body))
    assert answer.partial_success.rejected_spans == 1
    assert "'db.query'" in answer.partial_success.error_message
    again = ExportTraceServiceResponse.FromString(raw_export(collector, body))
    assert again.partial_success.rejected_spans == 1
    assert collector.healthz()["spans_stored"] == 2  # the retry added nothing
    assert collector.metric("handoffscope_spans_duplicate_total") == 2


def test_grpc_undecodable_payload_is_invalid_argument(collector, otlp_sender_factory) -> None:
    try:
        raw_export(collector, b"\x0a\xff\xff\xff\x0f\x01")
    except grpc.RpcError as exc:
        assert exc.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "protobuf" in exc.details()
    else:
        raise AssertionError("an undecodable payload was accepted")
    sender = otlp_sender_factory(collector, "grpc")
    handoff(sender, "run-after-bad-grpc")
    assert sender.send() is SpanExportResult.SUCCESS
    assert collector.healthz()["spans_stored"] == 2


def test_grpc_message_over_the_limit_is_resource_exhausted(
    collector_factory, otlp_sender_factory
) -> None:
    collector = collector_factory(args=["--max-body-bytes", "4096"])
    sender = otlp_sender_factory(collector, "grpc")
    for i in range(60):
        handoff(sender, f"run-grpc-big-{i}")
    body = encode(sender.take())
    assert len(body) > 4096
    try:
        raw_export(collector, body)
    except grpc.RpcError as exc:
        assert exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    else:
        raise AssertionError("a message over --max-body-bytes was accepted")
    assert collector.healthz()["spans_stored"] == 0
