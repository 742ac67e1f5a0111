"""LangGraph adapter, in memory: real compiled graphs, the exact spans they produce.

Each scenario runs a real multi-agent graph (`langgraph_scenarios`) through the real
runtime with the instrumentor on, and checks the spans in an InMemorySpanExporter: names,
attribute names and value types, how many spans a handoff costs, and — through the shared
`classify` / `find_loops` — the verdict that evidence leads to. The same scenarios go
through a real collector in `test_langgraph_e2e.py`.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import langgraph_scenarios as scenarios
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.pregel import Pregel
from langgraph.types import Command
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation import stats
from handoffscope.instrumentation.classify import (
    HandoffEvidence,
    HandoffStep,
    classify,
    find_loops,
    worst,
)
from handoffscope.instrumentation.langgraph import (
    UNSET_AGENT,
    WAIT_KEY,
    LangGraphInstrumentor,
    wait_details,
)
from handoffscope.instrumentation.langgraph.waits import decision as read_decision

SENTINEL = scenarios.SENTINEL


@pytest.fixture
def instrumentor(provider: TracerProvider) -> Iterator[LangGraphInstrumentor]:
    ins = LangGraphInstrumentor()
    ins.instrument(tracer_provider=provider)
    yield ins
    ins.uninstrument()


# --- reading the evidence back ----------------------------------------------------------


def finished(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return list(exporter.get_finished_spans())


def of(spans: list[ReadableSpan], name: str) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in spans if s.name == name]


def one_run_id(spans: list[ReadableSpan]) -> str:
    ids = {s.attributes[sc.RUN_ID] for s in spans}
    assert len(ids) == 1, ids
    return str(ids.pop())


def run_status(spans: list[ReadableSpan]) -> str | None:
    ends = [
        s.attributes[sc.RUN_STATUS]
        for s in spans
        if s.name == sc.SPAN_RUN and (s.attributes or {}).get(sc.RUN_STATUS) != "started"
    ]
    return str(ends[-1]) if ends else None


def verdicts(spans: list[ReadableSpan]) -> dict[str, str]:
    """Merge evidence per handoff (false wins for flags) and classify it, with loops and
    the run's status, as the collector does (`find_loops(stopped=...)`, `run_status`)."""
    merged: dict[str, dict[str, Any]] = defaultdict(dict)
    for s in spans:
        attrs = s.attributes or {}
        hid = attrs.get(sc.HANDOFF_ID)
        if hid is None:
            continue
        for k, v in attrs.items():
            old = merged[hid].get(k)
            merged[hid][k] = (old and v) if isinstance(v, bool) and old is not None else v
    order = sorted(merged, key=lambda h: merged[h].get(sc.TURN, 0))
    status = run_status(spans)
    loops = find_loops(
        [
            HandoffStep(
                h,
                merged[h].get(sc.FROM_AGENT),
                merged[h].get(sc.TO_AGENT),
                merged[h].get(sc.FINGERPRINT),
                merged[h].get(sc.STATE_VERSION),
            )
            for h in order
            if merged[h].get(sc.KIND, sc.KIND_HANDOFF) == sc.KIND_HANDOFF
        ],
        stopped=status == sc.RUN_STATUS_MAX_TURNS,
    )
    out = {}
    for h in order:
        a = merged[h]
        ev = HandoffEvidence(
            handoff_id=h,
            kind=a.get(sc.KIND, sc.KIND_HANDOFF),
            reason=a.get(sc.REASON),
            from_agent=a.get(sc.FROM_AGENT),
            to_agent=a.get(sc.TO_AGENT),
            first_seen_ns=None,
            requested=True,
            route_declared=a.get(sc.ROUTE_DECLARED),
            route_goto=a.get(sc.ROUTE_GOTO),
            control_before=a.get(sc.CONTROL_BEFORE),
            control_after=a.get(sc.CONTROL_AFTER),
            tool_call_id=a.get(sc.TOOL_CALL_ID),
            tool_call_closed=a.get(sc.TOOL_CALL_CLOSED),
            destination_started=a.get(sc.DESTINATION_STARTED),
            loop=h in loops.looping_ids,
            run_stopped=status == sc.RUN_STATUS_MAX_TURNS,
            run_status=status,
        )
        out[h] = classify(ev).verdict
    return out


