"""Semantic Kernel's native spans into a real collector: SK's handoff sample, judged, content-free.

SK runs for real in its own env (framework_envs.py), offline: its published
`HandoffOrchestration` sample (tests/foreign/envs/semantic_kernel/scenario.py) with scripted
chat services, its telemetry on with content capture (`..._OTEL_DIAGNOSTICS_SENSITIVE`),
exporting OTLP/HTTP protobuf to a real collector subprocess. The driver plants a fresh
sentinel in the task, the instructions, tool arguments, tool outputs, a function's summary
and an exception message. Then:

- the driver's own account shows the scenario happened (who held control, which handoffs
  the models asked for, how it ended), so a driver that silently did nothing cannot pass;
- the run reads, through the query API, as a careful human reading those spans would
  judge it (`EXPECTED`; docs/foreign-spans.md says what SK's spans cannot show: a call to an
  undeclared handoff is refused before any span, a tool's exception goes back to the model,
  and nothing marks an app's `cancel()`, so a bounce the app cut off is its last handoff
  never started, not a loop at a limit);
- every span the driver ended reached the collector, and the only one refused is the app's
  own `main` span (SK's samples open it; its scope is the app's, which no translator
  claims): every SK span is translated or absorbed; SK's log records (the chat messages,
  which the samples export to the same endpoint) reached it and were discarded;
- the sentinel is in no API answer, not in /metrics, not in the collector's log, in no byte
  of any file the collector left and in no text column of any table.

The healthy, ping-pong and crash scenarios run again without the app's span (as an app
that did not add one runs them): SK then starts a trace per message it delivers, and the
orchestration must still read as one run (`sk-<topic>`, the translator's docstring) with
the same verdicts.

Behind the `foreign_env` marker (make test-foreign): the env costs a build on first use, and
SK seconds to import.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from foreign_support import check_usage
from support.privacy import assert_content_free

from handoffscope.collector.processor.translate.semantic_kernel import SemanticKernelTranslator
from handoffscope.instrumentation import semconv as sc

pytestmark = pytest.mark.foreign_env

# A short grace window: the ping-pong's last handoff, cut off by the app, never starts.
COLLECTOR_ARGS = ("--grace-seconds", "2")
SK_SCOPES = SemanticKernelTranslator.scopes
UNREADABLE = "(unreadable scope)"  # how /api/v1/sources lists a scope name it won't repeat
APP_SCOPE = "observability"  # the samples' `main` span: the app's own tracer
# Content attributes every scenario sets (the task, tool arguments: docs/foreign-spans.md).
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.tool.call.arguments")
TRIAGE, REFUND = "TriageAgent", "RefundAgent"
TR, RT = (TRIAGE, REFUND), (REFUND, TRIAGE)
H, DNS = sc.HEALTHY, sc.DESTINATION_NOT_STARTED
PER_CALL = (10, 5)  # (input, output) tokens every answered scripted request reports
NOT_SEEN = {sc.BOUNDARY_CONTROL, sc.BOUNDARY_TOOL_PROTOCOL, sc.BOUNDARY_CONTEXT}
# scenario -> run verdict, run status, loop, final agent, [(from, to, handoff verdict)]
EXPECTED: dict[str, tuple[str, str | None, bool, str, list[tuple[str, str, str]]]] = {
    "healthy": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, False, REFUND, [(*TR, H)]),
    # SK answers the model "not part of the provided tools" before any span: the refused
    # call to OrderReturnAgent is invisible, and the run reads as the healthy one.
    "undeclared": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, False, REFUND, [(*TR, H)]),
    # The tool's exception is the model's tool result; RefundAgent then completes the task.
    "error": (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, False, REFUND, [(*TR, H)]),
    # RefundAgent's invocation failed: the orchestration failed with it, after a healthy handoff.
    "crash": (sc.RUN_FAILED, sc.RUN_STATUS_FAILED, False, REFUND, [(*TR, H)]),
    # No turn limit in HandoffOrchestration and no span for the app's cancel(): five
    # carried-out handoffs, and the sixth, whose destination the cancel stopped, never started.
    "pingpong": (
        DNS,
        None,
        False,
        REFUND,
        [(*TR, H), (*RT, H), (*TR, H), (*RT, H), (*TR, H), (*RT, DNS)],
    ),
}


def check_outcome(scenario: str, result: dict[str, Any]) -> None:
    """What the scenario must have done, by the driver's own account."""
    assert result["flushed"] is True and result["logs_flushed"] is True
    assert result["spans"] > 0
    assert result["logs"] > 0  # SK's chat-message log records, content included
    assert result["scenario"] == scenario
    if scenario == "pingpong":
        assert result["held"] == [TRIAGE, REFUND] * 3, result
        assert [tuple(h) for h in result["handoffs"]] == [TR, RT] * 3, result
        assert result["ended"] == "cancelled", result
        return
    assert result["held"] == [TRIAGE, REFUND], result
    asked = [TR, (REFUND, "OrderReturnAgent")] if scenario == "undeclared" else [TR]
    assert [tuple(h) for h in result["handoffs"]] == asked, result
    assert result["ended"] == ("failed:RuntimeError" if scenario == "crash" else "completed")


