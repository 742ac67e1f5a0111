"""Verdicts over time: a handoff's (or a run's) verdict as a function of the query time.

The time-based rules (`destination_not_started` after the grace window, `approval_overdue`
at a deadline) read the clock through exactly two comparisons — `now - first_seen > grace`
and `deadline <= now` — so evaluating `classify` just before, at and after those instants
gives the exact verdict for every query time: a **timeline**, the verdict before any
threshold and up to two flips. Time only ever makes a verdict worse (in flight →
destination not started; waiting → overdue), so two flips suffice for a handoff and,
taking the worst over its handoffs, for a run too. The engine stores timelines; the SQL
reads them at the query's `now` with `hs_verdict_at` (store/sql/engine/ddl/0001_verdict_at.sql,
and its PostgreSQL twin), which `Timeline.at` defines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from .. import semconv as sc
from .evidence import HandoffEvidence, grace_ns, worst
from .rules import classify
from .waits import classify_wait

_FAILURES = frozenset(sc.FAILURE_VERDICTS)


class Timeline(NamedTuple):
    """A verdict as a function of query time: `verdict` until `flip1_ns`, and so on."""

    verdict: str
    flip1_ns: int | None = None
    flip1_verdict: str | None = None
    flip2_ns: int | None = None
    flip2_verdict: str | None = None

    @property
    def unhealthy_from_ns(self) -> int | None:
        """When this timeline first holds a failure verdict (-2**63: from the start; None:
        never). Time only worsens a verdict, so it stays a failure from then on."""
        if self.verdict in _FAILURES:
            return -(2**63)
        if self.flip1_verdict in _FAILURES:
            return self.flip1_ns
        if self.flip2_verdict in _FAILURES:
            return self.flip2_ns
        return None

    def at(self, now_ns: int) -> str:
        if self.flip2_ns is not None and self.flip2_ns <= now_ns:
            return self.flip2_verdict  # type: ignore[return-value]
        if self.flip1_ns is not None and self.flip1_ns <= now_ns:
            return self.flip1_verdict  # type: ignore[return-value]
        return self.verdict


def _steps(base: str, changes: Sequence[tuple[int, str]]) -> Timeline:
    if len(changes) > 2:  # impossible by the monotonicity argument in the docstring
        raise AssertionError(f"more than two verdict flips: {changes}")
    flat: list = []
    for t, v in changes:
        flat += [t, v]
    return Timeline(base, *flat)


def thresholds(ev: HandoffEvidence, grace_ns: int) -> list[int]:
    """The instants at which `classify` may change its mind about `ev`."""
    ts = set()
    if ev.destination_started is None and ev.first_seen_ns is not None:
        ts.add(ev.first_seen_ns + grace_ns + 1)  # classify: now - first_seen > grace
    if ev.wait_seen and ev.wait_deadline_ns is not None and ev.wait_decision is None:
        ts.add(ev.wait_deadline_ns)  # classify_wait: deadline <= now
    return sorted(ts)


def handoff_timeline(ev: HandoffEvidence, grace_seconds: float) -> Timeline:
    grace = grace_ns(grace_seconds)  # the same rounding as classify
    ts = thresholds(ev, grace)
    before = (ts[0] - 1) if ts else (ev.first_seen_ns or 0)
    base = classify(ev, now_ns=before, grace_seconds=grace_seconds).verdict
    if not ts:
        return Timeline(base)
    changes: list[tuple[int, str]] = []
    cur = base
    for t in ts:
        v = classify(ev, now_ns=t, grace_seconds=grace_seconds).verdict
        if v != cur:
            changes.append((t, v))
            cur = v
    return _steps(base, changes)


def wait_timeline(ev: HandoffEvidence) -> Timeline | None:
    """Timeline of a wait's own verdict (approvals view); None once it is decided."""
    if ev.wait_deadline_ns is not None and ev.wait_decision is None:
        before = classify_wait(ev, now_ns=ev.wait_deadline_ns - 1)
        after = classify_wait(ev, now_ns=ev.wait_deadline_ns)
        if before is None or after is None:
            return None
        if before.verdict == after.verdict:
            return Timeline(before.verdict)
        return Timeline(before.verdict, ev.wait_deadline_ns, after.verdict)
    c = classify_wait(ev, now_ns=0)
    return None if c is None else Timeline(c.verdict)


def _rank(verdict: str) -> int:
    return sc.RANK.get(verdict, len(sc.PRECEDENCE))


def worst_timeline(statics: Iterable[str], timelines: Sequence[Timeline]) -> Timeline:
    """The worst of several timelines (a run over its handoffs), as a timeline.

    One sweep over the flips in time order, keeping how many timelines hold each verdict
    right now: O(n log n) for n timelines. (Re-evaluating every timeline at every flip
    instant was O(n²) — 10,000 pending handoffs in one run, each with its own grace
    expiry, stalled the judge for minutes.) The count per verdict, rather than a running
    minimum, keeps the answer exact even for a timeline whose flip were to improve it.
    """
    statics = list(statics)
    if not any(tl.flip1_ns is not None for tl in timelines):
        # Nothing changes with time (the common case once a run settled): the worst now.
        return Timeline(worst([*statics, *(tl.verdict for tl in timelines)]))
    holding: Counter[str] = Counter(statics)
    flips: list[tuple[int, str, str]] = []  # (instant, verdict left, verdict entered)
    for tl in timelines:
        holding[tl.verdict] += 1
        if tl.flip1_ns is not None:
            flips.append((tl.flip1_ns, tl.verdict, tl.flip1_verdict))  # type: ignore[arg-type]
            if tl.flip2_ns is not None:
                flips.append((tl.flip2_ns, tl.flip1_verdict, tl.flip2_verdict))  # type: ignore[arg-type]
    base = worst(+holding)
    if not flips:
        return Timeline(base)
    flips.sort(key=lambda f: f[0])
    changes: list[tuple[int, str]] = []
    cur = base
    i, n = 0, len(flips)
    while i < n:
        t = flips[i][0]
        v = cur
        while i < n and flips[i][0] == t:  # every flip at this instant, then judge
            _t, left, entered = flips[i]
            holding[left] -= 1
            holding[entered] += 1
            if _rank(entered) < _rank(v):
                v = entered
            i += 1
        if holding[v] <= 0:  # the worst one left (never, if time only worsens): recount
            v = worst(k for k, c in holding.items() if c > 0)
        if v != cur:
            changes.append((t, v))
            cur = v
    return _steps(base, changes)
