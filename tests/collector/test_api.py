"""The query API end to end: real OTel SDK exporter (HTTP and gRPC) -> real collector
process -> real DuckDB file -> assertions through /api/v1 only.

Spans are built with semconv names by a real tracer (`OTLPSender`, tests/conftest.py)
and sent through the real OTLP exporter; the export returns after the collector's
commit, so what was sent is queryable when `send()` returns. Only the time-based flips
are polled for (the collector judges them at query time) — waiting, never timing.
"""

from __future__ import annotations

import csv
import io
import time

import pytest
from support.evidence import Run, S
from support.polling import eventually

from handoffscope.instrumentation import semconv as sc

GRACE = ["--grace-seconds", "1"]


def build_every_verdict(sender, t0: int, now: int) -> dict[str, str]:
    """One run per verdict of DESIGN §4 (handoff `h` carries it); returns run -> verdict."""
    runs: dict[str, str] = {}

    def run(verdict: str, suffix: str = "") -> Run:
        rid = f"v-{verdict}{suffix}"
        runs[rid] = verdict
        return Run(sender, rid, t0)

    r = run(sc.ROUTE_REJECTED)
    r.request("h", "triage", "billing", declared=False)
    r.accept("h")
    r = run(sc.ROUTE_REJECTED, "-goto")
    r.request("h", "triage", "billing", **{sc.ROUTE_GOTO: "refunds"})
    r.accept("h")
    r = run(sc.STALE_CONTROL)
    r.request("h", "triage", "billing")
    r.transfer(
        "h",
        **{sc.CONTROL_BEFORE: "refunds", sc.CONTROL_AFTER: "billing", sc.TOOL_CALL_CLOSED: True},
    )
    r.accept("h")
    r = run(sc.OPEN_TOOL_PROTOCOL)
    r.request("h", "triage", "billing", **{sc.TOOL_CALL_ID: "call_7"})
    r.transfer(
        "h",
        **{sc.CONTROL_BEFORE: "triage", sc.CONTROL_AFTER: "billing", sc.TOOL_CALL_CLOSED: False},
    )
    r.accept("h")
    r = run(sc.CONTEXT_INCOMPLETE)
    r.request("h", "triage", "billing", **{sc.CONTEXT_REQUIRED_KEYS: ["order_id", "account_id"]})
    r.accept("h", **{sc.CONTEXT_MISSING_KEYS: ["account_id"]})
    r = run(sc.CONTRACT_REJECTED)
    r.request("h", "triage", "billing")
    r.accept(
        "h",
        started=False,
        **{sc.REJECTION_REASON: sc.REJECTION_INVALID, sc.REJECTION_FIELDS: ["goal"]},
    )
    r = Run(sender, "v-destination_not_started", now - 120 * S)  # long past a 1 s grace
    runs[r.run_id] = sc.DESTINATION_NOT_STARTED
    r.request("h", "triage", "billing")
    r = run(sc.LOOP)
    r.request("h0", "triage", "billing", turn=1, fp="same", sv=4)
    r.accept("h0")
    r.request("h", "billing", "triage", turn=2, fp="same", sv=4, at=2)
    r.accept("h", at=3)
    r = run(sc.FALSE_COMPLETE)
    r.status(sc.RUN_STATUS_COMPLETED, dur=9, **{sc.RUN_FINAL_AGENT: "billing"})
    r.request("h", "triage", "billing")
    r.accept("h")
    r = run(sc.FALSE_COMPLETE, "-claims-while-waiting")
    r.request("h", "triage", "billing")
    r.accept("h", **{sc.DESTINATION_CLAIMS_DONE: True})
    r.wait("h", deadline=now + 3600 * S)
    r = run(sc.APPROVAL_OVERDUE)
    r.request("h", "triage", "billing")
    r.accept("h")
    r.wait("h", deadline=now - 60 * S)
    r = run(sc.WAIT_UNCERTAIN)
    r.request("h", "triage", "billing")
    r.accept("h")
    r.wait("h", deadline=now + 3600 * S, **{sc.WAIT_OWNER: None, sc.WAIT_STATE_PERSISTED: None})
    r = run(sc.WAITING_ON_APPROVAL)
    r.request("h", "triage", "billing")
    r.accept("h")
    r.wait("h", deadline=now + 3600 * S)
    r = Run(sender, "v-in_flight", now + 3600 * S)  # first seen an hour ahead: inside grace
    runs[r.run_id] = sc.IN_FLIGHT
    r.request("h", "triage", "billing")
    r = run(sc.HEALTHY)
    r.status(sc.RUN_STATUS_COMPLETED, dur=9)
    r.request("h", "triage", "billing", **{sc.TOOL_CALL_ID: "call_1"})
    r.transfer(
        "h", **{sc.CONTROL_BEFORE: "triage", sc.CONTROL_AFTER: "billing", sc.TOOL_CALL_CLOSED: True}
    )
    r.accept("h")
    r.outcome(sc.OUTCOME_PASS)
    return runs


