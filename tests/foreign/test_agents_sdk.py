"""OpenAI Agents SDK runs traced by OpenInference, OpenLLMetry and Logfire, judged by us.

Each source's real instrumentation package traces the real `Runner` (scripted models,
offline, content capture on) in `agents_app.py`, exporting over real OTLP/HTTP to one
real collector; verdicts are read back through the query API. What a careful human
expects of each scenario, whatever the source:

- healthy (triage -> billing, billing answers): the handoff is healthy with the
  destination seen to start and every boundary the source cannot show `not_observed`;
  the run completed without a verifier, so it is `unverified`, labelled with its source;
- ping-pong (triage <-> billing until max_turns): a loop;
- turn limit (one handoff, then a tool loop until max_turns): the handoff is fine, the
  run failed (`run_failed`, status `max_turns`), and it is no loop;
- undeclared (triage declares only billing; the runtime sends the run to fraud): where
  the source shows the sender's declared handoffs (Logfire), `route_rejected` as our own
  adapter judges it; elsewhere the route is `not_observed` and the handoff reads healthy.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents_app import SENTINEL
from foreign_support import run_apps
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc

SOURCES = {"openinference": "OpenInference", "openllmetry": "OpenLLMetry", "logfire": "Logfire"}
SCENARIOS = ("healthy", "ping_pong", "turn_limit", "undeclared")
NOT_SEEN = {"route", "control", "tool_protocol", "context"}
ROUTE_SEEN = {"logfire"}
"""Sources whose spans say which handoffs the sender declared (Logfire's `handoffs`)."""


def not_seen(source: str) -> set[str]:
    return NOT_SEEN - {"route"} if source in ROUTE_SEEN else NOT_SEEN


def ended(run: dict[str, Any]) -> bool:
    return run.get("status") in (sc.RUN_STATUS_COMPLETED, sc.RUN_STATUS_MAX_TURNS)


@pytest.fixture(scope="module")
def seeded(module_collector: Any) -> dict[str, Any]:
    """Every source's scenarios (and a mixed app) run once; every answer read once."""
    endpoint = module_collector.http_endpoint
    apps = run_apps(
        {
            **{source: ["agents_app.py", source, endpoint] for source in SOURCES},
            "mixed": ["agents_app.py", "openinference", endpoint, "--mixed"],
        }
    )
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for source in SOURCES:
        for scenario in SCENARIOS:
            runs[(source, scenario)] = module_collector.run(apps[source][scenario], ended)
    mixed = apps["mixed"]
    runs[("mixed", "foreign")] = module_collector.run(mixed["healthy"], ended)
    runs[("mixed", "shim")] = module_collector.run(mixed["shim"]["healthy"], ended)
    drops = module_collector.api("/api/v1/drops")["drops"]
    metrics = module_collector.metrics_text()
    return {"apps": apps, "runs": runs, "drops": drops, "metrics": metrics}


@pytest.mark.parametrize("source", SOURCES)
def test_healthy_handoff(seeded: dict[str, Any], source: str) -> None:
    run = seeded["runs"][(source, "healthy")]
    assert (run["verdict"], run["status"], run["final_agent"]) == (
        sc.UNVERIFIED,
        sc.RUN_STATUS_COMPLETED,
        "billing",
    )
    assert (run["source"], run["source_label"]) == (source, SOURCES[source])
    assert run["not_observed"].startswith(f"from {SOURCES[source]} spans: ")
    assert "waits" in run["not_observed"] and "context" in run["not_observed"]
    assert ("route" in run["not_observed"]) is (source not in ROUTE_SEEN)
    assert run["path"] == ["triage", "billing"]
    (h,) = run["handoffs"]
    assert (h["from_agent"], h["to_agent"], h["verdict"], h["kind"]) == (
        "triage",
        "billing",
        sc.HEALTHY,
        sc.KIND_HANDOFF,
    )
    assert h["destination_started"] is True
    boundaries = h["boundaries"]
    assert {b for b, state in boundaries.items() if state == sc.NOT_OBSERVED} == not_seen(source)
    assert boundaries["destination"] == sc.PASSED
    if source in ROUTE_SEEN:
        assert (h["route_declared"], boundaries["route"]) == (True, sc.PASSED)


@pytest.mark.parametrize("source", SOURCES)
def test_ping_pong_is_a_loop(seeded: dict[str, Any], source: str) -> None:
    run = seeded["runs"][(source, "ping_pong")]
    assert (run["verdict"], run["status"], run["loop"]) == (sc.LOOP, sc.RUN_STATUS_MAX_TURNS, True)
    assert run["loop_cycle"] == ["triage", "billing", "triage"]
    hops = [(h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]]
    assert hops == [
        ("triage", "billing", sc.HEALTHY),
        ("billing", "triage", sc.LOOP),
        ("triage", "billing", sc.LOOP),
        ("billing", "triage", sc.LOOP),
    ]


@pytest.mark.parametrize("source", SOURCES)
def test_turn_limit_fails_the_run(seeded: dict[str, Any], source: str) -> None:
    run = seeded["runs"][(source, "turn_limit")]
    assert (run["verdict"], run["status"], run["loop"]) == (
        sc.RUN_FAILED,
        sc.RUN_STATUS_MAX_TURNS,
        False,
    )
    assert [(h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]] == [
        ("triage", "billing", sc.HEALTHY)
    ]


@pytest.mark.parametrize("source", SOURCES)
def test_undeclared_destination(seeded: dict[str, Any], source: str) -> None:
    run = seeded["runs"][(source, "undeclared")]
    (h,) = run["handoffs"]
    assert (h["from_agent"], h["to_agent"], run["final_agent"]) == ("triage", "fraud", "fraud")
    if source in ROUTE_SEEN:
        assert (run["verdict"], h["verdict"], h["failed_boundary"]) == (
            sc.ROUTE_REJECTED,
            sc.ROUTE_REJECTED,
            sc.BOUNDARY_ROUTE,
        )
        assert (h["route_declared"], h["boundaries"]["route"]) == (False, sc.FAILED)
    else:
        assert (run["verdict"], h["verdict"]) == (sc.UNVERIFIED, sc.HEALTHY)
        assert h["route_declared"] is None and h["boundaries"]["route"] == sc.NOT_OBSERVED


def test_mixed_export_keeps_both(seeded: dict[str, Any]) -> None:
    """The shim and OpenInference traced the same run on one provider; their spans went in
    the same exports. Both are judged: the shim's run by its own evidence (no source), the
    OpenInference one as translated."""
    shim, foreign = seeded["runs"][("mixed", "shim")], seeded["runs"][("mixed", "foreign")]
    assert shim["source"] is None and foreign["source"] == "openinference"
    for run in (shim, foreign):
        assert run["status"] == sc.RUN_STATUS_COMPLETED
        assert [(h["from_agent"], h["to_agent"]) for h in run["handoffs"]] == [
            ("triage", "billing")
        ]
    # The shim sees what OpenInference cannot: the declared route.
    (h,) = shim["handoffs"]
    assert h["route_declared"] is True
    assert (h["boundaries"]["route"], foreign["handoffs"][0]["boundaries"]["route"]) == (
        sc.PASSED,
        sc.NOT_OBSERVED,
    )


@pytest.mark.parametrize("source", SOURCES)
def test_foreign_content_is_dropped_and_counted(seeded: dict[str, Any], source: str) -> None:
    counted = {d["attribute"]: d["count"] for d in seeded["drops"] if d["service"] == "foreign-app"}
    mine = {a: n for a, n in counted.items() if a.startswith(source + ":")}
    assert len(mine) >= 5, counted
    assert all(n > 0 for n in mine.values())
    content = {
        "openinference": "openinference:output.value",
        "openllmetry": "openllmetry:gen_ai.agent.name",
        "logfire": "logfire:request_data",
    }[source]
    assert content in mine
    assert f'attribute="{content}"' in seeded["metrics"]


def test_sentinel_reaches_no_answer_and_no_byte_of_the_store(
    seeded: dict[str, Any], module_collector: Any
) -> None:
    """Last: it stops the collector. The sentinel WAS in the spans sent (capture on)."""
    assert all(app["sentinel_sent"] for app in seeded["apps"].values())
    answers = {f"run {key}": json.dumps(run) for key, run in seeded["runs"].items()}
    assert_content_free(module_collector, SENTINEL, stored="billing", answers=answers)
