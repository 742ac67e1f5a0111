"""What the collector's notifier sent, in words: "owner notified 14:02, overdue escalation 15:02".

The query API lists notifications (`notifications` on a run and on each approval,
docs/api.md) one per event and destination; a reader wants one phrase per event with
the time it first reached someone, and to see when it did not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from handoffscope.instrumentation import semconv as sc

PHRASES = {
    sc.NOTIFY_WAIT_CHECKPOINTED: "owner notified",
    sc.NOTIFY_APPROVAL_OVERDUE: "overdue escalation",
    sc.NOTIFY_WAIT_UNCERTAIN: "uncertain checkpoint reported",
    sc.NOTIFY_RUN_LOOPING: "loop alert",
    sc.NOTIFY_RUN_STUCK: "stuck alert",
}


def _hhmm(value: Any) -> str:
    ts = pd.to_datetime(value, utc=True, errors="coerce")
    return "?" if pd.isna(ts) else ts.strftime("%H:%M")


def summary(notifications: Iterable[dict[str, Any]] | None) -> str:
    """One phrase per event, in the order they happened; "" when nothing was sent."""
    by_event: dict[str, list[dict[str, Any]]] = {}
    for n in notifications or []:
        by_event.setdefault(n.get("event", ""), []).append(n)
    parts = []
    for event, rows in by_event.items():
        phrase = PHRASES.get(event, event.replace("_", " "))
        sent = sorted(str(r["sent_at"]) for r in rows if r.get("sent_at"))
        if sent:
            parts.append(f"{phrase} {_hhmm(sent[0])}")
        elif any(r.get("status") == "failed" for r in rows):
            parts.append(f"{phrase} failed")
        else:
            parts.append(f"{phrase} pending")
    return ", ".join(parts)
