"""Notification events, found in the derived tables at a given `now`.

`find_events(cur, now, ...)` reads the waits (`notify_waits.sql`: the waits and verdicts
the Approvals page lists) and the runs that loop or sit silent (`notify_runs.sql`: the
Live board's filter) and returns one `Event` per moment a person should hear about and
that the `notifications` table does not hold yet:

| event | when | key |
|---|---|---|
| `wait_checkpointed` | an undecided wait with all five facts (deadline ahead or passed) | (event, run, handoff) |
| `approval_overdue` | the wait's deadline passed, no decision | (event, run, handoff) |
| `wait_uncertain` | the wait lacks a fact | (event, run, handoff) |
| `run_looping` | the run's handoffs loop (any status) | (event, run) |
| `run_stuck` | in flight, silent for more than N × grace, no open wait | (event, run) |

Only fresh events are found (`max_age_seconds`, `--notify-max-age-seconds`): what
happened before the notifier could have seen it — backfilled history, a restart after an
outage — pages nobody; the dashboard still shows it.

An acknowledged target is not found while its acknowledgement is active (both queries
leave out what the `acknowledgements` table silences at `now`: a run's `run_stuck` or
`run_looping`, a wait's `approval_overdue` and `wait_uncertain`), so it is not recorded
either: when the acknowledgement expires or is cleared, an event still fresh is found and
sent then (docs/alerts.md, "Acknowledge and silence").

The key is what makes "sent once": the notifier remembers every key it has handled.
Which events a wait makes depends on its evidence only, never on when the notifier
happened to look: a wait already past its deadline when first seen still tells its
owner it exists (`wait_checkpointed`) and escalates (`approval_overdue`), in one post.
The body is content-free — ids, agent names, codes, deadlines, a link — and its shape
is `Event.body()`, documented in docs/alerts.md.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from handoffscope.instrumentation import semconv as sc

from ..store import statements
from ..timefmt import iso

NS = 1_000_000_000
WINDOW_S = 24 * 3600
"""Runs are considered while they saw evidence in this window (the /metrics window)."""
RUN_PAGE = "run_detail"
"""The dashboard's Run detail page; `?run_id=` selects the run (dashboard/layout.py)."""


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

    @functools.cached_property
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


def _wait_event(w: dict[str, Any], now: int, dashboard_url: str) -> Event:
    return Event(
        event=w["event"],
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
    cur: Any,
    now: int,
    *,
    grace_seconds: float,
    stuck_factor: float,
    dashboard_url: str,
    max_age_seconds: float = 0.0,
    limit: int = 1_000_000,
) -> list[Event]:
    """The events true at `now` and not yet recorded in `notifications`, oldest first,
    at most `limit` of waits and `limit` of runs (the rest come back next time).

    Only events that happened within `max_age_seconds` of `now` (0: any): when a loop was
    last seen, a run became stuck, a wait was checkpointed or its deadline passed. Older
    ones are history the notifier was not there for (a backfill, a restart after an
    outage) and would page people about runs that ended long ago."""
    fresh_since = now - int(max_age_seconds * NS) if max_age_seconds > 0 else 0
    waits = statements.dicts(
        cur,
        "notify/notify_waits",
        {
            "now": now,
            "waiting_verdict": sc.WAITING_ON_APPROVAL,
            "overdue_verdict": sc.APPROVAL_OVERDUE,
            "uncertain_verdict": sc.WAIT_UNCERTAIN,
            "checkpointed": sc.NOTIFY_WAIT_CHECKPOINTED,
            "overdue": sc.NOTIFY_APPROVAL_OVERDUE,
            "uncertain": sc.NOTIFY_WAIT_UNCERTAIN,
            "fresh_since": fresh_since,
            "limit": limit,
        },
    )
    events = [_wait_event(w, now, dashboard_url) for w in waits]
    stuck_ns = int(max(grace_seconds * stuck_factor, 0) * NS)
    runs = statements.dicts(
        cur,
        "notify/notify_runs",
        {
            "now": now,
            "since": now - max(WINDOW_S * NS, 2 * stuck_ns),
            "stuck_before": now - stuck_ns,
            "started": sc.RUN_STATUS_STARTED,
            "looping": sc.NOTIFY_RUN_LOOPING,
            "stuck": sc.NOTIFY_RUN_STUCK,
            "fresh_since": fresh_since,
            "stuck_fresh_since": fresh_since - stuck_ns if fresh_since else 0,
            "limit": limit,
        },
    )
    for r in runs:
        events.append(
            Event(
                event=r["event"],
                run_id=r["run_id"],
                handoff_id=None,
                service=r["service"],
                owner=None,
                verdict=r["verdict_now"],
                detected_ns=now,
                link=run_link(dashboard_url, r["run_id"]),
                agent=r["current_agent"],
                last_activity_ns=r["last_activity_ns"],
                loop_cycle=tuple(r["loop_cycle"]) if r["event"] == sc.NOTIFY_RUN_LOOPING else (),
            )
        )
    return events
