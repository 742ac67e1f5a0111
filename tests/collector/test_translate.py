"""The translate stage (processor/translate/) and arrivals in the judge, in process.

End to end through the real instrumentations: tests/foreign/. Here: what the shared core
does with any source's spans — replaces them by contract evidence, drops and counts
everything else, leaves unclaimed scopes alone, survives a translator that raises — and
how the judge pairs requests with arrivals (evidence.pair_arrivals).
"""

from __future__ import annotations

import time
from typing import ClassVar

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from support.otlp import export_request, kv, otlp_span
from test_engine import accept, request, run_span
from test_engine import col as col  # the engine tests' fixture (a store + engine)

from handoffscope.collector.processor.allowlist import Allowlist, service_of
from handoffscope.collector.processor.translate import Translators, drop_label
from handoffscope.collector.processor.translate.base import (
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
)
from handoffscope.collector.processor.translate.openinference import (
    SCOPE_AGENTS,
    OpenInferenceTranslator,
)
from handoffscope.instrumentation import semconv as sc

SENTINEL = "zqxsentinel-translate"
NOW = time.time_ns()


def foreign_export(scope: str, *spans: Span) -> ExportTraceServiceRequest:
    return export_request(spans, service="app", scope=scope)


def oi_span(span_id: int, name: str, *attrs: KeyValue, parent: int = 1, error: str = "") -> Span:
    return otlp_span(
        name,
        attrs,
        trace_id=bytes.fromhex("ab" * 16),
        span_id=span_id.to_bytes(8, "big"),
        parent_span_id=parent.to_bytes(8, "big") if parent else b"",
        start_ns=NOW - 10**9 + span_id,
        end_ns=NOW - 10**8 + span_id,
        error=error,
    )


def test_foreign_spans_become_contract_evidence_and_nothing_else() -> None:
    destination = oi_span(
        7,
        "billing",
        kv("openinference.span.kind", "AGENT"),
        kv("graph.node.id", "billing"),
        kv("graph.node.parent_id", "triage"),
        kv("input.value", SENTINEL),
        kv("llm.input_messages.3.message.content", SENTINEL),
    )
    event = destination.events.add(name="exception")
    event.attributes.append(kv("exception.message", SENTINEL))
    llm = oi_span(
        8, "generation", kv("openinference.span.kind", "LLM"), kv("output.value", SENTINEL)
    )
    failed = oi_span(
        9,
        "billing",
        kv("openinference.span.kind", "AGENT"),
        kv("graph.node.id", "billing"),
        error=f"Max turns exceeded: {SENTINEL}",
    )
    request = foreign_export(SCOPE_AGENTS, destination, llm, failed)
    translation = Translators().translate(request, service_of)
    assert translation is not None
    batch = Allowlist().process(request, translation)

    assert (batch.received, batch.rejected, translation.foreign) == (3, 0, 3)
    assert SENTINEL not in repr(batch.columns)
    rows = [
        dict(zip(batch.columns, r, strict=True)) for r in zip(*batch.columns.values(), strict=True)
    ]
    by_name: dict[str, list[dict]] = {}
    for row in rows:
        by_name.setdefault(row["name"], []).append(row)
    (handoff,) = by_name[sc.SPAN_REQUEST]
    assert (handoff["handoff_from_agent"], handoff["handoff_to_agent"]) == ("triage", "billing")
    assert handoff["handoff_destination_started"] is True
    assert handoff["handoff_id"] == "oi-" + (7).to_bytes(8, "big").hex()
    assert handoff["handoff_run_id"] == "ab" * 16
    assert handoff["handoff_source"] == "openinference"
    assert set(handoff["handoff_unobserved"]) == set(OpenInferenceTranslator.unobserved)
    statuses = {r["run_status"] for r in by_name[sc.SPAN_RUN]}
    assert statuses == {None, sc.RUN_STATUS_MAX_TURNS}
    # Two pieces of evidence from one span: distinct span ids, derived the same way twice.
    ids = [r["span_id"] for r in rows]
    assert len(set(ids)) == len(ids)

    drops = {name: n for (service, name), n in batch.drops.items() if service == "app"}
    assert drops["openinference:input.value"] == 1
    assert drops["openinference:llm.input_messages.N.message.content"] == 1
    assert drops["openinference:event.exception.message"] == 1
    assert drops["openinference:status.description"] == 1
    assert drops["openinference:output.value"] == 1


def test_unclaimed_scopes_are_untouched_and_refused_by_name() -> None:
    request = foreign_export("some.other.instrumentation", oi_span(3, "chat", kv("x", "y")))
    assert Translators().translate(request, service_of) is None
    batch = Allowlist().process(request)
    assert (batch.received, batch.rejected, batch.count) == (1, 1, 0)
    assert "name not in the handoff contract" in batch.error_message


