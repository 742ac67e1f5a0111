"""The sending side: each `Client.send_message` of a2a-sdk becomes a `handoff.request`.

Why a wrapper around `BaseClient.send_message` rather than a `ClientCallInterceptor` alone:
an interceptor sees the request (`before`) and each result (`after`), but never the
transport's failure — a refused connection raises out of the transport before any `after`
— and that failure is exactly the `destination_not_started` this side must report. The
wrapper still sends our headers the way interceptors do (`ClientCallContext.
service_parameters`, which every a2a-sdk transport sends as HTTP headers or gRPC
metadata), so nothing of the SDK's request path is replaced.

Per send (docs/a2a.md):

- a new handoff id (`a2a-<16 hex>`) in the current run (current.py), or — when the message
  continues a task this process sent (`message.task_id`, e.g. the answer to
  `input-required`) — that task's handoff again, with no second request;
- `handoff.request`: from the sending agent to the remote agent (its AgentCard `name`),
  `handoff.kind = delegation` (the sender awaits the remote's result and keeps control, as
  with an agent called as a tool), `a2a.task.id` when the message names its task,
  `a2a.task.state = submitted`;
- `traceparent` + baggage (`handoffscope.run_id`, `handoffscope.handoff_id`) into the
  request (propagation.py);
- the remote unreachable (the connection refused or never made, gRPC `UNAVAILABLE`), or
  an answer with nothing in it: `handoff.accept` with `destination.started = false`. An
  error answer from a server that was reached is not that: whether the agent started is
  the receiver's to say (or the grace window's).

The states the remote task goes through are reported by the receiver (server.py), which
knows them first-hand; this side does not repeat them.

A send outside any run is a run of its own (id `a2a-run-<hex>`, entry agent = the sender):
started at the send, ended `completed` when the task completes (or the agent answers with
a message), `failed` when it fails, is canceled or rejected, or cannot be sent, and
`interrupted` while it waits for input; the answer that resumes it continues that run.

Only ids, names and states leave the process: the message, its parts, the task's history
and artifacts, and error texts are never read into a span.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from .. import semconv as sc
from ..lru import Lru
from ..recorder import HandoffRecorder
from ..stats import swallowed
from .current import current_run
from .propagation import inject
from .states import event_state, is_message

_log = logging.getLogger(__name__)

MAX_TASKS = 16_384
"""Tasks this process sent (LRU): the answer to an `input-required` continues its handoff."""

_RUN_END: dict[str, str] = {
    sc.A2A_COMPLETED: sc.RUN_STATUS_COMPLETED,
    sc.A2A_FAILED: sc.RUN_STATUS_FAILED,
    sc.A2A_CANCELED: sc.RUN_STATUS_FAILED,
    sc.A2A_REJECTED: sc.RUN_STATUS_FAILED,
    sc.A2A_INPUT_REQUIRED: sc.RUN_STATUS_INTERRUPTED,
    sc.A2A_AUTH_REQUIRED: sc.RUN_STATUS_INTERRUPTED,
}
"""How a run of its own ends when its task reaches a state (other states: still running)."""

ENDED, RAISED, UNREACHABLE = "ended", "raised", "unreachable"
"""How a send ended: its results were all read; it raised; the remote was not reached."""


@dataclass
class Sent:
    """One handoff this process sent: where its evidence goes."""

    run_id: str
    handoff_id: str
    from_agent: str | None
    own_run: bool
    """The send is its run: this side also reports the run's start and end."""
    task_id: str | None = None
    """The remote task, once known (reported once, so the operator can look it up)."""


