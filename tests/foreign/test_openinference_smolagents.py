"""smolagents managed agents traced by OpenInference (`openinference-instrumentation-smolagents`).

smolagents' own multi-agent example (a `CodeAgent` managing `web_search_agent`, a
`ToolCallingAgent`) runs for real in an env of its own (framework_envs.py; the driver is
tests/foreign/envs/smolagents/scenario.py), offline with scripted models and local
stand-ins for the two network tools, traced with `SmolagentsInstrumentor().instrument()`
(content capture on: OpenInference's default), exporting OTLP/HTTP protobuf to a real
collector subprocess — one span per export as OpenInference's quickstart does
(`SimpleSpanProcessor`), and batched. What a careful human reading those spans would say:

- delegate: the manager (`CodeAgent`, the example gives it no name) called its managed
  agent from its code and got the report back — a delegation (`kind: delegation`), seen
  to start, to an agent the manager lists among its managed agents (route `passed` when
  the manager's span travelled with it, batched; `not_observed` one span per export); the
  run completed without a verifier: `unverified`, final agent `CodeAgent`;
- error (the managed agent's model raises): smolagents raises it out of the managed
  agent's run, the manager's code step fails, the manager answers anyway: the run
  completed, `unverified`. The delegation is NOT seen: OpenInference never ends the span
  of a run that raised (the managed agent's run span never reaches anyone);
- crash (the manager's model raises after the report came back): the run raised
  `AgentGenerationError` — `run_failed`, status `failed`, read from the step it happened
  in; the manager's own run span never ends either, so the delegation is seen from the
  managed agent's side only: it started, its sender unknown.

In each, the run's usage is what the scripted model service reported (`PER_CALL` per
answered call, `ChatCompletionOutput.usage`), summed from OpenInference's `LLM` spans
(`InferenceClientModel.generate`); a call that raised counts as a call with no tokens.

A ping-pong is not produced: a managed agent cannot hand control on (every call returns
to its manager), and `max_steps` ends a run with an answer and an OK span (nothing marks
it; docs/foreign-spans.md).

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

NOT_SEEN = {"control", "tool_protocol", "context"}
"""Boundaries never seen; `route` is seen where the manager's span names its managed agents."""
DELEGATION = [("CodeAgent", "web_search_agent", sc.KIND_DELEGATION, sc.HEALTHY)]
# The manager's span never ends when its run raises: its delegation names no sender.
UNSENT = [(None, "web_search_agent", sc.KIND_DELEGATION, sc.HEALTHY)]
# scenario -> (run verdict, run status, final agent, [(from, to, kind, verdict)], error)
EXPECTED: dict[str, tuple[str, str, str | None, list[tuple[Any, str, str, str]], Any]] = {
    "delegate": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, "CodeAgent", DELEGATION, None),
    "error": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, "CodeAgent", [], None),
    "crash": (sc.RUN_FAILED, sc.RUN_STATUS_FAILED, None, UNSENT, "AgentGenerationError"),
}
PER_CALL = (10, 5)  # (input, output) tokens every answered scripted call reports
# scenario -> whose scripted call raised (its `LLM` span: a call, no token counts)
RAISED = {"delegate": [], "error": ["web_search_agent"], "crash": ["manager"]}
AUTHORS = {
    "delegate": ["manager", *["web_search_agent"] * 3, "manager"],
    "error": ["manager", "web_search_agent", "manager"],
    "crash": ["manager", *["web_search_agent"] * 3, "manager"],
}


def check_verdicts(collector: Any, scenario: str, export: str) -> list[Any]:
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
    assert run["loop"] is False
    got = [(h["from_agent"], h["to_agent"], h["kind"], h["verdict"]) for h in run["handoffs"]]
    assert got == hops, run["handoffs"]
    for h in run["handoffs"]:
        seen_not = {b for b, state in h["boundaries"].items() if state == sc.NOT_OBSERVED}
        if export == "simple" or h["from_agent"] is None:
            # The manager's span travelled alone (or never ended): its list of managed
            # agents is not known when the delegation is judged.
            assert seen_not == NOT_SEEN | {"route"}, h["boundaries"]
        else:
            assert seen_not == NOT_SEEN, h["boundaries"]
            assert h["boundaries"]["route"] == sc.PASSED  # a managed agent of the manager
        assert h["destination_started"] is True and h["boundaries"]["destination"] == sc.PASSED
    edges = collector.api("/api/v1/edges")["edges"]
    assert {(e["from_agent"], e["to_agent"], e["kind"]) for e in edges} == {
        (f, t, k) for f, t, k, _ in hops
    }, edges
    return [runs, run, edges]


def check_run_usage(run: dict[str, Any], scenario: str) -> None:
    """The run's usage from the `LLM` spans only (`<name>.run` agent spans carry their
    calls' total again: never added): every call counts, the answered ones with
    `PER_CALL` tokens. No per-leg check: a managed agent's run is a delegation, which gives
    no leg (its calls are its manager's work)."""
    calls = len(AUTHORS[scenario])
    answered = calls - len(RAISED[scenario])
    usage = run["usage"]
    assert usage is not None, run
    got = (usage["input_tokens"], usage["output_tokens"], usage["model_calls"])
    assert got == (PER_CALL[0] * answered, PER_CALL[1] * answered, calls), usage
    authors = AUTHORS[scenario]
    assert usage["model"] == f"scripted-{max(authors, key=authors.count)}", usage
    assert all(h["usage"] is None for h in run["handoffs"]), run["handoffs"]


@pytest.mark.parametrize("export", EXPORTS)
@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_smolagents_managed_agent_judged_and_content_free(
    scenario: str, export: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    run = run_scenario(framework_env("smolagents"), collector, scenario, {EXPORT_ENV: export})
    # The driver's own account: the scenario happened as scripted.
    assert run.result["flushed"] is True, run.result
    assert run.result["authors"] == AUTHORS[scenario], run.result
    assert run.result["error"] == EXPECTED[scenario][4], run.result
    assert run.result["raised"] == RAISED[scenario], run.result
    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == 0  # absorbed, not refused
    read = check_verdicts(collector, scenario, export)
    check_run_usage(read[1], scenario)
    # The random tail alone: a store that kept a fragment (truncated, re-encoded) is caught too.
    tail = run.sentinel.rsplit("-", 1)[1]
    assert_content_free(
        collector, tail, stored="smolagents-app", answers={"(verdicts)": json.dumps(read)}
    )
