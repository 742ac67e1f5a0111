"""Verdicts in words (verdicts/explain.py): one sentence per run, one bucket per rejection."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.verdicts.explain import (
    REJECTION_BUCKETS,
    ROUTE_BUCKET,
    not_observed_note,
    rejection_bucket,
    run_why,
)


@dataclass
class H:
    verdict: str
    why: str | None = None
    from_agent: str | None = "triage"
    to_agent: str | None = "billing"
    failed_boundary: str | None = None


@pytest.mark.parametrize(
    ("verdict", "reason", "bucket"),
    [
        (sc.ROUTE_REJECTED, None, ROUTE_BUCKET),
        (sc.CONTRACT_REJECTED, sc.REJECTION_STALE, sc.REJECTION_STALE),
        (sc.CONTRACT_REJECTED, None, ""),
        (sc.LOOP, sc.REJECTION_STALE, ""),
        (sc.HEALTHY, None, ""),
    ],
)
def test_each_rejection_counts_under_one_bucket(verdict, reason, bucket) -> None:
    assert rejection_bucket(verdict, reason) == bucket
    assert bucket == "" or bucket in REJECTION_BUCKETS


def test_a_run_says_its_first_failing_handoff_else_the_run_level_fact() -> None:
    failing = H(sc.CONTEXT_INCOMPLETE, "missing at destination: tier", failed_boundary="context")
    handoffs = [H(sc.HEALTHY, "every boundary passed"), failing]
    assert (
        run_why(sc.CONTEXT_INCOMPLETE, handoffs, status=None, service="s")
        == "triage → billing (context): missing at destination: tier"
    )
    cycle = ["triage", "billing", "triage"]
    assert run_why(sc.LOOP, [], status=None, service="s", loop_cycle=cycle).endswith(
        "triage → billing → triage"
    )
    assert "turn or recursion limit" in run_why(
        sc.RUN_FAILED, [], status=sc.RUN_STATUS_MAX_TURNS, service="s"
    )
    assert "crashed" in run_why(sc.RUN_FAILED, [], status=sc.RUN_STATUS_FAILED, service="s")
    assert "support-bot" in run_why(sc.UNVERIFIED, [], status=None, service="support-bot")
    assert run_why(sc.HEALTHY, [], status=None, service="s", unobserved=["control"]) == (
        "every observed boundary passed"
    )
    assert run_why(sc.HEALTHY, [], status=None, service="s") == "Healthy"


def test_what_healthy_cannot_speak_for() -> None:
    assert not_observed_note([]) is None
    assert not_observed_note(["control"]) == "not observed by this source: control"
    assert not_observed_note(["control"], "OpenInference") == (
        "from OpenInference spans: control, waits, outcomes not observed"
    )
