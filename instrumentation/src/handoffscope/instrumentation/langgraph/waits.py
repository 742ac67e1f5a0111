"""Waits: what an `interrupt()` says about its owner, reason and deadline, and what a resume decided.

Both are read from the values' *shape* only (the LangGraph package docstring lists the
shapes); nothing the human or the model wrote reaches a span.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .. import semconv as sc
from ..recorder import to_epoch_ns

WAIT_KEY = "handoffscope.wait"
"""Key of an interrupt value's mapping that holds the wait's owner, reason and deadline."""

_APPROVE = frozenset({"approved", "approve", "accept", "accepted", "edit", "response", "yes"})
_REJECT = frozenset({"rejected", "reject", "ignore", "deny", "denied", "no"})
_INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")


def wait_details(
    *,
    owner: str | None = None,
    reason: str | None = None,
    deadline: datetime | float | int | None = None,
) -> dict[str, dict[str, Any]]:
    """`{WAIT_KEY: {...}}` to merge into an `interrupt()` value: who owns the wait, why, until when.

    `owner` and `reason` are bounded codes (no spaces); `deadline` a datetime, epoch seconds
    or epoch nanoseconds. Only these three facts are read from the interrupt value.
    """
    facts: dict[str, Any] = {}
    if owner is not None:
        facts["owner"] = owner
    if reason is not None:
        facts["reason"] = reason
    ns = to_epoch_ns(deadline)
    if ns is not None:
        facts["deadline_ns"] = ns
    return {WAIT_KEY: facts}


def decision(value: Any) -> str:
    """A wait decision from the resume value's shape; the package docstring lists the shapes."""
    if isinstance(value, bool):
        return sc.WAIT_DECISION_APPROVED if value else sc.WAIT_DECISION_REJECTED
    if isinstance(value, str):
        word = value.strip().lower()
        if word == sc.WAIT_DECISION_EXPIRED:
            return sc.WAIT_DECISION_EXPIRED
        if word in _REJECT:
            return sc.WAIT_DECISION_REJECTED
        return sc.WAIT_DECISION_APPROVED
    if isinstance(value, Mapping):
        approved = value.get("approved")
        if isinstance(approved, bool):
            return decision(approved)
        for key in ("decision", "type"):
            named = value.get(key)
            if isinstance(named, str) and named.strip().lower() in (
                _APPROVE | _REJECT | {sc.WAIT_DECISION_EXPIRED}
            ):
                return decision(named)
        many = value.get("decisions")
        if isinstance(many, (list, tuple)) and many:
            found = [decision(d) for d in many]
            for worst in (sc.WAIT_DECISION_REJECTED, sc.WAIT_DECISION_EXPIRED):
                if worst in found:
                    return worst
    return sc.WAIT_DECISION_APPROVED


def wait_facts(value: Any) -> Mapping[str, Any]:
    if isinstance(value, (list, tuple)):
        value = next((v for v in value if isinstance(v, Mapping) and WAIT_KEY in v), None)
    if isinstance(value, Mapping):
        facts = value.get(WAIT_KEY)
        if isinstance(facts, Mapping):
            return facts
    return {}


def answers(resume: Any, waiting: list[str]) -> dict[str, str]:
    """Interrupt id -> decision, for a `Command(resume=...)` on a run waiting on `waiting`.

    A mapping keyed by interrupt ids answers each one; any other value answers them all.
    """
    if (
        isinstance(resume, Mapping)
        and resume
        and all(isinstance(k, str) and (k in waiting or _INTERRUPT_ID.match(k)) for k in resume)
    ):
        return {k: decision(v) for k, v in resume.items()}
    return {token: decision(resume) for token in waiting}
