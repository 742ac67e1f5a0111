"""A board-sized scenario for the operator surfaces: where counts go wrong as problems age.

`seed_board(api)` sends, with the real OTLP/HTTP exporter (`dashboard_support.seed`), runs
that the Live board, Approvals, Runs and Run detail must count the same way:

- `STUCK_OLD` runs silent since long before the live window (started 100 min ago, last
  handoff 90 min ago, no end) and `STUCK_RECENT` silent for 10 minutes — all stuck;
- `LOOPING` runs in flight whose handoffs repeat the same work (stuck too: silent 70 min);
- `LOOPED_RECENT` runs that looped and ended at their turn limit minutes ago, and
  `LOOPED_OLD` that did so three hours ago (outside the live window): the board counts
  the first, not the second;
- `WAITS_HANDOFF` handoff-level and `WAITS_RUN` run-level waits (no `handoff.id`), more
  than 100 in all: overdue, uncertain (no owner) and pending, across `OWNERS`, some
  checkpointed two hours ago;
- `DONE_NO_PROOF` runs that completed without a verifier inside the window;
- one run with a conversation id (`CONVERSATION_ID`) whose spans share one trace
  (`SEARCH_TRACE_ID`), for the Runs search.

Every in-flight run is either silent for far longer than the grace window or held by a
wait with a deadline an hour away, so no figure flips while a test reads it (no timing in
the assertions). Each run's spans share one trace id, as a real app's would.
"""

from __future__ import annotations

import random
from typing import Any

from dashboard_support import MINUTE_NS, RunBuilder, seed
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from support import evidence as ev

from handoffscope.instrumentation import semconv as sc

BOARD = "board-app"
OWNERS = ("ops-oncall", "finance-lead", "legal", "sre-pager")
STUCK_OLD = 18
STUCK_RECENT = 4
LOOPING = 3
LOOPED_RECENT = 4
LOOPED_OLD = 2
WAITS_HANDOFF = 64
WAITS_RUN = 48
DONE_NO_PROOF = 5
CONVERSATION_ID = "thread-4242"
SEARCH_RUN = "board-thread-run"
SEARCH_TRACE_ID = "4242abcd" * 4
LOOP_RUN = "board-loop-0"
RUNNING_RUN = "board-wait-h-0"

# Of the waits: every 4th overdue (deadline passed), every 4th+1 uncertain (no owner),
# the rest pending with an hour to go.
OVERDUE, UNCERTAIN, PENDING = "overdue", "uncertain", "pending"


def wait_kind(i: int) -> str:
    return (OVERDUE, UNCERTAIN, PENDING, PENDING)[i % 4]


def expected() -> dict[str, int]:
    """What the scenario holds, counted from its own rules (not read back)."""
    kinds = [wait_kind(i) for i in range(WAITS_HANDOFF)] + [wait_kind(i) for i in range(WAITS_RUN)]
    return {
        "stuck": STUCK_OLD + STUCK_RECENT + LOOPING,
        "stuck_old": STUCK_OLD,
        "looping": LOOPING + LOOPED_RECENT,
        "looping_in_flight": LOOPING,
        "looped_old": LOOPED_OLD,
        "waits": WAITS_HANDOFF + WAITS_RUN,
        "waits_run_level": WAITS_RUN,
        OVERDUE: kinds.count(OVERDUE),
        UNCERTAIN: kinds.count(UNCERTAIN),
        PENDING: kinds.count(PENDING),
        "false_complete": DONE_NO_PROOF,
    }