def run_verdict(spans: list[ReadableSpan]) -> str:
    """The run's verdict as DESIGN §4 puts it: its worst handoff plus run-level facts
    (a loop, a failure, completion without a verifier — none declared expected here)."""
    found = verdicts(spans)
    facts = list(found.values())
    status = run_status(spans)
    outcomes = [s.attributes[sc.OUTCOME_RESULT] for s in spans if s.name == sc.SPAN_OUTCOME]
    required = any((s.attributes or {}).get(sc.RUN_OUTCOME_REQUIRED) for s in spans)
    if status in (sc.RUN_STATUS_FAILED, sc.RUN_STATUS_MAX_TURNS):
        facts.append(sc.RUN_FAILED)
    if status == sc.RUN_STATUS_COMPLETED:
        failed = bool(outcomes) and outcomes[-1] == sc.OUTCOME_FAIL
        if failed or (required and sc.OUTCOME_PASS not in outcomes):
            facts.append(sc.FALSE_COMPLETE)
        elif not outcomes:
            facts.append(sc.UNVERIFIED)
    return worst(facts)


def assert_no_content(spans: list[ReadableSpan]) -> None:
    wire = encode_spans(spans).SerializeToString()
    assert SENTINEL.encode() not in wire
    assert b"SENTINEL" not in wire


def assert_clean() -> None:
    """The adapter neither failed internally nor sent anything the allowlist had to drop."""
    assert stats.errors == 0
    assert not stats.attributes_dropped


# --- scenarios ----------------------------------------------------------------------------


def test_healthy_handoff_exact_spans(instrumentor, exporter) -> None:
    def verify(state):
        assert instrumentor.record_outcome("refund_posted", True, receipt_id="rcpt-1")
        return {}

    out = scenarios.healthy(verify).invoke(scenarios.first_input())
    assert out["active_agent"] == "billing"
    assert any(SENTINEL in str(m.content) for m in out["messages"])  # content was there

    spans = finished(exporter)
    run_id = one_run_id(spans)
    assert len(run_id) == 32
    assert [s.name for s in spans] == [
        sc.SPAN_RUN,
        sc.SPAN_REQUEST,
        sc.SPAN_TRANSFER,
        sc.SPAN_OUTCOME,
        sc.SPAN_RUN,
    ]
    (request,) = of(spans, sc.SPAN_REQUEST)
    assert set(request) == {
        sc.RUN_ID,
        sc.HANDOFF_ID,
        sc.FROM_AGENT,
        sc.TO_AGENT,
        sc.TURN,
        sc.FINGERPRINT,
        sc.STATE_VERSION,
        sc.ROUTE_DECLARED,
        sc.TOOL_CALL_ID,
        sc.ROUTE_GOTO,
        sc.CONTROL_BEFORE,
        sc.REASON,
        sc.KIND,
        sc.UNOBSERVED,
        sc.GEN_AI_AGENT_NAME,
        sc.USAGE_MODEL_CALLS,
    }
    # The scripted model reports no usage: triage's one call, tokens unknown (not 0);
    # test_usage_langgraph.py checks usage that is reported.
    assert request[sc.USAGE_MODEL_CALLS] == 1
    assert request[sc.FROM_AGENT] == "triage"
    assert request[sc.REASON] == sc.REASON_COMMAND  # a handoff tool's Command(goto)
    assert request[sc.KIND] == sc.KIND_HANDOFF
    # LangGraph has no context contract; a tool call carried it, so its protocol is seen.
    assert request[sc.UNOBSERVED] == (sc.BOUNDARY_CONTEXT,)
    assert request[sc.TO_AGENT] == request[sc.ROUTE_GOTO] == "billing"
    assert request[sc.ROUTE_DECLARED] is True
    assert request[sc.CONTROL_BEFORE] == "triage"
    assert request[sc.TURN] == 1 and type(request[sc.TURN]) is int
    assert type(request[sc.STATE_VERSION]) is int
    assert isinstance(request[sc.FINGERPRINT], str) and len(request[sc.FINGERPRINT]) == 16
    assert request[sc.TOOL_CALL_ID].startswith("call_")

    (transfer,) = of(spans, sc.SPAN_TRANSFER)
    assert transfer == {
        sc.RUN_ID: run_id,
        sc.HANDOFF_ID: request[sc.HANDOFF_ID],
        sc.ROUTE_GOTO: "billing",
        sc.CONTROL_AFTER: "billing",
        sc.TOOL_CALL_CLOSED: True,
        sc.DESTINATION_STARTED: True,
        sc.GEN_AI_AGENT_NAME: "billing",
    }
    (outcome,) = of(spans, sc.SPAN_OUTCOME)
    assert outcome[sc.OUTCOME_RESULT] == sc.OUTCOME_PASS
    assert outcome[sc.OUTCOME_VERIFIER] == "refund_posted"
    started, ended = of(spans, sc.SPAN_RUN)
    assert started[sc.RUN_STATUS] == sc.RUN_STATUS_STARTED
    assert type(started[sc.RUN_STARTED]) is int
    assert ended[sc.RUN_STATUS] == sc.RUN_STATUS_COMPLETED
    assert ended[sc.RUN_FINAL_AGENT] == "billing"
    assert ended[sc.RUN_TURNS] == 2
    assert verdicts(spans) == {request[sc.HANDOFF_ID]: sc.HEALTHY}
    assert instrumentor.run_id() == run_id  # the last run of this context
    assert_clean()
    assert_no_content(spans)


