"""CrewAI through handoffscope's own adapter (`handoffscope.instrumentation.crewai`).

CrewAI's hierarchical-process example (a Researcher and a Writer, CrewAI's manager created
from `manager_llm`) runs for real in an env of its own (framework_envs.py; the driver is
tests/foreign/envs/crewai/scenario.py, which installs the repository's `instrumentation/`
through `local.txt`), offline with scripted `BaseLLM`s, instrumented with
`CrewAIInstrumentor().instrument(tracer_provider=...)`, exporting OTLP/HTTP protobuf to a
real collector subprocess — with the models calling tools in CrewAI's ReAct text and
natively (OpenAI-style tool calls). What a careful human reading CrewAI's events would say:

- healthy: the manager asked the Writer a question and delegated the research to the
  Researcher; each coworker started, answered, and control stayed with the manager — two
  delegations (`kind: delegation`), healthy, on declared routes; the run completed with no
  verifier: `unverified`, final agent the manager.
- pingpong: the manager delegated the same research to the Researcher, the same write-up
  to the Writer, and round again, with no tool work in between — every delegation after
  each coworker's first repeats one (`loop`) — until CrewAI's guard on identical tool calls
  (`MAX_REPEATED_TOOL_CALLS`) raised `ToolExecutionFailedError` and the kickoff failed: the
  run reads `loop` (the worse verdict), status `failed`. How many rounds CrewAI allows is
  its business: the expected delegations are built from the driver's account of who
  answered.
- undeclared: the manager asked for "Legal Counsel", whom the crew does not have; CrewAI
  answered "no such coworker" and nobody started — `route_rejected`, no destination named
  (the model's text is never sent); then a healthy delegation to the Researcher.
- error: the Researcher's model raised on every try; CrewAI's delegation tool caught it and
  gave the manager the error text (the coworker had started: the delegation itself is
  healthy); the manager's model then raised and the kickoff failed — `run_failed`, status
  `failed`.

CrewAI's quickstart crew (the `crewai create crew` template: a researcher's task, then a
reporting analyst's, `Process.sequential`) runs through the same adapter — each task's
output is handed to the next task's agent as its context, a handover of the work:

- sequential: one handover, researcher -> reporting analyst (`kind: handoff`, declared
  route: the crew's task order), healthy; the run completed, final agent the analyst.
- sequential_crash: the analyst's model raised on every try; the handover happened (the
  analyst started) and reads healthy, the run `run_failed`, status `failed`.
- sequential_nocontext: the reporting task declares `context=[]` and gets no earlier
  output. CrewAI declares no keys a task requires, so this is not `context_incomplete`:
  the same healthy handover, its context boundary `not_observed` (the adapter's docstring,
  "Task handovers").

With OpenInference's CrewAI instrumentor on beside the adapter (its content capture on),
the verdicts are the same and the sentinel still nowhere.

Agents are named by the role the app wrote (`{topic} Senior Data Researcher`), never the
role CrewAI ran with, into which it interpolated the kickoff's inputs (the sentinel here).

The sentinel (prompt, kickoff inputs, delegated task and context, tool arguments and output, answers,
exception messages) is in no API answer, not in /metrics or the collector's log, and in no
file the collector left (support.privacy.assert_content_free).

Behind the `foreign_env` marker (make test-foreign): the env costs a build on first use.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from foreign_support import refused_whole
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc

pytestmark = pytest.mark.foreign_env

CALLING_ENV = "HANDOFFSCOPE_CREWAI_CALLING"
CALLING = ("react", "native")
"""How the scripted models call tools: CrewAI's ReAct text, or native tool calls (CrewAI's
other executor path, whose tool events name tools and arguments differently)."""
MANAGER, RESEARCHER, WRITER = "Crew Manager", "Researcher", "Writer"
D = sc.KIND_DELEGATION
H = sc.HEALTHY
TO_RESEARCHER = (MANAGER, RESEARCHER, D, H)
TO_WRITER = (MANAGER, WRITER, D, H)
REPEATS = 5
"""CrewAI's `MAX_REPEATED_TOOL_CALLS`: a run repeating one tool call (same arguments, same
result) this many times is stopped (`ToolExecutionFailedError`)."""
NOT_SEEN = {sc.BOUNDARY_CONTROL, sc.BOUNDARY_TOOL_PROTOCOL, sc.BOUNDARY_CONTEXT}
# scenario -> (run verdict, run status, loop, [(from, to, kind, verdict)], driver's failure)
EXPECTED: dict[str, tuple[str, str, bool, list[tuple[Any, Any, str, str]], Any]] = {
    "healthy": (
        sc.UNVERIFIED,
        sc.RUN_STATUS_COMPLETED,
        False,
        [(MANAGER, WRITER, D, H), TO_RESEARCHER],
        None,
    ),
    "pingpong": (
        sc.LOOP,
        sc.RUN_STATUS_FAILED,
        True,
        [],  # from the driver's account: pingpong_hops
        "ToolExecutionFailedError",
    ),
    "undeclared": (
        sc.ROUTE_REJECTED,
        sc.RUN_STATUS_COMPLETED,
        False,
        [(MANAGER, None, D, sc.ROUTE_REJECTED), TO_RESEARCHER],
        None,
    ),
    "error": (sc.RUN_FAILED, sc.RUN_STATUS_FAILED, False, [TO_RESEARCHER], "RuntimeError"),
}


def pingpong_hops(calls: list[str]) -> list[tuple[Any, Any, str, str]]:
    """The manager's delegations, in the order its coworkers answered: each coworker's
    first one healthy, every later one the same request again with no work between (loop)."""
    coworkers = [c for c in calls if c != MANAGER]
    return [(MANAGER, c, D, sc.LOOP if c in coworkers[:k] else H) for k, c in enumerate(coworkers)]


def check_verdicts(collector: Any, scenario: str, calls: list[str]) -> list[Any]:
    """The one run, as the query API serves it; returns the answers read (for the sentinel)."""
    verdict, status, loop, hops, _ = EXPECTED[scenario]
    if scenario == "pingpong":
        hops = pingpong_hops(calls)
    runs = collector.api("/api/v1/runs")["runs"]
    assert len(runs) == 1, runs

    def seen(r: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(h["from_agent"], h["to_agent"], h["kind"], h["verdict"]) for h in r["handoffs"]]

    # Judging is asynchronous and a delegation's verdict moves as its admission arrives:
    # wait for the expected picture (or time out with the last answer, asserted below).
    run = collector.run(
        runs[0]["run_id"],
        lambda r: (r.get("verdict"), r.get("status")) == (verdict, status) and seen(r) == hops,
    )
    assert (run["verdict"], run["status"], run["loop"]) == (verdict, status, loop), run
    assert seen(run) == hops, run["handoffs"]
    for h, (_, to, _, _) in zip(run["handoffs"], hops, strict=True):
        seen_not = {b for b, state in h["boundaries"].items() if state == sc.NOT_OBSERVED}
        assert seen_not == NOT_SEEN, h["boundaries"]
        if to is None:  # the model named no agent of the crew: nobody started
            assert h["destination_started"] is False, h
            assert h["boundaries"][sc.BOUNDARY_ROUTE] == sc.FAILED, h["boundaries"]
        else:
            assert h["destination_started"] is True, h
            assert h["boundaries"][sc.BOUNDARY_ROUTE] == sc.PASSED, h["boundaries"]
    if status != sc.RUN_STATUS_FAILED:
        assert run["final_agent"] == MANAGER, run
    return [runs, run]


@pytest.mark.parametrize("calling", CALLING)
@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_crewai_hierarchical_crew_judged_and_content_free(
    scenario: str, calling: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    run = run_scenario(framework_env("crewai"), collector, scenario, {CALLING_ENV: calling})
    # The driver's own account: the scenario happened as scripted.
    assert run.result["flushed"] is True, run.result
    assert run.result["failed"] == EXPECTED[scenario][4], run.result
    calls = run.result["calls"]
    # The path asked for was the path taken (every scenario's manager calls a tool first).
    assert (run.result["native_calls"] > 0) is (calling == "native"), run.result
    assert calls[0] == MANAGER, calls
    if scenario == "pingpong":
        # Round and round (manager, Researcher, manager, Writer, ...) until CrewAI's guard
        # on identical tool calls stopped the crew after a Researcher's answer.
        coworkers = [c for c in calls if c != MANAGER]
        assert coworkers == [RESEARCHER, WRITER] * (len(coworkers) // 2) + [RESEARCHER], calls
        assert len(coworkers) >= 2 * REPEATS - 1, calls
    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == 0
    read = check_verdicts(collector, scenario, calls)
    # The random tail alone: a store that kept a fragment (truncated, re-encoded) is caught too.
    tail = run.sentinel.rsplit("-", 1)[1]
    assert_content_free(
        collector, tail, stored="crewai-app", answers={"(verdicts)": json.dumps(read)}
    )


RESEARCHER_ROLE = "{topic} Senior Data Researcher"
ANALYST_ROLE = "{topic} Reporting Analyst"
HANDOVER = (RESEARCHER_ROLE, ANALYST_ROLE, sc.KIND_HANDOFF, H)
# scenario -> (run verdict, run status, final agent, driver's failure)
SEQUENTIAL: dict[str, tuple[str, str, str, Any]] = {
    "sequential": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, ANALYST_ROLE, None),
    # The analyst was handed the work (it started) and crashed on it.
    "sequential_crash": (sc.RUN_FAILED, sc.RUN_STATUS_FAILED, RESEARCHER_ROLE, "RuntimeError"),
    "sequential_nocontext": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, ANALYST_ROLE, None),
}


def check_sequential(collector: Any, scenario: str, run: Any) -> list[Any]:
    """A sequential scenario's one run, as the query API serves it (the answers read)."""
    verdict, status, final, failure = SEQUENTIAL[scenario]
    assert run.result["flushed"] is True, run.result
    assert run.result["failed"] == failure, run.result
    # The researcher searched, then answered; then the analyst's model was called (once,
    # or on each of CrewAI's retries when it raises).
    calls = run.result["calls"]
    assert calls[:2] == ["researcher", "researcher"] and set(calls[2:]) == {"reporting_analyst"}
    runs = collector.api("/api/v1/runs")["runs"]
    assert len(runs) == 1, runs

    def seen(r: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(h["from_agent"], h["to_agent"], h["kind"], h["verdict"]) for h in r["handoffs"]]

    judged = collector.run(
        runs[0]["run_id"],
        lambda r: (
            (r.get("verdict"), r.get("status")) == (verdict, status) and seen(r) == [HANDOVER]
        ),
    )
    assert (judged["verdict"], judged["status"], judged["loop"]) == (verdict, status, False)
    assert seen(judged) == [HANDOVER], judged["handoffs"]
    assert judged["final_agent"] == final, judged
    (handover,) = judged["handoffs"]
    assert handover["destination_started"] is True, handover
    assert handover["boundaries"][sc.BOUNDARY_ROUTE] == sc.PASSED, handover["boundaries"]
    seen_not = {b for b, state in handover["boundaries"].items() if state == sc.NOT_OBSERVED}
    assert seen_not == NOT_SEEN, handover["boundaries"]
    return [runs, judged]


