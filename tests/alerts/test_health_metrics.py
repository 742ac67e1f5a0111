"""Health as metrics: /metrics agrees with the query API, keeps its cardinality bounded,
and serves exactly the families docs/api.md lists.

A real collector process is seeded through the real OTLP exporter; the expected figures
are read from the query API (what the dashboard shows), and also pinned to what was
seeded, so an agreement of two zeros cannot pass for a working gauge.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from alerts_support import sample, samples, until
from support.evidence import Run, S

from handoffscope.instrumentation import semconv as sc

ROOT = Path(__file__).resolve().parents[2]
GRACE = 1.0


def seed(sender: Any, now: int) -> None:
    r = Run(sender, "stuck-1", now - 120 * S)
    r.started()
    r.handoff("h1", "triage", "billing")
    r = Run(sender, "stuck-2", now - 90 * S)
    r.started()
    r.handoff("h1", "triage", "refunds")
    r = Run(sender, "looping", now - 30 * S)
    r.started()
    r.loop()
    for i, deadline in enumerate((now - 10 * S, now - 20 * S, now + 3600 * S)):
        r = Run(sender, f"waiting-{i}", now - 30 * S)
        r.started()
        r.handoff("h1", "triage", "refunds")
        r.wait("h1", deadline=deadline, at=0.2)
    r = Run(sender, "uncertain", now - 30 * S)
    r.started()
    r.handoff("h1", "triage", "refunds")
    r.wait("h1", deadline=now + 3600 * S, owner=None, at=0.2)
    r = Run(sender, "rejections", now - 30 * S)
    r.rejected("x1", "triage", "billing", sc.REJECTION_STALE)
    r.rejected("x2", "triage", "billing", sc.REJECTION_STALE, at=0.5)
    r.rejected("x3", "triage", "billing", sc.REJECTION_INVALID, at=1.0)
    r.ended(at=2.0)
    r = Run(sender, "done", now - 30 * S)
    r.started()
    r.handoff("h1", "triage", "billing")
    r.handoff("h2", "billing", "triage", at=1.0, fp="fp2")
    r.ended(at=2.0)
    assert sender.send().name == "SUCCESS"


def test_gauges_and_counters_agree_with_the_query_api(collector_factory, otlp_sender_factory):
    collector = collector_factory(args=["--grace-seconds", str(GRACE)])
    sender = otlp_sender_factory(collector, service="support")
    seed(sender, time.time_ns())
    svc = {"service": "support"}
    # The gauges are cached for 5 s; wait until they show the seeded runs.
    text = until(
        collector.metrics_text,
        lambda t: sample(t, "handoffscope_runs_in_flight", **svc) >= 7,
        timeout=30,
    )

    live = collector.api("/api/v1/live", window=86400)["runs_in_flight"]
    details = {r["run_id"]: collector.api(f"/api/v1/runs/{r['run_id']}") for r in live}
    stuck = [
        r["run_id"]
        for r in live
        if r["seconds_since_last_handoff"] > GRACE
        and details[r["run_id"]]["pending_approvals"] == 0
    ]
    looping = [rid for rid, d in details.items() if d["loop"]]
    assert sorted(stuck) == ["looping", "stuck-1", "stuck-2"]  # the loop went quiet too
    assert looping == ["looping"]
    assert sample(text, "handoffscope_runs_in_flight", **svc) == len(live) == 7
    assert sample(text, "handoffscope_runs_stuck", **svc) == len(stuck)
    assert sample(text, "handoffscope_runs_looping", **svc) == len(looping)

    approvals = Counter(a["verdict"] for a in collector.api("/api/v1/approvals")["approvals"])
    assert approvals == {sc.APPROVAL_OVERDUE: 2, sc.WAITING_ON_APPROVAL: 1, sc.WAIT_UNCERTAIN: 1}
    for verdict, family in (
        (sc.APPROVAL_OVERDUE, "handoffscope_approvals_overdue"),
        (sc.WAIT_UNCERTAIN, "handoffscope_approvals_uncertain"),
        (sc.WAITING_ON_APPROVAL, "handoffscope_approvals_waiting"),
    ):
        assert sample(text, family, **svc) == approvals[verdict], family

    weekly = collector.api("/api/v1/review/weekly")
    by_reason = Counter()
    for r in weekly["by_reason"]:
        by_reason[r["reason"]] += r["count"]
    assert by_reason == {sc.REJECTION_STALE: 2, sc.REJECTION_INVALID: 1}
    for reason in ("route", *sc.REJECTION_REASONS):
        got = sample(text, "handoffscope_rejections_total", service="support", reason=reason)
        assert got == by_reason.get(reason, 0), reason

    # Settled handoffs by edge and verdict: the control-flow view's histogram.
    edges = collector.api("/api/v1/edges", since="2000-01-01T00:00:00Z")["edges"]
    billing = next(e for e in edges if (e["from_agent"], e["to_agent"]) == ("triage", "billing"))
    labels = {"service": "support", "from_agent": "triage", "to_agent": "billing"}
    for verdict in (sc.HEALTHY, sc.CONTRACT_REJECTED):
        got = sample(text, "handoffscope_handoffs_total", **labels, verdict=verdict)
        assert got == billing["verdicts"].get(verdict, 0) > 0, verdict
    # Handoffs whose verdict came by a flip are counted once it has passed (the two waits
    # past their deadline), not while it is ahead (the wait an hour from its deadline).
    refunds = next(e for e in edges if (e["from_agent"], e["to_agent"]) == ("triage", "refunds"))
    labels = {**labels, "to_agent": "refunds"}
    overdue = sample(text, "handoffscope_handoffs_total", **labels, verdict=sc.APPROVAL_OVERDUE)
    assert overdue == refunds["verdicts"][sc.APPROVAL_OVERDUE] == 2
    waiting = sample(text, "handoffscope_handoffs_total", **labels, verdict=sc.WAITING_ON_APPROVAL)
    assert waiting == 0 < refunds["verdicts"][sc.WAITING_ON_APPROVAL]
    labels["to_agent"] = "billing"
    # Every verdict of the precedence has a sample for a labelled edge, zeros included.
    names = set(
        re.findall(
            r'handoffscope_handoffs_total\{[^}]*from_agent="triage",to_agent="billing",verdict="(\w+)"',
            text,
        )
    )
    assert names == set(sc.PRECEDENCE)


def test_cardinality_is_bounded_and_nothing_is_lost(collector_factory, otlp_sender_factory):
    collector = collector_factory(args=["--metrics-top", "2"])
    now = time.time_ns()
    for i, service in enumerate(("big", "mid", "small", "tiny")):
        sender = otlp_sender_factory(collector, service=service)
        r = Run(sender, f"run-{service}", now - 30 * S)
        for j in range(4 - i):  # big: 4 handoffs on 4 edges; tiny: 1
            r.handoff(f"h{j}", f"agent{j}", f"agent{j + 1}", at=j * 0.5, fp=f"fp{j}")
        r.ended(at=3.0)
        assert sender.send().name == "SUCCESS"
    text = until(
        collector.metrics_text,
        lambda t: sum(samples(t, "handoffscope_handoffs_total").values()) == 10,
        timeout=30,
    )
    handoffs = samples(text, "handoffscope_handoffs_total")
    services = {dict(k)["service"] for k in handoffs}
    assert services == {"big", "mid", "other"}
    edges = {(dict(k)["from_agent"], dict(k)["to_agent"]) for k, v in handoffs.items()}
    assert len(edges - {("other", "other")}) == 2
    other = {k: v for k, v in handoffs.items() if dict(k)["service"] == "other" and v}
    assert sum(other.values()) == 3, other
    assert sum(handoffs.values()) == 10, "every handoff counted once, labelled or folded"
    gauges = samples(text, "handoffscope_runs_in_flight")
    assert {dict(k)["service"] for k in gauges} == {"big", "mid", "other"}


def _key(**labels: str) -> frozenset:
    return frozenset(labels.items())


def documented_families() -> list[str]:
    doc = (ROOT / "docs" / "api.md").read_text()
    section = doc[doc.index("### `GET /metrics`") : doc.index("### `GET /api/v1/services`")]
    return re.findall(r"^\| `([a-z_<>]+)(?:\{[^}]*\})?` \|", section, re.M)


def test_docs_list_exactly_the_families_served(collector_factory, otlp_sender_factory, receiver):
    collector = collector_factory(args=["--notify", receiver.url])
    sender = otlp_sender_factory(collector)
    r = Run(sender, "one", time.time_ns())
    r.handoff("h1", "a", "b")
    assert sender.send().name == "SUCCESS"
    served = set(re.findall(r"^# TYPE (\S+) ", collector.metrics_text(), re.M))
    documented = documented_families()
    assert len(documented) == len(set(documented)), "a family listed twice"
    patterns = {d: re.compile("^" + re.sub(r"<name>", "[a-z_]+", d) + "$") for d in documented}
    unmatched = sorted(s for s in served if not any(p.match(s) for p in patterns.values()))
    assert not unmatched, f"served but not in docs/api.md: {unmatched}"
    missing = sorted(d for d, p in patterns.items() if not any(p.match(s) for s in served))
    assert not missing, f"in docs/api.md but not served: {missing}"
