"""Semantic Kernel's run identity and sender, read across its scopes (`joins_scopes`).

SK traces each layer under a scope of its own, and without an app span of its own its
runtime starts a trace per message it delivers: one orchestration is several traces, tied
only by the orchestration's topic in the runtime spans' `messaging.destination`, which is
on `invoke_agent`'s parent, in another scope (processor/translate/semantic_kernel.py).
These build the OTLP export by hand in the shapes read off SK 1.45's `HandoffOrchestration`
(docs/foreign-spans.md, "Semantic Kernel") and run the real registry on it. The end-to-end
runs with the real SK are tests/foreign/test_sk_spans.py.
"""

from __future__ import annotations

import os

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from support.otlp import key_values, otlp_span

from handoffscope.collector.processor.translate import Translators
from handoffscope.collector.processor.translate.semantic_kernel import (
    SCOPE_AGENT,
    SCOPE_FUNCTION,
    SCOPE_LOOP,
    SCOPE_RUNTIME,
)
from handoffscope.instrumentation import semconv as sc

TOPIC = "8110b80c810f4f0785c1215654d0cc47"  # what `invoke()` names: uuid4().hex


def span(name: str, trace: bytes, parent: Span | bytes | None = None, **attrs: str) -> Span:
    parent_id = parent.span_id if isinstance(parent, Span) else (parent or b"")
    return otlp_span(
        name,
        {key.replace("__", "."): value for key, value in attrs.items()},
        trace_id=trace,
        span_id=os.urandom(8),
        parent_span_id=parent_id,
        start_ns=10**18,
        end_ns=10**18 + 1000,
    )


def turn(agent: str, tool: str, root_parent: bytes | None = None) -> dict[str, list[Span]]:
    """One agent turn as SK's runtime delivers it: `send` (the trace's root, unless the
    app's span is its parent) -> `process` -> `invoke_agent` -> loop -> `execute_tool`."""
    trace = os.urandom(16)
    destination = f"{agent}_{TOPIC}.(default)-A"
    send = span(
        f"agent_runtime send {destination}",
        trace,
        root_parent,
        messaging__operation="publish",
        messaging__destination=destination,
    )
    process = span(
        f"agent_runtime process {destination}",
        trace,
        send,
        messaging__operation="process",
        messaging__destination=destination,
    )
    invoke = span(
        f"invoke_agent {agent}",
        trace,
        process,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name=agent,
    )
    loop = span("AutoFunctionInvocationLoop", trace, invoke)
    call = span(
        f"execute_tool {tool}",
        trace,
        loop,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name=tool,
        gen_ai__tool__call__id=f"call_{agent}_1",
    )
    return {
        SCOPE_RUNTIME: [send, process],
        SCOPE_AGENT: [invoke],
        SCOPE_LOOP: [loop],
        SCOPE_FUNCTION: [call],
    }


def export(*turns: dict[str, list[Span]]) -> ExportTraceServiceRequest:
    """One resource, one `ScopeSpans` per SK scope, as the SDK's exporter groups them."""
    scopes: dict[str, list[Span]] = {}
    for t in turns:
        for scope, spans in t.items():
            scopes.setdefault(scope, []).extend(spans)
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=key_values({sc.SERVICE_NAME: "sk"})),
                scope_spans=[
                    ScopeSpans(scope=InstrumentationScope(name=name), spans=spans)
                    for name, spans in scopes.items()
                ],
            )
        ]
    )


def evidence(request: ExportTraceServiceRequest) -> list[dict[str, object]]:
    result = Translators().translate(request, lambda _attrs: "svc")
    assert result is not None
    out = []
    for ss in request.resource_spans[0].scope_spans:
        for s in ss.spans:
            values = {
                kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in s.attributes
            }
            out.append({"name": s.name, "trace": s.trace_id.hex(), **values})
    return out


def test_without_an_app_span_one_orchestration_is_one_run() -> None:
    triage = turn("TriageAgent", "Handoff-transfer_to_RefundAgent")
    refund = turn("RefundAgent", "Handoff-complete_task")
    out = evidence(export(triage, refund))
    assert {e["trace"] for e in out} == {
        triage[SCOPE_AGENT][0].trace_id.hex(),
        refund[SCOPE_AGENT][0].trace_id.hex(),
    }
    # Two traces, one run: the orchestration's topic.
    assert {e[sc.RUN_ID] for e in out} == {f"sk-{TOPIC}"}
    (request,) = [e for e in out if e["name"] == sc.SPAN_REQUEST]
    # The sender is read off `invoke_agent`, two levels up in another scope.
    assert (request[sc.FROM_AGENT], request[sc.TO_AGENT]) == ("TriageAgent", "RefundAgent")
    assert request[sc.HANDOFF_ID] == "call_TriageAgent_1"


def test_under_the_app_span_the_run_is_the_trace() -> None:
    app_span = os.urandom(8)  # the samples' `main`: the app's scope, not in SK's export
    triage = turn("TriageAgent", "Handoff-transfer_to_RefundAgent", root_parent=app_span)
    out = evidence(export(triage))
    trace = triage[SCOPE_AGENT][0].trace_id.hex()
    assert out and {e[sc.RUN_ID] for e in out} == {trace}


def test_a_turn_exported_apart_from_its_runtime_spans_keeps_its_trace() -> None:
    """Less, never a guess: no ancestor names a topic, so the run is the trace id, and
    the request still names its sender (its `invoke_agent` travelled with it)."""
    triage = turn("TriageAgent", "Handoff-transfer_to_RefundAgent")
    del triage[SCOPE_RUNTIME]
    out = evidence(export(triage))
    assert {e[sc.RUN_ID] for e in out} == {triage[SCOPE_AGENT][0].trace_id.hex()}
    (request,) = [e for e in out if e["name"] == sc.SPAN_REQUEST]
    assert request[sc.FROM_AGENT] == "TriageAgent"


def test_a_tool_span_exported_alone_names_no_sender() -> None:
    """Its `invoke_agent` in another export: the judge names the sender (pair_senders)."""
    triage = turn("TriageAgent", "Handoff-transfer_to_RefundAgent")
    out = evidence(export({SCOPE_FUNCTION: triage[SCOPE_FUNCTION]}))
    (request,) = out
    assert request["name"] == sc.SPAN_REQUEST and sc.FROM_AGENT not in request
    assert request[sc.TO_AGENT] == "RefundAgent"