def handoff(detail: dict, hid: str = "h") -> dict:
    (h,) = [x for x in detail["handoffs"] if x["handoff_id"] == hid]
    return h


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_every_verdict_end_to_end(collector_factory, otlp_sender_factory, protocol):
    collector = collector_factory(args=GRACE)
    sender = otlp_sender_factory(collector, protocol, service=f"shop-{protocol}")
    now = time.time_ns()
    runs = build_every_verdict(sender, now - 300 * S, now)
    assert sender.send().name == "SUCCESS"

    for run_id, verdict in runs.items():
        detail = collector.api(f"/api/v1/runs/{run_id}")
        h = handoff(detail)
        assert h["verdict"] == verdict, (run_id, h)
        assert h["verdict_label"] == sc.VERDICT_LABELS[verdict]
        assert h["next_step"] == sc.NEXT_STEPS[verdict]
        assert h["failed_boundary"] == sc.VERDICT_BOUNDARY.get(verdict)
        assert h["why"]
        assert set(h["boundaries"]) == set(sc.BOUNDARIES)
        if h["failed_boundary"] in sc.BOUNDARIES:
            assert h["boundaries"][h["failed_boundary"]] == "failed"
        else:
            assert "failed" not in h["boundaries"].values()
        assert detail["verdict"] == verdict, (run_id, detail["verdict"])
        assert detail["service"] == f"shop-{protocol}"

    healthy = collector.api("/api/v1/runs/v-healthy")
    assert handoff(healthy)["boundaries"] == {b: "passed" for b in sc.BOUNDARIES}
    assert healthy["outcomes"][0]["result"] == sc.OUTCOME_PASS
    loop = collector.api("/api/v1/runs/v-loop")
    assert loop["loop"] is True and loop["loop_cycle"] == ["triage", "billing", "triage"]
    assert handoff(collector.api("/api/v1/runs/v-contract_rejected"))["rejection_fields"] == [
        "goal"
    ]
    stale = handoff(collector.api("/api/v1/runs/v-stale_control"))
    assert stale["boundaries"]["route"] == "passed" and stale["boundaries"]["context"] == "unknown"
    assert collector.api("/api/v1/runs/v-false_complete")["false_complete"] is True

    # The list endpoints agree with the detail, filter by verdict and service.
    listed = collector.api("/api/v1/runs", limit=100, service=f"shop-{protocol}")["runs"]
    assert {r["run_id"]: r["verdict"] for r in listed} == runs
    for verdict in set(runs.values()):
        got = collector.api("/api/v1/runs", verdict=verdict)["runs"]
        assert {r["run_id"] for r in got} == {k for k, v in runs.items() if v == verdict}
    unhealthy = collector.api("/api/v1/handoffs", unhealthy="true", limit=1000)["handoffs"]
    assert {(h["run_id"], h["verdict"]) for h in unhealthy if h["handoff_id"] == "h"} == {
        (k, v) for k, v in runs.items() if v in sc.FAILURE_VERDICTS
    }
    assert collector.api("/api/v1/runs", service="nobody")["runs"] == []


