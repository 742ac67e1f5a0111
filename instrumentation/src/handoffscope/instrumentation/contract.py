"""`validate_contract()`: the receiver-side check of a handoff contract.

A handoff is a small versioned contract, not a copy of the conversation (seeds 000/001):

    {"version": 1,
     "task_id": "T-1",
     "next_objective": "Issue the refund for the duplicate charge",
     "confirmed_state": "ready",                     # ready | blocked | needs-review
     "state_version": 7,                             # optional
     "evidence": [{"kind": "check", "reference": "chk-42"}],   # artifact | check | decision
     "authority": {"allowed_tools": ["refund.create"], "forbidden_actions": ["refund.over_limit"]},
     "acceptance": ["refund id recorded"],
     "recovery": {"on_reject": "repair", "resume_from": null},  # repair | escalate | stop
     "budget": {"remaining_calls": 5},               # optional
     "handoff_id": "h-3"}                            # optional, for replay detection

The receiver validates before its first tool call and refuses with one reason —
`invalid`, `stale`, `unauthorized`, `no_budget`, `vague_goal` — plus the NAMES of the
offending fields (never their values). Checks run in that order; the first failing one
wins. With a recorder, the `handoff.accept` evidence span is recorded too. It never
raises: a contract it cannot read is `invalid`.

"Context transfer is not trust transfer": authority is read from the structured
`authority` block and checked against the receiver's own tool allowlist, never from
text in the objective.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

from . import semconv as sc
from .recorder import HandoffRecorder
from .stats import swallowed

_log = logging.getLogger(__name__)

SUPPORTED_VERSIONS = (1,)
CONFIRMED_STATES = ("ready", "blocked", "needs-review")
EVIDENCE_KINDS = ("artifact", "check", "decision")
ON_REJECT = ("repair", "escalate", "stop")
MIN_OBJECTIVE_CHARS = 8
"""Article 001's envelope check: a goal shorter than this is too vague to act on."""

DEFAULT_POLICY = {
    sc.REJECTION_INVALID: "repair",
    sc.REJECTION_STALE: "repair",
    sc.REJECTION_UNAUTHORIZED: "escalate",
    sc.REJECTION_NO_BUDGET: "stop",
    sc.REJECTION_VAGUE_GOAL: "repair",
}
"""What to do per reason when the contract's own `recovery.on_reject` cannot be read."""


@dataclass(frozen=True)
class ContractCheck:
    accepted: bool
    reason: str | None = None
    """One of semconv.REJECTION_REASONS when refused."""
    fields: tuple[str, ...] = ()
    """Names of the offending fields, e.g. ("task_id",) — never values."""
    missing_keys: tuple[str, ...] = ()
    """Required context keys absent from the provided context (verdict context_incomplete)."""
    next_step: str | None = None
    """repair / escalate / stop: the contract's recovery policy, else DEFAULT_POLICY."""

    @property
    def verdict(self) -> str:
        if self.reason is not None:
            return sc.CONTRACT_REJECTED
        if self.missing_keys:
            return sc.CONTEXT_INCOMPLETE
        return sc.HEALTHY


def validate_contract(
    contract: Any,
    *,
    expected_task_id: str | None = None,
    current_state_version: int | None = None,
    receiver_tools: Iterable[str] | None = None,
    evidence_exists: Callable[[str], bool] | None = None,
    confirmed_handoffs: Container[str] | None = None,
    required_keys: Iterable[str] = (),
    context: Mapping[str, Any] | None = None,
    recorder: HandoffRecorder | None = None,
    run_id: str | None = None,
    handoff_id: str | None = None,
    agent: str | None = None,
) -> ContractCheck:
    """Check `contract` as the receiver; record `handoff.accept` when a recorder is given.

    - `expected_task_id`: the task this receiver is working on (other task -> invalid).
    - `current_state_version`: an older `state_version` in the contract -> stale.
    - `evidence_exists(reference)`: False for a removed/replaced artifact -> stale.
    - `confirmed_handoffs`: ids already accepted; the same transfer again -> stale.
    - `receiver_tools`: the receiver's own allowlist; asking for more -> unauthorized.
    - `required_keys` / `context`: context key names the destination needs; absent ones
      are reported in `missing_keys` (the handoff is then `context_incomplete`).
    """
    try:
        check = _check(
            contract,
            expected_task_id=expected_task_id,
            current_state_version=current_state_version,
            receiver_tools=receiver_tools,
            evidence_exists=evidence_exists,
            confirmed_handoffs=confirmed_handoffs,
        )
        missing = tuple(k for k in required_keys if context is None or k not in context)
        if missing:
            check = ContractCheck(
                check.accepted and not missing,
                check.reason,
                check.fields,
                missing,
                check.next_step or "repair",
            )
    except Exception:
        swallowed(_log, "validate_contract")
        check = ContractCheck(False, sc.REJECTION_INVALID, (), (), "repair")
    if recorder is not None and run_id is not None and handoff_id is not None:
        if check.reason is not None:
            recorder.handoff_rejected(
                run_id, handoff_id, check.reason, agent=agent, fields=check.fields
            )
        else:
            recorder.handoff_accepted(
                run_id, handoff_id, agent=agent, missing_keys=check.missing_keys
            )
    return check


