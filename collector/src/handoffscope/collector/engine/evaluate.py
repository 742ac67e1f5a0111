"""Judging a run: its merged evidence (`evidence.RunState`) in, its facts and every handoff's
verdict timeline out (`RunView`).

Pure and in memory, no I/O. The rules are the verdicts package's (`classify`,
`find_loops`, timelines), never re-implemented here; what this module adds is the run's
context each handoff is judged in (`JudgeContext`): its place in the run, whether it
loops, whether the run's completion claim lands on it, how the run ended, its wait, and
the arrival or sender the run's other spans name for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.verdicts import (
    HandoffEvidence,
    HandoffStep,
    Timeline,
    find_loops,
    handoff_timeline,
    wait_timeline,
    worst_timeline,
)

from .evidence import (
    FAILED_STATUSES,
    TERMINAL_STATUSES,
    F,
    HandoffState,
    RunState,
    outcome_summary,
    pair_arrivals,
    pair_senders,
)
from .usage import Loose, Price, Transfer, Usage, combine, legs, no_price

_FROM, _TO, _CONTROL_AFTER, _STARTED = (
    F["from_agent"],
    F["to_agent"],
    F["control_after"],
    F["destination_started"],
)
_TURN, _FP, _SV, _CLAIMS, _KIND = (
    F["turn"],
    F["fingerprint"],
    F["state_version"],
    F["destination_claims_done"],
    F["kind"],
)
_WAIT_DECISION = F["wait_decision"]
_BUDGET = F["budget_remaining"]


class JudgeContext(NamedTuple):
    """What the run says about one of its handoffs when it is judged. A handoff is judged
    again only when its own evidence or this context changed (`HandoffState.ctx`)."""

    seq: int
    """Its place in the run (1-based, run order)."""
    loop: bool
    """`find_loops` marked it."""
    claims_done: bool
    """The run's (or the destination's) completion claim lands on it."""
    outcome: str | None
    """The verifier result that claim is judged by."""
    service: str | None
    run_stopped: bool
    """The run hit its limit, reported or inferred (`LoopReport.cut_unsaid`)."""
    run_status: str | None
    wait: HandoffState | None
    fallback: HandoffState | None
    """The run-level wait a handoff's wait falls back to for its decision."""
    arrival: str | None
    """The agent whose arrival admitted it (`pair_arrivals`)."""
    sender: str | None
    """The agent that ran before it, when its own spans name no sender (`pair_senders`)."""


def handoff_order(hs: Iterable[HandoffState]) -> list[HandoffState]:
    """Handoffs in run order: by `handoff.turn`, then first-seen time (then id, for ties).

    When some handoffs lack a turn the turns cannot be compared with the others, so
    first-seen time alone orders the run.
    """
    hs = list(hs)
    if len(hs) < 2:
        return hs
    if all(h.vals[_TURN] is not None for h in hs):
        return sorted(hs, key=lambda h: (h.vals[_TURN], h.first_seen_ns or 0, h.handoff_id))
    return sorted(hs, key=lambda h: (h.first_seen_ns or 0, h.handoff_id))


@dataclass
class HandoffView:
    state: HandoffState
    seq: int
    evidence: HandoffEvidence | None
    """The evidence judged, or None when nothing changed since the last evaluation."""


@dataclass
class WaitView:
    state: HandoffState
    evidence: HandoffEvidence
    """A wait whose facts changed: its evidence (agents from its handoff, if any)."""


@dataclass
class RunView:
    """What a run looks like after evaluation: facts for its row, views of its handoffs."""

    service: str | None
    handoffs: list[HandoffView]
    waits: list[WaitView]
    """Waits whose facts changed (their timelines are on their states)."""
    timeline: Timeline
    status: str | None
    final_agent: str | None
    ended_ns: int | None
    started_ns: int | None
    turns: int | None
    current_agent: str | None
    path: list[str]
    loop: bool
    loop_cycle: list[str]
    loop_repeats: int
    false_complete: bool
    failed: bool
    outcome_result: str | None
    verifier: str | None
    pending_approvals: int
    last_handoff_ns: int | None
    handoff_count: int
    delegation_count: int
    unverified: bool
    verification_expected: bool
    unobserved: list[str]
    source: str | None = None
    """`handoff.source` of the run's evidence (None: the shim's own spans)."""
    usage: Usage | None = None
    """Every leg's usage summed (None: no usage reported)."""
    burned: Usage | None = None
    """The loop's: the legs from its first repeat on (None: no loop, or none reported)."""
    budget_remaining: int | None = None
    """`handoff.budget.remaining` of the run's latest request that stated it."""
    budget_total: int | None = None
    """The budget that implies: the model calls up to that request plus what it said was
    left (None: no budget stated, or no calls reported)."""
    start_agent: str | None = None
    """The first agent that ran (docs/semconv.md, "Turns")."""
    first_to_agent: str | None = None
    """Where the run's first handoff went."""


