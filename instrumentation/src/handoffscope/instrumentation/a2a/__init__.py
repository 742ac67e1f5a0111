"""Handoffs between services over A2A (a2a-sdk), in two lines on each side.

    from handoffscope.instrumentation import configure
    from handoffscope.instrumentation.a2a import A2AInstrumentor

    # the sending service
    A2AInstrumentor().instrument(tracer_provider=configure(service_name="front-desk"),
                                 agent_name="triage")
    # the receiving service (before it builds its DefaultRequestHandler)
    A2AInstrumentor().instrument(tracer_provider=configure(service_name="billing-svc"))

A message an agent sends to a remote A2A agent, and the task the remote agent runs for
it, become ONE handoff of the sender's run: the sender records the request and puts the
run id and handoff id in W3C baggage beside `traceparent` (client.py, propagation.py);
the receiver reads them back and records the admission and every state of the task
(server.py). The collector merges both by (`handoff.run_id`, `handoff.id`) and judges the
task's latest `a2a.task.state`: `rejected` is `contract_rejected`, `failed` / `canceled`
`run_failed`, an `input-required` / `auth-required` task a wait (docs/a2a.md).

Which run a send belongs to (current.py): `sending(run_id=..., agent=...)` around it;
else the run of the OpenAI Agents SDK or LangGraph adapter the send happens in (a function
tool, a graph node), sent by the agent or node that was working; else the send is a run
of its own. `handoff.kind` is `delegation`: an A2A client awaits (or polls for) the
remote's result and keeps control, as with an agent called as a tool.

What is patched, all through a2a-sdk's public classes and restored by `uninstrument()`:
`BaseClient.send_message` (every client `create_client` / `ClientFactory` makes) and the
constructors of the request handlers (`DefaultRequestHandler`, `LegacyRequestHandler`),
which get the app's `AgentExecutor` wrapped. Handlers built before `instrument()` are not
observed; `uninstrument()` turns the ones built since into pass-throughs.

Settings (`A2ASettings`): `agent_name` — the sending agent when no run names one;
`wait_owner`, `wait_deadline_seconds` — who answers an `input-required` task and how long
they have (the A2A protocol says neither; without them a wait reads `wait_uncertain`).
a2a-sdk's own OpenTelemetry spans (its `trace_class` decorators) are not ours and are not
needed: the collector keeps only the contract's attributes of any span it receives.

Nothing a user or an agent wrote leaves the process: not the message, its parts, the
task's history, artifacts or metadata, nor an error's text — only ids, agent names (the
AgentCard's `name`), task states and the settings' codes.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import TracerProvider

from ..instrumentor import HandoffInstrumentor
from ..recorder import HandoffRecorder
from ..stats import swallowed
from . import current
from .client import ClientSide, wrap_send
from .server import ServerSide, receiver_of, traced_executor

_log = logging.getLogger(__name__)

__all__ = ["A2AInstrumentor", "A2ASettings", "sending"]

sending = current.sending


@dataclass(frozen=True)
class A2ASettings:
    """What `instrument(**settings)` accepts. Every field is optional."""

    agent_name: str | None = None
    """The sending agent, for sends outside any run (and runs that name no agent)."""
    wait_owner: str | None = None
    """`wait.owner` of an `input-required` / `auth-required` task (a role or opaque id)."""
    wait_deadline_seconds: float | None = None
    """How long after the task starts waiting a decision is due (`wait.deadline`)."""


_HANDLERS = (
    ("a2a.server.request_handlers.default_request_handler_v2", "DefaultRequestHandlerV2"),
    ("a2a.server.request_handlers.default_request_handler", "LegacyRequestHandler"),
)


class A2AInstrumentor(HandoffInstrumentor):
    """An OpenTelemetry `BaseInstrumentor` for a2a-sdk: one instance per process, idempotent.

    Apply it in the sending and in the receiving service (a service that does both gets
    both sides). `instrument()` never raises into the app for runtime problems; a missing
    `a2a-sdk` is logged and skipped.
    """

    settings_type = A2ASettings
    extra = "a2a"

    def _init(self) -> None:
        self._client: ClientSide | None = None
        self._server: ServerSide | None = None
        self._originals: list[tuple[Any, str, Any]] = []
        self.settings = A2ASettings()

    def instrumentation_dependencies(self) -> tuple[str, ...]:
        return ("a2a-sdk >= 1.0",)

    def _attach(self, tracer_provider: TracerProvider | None, settings: Any) -> bool:
        # Imported here, not at the top: a2a-sdk is an optional extra.
        import importlib

        from a2a.client.base_client import BaseClient

        self.settings = settings
        recorder = HandoffRecorder(tracer_provider or trace.get_tracer_provider())
        self._client = ClientSide(recorder, settings.agent_name)
        self._server = ServerSide(
            recorder,
            wait_owner=settings.wait_owner,
            wait_deadline_seconds=settings.wait_deadline_seconds,
        )
        client_side, server_side = self._client, self._server

        def side() -> ClientSide | None:
            return client_side if client_side.enabled else None

        self._patch(BaseClient, "send_message", wrap_send(BaseClient.send_message, side))
        for module_name, class_name in _HANDLERS:
            try:
                cls = getattr(importlib.import_module(module_name), class_name)
            except Exception:  # an a2a-sdk without this handler: the others still work
                _log.debug("handoffscope: a2a %s not found", class_name, exc_info=True)
                continue
            self._patch(cls, "__init__", _wrap_handler_init(cls.__init__, server_side))
        return True

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self._originals.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, replacement)

    def _detach(self) -> None:
        for owner, name, original in reversed(self._originals):
            try:
                setattr(owner, name, original)
            except Exception:
                swallowed(_log, "a2a uninstrument")
        self._originals = []
        for side in (self._client, self._server):
            if side is not None:
                side.enabled = False

    # -- user-facing helpers ----------------------------------------------------------------

    @staticmethod
    @contextmanager
    def sending(run_id: str, agent: str | None = None) -> Iterator[None]:
        """Sends inside the block are handoffs of run `run_id` from `agent` (current.py)."""
        with current.sending(run_id, agent):
            yield

    def run_id(self, task_id: str) -> str | None:
        """The run a task this process sent belongs to (None: not a task of ours) — e.g.
        to find a send that was a run of its own in the collector."""
        try:
            sent = self._client.sent(task_id) if self._client is not None else None
            return sent.run_id if sent is not None else None
        except Exception:
            swallowed(_log, "a2a run id")
            return None

    @property
    def recorder(self) -> HandoffRecorder | None:
        """The recorder behind the adapter, for evidence beyond A2A (an outcome verifier)."""
        return self._client.recorder if self._client is not None else None


def _wrap_handler_init(original: Any, side: ServerSide) -> Any:
    """A request handler's `__init__` that gets its `agent_executor` wrapped."""
    signature = inspect.signature(original)

    def __init__(handler: Any, *args: Any, **kwargs: Any) -> None:
        if side.enabled:
            try:
                bound = signature.bind(handler, *args, **kwargs)
                executor = bound.arguments.get("agent_executor")
                if executor is not None and not hasattr(executor, "_handoffscope_wrapped"):
                    receiver = receiver_of(
                        bound.arguments.get("agent_card"), bound.arguments.get("task_store")
                    )
                    bound.arguments["agent_executor"] = traced_executor(executor, side, receiver)
                    args, kwargs = bound.args[1:], bound.kwargs
            except Exception:
                swallowed(_log, "a2a request handler")
        original(handler, *args, **kwargs)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    return __init__