def _reject(
    reason: str, fields: Iterable[str], contract: Mapping[str, Any] | None
) -> ContractCheck:
    step = DEFAULT_POLICY[reason]
    if contract is not None:
        recovery = contract.get("recovery")
        if isinstance(recovery, Mapping) and recovery.get("on_reject") in ON_REJECT:
            step = recovery["on_reject"]
    return ContractCheck(False, reason, tuple(fields), (), step)


def _as_mapping(contract: Any) -> Mapping[str, Any] | None:
    if isinstance(contract, Mapping):
        return contract
    if is_dataclass(contract) and not isinstance(contract, type):
        return asdict(contract)
    dump = getattr(contract, "model_dump", None)  # pydantic models
    if callable(dump):
        result = dump()
        return result if isinstance(result, Mapping) else None
    return None


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check(
    raw: Any,
    *,
    expected_task_id: str | None,
    current_state_version: int | None,
    receiver_tools: Iterable[str] | None,
    evidence_exists: Callable[[str], bool] | None,
    confirmed_handoffs: Container[str] | None,
) -> ContractCheck:
    c = _as_mapping(raw)
    if c is None:
        return _reject(sc.REJECTION_INVALID, ("contract",), None)

    # invalid: shape, version, identity
    bad: list[str] = []
    version = c.get("version")
    if type(version) is not int or version not in SUPPORTED_VERSIONS:
        bad.append("version")
    if not _nonempty_str(c.get("task_id")):
        bad.append("task_id")
    if not isinstance(c.get("next_objective"), str) or not c["next_objective"].strip():
        bad.append("next_objective")
    if c.get("confirmed_state") not in CONFIRMED_STATES:
        bad.append("confirmed_state")
    evidence = c.get("evidence")
    if (
        not isinstance(evidence, list)
        or not evidence
        or not all(
            isinstance(e, Mapping)
            and e.get("kind") in EVIDENCE_KINDS
            and _nonempty_str(e.get("reference"))
            for e in evidence
        )
    ):
        bad.append("evidence")
    authority = c.get("authority")
    if (
        not isinstance(authority, Mapping)
        or not _str_list(authority.get("allowed_tools"))
        or not _str_list(authority.get("forbidden_actions"))
    ):
        bad.append("authority")
    acceptance = c.get("acceptance")
    if (
        not isinstance(acceptance, list)
        or not acceptance
        or not all(_nonempty_str(a) for a in acceptance)
    ):
        bad.append("acceptance")
    recovery = c.get("recovery")
    if (
        not isinstance(recovery, Mapping)
        or recovery.get("on_reject") not in ON_REJECT
        or not (recovery.get("resume_from") is None or isinstance(recovery.get("resume_from"), str))
    ):
        bad.append("recovery")
    sv = c.get("state_version")
    if sv is not None and type(sv) is not int:
        bad.append("state_version")
    if bad:
        return _reject(sc.REJECTION_INVALID, bad, c)
    # shape checked above; narrow the types for what follows
    assert isinstance(authority, Mapping) and isinstance(evidence, list)
    if expected_task_id is not None and c["task_id"] != expected_task_id:
        return _reject(sc.REJECTION_INVALID, ("task_id",), c)

    # stale: older state, vanished evidence, a transfer already confirmed
    if current_state_version is not None and sv is not None and sv < current_state_version:
        return _reject(sc.REJECTION_STALE, ("state_version",), c)
    if evidence_exists is not None and not all(evidence_exists(e["reference"]) for e in evidence):
        return _reject(sc.REJECTION_STALE, ("evidence",), c)
    hid = c.get("handoff_id")
    if confirmed_handoffs is not None and isinstance(hid, str) and hid in confirmed_handoffs:
        return _reject(sc.REJECTION_STALE, ("handoff_id",), c)

    # unauthorized: asks for tools beyond the receiver's own allowlist
    if receiver_tools is not None:
        allowed = set(receiver_tools)
        if any(t not in allowed for t in authority["allowed_tools"]):
            return _reject(sc.REJECTION_UNAUTHORIZED, ("authority.allowed_tools",), c)
    if set(authority["allowed_tools"]) & set(authority["forbidden_actions"]):
        return _reject(sc.REJECTION_UNAUTHORIZED, ("authority.forbidden_actions",), c)

    # no_budget
    budget = c.get("budget")
    if isinstance(budget, Mapping):
        remaining = budget.get("remaining_calls")
        if type(remaining) is not int:
            return _reject(sc.REJECTION_INVALID, ("budget.remaining_calls",), c)
        if remaining < 1:
            return _reject(sc.REJECTION_NO_BUDGET, ("budget.remaining_calls",), c)

    # vague_goal
    if len(c["next_objective"].strip()) < MIN_OBJECTIVE_CHARS:
        return _reject(sc.REJECTION_VAGUE_GOAL, ("next_objective",), c)

    return ContractCheck(True)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
