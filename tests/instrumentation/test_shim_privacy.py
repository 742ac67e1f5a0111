"""Sentinel strings planted in every free-text argument never reach the exported OTLP bytes."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import HandoffRecorder, fingerprint, validate_contract

SENTINEL = "SENTINEL-7c1d"


def planted(where: str) -> str:
    # Content looks like content: sentences, with the sentinel inside.
    return f"Please refund order 1001 for Ana ({where}) {SENTINEL}"


def test_no_sentinel_in_exported_bytes(
    recorder: HandoffRecorder, exporter: InMemorySpanExporter
) -> None:
    recorder.run_started(
        "run-1", agent="triage", prompt=planted("prompt"), instructions=planted("instructions")
    )
    recorder.handoff_requested(
        "run-1",
        "h1",
        from_agent="triage",
        to_agent="billing",
        fingerprint=fingerprint(planted("task"), {"note": planted("state")}),
        reason=planted("reason"),
        tool_arguments=planted("tool args"),
        messages=[planted("message 1"), planted("message 2")],
        required_keys=["order_id", planted("key name")],
    )
    recorder.handoff_transferred("run-1", "h1", goto="billing", tool_output=planted("tool output"))
    validate_contract(
        {
            "version": 1,
            "task_id": "T-1",
            "next_objective": planted("objective"),
            "confirmed_state": "ready",
            "evidence": [{"kind": "check", "reference": planted("evidence ref")}],
            "authority": {"allowed_tools": [planted("tool")], "forbidden_actions": []},
            "acceptance": [planted("acceptance")],
            "recovery": {"on_reject": "repair", "resume_from": None},
        },
        expected_task_id="T-1",
        receiver_tools={"refund.create"},
        required_keys=["order_id"],
        context={"order_id": planted("context value")},
        recorder=recorder,
        run_id="run-1",
        handoff_id="h1",
        agent="billing",
    )
    recorder.wait_checkpointed(
        "run-1",
        owner=planted("owner"),
        reason=planted("wait reason"),
        resume_token_id="tok-1",
        state_persisted=True,
    )
    recorder.outcome_verified(
        "run-1",
        planted("verifier"),
        True,
        receipt_id=planted("receipt"),
        output=planted("final answer"),
    )
    recorder.run_ended(
        "run-1", "completed", final_agent="billing", final_output=planted("model output")
    )

    spans = exporter.get_finished_spans()
    assert len(spans) == 7
    wire = encode_spans(spans).SerializeToString()
    assert b"run-1" in wire and b"billing" in wire  # the evidence did go out
    assert SENTINEL.encode() not in wire
    assert b"Please refund" not in wire
