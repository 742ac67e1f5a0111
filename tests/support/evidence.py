"""The one evidence vocabulary of the tests: which contract attributes each evidence span
carries, in `semconv` names, and `Run`, one run's evidence recorded on a real sender.

The attribute builders return plain dicts, so every way a test delivers spans — the real
SDK (`support.collector.OTLPSender`, `Run` below), hand-built OTLP (`support.otlp`), rows
straight into the store (tests/collector/test_engine.py), a dashboard scenario — says a
handoff the same way. An optional value left as None is left out (a shim that does not
know it does not send it); `extra` attributes (`**{sc.X: value}`) are added as given.
"""

from __future__ import annotations

from typing import Any

from handoffscope.instrumentation import semconv as sc

S = 10**9


def _given(attrs: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in attrs.items() if v is not None}, **extra}


def request(
    frm: str,
    to: str,
    *,
    turn: int | None = None,
    fingerprint: str | None = None,
    state_version: int | None = None,
    declared: bool | None = True,
    **extra: Any,
) -> dict[str, Any]:
    """`handoff.request`: who hands to whom (both always set, None included: a test may
    delete one), on which turn, with which task and state."""
    return {
        sc.FROM_AGENT: frm,
        sc.TO_AGENT: to,
        **_given(
            {
                sc.ROUTE_DECLARED: declared,
                sc.TURN: turn,
                sc.FINGERPRINT: fingerprint,
                sc.STATE_VERSION: state_version,
            },
            extra,
        ),
    }


def request_attributes(run_id: str, handoff_id: str, **extra: Any) -> dict[str, Any]:
    """A healthy `handoff.request`'s full attributes: ids, a declared route, turn 1,
    state 1 and a tool call id (what hardening tests mix with spans that break rules)."""
    return {
        sc.RUN_ID: run_id,
        sc.HANDOFF_ID: handoff_id,
        **request(
            "triage",
            "billing",
            turn=1,
            state_version=1,
            **{sc.TOOL_CALL_ID: f"call-{handoff_id}", **extra},
        ),
    }


def accept(
    *, started: bool | None = True, rejection: str | None = None, **extra: Any
) -> dict[str, Any]:
    """`handoff.accept`: the destination started (or refused, with a reason)."""
    return _given({sc.DESTINATION_STARTED: started, sc.REJECTION_REASON: rejection}, extra)


def wait(
    *,
    owner: str | None = "ops-lead",
    reason: str = "refund_over_limit",
    resume_token: str = "tok-1",
    persisted: bool = True,
    deadline: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """`handoff.wait`: a checkpoint on a person (`deadline` in ns since the epoch)."""
    return _given(
        {
            sc.WAIT_OWNER: owner,
            sc.WAIT_REASON: reason,
            sc.WAIT_RESUME_TOKEN_ID: resume_token,
            sc.WAIT_STATE_PERSISTED: persisted,
            sc.WAIT_DEADLINE: deadline,
        },
        extra,
    )


def outcome(
    result: str, *, verifier: str = "tests", receipt: str | None = None, **extra: Any
) -> dict[str, Any]:
    """`handoff.outcome`: what a verifier found."""
    return _given(
        {sc.OUTCOME_RESULT: result, sc.OUTCOME_VERIFIER: verifier, sc.OUTCOME_RECEIPT_ID: receipt},
        extra,
    )


def run_status(status: str, **extra: Any) -> dict[str, Any]:
    """`handoff.run`: the run started, or ended with `status`."""
    return {sc.RUN_STATUS: status, **extra}


class Run:
    """Evidence spans of one run, recorded on a sender (`OTLPSender`) at `at` seconds after
    `t0` (ns), each lasting `dur` seconds."""

    def __init__(self, sender: Any, run_id: str, t0: int) -> None:
        self.sender, self.run_id, self.t0 = sender, run_id, t0

    def span(
        self, name: str, hid: str | None = None, *, at: float = 0.0, dur: float = 0.01, **attrs
    ) -> Any:
        a = {sc.RUN_ID: self.run_id, **({sc.HANDOFF_ID: hid} if hid else {}), **attrs}
        start = self.t0 + int(at * S)
        return self.sender.emit(name, a, start_time=start, end_time=start + int(dur * S))

    def request(
        self, hid, frm, to, *, at=0.0, turn=None, fp="fp1", sv=1, declared=True, **attrs
    ) -> Any:
        a = request(frm, to, turn=turn, fingerprint=fp, state_version=sv, declared=declared)
        return self.span(sc.SPAN_REQUEST, hid, at=at, **{**a, **attrs})

    def accept(self, hid, *, at=1.0, started=True, **attrs) -> Any:
        return self.span(sc.SPAN_ACCEPT, hid, at=at, **accept(started=started, **attrs))

    def transfer(self, hid, *, at=0.5, **attrs) -> Any:
        return self.span(sc.SPAN_TRANSFER, hid, at=at, **attrs)

    def wait(self, hid, *, at=2.0, deadline: int | None, owner: str | None = "ops-lead", **attrs):
        return self.span(sc.SPAN_WAIT, hid, at=at, **wait(owner=owner, deadline=deadline, **attrs))

    def status(self, status, *, at=0.0, dur=0.01, **attrs) -> Any:
        return self.span(sc.SPAN_RUN, at=at, dur=dur, **run_status(status, **attrs))

    def started(self, *, at: float = 0.0) -> Any:
        return self.status(sc.RUN_STATUS_STARTED, at=at)

    def ended(self, status: str = sc.RUN_STATUS_COMPLETED, *, at: float = 5.0) -> Any:
        return self.status(status, at=at)

    def outcome(self, result, hid=None, *, at=5.0, verifier="task_check") -> Any:
        return self.span(sc.SPAN_OUTCOME, hid, at=at, **outcome(result, verifier=verifier))

    def handoff(self, hid: str, frm: str, to: str, *, at=0.0, fp="fp1", sv=1) -> None:
        """A declared request and its accept 0.1 s later."""
        self.request(hid, frm, to, at=at, fp=fp, sv=sv)
        self.accept(hid, at=at + 0.1)

    def rejected(self, hid: str, frm: str, to: str, reason: str, *, at: float = 0.0) -> None:
        """A declared request its destination refused (`reason`) 0.1 s later."""
        self.request(hid, frm, to, at=at, fp=None, sv=None)
        self.accept(hid, at=at + 0.1, started=False, **{sc.REJECTION_REASON: reason})

    def loop(self, *, at: float = 0.0) -> None:
        """A → B → A → B with the same fingerprint and state: the engine's loop."""
        self.handoff("l1", "planner", "coder", at=at)
        self.handoff("l2", "coder", "planner", at=at + 0.2)
        self.handoff("l3", "planner", "coder", at=at + 0.4)
        self.handoff("l4", "coder", "planner", at=at + 0.6)
