"""configure(): environment honoured, bounded queue counts drops, a dead endpoint never hurts the app."""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from handoffscope.instrumentation import HandoffRecorder, configure, stats
from handoffscope.instrumentation.processor import (
    DEFAULT_MAX_QUEUE_SIZE,
    DEFAULT_SCHEDULE_DELAY_MS,
    BoundedBatchSpanProcessor,
)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def processor_of(provider) -> BoundedBatchSpanProcessor:
    (proc,) = provider._active_span_processor._span_processors
    assert isinstance(proc, BoundedBatchSpanProcessor)
    return proc


def test_defaults_fit_the_burst_target() -> None:
    assert DEFAULT_SCHEDULE_DELAY_MS <= 500
    assert DEFAULT_MAX_QUEUE_SIZE >= 10_000 * 2 * 2.5  # 10k handoffs/s for 2 s, ~2.5 spans each


class _Capture(BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, str]]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        _Capture.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_environment_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Capture.seen.clear()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "refund-bot")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=payments")
    monkeypatch.setenv("HANDOFFSCOPE_TOKEN", "s3cret")
    provider = configure(set_global=False)
    try:
        assert provider.resource.attributes["service.name"] == "refund-bot"
        assert isinstance(processor_of(provider).span_exporter, HttpExporter)
        HandoffRecorder(provider).run_started("r")
        provider.force_flush()
        path, headers = _Capture.seen[0]
        assert path == "/v1/traces"
        assert headers["x-team"] == "payments"
        assert headers["authorization"] == "Bearer s3cret"
    finally:
        provider.shutdown()
        server.shutdown()


def test_grpc_is_selectable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    provider = configure(endpoint=f"http://127.0.0.1:{closed_port()}", set_global=False)
    try:
        assert isinstance(processor_of(provider).span_exporter, GrpcExporter)
    finally:
        provider.shutdown()


def test_endpoint_without_scheme_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs a scheme"):
        configure(endpoint="127.0.0.1:4318", set_global=False)


def test_unknown_protocol_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unsupported OTLP protocol 'http/json'"):
        configure(protocol="http/json", set_global=False)


class BlockedExporter(SpanExporter):
    """An exporter stuck on a slow network: a real SpanExporter that waits for a signal."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(10)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def test_full_queue_drops_and_counts_without_blocking() -> None:
    stats.reset()
    exporter = BlockedExporter()
    provider = configure(
        exporter=exporter, max_queue_size=10, max_export_batch_size=5, set_global=False
    )
    recorder = HandoffRecorder(provider)
    for i in range(100):
        recorder.handoff_requested("r", f"h{i}", from_agent="a", to_agent="b")
    dropped = stats.snapshot()["spans_dropped"]
    assert dropped > 0
    exporter.release.set()
    provider.force_flush()
    provider.shutdown()
    assert exporter.exported + dropped == 100  # every span either exported or counted


def test_exit_does_not_wait_for_a_stuck_exporter() -> None:
    """shutdown() gives up after its timeout; what never left is counted, not waited for."""
    stats.reset()
    exporter = BlockedExporter()  # stuck until shutdown() releases it
    provider = configure(
        exporter=exporter, max_export_batch_size=5, shutdown_timeout_ms=100, set_global=False
    )
    recorder = HandoffRecorder(provider)
    for i in range(50):
        recorder.handoff_requested("r", f"h{i}", from_agent="a", to_agent="b")
    provider.shutdown()
    processor_of(provider)._batch_processor._worker_thread.join(10)
    dropped = stats.snapshot()["spans_dropped"]
    assert dropped > 0  # the SDK's own shutdown would have waited and exported them all
    assert exporter.exported + dropped == 50


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_dead_endpoint_never_raises(protocol: str) -> None:
    stats.reset()
    provider = configure(
        endpoint=f"http://127.0.0.1:{closed_port()}",
        protocol=protocol,
        timeout=0.5,
        set_global=False,
    )
    recorder = HandoffRecorder(provider)
    for i in range(50):
        recorder.handoff_requested("r", f"h{i}", from_agent="a", to_agent="b", turn=i)
        recorder.handoff_accepted("r", f"h{i}", agent="b")
    provider.force_flush()
    provider.shutdown()
    snap = stats.snapshot()
    assert snap["spans_emitted"] == 100
    assert snap["errors"] == 0
