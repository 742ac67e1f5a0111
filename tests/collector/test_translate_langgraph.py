"""The LangGraph translators (OpenInference, OpenLLMetry) on hand-built spans, in process.

End to end through the real instrumentations and the real LangGraph runtime:
tests/foreign/test_langgraph_spans.py. Here: the edges of what a span alone can say — which
node spans are agent runs, what of OpenInference's `metadata` JSON is read, how a goto's
declared-ness is decided, and that a span whose context travelled in another export
gives less evidence instead of a guess.
"""

from __future__ import annotations

import json

from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from support.otlp import kv, otlp_span
from test_translate import SENTINEL, foreign_export

from handoffscope.collector.processor.allowlist import Allowlist, service_of
from handoffscope.collector.processor.translate import Translators
from handoffscope.collector.processor.translate import openinference_langgraph as oi
from handoffscope.collector.processor.translate import openllmetry_langgraph as tl
from handoffscope.instrumentation import semconv as sc


def span(span_id: int, name: str, *attrs: KeyValue, parent: int = 0) -> Span:
    return otlp_span(
        name,
        attrs,
        trace_id=bytes.fromhex("cd" * 16),
        span_id=span_id.to_bytes(8, "big"),
        parent_span_id=parent.to_bytes(8, "big") if parent else b"",
        start_ns=10**18 + span_id * 1000,
        end_ns=10**18 + span_id * 1000 + 500,
    )


def texts(key: str, *values: str) -> KeyValue:
    return kv(key, list(values))


def evidence(scope: str, *spans: Span) -> list[dict]:
    """The contract spans the allowlist keeps, as {attribute: value} (plus `name`)."""
    request = foreign_export(scope, *spans)
    translation = Translators().translate(request, service_of)
    batch = Allowlist().process(request, translation)
    assert batch.rejected == 0, batch.error_message
    assert SENTINEL not in repr(batch.columns)
    rows = [
        dict(zip(batch.columns, r, strict=True)) for r in zip(*batch.columns.values(), strict=True)
    ]
    return [{k: v for k, v in row.items() if v is not None} for row in rows]


def meta(**values: object) -> KeyValue:
    return kv("metadata", json.dumps({"app_note": SENTINEL, **values}))


def oi_node(span_id: int, node: str, step: int, ns: str, *, parent: int = 1, **extra) -> Span:
    return span(
        span_id,
        node,
        meta(langgraph_node=node, langgraph_step=step, langgraph_checkpoint_ns=ns, **extra),
        kv("input.value", SENTINEL),
        parent=parent,
    )


def test_openinference_agent_runs_are_the_graphs_own_nodes() -> None:
    rows = evidence(
        oi.SCOPE_LANGCHAIN,
        span(1, "LangGraph", meta()),
        oi_node(2, "triage", 1, "triage:a"),
        # the subgraph invoked inside the triage node: same namespace, its own key
        oi_node(3, "triage", 1, "triage:a", parent=2, checkpoint_ns="triage:a"),
        oi_node(4, "model", 1, "triage:a|model:b", parent=3),  # deeper: no agent run
        oi_node(5, "billing", 2, "billing:c"),
        span(6, "broken", kv("metadata", '{"langgraph_node": '), parent=1),  # not JSON
        span(7, "odd", meta(langgraph_node=7, langgraph_checkpoint_ns="x:y"), parent=1),
    )
    arrivals = [r["gen_ai_agent_name"] for r in rows if r["name"] == sc.SPAN_ACCEPT]
    assert arrivals == ["triage", "billing"]
    (handoff,) = [r for r in rows if r["name"] == sc.SPAN_REQUEST]
    # step 2: the handoff into billing, from whoever ran before (the judge names it)
    assert "handoff_from_agent" not in handoff
    assert (handoff["handoff_to_agent"], handoff["handoff_destination_started"]) == (
        "billing",
        True,
    )
    assert set(handoff["handoff_unobserved"]) == set(oi.OpenInferenceLangGraphTranslator.unobserved)
    (end,) = [r for r in rows if r.get("run_status")]
    assert end["run_status"] == sc.RUN_STATUS_COMPLETED


def failed_root(span_id: int, exception_type: str) -> Span:
    root = span(span_id, "LangGraph", meta())
    root.status.code = Status.STATUS_CODE_ERROR
    root.status.message = f"{exception_type}('{SENTINEL}')"
    event = root.events.add(name="exception")
    event.attributes.extend(
        [kv("exception.type", exception_type), kv("exception.message", SENTINEL)]
    )
    return root


