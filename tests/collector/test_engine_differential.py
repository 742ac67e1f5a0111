"""The collector agrees with `classify()`, whatever the arrival (issue 14's differential test).

`classify()` in the instrumentation is the normative definition of a verdict. Here
hypothesis draws random evidence for several runs — each fact present, absent or
contradicting — and the collector receives those spans shuffled, split into random
batches, partly re-sent (same span ids) and across a restart. Afterwards every handoff's
and run's stored verdict must equal `classify()` applied to the evidence as the test
itself merges it from the facts it drew (not through the collector's merge code); the
stored timeline, and the why, next step and six boundaries the query API derives from the
stored row, must equal what the verdicts package derives from the drawn evidence; and
the edge rollup must equal a recount of the handoffs from scratch.

The runs carry one handoff each, so loop detection (tested on its own in
test_engine.py) plays no part; everything else a handoff can fail on does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine import (
    BRUTE_EDGES,
    NOW0,
    ROLLUP_EDGES,
    T0,
    Collector,
    S,
    outcome,
    request,
    run_span,
    span,
)

from handoffscope.collector.store.records import handoff_evidence
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.classify import HandoffEvidence, classify, worst
from handoffscope.instrumentation.verdicts import Timeline, boundaries, handoff_timeline

GRACE = 30.0
RUNS_PER_EXAMPLE = 6


@dataclass
class Drawn:
    """One run's facts as drawn, and the spans that state them."""

    run_id: str
    evidence: HandoffEvidence
    status: str | None
    run_result: str | None
    spans: list[dict] = field(default_factory=list)


@st.composite
def drawn_run(draw, run_id: str) -> Drawn:
    opt = st.none
    declared = draw(st.sampled_from([True, True, False, None]))
    goto = draw(st.sampled_from([None, None, "B", "C"]))
    tool_call = draw(st.sampled_from([None, "call_1"]))
    required = draw(st.sampled_from([(), ("order_id",)]))
    ev = HandoffEvidence(
        run_id=run_id,
        handoff_id="h",
        from_agent="A",
        to_agent="B",
        first_seen_ns=T0,
        requested=True,
        route_declared=declared,
        route_goto=goto,
        tool_call_id=tool_call,
        required_keys=required,
    )
    a = {sc.TOOL_CALL_ID: tool_call, sc.ROUTE_GOTO: goto}
    if required:
        a[sc.CONTEXT_REQUIRED_KEYS] = list(required)
    spans = [request(run_id, "h", "A", "B", declared=declared, a=a)]

    if draw(st.booleans()):  # the transfer of control
        ev.control_before = draw(st.sampled_from(["A", None]))
        ev.control_after = draw(st.sampled_from(["B", "B", "A", None]))
        ev.tool_call_closed = draw(st.sampled_from([True, False, None]))
        spans.append(
            span(
                sc.SPAN_TRANSFER,
                run_id,
                "h",
                at=0.5,
                a={
                    sc.CONTROL_BEFORE: ev.control_before,
                    sc.CONTROL_AFTER: ev.control_after,
                    sc.TOOL_CALL_CLOSED: ev.tool_call_closed,
                },
            )
        )
    if draw(st.booleans()):  # the destination's admission
        ev.destination_started = draw(st.sampled_from([True, True, False]))
        ev.missing_keys = draw(st.sampled_from([(), (), ("order_id",)]))
        ev.rejection_reason = draw(st.one_of(opt(), st.sampled_from(sc.REJECTION_REASONS)))
        spans.append(
            span(
                sc.SPAN_ACCEPT,
                run_id,
                "h",
                at=1.0,
                a={
                    sc.DESTINATION_STARTED: ev.destination_started,
                    sc.CONTEXT_MISSING_KEYS: list(ev.missing_keys),
                    sc.REJECTION_REASON: ev.rejection_reason,
                },
            )
        )
    if draw(st.booleans()):  # a wait for approval, perhaps decided later
        ev.wait_seen = True
        ev.wait_owner = draw(st.sampled_from(["ops", None]))
        ev.wait_reason = draw(st.sampled_from(["refund_over_limit", None]))
        deadline = draw(st.sampled_from([-600, 600, None]))
        ev.wait_deadline_ns = None if deadline is None else NOW0 + deadline * S
        ev.wait_resume_token_id = "tok1"
        ev.wait_state_persisted = draw(st.sampled_from([True, False, None]))
        spans.append(
            span(
                sc.SPAN_WAIT,
                run_id,
                "h",
                at=2.0,
                a={
                    sc.WAIT_OWNER: ev.wait_owner,
                    sc.WAIT_REASON: ev.wait_reason,
                    sc.WAIT_DEADLINE: ev.wait_deadline_ns,
                    sc.WAIT_RESUME_TOKEN_ID: "tok1",
                    sc.WAIT_STATE_PERSISTED: ev.wait_state_persisted,
                },
            )
        )
        ev.wait_decision = draw(st.one_of(opt(), st.sampled_from(sc.WAIT_DECISIONS)))
        if ev.wait_decision is not None:
            spans.append(
                span(
                    sc.SPAN_WAIT,
                    run_id,
                    "h",
                    at=3.0,
                    a={sc.WAIT_RESUME_TOKEN_ID: "tok1", sc.WAIT_DECISION: ev.wait_decision},
                )
            )
    run_result = draw(st.one_of(opt(), st.sampled_from([sc.OUTCOME_PASS, sc.OUTCOME_FAIL])))
    if run_result is not None:
        spans.append(outcome(run_id, run_result, at=5.0))
    status = draw(st.one_of(opt(), st.sampled_from(sc.RUN_STATUSES)))
    if status is not None:
        spans.append(run_span(run_id, status, dur=10, a={sc.RUN_FINAL_AGENT: "B"}))
    ev.run_status = status
    ev.run_stopped = status == sc.RUN_STATUS_MAX_TURNS
    if status == sc.RUN_STATUS_COMPLETED:
        # Verification is expected (`require_outcome='*'`): the completion claim lands on
        # the run's last handoff and is judged by the run's verifiers.
        ev.claims_done, ev.outcome_result = True, run_result
    return Drawn(run_id, ev, status, run_result, spans)