class VerificationPolicy:
    """When is a completed run without a passing verifier a false completion? (docs/architecture.md, Verification)

    When the run declared it (`run.outcome_required`), when its service is named in the
    collector's `--require-outcome`, or once the service has reported any outcome: a run
    that ended at or after the service's first outcome is expected to be verified; one
    that ended before (no verifier existed yet) and has none is `unverified`.
    """

    def __init__(self, required: Iterable[str] = ()) -> None:
        required = set(required)
        self.all = "*" in required
        self.required = frozenset(required - {"*"})
        self.first_outcome: dict[str, int] = {}

    def expects(self, service: str | None, declared: bool, ended_ns: int | None) -> bool:
        if declared or self.all or (service is not None and service in self.required):
            return True
        first = self.first_outcome.get(service or "")
        return first is not None and ended_ns is not None and first <= ended_ns

    def learn(self, seen: dict[str, int]) -> set[str]:
        """Merge a batch's first outcomes; return the services whose first moved earlier."""
        moved = set()
        for svc, t in seen.items():
            old = self.first_outcome.get(svc)
            if old is None or t < old:
                self.first_outcome[svc] = t
                moved.add(svc)
        return moved


_NO_POLICY = VerificationPolicy()


def _open(wait: HandoffState, fallback: HandoffState | None) -> bool:
    """The wait is checkpointed and no decision is known for it."""
    if not wait.wait_open:
        return False
    return fallback is None or fallback.vals[_WAIT_DECISION] is None


def _judge(
    h: HandoffState, run_id: str, ctx: JudgeContext, grace_seconds: float
) -> HandoffEvidence | None:
    """(Re)judge a handoff in its run context; None when the cached verdict still holds."""
    if not h.dirty and ctx == h.ctx:
        return None
    ev = h.evidence(run_id, ctx.wait, ctx.fallback)
    ev.loop, ev.run_stopped, ev.run_status = ctx.loop, ctx.run_stopped, ctx.run_status
    if ctx.arrival is not None:  # admitted by an arrival (pair_arrivals)
        ev.to_agent = ev.to_agent or ctx.arrival
        ev.requested = True
        ev.destination_started = True
    if ctx.sender is not None:  # sent by the agent that ran before it (pair_senders)
        ev.from_agent = ev.from_agent or ctx.sender
    if ctx.claims_done:
        ev.claims_done, ev.outcome_result = True, ctx.outcome
    h.timeline = handoff_timeline(ev, grace_seconds)
    h.ctx, h.dirty = ctx, False
    return ev


