"""The notifier: finds events in the derived tables and hands them to the senders.

A background thread, beside the writer and never inside its transaction: every
`--notify-poll-seconds` it opens a reader cursor, finds the events true now
(`events.find_events`), drops those it has handled before, routes the rest
(`routing.py`), records one `notifications` row per (event, destination) and queues
each to that destination's `Sender`. Senders report outcomes back; the notifier writes
them on its next turn. It is the only writer of the `notifications` table, so it never
conflicts with the writer thread, which never touches that table.

Sent once: the queries anti-join `notifications`, so an event recorded once — on an
earlier poll or before a restart — does not come back (an event no route matches is
recorded as `unrouted` for the same reason); the keys are also kept in memory, for
events found twice in one poll. A row still
`pending` at start (the collector stopped before the destination answered) is queued
again with its stored payload. Delivery is at least once: a post that reached the
receiver but whose answer was lost is retried (`X-Handoffscope-Delivery` lets the
receiver drop it), and a post answered just before the collector died, before its `sent`
mark was written on the next turn, is sent again by whoever takes over. Each event's
`key` is the same every time, so a receiver that drops handled keys gets it once
(docs/alerts.md).

One sender per store: collectors sharing a PostgreSQL database each run a notifier, but
only the holder of the notify lease (`Store.lease`, a session advisory lock) polls and
sends; the others wait, and one of them takes over within a poll when the holder dies,
resending what it left pending (as a restart does). On a DuckDB file the one collector
always holds it.

Metrics (`render`, on /metrics): `handoffscope_notifications_total{destination,event,status}`
(events recorded, sent, given up), `handoffscope_notification_posts_total{destination,answer}`
and the gauge `handoffscope_notifications_pending{destination}`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from typing import Any, NamedTuple

import pyarrow as pa

from ..store import statements
from .delivery import PENDING, Queued, Result, Sender
from .events import Event, find_events
from .routing import Routing

log = logging.getLogger(__name__)

UNROUTED = "unrouted"
UNROUTED_DESTINATION = ""
"""The row of an event no route matched: remembered, never sent."""
NS = 1_000_000_000
EXPIRE_EVERY_S = 3600
EVENTS_PER_POLL = 1000
"""At most this many new wait events and this many run events per poll."""
BUSY_IDLE_FACTOR = 4.0
"""After a full poll (a backlog), idle this many times as long as it took before the
next: a flood of events is worked off at no more than a fifth of a core, so ingest,
which shares the process, keeps the rest."""
LEASE_NAME = "handoffscope.notify"
FAMILIES = (
    "handoffscope_notify_lease_held",
    "handoffscope_notifications_total",
    "handoffscope_notification_posts_total",
    "handoffscope_notifications_pending",
)


class NotificationRow(NamedTuple):
    """One row of `notifications` (store/sql/ddl/0007_notifications.sql), in DDL order."""

    event_key: str
    destination: str
    event: str
    run_id: str
    handoff_id: str | None
    service: str | None
    owner: str | None
    created_ns: int
    status: str
    attempts: int
    sent_ns: int | None
    payload: str


NOTIFICATION_SCHEMA = pa.schema(
    [
        ("event_key", pa.string()),
        ("destination", pa.string()),
        ("event", pa.string()),
        ("run_id", pa.string()),
        ("handoff_id", pa.string()),
        ("service", pa.string()),
        ("owner", pa.string()),
        ("created_ns", pa.int64()),
        ("status", pa.string()),
        ("attempts", pa.int32()),
        ("sent_ns", pa.int64()),
        ("payload", pa.string()),
    ]
)
assert tuple(NOTIFICATION_SCHEMA.names) == NotificationRow._fields


def _table(rows: list[NotificationRow]) -> pa.Table:
    columns: list = list(zip(*rows, strict=True)) if rows else [[] for _ in NotificationRow._fields]
    return pa.Table.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(columns, NOTIFICATION_SCHEMA, strict=True)],
        schema=NOTIFICATION_SCHEMA,
    )


class Notifier:
    def __init__(
        self,
        store: Any,
        routing: Routing,
        *,
        grace_seconds: float,
        stuck_factor: float,
        dashboard_url: str,
        poll_seconds: float,
        retention_days: float,
        max_age_seconds: float = 0.0,
    ) -> None:
        self.store = store
        self.max_age_seconds = max_age_seconds
        self.routing = routing
        self.grace_seconds = grace_seconds
        self.stuck_factor = stuck_factor
        self.dashboard_url = dashboard_url
        self.poll_seconds = poll_seconds
        self.retention_days = retention_days
        self._results: list[Result] = []
        self._results_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="notifier", daemon=True)
        self._handled: set[str] = set()
        """Event keys already routed (recorded, or matched no destination)."""
        self._senders = {
            name: Sender(d, self._on_result) for name, d in routing.destinations.items()
        }
        self._counts: Counter = Counter()
        self._posts: Counter = Counter()
        self._event_of: dict[str, str] = {}
        self._stats_lock = threading.Lock()
        self._last_expiry = 0.0
        self.lease = store.lease(LEASE_NAME)
        self._resumed = False
        """Whether the pending rows were queued since this process took the lease."""
        self.polls = 0
        """Completed polls (tests wait on it instead of sleeping)."""

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        if self.lease.hold():
            self._resume()
        for sender in self._senders.values():
            sender.start()
        self._thread.start()

    def _resume(self) -> None:
        """On taking the lease: what was handled before, and the pending rows queued again."""
        cur = self.store.cursor()
        try:
            rows = statements.rows(cur, "notify/known_notifications")
        finally:
            cur.close()
        reloaded = 0
        for key, destination, status, attempts, payload in rows:
            self._handled.add(key)
            sender = self._senders.get(destination)
            if status == PENDING and sender is not None:
                event = json.loads(payload)
                self._event_of[key] = event["event"]
                sender.put(Queued(key, event, attempts))
                reloaded += 1
        self._resumed = True
        log.info(
            "notifier: %d destinations, %d known notifications, %d pending resent",
            len(self._senders),
            len(rows),
            reloaded,
        )

    def close(self) -> None:
        """Stop polling and sending; record the outcomes already known."""
        self._stop.set()
        self._thread.join(30)
        for sender in self._senders.values():
            sender.close()
        self._apply_results()
        self.lease.release()

    # --- the thread --------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            full = False
            try:
                if not self.lease.hold():
                    # Another collector sends; when it stops, this one resumes from the
                    # table (its own memory of handled events may be stale by then).
                    self._resumed = False
                    self._stop.wait(self.poll_seconds)
                    continue
                if not self._resumed:
                    self._handled.clear()
                    self._resume()
                full = self.poll(time.time_ns())
            except Exception:
                # A failed poll (the store closing, a transient conflict) is retried on
                # the next turn; ingest is not affected either way.
                log.warning("notifier: poll failed", exc_info=True)
            took = time.monotonic() - t0
            self._stop.wait(
                min(self.poll_seconds, max(BUSY_IDLE_FACTOR * took, 0.05))
                if full
                else self.poll_seconds
            )

    def poll(self, now: int) -> bool:
        """One turn; True when it found a full batch (more may be waiting)."""
        self._apply_results()
        cur = self.store.cursor()
        try:
            events = find_events(
                cur,
                now,
                grace_seconds=self.grace_seconds,
                stuck_factor=self.stuck_factor,
                dashboard_url=self.dashboard_url,
                max_age_seconds=self.max_age_seconds,
                limit=EVENTS_PER_POLL,
            )
            # One per key: two run-level waits of one run (no handoff id) share a key.
            fresh = {e.key: e for e in events if e.key not in self._handled}
            self._record(cur, list(fresh.values()), now)
            if time.monotonic() - self._last_expiry >= EXPIRE_EVERY_S and self.retention_days:
                cutoff = now - int(self.retention_days * 86400 * NS)
                statements.run(cur, "notify/expire_notifications", {"cutoff": cutoff})
                self._last_expiry = time.monotonic()
        finally:
            cur.close()
        self.polls += 1
        return len(events) >= EVENTS_PER_POLL

    def _record(self, cur: Any, events: list[Event], now: int) -> None:
        rows: list[NotificationRow] = []
        queued: list[tuple[Sender, Queued]] = []
        for e in events:
            targets = self.routing.destinations_for(e.event, e.owner, e.service)
            body = e.body()
            payload = json.dumps(body, separators=(",", ":"))
            if not targets:
                # Recorded too, so the next poll's anti-join skips it (no route matched;
                # the API leaves these rows out).
                rows.append(
                    NotificationRow(
                        e.key, UNROUTED_DESTINATION, e.event, e.run_id, e.handoff_id,
                        e.service, e.owner, now, UNROUTED, 0, None, payload,
                    )
                )  # fmt: skip
            for name in targets:
                rows.append(
                    NotificationRow(
                        e.key, name, e.event, e.run_id, e.handoff_id, e.service, e.owner,
                        now, PENDING, 0, None, payload,
                    )
                )  # fmt: skip
                queued.append((self._senders[name], Queued(e.key, body)))
        if rows:
            # Recorded before queued: a delivery is never attempted without its row, so a
            # restart cannot forget an event it may have sent. If the insert fails, the
            # events stay unhandled and the next poll tries again.
            with statements.registered(cur, {"new_notifications": _table(rows)}):
                statements.run(cur, "notify/insert_notifications")
        for e in events:
            self._handled.add(e.key)
            self._event_of[e.key] = e.event
        with self._stats_lock:
            for r in rows:
                if r.status == PENDING:
                    self._counts[(r.destination, r.event, PENDING)] += 1
        for sender, item in queued:
            sender.put(item)

    def _on_result(self, result: Result) -> None:
        with self._results_lock:
            self._results.append(result)
        with self._stats_lock:
            self._posts[(result.destination, result.answer)] += 1
            if result.status != PENDING:
                for key in result.keys:
                    event = self._event_of.get(key, "unknown")
                    self._counts[(result.destination, event, result.status)] += 1

    def _apply_results(self) -> None:
        with self._results_lock:
            results, self._results = self._results, []
        if not results:
            return
        cur = self.store.cursor()
        done = 0
        try:
            for r in results:
                statements.run(
                    cur,
                    "notify/mark_notifications",
                    {
                        "status": r.status,
                        "attempts": r.attempts,
                        "sent_ns": r.sent_ns,
                        "destination": r.destination,
                        "keys": list(r.keys),
                    },
                )
                done += 1
        finally:
            cur.close()
            if done < len(results):  # failed midway: keep the rest for the next turn
                with self._results_lock:
                    self._results[:0] = results[done:]

    # --- metrics ---------------------------------------------------------------------

    def render(self, scope: Any = None) -> list[str]:
        """The notifier's families (`/metrics`): by destination and event, no service, so
        every reader sees the same (`scope` is not needed)."""
        with self._stats_lock:
            counts = sorted(self._counts.items())
            posts = sorted(self._posts.items())
        out = [
            "# HELP handoffscope_notifications_total Notification events per destination: "
            "recorded (pending), sent, or given up (failed).",
            "# TYPE handoffscope_notifications_total counter",
        ]
        out += [
            f'handoffscope_notifications_total{{destination="{d}",event="{e}",status="{s}"}} {n}'
            for (d, e, s), n in counts
        ]
        out += [
            "# HELP handoffscope_notification_posts_total Webhook posts per destination, by answer "
            "(HTTP status, timeout, unreachable).",
            "# TYPE handoffscope_notification_posts_total counter",
        ]
        out += [
            f'handoffscope_notification_posts_total{{destination="{d}",answer="{a}"}} {n}'
            for (d, a), n in posts
        ]
        out += [
            "# HELP handoffscope_notifications_pending Events waiting for their destination.",
            "# TYPE handoffscope_notifications_pending gauge",
        ]
        out += [
            f'handoffscope_notifications_pending{{destination="{name}"}} {s.pending}'
            for name, s in sorted(self._senders.items())
        ]
        out += [
            "# HELP handoffscope_notify_lease_held 1 if this collector is the one sending "
            "notifications for its store (collectors sharing PostgreSQL take turns).",
            "# TYPE handoffscope_notify_lease_held gauge",
            f"handoffscope_notify_lease_held {int(self.lease.held)}",
        ]
        return out
