"""Never refuse in silence: every source of spans is listed with what became of them.

A team that adds the collector as one more OTLP destination of an app whose
instrumentation no translator reads used to see an empty board and nothing else: the
OTel exporters do not log `partial_success`, the collector logged nothing. Here, with the
real OTel SDK exporters into a real collector subprocess:

- spans of an instrumentation scope that is not evidence are named in the collector's
  log (once per service and scope, not once per export), and `GET /api/v1/sources` lists
  the scope with its refused count, the reason and one sentence of advice, beside the
  shim's own scope, judged; the list survives a restart (it is in the store);
- a scope name that is not a plain identifier is not repeated anywhere (it is the
  sender's text), and a sentinel in the refused spans is in no answer;
- OTLP logs and metrics sent to the same endpoint (HTTP and gRPC) are accepted, thrown
  away and counted: the app's exporter reports success, nothing of them is stored.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.collector import CollectorProcess, otlp_exporter
from support.polling import eventually

from handoffscope.instrumentation import HandoffRecorder
from handoffscope.instrumentation import semconv as sc

SENTINEL = "SOURCES-SENTINEL-5b1e"
HTTPX_SCOPE = "opentelemetry.instrumentation.httpx"
ODD_SCOPE = f"my app's tracer {SENTINEL}"  # free text where a library name belongs


def spans_of(scope: str, service: str, names: list[str]) -> list[Any]:
    """Spans of a real tracer named `scope` (an instrumentation the collector does not read)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(scope)
    for name in names:
        with tracer.start_as_current_span(name, attributes={"http.url": f"/q?{SENTINEL}"}) as s:
            s.add_event("exception", {"exception.message": SENTINEL})
    provider.shutdown()
    return list(memory.get_finished_spans())