def test_time_based_verdicts_flip_at_query_time(collector_factory, otlp_sender_factory):
    collector = collector_factory(args=GRACE)
    sender = otlp_sender_factory(collector)
    now = time.time_ns()
    r = Run(sender, "late", now)
    r.request("h", "triage", "billing")
    w = Run(sender, "deadline", now)
    w.request("h", "triage", "billing")
    w.accept("h", at=0.1)
    w.wait("h", at=0.2, deadline=now + 2 * S)
    sender.send()
    # No new evidence arrives: only the passing of time turns these into failures.
    late = eventually(
        lambda: collector.api("/api/v1/runs/late"),
        lambda d: d["verdict"] == sc.DESTINATION_NOT_STARTED,
        timeout=30,
        or_last=True,
    )
    assert handoff(late)["verdict"] == sc.DESTINATION_NOT_STARTED
    assert handoff(late)["boundaries"]["destination"] == "failed"
    overdue = eventually(
        lambda: collector.api("/api/v1/approvals")["approvals"],
        lambda a: bool(a) and a[0]["verdict"] == sc.APPROVAL_OVERDUE,
        timeout=30,
        or_last=True,
    )
    assert overdue[0]["run_id"] == "deadline" and overdue[0]["seconds_left"] <= 0
    assert collector.api("/api/v1/runs/deadline")["verdict"] == sc.APPROVAL_OVERDUE


def _comparable(detail: dict) -> dict:
    """A run detail without what differs between two runs with the same evidence."""
    out = {k: v for k, v in detail.items() if k not in ("run_id", "spans", "waits", "trace_ids")}
    out["handoffs"] = [{k: v for k, v in h.items()} for h in detail["handoffs"]]
    out["spans"] = [
        {k: v for k, v in s.items() if k not in ("trace_id", "span_id")} for s in detail["spans"]
    ]
    for s in out["spans"]:
        s["attributes"] = {k: v for k, v in s["attributes"].items() if k != sc.RUN_ID}
    out["waits"] = [
        {k: v for k, v in w.items() if k not in ("run_id", "seconds_left")} for w in detail["waits"]
    ]
    return out


def _rich_run(sender, run_id: str, t0: int, now: int) -> None:
    r = Run(sender, run_id, t0)
    r.status(sc.RUN_STATUS_STARTED, dur=0.001)
    r.request("1", "triage", "billing", turn=1, fp="a", sv=1, **{sc.TOOL_CALL_ID: "c1"})
    r.transfer(
        "1", **{sc.CONTROL_BEFORE: "triage", sc.CONTROL_AFTER: "billing", sc.TOOL_CALL_CLOSED: True}
    )
    r.accept("1")
    r.request("2", "billing", "refunds", turn=2, fp="b", sv=2, at=3)
    r.accept("2", at=4)
    r.wait("2", at=5, deadline=now + 3600 * S)
    r.request("3", "refunds", "billing", turn=3, fp="b", sv=2, at=8)
    r.accept("3", at=9)
    r.outcome(sc.OUTCOME_FAIL, "3", at=10)
    r.status(sc.RUN_STATUS_MAX_TURNS, dur=11, **{sc.RUN_FINAL_AGENT: "billing", sc.RUN_TURNS: 3})


def test_out_of_order_and_twice_over_grpc(collector_factory, otlp_sender_factory):
    collector = collector_factory(args=GRACE)
    sender = otlp_sender_factory(collector, "grpc")
    now = time.time_ns()
    t0 = now - 600 * S
    _rich_run(sender, "in-order", t0, now)
    assert sender.send().name == "SUCCESS"
    _rich_run(sender, "shuffled", t0, now)
    spans = sender.take()
    backwards = spans[::-1]
    for i in range(0, len(backwards), 4):  # several exports, last evidence first ...
        assert sender.send(backwards[i : i + 4]).name == "SUCCESS"
    assert sender.send(spans).name == "SUCCESS"  # ... then every span again
    assert collector.metric("handoffscope_spans_duplicate_total") >= len(spans)

    ref = collector.api("/api/v1/runs/in-order")
    got = collector.api("/api/v1/runs/shuffled")
    assert _comparable(got) == _comparable(ref)
    assert len(got["spans"]) == len(spans)  # each span stored once
    assert got["handoff_count"] == 3 and got["status"] == sc.RUN_STATUS_MAX_TURNS
    assert got["failed"] is True
    assert got["path"] == ["triage", "billing", "refunds", "billing"]
    assert got["loop_cycle"] == ["billing", "refunds", "billing"]
    assert [h["verdict"] for h in got["handoffs"]] == [sc.HEALTHY, sc.WAITING_ON_APPROVAL, sc.LOOP]
    assert got["pending_approvals"] == 1 and got["waits"][0]["handoff_id"] == "2"