def test_ping_pong_is_a_loop_until_the_recursion_limit(instrumentor, exporter) -> None:
    with pytest.raises(GraphRecursionError):  # the app still sees LangGraph's own error
        scenarios.ping_pong().invoke(scenarios.first_input(), {"recursion_limit": 8})

    spans = finished(exporter)
    requests = of(spans, sc.SPAN_REQUEST)
    assert len(requests) == 8  # one per superstep, each agent handing back at once
    assert [r[sc.FROM_AGENT] for r in requests[:3]] == ["triage", "billing", "triage"]
    # No work between handoffs: the same task and progress every time. state_version now
    # counts distinct units of work (issue 10), and the only one here is the customer
    # note of the input state: 1, never moving (it used to count work messages).
    assert len({(r[sc.FINGERPRINT], r[sc.STATE_VERSION]) for r in requests}) == 1
    assert requests[0][sc.STATE_VERSION] == 1
    assert len({r[sc.TOOL_CALL_ID] for r in requests}) == 8
    # Every destination but the last one (the limit stopped the graph first) started.
    assert len(of(spans, sc.SPAN_TRANSFER)) == 7
    ended = of(spans, sc.SPAN_RUN)[-1]
    assert ended[sc.RUN_STATUS] == sc.RUN_STATUS_MAX_TURNS
    assert ended[sc.RUN_TURNS] == 8
    found = verdicts(spans)
    assert Counter(found.values()) == {sc.HEALTHY: 1, sc.LOOP: 7}
    assert_clean()
    assert_no_content(spans)


def test_handing_back_after_real_work_is_not_a_loop(instrumentor, exporter) -> None:
    scenarios.back_and_forth_with_progress().invoke(scenarios.first_input())
    spans = finished(exporter)
    requests = of(spans, sc.SPAN_REQUEST)
    assert [(r[sc.FROM_AGENT], r[sc.TO_AGENT]) for r in requests] == [
        ("triage", "billing"),
        ("billing", "triage"),
        ("triage", "billing"),
    ]
    # Each lookup is new work: its call and its result, two units (issue 10: distinct
    # units of work, where this used to count work messages); the 1 is the customer note.
    assert [r[sc.STATE_VERSION] for r in requests] == [1, 3, 5]
    assert set(verdicts(spans).values()) == {sc.HEALTHY}


