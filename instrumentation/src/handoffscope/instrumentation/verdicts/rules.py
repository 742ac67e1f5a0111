"""The verdict ladder (docs/architecture.md, Verdicts), as data: `RULES`, in precedence order.

Each `Rule` names the verdicts it gives, the boundary it checks, the evidence that this
boundary *passed* (for the six handoff boundaries), and its test: a `Classification` (the
verdict and why) when the handoff fails it, else None. `classify` is the first rule that
does not pass — so a later green signal (an admission, a passing verifier) never hides an
earlier failure — and `boundaries` walks the same list to say, boundary by boundary,
passed, failed, unknown or not observed.

Adding a verdict: a row in `semconv.VERDICT_TABLE` (its name, words, next step, boundary),
a rule here at its place in the ladder, and — if time can change it — a threshold in
`timeline.thresholds` and the SQL that reads stored timelines (`hs_verdict_at`).

Time-based rules (`destination_not_started`, `approval_overdue`, `in_flight`) read
`now_ns`; the engine stores their flips as timelines (`timeline.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import semconv as sc
from .evidence import DEFAULT_GRACE_SECONDS, Classification, HandoffEvidence, fail, grace_ns
from .waits import classify_wait

Test = Callable[[HandoffEvidence, int, int], "Classification | None"]
"""(evidence, now_ns, grace_ns) -> the failure (or pending state), None when it passes."""


@dataclass(frozen=True)
class Rule:
    verdicts: tuple[str, ...]
    """The verdicts this rule can give (its first is its own; the rest are what the same
    evidence means in other circumstances, e.g. a destination cut off by its run's crash)."""
    boundary: str
    """The boundary it checks (`sc.BOUNDARY_*`)."""
    test: Test
    passed: Callable[[HandoffEvidence], bool] | None = None
    """For the six handoff boundaries: the evidence that says this boundary passed (no
    evidence is `unknown`, not passed). None for the checks beside them."""


# --- 1. route ------------------------------------------------------------------------------


def _route(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    to = ev.to_agent
    if ev.reason == sc.REASON_TOOL_MISSING:
        return fail(
            sc.ROUTE_REJECTED,
            f"{ev.from_agent or 'the sender'} called a handoff to {to or 'an agent'} it does not "
            "have: not a declared edge",
            ev.reason,
        )
    if ev.route_declared is False:
        return fail(sc.ROUTE_REJECTED, f"{to or 'destination'} is not a declared edge")
    if ev.route_goto is not None and to is not None and ev.route_goto != to:
        if ev.reason == sc.REASON_IGNORED_SAME_TURN:
            return fail(
                sc.ROUTE_REJECTED,
                f"requested in the same turn as the handoff to {ev.route_goto}; the runtime "
                f"takes one handoff per turn and ignored this one, so {to} never ran",
                ev.reason,
            )
        return fail(sc.ROUTE_REJECTED, f"goto names {ev.route_goto}, handoff names {to}")
    return None


def _route_passed(ev: HandoffEvidence) -> bool:
    return ev.route_declared is True or (ev.route_goto is not None and ev.to_agent is not None)


# --- 2. control ----------------------------------------------------------------------------


def _control(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    if (
        ev.control_before is not None
        and ev.from_agent is not None
        and ev.control_before != ev.from_agent
    ):
        return fail(
            sc.STALE_CONTROL, f"control before was {ev.control_before}, sender is {ev.from_agent}"
        )
    to = ev.to_agent
    if ev.control_after is not None and to is not None and ev.control_after != to:
        return fail(sc.STALE_CONTROL, f"control after is {ev.control_after}, receiver is {to}")
    return None


# --- 3. tool protocol ----------------------------------------------------------------------


def _tool_protocol(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    if ev.tool_call_closed is False:
        return fail(
            sc.OPEN_TOOL_PROTOCOL,
            f"tool call {ev.tool_call_id or '(no id)'} has no result with its own id",
        )
    return None


# --- 4. context ----------------------------------------------------------------------------


def _context(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    if ev.missing_keys:
        return fail(sc.CONTEXT_INCOMPLETE, "missing at destination: " + ", ".join(ev.missing_keys))
    return None


# --- 5. contract ---------------------------------------------------------------------------


def _contract(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    if ev.rejection_reason is not None:
        step = sc.REJECTION_NEXT_STEPS.get(ev.rejection_reason, "repair")
        return fail(
            sc.CONTRACT_REJECTED, f"receiver refused the contract: {ev.rejection_reason} ({step})"
        )
    if ev.task_state == sc.A2A_REJECTED:
        # A2A's own refusal states no reason code: the task's state is the refusal.
        return fail(sc.CONTRACT_REJECTED, f"{ev.to_agent or 'the remote agent'} rejected the task")
    return None


# --- 6. destination (time-based) -----------------------------------------------------------


def _cut_by_turn_limit(ev: HandoffEvidence) -> bool:
    # A ping-pong stopped by the turn limit requests one last handoff whose destination
    # never gets a turn: that is the loop's doing, not routing or admission (rule 7 says
    # so). Anything else that was not admitted in time still fails here.
    return ev.loop and (ev.run_stopped or ev.run_status == sc.RUN_STATUS_MAX_TURNS)


def _destination(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    to = ev.to_agent
    if ev.task_state in sc.A2A_FAILED_STATES:
        # A task sent to another service ended without a result: that leg failed, whether
        # or not the remote agent had started (A2A `failed` / `canceled`).
        return fail(sc.RUN_FAILED, f"the task sent to {to or 'the remote agent'} {ev.task_state}")
    if ev.destination_started is False:
        return fail(sc.DESTINATION_NOT_STARTED, f"{to or 'destination'} reported it did not start")
    if ev.destination_started is not None or _cut_by_turn_limit(ev):
        return None
    if ev.run_status == sc.RUN_STATUS_COMPLETED:
        return fail(
            sc.DESTINATION_NOT_STARTED, f"the run completed and {to or 'the destination'} never ran"
        )
    stopped = ev.run_stopped or ev.run_status == sc.RUN_STATUS_MAX_TURNS
    if ev.run_status == sc.RUN_STATUS_FAILED or stopped:
        what = "hit its turn limit" if stopped else "failed"
        return fail(sc.RUN_FAILED, f"the run {what} before {to or 'the destination'} started")
    if ev.first_seen_ns is not None and now - ev.first_seen_ns > grace_ns:
        secs = (now - ev.first_seen_ns) / 1e9
        return fail(
            sc.DESTINATION_NOT_STARTED,
            f"no admission by {to or 'destination'} after {secs:.0f} s "
            f"(grace {grace_ns / 1e9:.0f} s)",
        )
    return None


def _context_passed(ev: HandoffEvidence) -> bool:
    # The destination received the contract: it started, or refused it (with a reason,
    # or as an A2A task's `rejected`).
    return (
        ev.destination_started is not None
        or ev.rejection_reason is not None
        or ev.task_state == sc.A2A_REJECTED
    )


# --- 7. loop -------------------------------------------------------------------------------


def _loop(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    if not ev.loop:
        return None
    if ev.kind == sc.KIND_DELEGATION:
        to = ev.to_agent
        return fail(
            sc.LOOP, f"{to or 'the delegate'} was asked the same task again with no new work"
        )
    return fail(
        sc.LOOP,
        "same destination, task and no new work seen earlier in the run, a cycle without "
        "progress, or a run stopped at its turn limit while cycling",
    )


# --- 8. result -----------------------------------------------------------------------------


def _result(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    if ev.claims_done and ev.outcome_result != sc.OUTCOME_PASS:
        if ev.outcome_result == sc.OUTCOME_FAIL:
            return fail(sc.FALSE_COMPLETE, "claimed done but the verifier failed")
        return fail(sc.FALSE_COMPLETE, "claimed done without a passing verifier")
    return None


# --- 9, 10. the wait, then the pending states ----------------------------------------------


def _wait(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    return classify_wait(ev, now_ns=now) if ev.wait_seen else None


def _in_flight(ev: HandoffEvidence, now: int, grace_ns: int) -> Classification | None:
    # (A destination cut off by the turn limit of a looping run never gets here: rule 7.)
    if ev.destination_started is None:
        return Classification(sc.IN_FLIGHT, None, "requested; destination not admitted yet")
    return None


RULES: tuple[Rule, ...] = (
    Rule((sc.ROUTE_REJECTED,), sc.BOUNDARY_ROUTE, _route, _route_passed),
    Rule(
        (sc.STALE_CONTROL,),
        sc.BOUNDARY_CONTROL,
        _control,
        lambda ev: ev.control_before is not None or ev.control_after is not None,
    ),
    Rule(
        (sc.OPEN_TOOL_PROTOCOL,),
        sc.BOUNDARY_TOOL_PROTOCOL,
        _tool_protocol,
        lambda ev: ev.tool_call_closed is True,
    ),
    Rule((sc.CONTEXT_INCOMPLETE,), sc.BOUNDARY_CONTEXT, _context, _context_passed),
    Rule(
        (sc.CONTRACT_REJECTED,),
        sc.BOUNDARY_DESTINATION,
        _contract,
        lambda ev: ev.destination_started is True,
    ),
    Rule((sc.DESTINATION_NOT_STARTED, sc.RUN_FAILED), sc.BOUNDARY_DESTINATION, _destination),
    Rule((sc.LOOP,), sc.BOUNDARY_PROGRESS, _loop),
    Rule(
        (sc.FALSE_COMPLETE,),
        sc.BOUNDARY_RESULT,
        _result,
        lambda ev: ev.outcome_result == sc.OUTCOME_PASS,
    ),
    Rule((sc.APPROVAL_OVERDUE, sc.WAIT_UNCERTAIN, sc.WAITING_ON_APPROVAL), sc.BOUNDARY_WAIT, _wait),
    Rule((sc.IN_FLIGHT,), sc.BOUNDARY_DESTINATION, _in_flight),
)
"""The ladder: the first rule whose test gives a Classification decides; none: healthy."""

HEALTHY = Classification(sc.HEALTHY, None, "every boundary passed")


def classify(
    ev: HandoffEvidence,
    *,
    now_ns: int | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
) -> Classification:
    """Apply the verdict rules (docs/architecture.md, Verdicts) to merged evidence; return
    the verdict, its boundary and why."""
    now = time.time_ns() if now_ns is None else now_ns
    grace = grace_ns(grace_seconds)
    for rule in RULES:
        c = rule.test(ev, now, grace)
        if c is not None:
            return c
    return HEALTHY


# --- boundaries, walking the same ladder ---------------------------------------------------

PASSED_WHEN: dict[str, Callable[[HandoffEvidence], bool]] = {}
"""Each of the six boundaries -> the evidence that it passed (its first rule's `passed`)."""
FIRST_RULE: dict[str, int] = {}
"""Each boundary -> the position of the first rule that checks it."""
for _i, _rule in enumerate(RULES):
    FIRST_RULE.setdefault(_rule.boundary, _i)
    if _rule.passed is not None:
        PASSED_WHEN.setdefault(_rule.boundary, _rule.passed)
_RULE_OF: dict[str, int] = {}
for _i, _rule in enumerate(RULES):
    for _v in _rule.verdicts:
        _RULE_OF.setdefault(_v, _i)
# A run that failed or hit its limit before the destination started: the destination was
# not reached (unknown), though the rule that says so is the destination's own.
_RULE_OF[sc.RUN_FAILED] = FIRST_RULE[sc.BOUNDARY_DESTINATION]
assert tuple(PASSED_WHEN) == sc.BOUNDARIES, "every handoff boundary has its evidence, in order"


def boundaries(
    ev: HandoffEvidence, c: Classification, unobserved: Sequence[str] = ()
) -> dict[str, str]:
    """Each of the six boundaries: passed (evidence says so), failed, unknown or not_observed.

    The ladder is walked up to the rule that gave the verdict: a boundary checked before it
    is passed when its evidence says so (else unknown: no evidence yet); the boundary that
    failed is failed; every later one is unknown (not reached). So a loop (progress, judged
    between the destination and the result) leaves the result unknown, and a run that
    failed before admission leaves the destination unknown. `not_observed`: the source
    cannot see this boundary (`handoff.unobserved`), so a healthy verdict says nothing about
    it — unless it is the one that failed.
    """
    failed = c.failed_boundary
    reached = _RULE_OF.get(c.verdict, len(RULES)) if failed is not None else len(RULES)
    out: dict[str, str] = {}
    for b, passed in PASSED_WHEN.items():
        if b == failed:
            state = sc.FAILED
        elif FIRST_RULE[b] < reached:
            state = sc.PASSED if passed(ev) else sc.UNKNOWN
        else:
            state = sc.UNKNOWN
        if b in unobserved and state != sc.FAILED:
            state = sc.NOT_OBSERVED
        out[b] = state
    return out