def test_cycle_is_a_loop_and_progress_is_not(collector_factory, otlp_sender_factory):
    collector = collector_factory(args=GRACE)
    sender = otlp_sender_factory(collector)
    t0 = time.time_ns() - 60 * S
    cyc = Run(sender, "cycle", t0)
    for turn, (frm, to) in enumerate([("A", "B"), ("B", "C"), ("C", "A")], start=1):
        cyc.request(str(turn), frm, to, turn=turn, fp="task", sv=7, at=turn)
        cyc.accept(str(turn), at=turn + 0.5)
    retry = Run(sender, "retry", t0)
    for turn, (frm, to) in enumerate([("A", "B"), ("B", "A"), ("A", "B")], start=1):
        retry.request(str(turn), frm, to, turn=turn, fp="task", sv=turn, at=turn)  # state moves on
        retry.accept(str(turn), at=turn + 0.5)
    sender.send()

    c = collector.api("/api/v1/runs/cycle")
    assert c["loop"] is True and c["loop_cycle"] == ["A", "B", "C", "A"] and c["loop_repeats"] == 1
    assert [h["verdict"] for h in c["handoffs"]] == [sc.HEALTHY, sc.HEALTHY, sc.LOOP]
    assert handoff(c, "3")["failed_boundary"] == sc.BOUNDARY_PROGRESS
    r = collector.api("/api/v1/runs/retry")
    assert r["loop"] is False and r["verdict"] == sc.HEALTHY
    loops = collector.api("/api/v1/loops")["loops"]
    assert [(x["run_id"], x["cycle"], x["repeats"]) for x in loops] == [
        ("cycle", ["A", "B", "C", "A"], 1)
    ]


PRECEDENCE_PAIRS = {
    # run: (expected, first export, later "green" export)
    "route+pass": (
        sc.ROUTE_REJECTED,
        lambda r: (r.request("h", "A", "B", declared=False), r.accept("h")),
        lambda r: (
            r.status(sc.RUN_STATUS_COMPLETED, dur=30),
            r.outcome(sc.OUTCOME_PASS, "h", at=20),
            r.transfer("h", at=10, **{sc.ROUTE_DECLARED: True}),
        ),
    ),
    "stale+admitted": (
        sc.STALE_CONTROL,
        lambda r: (r.request("h", "A", "B"), r.transfer("h", **{sc.CONTROL_BEFORE: "C"})),
        lambda r: (r.accept("h", at=10), r.outcome(sc.OUTCOME_PASS, "h", at=20)),
    ),
    "open-tool+closed": (
        sc.OPEN_TOOL_PROTOCOL,
        lambda r: (r.request("h", "A", "B"), r.transfer("h", **{sc.TOOL_CALL_CLOSED: False})),
        lambda r: (r.transfer("h", at=5, **{sc.TOOL_CALL_CLOSED: True}), r.accept("h", at=10)),
    ),
    "context+pass": (
        sc.CONTEXT_INCOMPLETE,
        lambda r: (r.request("h", "A", "B"), r.accept("h", **{sc.CONTEXT_MISSING_KEYS: ["k"]})),
        lambda r: (r.outcome(sc.OUTCOME_PASS, "h", at=20),),
    ),
    "contract+started": (
        sc.CONTRACT_REJECTED,
        lambda r: (
            r.request("h", "A", "B"),
            r.accept("h", started=False, **{sc.REJECTION_REASON: sc.REJECTION_UNAUTHORIZED}),
        ),
        lambda r: (r.accept("h", at=10), r.outcome(sc.OUTCOME_PASS, "h", at=20)),
    ),
    "refused-start+started": (
        sc.DESTINATION_NOT_STARTED,
        lambda r: (r.request("h", "A", "B"), r.accept("h", started=False)),
        lambda r: (r.accept("h", at=10),),
    ),
    "loop+pass": (
        sc.LOOP,
        lambda r: (
            r.request("h0", "A", "B", turn=1, fp="x"),
            r.accept("h0"),
            r.request("h", "B", "A", turn=2, fp="x", at=2),
            r.accept("h", at=3),
        ),
        lambda r: (r.outcome(sc.OUTCOME_PASS, "h", at=20),),
    ),
    "false-complete+later-pass-of-other": (
        sc.FALSE_COMPLETE,
        lambda r: (
            r.request("h", "A", "B"),
            r.accept("h"),
            r.status(sc.RUN_STATUS_COMPLETED, dur=30),
            r.outcome(sc.OUTCOME_FAIL, at=20, verifier="unit"),
        ),
        lambda r: (r.outcome(sc.OUTCOME_PASS, at=25, verifier="lint"),),
    ),
}


