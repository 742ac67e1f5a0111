"""Bearer auth when HANDOFFSCOPE_TOKEN is set: ingest (HTTP and gRPC), /metrics and the
query API require it; /healthz does not. Without the variable, nothing does."""

from __future__ import annotations

import grpc
import httpx
from ingest_support import encode, handoff
from opentelemetry.sdk.trace.export import SpanExportResult

TOKEN = "s3cret-token-for-tests"


def test_token_guards_ingest_metrics_and_api(collector_factory, otlp_sender_factory) -> None:
    collector = collector_factory(env={"HANDOFFSCOPE_TOKEN": TOKEN})
    assert "auth=on" in collector.log()

    anonymous = otlp_sender_factory(collector, "http", token="")
    handoff(anonymous, "run-anon")
    body = encode(anonymous.pending())
    assert anonymous.send() is SpanExportResult.FAILURE
    assert collector.post_traces(body, token="").status_code == 401
    wrong = collector.post_traces(body, token="not-it")
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Bearer")

    grpc_anonymous = otlp_sender_factory(collector, "grpc", token="")
    handoff(grpc_anonymous, "run-anon-grpc")
    assert grpc_anonymous.send() is SpanExportResult.FAILURE
    with grpc.insecure_channel(collector.grpc_endpoint) as channel:
        export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=None,
            response_deserializer=None,
        )
        try:
            export(body, metadata=(("authorization", "Bearer nope"),), timeout=30)
        except grpc.RpcError as exc:
            assert exc.code() is grpc.StatusCode.UNAUTHENTICATED
        else:
            raise AssertionError("gRPC export without the token was accepted")
    assert collector.healthz()["spans_stored"] == 0
    # OTLP logs and metrics are thrown away, but only for a sender with the token.
    for path in ("/v1/logs", "/v1/metrics"):
        headers = {"Content-Type": "application/x-protobuf"}
        assert httpx.post(collector.http_endpoint + path, headers=headers).status_code == 401
        with_token = {**headers, "Authorization": f"Bearer {TOKEN}"}
        assert httpx.post(collector.http_endpoint + path, headers=with_token).status_code == 200
    with grpc.insecure_channel(collector.grpc_endpoint) as channel:
        logs = channel.unary_unary(
            "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
            request_serializer=None,
            response_deserializer=None,
        )
        try:
            logs(b"", metadata=(("authorization", "Bearer nope"),), timeout=30)
        except grpc.RpcError as exc:
            assert exc.code() is grpc.StatusCode.UNAUTHENTICATED
        else:
            raise AssertionError("gRPC logs export without the token was accepted")

    for path in ("/metrics", "/api/v1/runs", "/api/v1/live", "/openapi.json"):
        response = httpx.get(collector.http_endpoint + path, timeout=30)
        assert response.status_code == 401, path
        assert "error" in response.json()
    assert httpx.get(collector.http_endpoint + "/healthz", timeout=30).status_code == 200

    # With the token everything works.
    sender = otlp_sender_factory(collector, "http")  # takes the collector's token
    handoff(sender, "run-auth-http")
    assert sender.send() is SpanExportResult.SUCCESS
    grpc_sender = otlp_sender_factory(collector, "grpc")
    handoff(grpc_sender, "run-auth-grpc")
    assert grpc_sender.send() is SpanExportResult.SUCCESS
    assert collector.get("/metrics").status_code == 200
    assert collector.healthz()["spans_stored"] == 4
    assert (
        collector.metric(
            "handoffscope_export_requests_total", transport="http", result="unauthorized"
        )
        == 3
    )


def test_without_a_token_nothing_asks_for_one(collector, otlp_sender_factory) -> None:
    assert "auth=off" in collector.log()
    sender = otlp_sender_factory(collector, "http")
    handoff(sender, "run-open")
    assert sender.send() is SpanExportResult.SUCCESS
    assert httpx.get(collector.http_endpoint + "/metrics", timeout=30).status_code == 200
