"""Agno teams traced by OpenInference (`openinference-instrumentation-agno`), judged by us.

Agno's own cookbook teams run for real in an env of their own (framework_envs.py; the
driver is tests/foreign/envs/agno/scenario.py), offline with scripted models, traced with
`AgnoInstrumentor().instrument()` (content capture on: OpenInference's default), exporting
OTLP/HTTP protobuf to a real collector subprocess — one span per export as OpenInference's
quickstart does (`SimpleSpanProcessor`: no member's span travels with its team's, so the
judge names the sender from the team's arrival), and batched. The same verdicts either
way; what a careful human reading those spans would say:

- route (`TeamMode.route`, the language router) and coordinate (the planning team): each
  member's run is a delegation from the team's leader (`kind: delegation`) — the member
  ran inside the leader's `delegate_task_to_member` call and its result returned to the
  team's run, which still held control and ended after it — seen to start, so healthy; the
  run is the team's, completed without a verifier: `unverified`, final agent the team;
- error (Writer's model raises): Agno contains it — the Writer's run ends in error, the
  leader gets the error back and finishes; the team's run completed, so `unverified`, with
  both delegations started (the limit of this source: a member's failure is not the run's);
- crash (the leader's model raises after Planner answered): the team's run ended in
  error — `run_failed`, status `failed`; the delegation before it is healthy.

In each, the run's usage is what the scripted model service reported (`PER_CALL` per
answered call, `ChatCompletionOutput.usage`), summed from OpenInference's `LLM` spans
(`HuggingFace.invoke`: the models are Agno's stock `HuggingFace` with a scripted client,
because OpenInference traces only the model classes `agno.models` defines); a call that
raised counts as a call with no tokens. The team's and members' `AGENT` spans are never
read for it.

A ping-pong is not produced: members of an Agno team never hand control to each other
(every delegation returns to the leader), and no team setting stops a run at a turn limit
with a mark on any span (docs/foreign-spans.md).

Behind the `foreign_env` marker (make test-foreign).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc

pytestmark = pytest.mark.foreign_env

EXPORT_ENV = "HANDOFFSCOPE_OI_EXPORT"
EXPORTS = ("simple", "batch")
"""One span per export (OpenInference's quickstarts) and batched (envs/oi_export.py)."""

NOT_SEEN = {"route", "control", "tool_protocol", "context"}
D = sc.KIND_DELEGATION
ROUTE = [("Multi Language Team", "English Agent", D, sc.HEALTHY)]
PLANNING = [("Planning Team", "Planner", D, sc.HEALTHY), ("Planning Team", "Writer", D, sc.HEALTHY)]
# scenario -> (run verdict, run status, final agent, [(from, to, kind, verdict)], driver status)
EXPECTED: dict[str, tuple[str, str, str, list[tuple[str, str, str, str]], str]] = {
    "route": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, "Multi Language Team", ROUTE, "COMPLETED"),
    "coordinate": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, "Planning Team", PLANNING, "COMPLETED"),
    "error": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, "Planning Team", PLANNING, "COMPLETED"),
    "crash": (sc.RUN_FAILED, sc.RUN_STATUS_FAILED, "Planning Team", PLANNING[:1], "ERROR"),
}
AUTHORS = {
    "route": ["Multi Language Team", "English Agent"],
    # leader, Planner (tool call, answer), leader, Writer, leader
    "coordinate": [
        "Planning Team",
        "Planner",
        "Planner",
        "Planning Team",
        "Writer",
        "Planning Team",
    ],
    "crash": ["Planning Team", "Planner", "Planner", "Planning Team"],
}
AUTHORS["error"] = AUTHORS["coordinate"]
PER_CALL = (10, 5)  # (input, output) tokens every answered scripted call reports
# scenario -> whose scripted call raised (its `LLM` span: a call, no token counts)
RAISED = {"route": [], "coordinate": [], "error": ["Writer"], "crash": ["Planning Team"]}


def check_verdicts(collector: Any, scenario: str) -> list[Any]:
    """The one run, as the query API serves it; returns the answers read (for the sentinel)."""
    verdict, status, final, hops, _ = EXPECTED[scenario]
    runs = collector.api("/api/v1/runs")["runs"]
    assert len(runs) == 1, runs
    run = collector.run(
        runs[0]["run_id"],
        lambda r: r.get("status") == status and len(r.get("handoffs", [])) == len(hops),
    )
    assert (run["verdict"], run["status"], run["final_agent"]) == (verdict, status, final), run
    assert (run["source"], run["source_label"]) == ("openinference", "OpenInference")
    assert run["not_observed"].startswith("from OpenInference spans: ")
    assert run["loop"] is False
    got = [(h["from_agent"], h["to_agent"], h["kind"], h["verdict"]) for h in run["handoffs"]]
    assert got == hops, run["handoffs"]
    for h in run["handoffs"]:
        seen_not = {b for b, state in h["boundaries"].items() if state == sc.NOT_OBSERVED}
        assert seen_not == NOT_SEEN, h["boundaries"]
        assert h["destination_started"] is True and h["boundaries"]["destination"] == sc.PASSED
    # Agno's session id is on every agent span: the run is found by it.
    (conversation,) = run["conversation_ids"]
    found = collector.api("/api/v1/runs", q=conversation)["runs"]
    assert [r["run_id"] for r in found] == [run["run_id"]]
    # Delegations are drawn apart on control flow.
    edges = collector.api("/api/v1/edges")["edges"]
    assert {(e["from_agent"], e["to_agent"], e["kind"]) for e in edges} == {
        (f, t, k) for f, t, k, _ in hops
    }, edges
    return [runs, run, found, edges]


def check_run_usage(run: dict[str, Any], scenario: str) -> None:
    """The run's usage from the `LLM` spans only: every call counts, the answered ones
    with `PER_CALL` tokens. No per-leg check: a member's run is a delegation, which gives
    no leg (its calls are the team's work, in the team's leg)."""
    authors = AUTHORS[scenario]
    answered = len(authors) - len(RAISED[scenario])
    usage = run["usage"]
    assert usage is not None, run
    got = (usage["input_tokens"], usage["output_tokens"], usage["model_calls"])
    assert got == (PER_CALL[0] * answered, PER_CALL[1] * answered, len(authors)), usage
    top = max(authors, key=authors.count)  # ties: the first reported, as the judge
    assert usage["model"] == "scripted-" + top.replace(" ", "-"), usage
    assert all(h["usage"] is None for h in run["handoffs"]), run["handoffs"]


@pytest.mark.parametrize("export", EXPORTS)
@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_agno_team_judged_and_content_free(
    scenario: str, export: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    run = run_scenario(framework_env("agno"), collector, scenario, {EXPORT_ENV: export})
    # The driver's own account: the scenario happened as scripted.
    assert run.result["flushed"] is True and run.result["error"] is None, run.result
    assert run.result["authors"] == AUTHORS[scenario], run.result
    assert run.result["status"] == EXPECTED[scenario][4], run.result
    assert run.result["raised"] == RAISED[scenario], run.result
    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == 0  # absorbed, not refused
    read = check_verdicts(collector, scenario)
    check_run_usage(read[1], scenario)
    # The random tail alone: a store that kept a fragment (truncated, re-encoded) is caught too.
    tail = run.sentinel.rsplit("-", 1)[1]
    assert_content_free(
        collector, tail, stored="agno-app", answers={"(verdicts)": json.dumps(read)}
    )
