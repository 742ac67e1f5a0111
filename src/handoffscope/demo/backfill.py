"""Several weeks of believable history, so the weekly review has trends on first open.

Spans go through the real path (recorder → OTLP exporter → collector) with start times
in the past. Rejections fall week over week (a team fixing its contracts), with one edge
(triage → refunds) worse than the rest, so the review has something to point at.

Every leg reports usage the way a shim does (docs/semconv.md, "Usage"): the agent holding
control makes a few model calls under `desk.DEMO_MODEL` (priced by the collector's
table), summed onto the span that ends its leg — its `handoff.request`, or the closing
`handoff.run` for the agent that finished the run — so the review's "What failures cost"
has history too, not only the live weeks. Everything random comes from the caller's
`rng`: one seed, one history.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from handoffscope.instrumentation import HandoffRecorder, fingerprint
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.recorder import LegUsage

from .desk import DEMO_MODEL

EDGES = [
    ("triage", "billing"),
    ("triage", "refunds"),
    ("billing", "refunds"),
    ("refunds", "escalation"),
    ("triage", "escalation"),
]
DAY_NS = 86_400 * 10**9
CALLS_PER_LEG = (1, 3)
TOKENS_IN = (600, 2400)
TOKENS_OUT = (40, 260)
"""Per model call, as the live desk's scripted model reports (openai_scenarios._model)."""


def backfill(
    recorder: HandoffRecorder,
    *,
    weeks: int,
    runs_per_week: int,
    rng: random.Random,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Emit `weeks` × `runs_per_week` finished runs; returns the number of runs."""
    now = time.time_ns()
    total = weeks * runs_per_week
    done = 0
    for w in range(weeks, 0, -1):
        # rejection probability falls from ~16 % to ~5 % over the weeks
        base_reject = 0.05 + 0.11 * (w - 1) / max(weeks - 1, 1)
        for i in range(runs_per_week):
            start = now - w * 7 * DAY_NS + rng.randrange(0, 7 * DAY_NS - 3600 * 10**9)
            _one_run(recorder, f"hist-w{w}-{i}", start, base_reject, rng)
            done += 1
            if progress and done % 50 == 0:
                progress(done, total)
    if progress:
        progress(done, total)
    return done


def _leg(rng: random.Random) -> dict[str, object]:
    """One agent's work while it holds control: its usage attributes, summed by `LegUsage`
    as the recorder sums `record_usage` calls (so the names and shapes are the shim's)."""
    leg = LegUsage()
    for _ in range(rng.randint(*CALLS_PER_LEG)):
        leg.add(rng.randint(*TOKENS_IN), rng.randint(*TOKENS_OUT), model=DEMO_MODEL)
    return leg.evidence()


def _one_run(
    rec: HandoffRecorder, run_id: str, t: int, reject_p: float, rng: random.Random
) -> None:
    step = 2 * 10**9
    rec.emit(
        sc.SPAN_RUN,
        {
            sc.RUN_ID: run_id,
            sc.RUN_STATUS: sc.RUN_STATUS_STARTED,
            sc.RUN_STARTED: t,
            sc.GEN_AI_AGENT_NAME: "triage",
        },
        start_time_ns=t,
    )
    holder = "triage"
    hops = rng.choice((1, 1, 2, 2, 3))
    status = sc.RUN_STATUS_COMPLETED
    for n in range(1, hops + 1):
        options = [e for e in EDGES if e[0] == holder] or [(holder, "escalation")]
        src, dst = rng.choice(options)
        hid = f"h{n}"
        t += step
        p = reject_p * (1.8 if (src, dst) == ("triage", "refunds") else 1.0)
        fate = rng.random()
        route_ok = fate >= p * 0.35
        attrs = {
            sc.RUN_ID: run_id,
            sc.HANDOFF_ID: hid,
            sc.FROM_AGENT: src,
            sc.TO_AGENT: dst,
            sc.TURN: n,
            sc.FINGERPRINT: fingerprint(run_id, n, key=b"demo-history"),
            sc.STATE_VERSION: n,
            sc.HISTORY_ITEMS_FORWARDED: rng.randint(2, 6),
            sc.HISTORY_ITEMS_TOTAL: rng.randint(6, 20),
            sc.ROUTE_DECLARED: route_ok,
            sc.TOOL_CALL_ID: f"call_{run_id[-6:]}_{n}",
            sc.ROUTE_GOTO: dst,
            sc.CONTROL_BEFORE: src,
            sc.CONTROL_AFTER: dst,
            sc.TOOL_CALL_CLOSED: True,
            **_leg(rng),  # the request ends the sender's leg: its work rides on it
        }
        rec.emit(sc.SPAN_REQUEST, attrs, start_time_ns=t)
        if not route_ok:
            status = sc.RUN_STATUS_FAILED
            break
        t += step
        if fate < p:
            reason = rng.choice(
                (
                    sc.REJECTION_STALE,
                    sc.REJECTION_STALE,
                    sc.REJECTION_INVALID,
                    sc.REJECTION_UNAUTHORIZED,
                    sc.REJECTION_NO_BUDGET,
                    sc.REJECTION_VAGUE_GOAL,
                )
            )
            rec.emit(
                sc.SPAN_ACCEPT,
                {
                    sc.RUN_ID: run_id,
                    sc.HANDOFF_ID: hid,
                    sc.REJECTION_REASON: reason,
                    sc.VERDICT: sc.CONTRACT_REJECTED,
                    sc.GEN_AI_AGENT_NAME: dst,
                },
                start_time_ns=t,
            )
            status = sc.RUN_STATUS_FAILED
            break
        rec.emit(
            sc.SPAN_ACCEPT,
            {
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: hid,
                sc.DESTINATION_STARTED: True,
                sc.VERDICT: sc.HEALTHY,
                sc.GEN_AI_AGENT_NAME: dst,
            },
            start_time_ns=t,
        )
        holder = dst
    t += step
    if status == sc.RUN_STATUS_COMPLETED:
        passed = rng.random() > 0.04  # a few false completions in history too
        rec.emit(
            sc.SPAN_OUTCOME,
            {
                sc.RUN_ID: run_id,
                sc.OUTCOME_VERIFIER: "ticket_resolved",
                sc.OUTCOME_RESULT: sc.OUTCOME_PASS if passed else sc.OUTCOME_FAIL,
                sc.OUTCOME_RECEIPT_ID: f"rcpt-{run_id}",
            },
            start_time_ns=t,
        )
    closing = {
        sc.RUN_ID: run_id,
        sc.RUN_STATUS: status,
        sc.RUN_FINAL_AGENT: holder,
        sc.RUN_TURNS: hops * 2 + 1,
    }
    if status == sc.RUN_STATUS_COMPLETED:
        # The last leg: the final agent did the work. A failed run stops at the handoff
        # that failed, whose request already ended the sender's leg; nobody called a model
        # after it, and a leg with no call carries no usage (absent, not 0).
        closing.update(_leg(rng))
    rec.emit(sc.SPAN_RUN, closing, start_time_ns=t)
