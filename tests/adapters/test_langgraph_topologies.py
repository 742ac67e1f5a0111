"""LangGraph adapter on the topologies teams run (issue 10): supervisors, swarms, networks.

The real `langgraph_supervisor.create_supervisor` and `langgraph_swarm.create_swarm` with
their own handoff tools, agents from `create_react_agent` / `langchain.agents.create_agent`,
a network of function nodes routing with `Command`, conditional and static edges — each
driven by scripted models through the real runtime (`langgraph_scenarios`). The tests
assert the exact evidence (who handed to whom, carried by what, the progress key, which
boundaries the adapter cannot see) and the verdict a careful human would give.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import langgraph_scenarios as scenarios
import pytest
from langgraph.errors import GraphRecursionError
from opentelemetry.sdk.trace import TracerProvider
from test_langgraph import (
    assert_clean,
    assert_no_content,
    finished,
    of,
    run_status,
    run_verdict,
    verdicts,
)

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

NO_TOOL = (sc.BOUNDARY_CONTEXT, sc.BOUNDARY_TOOL_PROTOCOL)
"""`handoff.unobserved` of a handoff no tool call carried (an edge, a node's Command)."""


@pytest.fixture
def instrument(provider: TracerProvider) -> Iterator[Callable[..., LangGraphInstrumentor]]:
    """Instrumented with default settings; call it to re-instrument with others."""
    ins = LangGraphInstrumentor()

    def start(**settings: Any) -> LangGraphInstrumentor:
        ins.instrument(tracer_provider=provider, **settings)
        return ins

    start()
    yield start
    ins.uninstrument()


def requests(spans: list) -> list[dict[str, Any]]:
    return of(spans, sc.SPAN_REQUEST)


def hops(spans: list) -> list[tuple[str, str, str]]:
    return [(r[sc.FROM_AGENT], r[sc.TO_AGENT], r[sc.REASON]) for r in requests(spans)]


def admitted(spans: list) -> set[str]:
    return {
        a[sc.HANDOFF_ID]
        for a in of(spans, sc.SPAN_TRANSFER) + requests(spans)
        if a.get(sc.DESTINATION_STARTED) is True
    }


def repeated_keys(spans: list) -> list[bool]:
    """Per request: does its (to_agent, fingerprint, state_version) repeat an earlier one?"""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for r in requests(spans):
        key = (r[sc.TO_AGENT], r[sc.FINGERPRINT], r[sc.STATE_VERSION])
        out.append(key in seen)
        seen.add(key)
    return out


# --- langgraph-supervisor -----------------------------------------------------------------


def test_supervisor_round_trip_records_both_directions(instrument, exporter) -> None:
    out = scenarios.supervisor_round_trip().invoke(scenarios.user_input())
    assert out["messages"][-1].name == "supervisor"  # the supervisor had the last word
    spans = finished(exporter)
    dispatch, back = requests(spans)
    run_id = dispatch[sc.RUN_ID]
    assert dispatch == {
        sc.RUN_ID: run_id,
        sc.HANDOFF_ID: dispatch[sc.HANDOFF_ID],
        sc.FROM_AGENT: "supervisor",
        sc.TO_AGENT: "billing",
        sc.TURN: 1,
        sc.FINGERPRINT: dispatch[sc.FINGERPRINT],
        sc.STATE_VERSION: 0,  # nothing done yet
        sc.ROUTE_DECLARED: True,  # create_supervisor declares destinations=(agents, END)
        sc.TOOL_CALL_ID: dispatch[sc.TOOL_CALL_ID],
        sc.ROUTE_GOTO: "billing",
        # The supervisor's state has no control key: the runtime's own view of control.
        sc.CONTROL_BEFORE: "supervisor",
        sc.REASON: sc.REASON_COMMAND,
        sc.KIND: sc.KIND_HANDOFF,
        sc.UNOBSERVED: (sc.BOUNDARY_CONTEXT,),
        sc.GEN_AI_AGENT_NAME: "supervisor",
        sc.USAGE_MODEL_CALLS: 1,  # the supervisor's leg (the fake model reports no tokens)
    }
    assert dispatch[sc.TOOL_CALL_ID].startswith("call_")
    # The worker returns over its static edge: a handoff back, carried by no tool call
    # (the library's hand-back messages are made up after the fact, not a real tool call).
    assert back == {
        sc.RUN_ID: run_id,
        sc.HANDOFF_ID: back[sc.HANDOFF_ID],
        sc.FROM_AGENT: "billing",
        sc.TO_AGENT: "supervisor",
        sc.TURN: 2,
        sc.FINGERPRINT: dispatch[sc.FINGERPRINT],  # the same task: the user's request
        sc.STATE_VERSION: 1,  # billing's answer (its lookup stayed in its own subgraph)
        sc.ROUTE_DECLARED: True,
        sc.ROUTE_GOTO: "supervisor",
        sc.CONTROL_BEFORE: "billing",
        sc.REASON: sc.REASON_EDGE,
        sc.KIND: sc.KIND_HANDOFF,
        sc.UNOBSERVED: NO_TOOL,
        sc.GEN_AI_AGENT_NAME: "billing",
        sc.USAGE_MODEL_CALLS: 2,  # billing's leg: its lookup call and its answer
    }
    assert [(t[sc.HANDOFF_ID], t[sc.CONTROL_AFTER]) for t in of(spans, sc.SPAN_TRANSFER)] == [
        (dispatch[sc.HANDOFF_ID], "billing"),
        (back[sc.HANDOFF_ID], "supervisor"),
    ]
    assert of(spans, sc.SPAN_TRANSFER)[0][sc.TOOL_CALL_CLOSED] is True
    assert sc.TOOL_CALL_CLOSED not in of(spans, sc.SPAN_TRANSFER)[1]
    ended = of(spans, sc.SPAN_RUN)[-1]
    assert ended[sc.RUN_STATUS] == sc.RUN_STATUS_COMPLETED
    assert ended[sc.RUN_FINAL_AGENT] == "supervisor"
    assert repeated_keys(spans) == [False, False]
    assert list(verdicts(spans).values()) == [sc.HEALTHY, sc.HEALTHY]
    assert run_verdict(spans) == sc.UNVERIFIED  # healthy, but no verifier said it was done
    assert_clean()
    assert_no_content(spans)


def test_supervisor_redispatching_the_same_task_is_a_loop(instrument, exporter) -> None:
    with pytest.raises(GraphRecursionError):
        scenarios.supervisor_redispatch().invoke(scenarios.user_input(), {"recursion_limit": 10})
    spans = finished(exporter)
    assert (
        hops(spans)
        == [
            ("supervisor", "billing", sc.REASON_COMMAND),
            ("billing", "supervisor", sc.REASON_EDGE),
        ]
        * 5
    )
    # Billing's same answer and the library's hand-back messages are not progress: after
    # the first answer, the state version never moves, and every key repeats.
    assert [r[sc.STATE_VERSION] for r in requests(spans)] == [0] + [1] * 9
    assert len({r[sc.FINGERPRINT] for r in requests(spans)}) == 1
    assert repeated_keys(spans) == [False] * 3 + [True] * 7
    assert len(admitted(spans)) == 9  # the limit stopped the graph before the last one
    assert run_status(spans) == sc.RUN_STATUS_MAX_TURNS
    # The first dispatch was fine; from then on the team went round in circles (the last
    # handoff, cut by the limit, is the loop's doing, not a failed admission).
    assert list(verdicts(spans).values()) == [sc.HEALTHY] + [sc.LOOP] * 9
    assert run_verdict(spans) == sc.LOOP
    assert_clean()
    assert_no_content(spans)


# --- langgraph-swarm ----------------------------------------------------------------------


@pytest.mark.parametrize("work", ["none", "same"])
def test_swarm_bounce_without_new_work_is_a_loop(instrument, exporter, work: str) -> None:
    with pytest.raises(GraphRecursionError):
        scenarios.swarm_bounce(work).invoke(scenarios.user_input(), {"recursion_limit": 8})
    spans = finished(exporter)
    assert (
        hops(spans)
        == [
            ("triage", "billing", sc.REASON_COMMAND),
            ("billing", "triage", sc.REASON_COMMAND),
        ]
        * 4
    )
    reqs = requests(spans)
    assert all(r[sc.UNOBSERVED] == (sc.BOUNDARY_CONTEXT,) for r in reqs)  # tools carried them
    assert len({r[sc.TOOL_CALL_ID] for r in reqs}) == 8
    versions = [r[sc.STATE_VERSION] for r in reqs]
    if work == "none":
        assert versions == [0] * 8
        assert repeated_keys(spans) == [False, False] + [True] * 6
    else:
        # triage's note (call + result) then billing's lookup (call + result): 4 units,
        # then the same note and the same lookup again add nothing. Billing first got the
        # task at version 2, so its key repeats from the second time it gets version 4.
        assert versions == [2] + [4] * 7
        assert repeated_keys(spans) == [False, False, False] + [True] * 5
    # The swarm keeps `active_agent`: control evidence is the key, as the handoff tool set it.
    transfers = of(spans, sc.SPAN_TRANSFER)
    assert [t[sc.CONTROL_AFTER] for t in transfers] == ["billing", "triage"] * 3 + ["billing"]
    assert all(t[sc.TOOL_CALL_CLOSED] is True for t in transfers)
    # The first handoff: nobody set `active_agent` yet (the swarm's START router defaults).
    assert sc.CONTROL_BEFORE not in reqs[0]
    assert [r[sc.CONTROL_BEFORE] for r in reqs[1:]] == ["billing", "triage"] * 3 + ["billing"]
    assert run_status(spans) == sc.RUN_STATUS_MAX_TURNS
    assert list(verdicts(spans).values()) == [sc.HEALTHY] + [sc.LOOP] * 7
    assert run_verdict(spans) == sc.LOOP
    assert_clean()
    assert_no_content(spans)


def test_swarm_bounce_with_new_work_each_time_is_not_a_loop(instrument, exporter) -> None:
    scenarios.swarm_bounce("new").invoke(scenarios.user_input())
    spans = finished(exporter)
    assert hops(spans) == [
        ("triage", "billing", sc.REASON_COMMAND),
        ("billing", "triage", sc.REASON_COMMAND),
        ("triage", "billing", sc.REASON_COMMAND),
    ]
    # Each lookup of a new invoice is a call and a result: two units each time.
    assert [r[sc.STATE_VERSION] for r in requests(spans)] == [2, 4, 6]
    assert repeated_keys(spans) == [False, False, False]
    assert len(admitted(spans)) == 3
    assert run_status(spans) == sc.RUN_STATUS_COMPLETED
    assert set(verdicts(spans).values()) == {sc.HEALTHY}
    assert run_verdict(spans) == sc.UNVERIFIED
    assert_clean()
    assert_no_content(spans)


# --- a network of function nodes routing with Command ------------------------------------


@pytest.mark.parametrize(("reply", "version"), [("same", 1), ("note", 1)])
def test_command_network_repeating_itself_is_a_loop(
    instrument, exporter, reply: str, version: int
) -> None:
    with pytest.raises(GraphRecursionError):
        scenarios.command_network(reply).invoke(scenarios.user_input(), {"recursion_limit": 6})
    spans = finished(exporter)
    reqs = requests(spans)
    assert (
        hops(spans)
        == [
            ("triage", "billing", sc.REASON_COMMAND),
            ("billing", "triage", sc.REASON_COMMAND),
        ]
        * 3
    )
    # The same answer (or the same note appended again) is one unit of work, once.
    assert [r[sc.STATE_VERSION] for r in reqs] == [version] * 6
    assert repeated_keys(spans) == [False, False] + [True] * 4
    # Returned by the node, no tool call: the tool protocol is not observed.
    assert all(r[sc.UNOBSERVED] == NO_TOOL and sc.TOOL_CALL_ID not in r for r in reqs)
    assert all(r[sc.ROUTE_DECLARED] is True for r in reqs)  # Command[Literal[...]]
    # No control key in this state: the runtime's view (sender before, starter after).
    assert [r[sc.CONTROL_BEFORE] for r in reqs] == [r[sc.FROM_AGENT] for r in reqs]
    assert [t[sc.CONTROL_AFTER] for t in of(spans, sc.SPAN_TRANSFER)] == [
        r[sc.TO_AGENT] for r in reqs[:5]
    ]
    assert run_status(spans) == sc.RUN_STATUS_MAX_TURNS
    # Not destination_not_started: the last billing -> triage was cut by the limit.
    assert list(verdicts(spans).values()) == [sc.HEALTHY] + [sc.LOOP] * 5
    assert run_verdict(spans) == sc.LOOP
    assert_clean()
    assert_no_content(spans)


def test_command_network_with_new_replies_cycles_until_the_limit(instrument, exporter) -> None:
    with pytest.raises(GraphRecursionError):
        scenarios.command_network("different").invoke(
            scenarios.user_input(), {"recursion_limit": 6}
        )
    spans = finished(exporter)
    # Every reply is new text: the key never repeats. What says "loop" here is that the
    # run was stopped at its limit while control was cycling (DESIGN §4 rule 7).
    assert [r[sc.STATE_VERSION] for r in requests(spans)] == [1, 2, 3, 4, 5, 6]
    assert repeated_keys(spans) == [False] * 6
    assert [(a, b) for a, b, _ in hops(spans)] == [("triage", "billing"), ("billing", "triage")] * 3
    assert run_status(spans) == sc.RUN_STATUS_MAX_TURNS
    assert list(verdicts(spans).values()) == [sc.HEALTHY] + [sc.LOOP] * 5
    assert run_verdict(spans) == sc.LOOP
    assert_clean()


# --- edges, drops, crashes, single agents -------------------------------------------------


@pytest.mark.parametrize("declared", [True, False])
def test_conditional_and_static_edges_are_handoffs(instrument, exporter, declared: bool) -> None:
    scenarios.conditional_edges(declared=declared).invoke(scenarios.user_input())
    spans = finished(exporter)
    routed, back = requests(spans)
    # The conditional edge's destination is known when it starts: one span says it all.
    assert routed == {
        sc.RUN_ID: routed[sc.RUN_ID],
        sc.HANDOFF_ID: routed[sc.HANDOFF_ID],
        sc.FROM_AGENT: "triage",
        sc.TO_AGENT: "billing",
        sc.TURN: 1,
        sc.FINGERPRINT: routed[sc.FINGERPRINT],
        sc.STATE_VERSION: 1,
        **({sc.ROUTE_DECLARED: True} if declared else {}),  # open-ended: unknown
        sc.ROUTE_GOTO: "billing",
        sc.CONTROL_BEFORE: "triage",
        sc.CONTROL_AFTER: "billing",
        sc.DESTINATION_STARTED: True,
        sc.REASON: sc.REASON_EDGE,
        sc.KIND: sc.KIND_HANDOFF,
        sc.UNOBSERVED: NO_TOOL,
        sc.GEN_AI_AGENT_NAME: "billing",
    }
    # The static edge back is known when billing ends: request, then transfer.
    assert hops(spans)[1] == ("billing", "triage", sc.REASON_EDGE)
    assert back[sc.ROUTE_DECLARED] is True and back[sc.STATE_VERSION] == 2
    assert sc.DESTINATION_STARTED not in back
    assert admitted(spans) == {routed[sc.HANDOFF_ID], back[sc.HANDOFF_ID]}
    assert [s.name for s in spans] == [
        sc.SPAN_RUN,
        sc.SPAN_REQUEST,
        sc.SPAN_REQUEST,
        sc.SPAN_TRANSFER,
        sc.SPAN_RUN,
    ]
    assert set(verdicts(spans).values()) == {sc.HEALTHY}
    assert_clean()
    assert_no_content(spans)


def test_a_dropped_parallel_send_is_never_admitted(instrument, exporter) -> None:
    scenarios.dropped_send().invoke(scenarios.user_input())
    spans = finished(exporter)
    to_billing, to_refund = requests(spans)
    assert (to_billing[sc.TO_AGENT], to_refund[sc.TO_AGENT]) == ("billing", "refund")
    assert to_billing[sc.REASON] == to_refund[sc.REASON] == sc.REASON_SEND
    assert sc.ROUTE_DECLARED not in to_refund  # the dispatcher declares nothing
    # LangGraph drops a Send to a node it does not have: "refund" never runs, and its
    # handoff is left unadmitted — the collector judges it destination_not_started.
    assert admitted(spans) == {to_billing[sc.HANDOFF_ID]}
    assert run_status(spans) == sc.RUN_STATUS_COMPLETED
    assert verdicts(spans) == {
        to_billing[sc.HANDOFF_ID]: sc.HEALTHY,
        to_refund[sc.HANDOFF_ID]: sc.DESTINATION_NOT_STARTED,
    }
    assert run_verdict(spans) == sc.DESTINATION_NOT_STARTED
    assert_clean()


def test_a_crashed_run_reports_failed(instrument, exporter) -> None:
    with pytest.raises(scenarios.BillingSystemDown):
        scenarios.crashing().invoke(scenarios.user_input())
    spans = finished(exporter)
    (request,) = requests(spans)
    assert admitted(spans) == {request[sc.HANDOFF_ID]}  # billing started, then crashed
    ended = of(spans, sc.SPAN_RUN)[-1]
    assert ended[sc.RUN_STATUS] == sc.RUN_STATUS_FAILED
    assert ended[sc.RUN_FINAL_AGENT] == "billing"
    # The handoff itself was fine; the run is what failed.
    assert verdicts(spans) == {request[sc.HANDOFF_ID]: sc.HEALTHY}
    assert run_verdict(spans) == sc.RUN_FAILED
    assert_clean()
    assert_no_content(spans)


def test_a_root_level_react_agent_has_no_handoffs(instrument, exporter) -> None:
    scenarios.react_agent().invoke(scenarios.user_input())
    spans = finished(exporter)
    # model <-> tools: a ToolNode is a step of the agent beside it, not an agent.
    assert [s.name for s in spans] == [sc.SPAN_RUN, sc.SPAN_RUN]
    assert run_status(spans) == sc.RUN_STATUS_COMPLETED
    assert run_verdict(spans) == sc.UNVERIFIED
    assert_clean()


def test_agent_nodes_setting_overrides_which_nodes_are_agents(instrument, exporter) -> None:
    instrument(agent_nodes=("model", "tools"))
    scenarios.react_agent().invoke(scenarios.user_input())
    assert [(a, b) for a, b, _ in hops(finished(exporter))] == [
        ("model", "tools"),
        ("tools", "model"),
    ]
    exporter.clear()
    instrument(agent_nodes=("triage",))  # billing is no agent: triage's edges lead nowhere
    scenarios.conditional_edges(declared=True).invoke(scenarios.user_input())
    assert requests(finished(exporter)) == []


def test_require_outcome_is_declared_on_the_run(instrument, exporter) -> None:
    scenarios.react_agent().invoke(scenarios.user_input())
    started = of(finished(exporter), sc.SPAN_RUN)[0]
    assert sc.RUN_OUTCOME_REQUIRED not in started  # not declared: the collector decides
    exporter.clear()
    instrument(require_outcome=True)
    scenarios.react_agent().invoke(scenarios.user_input())
    started, ended = of(finished(exporter), sc.SPAN_RUN)
    assert started[sc.RUN_STATUS] == sc.RUN_STATUS_STARTED
    assert started[sc.RUN_OUTCOME_REQUIRED] is True
    assert sc.RUN_OUTCOME_REQUIRED not in ended
    # Declared: "completed" without a passing verifier is now a false completion.
    assert run_verdict(finished(exporter)) == sc.FALSE_COMPLETE
    assert_clean()


def test_each_message_is_digested_once_per_run(instrument, exporter, monkeypatch) -> None:
    from handoffscope.instrumentation.langgraph import progress as adapter

    digested: list[Any] = []
    real = adapter.fingerprint

    def counting(task: Any, state: Any = None) -> str:
        digested.append(task)
        return real(task, state)

    monkeypatch.setattr(adapter, "fingerprint", counting)
    with pytest.raises(GraphRecursionError):
        scenarios.supervisor_redispatch().invoke(scenarios.user_input(), {"recursion_limit": 10})
    # Ten handoffs each re-read the whole history, but billing's five answers are digested
    # once each (remembered by message id): the cost grows with the messages, not with
    # messages x handoffs. The other digests are one task fingerprint per handoff.
    assert digested.count("answer") == 5
    assert len(digested) == 5 + 10
    assert_clean()
