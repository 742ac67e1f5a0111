"""The Agents SDK's own example shapes, judged end to end (issue 10: real topologies).

Real `Runner` -> real OTLP/HTTP exporter -> real collector subprocess -> query API; the
verdicts asserted are the ones a careful human gives each run. Two services share the
collector: `support` records outcomes (so its completions must be verified) and `quiet`
never does (its completions are `unverified`, not false completions).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import openai_agents_examples as ex
import pytest
from agents import set_trace_processors
from openai_agents_scenarios import SENTINEL

from handoffscope.instrumentation import configure
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor


@pytest.fixture
def instrument(collector: Any) -> Iterator[Any]:
    """`instrument(service, **settings)` -> the instrumentor, exporting as `service`."""
    providers: list[Any] = []
    inst = OpenAIAgentsInstrumentor()

    def start(service: str, **settings: Any) -> OpenAIAgentsInstrumentor:
        inst.uninstrument()
        tp = configure(service_name=service, endpoint=collector.http_endpoint, set_global=False)
        providers.append(tp)
        set_trace_processors([])
        inst.instrument(tracer_provider=tp, replace_processors=True, **settings)
        return inst

    yield start
    inst.uninstrument()
    set_trace_processors([])
    for tp in providers:
        tp.shutdown()


def flush(inst: OpenAIAgentsInstrumentor) -> None:
    inst._processor.tracer_provider.force_flush()


def ended(run: dict[str, Any]) -> bool:
    return run.get("status") not in (None, sc.RUN_STATUS_STARTED)


def test_sdk_examples_are_judged_as_a_human_would(instrument: Any, fetch_run: Any) -> None:
    inst = instrument("support")
    ids = {
        "tools": asyncio.run(ex.agents_as_tools(inst)),
        "tools_again": asyncio.run(ex.agents_as_tools(inst, repeat=True)),
        "service": asyncio.run(ex.customer_service(inst)),
        "filter": asyncio.run(ex.message_filter(inst)),
        "same_work": asyncio.run(ex.bounce(inst, same_work=True)),
        "new_work": asyncio.run(ex.bounce(inst, same_work=False)),
        "missing": asyncio.run(ex.missing_handoff(inst)),
        "crashed": asyncio.run(ex.crashed(inst)),
        "no_proof": asyncio.run(ex.completed_without_verifier(inst)),
    }
    flush(inst)
    answers: list[dict[str, Any]] = []

    def get(key: str, until: Any = ended) -> dict[str, Any]:
        run = fetch_run(
            ids[key],
            lambda r: (
                until(r) and (r["outcomes"] or r["status"] != "completed" or key == "no_proof")
            ),
        )
        answers.append(run)
        return run

    # agents as tools: two delegations, no handoff; control never left the orchestrator.
    run = get("tools")
    assert run["verdict"] == sc.HEALTHY, run
    assert (run["handoff_count"], run["delegation_count"]) == (0, 2)
    assert {(h["kind"], h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]} == {
        (sc.KIND_DELEGATION, "orchestrator_agent", "spanish_agent", sc.HEALTHY),
        (sc.KIND_DELEGATION, "orchestrator_agent", "french_agent", sc.HEALTHY),
    }
    assert run["path"] == [] and run["final_agent"] == "orchestrator_agent"
    # The same question to the same delegate, nothing else done in between: a repeat.
    run = get("tools_again")
    assert run["verdict"] == sc.LOOP and run["handoff_count"] == 0
    assert [h["verdict"] for h in run["handoffs"] if h["to_agent"] == "spanish_agent"] == [
        sc.HEALTHY,
        sc.LOOP,
    ]

    # customer service: both directions recorded, every handoff healthy.
    run = get("service")
    assert run["verdict"] == sc.HEALTHY, run
    assert [(h["from_agent"], h["to_agent"]) for h in run["handoffs"]] == [
        ("triage_agent", "faq_agent"),
        ("faq_agent", "triage_agent"),
        ("triage_agent", "seat_booking_agent"),
    ]
    assert run["path"] == ["triage_agent", "faq_agent", "triage_agent", "seat_booking_agent"]
    # What SDK spans cannot show is said, not claimed as passed.
    (b,) = {h["handoff_id"]: h for h in run["handoffs"][:1]}.values()
    assert b["boundaries"][sc.BOUNDARY_CONTEXT] == sc.NOT_OBSERVED
    assert b["boundaries"][sc.BOUNDARY_ROUTE] == sc.PASSED
    assert b["boundaries"][sc.BOUNDARY_DESTINATION] == sc.PASSED
    assert run["unobserved"] == [sc.BOUNDARY_CONTEXT, sc.BOUNDARY_TOOL_PROTOCOL]

    run = get("filter")
    assert run["verdict"] == sc.HEALTHY
    (h,) = run["handoffs"]
    assert h["history_items_forwarded"] < h["history_items_total"]

    # Bouncing while repeating the same tool call is no progress; new calls are.
    run = get("same_work")
    assert run["verdict"] == sc.LOOP and run["loop"] is True
    run = get("new_work")
    assert run["verdict"] == sc.HEALTHY and run["loop"] is False

    # A handoff the agent does not have: an undeclared route, and the run crashed.
    run = get("missing")
    assert run["status"] == sc.RUN_STATUS_FAILED
    assert run["verdict"] == sc.ROUTE_REJECTED
    (h,) = run["handoffs"]
    assert (h["from_agent"], h["to_agent"], h["route_declared"]) == ("triage", "refunds", False)
    assert "does not have" in h["why"]
    assert run["path"] == ["triage"]  # refunds never ran

    # A tool raising out of the run: the handoff was fine, the run failed.
    run = get("crashed")
    assert (run["status"], run["verdict"]) == (sc.RUN_STATUS_FAILED, sc.RUN_FAILED)
    assert [h["verdict"] for h in run["handoffs"]] == [sc.HEALTHY]

    # `support` reports outcomes, so a completion without one is a false completion.
    run = get("no_proof")
    assert run["verdict"] == sc.FALSE_COMPLETE and run["verification_expected"] is True

    assert SENTINEL not in json.dumps(answers)


def test_verification_policy_per_service(instrument: Any, fetch_run: Any) -> None:
    # A service that never reported an outcome: completed runs are unverified, explained.
    inst = instrument("quiet")
    quiet = asyncio.run(ex.completed_without_verifier(inst))
    flush(inst)
    run = fetch_run(quiet, ended)
    assert run["verdict"] == sc.UNVERIFIED and run["unverified"] is True
    assert run["false_complete"] is False and run["verification_expected"] is False
    assert "quiet" in run["why"] and "record_outcome" in run["why"]
    assert [h["verdict"] for h in run["handoffs"]] == [sc.HEALTHY]
    # The app declares its runs must be verified: the same run is a false completion.
    inst = instrument("declared", require_outcome=True)
    declared = asyncio.run(ex.completed_without_verifier(inst))
    flush(inst)
    run = fetch_run(declared, ended)
    assert run["verdict"] == sc.FALSE_COMPLETE and run["verification_expected"] is True