def test_earlier_failure_not_hidden_by_later_green(collector_factory, otlp_sender_factory):
    collector = collector_factory(args=GRACE)
    sender = otlp_sender_factory(collector)
    t0 = time.time_ns() - 120 * S
    for run_id, (_, first, _) in PRECEDENCE_PAIRS.items():
        first(Run(sender, run_id, t0))
    sender.send()
    for run_id, (expected, _, _) in PRECEDENCE_PAIRS.items():
        assert handoff(collector.api(f"/api/v1/runs/{run_id}"))["verdict"] == expected, run_id
    for run_id, (_, _, later) in PRECEDENCE_PAIRS.items():
        later(Run(sender, run_id, t0))
    sender.send()
    for run_id, (expected, _, _) in PRECEDENCE_PAIRS.items():
        detail = collector.api(f"/api/v1/runs/{run_id}")
        assert handoff(detail)["verdict"] == expected, run_id
        assert detail["verdict"] == expected, run_id


def _snapshot(collector) -> dict:
    paths = [
        "/api/v1/runs",
        "/api/v1/handoffs",
        "/api/v1/edges",
        "/api/v1/loops",
        "/api/v1/false_completions",
        "/api/v1/services",
    ]
    out = {p: collector.api(p) for p in paths}
    for r in out["/api/v1/runs"]["runs"]:
        r.pop("seconds_since_last_activity")  # the clock moves between two snapshots
    out["approvals"] = [
        {k: v for k, v in a.items() if k != "seconds_left"}
        for a in collector.api("/api/v1/approvals")["approvals"]
    ]
    out["weekly"] = collector.api("/api/v1/review/weekly")
    for w in out["weekly"]["weeks"]:
        w.pop("days")  # how far into its week: moves with the clock too
    for rid in ("keep", "keep-loop"):
        out[rid] = {k: v for k, v in collector.api(f"/api/v1/runs/{rid}").items() if k != "waits"}
    return out


def test_restart_keeps_verdicts_and_merges_on(collector_factory, otlp_sender_factory):
    collector = collector_factory(args=GRACE)
    sender = otlp_sender_factory(collector)
    now = time.time_ns()
    t0 = now - 600 * S
    _rich_run(sender, "keep", t0, now)
    a = Run(sender, "keep-loop", t0)
    a.request("1", "A", "B", turn=1, fp="f", sv=1)
    a.accept("1")
    Run(sender, "keep-done", t0).status(sc.RUN_STATUS_COMPLETED, dur=5)
    sender.send()
    before = _snapshot(collector)

    collector.restart()
    assert _snapshot(collector) == before

    a.request("2", "B", "A", turn=2, fp="f", sv=1, at=30)  # after the restart: closes a cycle
    a.accept("2", at=31)
    sender.send()
    after = collector.api("/api/v1/runs/keep-loop")
    assert after["handoff_count"] == 2 and after["loop"] is True
    assert after["loop_cycle"] == ["A", "B", "A"] and after["verdict"] == sc.LOOP