def test_interrupt_wait_and_resume_counted_once(instrumentor, exporter) -> None:
    graph = scenarios.approval(InMemorySaver())
    config = {"configurable": {"thread_id": "thread-approve-1"}}
    out = graph.invoke(scenarios.first_input(), config)
    (itr,) = out["__interrupt__"]
    first = finished(exporter)
    run_id = one_run_id(first)
    (wait,) = of(first, sc.SPAN_WAIT)
    assert set(wait) == {
        sc.RUN_ID,
        sc.WAIT_OWNER,
        sc.WAIT_REASON,
        sc.WAIT_DEADLINE,
        sc.WAIT_RESUME_TOKEN_ID,
        sc.WAIT_STATE_PERSISTED,
        sc.GEN_AI_AGENT_NAME,
        sc.GEN_AI_CONVERSATION_ID,
    }
    assert wait[sc.WAIT_OWNER] == scenarios.OWNER
    assert wait[sc.WAIT_REASON] == scenarios.REASON
    assert type(wait[sc.WAIT_DEADLINE]) is int and wait[sc.WAIT_DEADLINE] > 1e18
    assert wait[sc.WAIT_RESUME_TOKEN_ID] == itr.id
    assert wait[sc.WAIT_STATE_PERSISTED] is True
    assert wait[sc.GEN_AI_CONVERSATION_ID] == "thread-approve-1"
    assert of(first, sc.SPAN_RUN)[-1][sc.RUN_STATUS] == sc.RUN_STATUS_INTERRUPTED

    # The human approves; billing's subgraph re-runs from the start of its node.
    graph.invoke(Command(resume={"decision": "approved"}), config)
    assert instrumentor.record_outcome("refund_posted", True, config=config)
    spans = finished(exporter)
    assert one_run_id(spans) == run_id  # the resume continues the same run
    names = Counter(s.name for s in spans)
    assert names == {
        sc.SPAN_RUN: 3,  # started, interrupted, completed
        sc.SPAN_REQUEST: 1,
        sc.SPAN_TRANSFER: 1,  # billing's re-run is not a second admission
        sc.SPAN_WAIT: 2,  # checkpointed, decided
        sc.SPAN_OUTCOME: 1,
    }
    decided = of(spans, sc.SPAN_WAIT)[-1]
    assert decided[sc.WAIT_DECISION] == sc.WAIT_DECISION_APPROVED
    assert decided[sc.WAIT_RESUME_TOKEN_ID] == itr.id
    statuses = [r[sc.RUN_STATUS] for r in of(spans, sc.SPAN_RUN)]
    assert statuses == ["started", "interrupted", "completed"]
    assert set(verdicts(spans).values()) == {sc.HEALTHY}
    assert_no_content(spans)
    assert_clean()


def test_resume_in_another_process_finds_the_run_in_the_checkpoint(instrumentor, exporter) -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "thread-approve-2"}}
    scenarios.approval(saver).invoke(scenarios.first_input(), config)
    run_id = one_run_id(finished(exporter))
    exporter.clear()
    # A fresh process knows nothing of the run: forget it, keep only the checkpoint.
    instrumentor._threads.clear()
    scenarios.approval(saver).invoke(Command(resume=False), config)
    spans = finished(exporter)
    assert one_run_id(spans) == run_id
    assert [w[sc.WAIT_DECISION] for w in of(spans, sc.SPAN_WAIT)] == [sc.WAIT_DECISION_REJECTED]
    assert [r[sc.RUN_STATUS] for r in of(spans, sc.SPAN_RUN)] == [sc.RUN_STATUS_COMPLETED]


def test_wait_without_details_uses_settings_or_is_uncertain(provider, exporter) -> None:
    ins = LangGraphInstrumentor()
    ins.instrument(
        tracer_provider=provider, wait_owner="ops-desk", wait_reason="approval", wait_timeout_s=60
    )
    try:
        from langgraph.graph import START, StateGraph
        from langgraph.types import interrupt

        def ask(state: scenarios.SupportState) -> dict:
            interrupt(f"ok? {SENTINEL}")
            return {}

        g = StateGraph(scenarios.SupportState)
        g.add_node("triage", ask)
        g.add_edge(START, "triage")
        graph = g.compile(checkpointer=InMemorySaver())
        graph.invoke(scenarios.first_input(), {"configurable": {"thread_id": "t-defaults"}})
        (wait,) = of(finished(exporter), sc.SPAN_WAIT)
        assert wait[sc.WAIT_OWNER] == "ops-desk"
        assert wait[sc.WAIT_REASON] == "approval"
        assert type(wait[sc.WAIT_DEADLINE]) is int

        # Without a checkpointer-backed thread the state is not persisted: say so.
        exporter.clear()
        ins.instrument(tracer_provider=provider)
        graph.invoke(scenarios.first_input(), {"configurable": {"thread_id": "t-bare"}})
        (wait,) = of(finished(exporter), sc.SPAN_WAIT)
        assert sc.WAIT_OWNER not in wait and sc.WAIT_DEADLINE not in wait
    finally:
        ins.uninstrument()