def expected_run_verdict(d: Drawn, handoff_verdict: str) -> str:
    statics = [handoff_verdict]
    if d.status == sc.RUN_STATUS_COMPLETED and d.run_result != sc.OUTCOME_PASS:
        statics.append(sc.FALSE_COMPLETE)
    if d.status in (sc.RUN_STATUS_FAILED, sc.RUN_STATUS_MAX_TURNS):
        statics.append(sc.RUN_FAILED)
    return worst(statics)


@st.composite
def arrivals(draw):
    """Several runs' spans in one stream: shuffled, batched, partly re-sent, a restart."""
    runs = [draw(drawn_run(f"d{i}")) for i in range(RUNS_PER_EXAMPLE)]
    stream = draw(st.permutations([s for r in runs for s in r.spans]))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(stream) - 1)), max_size=6)))
    batches = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    batches = [b for b in batches if b]
    resent = draw(st.lists(st.sampled_from(stream), max_size=6))
    restart_after = draw(st.integers(0, len(batches)))
    return runs, batches, resent, restart_after


@settings(
    max_examples=12,
    deadline=None,  # a fresh store per example on a shared machine
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(example=arrivals())
def test_stored_verdicts_equal_classify_over_the_merged_evidence(tmp_path_factory, stores, example):
    # A fresh store per example: a DuckDB file, or a database under --store postgresql.
    c = Collector(stores.new(tmp_path_factory.mktemp("diff") / "d.duckdb"), grace_seconds=GRACE)
    _check(c, example)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(example=arrivals())
def test_the_engine_in_its_worker_process_agrees_with_classify(tmp_path_factory, stores, example):
    # The collector's default (`--judge on`): every statement of the engine travels by
    # name to the collector's side and back (engine/worker.py), on a DuckDB file or, under
    # --store postgresql, on PostgreSQL; a restart starts a new worker.
    path = stores.new(tmp_path_factory.mktemp("diffw") / "d.duckdb")
    _check(Collector(path, worker=True, grace_seconds=GRACE), example)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(example=arrivals())
def test_the_engine_in_two_sharded_workers_agrees_with_classify(tmp_path_factory, stores, example):
    # `--judge-workers 2` (engine/shards.py): each batch split by run between two worker
    # processes judging side by side, their statements interleaved on one connection.
    path = stores.new(tmp_path_factory.mktemp("diffs") / "d.duckdb")
    _check(Collector(path, workers=2, grace_seconds=GRACE), example)


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(example=arrivals())
def test_an_engine_that_holds_almost_nothing_agrees_with_classify(
    tmp_path_factory, stores, example
):
    # Memory for two units (a run and its handoff): after each batch the engine lets go
    # of all but the batch's open runs — its finished ones first — and the next evidence
    # for any other run brings it back from the store (`_reload`), over and over (7 of
    # 10 examples reloaded runs, 1-7 each, when this test was written).
    path = stores.new(tmp_path_factory.mktemp("diffm") / "d.duckdb")
    c = Collector(path, grace_seconds=GRACE, max_hot_handoffs=2)
    _check(c, example)


def _check(c: Collector, example) -> None:
    runs, batches, resent, restart_after = example
    try:
        for i, batch in enumerate(batches):
            if i == restart_after:
                c.restart()
            c.send(*batch)
        if resent:
            c.send(*resent)  # duplicates: the same span ids again, in a batch of their own

        # The stored timeline is the one the verdicts package draws from the evidence.
        for d in runs:
            row = c.handoff(d.run_id, "h")
            stored = Timeline(*(row[k] for k in Timeline._fields))
            assert stored == handoff_timeline(d.evidence, GRACE), (d.run_id, d.evidence)
        # Now, and past the deadlines still ahead: the stored timeline flips as classify does.
        for now in (time.time_ns(), NOW0 + 700 * S):
            for d in runs:
                want = classify(d.evidence, now_ns=now, grace_seconds=GRACE)
                got = c.verdict(d.run_id, "h", now)
                assert got == want.verdict, (d.run_id, want, d.evidence)
                assert c.run_verdict(d.run_id, now) == expected_run_verdict(d, want.verdict), d
                # What the query API explains from the stored row (why, next step, the
                # six boundaries) is what the drawn evidence explains.
                merged = handoff_evidence(c.handoff(d.run_id, "h"))
                said = classify(merged, now_ns=now, grace_seconds=GRACE)
                assert (said.why, said.next_step, said.failed_boundary) == (
                    want.why,
                    want.next_step,
                    want.failed_boundary,
                ), d.run_id
                assert boundaries(merged, said) == boundaries(d.evidence, want), d.run_id
            brute = {tuple(r[:4]): r[4] for r in c.q(BRUTE_EDGES, {"now": now})}
            rolled = {tuple(r[:4]): r[4] for r in c.q(ROLLUP_EDGES, {"now": now})}
            assert rolled == brute
        assert c.q("SELECT count(*) FROM handoffs") == [(RUNS_PER_EXAMPLE,)]
    finally:
        c.close()
