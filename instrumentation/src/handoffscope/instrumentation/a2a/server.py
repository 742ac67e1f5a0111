"""The receiving side: the A2A server's `AgentExecutor`, observed through its event queue.

The instrumentor wraps the `agent_executor` every a2a-sdk request handler is built with
(`DefaultRequestHandler` — v2 — and `LegacyRequestHandler`) in `TracedAgentExecutor`, which
hands the real executor an `EventQueue` of its own (the SDK's public producer interface:
one method, `enqueue_event`) that notes each event and passes it on unchanged. Why there:
the executor is where the agent actually starts, and the events it enqueues are the
task's states as the agent declares them, each with the request's `ServerCallContext`
(whose headers carry the sender's baggage) at hand. The request handler and task store
are left alone.

What each state becomes (docs/a2a.md), for a request that carries the sender's baggage:

| task state | evidence |
|---|---|
| `working` (first time) | `handoff.accept`: `destination.started = true`, the agent (the AgentCard's `name`), `a2a.task.id`, state |
| `input-required`, `auth-required` | `handoff.wait`: `wait.reason` `input_required` / `auth_required`, `wait.resume_token_id` = the task id, `wait.owner` and `wait.deadline` from the settings, `wait.state_persisted` when the task store is not the in-memory one; and the state |
| the answer that resumes a waiting task, or any state that goes on from it | `handoff.wait` decided `approved` (the input or authorization arrived); `rejected`, `canceled` or `failed` from a wait: decided `rejected` |
| `completed` | `handoff.accept` with the state (a result is verified only by the app's own `handoff.outcome`) |
| `rejected` | `handoff.accept` with the state and no `destination.started`: the agent refused the task |
| `failed`, `canceled`, or `execute()` raising | `handoff.accept` with the state `failed` / `canceled` |
| a direct `Message` reply (no task) | `handoff.accept`: `destination.started = true` (the agent ran and answered) |

A state reached before `working` (an agent that goes straight to `completed` or
`input-required`) also admits the destination: the executor ran. `submitted` alone admits
nothing: an agent that enqueues its task and never works on it has not started
(`destination_not_started` once the grace passes).

Without the baggage (a plain A2A client, or one not instrumented) nothing is recorded: the
request belongs to no run this side can name, and a run invented here would count a
handoff nobody sent. The baggage of a task's first request is remembered by task id, so
the answer that resumes it needs none. Evidence spans are emitted inside the sender's
trace context (`traceparent`), so the receiver's evidence sits in the sender's trace.

Only ids, the agent's name, states and the settings' codes leave the process: the
messages, parts, artifacts, metadata and error texts of the task are never read into a span.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context import Context

from .. import semconv as sc
from ..lru import Lru
from ..recorder import HandoffRecorder
from ..stats import swallowed
from .propagation import extract, request_headers
from .states import event_state, is_message

_log = logging.getLogger(__name__)

MAX_TASKS = 16_384
"""Tasks whose handoff this process remembers (LRU): a resumed task needs no baggage."""

WAIT_REASONS: dict[str, str] = {
    sc.A2A_INPUT_REQUIRED: "input_required",
    sc.A2A_AUTH_REQUIRED: "auth_required",
}
"""`wait.reason` of the A2A interrupted states."""
_NOT_ADMITTING = (sc.A2A_SUBMITTED, sc.A2A_REJECTED, sc.A2A_UNKNOWN)
"""States that do not show the agent started: queued, refused, or unreadable."""
_WAIT_REFUSED = (sc.A2A_REJECTED, sc.A2A_CANCELED, sc.A2A_FAILED)
"""States that end a wait without the work going on: its decision is `rejected`."""


@dataclass
class Track:
    """One task's handoff on this side."""

    run_id: str
    handoff_id: str
    parent: Context
    """The sender's trace context: our evidence spans are its children."""
    task_id: str | None = None
    admitted: bool = False
    state: str | None = None
    waiting: bool = False