def check_verdicts(collector: Any, scenario: str) -> list[Any]:
    """The one run, as the query API serves it; returns the answers read (for the sentinel)."""
    verdict, status, loop, final, hops = EXPECTED[scenario]
    runs = collector.api("/api/v1/runs")["runs"]
    assert len(runs) == 1, runs
    run = collector.run(
        runs[0]["run_id"],
        lambda r: (
            r.get("verdict") == verdict
            and r.get("status") == status
            and len(r.get("handoffs", [])) == len(hops)
        ),
    )
    assert (run["verdict"], run["status"], run["loop"]) == (verdict, status, loop), run
    assert run["final_agent"] == final, run
    assert (run["source"], run["source_label"]) == ("semantic_kernel", "Semantic Kernel")
    assert run["not_observed"].startswith("from Semantic Kernel spans: "), run
    assert [(h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]] == hops
    for h in run["handoffs"]:
        seen_not = {b for b, state in h["boundaries"].items() if state == sc.NOT_OBSERVED}
        assert seen_not == NOT_SEEN, h["boundaries"]
        # An executed transfer function is one of the sender's declared handoffs.
        assert h["boundaries"][sc.BOUNDARY_ROUTE] == sc.PASSED, h
        expected = sc.PASSED if h["destination_started"] else sc.FAILED
        assert h["boundaries"][sc.BOUNDARY_DESTINATION] == expected, h
    assert run["path"][:2] == [TRIAGE, REFUND]
    return [runs, run]


def check_run_usage(run: dict[str, Any], result: dict[str, Any]) -> None:
    """The run's usage, from the `chat` spans only (each agent's `invoke_agent` is never
    read for it), each placed in the leg of the agent whose invocation it ran under — with
    or without the app's span (then across SK's per-message traces)."""
    calls, raised = result["calls"], result["raised"]
    if not raised:
        top = max(calls, key=calls.count)  # ties: the first reported, as the judge
        check_usage(run, calls, PER_CALL, model=f"scripted-{top}")
        return
    # crash: RefundAgent's request raised — its `chat` span (status error) reports no
    # tokens but is still a call, in RefundAgent's leg.
    assert (calls, raised) == ([TRIAGE], [REFUND]), result
    usage, leg = run["usage"], run["handoffs"][0]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["model_calls"]) == (*PER_CALL, 2)
    assert (leg["input_tokens"], leg["output_tokens"], leg["model_calls"]) == (None, None, 1), leg


def check_run_and_privacy(collector: Any, run: Any, scenario: str, app_span: bool) -> None:
    """Everything one scenario's collector must show, with or without the app's span."""
    check_outcome(scenario, run.result)
    # The driver counts its `main` span too: the one span refused (the app's scope).
    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == (1 if app_span else 0)
    listing = collector.api("/api/v1/sources")
    sources = {s["scope"]: s for s in listing["sources"]}
    if app_span:
        assert sources.pop(APP_SCOPE)["refused_spans"] == 1
    # `agent_runtime InProcessRuntime` is not an identifier: listed, but not by its name.
    assert set(sources) <= {*SK_SCOPES, UNREADABLE} and SK_SCOPES[0] in sources, sources
    assert all(listed["refused_spans"] == 0 for listed in sources.values()), sources
    # The samples send SK's log records (the chat messages) to the same endpoint.
    assert (
        collector.metric("handoffscope_otlp_discarded_total", transport="http", signal="logs") >= 1
    )
    # The content reached the collector (and was dropped, counted by name): the sentinel
    # check below is not vacuous.
    drops = collector.api("/api/v1/drops")["drops"]
    dropped = {d["attribute"] for d in drops}
    assert {f"semantic_kernel:{key}" for key in CONTENT_KEYS} <= dropped, dropped
    verdicts = check_verdicts(collector, scenario)
    check_run_usage(verdicts[1], run.result)
    run_id = verdicts[1]["run_id"]
    # With the app's span the run is its trace; without, every agent turn is a trace of
    # its own and the run is the orchestration's topic (the translator's module docstring).
    assert run_id.startswith("sk-") is not app_span, run_id
    read = [listing, drops, *verdicts]
    # The random tail alone: a store that kept a fragment (truncated, re-encoded) is caught too.
    tail = run.sentinel.rsplit("-", 1)[1]
    assert_content_free(
        collector, tail, stored="sk-handoff-sample", answers={"(verdicts)": json.dumps(read)}
    )


@pytest.mark.parametrize("scenario", ["healthy", "pingpong", "undeclared", "error", "crash"])
def test_sk_handoff_sample_judged_without_content(
    scenario: str, framework_env: Any, run_scenario: Any, collector_factory: Any
) -> None:
    collector = collector_factory(args=COLLECTOR_ARGS)
    run = run_scenario(framework_env("semantic_kernel"), collector, scenario)
    check_run_and_privacy(collector, run, scenario, app_span=True)


@pytest.mark.parametrize("scenario", ["healthy", "pingpong", "crash"])
def test_sk_handoff_sample_without_an_app_span_is_one_run(
    scenario: str, framework_env: Any, run_scenario: Any, collector_factory: Any
) -> None:
    """The sample as an app that did not open a span of its own runs it: SK starts a trace
    per message it delivers (16 traces for the healthy one, 20 for the ping-pong), and the run still reads as
    ONE run with the same handoffs and verdicts as under the app's span."""
    collector = collector_factory(args=COLLECTOR_ARGS)
    run = run_scenario(
        framework_env("semantic_kernel"),
        collector,
        scenario,
        extra_env={"HANDOFFSCOPE_SK_MAIN_SPAN": "0"},
    )
    check_run_and_privacy(collector, run, scenario, app_span=False)