def shim_run(collector: CollectorProcess, service: str) -> str:
    """One healthy handoff recorded by the shim's recorder, exported for real."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    recorder = HandoffRecorder(provider)
    run_id = "sources-run-1"
    recorder.run_started(run_id, agent="triage")
    recorder.handoff_requested(run_id, "h1", from_agent="triage", to_agent="billing")
    recorder.handoff_accepted(run_id, "h1", destination_started=True)
    recorder.run_ended(run_id, sc.RUN_STATUS_COMPLETED, final_agent="billing")
    provider.shutdown()
    assert otlp_exporter(collector).export(memory.get_finished_spans()) == SpanExportResult.SUCCESS
    return run_id


@pytest.fixture(scope="module")
def collector(module_collector_factory: Any) -> CollectorProcess:
    return module_collector_factory()


@pytest.fixture(scope="module")
def seeded(collector: CollectorProcess) -> dict[str, Any]:
    shim_run(collector, "support-bot")
    exporter = otlp_exporter(collector)
    # Two exports of the same unread scope: one log line, two exports counted.
    for _ in range(2):
        result = exporter.export(spans_of(HTTPX_SCOPE, "support-bot", ["GET", "POST"]))
        assert result == SpanExportResult.SUCCESS  # refused spans are a partial success
    grpc = otlp_exporter(collector, "grpc")
    assert grpc.export(spans_of(ODD_SCOPE, "billing-bot", ["work"])) == SpanExportResult.SUCCESS

    def listed() -> list[dict[str, Any]] | None:
        sources = collector.api("/api/v1/sources")["sources"]
        return sources if len(sources) >= 3 else None

    return {"sources": eventually(listed, timeout=60)}


def by_scope(sources: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(s["service"], s["scope"]): s for s in sources}


def test_a_scope_no_translator_reads_is_listed_refused_with_why_and_what_to_do(
    seeded: dict[str, Any],
) -> None:
    httpx = by_scope(seeded["sources"])[("support-bot", HTTPX_SCOPE)]
    assert httpx["status"] == "refused"
    assert httpx["spans_received"] == 4 and httpx["evidence_spans"] == 0
    assert httpx["refused_by_reason"] == {"not_evidence": 4}
    assert httpx["translator"] is None
    assert HTTPX_SCOPE in httpx["advice"] and "docs/foreign-spans.md" in httpx["advice"]
    assert httpx["first_seen_at"] <= httpx["last_seen_at"]


def test_the_shims_own_scope_is_listed_judged(seeded: dict[str, Any]) -> None:
    shim = by_scope(seeded["sources"])[("support-bot", sc.INSTRUMENTATION_SCOPE)]
    assert shim["status"] == "judged"
    assert shim["evidence_spans"] == shim["spans_received"] >= 3
    assert shim["refused_spans"] == 0 and shim["advice"].startswith("Judged")


def test_a_scope_name_that_is_not_an_identifier_is_not_repeated(
    collector: CollectorProcess, seeded: dict[str, Any]
) -> None:
    odd = by_scope(seeded["sources"])[("billing-bot", "(unreadable scope)")]
    assert odd["refused_by_reason"] == {"not_evidence": 1}
    answer = collector.get("/api/v1/sources").text
    assert SENTINEL not in answer and ODD_SCOPE not in answer
    assert SENTINEL not in collector.log()


def test_the_log_names_an_unread_scope_once_not_per_export(
    collector: CollectorProcess, seeded: dict[str, Any]
) -> None:
    lines = [line for line in collector.log().splitlines() if HTTPX_SCOPE in line]
    assert len(lines) == 1, lines
    assert "refused 2 spans" in lines[0] and "support-bot" in lines[0]
    assert "/api/v1/sources" in lines[0]


def test_the_translators_this_collector_reads_are_listed(seeded: dict[str, Any], collector) -> None:
    translators = collector.api("/api/v1/sources")["translators"]
    scopes = {scope for t in translators for scope in t["scopes"]}
    assert "openinference.instrumentation.openai_agents" in scopes
    assert all(t["label"] for t in translators)


def test_otlp_logs_and_metrics_are_accepted_discarded_and_counted(
    collector: CollectorProcess, seeded: dict[str, Any]
) -> None:
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
        OTLPMetricExporter as GrpcMetrics,
    )
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import (
        InMemoryLogRecordExporter,
        LogRecordExportResult,
        SimpleLogRecordProcessor,
    )
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult

    resource = Resource.create({"service.name": "support-bot"})
    records = InMemoryLogRecordExporter()
    logs = LoggerProvider(resource=resource)
    logs.add_log_record_processor(SimpleLogRecordProcessor(records))
    app_log = logging.getLogger("sources-test-app")
    app_log.propagate = False
    app_log.addHandler(LoggingHandler(logger_provider=logs))
    app_log.warning("the model said %s", SENTINEL)
    batch = records.get_finished_logs()
    assert batch

    reader = InMemoryMetricReader()
    meters = MeterProvider(resource=resource, metric_readers=[reader])
    meters.get_meter("app").create_counter("tokens").add(7, {"note": SENTINEL})
    data = reader.get_metrics_data()
    assert data is not None

    http_logs = OTLPLogExporter(endpoint=collector.http_endpoint + "/v1/logs")
    http_metrics = OTLPMetricExporter(endpoint=collector.http_endpoint + "/v1/metrics")
    grpc_logs = GrpcLogs(endpoint=collector.grpc_endpoint, insecure=True)
    grpc_metrics = GrpcMetrics(endpoint=collector.grpc_endpoint, insecure=True)
    assert http_logs.export(batch) == LogRecordExportResult.SUCCESS
    assert grpc_logs.export(batch) == LogRecordExportResult.SUCCESS
    assert http_metrics.export(data) == MetricExportResult.SUCCESS
    assert grpc_metrics.export(data) == MetricExportResult.SUCCESS
    for exporter in (http_logs, http_metrics, grpc_logs, grpc_metrics):
        exporter.shutdown()
    logs.shutdown()
    meters.shutdown()

    for transport in ("http", "grpc"):
        for signal in ("logs", "metrics"):
            value = collector.metric(
                "handoffscope_otlp_discarded_total", transport=transport, signal=signal
            )
            assert value == 1, (transport, signal)
    assert "OTLP logs exports received over http are accepted and discarded" in collector.log()
    assert SENTINEL not in collector.get("/metrics").text


def test_sources_survive_a_restart(collector: CollectorProcess, seeded: dict[str, Any]) -> None:
    # Last in the module: it restarts the module's collector.
    before = by_scope(seeded["sources"])[("support-bot", HTTPX_SCOPE)]
    collector.restart()
    after = by_scope(collector.api("/api/v1/sources")["sources"])[("support-bot", HTTPX_SCOPE)]
    assert after["spans_received"] == before["spans_received"] == 4
