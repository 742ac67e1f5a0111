"""The verdict of one handoff from its merged evidence, and loop detection across a run.

Pure functions, no I/O: the collector's health engine calls them with evidence it merged
from spans that arrived in any order; tests call them directly. The precedence of
the verdict rules (docs/architecture.md, Verdicts) is applied literally — the first rule
that fails wins, so a later green signal (an admission, a passing verifier) never hides an
earlier failure.

Time-based verdicts (`destination_not_started`, `approval_overdue`, `in_flight`) depend on
`now_ns`; callers pass the time they judge at.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from . import semconv as sc

DEFAULT_GRACE_SECONDS = 30.0


@dataclass
class HandoffEvidence:
    """Everything known about one handoff, merged from its evidence spans.

    `None` means "no evidence yet"; a rule only fails on evidence it has, except the
    time-based ones, which fail on evidence that did not come in time.
    """

    run_id: str = ""
    handoff_id: str = ""
    kind: str = sc.KIND_HANDOFF
    """`handoff`, or `delegation` (an agent invoked as a tool: judged the same way, but kept
    out of handoff counts, paths and rejection rates)."""
    reason: str | None = None
    """`handoff.reason`: why it happened, or what became of it (e.g. ignored by the runtime)."""
    from_agent: str | None = None
    to_agent: str | None = None
    first_seen_ns: int | None = None
    """When the earliest evidence of this handoff started (request time, normally)."""
    requested: bool = False
    route_declared: bool | None = None
    route_goto: str | None = None
    control_before: str | None = None
    control_after: str | None = None
    tool_call_id: str | None = None
    tool_call_closed: bool | None = None
    required_keys: tuple[str, ...] = ()
    missing_keys: tuple[str, ...] = ()
    destination_started: bool | None = None
    rejection_reason: str | None = None
    loop: bool = False
    """Set by `find_loops` over the run: this handoff repeats or closes a cycle."""
    run_stopped: bool = False
    """The run ended at its turn limit (`max_turns`): a destination not yet admitted never
    had its turn, so a looping handoff there is judged a loop, not a failed admission."""
    run_status: str | None = None
    """The run's status when judged. Once it completed, failed or hit its limit, a
    destination not admitted yet will never start: there is no grace to wait out."""
    claims_done: bool = False
    """The run (or the destination) claimed completion at this handoff."""
    outcome_result: str | None = None
    wait_seen: bool = False
    wait_owner: str | None = None
    wait_reason: str | None = None
    wait_deadline_ns: int | None = None
    wait_resume_token_id: str | None = None
    wait_state_persisted: bool | None = None
    wait_decision: str | None = None


@dataclass(frozen=True)
class Classification:
    verdict: str
    failed_boundary: str | None = None
    why: str = ""
    next_step: str = ""
    """The safe next step; the verdict's own unless what happened calls for another."""

    def __post_init__(self) -> None:
        if not self.next_step:
            object.__setattr__(self, "next_step", sc.NEXT_STEPS.get(self.verdict, ""))

    @property
    def healthy(self) -> bool:
        return self.verdict not in sc.FAILURE_VERDICTS