@pytest.mark.parametrize("scenario", list(SEQUENTIAL))
def test_crewai_sequential_crew_task_handovers(
    scenario: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    run = run_scenario(framework_env("crewai"), collector, scenario)
    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == 0
    read = check_sequential(collector, scenario, run)
    tail = run.sentinel.rsplit("-", 1)[1]
    assert_content_free(
        collector, tail, stored="crewai-app", answers={"(verdicts)": json.dumps(read)}
    )


OPENINFERENCE_ENV = {"HANDOFFSCOPE_CREWAI_OPENINFERENCE": "1"}
OPENINFERENCE_SCOPE = "openinference.instrumentation.crewai"


@pytest.mark.parametrize("scenario", ["healthy", "error", "sequential", "sequential_crash"])
def test_crewai_adapter_beside_openinference_content_capture(
    scenario: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    """OpenInference's CrewAI instrumentor on too (content capture on: task descriptions,
    inputs, outputs; even its span names carry the interpolated roles): its spans reach the
    collector and are refused whole (they name agents only inside content and show no
    delegation, docs/foreign-spans.md), the adapter's verdicts are unchanged, and the
    sentinel is nowhere."""
    run = run_scenario(framework_env("crewai"), collector, scenario, OPENINFERENCE_ENV)
    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    # OpenInference's spans (the content) reached the collector and were refused whole:
    # the sentinel check below is not vacuous.
    listing = refused_whole(collector, OPENINFERENCE_SCOPE)
    if scenario in SEQUENTIAL:
        read = check_sequential(collector, scenario, run)
    else:
        assert run.result["failed"] == EXPECTED[scenario][4], run.result
        read = check_verdicts(collector, scenario, run.result["calls"])
    tail = run.sentinel.rsplit("-", 1)[1]
    assert_content_free(
        collector,
        tail,
        stored="crewai-app",
        answers={"(verdicts)": json.dumps([listing, *read])},
    )