class TracedRun(RunBuilder):
    """A RunBuilder whose spans share one trace id (children of a remote parent)."""

    def __init__(self, tracer: Any, run_id: str, start_ns: int, trace_id: int) -> None:
        super().__init__(tracer, run_id, start_ns)
        parent = SpanContext(
            trace_id=trace_id,
            span_id=trace_id & 0xFFFFFFFFFFFFFFFF or 1,
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        self.context = trace.set_span_in_context(NonRecordingSpan(parent))

    def span(self, name: str, at_ns: int, attrs: dict[str, Any]) -> None:
        s = self.tracer.start_span(
            name,
            context=self.context,
            start_time=at_ns,
            attributes={sc.RUN_ID: self.run_id, **attrs},
        )
        s.end(end_time=at_ns + 2_000_000)

    def started_in(self, conversation: str | None = None) -> TracedRun:
        attrs = ev.run_status(sc.RUN_STATUS_STARTED)
        if conversation:
            attrs[sc.GEN_AI_CONVERSATION_ID] = conversation
        self.span(sc.SPAN_RUN, self.start_ns, attrs)
        return self

    def run_wait(self, *, minute: float, owner: str | None, deadline_ns: int) -> TracedRun:
        """A wait on the run itself: no handoff.id."""
        attrs = ev.wait(
            owner=owner,
            reason="budget_review",
            resume_token=f"resume-{self.run_id}",
            deadline=deadline_ns,
        )
        self.span(sc.SPAN_WAIT, self.start_ns + int(minute * MINUTE_NS), attrs)
        return self


def build_board(tracers: dict[str, Any], now_ns: int) -> None:
    tracer = tracers[BOARD]
    rng = random.Random(11)

    def run(run_id: str, minutes_ago: float, trace_id: int | None = None) -> TracedRun:
        return TracedRun(
            tracer, run_id, now_ns - int(minutes_ago * MINUTE_NS), trace_id or rng.getrandbits(128)
        )

    for i in range(STUCK_OLD):  # silent 90 min: older than the live window
        run(f"board-stuck-old-{i}", 100).started_in().handoff("triage", "billing", minute=10)
    for i in range(STUCK_RECENT):  # silent 10 min
        run(f"board-stuck-new-{i}", 12).started_in().handoff("triage", "refunds", minute=2)
    for i in range(LOOPING):  # same work bounced around, then silence
        loop = run(f"board-loop-{i}", 80).started_in()
        for j, (frm, to) in enumerate(
            (("triage", "billing"), ("billing", "triage"), ("triage", "billing"))
        ):
            loop.handoff(frm, to, minute=5 + j)
        loop.turns = 9
    # Loops that ended at their limit: minutes ago (in the window), hours ago (not).
    for name, count, minutes_ago in (("recent", LOOPED_RECENT, 12), ("old", LOOPED_OLD, 180)):
        for i in range(count):
            ended = run(f"board-looped-{name}-{i}", minutes_ago).started_in()
            for j, (frm, to) in enumerate(
                (("triage", "billing"), ("billing", "triage"), ("triage", "billing"))
            ):
                ended.handoff(frm, to, minute=1 + j)
            ended.ended(minute=4, status=sc.RUN_STATUS_MAX_TURNS)
    for i in range(WAITS_HANDOFF):
        kind = wait_kind(i)
        w = run(f"board-wait-h-{i}", 120 if i % 3 == 0 else 20).started_in()
        w.handoff("billing", "approver", minute=1)
        w.wait(
            minute=1.5,
            owner=None if kind == UNCERTAIN else OWNERS[i % len(OWNERS)],
            deadline_in_minutes=-30 if kind == OVERDUE else 60,
        )
    for i in range(WAITS_RUN):
        kind = wait_kind(i)
        w = run(f"board-wait-r-{i}", 120 if i % 3 == 0 else 20).started_in()
        w.handoff("billing", "approver", minute=1)
        w.run_wait(
            minute=1.5,
            owner=None if kind == UNCERTAIN else OWNERS[(i + 1) % len(OWNERS)],
            deadline_ns=now_ns + (-30 if kind == OVERDUE else 60) * MINUTE_NS,
        )
    for i in range(DONE_NO_PROOF):
        done = run(f"board-done-{i}", 30).started_in().handoff("triage", "billing", minute=1)
        done.ended(minute=2, status=sc.RUN_STATUS_COMPLETED)
    # Found by its thread id or its trace id; it ended, verified.
    found = run(SEARCH_RUN, 40, trace_id=int(SEARCH_TRACE_ID, 16)).started_in(CONVERSATION_ID)
    found.handoff("triage", "billing", minute=1).outcome(minute=2, result=sc.OUTCOME_PASS)
    found.ended(minute=3, status=sc.RUN_STATUS_COMPLETED)


def seed_board(api: str) -> int:
    """Send the scenario to the collector at `api`; returns the span count."""
    return seed(api, build=build_board, services=(BOARD,))
