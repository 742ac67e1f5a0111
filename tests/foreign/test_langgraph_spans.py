"""LangGraph runs traced by OpenInference and OpenLLMetry (Traceloop), judged by us.

Each source's real LangChain instrumentation traces the real LangGraph runtime (the
adapter tests' graphs, scripted models, offline, content capture on) in
`langgraph_app.py`, exporting over real OTLP/HTTP to one real collector; verdicts are
read back through the query API. What a careful human expects of each scenario, and what
each source lets us say (docs/foreign-spans.md, "LangGraph"):

- healthy (triage -> billing, billing works and answers): the handoff is healthy, its
  destination seen to start; the run completed without a verifier: `unverified`.
  Traceloop shows the graph's declared edges, so its route boundary is judged (passed);
  OpenInference's is `not_observed`.
- ping-pong (triage <-> billing until `recursion_limit`): a loop (DESIGN §4 rule 7: a run
  stopped at its turn limit while cycling), status `max_turns`; the first hop healthy,
  the rest `loop`.
- turn limit (one handoff, then a tool loop until `recursion_limit`): the handoff is
  healthy, the run failed (`run_failed`, `max_turns`), and it is no loop.
- misrouted (billing returns `Command(goto="refunds")` while declaring only triage): as
  our own adapter judges it, `route_rejected` — from Traceloop's spans. OpenInference's
  spans carry no declared edges: the same run reads `unverified`, route `not_observed`.
- crash (billing's node raises): the run `failed`, `run_failed`; the handoff healthy.
- mixed (our adapter and Traceloop on one provider, one export): both runs judged.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from foreign_support import run_apps
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc

SOURCES = {"openinference": "OpenInference", "openllmetry": "OpenLLMetry"}
SCENARIOS = ("healthy", "ping_pong", "turn_limit", "misrouted", "crash")
"""langgraph_app.py's scenarios (not imported: that would load LangGraph in this process)."""
NOT_SEEN = {"control", "tool_protocol", "context"}
ROUTE_SEEN = {"openinference": False, "openllmetry": True}
COLLECTOR_ARGS = ("--grace-seconds", "3600")
"""The ping-pong's last handoff never started (the limit stopped the graph first): past
the grace window it would read `destination_not_started`, whenever this machine is slow."""


def ended(run: dict[str, Any]) -> bool:
    return run.get("status") in (
        sc.RUN_STATUS_COMPLETED,
        sc.RUN_STATUS_FAILED,
        sc.RUN_STATUS_MAX_TURNS,
    )


@pytest.fixture(scope="module")
def seeded(module_collector: Any) -> dict[str, Any]:
    """Every source's scenarios run once; every answer read once."""
    endpoint = module_collector.http_endpoint
    apps = run_apps(
        {
            **{source: ["langgraph_app.py", source, endpoint] for source in SOURCES},
            "mixed": ["langgraph_app.py", "openllmetry", endpoint, "--mixed"],
        }
    )
    for source in SOURCES:
        assert set(apps[source]) == {*SCENARIOS, "sentinel_sent", "sentinel"}
    runs = {
        (source, scenario): module_collector.run(apps[source][scenario], ended)
        for source in SOURCES
        for scenario in SCENARIOS
    }
    mixed = apps["mixed"]
    runs[("mixed", "foreign")] = module_collector.run(mixed["healthy"], ended)
    runs[("mixed", "shim")] = module_collector.run(mixed["shim"]["healthy"], ended)
    drops = module_collector.api("/api/v1/drops")["drops"]
    return {"apps": apps, "runs": runs, "drops": drops}


def hops(run: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]]


@pytest.mark.parametrize("source", SOURCES)
def test_healthy_handoff(seeded: dict[str, Any], source: str) -> None:
    run = seeded["runs"][(source, "healthy")]
    assert (run["verdict"], run["status"], run["final_agent"]) == (
        sc.UNVERIFIED,
        sc.RUN_STATUS_COMPLETED,
        "billing",
    )
    assert (run["source"], run["source_label"]) == (source, SOURCES[source])
    assert run["path"] == ["triage", "billing"]
    assert hops(run) == [("triage", "billing", sc.HEALTHY)]
    (h,) = run["handoffs"]
    boundaries = h["boundaries"]
    not_seen = NOT_SEEN if ROUTE_SEEN[source] else NOT_SEEN | {"route"}
    assert {b for b, state in boundaries.items() if state == sc.NOT_OBSERVED} == not_seen
    assert boundaries["destination"] == sc.PASSED
    assert boundaries["route"] == (sc.PASSED if ROUTE_SEEN[source] else sc.NOT_OBSERVED)


