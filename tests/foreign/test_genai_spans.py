"""Pydantic AI's GenAI spans into a real collector, translated by meaning: judged, content-free.

Pydantic AI's instrumentation scope (`pydantic-ai`) is claimed by no translator: its spans
reach the GenAI translator only because they carry `gen_ai.operation.name`
(processor/translate/genai.py). The framework runs for real in its own env
(framework_envs.py; `tests/foreign/envs/pydantic_ai/scenario.py`: the docs' multi-agent
examples, scripted with `FunctionModel`), traced as Pydantic AI documents it
(`Agent.instrument_all()`, content capture on), exporting OTLP/HTTP protobuf to a real
collector subprocess, with a fresh sentinel planted in the prompt, instructions, tool
arguments, tool outputs and an exception message. Then:

- the driver's own account shows the scenario happened (which agents' models ran, how it
  ended), so a driver that silently did nothing cannot pass;
- every span it ended reached the collector and none was refused (absorbed or translated);
- the run reads, through the query API, as a careful human reading those spans would
  judge it (`EXPECTED`; what the spans cannot show is in docs/foreign-spans.md);
- the run's usage is what the scripted models reported (`PER_CALL` per model call, summed
  per run and per handoff leg from the translated `handoff.usage` spans);
- the sentinel is in no API answer, not in /metrics, not in the collector's log, in no
  byte of any file it left and in no text column of any table.

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

H, LOOP = sc.HEALTHY, sc.LOOP
RS = ("router_agent", "sql_agent")
TB, BT = ("triage", "billing"), ("billing", "triage")
NOT_SEEN = {"route", "control", "tool_protocol", "context"}
# scenario -> run verdict, run status, loop, final agent, [(kind, from, to, verdict)]
EXPECTED: dict[str, tuple[str, str, bool, str, list[tuple[str, str, str, str]]]] = {
    # Hand-off by output function: the router's output function runs sql_agent, whose
    # answer is the router's output.
    "healthy": (
        sc.UNVERIFIED,
        sc.RUN_STATUS_COMPLETED,
        False,
        "sql_agent",
        [(sc.KIND_HANDOFF, *RS, H)],
    ),
    # Agent delegation: the caller keeps control and answers; the delegation is listed
    # with its kind, and is no handoff.
    "delegation": (
        sc.UNVERIFIED,
        sc.RUN_STATUS_COMPLETED,
        False,
        "joke_selection_agent",
        [(sc.KIND_DELEGATION, "joke_selection_agent", "joke_generation_agent", H)],
    ),
    # Two agents handing off to each other until `UsageLimits(request_limit=6)`: six hops,
    # then the seventh agent run is stopped by `UsageLimitExceeded` before its model call.
    "pingpong": (
        LOOP,
        sc.RUN_STATUS_MAX_TURNS,
        True,
        "triage",
        [
            (sc.KIND_HANDOFF, *TB, H),
            (sc.KIND_HANDOFF, *BT, LOOP),
            (sc.KIND_HANDOFF, *TB, LOOP),
            (sc.KIND_HANDOFF, *BT, LOOP),
            (sc.KIND_HANDOFF, *TB, LOOP),
            (sc.KIND_HANDOFF, *BT, LOOP),
        ],
    ),
    # The hand-off to an agent the router does not have is an unknown-tool retry that
    # Pydantic AI records only inside message content: not seen. The retried, allowed
    # hand-off is.
    "route": (
        sc.UNVERIFIED,
        sc.RUN_STATUS_COMPLETED,
        False,
        "sql_agent",
        [(sc.KIND_HANDOFF, *RS, H)],
    ),
    # The receiver crashes after the hand-off: the run failed, the hand-off itself did not.
    "error": (
        sc.RUN_FAILED,
        sc.RUN_STATUS_FAILED,
        False,
        "sql_agent",
        [(sc.KIND_HANDOFF, *RS, H)],
    ),
}
AUTHORS = {
    "healthy": ["router_agent", "sql_agent"],
    "delegation": ["joke_selection_agent", "joke_generation_agent", "joke_selection_agent"],
    "pingpong": ["triage", "billing"] * 3,
    "route": ["router_agent", "router_agent", "sql_agent"],
    "error": ["router_agent", "sql_agent"],
}
PER_CALL = (10, 5)
"""Input and output tokens every scripted model call reports (envs/pydantic_ai/scenario.py)."""
OUTCOMES: dict[str, dict[str, Any]] = {
    "healthy": {"output": "list"},
    "delegation": {"output": "str", "requests": 3},
    "pingpong": {"error": "UsageLimitExceeded"},
    "route": {"output": "list"},
    "error": {"error": "RuntimeError"},
}


def check_verdicts(collector: Any, scenario: str) -> list[Any]:
    """The one run, as the query API serves it; returns the answers read (for the sentinel)."""
    verdict, status, loop, final, hops = EXPECTED[scenario]
    runs = collector.api("/api/v1/runs")["runs"]
    assert len(runs) == 1, runs
    run = collector.run(
        runs[0]["run_id"],
        lambda r: r.get("status") == status and len(r.get("handoffs", [])) == len(hops),
    )
    assert (run["verdict"], run["status"], run["loop"]) == (verdict, status, loop), run
    assert run["final_agent"] == final, run
    assert (run["source"], run["source_label"]) == ("genai", "OpenTelemetry GenAI")
    assert run["not_observed"].startswith("from OpenTelemetry GenAI spans: "), run
    got = [(h["kind"], h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]]
    assert got == hops, run["handoffs"]
    # A delegation is listed with its kind and kept out of the handoff count.
    delegations = sum(1 for h in hops if h[0] == sc.KIND_DELEGATION)
    assert (run["handoff_count"], run["delegation_count"]) == (
        len(hops) - delegations,
        delegations,
    ), run
    for h in run["handoffs"]:
        seen_not = {b for b, state in h["boundaries"].items() if state == sc.NOT_OBSERVED}
        assert seen_not == NOT_SEEN, h["boundaries"]
        assert h["destination_started"] is True
        assert h["boundaries"]["destination"] == sc.PASSED, h
    # Only agents that held control are on the path: a delegate is not.
    handed = [h for h in hops if h[0] == sc.KIND_HANDOFF]
    if handed:
        assert run["path"][:2] == [handed[0][1], handed[0][2]], run["path"]
    assert not {h[2] for h in hops if h[0] == sc.KIND_DELEGATION} & set(run["path"])
    return [runs, run]


@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_pydantic_ai_by_meaning(
    scenario: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    run = run_scenario(framework_env("pydantic_ai"), collector, scenario)
    result = run.result
    assert result["flushed"] is True and result["scenario"] == scenario
    assert result["authors"][: len(AUTHORS[scenario])] == AUTHORS[scenario], result
    if scenario == "pingpong":  # bounced until the limit, not one model call more
        assert len(result["authors"]) == 6, result
    else:
        assert result["authors"] == AUTHORS[scenario], result
    assert {k: result[k] for k in OUTCOMES[scenario]} == OUTCOMES[scenario], result

    assert collector.metric("handoffscope_spans_received_total") == result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == 0  # absorbed, not refused
    read = check_verdicts(collector, scenario)
    # Usage from the `chat` spans only: each agent's total on `invoke_agent`
    # (`gen_ai.aggregated_usage.*`) is never added in. A delegate's calls are its
    # caller's work, in the caller's leg (no per-leg check: the delegation is listed
    # among the handoffs but gives no leg).
    authors = result["authors"]
    top = max(authors, key=authors.count)  # ties: the first reported, as the judge
    check_usage(
        read[1],
        authors,
        PER_CALL,
        model=f"scripted-{top}",
        legs=scenario != "delegation",
    )
    # The per-source report names the framework's scope, read by meaning.
    sources = {(x["service"], x["scope"]): x for x in collector.api("/api/v1/sources")["sources"]}
    source = sources[("pydantic-ai-app", "pydantic-ai")]
    assert (source["status"], source["translator"], source["translator_label"]) == (
        "judged",
        "genai",
        "OpenTelemetry GenAI",
    ), source
    assert (source["spans_received"], source["refused_spans"]) == (result["spans"], 0), source
    read.append(list(sources.values()))
    # The random tail alone: a store that kept a fragment (truncated, re-encoded) is caught too.
    tail = run.sentinel.rsplit("-", 1)[1]
    assert_content_free(
        collector, tail, stored="pydantic-ai-app", answers={"(verdicts)": json.dumps(read)}
    )
