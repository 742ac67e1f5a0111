"""The LangGraph part of `handoffscope demo`: each kind earns the verdict it claims.

Every kind runs through the real compiled graph and the real adapter into the shipped
pipeline (`configure()`: OTLP/HTTP + batch processor) and a real collector subprocess
(default grace, 30 s); its verdict is read back from `GET /api/v1/runs/{run_id}`. A copy
of every span also goes to an in-memory exporter, so the test knows how much evidence
each run sent and waits until the collector has all of it before judging.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from demo_support import assert_priced
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.demo import langgraph_scenarios as demo
from handoffscope.instrumentation import configure
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

VERDICTS = {
    "healthy": sc.HEALTHY,
    "unclosed_tool_call": sc.OPEN_TOOL_PROTOCOL,
    "control_not_moved": sc.STALE_CONTROL,
    "undeclared_route": sc.ROUTE_REJECTED,
    "ping_pong": sc.LOOP,
    "approval_decided": sc.HEALTHY,
    "approval_pending": sc.WAITING_ON_APPROVAL,
    "approval_overdue": sc.APPROVAL_OVERDUE,
    "approval_no_owner": sc.WAIT_UNCERTAIN,
    "false_complete": sc.FALSE_COMPLETE,
}
RUNS = {"healthy": 30, "false_complete": 6}
"""Kinds with a random variant (path, verifier) run several times; the rest once."""
HANDOFF_SPANS = {sc.SPAN_REQUEST, sc.SPAN_TRANSFER, sc.SPAN_ACCEPT}


@pytest.fixture
def fresh_langgraph(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No instrumentation before or after: `setup()` must attach to this test's provider."""
    monkeypatch.setenv("HANDOFFSCOPE_FINGERPRINT_KEY", "test-demo-key")
    LangGraphInstrumentor().uninstrument()
    yield
    LangGraphInstrumentor().uninstrument()