def classify(
    ev: HandoffEvidence,
    *,
    now_ns: int | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
) -> Classification:
    """Apply the verdict rules (docs/architecture.md, Verdicts) to merged evidence; return
    the verdict, its boundary and why."""
    now = time.time_ns() if now_ns is None else now_ns
    to = ev.to_agent

    # 1. route
    if ev.reason == sc.REASON_TOOL_MISSING:
        return _fail(
            sc.ROUTE_REJECTED,
            f"{ev.from_agent or 'the sender'} called a handoff to {to or 'an agent'} it does not "
            "have: not a declared edge",
            ev.reason,
        )
    if ev.route_declared is False:
        return _fail(sc.ROUTE_REJECTED, f"{to or 'destination'} is not a declared edge")
    if ev.route_goto is not None and to is not None and ev.route_goto != to:
        if ev.reason == sc.REASON_IGNORED_SAME_TURN:
            return _fail(
                sc.ROUTE_REJECTED,
                f"requested in the same turn as the handoff to {ev.route_goto}; the runtime "
                f"takes one handoff per turn and ignored this one, so {to} never ran",
                ev.reason,
            )
        return _fail(sc.ROUTE_REJECTED, f"goto names {ev.route_goto}, handoff names {to}")
    # 2. control
    if (
        ev.control_before is not None
        and ev.from_agent is not None
        and ev.control_before != ev.from_agent
    ):
        return _fail(
            sc.STALE_CONTROL, f"control before was {ev.control_before}, sender is {ev.from_agent}"
        )
    if ev.control_after is not None and to is not None and ev.control_after != to:
        return _fail(sc.STALE_CONTROL, f"control after is {ev.control_after}, receiver is {to}")
    # 3. tool protocol
    if ev.tool_call_closed is False:
        return _fail(
            sc.OPEN_TOOL_PROTOCOL,
            f"tool call {ev.tool_call_id or '(no id)'} has no result with its own id",
        )
    # 4. context
    if ev.missing_keys:
        return _fail(sc.CONTEXT_INCOMPLETE, "missing at destination: " + ", ".join(ev.missing_keys))
    # 5. contract
    if ev.rejection_reason is not None:
        step = sc.REJECTION_NEXT_STEPS.get(ev.rejection_reason, "repair")
        return _fail(
            sc.CONTRACT_REJECTED, f"receiver refused the contract: {ev.rejection_reason} ({step})"
        )
    # 6. destination (time-based)
    grace_ns = int(grace_seconds * 1e9)
    if ev.destination_started is False:
        return _fail(sc.DESTINATION_NOT_STARTED, f"{to or 'destination'} reported it did not start")
    not_started = ev.destination_started is None
    overdue = ev.first_seen_ns is not None and now - ev.first_seen_ns > grace_ns
    # A ping-pong stopped by the turn limit requests one last handoff whose destination
    # never gets a turn: that is the loop's doing, not routing or admission (rule 7 says
    # so below). Anything else that was not admitted in time still fails here.
    stopped = ev.run_stopped or ev.run_status == sc.RUN_STATUS_MAX_TURNS
    cut_by_turn_limit = ev.loop and stopped
    if not_started and not cut_by_turn_limit:
        if ev.run_status == sc.RUN_STATUS_COMPLETED:
            return _fail(
                sc.DESTINATION_NOT_STARTED,
                f"the run completed and {to or 'the destination'} never ran",
            )
        if ev.run_status == sc.RUN_STATUS_FAILED or stopped:
            what = "hit its turn limit" if stopped else "failed"
            return _fail(sc.RUN_FAILED, f"the run {what} before {to or 'the destination'} started")
    if not_started and overdue and not cut_by_turn_limit:
        secs = (now - (ev.first_seen_ns or now)) / 1e9
        return _fail(
            sc.DESTINATION_NOT_STARTED,
            f"no admission by {to or 'destination'} after {secs:.0f} s (grace {grace_seconds:.0f} s)",
        )
    # 7. loop
    if ev.loop:
        if ev.kind == sc.KIND_DELEGATION:
            return _fail(
                sc.LOOP, f"{to or 'the delegate'} was asked the same task again with no new work"
            )
        return _fail(
            sc.LOOP,
            "same destination, task and no new work seen earlier in the run, a cycle without "
            "progress, or a run stopped at its turn limit while cycling",
        )
    # 8. result
    if ev.claims_done and ev.outcome_result != sc.OUTCOME_PASS:
        if ev.outcome_result == sc.OUTCOME_FAIL:
            return _fail(sc.FALSE_COMPLETE, "claimed done but the verifier failed")
        return _fail(sc.FALSE_COMPLETE, "claimed done without a passing verifier")
    # 9, 10, and the pending wait
    if ev.wait_seen:
        wait = classify_wait(ev, now_ns=now)
        if wait is not None:
            return wait
    if not_started:
        return Classification(sc.IN_FLIGHT, None, "requested; destination not admitted yet")
    return Classification(sc.HEALTHY, None, "every boundary passed")


def classify_wait(ev: HandoffEvidence, *, now_ns: int) -> Classification | None:
    """Verdict of a wait's facts: overdue, uncertain, pending — or None once decided."""
    if ev.wait_decision == sc.WAIT_DECISION_EXPIRED:
        return _fail(sc.APPROVAL_OVERDUE, "the wait expired without a decision")
    if ev.wait_decision is not None:
        return None
    if ev.wait_deadline_ns is not None and ev.wait_deadline_ns <= now_ns:
        return _fail(
            sc.APPROVAL_OVERDUE, f"deadline passed; {ev.wait_owner or 'nobody'} has not decided"
        )
    missing = [
        name
        for name, present in (
            ("owner", bool(ev.wait_owner)),
            ("reason", bool(ev.wait_reason)),
            ("deadline", ev.wait_deadline_ns is not None),
            ("resume token", bool(ev.wait_resume_token_id)),
            ("persisted state", ev.wait_state_persisted is True),
        )
        if not present
    ]
    if missing:
        return _fail(sc.WAIT_UNCERTAIN, "the wait lacks " + ", ".join(missing))
    return Classification(sc.WAITING_ON_APPROVAL, None, f"waiting on {ev.wait_owner}")


def _fail(verdict: str, why: str, reason: str | None = None) -> Classification:
    step = sc.REASON_NEXT_STEPS.get(reason or "", "")
    return Classification(verdict, sc.VERDICT_BOUNDARY.get(verdict), why, step)


def worst(verdicts: Iterable[str]) -> str:
    """The worst verdict by precedence; `healthy` for none."""
    return min(verdicts, key=lambda v: sc.RANK.get(v, len(sc.PRECEDENCE)), default=sc.HEALTHY)


# --- loops -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HandoffStep:
    """One handoff of a run, in order, as loop detection sees it."""

    handoff_id: str
    from_agent: str | None
    to_agent: str | None
    fingerprint: str | None = None
    state_version: int | None = None
    admitted: bool | None = None
    """Whether the destination ran (None: not known); only `find_loops(ended=True)` reads it."""