@dataclass(frozen=True)
class Receiver:
    """What the wrapper knows about the server it is part of."""

    agent: str | None
    """The AgentCard's `name`: what the sender names as `to_agent`."""
    persisted: bool
    """The task store outlives the process (not `InMemoryTaskStore`)."""


class ServerSide:
    """Turns executor events into evidence; one per instrumentor."""

    def __init__(
        self,
        recorder: HandoffRecorder,
        *,
        wait_owner: str | None = None,
        wait_deadline_seconds: float | None = None,
    ) -> None:
        self.recorder = recorder
        self.wait_owner = wait_owner
        self.wait_deadline_seconds = wait_deadline_seconds
        self.enabled = True
        self._tasks: Lru[str, Track] = Lru(MAX_TASKS)

    def track(self, request_context: Any) -> Track | None:
        """The handoff of this request: from the request's baggage, else the task's first
        request's; None when there is none (nothing is recorded)."""
        try:
            task_id = str(getattr(request_context, "task_id", None) or "") or None
            headers = request_headers(getattr(request_context, "call_context", None))
            run_id, handoff_id, parent = extract(headers)
            known = self._tasks.get(task_id) if task_id else None
            if known is not None and (run_id is None or known.handoff_id == handoff_id):
                return known
            if run_id is None or handoff_id is None:
                return None
            found = Track(run_id, handoff_id, parent, task_id)
            if task_id:
                self._tasks.put(task_id, found)
            return found
        except Exception:
            swallowed(_log, "a2a track")
            return None

    # -- moments -------------------------------------------------------------------------

    def resumed(self, track: Track) -> None:
        """The executor is called again for a task that waited: its input arrived."""
        self._decide(track, sc.WAIT_DECISION_APPROVED)

    def cancelled(self, track: Track, receiver: Receiver) -> None:
        """`cancel()` returned: the task is canceled (the SDK writes it, if the agent did not)."""
        self.state(track, sc.A2A_CANCELED, receiver)

    def _decide(self, track: Track, decision: str) -> None:
        if track.waiting:
            track.waiting = False
            self._emit(
                track,
                sc.SPAN_WAIT,
                {sc.WAIT_DECISION: decision, sc.WAIT_RESUME_TOKEN_ID: track.task_id},
            )

    def event(self, track: Track, event: Any, receiver: Receiver) -> None:
        """One event the agent enqueued."""
        try:
            task_id, state = event_state(event)
            if task_id and track.task_id is None:
                track.task_id = task_id
                self._tasks.put(task_id, track)
            if state is not None:
                self.state(track, state, receiver)
            elif is_message(event) and not track.admitted:
                track.admitted = True
                self._emit(
                    track,
                    sc.SPAN_ACCEPT,
                    {sc.DESTINATION_STARTED: True, sc.GEN_AI_AGENT_NAME: receiver.agent},
                )
        except Exception:
            swallowed(_log, "a2a event")

    def raised(self, track: Track, receiver: Receiver) -> None:
        """`execute()` raised: the SDK marks the task failed."""
        self.state(track, sc.A2A_FAILED, receiver)

    def state(self, track: Track, state: str, receiver: Receiver) -> None:
        """The task reached `state` (reported once per change)."""
        if state == track.state or state == sc.A2A_SUBMITTED:
            return
        track.state = state
        reason = WAIT_REASONS.get(state)
        if reason is None:
            # Moved on from a wait (an out-of-band authorization arrives without a new
            # request): going on is the wait approved; ending without a result, rejected.
            ended = state in _WAIT_REFUSED
            self._decide(track, sc.WAIT_DECISION_REJECTED if ended else sc.WAIT_DECISION_APPROVED)
        attrs: dict[str, Any] = {sc.A2A_TASK_STATE: state}
        if state not in _NOT_ADMITTING and not track.admitted:
            track.admitted = True
            attrs[sc.DESTINATION_STARTED] = True
            attrs[sc.GEN_AI_AGENT_NAME] = receiver.agent
        if state == sc.A2A_REJECTED:
            attrs[sc.GEN_AI_AGENT_NAME] = receiver.agent
        if reason is None:
            self._emit(track, sc.SPAN_ACCEPT, attrs)
            return
        if sc.DESTINATION_STARTED in attrs:
            # The admission is the accept's fact; the wait is checkpointed on its own span.
            self._emit(track, sc.SPAN_ACCEPT, dict(attrs))
        track.waiting = True
        deadline = None
        if self.wait_deadline_seconds is not None:
            deadline = time.time_ns() + int(self.wait_deadline_seconds * 1e9)
        self._emit(
            track,
            sc.SPAN_WAIT,
            {
                sc.A2A_TASK_STATE: state,
                sc.WAIT_OWNER: self.wait_owner,
                sc.WAIT_REASON: reason,
                sc.WAIT_DEADLINE: deadline,
                sc.WAIT_RESUME_TOKEN_ID: track.task_id,
                sc.WAIT_STATE_PERSISTED: receiver.persisted,
            },
        )

    def _emit(self, track: Track, span: str, attrs: dict[str, Any]) -> None:
        base = {sc.RUN_ID: track.run_id, sc.HANDOFF_ID: track.handoff_id}
        if track.task_id:
            base[sc.A2A_TASK_ID] = track.task_id
        token = otel_context.attach(track.parent)
        try:
            self.recorder.emit(span, {**base, **attrs})
        finally:
            otel_context.detach(token)