class ClientSide:
    """Turns sends into evidence; one per instrumentor, swapped out on `uninstrument()`."""

    def __init__(self, recorder: HandoffRecorder, agent_name: str | None) -> None:
        self.recorder = recorder
        self.agent_name = agent_name
        self.enabled = True
        self._tasks: Lru[str, Sent] = Lru(MAX_TASKS)

    def sent(self, task_id: str) -> Sent | None:
        """The handoff that sent task `task_id`, if this process sent it."""
        return self._tasks.get(task_id)

    # -- one send ------------------------------------------------------------------------

    def begin(self, client: Any, request: Any, context: Any) -> tuple[Sent, Any] | None:
        """Record the request and return (the handoff, the call context with our headers);
        None when nothing is to be recorded (or something failed: the send goes on)."""
        try:
            message = request.message
            task_id = str(message.task_id) or None
            sent = self._tasks.get(task_id) if task_id else None
            if sent is None:
                sent = self._new(client, task_id)
                if task_id:
                    self._tasks.put(task_id, sent)
            context = _with_headers(context, sent)
            return sent, context
        except Exception:
            swallowed(_log, "a2a send")
            return None

    def _new(self, client: Any, task_id: str | None) -> Sent:
        run = current_run()
        handoff_id = f"a2a-{uuid.uuid4().hex[:16]}"
        if run is None:
            sent = Sent(f"a2a-run-{uuid.uuid4().hex}", handoff_id, self.agent_name, True)
            self.recorder.run_started(sent.run_id, agent=sent.from_agent)
        else:
            sent = Sent(run.run_id, handoff_id, run.agent or self.agent_name, False)
        sent.task_id = task_id
        card = getattr(client, "_card", None)
        to_agent = getattr(card, "name", None) or None
        self.recorder.emit(
            sc.SPAN_REQUEST,
            {
                sc.RUN_ID: sent.run_id,
                sc.HANDOFF_ID: sent.handoff_id,
                sc.FROM_AGENT: sent.from_agent,
                sc.TO_AGENT: to_agent,
                sc.KIND: sc.KIND_DELEGATION,
                sc.A2A_TASK_ID: task_id,
                sc.A2A_TASK_STATE: sc.A2A_SUBMITTED,
            },
        )
        return sent

    def observe(self, sent: Sent, event: Any, seen: list[str | None]) -> None:
        """Note a result: the task it names (so an answer continues this handoff) and, for
        a run of its own, whether it ended. `seen` keeps the latest state ([] = nothing yet)."""
        try:
            task_id, state = event_state(event)
            if task_id and sent.task_id is None:
                # The remote created the task: its id joins the handoff's evidence (the
                # receiver reports it too, but not if it never starts the task).
                sent.task_id = task_id
                self._tasks.put(task_id, sent)
                self.recorder.emit(
                    sc.SPAN_REQUEST,
                    {
                        sc.RUN_ID: sent.run_id,
                        sc.HANDOFF_ID: sent.handoff_id,
                        sc.A2A_TASK_ID: task_id,
                    },
                )
            if is_message(event):
                state = sc.A2A_COMPLETED  # the agent answered directly: the exchange is done
            if task_id or state:
                seen.append(state)
        except Exception:
            swallowed(_log, "a2a result")

    def end(self, sent: Sent, seen: list[str | None], ended: str) -> None:
        """The send is over (`ended`: ENDED, RAISED or UNREACHABLE). Unreachable -> the
        destination did not start; a run of its own ends as its task's latest state says,
        or failed when the send raised."""
        try:
            if ended == UNREACHABLE and not seen:
                self.recorder.emit(
                    sc.SPAN_ACCEPT,
                    {
                        sc.RUN_ID: sent.run_id,
                        sc.HANDOFF_ID: sent.handoff_id,
                        sc.DESTINATION_STARTED: False,
                    },
                )
            if not sent.own_run:
                return
            latest = next((s for s in reversed(seen) if s), None)
            status = sc.RUN_STATUS_FAILED if ended != ENDED else _RUN_END.get(latest or "")
            if status is not None:
                self.recorder.run_ended(sent.run_id, status, final_agent=sent.from_agent)
        except Exception:
            swallowed(_log, "a2a send end")


def _with_headers(context: Any, sent: Sent) -> Any:
    """The caller's `ClientCallContext` (or a new one) with our headers in its
    `service_parameters`, copied: a context the app reuses for other sends keeps its own."""
    from a2a.client import ClientCallContext

    if context is None:
        context = ClientCallContext()
    params = dict(context.service_parameters or {})
    inject(params, sent.run_id, sent.handoff_id)
    return context.model_copy(update={"service_parameters": params})


def _unreachable(exc: BaseException) -> bool:
    """Whether `exc` (or what it wraps: a2a-sdk raises `A2AClientError` from the
    transport's error) says the remote could not be reached at all: the connection was
    refused or never made (HTTP), or the channel is unavailable (gRPC)."""
    try:
        import httpx

        # Not ConnectionError at large: a reset or broken pipe may come after the remote
        # got the task.
        never_connected = (httpx.ConnectError, httpx.ConnectTimeout, ConnectionRefusedError)
        seen = 0
        found: BaseException | None = exc
        while found is not None and seen < 16:  # bounded: a cyclic chain must not hang
            if isinstance(found, never_connected):
                return True
            code = getattr(found, "code", None)
            if callable(code) and getattr(code(), "name", None) == "UNAVAILABLE":
                return True
            found = found.__cause__ or found.__context__
            seen += 1
    except Exception:  # runs while the app's exception propagates: never replace it
        swallowed(_log, "a2a send error")
    return False


def wrap_send(
    original: Callable[..., AsyncIterator[Any]], side: Callable[[], ClientSide | None]
) -> Callable[..., AsyncIterator[Any]]:
    """`BaseClient.send_message`, reporting each send through `side()` (None: off)."""

    async def send_message(self: Any, request: Any, *, context: Any = None) -> AsyncIterator[Any]:
        client_side = side()
        begun = client_side.begin(self, request, context) if client_side else None
        if client_side is None or begun is None:
            async for event in original(self, request, context=context):
                yield event
            return
        sent, context = begun
        seen: list[str | None] = []
        # How the send ended: None while it runs, and when the app stopped reading or was
        # cancelled (nothing to conclude about the remote from that).
        ended: str | None = None
        try:
            async for event in original(self, request, context=context):
                client_side.observe(sent, event, seen)
                yield event
            ended = ENDED if seen else UNREACHABLE  # an answer with nothing in it
        except Exception as exc:
            # Unreachable: the remote never got the task. Any other error (an error
            # answer, a timeout mid-task) says nothing sure about whether it started:
            # the receiver's own evidence does (or the grace runs out).
            ended = UNREACHABLE if _unreachable(exc) else RAISED
            raise
        finally:
            if ended is not None:
                client_side.end(sent, seen, ended)

    send_message.__wrapped__ = original  # type: ignore[attr-defined]
    send_message.__doc__ = original.__doc__
    return send_message