@pytest.mark.parametrize("source", SOURCES)
def test_ping_pong_is_a_loop(seeded: dict[str, Any], source: str) -> None:
    run = seeded["runs"][(source, "ping_pong")]
    assert (run["verdict"], run["status"], run["loop"]) == (sc.LOOP, sc.RUN_STATUS_MAX_TURNS, True)
    # Six agent runs fit the limit. Traceloop also shows the sixth's handoff, whose
    # destination never ran; OpenInference shows handoffs by their destination's run.
    pairs = [("triage", "billing"), ("billing", "triage")] * 3
    if source == "openinference":
        pairs = pairs[:5]
    # The cycle the run was stopped in: its last two hops.
    assert run["loop_cycle"] == [pairs[-2][0], *pairs[-1]]
    assert hops(run) == [
        (f, t, sc.HEALTHY if k == 0 else sc.LOOP) for k, (f, t) in enumerate(pairs)
    ]
    started = [h["destination_started"] for h in run["handoffs"]]
    assert started == [True] * 5 + ([None] if source == "openllmetry" else [])


@pytest.mark.parametrize("source", SOURCES)
def test_turn_limit_fails_the_run(seeded: dict[str, Any], source: str) -> None:
    run = seeded["runs"][(source, "turn_limit")]
    assert (run["verdict"], run["status"], run["loop"]) == (
        sc.RUN_FAILED,
        sc.RUN_STATUS_MAX_TURNS,
        False,
    )
    assert hops(run) == [("triage", "billing", sc.HEALTHY)]


@pytest.mark.parametrize("source", SOURCES)
def test_misrouted_handoff(seeded: dict[str, Any], source: str) -> None:
    run = seeded["runs"][(source, "misrouted")]
    assert run["status"] == sc.RUN_STATUS_COMPLETED
    assert run["path"] == ["triage", "billing", "refunds"]
    if ROUTE_SEEN[source]:
        assert run["verdict"] == sc.ROUTE_REJECTED
        assert hops(run) == [
            ("triage", "billing", sc.HEALTHY),
            ("billing", "refunds", sc.ROUTE_REJECTED),
        ]
        bad = run["handoffs"][1]
        assert (bad["failed_boundary"], bad["route_declared"]) == ("route", False)
    else:
        assert run["verdict"] == sc.UNVERIFIED
        assert hops(run) == [
            ("triage", "billing", sc.HEALTHY),
            ("billing", "refunds", sc.HEALTHY),
        ]
        assert {h["boundaries"]["route"] for h in run["handoffs"]} == {sc.NOT_OBSERVED}


@pytest.mark.parametrize("source", SOURCES)
def test_crash_fails_the_run(seeded: dict[str, Any], source: str) -> None:
    run = seeded["runs"][(source, "crash")]
    assert (run["verdict"], run["status"]) == (sc.RUN_FAILED, sc.RUN_STATUS_FAILED)
    assert hops(run) == [("triage", "billing", sc.HEALTHY)]


def test_mixed_export_keeps_both(seeded: dict[str, Any]) -> None:
    """Our LangGraph adapter and Traceloop traced the same graph on one provider; their
    spans went in the same export. Both are judged: the shim's run by its own evidence
    (no source), Traceloop's as translated."""
    shim, foreign = seeded["runs"][("mixed", "shim")], seeded["runs"][("mixed", "foreign")]
    assert shim["run_id"] != foreign["run_id"]
    assert (shim["source"], foreign["source"]) == (None, "openllmetry")
    for run in (shim, foreign):
        assert run["status"] == sc.RUN_STATUS_COMPLETED
        assert hops(run) == [("triage", "billing", sc.HEALTHY)]
    # The shim sees what Traceloop cannot: control and the handoff's tool call.
    (h,) = shim["handoffs"]
    (f,) = foreign["handoffs"]
    assert (h["boundaries"]["control"], f["boundaries"]["control"]) == (
        sc.PASSED,
        sc.NOT_OBSERVED,
    )


@pytest.mark.parametrize("source", SOURCES)
def test_foreign_content_is_dropped_and_counted(seeded: dict[str, Any], source: str) -> None:
    counted = {d["attribute"]: d["count"] for d in seeded["drops"] if d["service"] == "foreign-app"}
    mine = {a: n for a, n in counted.items() if a.startswith(source + ":")}
    content = {
        "openinference": ("openinference:metadata", "openinference:input.value"),
        "openllmetry": ("openllmetry:gen_ai.task.input", "openllmetry:gen_ai.workflow.edges"),
    }[source]
    assert set(content) <= set(mine), mine
    assert f"{source}:status.description" in mine  # ParentCommand / exception reprs


def test_sentinel_reaches_no_answer_and_no_byte_of_the_store(
    seeded: dict[str, Any], module_collector: Any
) -> None:
    """Last: it stops the collector. The sentinel WAS in the spans sent (capture on)."""
    apps = seeded["apps"].values()
    assert all(app["sentinel_sent"] for app in apps)
    (sentinel,) = {app["sentinel"] for app in apps}
    answers = {f"run {key}": json.dumps(run) for key, run in seeded["runs"].items()}
    assert_content_free(module_collector, sentinel, stored="billing", answers=answers)