def test_the_recursion_limit_is_max_turns_any_other_error_failed() -> None:
    for exception_type, status in (
        ("GraphRecursionError", sc.RUN_STATUS_MAX_TURNS),
        ("langgraph.errors.GraphRecursionError", sc.RUN_STATUS_MAX_TURNS),
        ("BillingSystemDown", sc.RUN_STATUS_FAILED),
    ):
        for scope in (oi.SCOPE_LANGCHAIN, tl.SCOPE_LANGCHAIN):
            (row,) = evidence(scope, failed_root(1, exception_type))
            assert row["run_status"] == status, (scope, exception_type)


def test_an_error_message_that_names_the_limit_is_not_the_limit() -> None:
    """The type is matched, never the text (the text is the app's)."""
    (row,) = evidence(oi.SCOPE_LANGCHAIN, failed_root(1, "ValueError"))
    assert row["run_status"] == sc.RUN_STATUS_FAILED


def test_declared_destinations_from_the_graphs_edges() -> None:
    edges = ["triage -> billing", "billing -> triage"]
    assert tl.declared(edges, "triage", "billing") is True
    assert tl.declared(edges, "billing", "refunds") is False
    assert tl.declared(edges, "refunds", "billing") is None  # declares nothing: open
    assert tl.declared(None, "triage", "billing") is None


def tl_task(span_id: int, node: str, ns: str, *, parent: int) -> Span:
    return span(
        span_id,
        f"execute_task {node}",
        kv("gen_ai.operation.name", "execute_task"),
        kv(tl.NODE, node),
        kv(tl.NAMESPACE, ns),
        kv("gen_ai.task.input", SENTINEL),
        parent=parent,
    )


def goto(span_id: int, to: str, *, parent: int) -> Span:
    return span(
        span_id,
        f"goto {to}",
        kv("gen_ai.operation.name", "goto"),
        kv("langgraph.command.source_node", "tools"),
        kv(tl.GOTO, to),
        parent=parent,
    )


def test_traceloop_gotos_are_requests_from_the_agent_run_they_happened_in() -> None:
    graph = span(
        1,
        "invoke_agent LangGraph",
        texts(tl.WORKFLOW_NODES, "triage", "billing", "refunds"),
        texts(tl.WORKFLOW_EDGES, "triage -> billing", "billing -> triage"),
    )
    rows = evidence(
        tl.SCOPE_LANGCHAIN,
        graph,
        span(2, "LangGraph.workflow", parent=1),
        tl_task(3, "triage", "triage:a", parent=2),
        tl_task(4, "tools", "triage:a|tools:b", parent=3),
        goto(5, "billing", parent=4),  # Traceloop records each goto twice
        goto(6, "billing", parent=3),
        tl_task(7, "billing", "billing:c", parent=2),
        goto(8, "refunds", parent=7),  # billing declared only triage
    )
    requests = [r for r in rows if r["name"] == sc.SPAN_REQUEST]
    got = [
        (r["handoff_from_agent"], r["handoff_to_agent"], r["handoff_route_goto"]) for r in requests
    ]
    assert got == [("triage", "billing", "billing")] * 2 + [("billing", "refunds", "refunds")]
    assert requests[0]["handoff_id"] == requests[1]["handoff_id"]  # one handoff
    assert [r["handoff_route_declared"] for r in requests] == [True, True, False]
    assert all(sc.BOUNDARY_ROUTE not in r["handoff_unobserved"] for r in requests)
    arrivals = [r["gen_ai_agent_name"] for r in rows if r["name"] == sc.SPAN_ACCEPT]
    assert arrivals == ["triage", "billing"]


def test_building_an_agent_is_not_a_run() -> None:
    # OpenLLMetry traces `create_agent` / `create_react_agent` at graph construction, each
    # its own root: measured, a langgraph-supervisor graph with two workers made 3 such
    # traces beside the invocation's, each read as a run before.
    built = span(1, "create_agent billing", kv(tl.OPERATION, tl.CREATE_AGENT))
    assert evidence(tl.SCOPE_LANGCHAIN, built) == []
    graph = span(2, "invoke_agent LangGraph", kv(tl.OPERATION, "invoke_agent"))
    (end,) = evidence(tl.SCOPE_LANGCHAIN, graph)
    assert end["name"] == sc.SPAN_RUN


def test_a_goto_without_its_context_in_the_export_gives_less() -> None:
    rows = evidence(
        tl.SCOPE_LANGCHAIN,
        tl_task(3, "triage", "triage:a", parent=2),  # the graph span is not in this export
        goto(5, "billing", parent=3),
        goto(9, "billing", parent=8),  # nor its agent run
    )
    (request,) = [r for r in rows if r["name"] == sc.SPAN_REQUEST]
    assert (request["handoff_from_agent"], request["handoff_to_agent"]) == ("triage", "billing")
    assert "handoff_route_declared" not in request
    assert sc.BOUNDARY_ROUTE in request["handoff_unobserved"]
