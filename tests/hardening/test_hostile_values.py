"""Values a sender may put on the wire to break the collector for everyone (issue 13,
items 4, 7, 8 and 10): times far from now, run ids with control characters, thousands of
service names. Each is refused or folded per span or per series, counted, and never
costs its neighbours their place in the store.

Real collector process, real OTLP over HTTP (protobuf and JSON) and gRPC.
"""

from __future__ import annotations

import csv
import io
import time
from typing import Any

import grpc
import httpx
from hardening_support import SECOND_NS
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from support.evidence import request_attributes
from support.otlp import JSON, PROTOBUF, export_request, key_values, otlp_span, to_otlp_json

from handoffscope.instrumentation import semconv as sc

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
END_OF_INT64 = 2**63 - 1
YEAR_2100_NS = 4_102_444_800 * SECOND_NS


def refused(collector: Any, reason: str) -> float:
    return collector.metric("handoffscope_spans_refused_total", reason=reason)


def send(collector: Any, transport: str, request: ExportTraceServiceRequest) -> int:
    """Export; assert it succeeded; return partial_success.rejected_spans."""
    if transport == "grpc":
        with grpc.insecure_channel(collector.grpc_endpoint) as channel:
            call = channel.unary_unary(
                EXPORT_METHOD, request_serializer=None, response_deserializer=None
            )
            answer = ExportTraceServiceResponse.FromString(
                call(request.SerializeToString(), timeout=30)
            )
        return answer.partial_success.rejected_spans
    if transport == "json":
        response = collector.post_traces(to_otlp_json(request), JSON)
        assert response.status_code == 200, response.text[:300]
        return int(response.json().get("partialSuccess", {}).get("rejectedSpans", 0))
    response = collector.post_traces(request.SerializeToString(), PROTOBUF)
    assert response.status_code == 200, response.content[:300]
    answer = ExportTraceServiceResponse.FromString(response.content)
    return answer.partial_success.rejected_spans


def test_spans_dated_out_of_window_are_refused_and_their_neighbours_stored(
    collector: Any,
) -> None:
    out_of_window = {
        "2262": (END_OF_INT64 - 1000, END_OF_INT64),
        "2100": (YEAR_2100_NS, YEAR_2100_NS + 1),
        "1970": (SECOND_NS, 2 * SECOND_NS),
    }
    for transport in ("proto", "json", "grpc"):
        good_run = f"run-neighbours-{transport}"
        spans = [
            otlp_span(sc.SPAN_REQUEST, request_attributes(good_run, f"h{i}")) for i in range(999)
        ]
        for year, (start, end) in out_of_window.items():
            bad_run = f"run-{year}-{transport}"
            spans.insert(
                len(spans) // 2,
                otlp_span(
                    sc.SPAN_REQUEST, request_attributes(bad_run, "h1"), start_ns=start, end_ns=end
                ),
            )
        # Before: "503 Python int too large to convert to C long", on every retry.
        assert send(collector, transport, export_request(spans)) == len(out_of_window)
        run = collector.api(f"/api/v1/runs/{good_run}", handoffs_limit=1000)
        assert len(run["handoffs"]) == run["handoffs_total"] == 999
        for year in out_of_window:
            assert collector.get(f"/api/v1/runs/run-{year}-{transport}").status_code == 404
    assert refused(collector, "time_out_of_window") == 3 * len(out_of_window)
    # Item 7: the 2100 handoff is not waiting in flight until 2100 at the top of the board.
    live = collector.api("/api/v1/live")
    assert [r for r in live["runs_in_flight"] if r["run_id"].startswith("run-neighbours")]
    assert not [r for r in live["runs_in_flight"] if r["run_id"].startswith("run-2100")]
    listed = collector.api("/api/v1/runs", limit=1000)["runs"]
    assert not [r for r in listed if r["run_id"].startswith(("run-2100", "run-2262", "run-1970"))]
    assert collector.healthz()["status"] == "ok"