def test_views_over_one_history(collector_factory, otlp_sender_factory):
    """Edges, approvals, false completions, live, weekly (JSON and CSV), services, drops."""
    collector = collector_factory(args=GRACE)
    sender = otlp_sender_factory(collector, service="desk")
    now = time.time_ns()
    t0 = now - 300 * S
    for i in range(3):
        r = Run(sender, f"ok{i}", t0 + i * S)
        r.request("h", "triage", "billing")
        r.accept("h")
    bad = Run(sender, "undeclared", t0)
    bad.request("h", "triage", "refunds", declared=False)
    bad.accept("h")
    refused = Run(sender, "refused", t0)
    refused.request("h", "triage", "billing")
    refused.accept("h", started=False, **{sc.REJECTION_REASON: sc.REJECTION_NO_BUDGET})
    for rid, deadline, attrs in (
        ("w-waiting", now + 7200 * S, {}),
        ("w-soon", now + 600 * S, {}),
        ("w-overdue", now - 5 * S, {}),
        ("w-uncertain", now + 900 * S, {sc.WAIT_RESUME_TOKEN_ID: None}),
    ):
        w = Run(sender, rid, t0)
        w.request("h", "billing", "finance")
        w.accept("h")
        w.wait("h", deadline=deadline, **attrs)
    # The app declared that its runs must be verified (run.outcome_required).
    Run(sender, "done-no-proof", t0).status(
        sc.RUN_STATUS_COMPLETED,
        dur=4,
        **{sc.RUN_FINAL_AGENT: "billing", sc.RUN_OUTCOME_REQUIRED: True},
    )
    live = Run(sender, "running", now - 5 * S)
    live.status(sc.RUN_STATUS_STARTED)
    live.request("h", "triage", "billing")
    live.accept("h", **{sc.CONTROL_AFTER: "billing"})
    sentinel = "SENTINEL-prompt-do-not-store-4711"
    live.span(
        sc.SPAN_REQUEST,
        "h2",
        at=2,
        **{
            sc.FROM_AGENT: "billing",
            sc.TO_AGENT: "triage",
            "gen_ai.prompt": sentinel,
            "input.value": sentinel,
        },
    )
    assert sender.send().name == "SUCCESS"

    edges = {(e["from_agent"], e["to_agent"]): e for e in collector.api("/api/v1/edges")["edges"]}
    tb = edges[("triage", "billing")]
    assert tb["count"] == 5 and tb["unhealthy"] == 1 and tb["undeclared"] == 0
    assert tb["verdicts"] == {sc.CONTRACT_REJECTED: 1, sc.HEALTHY: 4}
    assert tb["unhealthy_share"] == pytest.approx(0.2)
    assert set(tb["runs"]) == {"ok0", "ok1", "ok2", "refused", "running"}
    assert edges[("triage", "refunds")]["undeclared"] == 1
    assert edges[("billing", "finance")]["count"] == 4

    approvals = collector.api("/api/v1/approvals")["approvals"]
    assert [a["run_id"] for a in approvals] == ["w-overdue", "w-uncertain", "w-soon", "w-waiting"]
    assert [a["verdict"] for a in approvals] == [
        sc.APPROVAL_OVERDUE,
        sc.WAIT_UNCERTAIN,
        sc.WAITING_ON_APPROVAL,
        sc.WAITING_ON_APPROVAL,
    ]
    assert approvals[1]["missing"] == ["resume_token_id"]
    assert (
        approvals[0]["seconds_left"]
        < 0
        < approvals[2]["seconds_left"]
        < approvals[3]["seconds_left"]
    )
    assert collector.api("/api/v1/approvals", service="other")["approvals"] == []

    fc = collector.api("/api/v1/false_completions")["runs"]
    assert [(r["run_id"], r["final_agent"], r["outcome_result"]) for r in fc] == [
        ("done-no-proof", "billing", None)
    ]

    board = collector.api("/api/v1/live", window=3600)
    flying = {r["run_id"]: r for r in board["runs_in_flight"]}
    assert flying["running"]["current_agent"] == "billing"
    assert flying["running"]["seconds_since_last_handoff"] >= 0
    assert "done-no-proof" not in flying
    assert sum(board["verdict_counts"].values()) == 11
    assert board["verdict_counts"][sc.HEALTHY] >= 4
    assert sum(t["count"] for t in board["timeline"]) == 11
    assert {h["run_id"] for h in board["unhealthy"]} >= {
        "undeclared",
        "refused",
        "w-overdue",
        "w-uncertain",
    }
    assert all(h["verdict"] in sc.FAILURE_VERDICTS for h in board["unhealthy"])

    weekly = collector.api("/api/v1/review/weekly", weeks=2)
    this = weekly["weeks"][-1]
    assert this["week"] == weekly["this_week"] and len(weekly["weeks"]) == 2
    assert this["handoffs"] == 11 and this["rejections"] == 2
    assert {(r["reason"], r["count"]) for r in weekly["by_reason"]} == {
        ("route", 1),
        (sc.REJECTION_NO_BUDGET, 1),
    }
    agents = {r["agent"]: (r["handoffs"], r["rejections"]) for r in weekly["by_agent"]}
    assert agents["refunds"] == (1, 1) and agents["billing"] == (5, 1)
    text = collector.get("/api/v1/review/weekly", weeks=2, format="csv")
    assert text.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(text.text)))
    assert {"week", "dimension", "key", "handoffs", "rejections", "rate"} == set(rows[0])
    total = [r for r in rows if r["dimension"] == "total" and r["week"] == weekly["this_week"]]
    assert total[0]["rejections"] == "2"
    assert any(r["dimension"] == "edge" and r["key"] == "triage->refunds" for r in rows)

    assert collector.api("/api/v1/services") == {"services": ["desk"]}
    drops = {
        (d["service"], d["attribute"]): d["count"] for d in collector.api("/api/v1/drops")["drops"]
    }
    assert drops[("desk", "gen_ai.prompt")] == 1 and drops[("desk", "input.value")] == 1
    # No content through the API: the sentinel is in no answer.
    for path in ("/api/v1/runs/running", "/api/v1/handoffs", "/api/v1/live", "/api/v1/drops"):
        assert sentinel not in collector.get(path).text


