"""validate_contract(): the 8-case matrix of article 000, plus no_budget / vague_goal (article 001)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import HandoffRecorder, validate_contract
from handoffscope.instrumentation import semconv as sc

RECEIVER_TOOLS = {"refund.create", "ticket.update"}
ARTIFACTS = {"chk-42", "art-7"}


def contract(**changes: Any) -> dict[str, Any]:
    c: dict[str, Any] = {
        "version": 1,
        "task_id": "T-1",
        "handoff_id": "h-1",
        "next_objective": "Issue the refund for the duplicate charge",
        "confirmed_state": "ready",
        "state_version": 7,
        "evidence": [
            {"kind": "check", "reference": "chk-42"},
            {"kind": "artifact", "reference": "art-7"},
        ],
        "authority": {
            "allowed_tools": ["refund.create"],
            "forbidden_actions": ["refund.over_limit"],
        },
        "acceptance": ["refund id recorded on the ticket"],
        "recovery": {"on_reject": "repair", "resume_from": None},
        "budget": {"remaining_calls": 5},
    }
    c.update(changes)
    return c


def check(c: Any, **kw: Any):
    args: dict[str, Any] = dict(
        expected_task_id="T-1",
        current_state_version=7,
        receiver_tools=RECEIVER_TOOLS,
        evidence_exists=ARTIFACTS.__contains__,
        confirmed_handoffs=set(),
    )
    args.update(kw)
    return validate_contract(c, **args)


def without(key: str) -> dict[str, Any]:
    c = contract()
    del c[key]
    return c


# The matrix of article 000 ("Como testar uma fronteira de handoff?"), one row per case.
MATRIX = [
    ("valid package with every reference available", contract(), {}, None, ()),
    ("required field missing", without("acceptance"), {}, "invalid", ("acceptance",)),
    ("task id from another run", contract(task_id="T-999"), {}, "invalid", ("task_id",)),
    (
        "state version older than current",
        contract(state_version=5),
        {},
        "stale",
        ("state_version",),
    ),
    (
        "tool outside the receiver's authority",
        contract(
            authority={"allowed_tools": ["refund.create", "payout.send"], "forbidden_actions": []}
        ),
        {},
        "unauthorized",
        ("authority.allowed_tools",),
    ),
    (
        "evidence points to a removed artifact",
        contract(),
        {"evidence_exists": {"chk-42"}.__contains__},
        "stale",
        ("evidence",),
    ),
    (
        "transfer repeated after confirmation",
        contract(),
        {"confirmed_handoffs": {"h-1"}},
        "stale",
        ("handoff_id",),
    ),
]


@pytest.mark.parametrize(
    ("case", "c", "kw", "reason", "fields"), MATRIX, ids=[m[0] for m in MATRIX]
)
def test_matrix(
    case: str, c: dict[str, Any], kw: dict[str, Any], reason: str | None, fields: tuple[str, ...]
) -> None:
    result = check(c, **kw)
    assert result.accepted is (reason is None), case
    assert result.reason == reason
    assert result.fields == fields


@pytest.mark.parametrize(
    ("reason", "on_reject", "expected_step"),
    [
        ("invalid", "repair", "repair"),
        ("stale", "repair", "repair"),
        ("unauthorized", "escalate", "escalate"),
        ("unauthorized", "stop", "stop"),
    ],
)
def test_rejection_follows_the_recovery_policy(
    reason: str, on_reject: str, expected_step: str
) -> None:
    """Case 8: a rejection produces repair, escalation or stop as the contract's policy says."""
    base = contract(recovery={"on_reject": on_reject, "resume_from": None})
    bad = {
        "invalid": dict(task_id="T-other"),
        "stale": dict(state_version=1),
        "unauthorized": dict(authority={"allowed_tools": ["payout.send"], "forbidden_actions": []}),
    }[reason]
    base.update(bad)
    result = check(base)
    assert (result.reason, result.next_step) == (reason, expected_step)


def test_no_budget_and_vague_goal() -> None:
    assert check(contract(budget={"remaining_calls": 0})).reason == "no_budget"
    assert check(contract(next_objective="fix it")).reason == "vague_goal"
    assert check(contract(next_objective="   ")).reason == "invalid"


def test_unsupported_version_and_garbage_are_invalid() -> None:
    assert check(contract(version=2)).fields == ("version",)
    assert check("not a contract").reason == "invalid"
    assert check(None).reason == "invalid"
    weird = contract(evidence=[{"kind": "rumour", "reference": "x"}], authority="all")
    assert check(weird).fields == ("evidence", "authority")


def test_missing_context_keys_are_named_not_valued() -> None:
    result = check(
        contract(),
        required_keys=["order_id", "consent_status"],
        context={"order_id": "SECRET-VALUE"},
    )
    assert result.missing_keys == ("consent_status",)
    assert result.verdict == sc.CONTEXT_INCOMPLETE
    assert not result.accepted


def test_records_the_accept_span(recorder: HandoffRecorder, exporter: InMemorySpanExporter) -> None:
    ok = check(contract(), recorder=recorder, run_id="r", handoff_id="h-1", agent="refunds")
    bad = check(
        contract(task_id="T-2"), recorder=recorder, run_id="r", handoff_id="h-2", agent="refunds"
    )
    assert ok.accepted and ok.verdict == sc.HEALTHY
    assert bad.verdict == sc.CONTRACT_REJECTED
    accepted, rejected = exporter.get_finished_spans()
    assert accepted.name == rejected.name == sc.SPAN_ACCEPT
    assert accepted.attributes[sc.DESTINATION_STARTED] is True
    assert rejected.attributes[sc.REJECTION_REASON] == "invalid"
    assert rejected.attributes[sc.REJECTION_FIELDS] == ("task_id",)
    assert "T-2" not in str(dict(rejected.attributes))


def test_does_not_mutate_the_contract() -> None:
    c = contract()
    before = copy.deepcopy(c)
    check(c)
    assert c == before