def traced_executor(executor: Any, side: ServerSide, receiver: Receiver) -> Any:
    """`executor` wrapped in a `TracedAgentExecutor` (an `AgentExecutor` itself)."""
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.events import EventQueue

    class ObservedQueue(EventQueue):  # type: ignore[misc]
        """The executor's queue, noting each event before passing it on unchanged."""

        def __init__(self, inner: Any, track: Track) -> None:
            self._inner = inner
            self._track = track

        async def enqueue_event(self, event: Any) -> None:
            if side.enabled:
                side.event(self._track, event, receiver)
            await self._inner.enqueue_event(event)

        def __getattr__(self, name: str) -> Any:
            # A queue with more than the interface (the SDK's own has `close`, `tap`):
            # whatever else the executor uses is the real queue's.
            if name == "_inner":  # not set yet (a copy being made): no recursion
                raise AttributeError(name)
            return getattr(self._inner, name)

    class TracedAgentExecutor(AgentExecutor):  # type: ignore[misc]
        """The app's executor, reporting its task's states (see the module docstring)."""

        _handoffscope_wrapped = executor

        async def execute(self, context: Any, event_queue: Any) -> None:
            track = side.track(context) if side.enabled else None
            if track is None:
                await executor.execute(context, event_queue)
                return
            _guard(side.resumed, track)
            try:
                await executor.execute(context, ObservedQueue(event_queue, track))
            except Exception:
                _guard(side.raised, track, receiver)
                raise

        async def cancel(self, context: Any, event_queue: Any) -> None:
            track = side.track(context) if side.enabled else None
            if track is None:
                await executor.cancel(context, event_queue)
                return
            await executor.cancel(context, ObservedQueue(event_queue, track))
            _guard(side.cancelled, track, receiver)

        def __getattr__(self, name: str) -> Any:
            return getattr(executor, name)

    return TracedAgentExecutor()


def _guard(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception:
        swallowed(_log, "a2a server")


def receiver_of(agent_card: Any, task_store: Any) -> Receiver:
    """What a request handler's arguments say about the server."""
    name = getattr(agent_card, "name", None)
    persisted = True
    try:
        from a2a.server.tasks import InMemoryTaskStore

        persisted = not isinstance(task_store, InMemoryTaskStore)
    except Exception:
        pass
    return Receiver(name if isinstance(name, str) and name else None, persisted)


__all__ = ["Receiver", "ServerSide", "Track", "receiver_of", "traced_executor"]
