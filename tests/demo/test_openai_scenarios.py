"""The OpenAI Agents SDK part of `handoffscope demo`: each kind earns the verdict it claims.

Every kind runs through the real `Runner` and the real adapter into the shipped pipeline
(`configure()`: OTLP/HTTP + batch processor) and a real collector subprocess; its verdict
is read back from `GET /api/v1/runs/{run_id}`. The collector's grace is 1 s, so a handoff
whose destination never admitted it would read `destination_not_started` by the time the
runs are checked instead of hiding behind `in_flight`.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from agents.tracing import get_trace_provider, set_trace_processors
from demo_support import assert_priced
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.demo import openai_scenarios as demo
from handoffscope.instrumentation import configure
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

VERDICTS = {
    "healthy": sc.HEALTHY,
    "ping_pong": sc.LOOP,
    "approval_decided": sc.HEALTHY,
    "approval_pending": sc.WAITING_ON_APPROVAL,
    "approval_overdue": sc.APPROVAL_OVERDUE,
    "multiple_handoffs": sc.ROUTE_REJECTED,
    "false_complete": sc.FALSE_COMPLETE,
    "follow_up": sc.HEALTHY,
}
RUNS = {"healthy": 60, "false_complete": 6, "follow_up": 6}
"""Kinds with a random variant (path, verifier) run several times, enough that every
variant comes up (the seed is fixed, so this does not flake); the rest once."""
ENDED = {sc.RUN_STATUS_COMPLETED, sc.RUN_STATUS_INTERRUPTED, sc.RUN_STATUS_MAX_TURNS}


@pytest.fixture
def fresh_sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No instrumentation before or after: `setup()` must attach to this test's provider."""
    monkeypatch.setenv("HANDOFFSCOPE_FINGERPRINT_KEY", "test-demo-key")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # offline: nothing may need one
    OpenAIAgentsInstrumentor().uninstrument()
    yield
    OpenAIAgentsInstrumentor().uninstrument()
    set_trace_processors([])