def test_tool_call_never_closed_is_open_tool_protocol(instrumentor, exporter) -> None:
    scenarios.broken(close=False).invoke(scenarios.first_input())
    spans = finished(exporter)
    (transfer,) = of(spans, sc.SPAN_TRANSFER)
    assert transfer[sc.TOOL_CALL_CLOSED] is False
    assert set(verdicts(spans).values()) == {sc.OPEN_TOOL_PROTOCOL}
    assert_clean()


def test_active_agent_not_updated_is_stale_control(instrumentor, exporter) -> None:
    scenarios.broken(set_active=False).invoke(scenarios.first_input())
    spans = finished(exporter)
    (transfer,) = of(spans, sc.SPAN_TRANSFER)
    assert transfer[sc.CONTROL_AFTER] == "triage"  # billing runs, the state says triage
    assert set(verdicts(spans).values()) == {sc.STALE_CONTROL}
    assert_clean()


def test_control_key_never_set_is_stale_control(instrumentor, exporter) -> None:
    start = scenarios.first_input()
    del start["active_agent"]
    scenarios.broken(set_active=False).invoke(start)
    spans = finished(exporter)
    (request,) = of(spans, sc.SPAN_REQUEST)
    assert sc.CONTROL_BEFORE not in request  # the default agent holds control implicitly
    (transfer,) = of(spans, sc.SPAN_TRANSFER)
    assert transfer[sc.CONTROL_AFTER] == UNSET_AGENT
    assert set(verdicts(spans).values()) == {sc.STALE_CONTROL}
    assert_clean()


def test_node_returned_commands_and_an_undeclared_route(instrumentor, exporter) -> None:
    scenarios.node_commands().invoke(scenarios.first_input())
    spans = finished(exporter)
    requests = of(spans, sc.SPAN_REQUEST)
    assert [(r[sc.FROM_AGENT], r[sc.TO_AGENT], r[sc.ROUTE_DECLARED]) for r in requests] == [
        ("triage", "billing", True),
        ("billing", "refunds", False),  # annotated Command[Literal["triage"]]
    ]
    assert all(sc.TOOL_CALL_ID not in r for r in requests)  # no tool carried them
    assert sorted(verdicts(spans).values()) == [sc.HEALTHY, sc.ROUTE_REJECTED]
    assert_clean()


def test_fan_out_admits_each_destination_once(instrumentor, exporter) -> None:
    scenarios.fan_out().invoke(scenarios.first_input())
    spans = finished(exporter)
    requests = of(spans, sc.SPAN_REQUEST)
    assert sorted(r[sc.TO_AGENT] for r in requests) == ["billing", "refunds"]
    assert len({r[sc.HANDOFF_ID] for r in requests}) == 2
    transfers = of(spans, sc.SPAN_TRANSFER)
    assert sorted(t[sc.GEN_AI_AGENT_NAME] for t in transfers) == ["billing", "refunds"]
    # Both were told "billing" is in control: the refunds branch reports it.
    assert sorted(verdicts(spans).values()) == [sc.HEALTHY, sc.STALE_CONTROL]
    assert_clean()


def test_async_graphs_are_observed_the_same_way(instrumentor, exporter) -> None:
    async def main() -> list[str]:
        graph = scenarios.healthy()
        seen = []
        async for chunk in graph.astream(scenarios.first_input(), stream_mode="updates"):
            seen.extend(chunk)
        return seen

    assert asyncio.run(main()) == ["triage", "billing"]
    spans = finished(exporter)
    assert [s.name for s in spans] == [
        sc.SPAN_RUN,
        sc.SPAN_REQUEST,
        sc.SPAN_TRANSFER,
        sc.SPAN_RUN,
    ]
    assert of(spans, sc.SPAN_RUN)[-1][sc.RUN_STATUS] == sc.RUN_STATUS_COMPLETED


