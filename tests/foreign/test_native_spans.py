"""Google ADK, Strands and AutoGen native GenAI spans into a real collector: judged, content-free.

Each framework runs for real in its own env (framework_envs.py), offline with a scripted
model, its telemetry on with every content switch it has, exporting OTLP/HTTP protobuf to a
real collector subprocess. The driver plants a fresh sentinel in the prompt, tool arguments,
tool outputs and an exception message; the catalogue in docs/foreign-spans.md shows where
each framework puts them (attributes, span events, exception events, status descriptions,
JSON blobs). Then:

- the driver's own account shows the scenario happened (who held control, how it ended), so
  a driver that silently did nothing cannot pass;
- the run reads, through the query API, as a careful human reading those spans would
  judge it (`EXPECTED`; what each source cannot show is in docs/foreign-spans.md: Strands
  never says a run stopped at its limit, but its last agent's refused handoff does, so its
  cut-off ping-pong is a loop; AutoGen shows neither and ends the run as completed, but
  its last request — back to an agent that already held control, right after another
  return — never ran: the run was cut while cycling, a loop too);
- every span the driver ended reached the collector (`spans_received_total`);
- the run's usage is what the scripted models reported (`PER_CALL` on each model call,
  summed per run and per handoff leg from the `handoff.usage` spans translated from ADK's
  `generate_content` and Strands' `chat` spans); AutoGen traces no model call, so its usage
  is null (not reported), never 0;
- the sentinel is in no API answer, not in /metrics, not in the collector's log;
- after the collector stops (file checkpointed), the sentinel is in no byte of any file it
  left, and in no text column of any table read back through DuckDB.

Behind the `foreign_env` marker (make test-foreign; .ci/run runs it after make test): the
envs cost a build on first use, and the frameworks seconds to import.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from foreign_support import check_usage
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc

pytestmark = pytest.mark.foreign_env

SCENARIOS = ("healthy", "pingpong", "limit", "error")
# Each framework's telemetry shapes, by the switches that move content elsewhere
# (docs/foreign-spans.md): ADK's current schema and its legacy one (`invocation` / `call_llm`
# spans, content in `gcp.vertex.agent.*` JSON attributes); Strands' legacy conventions
# (content in span events) and the latest ones (content in attributes).
SOURCES = {
    "adk": ("adk", {}),
    "adk-schema1": ("adk", {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"}),
    "strands": ("strands", {}),
    "strands-latest": (
        "strands",
        {"HANDOFFSCOPE_STRANDS_SEMCONV": "gen_ai_latest_experimental,gen_ai_tool_definitions"},
    ),
    "autogen": ("autogen", {}),
}
H, LOOP, DNS = sc.HEALTHY, sc.LOOP, sc.DESTINATION_NOT_STARTED
TB, BT = ("triage", "billing"), ("billing", "triage")
LABELS = {"adk": "Google ADK", "strands": "Strands", "autogen": "AutoGen"}
NOT_SEEN = {"route", "control", "tool_protocol", "context"}
PER_CALL = (10, 5)  # (input, output) tokens every scripted model call reports
# (framework, scenario) -> run verdict, run status, loop, [(from, to, handoff verdict)]
EXPECTED: dict[tuple[str, str], tuple[str, str, bool, list[tuple[Any, Any, str]]]] = {
    ("adk", "healthy"): (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, False, [(*TB, H)]),
    ("adk", "pingpong"): (
        LOOP,
        sc.RUN_STATUS_MAX_TURNS,
        True,
        [(*TB, H), (*BT, LOOP), (*TB, LOOP), (*BT, LOOP), (*TB, LOOP), (*BT, LOOP)],
    ),
    ("adk", "limit"): (sc.RUN_FAILED, sc.RUN_STATUS_MAX_TURNS, False, [(*TB, H)]),
    ("adk", "error"): (sc.RUN_FAILED, sc.RUN_STATUS_FAILED, False, []),
    ("strands", "healthy"): (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, False, [(*TB, H)]),
    # Strands: the swarm's last agent asked for a handoff no agent carried out — refused at
    # the swarm's limit (max_turns); the refused request names no destination.
    ("strands", "pingpong"): (
        LOOP,
        sc.RUN_STATUS_MAX_TURNS,
        True,
        [(*TB, H), (*BT, LOOP), (*TB, LOOP), ("billing", None, LOOP)],
    ),
    ("strands", "limit"): (
        sc.RUN_FAILED,
        sc.RUN_STATUS_MAX_TURNS,
        False,
        [(*TB, H), ("billing", None, sc.RUN_FAILED)],
    ),
    ("strands", "error"): (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, False, [(*TB, H)]),
    ("autogen", "healthy"): (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, False, [(*TB, H)]),
    # AutoGen: Swarm(max_turns) ends the run as completed and never says why; the last
    # request, back to triage right after a return, never ran — cut while cycling.
    ("autogen", "pingpong"): (
        LOOP,
        sc.RUN_STATUS_COMPLETED,
        True,
        [(*TB, H), (*BT, LOOP), (*TB, LOOP), (*BT, LOOP)],
    ),
    ("autogen", "limit"): (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, False, [(*TB, H)]),
    ("autogen", "error"): (sc.UNVERIFIED, sc.RUN_STATUS_COMPLETED, False, [(*TB, H)]),
}


def check_verdicts(collector: Any, framework: str, scenario: str) -> list[Any]:
    """The one run, as the query API serves it; returns the answers read (for the sentinel)."""
    verdict, status, loop, hops = EXPECTED[(framework, scenario)]
    runs = collector.api("/api/v1/runs")["runs"]
    assert len(runs) == 1, runs
    run = collector.run(
        runs[0]["run_id"],
        lambda r: r.get("status") == status and len(r.get("handoffs", [])) == len(hops),
    )
    assert (run["verdict"], run["status"], run["loop"]) == (verdict, status, loop), run
    assert (run["source"], run["source_label"]) == (framework, LABELS[framework])
    assert run["not_observed"].startswith(f"from {LABELS[framework]} spans: ")
    assert [(h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]] == hops
    for h in run["handoffs"]:
        # Boundaries the source cannot show are not_observed, never passed.
        seen_not = {b for b, state in h["boundaries"].items() if state == sc.NOT_OBSERVED}
        assert seen_not == NOT_SEEN, h["boundaries"]
        if h["destination_started"]:
            expected_destination = sc.PASSED
        else:  # never admitted: a failure of its own, or not reached (the run's limit)
            expected_destination = sc.FAILED if h["verdict"] == DNS else sc.UNKNOWN
        assert h["boundaries"]["destination"] == expected_destination, h
    if hops:
        assert run["path"][:2] == ["triage", "billing"]
    return [runs, run]


def check_run_usage(framework: str, run: dict[str, Any], result: dict[str, Any]) -> None:
    """The run's usage, from the model-call spans only: an agent span's total of its calls
    (Strands' `invoke_agent` carries one) is never added in (docs/foreign-spans.md, "Usage")."""
    if framework == "autogen":
        # AutoGen traces agents and tools, not model calls: nothing reported, so null.
        assert run["usage"] is None, run
        assert all(h["usage"] is None for h in run["handoffs"]), run["handoffs"]
        return
    calls = result["calls"]
    # The driver's account: every agent that held control called its model.
    assert set(calls) >= set(result["authors"]), result
    top = max(calls, key=calls.count)  # ties: the first reported, as the judge
    check_usage(run, calls, PER_CALL, model=f"scripted-{top}")


def check_outcome(framework: str, scenario: str, result: dict[str, Any]) -> None:
    """What the scenario must have done, by the framework's own account."""
    authors = result["authors"]
    assert result["flushed"] is True
    assert result["spans"] > 0
    stopped = scenario in ("pingpong", "limit")  # by the framework's limit
    if scenario == "error" and framework == "adk":
        assert authors == ["triage"], result  # ADK lets the tool's exception end the run
    elif scenario == "pingpong":
        # It bounced until the limit stopped it.
        assert authors[:4] == ["triage", "billing", "triage", "billing"], result
    else:
        # One handoff; in `limit`, billing then ran into the limit on its own (no bounce).
        assert authors == ["triage", "billing"], result
    if framework == "adk":
        expected = "LlmCallsLimitExceededError" if stopped else None
        assert result["error"] == ("RuntimeError" if scenario == "error" else expected), result
    elif framework == "strands":
        assert result["status"] == ("failed" if stopped else "completed"), result
    else:
        assert result["stop"] == ("turns" if stopped else "text"), result


# The variants differ in where content goes, not in control flow: the scenarios that put
# content in the most places (tool output, handoff message, exception) are enough for them.
CASES = [
    (source, scenario)
    for source, (_, variant) in SOURCES.items()
    for scenario in SCENARIOS
    if not variant or scenario in ("healthy", "error")
]


@pytest.mark.parametrize(("source", "scenario"), CASES)
def test_sentinel_absent_everywhere(
    source: str, scenario: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    framework, variant = SOURCES[source]
    env = framework_env(framework)
    run = run_scenario(env, collector, scenario, variant)
    check_outcome(framework, scenario, run.result)
    # The random tail alone: a store that kept a fragment (truncated, re-encoded) is caught too.
    tail = run.sentinel.rsplit("-", 1)[1]

    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == 0  # absorbed, not refused
    read = check_verdicts(collector, framework, scenario)
    check_run_usage(framework, read[1], run.result)
    # The service name is stored whatever the scenario (a tool that fails in triage ends
    # the ADK run before billing ever runs).
    assert_content_free(
        collector, tail, stored=f"{framework}-app", answers={"(verdicts)": json.dumps(read)}
    )


def test_adk_resume_is_a_second_run_of_the_same_conversation(
    framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    """Two messages to one ADK session: two invocations, two traces. Each is a run judged
    on its own (the second starts where the session left off, at billing, with no handoff);
    both carry the session id, so a search by it finds the two together."""
    run = run_scenario(framework_env("adk"), collector, "resume")
    conversation = run.result["conversation"]
    assert run.result["invocations"] == [["triage", "billing"], ["billing"]], run.result
    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == 0

    def completed(r: dict[str, Any]) -> bool:
        return r.get("status") == sc.RUN_STATUS_COMPLETED

    found = collector.api("/api/v1/runs", q=conversation, ids="true")["runs"]
    assert len(found) == 2, found
    assert collector.api("/api/v1/runs", q=conversation[::-1])["runs"] == []  # q does filter
    runs = sorted(
        (collector.run(r["run_id"], completed) for r in found),
        key=lambda r: len(r["handoffs"]),
    )
    second, first = runs
    assert [(h["from_agent"], h["to_agent"], h["verdict"]) for h in first["handoffs"]] == [(*TB, H)]
    assert (first["verdict"], first["final_agent"]) == (sc.UNVERIFIED, "billing")
    assert (second["verdict"], second["final_agent"], second["handoffs"]) == (
        sc.UNVERIFIED,
        "billing",
        [],
    )
    # Each invocation's calls are its own run's: triage's transfer and billing's answer,
    # then billing's second answer.
    assert run.result["calls"] == ["triage", "billing", "billing"], run.result
    check_usage(first, ["triage", "billing"], PER_CALL, model="scripted-triage")
    check_usage(second, ["billing"], PER_CALL, model="scripted-billing")
    for r in runs:
        assert r["conversation_ids"] == [conversation]
        assert r["source"] == "adk"
    assert {r["run_id"] for r in found} == {r["run_id"] for r in runs}
    assert len({tid for r in found for tid in r["trace_ids"]}) == 2  # one trace each
    tail = run.sentinel.rsplit("-", 1)[1]
    answers = {"(runs)": json.dumps([found, runs])}
    assert_content_free(collector, tail, stored="billing", answers=answers)