def test_every_kind_reaches_its_verdict_through_the_collector(
    collector_factory: Any, fresh_sdk: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert set(demo.KINDS) == set(VERDICTS) == set(demo.SCENARIOS)
    collector = collector_factory(args=["--grace-seconds", "1"])
    provider = configure(
        service_name="demo-openai", endpoint=collector.http_endpoint, set_global=False
    )
    try:
        demo.setup(provider)
        rng = random.Random(7)
        threads = set(threading.enumerate())

        def run(run_id: str, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
            return collector.run(run_id, until, timeout=20)

        # As the live board first sees it: an approval due within the default window
        # (checked at once, while that deadline is still ahead).
        due_soon = demo.run_scenario("approval_overdue", rng)
        provider.force_flush()
        run_detail = run(due_soon, lambda r: r["status"] == sc.RUN_STATUS_INTERRUPTED)
        assert run_detail["verdict"] == sc.WAITING_ON_APPROVAL
        (wait,) = run_detail["waits"]
        assert 0 < wait["seconds_left"] <= demo.OVERDUE_WINDOW_S[1]

        # Then the same kind with a deadline the test can wait out.
        monkeypatch.setattr(demo, "OVERDUE_WINDOW_S", (1.0, 1.5))
        ids = {
            kind: [demo.run_scenario(kind, rng) for _ in range(RUNS.get(kind, 1))]
            for kind in demo.KINDS
        }
        assert set(threading.enumerate()) <= threads, "a scenario left a thread behind"
        provider.force_flush()

        (overdue,) = ids["approval_overdue"]
        got = run(overdue, lambda r: r["verdict"] == sc.APPROVAL_OVERDUE)
        assert (got["verdict"], got["status"], got["pending_approvals"]) == (
            sc.APPROVAL_OVERDUE,
            sc.RUN_STATUS_INTERRUPTED,
            1,
        )
        assert got["waits"][0]["owner"] in demo.APPROVERS
        assert got["waits"][0]["reason"] == "refund_over_limit"

        # By now the 1 s grace has passed for every other run: each verdict is final.
        runs = {
            kind: [run(i, lambda r: r["status"] in ENDED) for i in run_ids]
            for kind, run_ids in ids.items()
        }
        for kind, details in runs.items():
            assert [r["verdict"] for r in details] == [VERDICTS[kind]] * len(details), kind
            if kind != "follow_up":  # a follow-up may start where the work was
                assert all(r["path"][0] == "triage" for r in details), kind

        # A follow-up is the second turn of its conversation: it continued with the agent
        # that held the work, or went back through triage to reach it again.
        follow_ups = runs["follow_up"]
        assert {r["continuity"] for r in follow_ups} == {
            sc.CONTINUITY_CONTINUED,
            sc.CONTINUITY_REROUTED,
        }
        for r in follow_ups:
            assert r["conversation_position"] == 2 and r["previous_run_id"], r["run_id"]
            assert r["final_agent"] == r["previous_final_agent"], r["run_id"]
            if r["continuity"] == sc.CONTINUITY_REROUTED:
                assert (r["start_agent"], r["first_to_agent"]) == ("triage", r["final_agent"])
            else:
                assert r["start_agent"] == r["final_agent"] and r["handoff_count"] == 0

        paths = {tuple(r["path"]) for r in runs["healthy"]}
        assert paths == {("triage", *p) for p in demo.HEALTHY_PATHS}
        for r in runs["healthy"]:
            assert r["status"] == sc.RUN_STATUS_COMPLETED
            assert [o["result"] for o in r["outcomes"]] == [sc.OUTCOME_PASS]
            assert r["handoffs"][0]["history_items_forwarded"] is not None

        assert_priced(runs, demo.DEMO_MODEL)

        (loop,) = runs["ping_pong"]
        assert (loop["status"], loop["loop"]) == (sc.RUN_STATUS_MAX_TURNS, True)
        assert loop["loop_usage"]["model_calls"] >= 1  # what it burned after its first repeat
        assert loop["loop_cycle"] in (
            ["billing", "refunds", "billing"],
            ["refunds", "billing", "refunds"],
        )

        (decided,) = runs["approval_decided"]
        assert (decided["status"], decided["pending_approvals"]) == (sc.RUN_STATUS_COMPLETED, 0)
        assert decided["path"] == ["triage", "refunds"]
        assert [o["result"] for o in decided["outcomes"]] == [sc.OUTCOME_PASS]

        (pending,) = runs["approval_pending"]
        assert pending["pending_approvals"] == 1
        assert pending["waits"][0]["seconds_left"] >= demo.PENDING_WINDOW_S[0] - 60

        (multiple,) = runs["multiple_handoffs"]
        rejected = [h for h in multiple["handoffs"] if h["verdict"] == sc.ROUTE_REJECTED]
        assert [h["to_agent"] for h in rejected] in (["refunds"], ["escalation"])
        assert rejected[0]["failed_boundary"] == sc.BOUNDARY_ROUTE

        # Both ways an app claims done without proof: the verifier failed, or never ran.
        results = {tuple(o["result"] for o in r["outcomes"]) for r in runs["false_complete"]}
        assert results == {(sc.OUTCOME_FAIL,), ()}
        assert all(r["false_complete"] for r in runs["false_complete"])
    finally:
        provider.shutdown()


def test_setup_is_idempotent_and_leaves_only_our_processor(fresh_sdk: None) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    demo.setup(provider)
    demo.setup(provider)
    # The SDK has no public getter for its processor list; the adapter reads it the same way.
    processors = get_trace_provider()._multi_processor._processors  # type: ignore[attr-defined]
    assert list(processors) == [OpenAIAgentsInstrumentor()._processor]

    run_id = demo.run_scenario("healthy", random.Random(1))
    assert any(s.attributes.get(sc.RUN_ID) == run_id for s in exporter.get_finished_spans())
    with pytest.raises(ValueError, match="unknown OpenAI Agents demo kind"):
        demo.run_scenario("nonsense", random.Random(1))