def test_a_day_of_clock_skew_is_believed_beyond_it_refused(collector_factory: Any) -> None:
    collector = collector_factory(args=["--max-clock-skew-seconds", "3600"])
    now = time.time_ns()
    ahead = [
        otlp_span(
            sc.SPAN_REQUEST,
            request_attributes("run-skew-ok", "h1"),
            start_ns=now + 1800 * SECOND_NS,
            end_ns=now + 1800 * SECOND_NS,
        ),
        otlp_span(
            sc.SPAN_REQUEST,
            request_attributes("run-skew-far", "h1"),
            start_ns=now + 7200 * SECOND_NS,
            end_ns=now + 7200 * SECOND_NS,
        ),
    ]
    assert send(collector, "proto", export_request(ahead)) == 1
    assert collector.get("/api/v1/runs/run-skew-ok").status_code == 200
    assert collector.get("/api/v1/runs/run-skew-far").status_code == 404


def test_run_ids_with_control_characters_are_refused_at_the_door(collector: Any) -> None:
    hostile = ["run\nid", "run\rid", "run\x00id", "run\x1bid", "run\x7fid", "run\u2028id"]
    spans = [otlp_span(sc.SPAN_REQUEST, request_attributes(run_id, "h1")) for run_id in hostile]
    spans.append(otlp_span(sc.SPAN_REQUEST, request_attributes("run-plain", "h1")))
    assert send(collector, "proto", export_request(spans)) == len(hostile)
    assert refused(collector, "no_run_id") == len(hostile)
    # Whatever is listed can be opened: listing and lookup agree.
    listed = [r["run_id"] for r in collector.api("/api/v1/runs", limit=1000)["runs"]]
    assert listed == ["run-plain"]
    for run_id in listed:
        assert collector.get(f"/api/v1/runs/{httpx.URL(run_id)}").status_code == 200


def test_twenty_thousand_services_make_a_bounded_metrics_page(collector: Any) -> None:
    services = 20_000
    request = ExportTraceServiceRequest()
    for i in range(services):
        # The first ten drop more, so they are the top of the ranking.
        junk = {f"junk.{k}": "x" for k in range(5 if i < 10 else 1)}
        span = otlp_span(sc.SPAN_REQUEST, {**request_attributes(f"run-svc-{i}", "h1"), **junk})
        request.resource_spans.append(
            ResourceSpans(
                resource=Resource(attributes=key_values({sc.SERVICE_NAME: f"svc-{i:05d}"})),
                scope_spans=[ScopeSpans(spans=[span])],
            )
        )
    assert send(collector, "proto", request) == 0
    text = collector.metrics_text()
    series = [
        line
        for line in text.splitlines()
        if line.startswith("handoffscope_attributes_dropped_total{")
    ]
    named = {line.split('service="', 1)[1].split('"', 1)[0] for line in series}
    assert len(named) == 50 + 1, len(named)  # --metrics-max-services (default) + "(other)"
    assert "(other)" in named
    assert {f"svc-{i:05d}" for i in range(10)} <= named
    total = sum(float(line.rpartition(" ")[2]) for line in series)
    assert total == 10 * 5 + (services - 10)  # nothing lost in the folding
    assert len(series) < 400 and len(text) < 100_000, (len(series), len(text))


def test_weekly_csv_from_the_api_neutralises_formula_agent_names(collector: Any) -> None:
    sender, receiver = '=HYPERLINK("http://127.0.0.1:9/leak","x")', "@SUM(1+1)"
    attrs = request_attributes(
        "run-formula", "h1", **{sc.FROM_AGENT: sender, sc.TO_AGENT: receiver}
    )
    attrs[sc.ROUTE_DECLARED] = False  # a route rejection: listed by edge, agent and reason
    assert send(collector, "proto", export_request([otlp_span(sc.SPAN_REQUEST, attrs)])) == 0
    text = collector.get("/api/v1/review/weekly", weeks=1, format="csv").text
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    keys = {(r["dimension"], r["key"]) for r in rows}
    assert ("edge", f"'{sender}->{receiver}") in keys
    assert ("agent", f"'{receiver}") in keys
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row.values()), row
