"""The later turns of every conversation in a store, counted two ways that must agree:
as the weekly review counts them (query/continuity_weekly.sql, over the rollups the judge
keeps: engine/turns.py) and as the conversations tell them (query/continuity.sql, over
the runs themselves). Per (service, continuity); an unknown continuity is "unknown"."""

from __future__ import annotations

from collections import Counter
from typing import Any

from handoffscope.collector.store import statements
from handoffscope.instrumentation import semconv as sc

EVER = {"since": 0, "until": 2**62}


def weekly(con: Any) -> Counter:
    """The weekly review's counts over every day."""
    rows = statements.dicts(
        con, "query/continuity_weekly", {"since": 0, "service": None, "scope": None}
    )
    counted: Counter = Counter()
    for r in rows:
        counted[(r["service"], r["continuity"] or "unknown")] += int(r["turns"])
    return +counted


def told(con: Any, now: int) -> Counter:
    """Every run that is not its conversation's first, by the continuity.sql tells."""
    rows = statements.dicts(
        con,
        "query/continuity",
        {"conversation": None, **EVER, "now": now},
    )
    return +Counter(
        (r["service"], r["continuity"] or "unknown")
        for r in rows
        if r["continuity"] != sc.CONTINUITY_FIRST
    )
