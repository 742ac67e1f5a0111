"""Notification events, found in the derived tables at a given `now`.

`find_events(cur, now, ...)` reads the waits table (`approvals.sql`, the query the
Approvals page reads) and the runs that loop or sit silent (`notify_runs.sql`) and
returns one `Event` per moment a person should hear about:

| event | when | key |
|---|---|---|
| `wait_checkpointed` | an undecided wait with all five facts (deadline ahead or passed) | (event, run, handoff) |
| `approval_overdue` | the wait's deadline passed, no decision | (event, run, handoff) |
| `wait_uncertain` | the wait lacks a fact | (event, run, handoff) |
| `run_looping` | the run's handoffs loop (any status) | (event, run) |
| `run_stuck` | in flight, silent for more than N × grace, no open wait | (event, run) |

The key is what makes "sent once": the notifier remembers every key it has handled.
Which events a wait makes depends on its evidence only, never on when the notifier
happened to look: a wait already past its deadline when first seen still tells its
owner it exists (`wait_checkpointed`) and escalates (`approval_overdue`), in one post.
The body is content-free — ids, agent names, codes, deadlines, a link — and its shape
is `Event.body()`, documented in docs/alerts.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from handoffscope.instrumentation import semconv as sc

from ..api import iso
from ..store.duckdb_store import SQL_DIR, load_sql

QUERY_SQL = SQL_DIR / "query"
NOTIFY_SQL = SQL_DIR / "notify"
NS = 1_000_000_000
WINDOW_S = 24 * 3600
"""Runs are considered while they saw evidence in this window (the /metrics window)."""
MAX_WAITS = 1_000_000
"""approvals.sql's limit when the notifier reads it (the waits table holds open waits only)."""
RUN_PAGE = "run_detail"
"""The dashboard's Run detail page; `?run_id=` selects the run (dashboard/layout.py)."""

WAIT_EVENTS = {
    sc.WAITING_ON_APPROVAL: (sc.NOTIFY_WAIT_CHECKPOINTED,),
    sc.APPROVAL_OVERDUE: (sc.NOTIFY_WAIT_CHECKPOINTED, sc.NOTIFY_APPROVAL_OVERDUE),
    sc.WAIT_UNCERTAIN: (sc.NOTIFY_WAIT_UNCERTAIN,),
}
"""The events of a wait by its verdict now (checkpointed only while undecided)."""


def event_key(event: str, run_id: str, handoff_id: str | None = None) -> str:
    """A stable, unambiguous key (ids may hold any character, so no separator is safe)."""
    return json.dumps([event, run_id, handoff_id], separators=(",", ":"))


def run_link(dashboard_url: str, run_id: str) -> str | None:
    if not dashboard_url:
        return None
    return f"{dashboard_url.rstrip('/')}/{RUN_PAGE}?run_id={quote(run_id, safe='')}"


@dataclass(frozen=True)
class Event:
    event: str
    run_id: str
    handoff_id: str | None
    service: str | None
    owner: str | None
    verdict: str | None
    detected_ns: int
    link: str | None
    reason: str | None = None
    deadline_ns: int | None = None
    checkpointed_ns: int | None = None
    missing: tuple[str, ...] = ()
    from_agent: str | None = None
    to_agent: str | None = None
    agent: str | None = None
    loop_cycle: tuple[str, ...] = ()
    last_activity_ns: int | None = None

    @property
    def key(self) -> str:
        return event_key(self.event, self.run_id, self.handoff_id)

    def body(self) -> dict[str, Any]:
        """The event as posted (docs/alerts.md, "Event"); every key always present."""
        return {
            "key": self.key,
            "event": self.event,
            "run_id": self.run_id,
            "handoff_id": self.handoff_id,
            "service": self.service,
            "owner": self.owner,
            "reason": self.reason,
            "deadline": iso(self.deadline_ns),
            "checkpointed_at": iso(self.checkpointed_ns),
            "missing": list(self.missing),
            "from_agent": self.from_agent,
            "to_agent": self.to_agent,
            "agent": self.agent,
            "loop_cycle": list(self.loop_cycle),
            "last_activity_at": iso(self.last_activity_ns),
            "verdict": self.verdict,
            "next_step": sc.NEXT_STEPS.get(self.verdict) if self.verdict else None,
            "detected_at": iso(self.detected_ns),
            "link": self.link,
        }


def _rows(cur: Any, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    cur.execute(sql, params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _wait_event(kind: str, w: dict[str, Any], now: int, dashboard_url: str) -> Event:
    return Event(
        event=kind,
        run_id=w["run_id"],
        handoff_id=w["handoff_id"],
        service=w["service"],
        owner=w["owner"],
        verdict=w["verdict_now"],
        detected_ns=now,
        link=run_link(dashboard_url, w["run_id"]),
        reason=w["reason"],
        deadline_ns=w["deadline_ns"],
        checkpointed_ns=w["checkpointed_ns"],
        missing=tuple(w["missing"]),
        from_agent=w["from_agent"],
        to_agent=w["to_agent"],
    )


def find_events(
    cur: Any, now: int, *, grace_seconds: float, stuck_factor: float, dashboard_url: str
) -> list[Event]:
    """Every event true at `now` (already-sent ones included: the notifier filters)."""
    events = []
    waits = _rows(
        cur,
        load_sql("approvals", QUERY_SQL),
        {
            "now": now,
            "service": None,
            "limit": MAX_WAITS,
            "overdue": sc.APPROVAL_OVERDUE,
            "uncertain": sc.WAIT_UNCERTAIN,
        },
    )
    for w in waits:
        for kind in WAIT_EVENTS.get(w["verdict_now"], ()):
            if kind == sc.NOTIFY_WAIT_CHECKPOINTED and w["decision"] is not None:
                continue  # an expired wait: only the escalation
            events.append(_wait_event(kind, w, now, dashboard_url))
    stuck_ns = int(max(grace_seconds * stuck_factor, 0) * NS)
    runs = _rows(
        cur,
        load_sql("notify_runs", NOTIFY_SQL),
        {
            "now": now,
            "since": now - max(WINDOW_S * NS, 2 * stuck_ns),
            "stuck_before": now - stuck_ns,
            "started": sc.RUN_STATUS_STARTED,
        },
    )
    for r in runs:
        common = {
            "run_id": r["run_id"],
            "handoff_id": None,
            "service": r["service"],
            "owner": None,
            "verdict": r["verdict_now"],
            "detected_ns": now,
            "link": run_link(dashboard_url, r["run_id"]),
            "agent": r["current_agent"],
            "last_activity_ns": r["last_activity_ns"],
        }
        if r["loop"]:
            events.append(
                Event(event=sc.NOTIFY_RUN_LOOPING, loop_cycle=tuple(r["loop_cycle"]), **common)
            )
        in_flight = r["status"] is None or r["status"] == sc.RUN_STATUS_STARTED
        if in_flight and r["last_activity_ns"] < now - stuck_ns and not r["pending_approvals"]:
            events.append(Event(event=sc.NOTIFY_RUN_STUCK, **common))
    return events