def evaluate_run(
    run: RunState,
    grace_seconds: float,
    policy: VerificationPolicy = _NO_POLICY,
    price: Price = no_price,
) -> RunView:
    """Run-level facts and every handoff's verdict timeline, from merged evidence.

    Handoffs (control moves) and delegations (an agent called as a tool) are judged by the
    same rules, but only handoffs make the path, the holder and the run's completion claim;
    loops are found among handoffs (cycles and repeats) and among delegations (repeats).
    """
    service = run.service[-1] if run.service else None
    ordered = handoff_order(run.handoffs.values())
    transfers = [h for h in ordered if (h.vals[_KIND] or sc.KIND_HANDOFF) == sc.KIND_HANDOFF]
    delegations = [h for h in ordered if h.vals[_KIND] == sc.KIND_DELEGATION]
    status_v = run.vals.get("status")
    status = status_v[-1] if status_v else None
    completed = status == sc.RUN_STATUS_COMPLETED
    stopped = status == sc.RUN_STATUS_MAX_TURNS
    terminal = status in TERMINAL_STATUSES
    ended_ns = status_v[0] if terminal and status_v else None

    arrived = pair_arrivals(transfers, run.arrivals)
    # Delegations too: a caller's span may travel apart from its callee's (OpenInference's
    # Agno and smolagents members name their caller only by an ancestor span).
    senders = pair_senders(ordered, run.arrivals)

    def to_of(h: HandoffState) -> str | None:
        return h.vals[_TO] or arrived.get(h.handoff_id or "")

    def from_of(h: HandoffState) -> str | None:
        return h.vals[_FROM] or senders.get(h.handoff_id or "")

    def steps(hs: list[HandoffState]) -> list[HandoffStep]:
        return [
            HandoffStep(
                h.handoff_id or "",
                from_of(h),
                to_of(h),
                h.vals[_FP],
                h.vals[_SV],
                admitted=admitted(h),
            )
            for h in hs
        ]

    def admitted(h: HandoffState) -> bool | None:
        if h.vals[_STARTED] or (h.handoff_id or "") in arrived:
            return True
        # Never heard from (False); a destination that said it did not start is a failure
        # of its own (rule 6), not a sign the run was cut (None: the loop rule does not guess).
        return None if h.vals[_STARTED] is False else False

    report = find_loops(steps(transfers), stopped=stopped, ended=completed)
    # A source that never reports its limit (AutoGen) ends a cut ping-pong as completed:
    # its handoffs are judged as a run stopped while cycling (classify.find_loops).
    stopped = stopped or report.cut_unsaid
    looping = report.looping_ids
    if delegations:
        looping = looping | find_loops(steps(delegations)).looping_ids
    run_result, run_verifier = outcome_summary(run.outcomes)
    expected = policy.expects(service, bool(run.get("outcome_required")), ended_ns)
    # The completion claim is judged where verification is expected, or where a verifier
    # said `fail` (a failing verifier is a false completion whatever the policy).
    claim = completed and (expected or run_result == sc.OUTCOME_FAIL)

    for h in ordered:
        if h.dirty and h.wait_keys:
            for k in h.wait_keys:  # a wait's row names its handoff's agents
                run.waits[k].dirty = True
    views: list[HandoffView] = []
    dest_false_claim = False
    last = transfers[-1] if transfers else None
    path: list[str] = []
    last_sent: tuple | None = None
    holder = None
    unobserved: set[str] = set()
    for seq, h in enumerate(ordered):
        v = h.vals
        wait = run.latest_wait(h)
        fallback = run.fallback(wait) if wait is not None else None
        own = outcome_summary(h.outcomes)[0] if h.outcomes else None
        if claim and h is last:
            # The run's completion claim lands on its last handoff, judged by the
            # run's verifiers (outcomes without handoff.id belong to the run).
            claims, outcome = True, run_result
        elif v[_CLAIMS] and wait is not None and _open(wait, fallback):
            claims, outcome = True, own
            dest_false_claim = dest_false_claim or own != sc.OUTCOME_PASS
        else:
            claims, outcome = False, own
        hid = h.handoff_id or ""
        ctx = JudgeContext(
            seq + 1,
            h.handoff_id in looping,
            claims,
            outcome,
            service,
            stopped,
            status,
            wait,
            fallback,
            arrived.get(hid),
            senders.get(hid),
        )
        views.append(HandoffView(h, seq + 1, _judge(h, run.run_id, ctx, grace_seconds)))
        unobserved.update(v[F["unobserved"]] or ())
        if (v[_KIND] or sc.KIND_HANDOFF) != sc.KIND_HANDOFF:
            continue
        frm, to = from_of(h), to_of(h)
        started = v[_STARTED] or (h.handoff_id or "") in arrived
        # The path lists agents that ran: a sender ran; a destination once admitted. A
        # sender's parallel handoffs of one turn are one visit to it.
        sent = (v[_TURN], frm)
        if frm and (not path or path[-1] != frm) and (v[_TURN] is None or sent != last_sent):
            path.append(frm)
        last_sent = sent
        if to and started:
            path.append(to)
        if v[_CONTROL_AFTER]:
            holder = v[_CONTROL_AFTER]
        elif started and to:
            holder = to

    changed_waits: list[WaitView] = []
    pending = 0
    timelines = [h.timeline for h in ordered]
    for w in run.waits.values():
        if run.loose(w):
            if w.dirty:
                w.dirty = False
                for k in run.tokened.get(w.handoff_id, ()):
                    run.waits[k].dirty = True  # judged below: this decision may close them
            continue
    for w in run.waits.values():
        if run.loose(w):
            continue
        if w.dirty:
            ev = w.evidence(run.run_id, fallback=run.fallback(w))
            sender = run.handoffs.get(w.handoff_id) if w.handoff_id is not None else None
            if sender is not None:
                ev.from_agent, ev.to_agent = sender.vals[_FROM], sender.vals[_TO]
            w.wait_timeline = wait_timeline(ev)
            if w.handoff_id is None:
                w.timeline = w.wait_timeline
            w.dirty = False
            changed_waits.append(WaitView(w, ev))
        if w.wait_timeline is not None:
            pending += 1
            if w.handoff_id is None:
                timelines.append(w.wait_timeline)

    false_complete = (claim and run_result != sc.OUTCOME_PASS) or dest_false_claim
    unverified = completed and not expected and run_result is None and not dest_false_claim
    statics = []
    if looping:
        statics.append(sc.LOOP)
    if false_complete:
        statics.append(sc.FALSE_COMPLETE)
    if status in FAILED_STATUSES:
        statics.append(sc.RUN_FAILED)
    if unverified:
        statics.append(sc.UNVERIFIED)
    timeline = worst_timeline(statics, timelines)  # type: ignore[arg-type]

    if holder is None and transfers:
        holder = from_of(transfers[0])
    # Where the run started: its start span's agent, else its first sender. Until a handoff
    # moves the work, the agent it started at holds it.
    start_agent = run.get("start_agent") or (from_of(transfers[0]) if transfers else None)
    if holder is None:
        holder = start_agent
    final_agent = run.get("final_agent")
    if terminal and final_agent:
        holder = final_agent
    turns = run.get("turns")
    if turns is None and transfers:
        turns = len(transfers)

    # What each leg cost (engine/usage.py). A handoff's row carries its destination's
    # leg, which later spans (the next request, the run's end) report: a changed leg
    # rewrites the row even when the handoff's own evidence and context did not change.
    # A run that reported no usage skips it all (most of a judge's runs, without usage).
    spent_total = burned = None
    budget = _budget(transfers)
    if run.has_usage:
        spent = _legs(run, transfers, delegations, from_of, to_of, holder, price)
        by_state = {id(v.state): v for v in views}
        for i, h in enumerate(transfers):
            if spent[i + 1] != h.leg:
                h.leg = spent[i + 1]
                hv = by_state[id(h)]
                if hv.evidence is None and h.ctx is not None:
                    h.dirty = True
                    hv.evidence = _judge(h, run.run_id, JudgeContext(*h.ctx), grace_seconds)
        spent_total = combine(spent)
        first_repeat = next(
            (i for i, h in enumerate(transfers) if h.handoff_id in report.looping_ids), None
        )
        if first_repeat is not None:
            burned = combine(spent[first_repeat + 1 :])
        if budget is not None:
            # The request at transfer i ended the sender's leg: legs 0..i came before it.
            before = combine(spent[: budget[0] + 1])
            if before is not None and before.model_calls is not None:
                budget = (budget[0], budget[1], before.model_calls + budget[1])
    return RunView(
        service=service,
        handoffs=views,
        waits=changed_waits,
        timeline=timeline,
        status=status,
        final_agent=final_agent,
        ended_ns=ended_ns,
        started_ns=run.get("started") or run.first_seen_ns,
        turns=turns,
        current_agent=holder,
        path=path,
        loop=bool(looping),
        loop_cycle=list(report.cycle),
        loop_repeats=len(looping),
        false_complete=false_complete,
        failed=status in FAILED_STATUSES,
        outcome_result=run_result,
        verifier=run_verifier,
        pending_approvals=pending,
        last_handoff_ns=max((h.first_seen_ns or 0 for h in transfers), default=None),
        handoff_count=len(transfers),
        delegation_count=len(delegations),
        unverified=unverified,
        verification_expected=expected,
        unobserved=sorted(unobserved),
        source=run.get("source"),
        usage=spent_total,
        burned=burned,
        budget_remaining=budget[1] if budget else None,
        budget_total=budget[2] if budget else None,
        start_agent=start_agent or (path[0] if path else None) or final_agent or holder,
        first_to_agent=to_of(transfers[0]) if transfers else None,
    )


def _budget(transfers: list[HandoffState]) -> tuple[int, int, int | None] | None:
    """(index, remaining, None) of the latest transfer whose request stated a budget."""
    for i in range(len(transfers) - 1, -1, -1):
        left = transfers[i].vals[_BUDGET]
        if left is not None:
            return (i, left, None)
    return None


def _legs(run, transfers, delegations, from_of, to_of, holder, price) -> list[Usage | None]:
    """Each leg's usage ([the first leg, then the leg each transfer gave]), from the run's
    reports: the transfers' requests, a delegation's (its caller's leg), the loose ones."""
    loose: list[Loose] = list(run.usage.values()) if run.usage else []
    for h in delegations:
        if h.usage is not None:
            loose.append(Loose(h.usage[0][0], from_of(h), h.usage[1]))
    return legs(
        [Transfer(from_of(h), to_of(h), h.first_seen_ns or 0, _sent(h.usage)) for h in transfers],
        loose,
        holder,
        price,
    )


def _sent(usage: tuple | None) -> tuple | None:
    """(report, start) of a request's usage, as `Transfer.sent` takes it."""
    return None if usage is None else (usage[1], usage[0][0])