def test_every_kind_reaches_its_verdict_through_the_collector(
    collector: Any, fresh_langgraph: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert set(demo.KINDS) == set(VERDICTS) == set(demo.SCENARIOS)
    provider = configure(
        service_name="demo-langgraph", endpoint=collector.http_endpoint, set_global=False
    )
    sent = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(sent))
    try:
        demo.setup(provider)
        rng = random.Random(11)
        # As the live board first sees it: an approval due within the default window.
        due_soon = demo.run_scenario("approval_overdue", rng)
        # Then the same kind with a deadline the test can wait out.
        monkeypatch.setattr(demo, "OVERDUE_WINDOW_S", (1.0, 1.5))
        ids = {
            kind: [demo.run_scenario(kind, rng) for _ in range(RUNS.get(kind, 1))]
            for kind in demo.KINDS
        }
        provider.force_flush()

        # What each run sent: the collector has judged a run once all of it is in.
        handoff_ids: dict[str, set[str]] = {}
        outcomes: Counter[str] = Counter()
        for span in sent.get_finished_spans():
            run_id = span.attributes[sc.RUN_ID]
            if span.name in HANDOFF_SPANS:
                handoff_ids.setdefault(run_id, set()).add(span.attributes[sc.HANDOFF_ID])
            elif span.name == sc.SPAN_OUTCOME:
                outcomes[run_id] += 1

        def settled(run_id: str) -> Callable[[dict[str, Any]], bool]:
            return lambda r: (
                r["status"] != sc.RUN_STATUS_STARTED
                and len(r["handoffs"]) == len(handoff_ids.get(run_id, ()))
                and len(r["outcomes"]) == outcomes[run_id]
            )

        def run(run_id: str, until: Callable[[dict[str, Any]], bool] | None = None) -> Any:
            return collector.run(run_id, until or settled(run_id), timeout=20)

        got = run(due_soon)
        assert (got["verdict"], got["status"]) == (
            sc.WAITING_ON_APPROVAL,
            sc.RUN_STATUS_INTERRUPTED,
        )
        assert 0 < got["waits"][0]["seconds_left"] <= demo.OVERDUE_WINDOW_S[1] + 30

        (overdue,) = ids["approval_overdue"]
        got = run(overdue, lambda r: settled(overdue)(r) and r["verdict"] == sc.APPROVAL_OVERDUE)
        assert (got["verdict"], got["status"], got["pending_approvals"]) == (
            sc.APPROVAL_OVERDUE,
            sc.RUN_STATUS_INTERRUPTED,
            1,
        )
        assert got["waits"][0]["seconds_left"] < 0

        runs = {kind: [run(i) for i in run_ids] for kind, run_ids in ids.items()}
        for kind, details in runs.items():
            assert [r["verdict"] for r in details] == [VERDICTS[kind]] * len(details), kind
            assert all(r["service"] == "demo-langgraph" for r in details), kind
            assert all(r["path"][0] == "triage" for r in details), kind

        assert_priced(runs, demo.DEMO_MODEL)

        assert {tuple(r["path"]) for r in runs["healthy"]} == {
            ("triage", *p) for p in demo.HEALTHY_PATHS
        }
        for r in runs["healthy"]:
            assert r["status"] == sc.RUN_STATUS_COMPLETED
            assert [o["result"] for o in r["outcomes"]] == [sc.OUTCOME_PASS]
            assert r["final_agent"] == r["path"][-1]
            assert {h["verdict"] for h in r["handoffs"]} == {sc.HEALTHY}

        for kind, boundary in (
            ("unclosed_tool_call", sc.BOUNDARY_TOOL_PROTOCOL),
            ("control_not_moved", sc.BOUNDARY_CONTROL),
        ):
            (r,) = runs[kind]
            (h,) = r["handoffs"]
            assert (h["from_agent"], h["verdict"], h["failed_boundary"]) == (
                "triage",
                VERDICTS[kind],
                boundary,
            ), kind
            assert [o["result"] for o in r["outcomes"]] == [sc.OUTCOME_PASS], kind

        (r,) = runs["undeclared_route"]
        (h,) = r["handoffs"]
        assert (h["to_agent"], h["route_declared"], h["failed_boundary"]) == (
            "escalation",
            False,
            sc.BOUNDARY_ROUTE,
        )

        (r,) = runs["ping_pong"]
        assert (r["status"], r["loop"]) == (sc.RUN_STATUS_MAX_TURNS, True)
        assert r["loop_cycle"] in (
            ["billing", "refunds", "billing"],
            ["refunds", "billing", "refunds"],
        )
        assert set(r["path"][1:]) == {"billing", "refunds"}
        # The recursion limit stopped the graph after the last handoff was requested: its
        # destination never ran. Inside the grace window that reads `loop`; after it,
        # `destination_not_started` (see the module docstring).
        last = r["handoffs"][-1]
        assert (last["verdict"], last["boundaries"]["destination"]) == (sc.LOOP, "unknown")
        assert all(h["boundaries"]["destination"] == "passed" for h in r["handoffs"][:-1])

        (r,) = runs["approval_decided"]
        assert (r["status"], r["pending_approvals"], r["waits"]) == (
            sc.RUN_STATUS_COMPLETED,
            0,
            [],
        )
        assert r["path"] == ["triage", "refunds"]
        assert [o["result"] for o in r["outcomes"]] == [sc.OUTCOME_PASS]

        (r,) = runs["approval_pending"]
        (wait,) = r["waits"]
        assert (r["status"], r["pending_approvals"]) == (sc.RUN_STATUS_INTERRUPTED, 1)
        assert wait["owner"] in demo.APPROVERS
        assert (wait["reason"], wait["state_persisted"]) == (demo.APPROVAL_REASON, True)
        assert wait["seconds_left"] >= demo.PENDING_WINDOW_S[0] - 60

        (r,) = runs["approval_no_owner"]
        (wait,) = r["waits"]
        assert (wait["owner"], wait["missing"]) == (None, ["owner"])

        # Both ways an app claims done without proof: the verifier failed, or never ran.
        results = {tuple(o["result"] for o in r["outcomes"]) for r in runs["false_complete"]}
        assert results == {(sc.OUTCOME_FAIL,), ()}
        assert all(r["false_complete"] for r in runs["false_complete"])
        assert all(r["status"] == sc.RUN_STATUS_COMPLETED for r in runs["false_complete"])
    finally:
        provider.shutdown()


def test_setup_is_idempotent_and_threads_are_let_go(
    fresh_langgraph: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    demo.setup(provider)
    demo.setup(provider)
    run_id = demo.run_scenario("healthy", random.Random(1))
    runs = [s for s in exporter.get_finished_spans() if s.attributes.get(sc.RUN_ID) == run_id]
    # Wrapped once: one run start, one run end, one handoff request.
    assert Counter(s.name for s in runs)[sc.SPAN_REQUEST] == 1
    assert [s.attributes[sc.RUN_STATUS] for s in runs if s.name == sc.SPAN_RUN] == [
        sc.RUN_STATUS_STARTED,
        sc.RUN_STATUS_COMPLETED,
    ]

    # A finished run's checkpoints are deleted; waiting ones are kept, up to the bound.
    def threads() -> set[str]:
        return {c.config["configurable"]["thread_id"] for c in demo.CHECKPOINTER.list(None)}

    monkeypatch.setattr(demo, "MAX_PARKED_THREADS", 2)
    monkeypatch.setattr(demo, "_parked", type(demo._parked)())
    before = threads()
    demo.run_scenario("approval_decided", random.Random(2))
    assert threads() == before
    for seed in range(3):
        demo.run_scenario("approval_pending", random.Random(seed))
    parked = threads() - before
    assert len(parked) == 2 and parked == set(demo._parked)

    with pytest.raises(ValueError, match="unknown LangGraph demo kind"):
        demo.run_scenario("nonsense", random.Random(1))
