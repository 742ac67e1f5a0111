"""LangGraph adapter: team graphs invoked inside a node, and a handoff LangGraph dropped.

Two shapes from published material, run through the real runtime with scripted models
(`langgraph_scenarios`):

- LangGraph's "Hierarchical Agent Teams" tutorial: a top-level supervisor whose nodes call
  a team graph with `team_graph.invoke(...)`, each team its own `supervisor` and workers.
  The teams' handoffs belong to the same run, their agents named `<node>/<team node>` so a
  team's `supervisor` is not the top-level one, ordered by the root superstep they happen in.
- langgraph-supervisor with `parallel_tool_calls=True`: the supervisor's model asks for two
  agents in one message; LangGraph carries one handoff out and drops the other, which is
  recorded as requested and ignored (`ignored_same_turn`, `route.goto` where the run went).

In memory first (exact evidence, and the verdicts the shared classifier gives), then
through the real OTLP/HTTP exporter into a real collector subprocess, whose verdicts are
read back from the query API, with the sentinel planted in prompts, tool arguments, tool
outputs and an exception message searched for in every answer and stored byte.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import langgraph_scenarios as scenarios
import pytest
from langgraph.errors import GraphRecursionError
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from support.privacy import assert_content_free
from test_langgraph import (
    assert_clean,
    assert_no_content,
    finished,
    of,
    one_run_id,
    run_status,
    run_verdict,
    verdicts,
)
from test_langgraph_topologies import admitted, repeated_keys, requests

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

SENTINEL = scenarios.SENTINEL

HEALTHY_HOPS = [
    ("supervisor", "research_team"),
    ("research_team/supervisor", "research_team/search"),
    ("research_team/search", "research_team/supervisor"),
    ("research_team", "supervisor"),
    ("supervisor", "writing_team"),
    ("writing_team/supervisor", "writing_team/note_taker"),
    ("writing_team/note_taker", "writing_team/supervisor"),
    ("writing_team/supervisor", "writing_team/doc_writer"),
    ("writing_team/doc_writer", "writing_team/supervisor"),
    ("writing_team", "supervisor"),
]
"""The tutorial's run as a careful reader tells it: the top-level supervisor sends the
research team, whose own supervisor sends `search` and finishes; the team reports back;
then the writing team (outline, then document); then the top-level supervisor finishes."""


def task() -> dict[str, Any]:
    return {"messages": [("user", f"Research AI agents and write a brief report {SENTINEL}")]}


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


def hops(spans: list) -> list[tuple[str, str]]:
    return [(r[sc.FROM_AGENT], r[sc.TO_AGENT]) for r in requests(spans)]


def ended(spans: list) -> dict[str, Any]:
    return of(spans, sc.SPAN_RUN)[-1]


# --- in memory: exact evidence --------------------------------------------------------


def test_teams_invoked_inside_a_node_hand_off_within_the_same_run(instrument, exporter) -> None:
    out = scenarios.hierarchical_teams().invoke(task())
    assert [m.name for m in out["messages"][1:]] == ["research_team", "writing_team"]
    spans = finished(exporter)
    one_run_id(spans)  # the outer invocation is the run; the teams' handoffs belong to it
    assert hops(spans) == HEALTHY_HOPS
    reqs = requests(spans)
    # Team handoffs take the root superstep of the node that called the team: the run's
    # handoffs stay in the order they happened (each team graph counts its own steps from 1).
    assert [r[sc.TURN] for r in reqs] == [1, 2, 2, 2, 3, 4, 4, 4, 4, 4]
    # Work: each supervisor's new `next`, each worker's report; a team's answer relayed up
    # as the calling node's report is the same text, so no new work.
    assert [r[sc.STATE_VERSION] for r in reqs] == [1, 2, 3, 3, 4, 5, 6, 7, 8, 8]
    # Routed by each supervisor's `Command[Literal[...]]` and the workers' `Command[Literal[
    # "supervisor"]]`: declared, no tool call (structured output, not a handoff tool).
    assert all(r[sc.REASON] == sc.REASON_COMMAND for r in reqs)
    assert all(r[sc.ROUTE_DECLARED] is True for r in reqs)
    assert all(r[sc.UNOBSERVED] == (sc.BOUNDARY_CONTEXT, sc.BOUNDARY_TOOL_PROTOCOL) for r in reqs)
    # No control key in the tutorial's state: the runtime's view, with the team's names.
    assert [r[sc.CONTROL_BEFORE] for r in reqs] == [a for a, _ in HEALTHY_HOPS]
    transfers = of(spans, sc.SPAN_TRANSFER)
    assert [(t[sc.HANDOFF_ID], t[sc.CONTROL_AFTER]) for t in transfers] == [
        (r[sc.HANDOFF_ID], b) for r, (_, b) in zip(reqs, HEALTHY_HOPS, strict=True)
    ]
    # The react agents the workers run inside their nodes are those workers at work (one
    # agent each: model and ToolNode), not teams: nothing below `<team>/<worker>`.
    assert not any(name.count("/") > 1 for hop in hops(spans) for name in hop)
    last = ended(spans)
    assert last[sc.RUN_STATUS] == sc.RUN_STATUS_COMPLETED
    assert (last[sc.RUN_FINAL_AGENT], last[sc.RUN_TURNS]) == ("supervisor", 5)
    assert set(verdicts(spans).values()) == {sc.HEALTHY}
    assert run_verdict(spans) == sc.UNVERIFIED  # healthy; no verifier said it was done
    assert_clean()
    assert_no_content(spans)


def test_teams_are_seen_the_same_way_from_ainvoke(instrument, exporter) -> None:
    # The top-level graph runs async; its sync nodes call the teams on worker threads,
    # where LangGraph carries the node's config (and so our handler) along.
    asyncio.run(scenarios.hierarchical_teams().ainvoke(task()))
    spans = finished(exporter)
    one_run_id(spans)
    assert hops(spans) == HEALTHY_HOPS
    assert set(verdicts(spans).values()) == {sc.HEALTHY}
    assert_clean()


def test_a_ping_pong_inside_a_team_is_a_loop_at_the_recursion_limit(instrument, exporter) -> None:
    # The limit is the outer call's; the team graph, invoked inside the node, inherits it
    # and raises, through the top-level node, to the caller.
    with pytest.raises(GraphRecursionError):
        scenarios.hierarchical_research_loop().invoke(task(), {"recursion_limit": 8})
    spans = finished(exporter)
    one_run_id(spans)
    assert (
        hops(spans)
        == [("supervisor", "research_team")]
        + [
            ("research_team/supervisor", "research_team/search"),
            ("research_team/search", "research_team/supervisor"),
        ]
        * 4
    )
    reqs = requests(spans)
    # The search worker's report (a HumanMessage named `search`, as the tutorial writes it)
    # is work, not a new task: the same report again adds nothing. After the first round
    # the team's task and work stand still, so the same keys come back (a loop the
    # collector sees before the limit), and the limit then stops the run while going round.
    assert len({r[sc.FINGERPRINT] for r in reqs[1:]}) == 1
    assert [r[sc.STATE_VERSION] for r in reqs] == [1, 2] + [3] * 7
    assert repeated_keys(spans) == [False] * 4 + [True] * 5
    assert len(admitted(spans)) == len(reqs) - 1  # the limit stopped the last one
    last = ended(spans)
    assert last[sc.RUN_STATUS] == sc.RUN_STATUS_MAX_TURNS
    assert last[sc.RUN_FINAL_AGENT] == "research_team/search"
    # The first dispatch and the team supervisor's first send were fine; every return after.
    assert list(verdicts(spans).values()) == [sc.HEALTHY] * 2 + [sc.LOOP] * 7
    assert run_verdict(spans) == sc.LOOP
    assert_clean()
    assert_no_content(spans)


def test_a_crash_inside_a_team_fails_the_run_in_that_team(instrument, exporter) -> None:
    with pytest.raises(scenarios.DiskFull):
        scenarios.hierarchical_teams(disk_full=True).invoke(task())
    spans = finished(exporter)
    assert hops(spans) == HEALTHY_HOPS[:8]  # up to the doc writer, whose tool raised
    assert len(admitted(spans)) == 8
    last = ended(spans)
    assert last[sc.RUN_STATUS] == sc.RUN_STATUS_FAILED
    assert last[sc.RUN_FINAL_AGENT] == "writing_team/doc_writer"
    # Every handoff was fine; the run is what failed.
    assert set(verdicts(spans).values()) == {sc.HEALTHY}
    assert run_verdict(spans) == sc.RUN_FAILED
    assert_clean()
    assert_no_content(spans)


def test_agent_nodes_names_a_teams_agents_by_their_qualified_names(instrument, exporter) -> None:
    instrument(
        agent_nodes=(
            "supervisor",
            "research_team",
            "writing_team",
            "research_team/supervisor",
            "research_team/search",
        )
    )
    scenarios.hierarchical_teams().invoke(task())
    # The writing team names no agent here: it is that node's own work.
    assert hops(finished(exporter)) == HEALTHY_HOPS[:5] + HEALTHY_HOPS[9:]
    assert_clean()


def test_parallel_handoff_tools_record_the_one_langgraph_dropped(instrument, exporter) -> None:
    out = scenarios.supervisor_parallel_handoffs().invoke(scenarios.user_input())
    # Which of the two ParentCommands LangGraph keeps depends on which tool finished first
    # (they run on worker threads): read it from what actually ran.
    workers = {m.name for m in out["messages"]} & {"billing", "refunds"}
    assert len(workers) == 1, workers  # one worker ran; the other never did
    (ran,) = workers
    dropped = ({"billing", "refunds"} - workers).pop()
    spans = finished(exporter)
    taken, ignored, back = requests(spans)
    assert (taken[sc.FROM_AGENT], taken[sc.TO_AGENT], taken[sc.REASON]) == (
        "supervisor",
        ran,
        sc.REASON_SEND,
    )
    assert ignored == {
        sc.RUN_ID: taken[sc.RUN_ID],
        sc.HANDOFF_ID: ignored[sc.HANDOFF_ID],
        sc.FROM_AGENT: "supervisor",
        sc.TO_AGENT: dropped,
        sc.TURN: taken[sc.TURN],
        sc.FINGERPRINT: taken[sc.FINGERPRINT],
        sc.STATE_VERSION: taken[sc.STATE_VERSION],
        sc.ROUTE_DECLARED: True,  # a declared destination: the route was not the problem
        sc.TOOL_CALL_ID: ignored[sc.TOOL_CALL_ID],
        sc.ROUTE_GOTO: ran,  # where the runtime went instead
        sc.CONTROL_BEFORE: "supervisor",
        sc.REASON: sc.REASON_IGNORED_SAME_TURN,
        sc.KIND: sc.KIND_HANDOFF,
        sc.UNOBSERVED: (sc.BOUNDARY_CONTEXT,),
        sc.GEN_AI_AGENT_NAME: "supervisor",
    }
    # Each carried by its own tool call of the supervisor's one message.
    assert taken[sc.TOOL_CALL_ID] != ignored[sc.TOOL_CALL_ID]
    assert ignored[sc.TOOL_CALL_ID].startswith("call_")
    assert (back[sc.FROM_AGENT], back[sc.TO_AGENT]) == (ran, "supervisor")
    assert admitted(spans) == {taken[sc.HANDOFF_ID], back[sc.HANDOFF_ID]}
    assert run_status(spans) == sc.RUN_STATUS_COMPLETED
    assert verdicts(spans) == {
        taken[sc.HANDOFF_ID]: sc.HEALTHY,
        ignored[sc.HANDOFF_ID]: sc.ROUTE_REJECTED,
        back[sc.HANDOFF_ID]: sc.HEALTHY,
    }
    assert run_verdict(spans) == sc.ROUTE_REJECTED
    assert_clean()
    assert_no_content(spans)


# --- end to end: the collector's verdicts, and no content anywhere ---------------------


def test_nested_teams_and_dropped_handoffs_through_the_collector(
    collector: Any, langgraph_e2e: Any
) -> None:
    ins, sent, answers = langgraph_e2e.ins, langgraph_e2e.sent, langgraph_e2e.answers
    get, done = langgraph_e2e.get, langgraph_e2e.ended

    def path(run: dict[str, Any]) -> list[tuple[str, str, str]]:
        return [(h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]]

    try:
        ids: dict[str, str] = {}
        scenarios.hierarchical_teams().invoke(task())
        ids["teams"] = ins.run_id()
        assert ins.record_outcome("report_written", True, receipt_id="rcpt-teams-1")
        with pytest.raises(GraphRecursionError):
            scenarios.hierarchical_research_loop().invoke(task(), {"recursion_limit": 8})
        ids["loop"] = ins.run_id()
        with pytest.raises(scenarios.DiskFull) as crash:
            scenarios.hierarchical_teams(disk_full=True).invoke(task())
        assert SENTINEL in str(crash.value)  # content was in the exception
        ids["crash"] = ins.run_id()
        out = scenarios.supervisor_parallel_handoffs().invoke(scenarios.user_input())
        (ran,) = {m.name for m in out["messages"]} & {"billing", "refunds"}
        dropped = ({"billing", "refunds"} - {ran}).pop()
        ids["parallel"] = ins.run_id()
    finally:
        ins.uninstrument()
    assert len(set(ids.values())) == 4

    # -- the tutorial's run: every handoff, outer and inner, healthy; verified
    run = get(ids["teams"], lambda r: done("completed", 10)(r) and r["outcomes"])
    assert path(run) == [(a, b, sc.HEALTHY) for a, b in HEALTHY_HOPS]
    assert (run["verdict"], run["loop"], run["final_agent"]) == (sc.HEALTHY, False, "supervisor")

    # -- the team's ping-pong until the limit: a loop inside the team, and max_turns
    run = get(ids["loop"], done("max_turns", 9))
    assert (run["verdict"], run["loop"]) == (sc.LOOP, True)
    assert [h["verdict"] for h in run["handoffs"]] == [sc.HEALTHY] * 2 + [sc.LOOP] * 7
    assert set(run["loop_cycle"]) == {"research_team/supervisor", "research_team/search"}
    assert run["final_agent"] == "research_team/search"

    # -- a crash inside the writing team: the handoffs were fine, the run failed
    run = get(ids["crash"], done("failed", 8))
    assert path(run) == [(a, b, sc.HEALTHY) for a, b in HEALTHY_HOPS[:8]]
    assert (run["verdict"], run["final_agent"]) == (sc.RUN_FAILED, "writing_team/doc_writer")

    # -- two handoffs asked for at once: one carried out, the other ignored and shown
    run = get(ids["parallel"], done("completed", 3))
    assert path(run) == [
        ("supervisor", ran, sc.HEALTHY),
        ("supervisor", dropped, sc.ROUTE_REJECTED),
        # This service reported an outcome (the teams' run): verification is expected,
        # and this run said it was done with no verifier — while one agent never ran.
        (ran, "supervisor", sc.FALSE_COMPLETE),
    ]
    ignored = run["handoffs"][1]
    assert (ignored["reason"], ignored["failed_boundary"]) == (sc.REASON_IGNORED_SAME_TURN, "route")
    assert ignored["next_step"] == sc.REASON_NEXT_STEPS[sc.REASON_IGNORED_SAME_TURN]
    assert run["verdict"] == sc.ROUTE_REJECTED
    assert dropped not in run["path"]  # it never ran

    # -- no content: not on the wire, not in any API answer, not in the database
    spans = sent.get_finished_spans()
    assert SENTINEL.encode() not in encode_spans(spans).SerializeToString()
    assert_content_free(
        collector,
        SENTINEL,
        stored="research_team/search",
        answers={f"answer {i}": json.dumps(a) for i, a in enumerate(answers)},
    )
