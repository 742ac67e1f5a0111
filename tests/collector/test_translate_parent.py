"""Translators that read a span's parent (Strands, AutoGen) — in the same export or not at all.

Strands and AutoGen name the agent on `invoke_agent` only, not on the `execute_tool` span
that carries the handoff; the core lets a translator read the parent when it travelled in
the same export (ForeignSpan.parent). These build the OTLP request by hand, in the shapes
read off the real frameworks (docs/foreign-spans.md), and run the real registry on it.
The end-to-end runs with the real frameworks are tests/foreign/test_native_spans.py.
"""

from __future__ import annotations

import os

from opentelemetry.proto.trace.v1.trace_pb2 import Span
from support.otlp import export_request, otlp_span

from handoffscope.collector.processor.translate import Translators
from handoffscope.instrumentation import semconv as sc

TRACE = os.urandom(16)
TEAM = "4feb85c6-ebd0-4471-9ce1-6384ce4827cd"


def span(name: str, parent: Span | None = None, **attrs: str) -> Span:
    return otlp_span(
        name,
        {key.replace("__", "."): value for key, value in attrs.items()},
        trace_id=TRACE,
        span_id=os.urandom(8),
        parent_span_id=b"" if parent is None else parent.span_id,
        start_ns=10**18,
        end_ns=10**18 + 1000,
    )


def translate(scope: str, *spans: Span) -> list[dict[str, object]]:
    request = export_request(spans, service=None, scope=scope)
    result = Translators().translate(request, lambda _attrs: "svc")
    assert result is not None and result.foreign == len(spans)
    out = []
    for s in request.resource_spans[0].scope_spans[0].spans:
        values = {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in s.attributes}
        out.append({"name": s.name, **values})
    return out


def strands_spans() -> tuple[Span, Span, Span]:
    agent = span(
        "invoke_agent triage", gen_ai__operation__name="invoke_agent", gen_ai__agent__name="triage"
    )
    cycle = span(
        "execute_event_loop_cycle", agent, gen_ai__operation__name="execute_event_loop_cycle"
    )
    tool = span(
        "execute_tool handoff_to_agent",
        cycle,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="handoff_to_agent",
        gen_ai__tool__call__id="call-triage-2",
    )
    return agent, cycle, tool


def test_strands_handoff_takes_its_sender_from_the_agent_ancestor() -> None:
    agent, cycle, tool = strands_spans()
    requests = [
        e
        for e in translate("strands.telemetry.tracer", agent, cycle, tool)
        if e["name"] == sc.SPAN_REQUEST
    ]
    assert requests == [
        {
            "name": sc.SPAN_REQUEST,
            sc.HANDOFF_ID: "call-triage-2",
            sc.KIND: sc.KIND_HANDOFF,
            sc.FROM_AGENT: "triage",
            sc.TOOL_CALL_ID: "call-triage-2",
            sc.RUN_ID: TRACE.hex(),
            sc.SOURCE: "strands",
            sc.UNOBSERVED: requests[0][sc.UNOBSERVED],
        }
    ]


def test_without_its_parent_in_the_export_a_handoff_names_no_guessed_sender() -> None:
    _agent, _cycle, tool = strands_spans()
    assert translate("strands.telemetry.tracer", tool) == []  # absorbed, nothing invented


def swarm_status(*spans: Span) -> list[object]:
    return [
        e[sc.RUN_STATUS]
        for e in translate("strands.telemetry.tracer", *spans)
        if e["name"] == sc.SPAN_RUN and sc.RUN_STARTED in e
    ]


def test_a_swarm_whose_last_agent_handed_off_stopped_at_its_limit() -> None:
    """Strands never marks the limit; its last agent's handoff nobody carried out does."""
    swarm = span("invoke_swarm", gen_ai__operation__name="invoke_swarm")
    agent, cycle, tool = strands_spans()
    agent.parent_span_id = swarm.span_id
    assert swarm_status(swarm, agent, cycle, tool) == [sc.RUN_STATUS_MAX_TURNS]
    # another agent ran after the handoff: a swarm that ended on its own
    after = span(
        "invoke_agent billing",
        swarm,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name="billing",
    )
    after.start_time_unix_nano = agent.start_time_unix_nano + 10
    assert swarm_status(swarm, agent, cycle, tool, after) == [sc.RUN_STATUS_COMPLETED]
    # a handoff the swarm refused at once (unknown agent: ERROR) asked for nothing
    tool.status.code = tool.status.STATUS_CODE_ERROR
    assert swarm_status(swarm, agent, cycle, tool) == [sc.RUN_STATUS_COMPLETED]
    # the last agent's spans went in an earlier export: nothing to read, nothing guessed
    assert swarm_status(swarm) == [sc.RUN_STATUS_COMPLETED]


def test_autogen_runs_are_the_team_across_traces() -> None:
    agent = span(
        "invoke_agent billing",
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name="billing",
        gen_ai__agent__id=f"billing_{TEAM}/{TEAM}",
    )
    tool = span(
        "execute_tool transfer_to_triage",
        agent,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="transfer_to_triage",
        gen_ai__tool__call__id="call-7",
    )
    end = span(
        f"autogen create output_topic_{TEAM}.({TEAM})-T",
        messaging__operation="create",
        messaging__message__type="GroupChatTermination",
        messaging__destination=f"output_topic_{TEAM}.({TEAM})-T",
        message='{"message": {"content": "SENTINEL"}}',
    )
    evidence = translate("autogen-core", agent, tool) + translate(
        "autogen SingleThreadedAgentRuntime", end
    )
    assert {e[sc.RUN_ID] for e in evidence} == {f"autogen-{TEAM}"}
    (req,) = [e for e in evidence if e["name"] == sc.SPAN_REQUEST]
    assert (req[sc.FROM_AGENT], req[sc.TO_AGENT], req[sc.HANDOFF_ID]) == (
        "billing",
        "triage",
        "call-7",
    )
    assert [e[sc.RUN_STATUS] for e in evidence if sc.RUN_STATUS in e] == [sc.RUN_STATUS_COMPLETED]
    assert "SENTINEL" not in repr(evidence)
