"""The operator scenarios at the sizes that break pages: a thousand open waits, hundreds of
runs, loops that ended minutes ago beside loops that ended hours ago.

`seed_operator(api, waits=…)` sends, in one export of the real OTLP/HTTP exporter
(`dashboard_support.seed`), with every run's spans built from a rule, not read back:

- `waits` runs (`op-wait-NNNN`), each held by one handoff-level wait: every 4th overdue
  (its deadline passed 30 minutes ago), every 4th+1 without an owner (uncertain), the
  rest pending with an hour to go; the owned ones spread over `OWNERS` four by four, so
  every owner has overdue and pending waits. Wait i started a second after wait i-1
  (20 to 37 minutes ago), so newest first lists them from the highest number down;
- `LOOPED_RECENT` runs that bounced triage → billing → triage → billing and ended at
  their turn limit 12 minutes ago (`op-looped-recent-N`), and `LOOPED_OLD` that did so
  three hours ago (`op-looped-old-N`), outside the live window.

Every run is either ended or held by a wait, so no figure a test reads flips while it
reads it (no timing in the assertions). 1,000 waits are 5,000 spans: built in a second,
judged by the collector in a few more.
"""

from __future__ import annotations

import functools
from typing import Any

from dashboard_support import MINUTE_NS, RunBuilder, seed

from handoffscope.instrumentation import semconv as sc

SERVICE = "operator-app"
OWNERS = ("ops-oncall", "finance-lead", "legal", "sre-pager", "billing-lead", "risk")
LOOPED_RECENT = 3
LOOPED_OLD = 2
SECOND_NS = 1_000_000_000

OVERDUE, UNCERTAIN, PENDING = "overdue", "uncertain", "pending"


def wait_kind(i: int) -> str:
    return (OVERDUE, UNCERTAIN, PENDING, PENDING)[i % 4]


def wait_owner(i: int) -> str | None:
    # By fours, so each owner gets overdue and pending waits alike.
    return None if wait_kind(i) == UNCERTAIN else OWNERS[(i // 4) % len(OWNERS)]


def wait_run(i: int) -> str:
    return f"op-wait-{i:04d}"


def expected(waits: int) -> dict[str, Any]:
    """What the scenario holds, counted from its own rules."""
    kinds = [wait_kind(i) for i in range(waits)]
    per_owner: dict[str | None, int] = {}
    for i in range(waits):
        per_owner[wait_owner(i)] = per_owner.get(wait_owner(i), 0) + 1
    return {
        "waits": waits,
        OVERDUE: kinds.count(OVERDUE),
        UNCERTAIN: kinds.count(UNCERTAIN),
        PENDING: kinds.count(PENDING),
        "per_owner": per_owner,
        "runs": waits + LOOPED_RECENT + LOOPED_OLD,
        "looped_recent": {f"op-looped-recent-{i}" for i in range(LOOPED_RECENT)},
        "looped_old": {f"op-looped-old-{i}" for i in range(LOOPED_OLD)},
    }


def build_operator(tracers: dict[str, Any], now_ns: int, *, waits: int) -> None:
    tracer = tracers[SERVICE]
    # Oldest first: wait i started (waits - i) seconds plus 20 minutes ago, so the newest
    # run is the highest number and "newest first" lists them in reverse order.
    for i in range(waits):
        start = now_ns - 20 * MINUTE_NS - (waits - i) * SECOND_NS
        run = RunBuilder(tracer, wait_run(i), start).started()
        run.handoff("billing", "approver", minute=0.1)
        run.wait(
            minute=0.2,
            owner=wait_owner(i),
            deadline_in_minutes=-30 if wait_kind(i) == OVERDUE else 60,
        )
    for name, count, minutes_ago in (("recent", LOOPED_RECENT, 16), ("old", LOOPED_OLD, 184)):
        for i in range(count):
            loop = RunBuilder(tracer, f"op-looped-{name}-{i}", now_ns - minutes_ago * MINUTE_NS)
            loop.started()
            for j, (frm, to) in enumerate(
                (("triage", "billing"), ("billing", "triage"), ("triage", "billing"))
            ):
                loop.handoff(frm, to, minute=1 + j)
            loop.turns = 12
            loop.ended(minute=4, status=sc.RUN_STATUS_MAX_TURNS)


def seed_operator(api: str, *, waits: int) -> int:
    """Send the scenario with `waits` open waits to the collector at `api`; the span count."""
    return seed(api, build=functools.partial(build_operator, waits=waits), services=(SERVICE,))