def test_runs_newest_first_over_a_long_window(collector_factory, otlp_sender_factory):
    """The runs page, newest first, looks for its page in the window's last hour first
    (runs.sql `probe`): the same page and total whether that hour holds the page, holds
    exactly it, or holds too few (then the whole window is searched), and for a window
    that ended before the last hour."""
    collector = collector_factory(args=GRACE)
    sender = otlp_sender_factory(collector, service="desk")
    now = time.time_ns()
    minutes = {f"new-{i}": 5 + 5 * i for i in range(5)}  # 5-25 min ago: the last hour
    minutes |= {f"old-{i}": 90 + 60 * i for i in range(5)}  # 1.5-5.5 h ago
    for rid, m in minutes.items():
        r = Run(sender, rid, now - m * 60 * S)
        r.request("h", "triage", "billing")
        r.accept("h")
    assert sender.send().name == "SUCCESS"
    newest = sorted(minutes, key=minutes.__getitem__)
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now / S - 6 * 3600))
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now / S - 3600))

    def page(limit: int, **params) -> tuple[list[str], int]:
        body = collector.api("/api/v1/runs", since=since, limit=limit, **params)
        return [r["run_id"] for r in body["runs"]], body["total"]

    assert page(3) == (newest[:3], 10)  # the last hour holds the page
    assert page(5) == (newest[:5], 10)  # ... exactly
    assert page(7) == (newest[:7], 10)  # too few there: the whole window
    assert page(100) == (newest, 10)
    older = [rid for rid in newest if rid.startswith("old")]
    assert page(2, until=until) == (older[:2], 5)  # a window that ended an hour ago
    assert page(2, sort="silent")[1] == 10  # other orders do not probe
    # Pages: each the next slice of the same order, the total of every match; the probe
    # reaches offset + limit rows (a second page inside the last hour, one across it).
    assert page(2, offset=2) == (newest[2:4], 10)
    assert page(3, offset=3) == (newest[3:6], 10)
    assert page(4, offset=8) == (newest[8:], 10)
    assert page(4, offset=20) == ([], 10)  # past the end: no runs, still the total
    silent = page(10, sort="silent")[0]
    assert page(4, offset=4, sort="silent")[0] == silent[4:8]


