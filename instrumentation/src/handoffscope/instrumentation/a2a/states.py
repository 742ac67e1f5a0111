"""The A2A task state of an a2a-sdk object, in the contract's spelling (`sc.A2A_STATES`).

a2a-sdk 1.x carries states as the protobuf enum `TaskState` (`TASK_STATE_INPUT_REQUIRED`);
the A2A protocol's JSON binding, and the wire contract, spell them `input-required`. The
mapping is by NAME, not by number, so a state the SDK adds later reads `unknown` instead of
being mistaken for another.
"""

from __future__ import annotations

from typing import Any

from .. import semconv as sc

_PREFIX = "TASK_STATE_"


def state_name(value: Any) -> str:
    """`sc.A2A_*` for a `TaskState` enum value (an int) or an already-spelled string."""
    try:
        if isinstance(value, str):
            name = value
        else:
            from a2a.types import TaskState

            name = TaskState.Name(int(value))
        spelled = name.removeprefix(_PREFIX).lower().replace("_", "-")
        return spelled if spelled in sc.A2A_STATES else sc.A2A_UNKNOWN
    except Exception:  # an unknown number or a foreign type: never raise into the app
        return sc.A2A_UNKNOWN


def event_state(event: Any) -> tuple[str | None, str | None]:
    """(task id, state) of an a2a-sdk event: a `Task`, a `TaskStatusUpdateEvent` or a
    `StreamResponse` wrapping either. (None, None) for a `Message`, an artifact update, or
    anything else; only the id and the state enum are read, never a message or a part."""
    try:
        which = _which(event)
        if which == "task":
            task = event.task if _is_stream_response(event) else event
            return str(task.id) or None, state_name(task.status.state)
        if which == "status_update":
            update = event.status_update if _is_stream_response(event) else event
            return str(update.task_id) or None, state_name(update.status.state)
        if which == "artifact_update":
            update = event.artifact_update if _is_stream_response(event) else event
            return str(update.task_id) or None, None
    except Exception:
        pass
    return None, None


def is_message(event: Any) -> bool:
    """Whether the event is a direct `Message` reply (the agent answered without a task)."""
    return _which(event) == "message"


def _is_stream_response(event: Any) -> bool:
    return type(event).__name__ == "StreamResponse"


def _which(event: Any) -> str | None:
    """Which of task / status_update / artifact_update / message the event is."""
    try:
        if _is_stream_response(event):
            found = event.WhichOneof("payload")
            return str(found) if found else None
        return {
            "Task": "task",
            "TaskStatusUpdateEvent": "status_update",
            "TaskArtifactUpdateEvent": "artifact_update",
            "Message": "message",
        }.get(type(event).__name__)
    except Exception:
        return None
