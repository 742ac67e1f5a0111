"""What a verdict is judged from, and what it says: `HandoffEvidence` in, `Classification` out.

`HandoffEvidence` is one handoff's facts, merged from its evidence spans (the collector's
engine merges them, order-free); `None` means "no evidence yet". `Classification` is the
verdict, the boundary it failed at, why, and the safe next step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .. import semconv as sc

DEFAULT_GRACE_SECONDS = 30.0
"""How long a requested destination has to be admitted before `destination_not_started`
(the collector's and the recorder's `--grace-seconds` default)."""


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
    task_state: str | None = None
    """`a2a.task.state`, latest (a terminal state beats others): a handoff sent to another
    service over A2A. `rejected` is the receiver refusing the contract; `failed` and
    `canceled` end the remote leg without a result."""


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


def grace_ns(grace_seconds: float) -> int:
    """The grace window in nanoseconds, rounded one way wherever it is compared."""
    return int(grace_seconds * 1e9)


def silent_before(now_ns: int, grace_seconds: float) -> int:
    """The instant before which a request not yet admitted (or a run gone silent) has
    outlived the grace window at `now_ns`: the SQL's `$stuck_before`."""
    return now_ns - grace_ns(grace_seconds)


def fail(verdict: str, why: str, reason: str | None = None) -> Classification:
    """A failure verdict with its boundary; the next step `reason` calls for, if any."""
    step = sc.REASON_NEXT_STEPS.get(reason or "", "")
    return Classification(verdict, sc.VERDICT_BOUNDARY.get(verdict), why, step)


def worst(verdicts: Iterable[str]) -> str:
    """The worst verdict by precedence; `healthy` for none."""
    return min(verdicts, key=lambda v: sc.RANK.get(v, len(sc.PRECEDENCE)), default=sc.HEALTHY)