def test_coexists_with_langgraphs_own_stream_handlers(instrumentor, exporter) -> None:
    # "messages" and astream_events install LangGraph's and LangChain's own callback
    # handlers beside ours; subgraphs=True streams the agents' inner steps too.
    chunks = list(
        scenarios.healthy().stream(
            scenarios.first_input(), stream_mode=["messages", "updates", "debug"], subgraphs=True
        )
    )
    assert any(mode == "messages" for _ns, mode, _data in chunks)

    async def events() -> int:
        n = 0
        async for _event in scenarios.healthy().astream_events(
            scenarios.first_input(), version="v2"
        ):
            n += 1
        return n

    assert asyncio.run(events()) > 10
    spans = finished(exporter)
    assert Counter(s.name for s in spans) == {
        sc.SPAN_RUN: 4,
        sc.SPAN_REQUEST: 2,
        sc.SPAN_TRANSFER: 2,
    }
    assert set(verdicts(spans).values()) == {sc.HEALTHY}
    assert_clean()


def test_concurrent_runs_on_many_threads(instrumentor, exporter) -> None:
    errors: list[BaseException] = []

    def one() -> None:
        try:
            scenarios.healthy().invoke(scenarios.first_input())
        except BaseException as exc:  # surfaced below, not swallowed
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    spans = finished(exporter)
    per_run: dict[str, Counter] = defaultdict(Counter)
    for s in spans:
        per_run[s.attributes[sc.RUN_ID]][s.name] += 1
    assert len(per_run) == 6
    for names in per_run.values():
        assert names == {sc.SPAN_RUN: 2, sc.SPAN_REQUEST: 1, sc.SPAN_TRANSFER: 1}


def test_instrumentation_failures_never_reach_the_app(instrumentor, exporter, monkeypatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("recorder exploded")

    monkeypatch.setattr(instrumentor._recorder, "handoff_requested", broken)
    monkeypatch.setattr(instrumentor._recorder, "handoff_transferred", broken)
    out = scenarios.healthy().invoke(scenarios.first_input())
    assert out["active_agent"] == "billing"  # the graph ran as usual
    assert stats.errors >= 2  # and what failed was counted


def test_uninstrument_restores_langgraph(instrumentor, exporter) -> None:
    assert instrumentor.is_instrumented_by_opentelemetry
    assert LangGraphInstrumentor() is instrumentor  # one per process: never wrapped twice
    instrumentor.uninstrument()
    assert not instrumentor.is_instrumented_by_opentelemetry
    assert Pregel.stream.__qualname__ == "Pregel.stream"
    assert Pregel.astream.__qualname__ == "Pregel.astream"
    scenarios.healthy().invoke(scenarios.first_input())
    assert finished(exporter) == []


def test_missing_langgraph_is_logged_not_raised(provider, monkeypatch) -> None:
    ins = LangGraphInstrumentor()
    ins.uninstrument()
    monkeypatch.setitem(sys.modules, "langgraph.pregel", None)  # as if not installed
    ins.instrument(tracer_provider=provider)
    assert not ins.is_instrumented_by_opentelemetry


def test_unknown_setting_is_refused_at_setup(provider) -> None:
    with pytest.raises(TypeError, match="control_kye"):
        LangGraphInstrumentor().instrument(tracer_provider=provider, control_kye="x")


def test_wait_details_shape() -> None:
    details = wait_details(owner="o", reason="r", deadline=1_800_000_000)
    assert details == {
        WAIT_KEY: {"owner": "o", "reason": "r", "deadline_ns": 1_800_000_000 * 10**9}
    }


@pytest.mark.parametrize(
    ("resume", "decision"),
    [
        (True, "approved"),
        (False, "rejected"),
        ("expired", "expired"),
        ({"decision": "rejected", "note": SENTINEL}, "rejected"),
        ({"type": "accept"}, "approved"),
        ({"type": "ignore"}, "rejected"),
        ({"approved": False}, "rejected"),
        ({"decisions": [{"type": "approve"}, {"type": "reject"}]}, "rejected"),
        (f"sure, go ahead {SENTINEL}", "approved"),  # an answer: the human decided
    ],
)
def test_decision_is_read_from_the_resume_shape(resume: Any, decision: str) -> None:
    assert read_decision(resume) == decision
