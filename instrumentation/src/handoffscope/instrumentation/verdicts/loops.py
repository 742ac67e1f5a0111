"""Loops across a run's handoffs (docs/architecture.md, Verdicts, rule 7; Progress).

`find_loops(steps)` marks the handoffs that repeat earlier work or close a cycle without
progress, and those of a run cut by its limit while going round; the run's evaluation sets
`HandoffEvidence.loop` from it before each handoff is classified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


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
    if len(steps) == 1 and not (steps[0].from_agent and steps[0].to_agent == steps[0].from_agent):
        # One handoff can only loop back to its own sender (by any of the rules below,
        # stopped or not): most runs hold one, and the judge asks about every run.
        return LoopReport()
    return _search(steps, stopped, ended)


def _search(steps: Sequence[HandoffStep], stopped: bool, ended: bool) -> LoopReport:
    """`find_loops` by its rules, step by step."""
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
