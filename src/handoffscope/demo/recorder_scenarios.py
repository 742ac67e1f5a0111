"""Demo runs through the framework-agnostic recorder and `validate_contract`.

These cover what a custom runtime reports by hand — contract refusals and missing
context at the receiver, a destination that never starts, waits with and without all
five facts, a run that crashes after a good handoff (`run_failed`), and a second service
(`demo-faq`) that has no verifier, whose completions read `unverified` — beside the OpenAI
Agents SDK and LangGraph scenarios, which run through the real framework adapters.
"""

from __future__ import annotations

import random
import time
import uuid
from typing import Any

from handoffscope.instrumentation import HandoffRecorder, fingerprint, validate_contract

AGENTS = ("triage", "billing", "refunds", "escalation")
RECEIVER_TOOLS = {"refund.create", "ticket.update"}

_recorder: HandoffRecorder | None = None
_quiet: HandoffRecorder | None = None


def setup(tracer_provider: object, *, quiet_provider: object | None = None) -> None:
    """Record through the demo's tracer provider (the same interface as the framework modules);
    `quiet_provider` is the service without a verifier."""
    global _recorder, _quiet
    _recorder = HandoffRecorder(tracer_provider)  # type: ignore[arg-type]
    _quiet = HandoffRecorder(quiet_provider) if quiet_provider is not None else None  # type: ignore[arg-type]


KINDS: dict[str, float] = {
    "healthy_custom": 4.0,
    "contract_stale": 1.0,
    "contract_unauthorized": 0.6,
    "context_missing": 1.0,
    "never_started": 0.6,
    "wait_pending": 0.8,
    "wait_overdue": 0.6,
    "wait_uncertain": 0.5,
    "crashed": 0.5,
    "unverified": 1.0,
}


def _contract(task_id: str, state_version: int, tools: list[str]) -> dict[str, Any]:
    return {
        "version": 1,
        "task_id": task_id,
        "next_objective": "Refund the duplicate charge on the customer's last invoice",
        "confirmed_state": "ready",
        "state_version": state_version,
        "evidence": [{"kind": "check", "reference": f"chk-{task_id}"}],
        "authority": {"allowed_tools": tools, "forbidden_actions": ["refund.over_limit"]},
        "acceptance": ["refund id recorded on the ticket"],
        "recovery": {"on_reject": "repair", "resume_from": None},
        "budget": {"remaining_calls": 4},
    }


def run_scenario(kind: str, rng: random.Random) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown scenario kind {kind!r}; known: {', '.join(KINDS)}")
    rec = _recorder or HandoffRecorder()
    if kind == "unverified":
        rec = _quiet or rec
    run_id = f"custom-{uuid.uuid4().hex[:12]}"
    task = f"T-{rng.randrange(10**6)}"
    rec.run_started(run_id, agent="triage")
    hid = "h1"
    sv = rng.randint(2, 9)
    rec.handoff_requested(
        run_id,
        hid,
        from_agent="triage",
        to_agent="refunds",
        turn=1,
        fingerprint=fingerprint(task, sv),
        state_version=sv,
        route_declared=True,
        history_items_forwarded=rng.randint(2, 5),
        history_items_total=rng.randint(8, 20),
        tool_call_id=f"call_{uuid.uuid4().hex[:8]}",
        required_keys=["order_id", "customer_tier"],
        contract_version="1",
        budget_remaining=4,
        reason="refund_request",
        goto="refunds",
        control_before="triage",
        control_after="refunds",
        tool_call_closed=True,
    )
    if kind == "never_started":
        return run_id  # no admission ever: destination_not_started once the grace passes
    context: dict[str, Any] = {"order_id": "o", "customer_tier": "gold"}
    tools = ["refund.create"]
    current = sv
    if kind == "contract_stale":
        current = sv + 2
    elif kind == "contract_unauthorized":
        tools = ["refund.create", "payout.send"]
    elif kind == "context_missing":
        context.pop("customer_tier")
    check = validate_contract(
        _contract(task, sv, tools),
        expected_task_id=task,
        current_state_version=current,
        receiver_tools=RECEIVER_TOOLS,
        required_keys=["order_id", "customer_tier"],
        context=context,
        recorder=rec,
        run_id=run_id,
        handoff_id=hid,
        agent="refunds",
    )
    if check.reason is not None or check.missing_keys:
        rec.run_ended(run_id, "failed", final_agent="refunds", turns=2)
        return run_id
    if kind.startswith("wait_"):
        deadline = time.time() + (
            rng.randint(600, 3600) if kind == "wait_pending" else rng.randint(5, 25)
        )
        rec.wait_checkpointed(
            run_id,
            handoff_id=hid,
            owner=None
            if kind == "wait_uncertain"
            else rng.choice(("ops-lead", "finance-approver")),
            reason="refund_over_limit",
            deadline=deadline,
            resume_token_id=f"tok-{uuid.uuid4().hex[:8]}",
            state_persisted=True,
        )
        rec.run_ended(run_id, "interrupted", final_agent="refunds", turns=2)
        return run_id
    if kind == "crashed":
        # The refund service raised after a clean handoff: nothing earlier explains it.
        rec.run_ended(run_id, "failed", final_agent="refunds", turns=2)
        return run_id
    if kind != "unverified":  # the FAQ service has no verifier to run
        rec.outcome_verified(
            run_id, "refund_recorded", True, receipt_id=f"rcpt-{uuid.uuid4().hex[:8]}"
        )
    rec.run_ended(run_id, "completed", final_agent="refunds", turns=3)
    return run_id
