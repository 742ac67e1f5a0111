"""Microsoft Agent Framework's native spans into a real collector: judged, content-free.

MAF runs for real in its own env (framework_envs.py: agent-framework-core and
agent-framework-orchestrations), offline with scripted chat clients, reproducing MAF's
published `handoff_simple.py` sample (HandoffBuilder, `with_start_agent`, the termination
condition, the request/response cycle) with telemetry set up as MAF's observability samples
do (`configure_otel_providers(enable_sensitive_data=True)`: messages, instructions, tool
arguments and results on the spans; traces, metrics and logs to the collector over
OTLP/HTTP). The driver plants a fresh sentinel in the prompt, the instructions, tool
arguments, tool outputs and two exception messages (tests/foreign/envs/maf/scenario.py).
Then:

- the driver's own account (MAF's `handoff_sent`, `output` and `executor_failed` workflow
  events) shows the scenario happened, so a driver that silently did nothing cannot pass;
- each run reads, through the query API, as a careful human reading those spans would
  judge it (docs/foreign-spans.md says what MAF's spans cannot show);
- every span the driver ended reached the collector, and none was refused;
- the run's usage is what the scripted clients reported (`PER_CALL` in each answered
  call's `ChatResponse.usage_details`), summed per run and per handoff leg from the `chat`
  spans only (`invoke_agent` carries its calls' total again: never added); a call that
  raised counts as a call with no tokens;
- the sentinel is in no API answer, not in /metrics, not in the collector's log, in no
  byte of any file the collector left and in no stored value.

Behind the `foreign_env` marker (make test-foreign).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from foreign_support import check_usage
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc

pytestmark = pytest.mark.foreign_env

LABEL = "Microsoft Agent Framework"
NOT_SEEN = {"route", "control", "tool_protocol", "context"}
TB, BT = ("triage", "billing"), ("billing", "triage")
# Where MAF puts content: with its default (the GenAI conventions above v1.36, "latest") in
# span attributes (messages, instructions, tool arguments and results); with the v1.36
# baseline (any OTEL_SEMCONV_STABILITY_OPT_IN without `gen_ai_latest_experimental`) in
# log records sent to /v1/logs, off the spans. The spans' structure is the same.
VARIANTS = {"latest": {}, "baseline": {"OTEL_SEMCONV_STABILITY_OPT_IN": "http"}}
PER_CALL = (10, 5)  # (input, output) tokens every answered scripted call reports
MODEL = "scripted-model"  # the scripted responses' `model` (MAF's `gen_ai.response.model`)


def check_runs(collector: Any, runs_expected: int) -> list[dict[str, Any]]:
    """Every run, in start order, once judged (each `workflow.run` call is a trace, a run)."""
    runs = collector.api("/api/v1/runs")["runs"]
    assert len(runs) == runs_expected, runs
    detail = [
        collector.run(r["run_id"], lambda run: run.get("status") not in (None, "started"))
        for r in runs
    ]
    for run in detail:
        assert (run["source"], run["source_label"]) == ("agent_framework", LABEL), run
        assert run["not_observed"].startswith(f"from {LABEL} spans: "), run
        for h in run["handoffs"]:
            # Boundaries the source cannot show are not_observed, never passed.
            seen_not = {b for b, state in h["boundaries"].items() if state == sc.NOT_OBSERVED}
            assert seen_not == NOT_SEEN, h["boundaries"]
    return sorted(detail, key=lambda run: run["started_at"] or "")


def hops(run: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]]


def run_maf(
    scenario: str,
    framework_env: Any,
    run_scenario: Any,
    collector: Any,
    variant: str = "latest",
) -> tuple[Any, dict[str, Any]]:
    run = run_scenario(framework_env("maf"), collector, scenario, VARIANTS[variant])
    result = run.result
    # MAF's documented setup exports metrics and logs to the same endpoint: accepted too.
    assert "Failed to export" not in run.output, run.output
    assert result["flushed"] is True and result["spans"] > 0, result
    assert collector.metric("handoffscope_spans_received_total") == result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == 0  # absorbed, not refused
    return run, result


def content_free(collector: Any, run: Any, read: list[Any]) -> None:
    # The random tail alone: a store that kept a fragment (truncated, re-encoded) is caught too.
    tail = run.sentinel.rsplit("-", 1)[1]
    assert_content_free(collector, tail, stored="maf-app", answers={"(verdicts)": json.dumps(read)})


@pytest.mark.parametrize("variant", VARIANTS)
def test_healthy_handoff(
    variant: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    """triage looks the account up and hands off to billing, whose answer ends the
    conversation (the sample's termination condition): one run, one healthy handoff."""
    run, result = run_maf("healthy", framework_env, run_scenario, collector, variant)
    assert (result["handoffs"], result["authors"]) == ([list(TB)], list(TB)), result
    assert (result["error"], result["runs"]) == (None, 1), result

    (judged,) = check_runs(collector, 1)
    assert (judged["verdict"], judged["status"], judged["loop"]) == (
        sc.UNVERIFIED,
        sc.RUN_STATUS_COMPLETED,
        False,
    ), judged
    assert hops(judged) == [(*TB, sc.HEALTHY)]
    assert judged["handoffs"][0]["boundaries"]["destination"] == sc.PASSED
    assert (judged["path"], judged["final_agent"]) == (list(TB), "billing")
    assert result["calls"] == ["triage", "triage", "billing"], result  # lookup, handoff, answer
    check_usage(judged, result["calls"], PER_CALL, model=MODEL)
    content_free(collector, run, [judged])


def test_pingpong_to_the_superstep_limit_is_a_loop(
    framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    """triage and billing hand off to each other until the workflow's superstep limit
    (`max_iterations`) raises `WorkflowConvergenceException`: the run is `max_turns`, the
    first hop healthy, every return a loop — the last one included, whose message the
    limit left undelivered (its destination never ran)."""
    run, result = run_maf("pingpong", framework_env, run_scenario, collector)
    sent = [tuple(h) for h in result["handoffs"]]
    assert len(sent) > 4 and result["error"] == "WorkflowConvergenceException", result
    assert sent == [TB if k % 2 == 0 else BT for k in range(len(sent))], result
    # Every handoff but the last one's destination ran.
    assert len(result["authors"]) == len(sent), result

    (judged,) = check_runs(collector, 1)
    assert (judged["verdict"], judged["status"], judged["loop"]) == (
        sc.LOOP,
        sc.RUN_STATUS_MAX_TURNS,
        True,
    ), judged
    assert hops(judged) == [(*TB, sc.HEALTHY)] + [
        (*(TB if k % 2 == 0 else BT), sc.LOOP) for k in range(1, len(sent))
    ]
    # The last one's destination never ran: no admission, nor a refusal (not `False`).
    started = [h["destination_started"] for h in judged["handoffs"]]
    assert started == [True] * (len(sent) - 1) + [None], started
    assert judged["handoffs"][-1]["boundaries"]["destination"] == sc.UNKNOWN
    # One call per agent turn; the last handoff's leg has none (its destination never ran).
    assert len(result["calls"]) == len(sent), result
    check_usage(judged, result["calls"], PER_CALL, model=MODEL)
    assert judged["handoffs"][-1]["usage"] is None
    content_free(collector, run, [judged])


def test_undeclared_handoff_is_refused_by_maf_before_any_span_shows_it(
    framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    """triage may hand off to billing only (`add_handoff`), and its model calls
    `handoff_to_refunds`: MAF never gave triage that tool, answers the model "not found"
    inside the same turn, and control never moves. The attempt is only in the chat span's
    message content, so there is no handoff to judge: the run reads as triage's turn alone
    (then the user ends the conversation: a second `workflow.run`, a second run)."""
    run, result = run_maf("undeclared", framework_env, run_scenario, collector)
    assert (result["handoffs"], result["authors"], result["error"]) == ([], ["triage"], None)
    assert result["runs"] == 2, result

    first, second = check_runs(collector, 2)
    for judged in (first, second):
        assert (judged["verdict"], judged["status"], judged["handoffs"]) == (
            sc.UNVERIFIED,
            sc.RUN_STATUS_COMPLETED,
            [],
        ), judged
    assert first["final_agent"] == "triage"
    # Both of triage's calls (the refused handoff, then the question) are the first run's;
    # ending the conversation calls no model: the second run reports no usage (null, not 0).
    assert result["calls"] == ["triage", "triage"], result
    check_usage(first, result["calls"], PER_CALL, model=MODEL)
    assert second["usage"] is None, second
    content_free(collector, run, [first, second])


@pytest.mark.parametrize("variant", VARIANTS)
def test_receiver_crash_fails_the_run_not_the_handoff(
    variant: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    """triage hands off to billing; billing's tool raises (MAF gives the model an error
    result), then billing's model call raises: the agent run fails and the workflow with
    it. The handoff itself was carried out — billing started — so it is healthy, and the
    run is `run_failed`."""
    run, result = run_maf("error", framework_env, run_scenario, collector, variant)
    assert (result["handoffs"], result["authors"]) == ([list(TB)], list(TB)), result
    assert (result["failed"], result["error"]) == (["billing"], "RuntimeError"), result

    (judged,) = check_runs(collector, 1)
    assert (judged["verdict"], judged["status"], judged["loop"]) == (
        sc.RUN_FAILED,
        sc.RUN_STATUS_FAILED,
        False,
    ), judged
    assert hops(judged) == [(*TB, sc.HEALTHY)]
    assert judged["handoffs"][0]["destination_started"] is True
    # billing's second call raised: its `chat` span (status error) reports no tokens but is
    # still a model call, in billing's leg.
    assert (result["calls"], result["raised"]) == (["triage", "billing"], ["billing"]), result
    tokens = (PER_CALL[0] * 2, PER_CALL[1] * 2)
    usage, leg = judged["usage"], judged["handoffs"][0]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["model_calls"]) == (*tokens, 3)
    assert (leg["input_tokens"], leg["output_tokens"], leg["model_calls"]) == (*PER_CALL, 2)
    content_free(collector, run, [judged])
