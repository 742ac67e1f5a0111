"""What an agent app's handoffs look like through the shim's recorder, for the tests (and
the benchmarks) that need the shim busy rather than any particular verdict."""

from __future__ import annotations

from typing import Any


def record_handoff(recorder: Any, run_id: str, i: int) -> list[bool]:
    """Handoff `h{i}` of `run_id` as an adapter records it — request (turn `i % 10 + 1`,
    state version `i`), transfer of control, accept — returning each call's result."""
    handoff_id = f"h{i}"
    return [
        recorder.handoff_requested(
            run_id,
            handoff_id,
            from_agent="triage",
            to_agent="billing",
            turn=i % 10 + 1,
            state_version=i,
            route_declared=True,
            tool_call_id=f"call-{i}",
        ),
        recorder.handoff_transferred(
            run_id,
            handoff_id,
            goto="billing",
            control_before="triage",
            control_after="billing",
            tool_call_closed=True,
        ),
        recorder.handoff_accepted(run_id, handoff_id, agent="billing"),
    ]
