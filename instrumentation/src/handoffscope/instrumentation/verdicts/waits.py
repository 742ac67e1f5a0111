"""A human wait, judged (docs/architecture.md, Verdicts, rules 9 and 10).

A wait is safe to leave alone only when it is checkpointed with five facts: who decides
(`owner`), why (`reason`), by when (`deadline`), how to resume (`resume_token_id`) and that
the state it resumes from was persisted (`state_persisted`). `WAIT_FACTS` names them once —
the code the API lists as missing, the words a person reads, and the test of presence —
for `classify_wait` and every view that lists what a wait lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .. import semconv as sc
from .evidence import Classification, HandoffEvidence, fail


class WaitFact(NamedTuple):
    code: str
    """As the API lists it (`missing` on an approval)."""
    words: str
    """As a sentence says it ("the wait lacks owner, deadline")."""
    present: Callable[[HandoffEvidence], bool]


WAIT_FACTS: tuple[WaitFact, ...] = (
    WaitFact("owner", "owner", lambda ev: bool(ev.wait_owner)),
    WaitFact("reason", "reason", lambda ev: bool(ev.wait_reason)),
    WaitFact("deadline", "deadline", lambda ev: ev.wait_deadline_ns is not None),
    WaitFact("resume_token_id", "resume token", lambda ev: bool(ev.wait_resume_token_id)),
    WaitFact("state_persisted", "persisted state", lambda ev: ev.wait_state_persisted is True),
)


def missing_facts(ev: HandoffEvidence) -> list[WaitFact]:
    return [f for f in WAIT_FACTS if not f.present(ev)]


def wait_missing(ev: HandoffEvidence) -> list[str]:
    """Codes of the wait facts that are absent (the approvals view lists them)."""
    return [f.code for f in missing_facts(ev)]


def classify_wait(ev: HandoffEvidence, *, now_ns: int) -> Classification | None:
    """Verdict of a wait's facts: overdue, uncertain, pending — or None once decided."""
    if ev.wait_decision == sc.WAIT_DECISION_EXPIRED:
        return fail(sc.APPROVAL_OVERDUE, "the wait expired without a decision")
    if ev.wait_decision is not None:
        return None
    if ev.wait_deadline_ns is not None and ev.wait_deadline_ns <= now_ns:
        return fail(
            sc.APPROVAL_OVERDUE, f"deadline passed; {ev.wait_owner or 'nobody'} has not decided"
        )
    missing = missing_facts(ev)
    if missing:
        return fail(sc.WAIT_UNCERTAIN, "the wait lacks " + ", ".join(f.words for f in missing))
    return Classification(sc.WAITING_ON_APPROVAL, None, f"waiting on {ev.wait_owner}")