def test_handoffs_newest_first_over_a_long_window(collector_factory, otlp_sender_factory):
    """The handoffs page looks for itself in the window's last hour, then its last day,
    then the whole window (handoffs.sql `probe`, `wide`): the same page whichever rung
    holds it, exactly or with room, and for a window that ended before the last hour."""
    collector = collector_factory(args=GRACE)
    sender = otlp_sender_factory(collector, service="desk")
    now = time.time_ns()
    minutes = {f"hour-{i}": 5 + 5 * i for i in range(4)}  # 5-20 min ago: the last hour
    minutes |= {f"day-{i}": 120 + 60 * i for i in range(4)}  # 2-5 h ago: the last day
    minutes |= {f"old-{i}": 26 * 60 + 60 * i for i in range(4)}  # 26-29 h ago
    for rid, m in minutes.items():
        r = Run(sender, rid, now - m * 60 * S)
        r.request("h", "triage", "billing")
        r.accept("h")
    assert sender.send().name == "SUCCESS"
    newest = sorted(minutes, key=minutes.__getitem__)
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now / S - 48 * 3600))
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now / S - 3600))

    def page(limit: int, **params) -> list[str]:
        body = collector.api("/api/v1/handoffs", since=since, limit=limit, **params)
        return [h["run_id"] for h in body["handoffs"]]

    assert page(3) == newest[:3]  # the last hour holds the page
    assert page(4) == newest[:4]  # ... exactly
    assert page(6) == newest[:6]  # too few there: the last day
    assert page(8) == newest[:8]  # ... exactly
    assert page(10) == newest[:10]  # too few in the day: the whole window
    assert page(100) == newest
    assert page(2, until=until) == newest[4:6]  # a window that ended an hour ago
    assert page(6, until=until) == newest[4:10]
    assert page(3, unhealthy="true") == []  # every handoff here is healthy


BAD_PARAMS = [
    ("/api/v1/runs", {"limit": "0"}),
    ("/api/v1/runs", {"limit": "1001"}),
    ("/api/v1/runs", {"limit": "ten"}),
    ("/api/v1/runs", {"limit": ""}),
    ("/api/v1/runs", {"verdict": "fine"}),
    ("/api/v1/runs", {"since": "yesterday"}),
    ("/api/v1/runs", {"until": "2026-02-30T00:00:00Z"}),
    ("/api/v1/handoffs", {"unhealthy": "yes"}),
    ("/api/v1/edges", {"service": "a\x01b"}),
    ("/api/v1/live", {"window": "-5"}),
    ("/api/v1/review/weekly", {"weeks": "0"}),
    ("/api/v1/review/weekly", {"format": "xml"}),
    ("/api/v1/approvals", {"limit": "9" * 30}),
]


def test_bad_parameters_are_400_and_docs_are_served(collector):
    for path, params in BAD_PARAMS:
        r = collector.get(path, **params)
        assert r.status_code == 400, (path, params, r.text)
        assert r.json()["error"]
    for ok in (
        {"since": "2026-01-01T00:00:00.5+02:00"},
        {"since": "1700000000.25"},
        {"since": "2026-01-01"},
        {"until": "0"},
        {"service": ""},
    ):
        assert collector.get("/api/v1/runs", **ok).status_code == 200, ok
    missing = collector.get("/api/v1/runs/no-such-run")
    assert missing.status_code == 404 and "error" in missing.json()
    assert collector.get("/api/v1/runs/" + "x" * 500).status_code == 404
    spec = collector.api("/openapi.json")
    assert spec["openapi"].startswith("3.") and "/api/v1/runs/{run_id}" in spec["paths"]
    docs = collector.get("/docs").text
    assert "/api/v1/review/weekly" in docs
    for op in ("GET", "POST", "DELETE"):  # the one write, acknowledging, is on the page too
        assert f"{op} /api/v1/acknowledgements" in docs