@dataclass
class LoopReport:
    looping_ids: set[str] = field(default_factory=set)
    """Handoffs that repeat an earlier key or close a cycle without progress."""
    cycle: list[str] = field(default_factory=list)
    """The first cycle found, as a path of agents that starts and ends on the same agent."""
    repeats: int = 0
    """How many handoffs were judged a repeat (turns burned in the loop)."""
    cut_unsaid: bool = False
    """The run ended while cycling, cut by a limit its source does not report (`ended`)."""


def find_loops(
    steps: Sequence[HandoffStep], *, stopped: bool = False, ended: bool = False
) -> LoopReport:
    """Find loops in a run's handoffs, in order (docs/architecture.md, Verdicts, rule 7).

    Three rules. A repeat: the key (to_agent, fingerprint, state_version) was seen earlier —
    the same destination got the same task with no new work (`state_version` counts the
    distinct units of work done so far, so repeating work does not move it). A cycle:
    control returns to an agent already on the path since the last progress, where progress
    is a change of (fingerprint, state_version); a retry after new work is therefore not a
    loop, and A→B→C→A without progress is one. And with `stopped` (the run hit its turn or
    recursion limit): if control was cycling when it stopped — the last handoff returns to
    an agent that already held control — every handoff back to an agent that had held
    control is a loop, progress or not, the last one included.

    Some sources never say that a limit stopped the run (AutoGen's `Swarm(max_turns=...)`
    ends the run as completed). With `ended` (the run reached a terminal status), a run
    whose last request was never admitted (`admitted is False`), returned to an agent that
    had already held control, and came right after another such return, was cut while going
    round: it is judged as `stopped`, and `cut_unsaid` says so (the caller judges the run's
    handoffs as cut by a limit, not as a destination that failed to start).
    """
    report = LoopReport()
    seen_keys: set[tuple[str | None, str | None, int | None]] = set()
    path: list[str] = []
    on_path: set[str] = set()  # path's agents: membership in O(1), not a scan of the path
    last_state: tuple[str | None, int | None] | None = None
    for step in steps:
        state = (step.fingerprint, step.state_version)
        has_state = step.fingerprint is not None or step.state_version is not None
        key = (step.to_agent, step.fingerprint, step.state_version)
        looping = False
        if has_state and key in seen_keys:
            looping = True
        seen_keys.add(key)

        if last_state is None or state != last_state or not has_state:
            # progress (or no state to judge by): a new path starts at the sender
            path = [step.from_agent] if step.from_agent else []
            on_path = set(path)
        elif not path and step.from_agent:
            path = [step.from_agent]
            on_path = set(path)
        last_state = state

        if has_state and step.to_agent is not None and step.to_agent in on_path:
            looping = True
            if not report.cycle:
                start = path.index(step.to_agent)
                report.cycle = [*path[start:], step.to_agent]
        if step.to_agent is not None:
            path.append(step.to_agent)
            on_path.add(step.to_agent)
        if looping:
            report.looping_ids.add(step.handoff_id)
            report.repeats += 1
            if not report.cycle:
                report.cycle = [a for a in (step.from_agent, step.to_agent) if a]
    if not stopped and ended and _ended_while_cycling(steps):
        stopped = report.cut_unsaid = True
    if stopped and steps:
        _cut_while_cycling(steps, report)
    return report


def _ended_while_cycling(steps: Sequence[HandoffStep]) -> bool:
    """The last request never admitted, a return right after a return (see `find_loops`)."""
    if len(steps) < 3 or steps[-1].admitted is not False:
        return False
    held: set[str] = set()
    returned: list[bool] = []
    for step in steps:
        if step.from_agent:
            held.add(step.from_agent)
        returned.append(step.to_agent is not None and step.to_agent in held)
        if step.to_agent is not None:
            held.add(step.to_agent)
    return returned[-1] and returned[-2]


def _cut_while_cycling(steps: Sequence[HandoffStep], report: LoopReport) -> None:
    held: set[str] = set()
    order: list[str] = []  # agents in the order they held control
    returns: list[HandoffStep] = []
    for step in steps:
        if step.from_agent:
            held.add(step.from_agent)
            if not order or order[-1] != step.from_agent:
                order.append(step.from_agent)
        if step.to_agent is not None:
            if step.to_agent in held:
                returns.append(step)
            held.add(step.to_agent)
            order.append(step.to_agent)
    last = steps[-1]
    if last.to_agent is None and len(steps) > 1 and returns and returns[-1] is steps[-2]:
        # The last request names no destination and none was admitted (a source that names
        # the destination only by its arrival, e.g. Strands): the limit refused it, right
        # after a return. Going round when it stopped, so cut by the limit: a loop too.
        cut = returns[-1]
        returns = [*returns, last]
    elif not returns or returns[-1] is not last:
        return  # the run was not going round when it stopped
    else:
        cut = last
    for step in returns:
        if step.handoff_id not in report.looping_ids:
            report.looping_ids.add(step.handoff_id)
            report.repeats += 1
    if not report.cycle and cut.to_agent is not None:
        start = max(i for i, a in enumerate(order[:-1]) if a == cut.to_agent)
        report.cycle = order[start:]
