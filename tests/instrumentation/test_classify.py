"""classify(): every verdict of DESIGN §4, and every precedence pair."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace

import pytest

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.classify import (
    HandoffEvidence,
    HandoffStep,
    classify,
    find_loops,
    worst,
)

NOW = 2_000_000_000 * 10**9
SEC = 10**9


def green() -> HandoffEvidence:
    """A handoff where every boundary passed and the result was verified."""
    return HandoffEvidence(
        run_id="r",
        handoff_id="h",
        from_agent="triage",
        to_agent="billing",
        first_seen_ns=NOW - 5 * SEC,
        requested=True,
        route_declared=True,
        route_goto="billing",
        control_before="triage",
        control_after="billing",
        tool_call_id="call_1",
        tool_call_closed=True,
        required_keys=("order_id",),
        destination_started=True,
        claims_done=True,
        outcome_result="pass",
    )


def wait(ev: HandoffEvidence, **kw: object) -> HandoffEvidence:
    """Open a wait with all five facts, keeping facts an earlier mutation already set."""
    facts: dict[str, object] = {"wait_seen": True}
    if not ev.wait_seen:
        facts.update(
            wait_owner="ops-lead",
            wait_reason="refund_over_limit",
            wait_deadline_ns=NOW + 600 * SEC,
            wait_resume_token_id="tok-1",
            wait_state_persisted=True,
        )
    facts.update(kw)
    return replace(ev, **facts)  # type: ignore[arg-type]


FAILURES: dict[str, Callable[[HandoffEvidence], HandoffEvidence]] = {
    sc.ROUTE_REJECTED: lambda e: replace(e, route_declared=False),
    sc.STALE_CONTROL: lambda e: replace(e, control_after="triage"),
    sc.OPEN_TOOL_PROTOCOL: lambda e: replace(e, tool_call_closed=False),
    sc.CONTEXT_INCOMPLETE: lambda e: replace(e, missing_keys=("order_id",)),
    sc.CONTRACT_REJECTED: lambda e: replace(e, rejection_reason=sc.REJECTION_STALE),
    sc.DESTINATION_NOT_STARTED: lambda e: replace(
        e, destination_started=None, first_seen_ns=NOW - 60 * SEC
    ),
    sc.LOOP: lambda e: replace(e, loop=True),
    sc.FALSE_COMPLETE: lambda e: replace(e, claims_done=True, outcome_result=None),
    sc.APPROVAL_OVERDUE: lambda e: wait(e, wait_deadline_ns=NOW - SEC),
    sc.WAIT_UNCERTAIN: lambda e: wait(e, wait_owner=None),
}


def judge(ev: HandoffEvidence) -> str:
    return classify(ev, now_ns=NOW, grace_seconds=30).verdict


def test_green_is_healthy() -> None:
    c = classify(green(), now_ns=NOW)
    assert (c.verdict, c.failed_boundary, c.healthy) == (sc.HEALTHY, None, True)


@pytest.mark.parametrize("verdict", list(FAILURES))
def test_each_failure_verdict(verdict: str) -> None:
    c = classify(FAILURES[verdict](green()), now_ns=NOW, grace_seconds=30)
    assert c.verdict == verdict
    assert c.failed_boundary == sc.VERDICT_BOUNDARY[verdict]
    assert c.why and not c.healthy


@pytest.mark.parametrize(
    ("earlier", "later"),
    [(a, b) for a, b in itertools.combinations(sc.PRECEDENCE[:10], 2)],
)
def test_earlier_failure_is_never_hidden(earlier: str, later: str) -> None:
    ev = FAILURES[earlier](FAILURES[later](green()))
    assert judge(ev) == earlier
    ev = FAILURES[later](FAILURES[earlier](green()))
    assert judge(ev) == earlier


def test_route_goto_mismatch_is_route_rejected() -> None:
    assert judge(replace(green(), route_goto="refunds")) == sc.ROUTE_REJECTED


def test_control_before_not_sender_is_stale() -> None:
    assert judge(replace(green(), control_before="supervisor")) == sc.STALE_CONTROL


def test_explicit_not_started_is_immediate() -> None:
    ev = replace(green(), destination_started=False, first_seen_ns=NOW)
    assert judge(ev) == sc.DESTINATION_NOT_STARTED


def test_in_flight_within_grace_then_not_started_after() -> None:
    ev = replace(
        green(),
        destination_started=None,
        first_seen_ns=NOW - 10 * SEC,
        claims_done=False,
        outcome_result=None,
    )
    assert judge(ev) == sc.IN_FLIGHT
    later = classify(ev, now_ns=NOW + 25 * SEC, grace_seconds=30)
    assert later.verdict == sc.DESTINATION_NOT_STARTED


def test_waiting_on_approval_then_overdue_then_decided() -> None:
    ev = wait(replace(green(), claims_done=False, outcome_result=None))
    assert judge(ev) == sc.WAITING_ON_APPROVAL
    assert classify(ev, now_ns=NOW + 601 * SEC).verdict == sc.APPROVAL_OVERDUE
    assert judge(replace(ev, wait_decision=sc.WAIT_DECISION_APPROVED)) == sc.HEALTHY
    assert judge(replace(ev, wait_decision=sc.WAIT_DECISION_EXPIRED)) == sc.APPROVAL_OVERDUE


@pytest.mark.parametrize(
    "missing",
    [
        {"wait_owner": None},
        {"wait_reason": None},
        {"wait_deadline_ns": None},
        {"wait_resume_token_id": None},
        {"wait_state_persisted": False},
    ],
)
def test_each_missing_wait_fact_is_uncertain(missing: dict[str, object]) -> None:
    assert judge(wait(green(), **missing)) == sc.WAIT_UNCERTAIN


def test_claims_done_with_failed_verifier_is_false_complete() -> None:
    assert judge(replace(green(), outcome_result="fail")) == sc.FALSE_COMPLETE


def test_claims_done_while_waiting_is_false_complete() -> None:
    ev = wait(replace(green(), outcome_result=None), claims_done=True)
    assert judge(ev) == sc.FALSE_COMPLETE


def test_worst() -> None:
    assert worst([sc.HEALTHY, sc.LOOP, sc.IN_FLIGHT]) == sc.LOOP
    assert worst([]) == sc.HEALTHY


def steps(*edges: tuple[str, str, int]) -> list[HandoffStep]:
    return [HandoffStep(f"h{i}", a, b, "fp", sv) for i, (a, b, sv) in enumerate(edges, 1)]


def test_ping_pong_without_progress_is_a_loop() -> None:
    report = find_loops(steps(("A", "B", 1), ("B", "A", 1), ("A", "B", 1)))
    assert report.looping_ids == {"h2", "h3"}
    assert report.cycle == ["A", "B", "A"]
    assert report.repeats == 2


def test_cycle_of_three_without_progress_is_a_loop() -> None:
    report = find_loops(steps(("A", "B", 1), ("B", "C", 1), ("C", "A", 1)))
    assert report.looping_ids == {"h3"}
    assert report.cycle == ["A", "B", "C", "A"]


def test_retry_with_state_progress_is_not_a_loop() -> None:
    report = find_loops(steps(("A", "B", 1), ("B", "A", 2), ("A", "B", 3), ("B", "C", 4)))
    assert report.looping_ids == set()
    assert report.cycle == []


def test_repeat_key_is_a_loop_even_after_a_detour() -> None:
    run = [
        HandoffStep("h1", "A", "B", "fp", 1),
        HandoffStep("h2", "B", "C", "other", 2),
        HandoffStep("h3", "C", "B", "fp", 1),
    ]
    assert find_loops(run).looping_ids == {"h3"}


def test_loop_cut_by_the_turn_limit_stays_a_loop() -> None:
    """The last handoff of a ping-pong stopped at max_turns never starts: still a loop."""
    last = replace(
        green(),
        destination_started=None,
        first_seen_ns=NOW - 60 * SEC,
        claims_done=False,
        outcome_result=None,
    )
    assert judge(replace(last, loop=True, run_stopped=True)) == sc.LOOP
    # without the turn limit, a missing admission is still rule 6
    assert judge(replace(last, loop=True)) == sc.DESTINATION_NOT_STARTED
    # a run stopped by its limit without cycling: the destination was cut off by the
    # run's failure, not by routing or admission
    assert judge(replace(last, run_stopped=True)) == sc.RUN_FAILED


def test_unadmitted_destination_of_an_ended_run_needs_no_grace() -> None:
    """A dropped parallel Send: the run completed and the destination never ran."""
    last = replace(
        green(),
        destination_started=None,
        first_seen_ns=NOW - SEC,  # well inside the grace window
        claims_done=False,
        outcome_result=None,
    )
    assert judge(last) == sc.IN_FLIGHT
    assert judge(replace(last, run_status=sc.RUN_STATUS_COMPLETED)) == sc.DESTINATION_NOT_STARTED
    assert judge(replace(last, run_status=sc.RUN_STATUS_FAILED)) == sc.RUN_FAILED
    assert judge(replace(last, run_status=sc.RUN_STATUS_INTERRUPTED)) == sc.IN_FLIGHT  # resumable


def test_ignored_and_missing_handoffs_say_what_happened() -> None:
    ignored = replace(
        green(), route_goto="billing", to_agent="refunds", reason=sc.REASON_IGNORED_SAME_TURN
    )
    c = classify(ignored, now_ns=NOW)
    assert c.verdict == sc.ROUTE_REJECTED and "one handoff per turn" in c.next_step
    assert "restore a declared route" not in c.next_step
    missing = replace(green(), reason=sc.REASON_TOOL_MISSING, route_declared=False)
    c = classify(missing, now_ns=NOW)
    assert c.verdict == sc.ROUTE_REJECTED and "does not have" in c.why


def test_a_run_stopped_while_cycling_is_a_loop_whichever_handoff_was_last() -> None:
    # progress every hop (state_version moves), so neither the key nor the cycle rule fires
    hops = [
        HandoffStep("1", "sup", "math", "fp", 1),
        HandoffStep("2", "math", "sup", "fp", 2),
        HandoffStep("3", "sup", "math", "fp", 3),
        HandoffStep("4", "math", "sup", "fp", 4),
    ]
    assert find_loops(hops).looping_ids == set()
    cut = find_loops(hops, stopped=True)
    assert cut.looping_ids == {"2", "3", "4"} and cut.cycle[0] == cut.cycle[-1] == "sup"
    # stopped while going somewhere new: not cycling
    onward = [*hops[:2], HandoffStep("3", "sup", "writer", "fp", 3)]
    assert find_loops(onward, stopped=True).looping_ids == set()


def test_a_refused_last_request_after_a_return_is_cut_while_cycling() -> None:
    """A source that names the destination only by its arrival (Strands) leaves the request
    the limit refused with no destination: the run was still going round when it stopped."""
    bounce = [
        HandoffStep("1", "triage", "billing", None, None),
        HandoffStep("2", "billing", "triage", None, None),
        HandoffStep("3", "triage", "billing", None, None),
    ]
    refused = HandoffStep("4", "billing", None, None, None)
    cut = find_loops([*bounce, refused], stopped=True)
    assert cut.looping_ids == {"2", "3", "4"}
    assert cut.cycle == ["billing", "triage", "billing"]
    # not stopped at a limit: no loop is stated from the refusal
    assert find_loops([*bounce, refused]).looping_ids == set()
    # one handoff, then a refused one: no return, so no cycling (a limit, not a loop)
    assert find_loops([bounce[0], refused], stopped=True).looping_ids == set()


def test_a_run_ended_with_its_last_return_never_admitted_was_cut_while_cycling() -> None:
    """AutoGen ends a ping-pong stopped by `max_turns` as completed: the limit is unsaid,
    but the last request (back to an agent that already held control, right after another
    return) never ran. That run was going round when it ended."""
    ran = [
        HandoffStep("1", "triage", "billing", admitted=True),
        HandoffStep("2", "billing", "triage", admitted=True),
        HandoffStep("3", "triage", "billing", admitted=True),
    ]
    never = HandoffStep("4", "billing", "triage", admitted=False)
    cut = find_loops([*ran, never], ended=True)
    assert cut.cut_unsaid and cut.looping_ids == {"2", "3", "4"}
    assert cut.cycle[0] == cut.cycle[-1]
    # Not ended (still running): the request may yet be admitted.
    assert find_loops([*ran, never]).looping_ids == set()
    # Admitted, or not known: nothing was cut.
    for last in (replace(never, admitted=True), replace(never, admitted=None)):
        assert not find_loops([*ran, last], ended=True).cut_unsaid
    # One return only (A -> B -> A, the last never ran): a hand-back, not a ping-pong.
    assert not find_loops([ran[0], replace(ran[1], admitted=False)], ended=True).cut_unsaid
    # Onward to a new agent, never admitted: a failed admission, not a loop.
    onward = HandoffStep("4", "billing", "refunds", admitted=False)
    report = find_loops([*ran, onward], ended=True)
    assert not report.cut_unsaid and report.looping_ids == set()


def test_one_handoff_is_judged_as_the_rules_judge_it():
    # find_loops answers a run of one handoff without walking the rules (the judge asks
    # about every run, most hold one); every kind of single step, stopped, ended or not,
    # must get the report the rules give.
    from handoffscope.instrumentation.verdicts.loops import HandoffStep, _search

    agents = (None, "", "A", "B")
    for frm, to, fp, sv, admitted, stopped, ended in itertools.product(
        agents, agents, (None, "f"), (None, 1), (None, True, False), (False, True), (False, True)
    ):
        step = [HandoffStep("h1", frm, to, fp, sv, admitted=admitted)]
        assert find_loops(step, stopped=stopped, ended=ended) == _search(step, stopped, ended), (
            frm,
            to,
            fp,
            sv,
            stopped,
        )
    loops = find_loops([HandoffStep("h1", "A", "A", "f", 1)])
    assert loops.looping_ids == {"h1"}  # the one that can: back to its own sender