class Raising(Translator):
    source: ClassVar[str] = "raising"
    scopes: ClassVar[tuple[str, ...]] = ("raising.scope",)

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        if span.name == "bad":
            raise ValueError("odd input")
        return [arrival("billing")]


def test_a_translator_that_raises_loses_only_that_span() -> None:
    request = foreign_export("raising.scope", oi_span(4, "bad"), oi_span(5, "good"))
    translation = Translators([Raising]).translate(request, service_of)
    batch = Allowlist().process(request, translation)
    assert (batch.received, batch.rejected, batch.count) == (2, 0, 1)
    assert batch.columns["gen_ai_agent_name"] == ["billing"]


def test_drop_labels_fold_indices() -> None:
    assert drop_label("s", "llm.input_messages.12.message.tool_calls.0.id") == (
        "s:llm.input_messages.N.message.tool_calls.N.id"
    )
    assert drop_label("s", "gen_ai.prompt.3") == "s:gen_ai.prompt.N"


# --- arrivals ------------------------------------------------------------------------------


def arrive(run: str, agent: str, *, at: float):
    row = accept(run, None, at=at, a={sc.GEN_AI_AGENT_NAME: agent})
    return row


def test_requests_are_admitted_by_the_arrivals_after_them(col) -> None:  # noqa: F811
    run = "arrivals"
    col.send(
        run_span(run, sc.RUN_STATUS_STARTED, at=0.0),
        arrive(run, "triage", at=0.1),  # the first agent: before any request
        request(run, "h1", "triage", None, at=1.0, fp=None, sv=None, declared=None),
        arrive(run, "billing", at=1.5),
        request(run, "h2", "billing", "refunds", at=2.0, fp=None, sv=None, declared=None),
        arrive(run, "triage", at=2.5),  # not the destination h2 names
        arrive(run, "refunds", at=3.0),
        request(run, "h3", "refunds", "billing", at=4.0, fp=None, sv=None, declared=None),
    )
    h1, h2 = col.handoff(run, "h1"), col.handoff(run, "h2")
    assert (h1["to_agent"], h1["destination_started"]) == ("billing", True)
    assert (h2["to_agent"], h2["destination_started"]) == ("refunds", True)
    assert col.verdict(run, "h1") == sc.HEALTHY
    # No arrival after h3: not admitted, judged like any unadmitted request.
    h3 = col.handoff(run, "h3")
    assert h3["destination_started"] is None
    assert col.verdict(run, "h3", now=NOW + 3600 * 10**9) == sc.DESTINATION_NOT_STARTED
    assert col.run(run)["path"] == ["triage", "billing", "refunds"]


def test_requests_naming_no_sender_are_sent_by_the_agent_before_them(col) -> None:  # noqa: F811
    """evidence.pair_senders: OpenInference's LangGraph spans show each agent run (an
    arrival) and the handoff INTO it (a request naming only its destination)."""
    run = "senders"

    def into(hid: str, agent: str, *, at: float) -> list[dict]:
        started = request(run, hid, None, agent, at=at, fp=None, sv=None, declared=None)
        started["attrs"][sc.DESTINATION_STARTED] = True
        del started["attrs"][sc.FROM_AGENT]
        return [started, arrive(run, agent, at=at)]

    col.send(
        run_span(run, sc.RUN_STATUS_STARTED, at=0.0),
        arrive(run, "triage", at=0.1),
        *into("h1", "billing", at=1.0),
        *into("h2", "triage", at=2.0),
        # names its sender: kept, whatever ran before it
        request(run, "h3", "refunds", "billing", at=3.0, fp=None, sv=None, declared=None),
        run_span(run, sc.RUN_STATUS_COMPLETED, at=4.0),
    )
    senders = {h: col.handoff(run, h)["from_agent"] for h in ("h1", "h2", "h3")}
    assert senders == {"h1": "triage", "h2": "billing", "h3": "refunds"}
    assert col.verdict(run, "h1") == sc.HEALTHY
    assert col.run(run)["path"] == ["triage", "billing", "triage", "refunds"]


def test_a_request_with_no_agent_before_it_keeps_no_sender(col) -> None:  # noqa: F811
    run = "no-sender"
    started = request(run, "h1", None, "billing", at=1.0, fp=None, sv=None, declared=None)
    del started["attrs"][sc.FROM_AGENT]
    col.send(started, arrive(run, "billing", at=1.0), arrive(run, "refunds", at=2.0))
    assert col.handoff(run, "h1")["from_agent"] is None
