"""`HandoffListener`: CrewAI's event bus, turned into handoff evidence.

CrewAI announces every boundary we need on its event bus (`crewai.events.crewai_event_bus`),
so the adapter is a `BaseEventListener` and patches nothing. What each event gives:

| CrewAI event | evidence |
|---|---|
| `CrewKickoffStartedEvent` | `handoff.run` `started`; the crew's agent roles become the declared coworkers |
| `TaskStartedEvent` of a sequential crew's task after another agent's | `handoff.request`, `handoff.kind = handoff`: the task handover, from the role whose task completed last to this task's agent, `route.declared` (the crew's task order), turn |
| `AgentExecutionStartedEvent` whose parent event is that task | `handoff.accept` of the handover (the next agent started) |
| `TaskCompletedEvent` | its agent becomes the sender of the next handover |
| `TaskFailedEvent` of a task whose agent never started | `handoff.accept` with `destination.started = false` |
| `AgentExecutionStartedEvent` whose parent event is a pending delegation tool call | `handoff.accept` for that delegation (the coworker started) |
| `ToolUsageStartedEvent` of "Delegate work to coworker" / "Ask question to coworker" | `handoff.request`, `handoff.kind = delegation`: from the calling agent to the coworker named, `route.declared` (the coworker is one of the crew's other agents), turn, fingerprint, state version |
| `ToolUsageFinishedEvent` / `ToolUsageErrorEvent` of a delegation no coworker started for | `handoff.accept` with `destination.started = false` (CrewAI answered "no such coworker") |
| `ToolUsageFinishedEvent` of any other tool | progress: one unit of work per distinct (tool, arguments, output), as a keyed HMAC |
| `AgentExecutionCompletedEvent` of an agent its task started (not a coworker) | the run's final agent |
| `CrewKickoffCompletedEvent` / `CrewKickoffFailedEvent` | `handoff.run` ended `completed` / `failed`, final agent |

Ordering: CrewAI runs a synchronous handler on a pool of ten threads, so two events'
handlers may run out of order; an `async` handler runs on the bus's one event loop, in the
order the events were emitted, when it never awaits. Ours are `async` and never await.

Which run an event belongs to is read from CrewAI's own event links, not from "the run
that is open": a task's `parent_event_id` is its kickoff, an agent's is its task or the
delegation tool call that started it, a tool call names its task (`task_id`). So
concurrent kickoffs (`kickoff_for_each_async`) keep their evidence apart.

Every handler is wrapped: a failure is logged at debug and counted in `stats.errors`, and
CrewAI (which would print it) never sees it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from crewai.events import BaseEventListener
from crewai.events.types.agent_events import (
    AgentExecutionCompletedEvent,
    AgentExecutionStartedEvent,
)
from crewai.events.types.crew_events import (
    CrewKickoffCompletedEvent,
    CrewKickoffFailedEvent,
    CrewKickoffStartedEvent,
)
from crewai.events.types.task_events import (
    TaskCompletedEvent,
    TaskFailedEvent,
    TaskStartedEvent,
)
from crewai.events.types.tool_usage_events import (
    ToolUsageErrorEvent,
    ToolUsageFinishedEvent,
    ToolUsageStartedEvent,
)

from .. import semconv as sc
from ..lru import Lru
from ..recorder import HandoffRecorder
from ..stats import swallowed
from .runs import (
    DELEGATION_TOOLS,
    Delegation,
    Run,
    named_coworker,
    role_of,
    task_digest,
    tool_key,
)

_log = logging.getLogger(__name__)

MAX_IDS = 65_536
"""Event ids, task ids and pending delegations remembered (LRU each): a run is found
through them, so a finished one is forgotten with its ids."""
DELEGATION_UNOBSERVED = (sc.BOUNDARY_CONTROL, sc.BOUNDARY_TOOL_PROTOCOL, sc.BOUNDARY_CONTEXT)
"""What CrewAI's events cannot show about a delegation: control never leaves the caller,
CrewAI writes the tool's observation itself, and a coworker has no context contract."""
HANDOVER_UNOBSERVED = (sc.BOUNDARY_CONTROL, sc.BOUNDARY_TOOL_PROTOCOL, sc.BOUNDARY_CONTEXT)
"""What CrewAI's events cannot show about a sequential task handover: CrewAI passes
control itself (no agent decides it), no tool carries it, and what is handed over is the
previous tasks' output text, with no keys a task declares it requires (the package
docstring: "Task handovers")."""
HANDOFF_ID_PREFIX = "crewai-"
SEQUENTIAL = "sequential"
"""`Process.sequential`'s value (a `str` enum): compared by value, not imported."""


class HandoffListener(BaseEventListener):
    """Registers `async` handlers on CrewAI's event bus; `close()` removes them."""

    def __init__(self, recorder: HandoffRecorder) -> None:
        self.recorder = recorder
        self.enabled = True
        self._lock = threading.Lock()
        self._scopes: Lru[str, Run] = Lru(MAX_IDS)
        """CrewAI event id (kickoff, task, agent, tool call) -> its run."""
        self._tasks: Lru[str, Run] = Lru(MAX_IDS)
        """CrewAI task id -> its run (tool events name their task, not their parent)."""
        self._top: Lru[str, Run] = Lru(MAX_IDS)
        """Event id of an agent execution its task started (not a coworker's) -> its run."""
        self._pending: Lru[str, Delegation] = Lru(MAX_IDS)
        """Delegation tool call's event id -> its delegation, until it finishes."""
        self._handovers: Lru[str, Delegation] = Lru(MAX_IDS)
        """Task-started event id -> the handover to that task's agent, until the task ends."""
        self._registered: list[tuple[type, Callable[..., Any]]] = []
        super().__init__()

    def setup_listeners(self, crewai_event_bus: Any) -> None:
        handlers: list[tuple[type, Callable[..., Any]]] = [
            (CrewKickoffStartedEvent, self._kickoff_started),
            (CrewKickoffCompletedEvent, self._kickoff_completed),
            (CrewKickoffFailedEvent, self._kickoff_failed),
            (TaskStartedEvent, self._task_started),
            (TaskCompletedEvent, self._task_completed),
            (TaskFailedEvent, self._task_failed),
            (AgentExecutionStartedEvent, self._agent_started),
            (AgentExecutionCompletedEvent, self._agent_completed),
            (ToolUsageStartedEvent, self._tool_started),
            (ToolUsageFinishedEvent, self._tool_finished),
            (ToolUsageErrorEvent, self._tool_error),
        ]
        for event_type, handler in handlers:
            crewai_event_bus.on(event_type)(handler)
            self._registered.append((event_type, handler))

    def close(self) -> None:
        """Stop reporting and take our handlers off the bus; never raises."""
        self.enabled = False
        from crewai.events import crewai_event_bus

        for event_type, handler in self._registered:
            try:
                crewai_event_bus.off(event_type, handler)
            except Exception:
                swallowed(_log, "off")
        self._registered.clear()

    # -- handlers: `async`, exactly (source, event), never awaiting (module docstring) ------

    async def _kickoff_started(self, source: Any, event: Any) -> None:
        self._guarded("kickoff_started", self._on_kickoff_started, source, event)

    async def _kickoff_completed(self, source: Any, event: Any) -> None:
        self._guarded("kickoff_completed", self._on_kickoff_ended, event, sc.RUN_STATUS_COMPLETED)

    async def _kickoff_failed(self, source: Any, event: Any) -> None:
        self._guarded("kickoff_failed", self._on_kickoff_ended, event, sc.RUN_STATUS_FAILED)

    async def _task_started(self, source: Any, event: Any) -> None:
        self._guarded("task_started", self._on_task_started, event)

    async def _task_completed(self, source: Any, event: Any) -> None:
        self._guarded("task_completed", self._on_task_ended, event, True)

    async def _task_failed(self, source: Any, event: Any) -> None:
        self._guarded("task_failed", self._on_task_ended, event, False)

    async def _agent_started(self, source: Any, event: Any) -> None:
        self._guarded("agent_started", self._on_agent_started, event)

    async def _agent_completed(self, source: Any, event: Any) -> None:
        self._guarded("agent_completed", self._on_agent_completed, event)

    async def _tool_started(self, source: Any, event: Any) -> None:
        self._guarded("tool_started", self._on_tool_started, event)

    async def _tool_finished(self, source: Any, event: Any) -> None:
        self._guarded("tool_finished", self._on_tool_ended, event, True)

    async def _tool_error(self, source: Any, event: Any) -> None:
        self._guarded("tool_error", self._on_tool_ended, event, False)

    def _guarded(self, what: str, fn: Callable[..., None], *args: Any) -> None:
        if not self.enabled:
            return
        try:
            with self._lock:
                fn(*args)
        except Exception:
            swallowed(_log, what)

    # -- evidence ----------------------------------------------------------------------------

    def _on_kickoff_started(self, source: Any, event: Any) -> None:
        run = Run(run_id=str(event.event_id))
        # The event's own `crew` field is left empty by `Crew.kickoff`; the crew emits it.
        crew = getattr(event, "crew", None) or source
        run.declare(getattr(a, "role", None) for a in getattr(crew, "agents", None) or ())
        process = getattr(crew, "process", None)
        run.sequential = getattr(process, "value", process) == SEQUENTIAL
        self._scopes.put(run.run_id, run)
        self.recorder.run_started(run.run_id)

    def _on_kickoff_ended(self, event: Any, status: str) -> None:
        run = self._scopes.get(str(getattr(event, "started_event_id", None)))
        if run is None:
            return
        # No `turns`: CrewAI's events count no agent turns, and delegations are not turns.
        self.recorder.run_ended(run.run_id, status, final_agent=run.last_agent)

    def _on_task_started(self, event: Any) -> None:
        run = self._scopes.get(str(event.parent_event_id))
        if run is None:
            return
        self._scopes.put(str(event.event_id), run)
        if event.task_id:
            self._tasks.put(str(event.task_id), run)
        role = role_of(getattr(event.task, "agent", None))
        if not run.sequential or not role or run.task_agent in (None, role):
            # The first task, or the same agent going on with its next task: no handover.
            return
        run.handovers += 1
        # Pending like a delegation (id, run, destination, admitted yet), until the task ends.
        handover = Delegation(HANDOFF_ID_PREFIX + str(event.event_id), run, role)
        self._handovers.put(str(event.event_id), handover)
        self.recorder.handoff_requested(
            run.run_id,
            handover.handoff_id,
            from_agent=run.task_agent,
            to_agent=role,
            kind=sc.KIND_HANDOFF,
            # The crew's task order is the declared route: CrewAI runs nothing else.
            route_declared=True,
            turn=run.handovers,
            unobserved=HANDOVER_UNOBSERVED,
        )

    def _on_task_ended(self, event: Any, completed: bool) -> None:
        started = str(getattr(event, "started_event_id", None))
        handover = self._handovers.pop(started, None)
        if handover is not None and not handover.accepted:
            # The task ended before its agent started (a failed guardrail, a tool set up
            # wrong): nothing took the work over.
            self.recorder.destination_not_started(
                handover.run.run_id, handover.handoff_id, kind=sc.KIND_HANDOFF
            )
        run = self._scopes.get(started)
        role = role_of(getattr(getattr(event, "task", None), "agent", None))
        if run is not None and completed and role:
            run.task_agent = role

    def _on_agent_started(self, event: Any) -> None:
        parent = str(event.parent_event_id)
        delegation = self._pending.get(parent)
        run = delegation.run if delegation is not None else self._scopes.get(parent)
        if run is None:
            return
        role = role_of(event.agent)
        self._scopes.put(str(event.event_id), run)
        task_id = getattr(getattr(event, "task", None), "id", None)
        if task_id is not None:
            # The task a delegation creates for its coworker: its tool calls name it.
            self._tasks.put(str(task_id), run)
        if delegation is None:
            # Started by its task, not by a delegation: a candidate for the run's final agent.
            self._top.put(str(event.event_id), run)
        if delegation is not None and not delegation.accepted:
            # CrewAI retries a failing agent with the same parent: admitted once.
            delegation.accepted = True
            self.recorder.handoff_accepted(
                run.run_id, delegation.handoff_id, agent=role, kind=sc.KIND_DELEGATION
            )
        handover = self._handovers.get(parent) if delegation is None else None
        if handover is not None and not handover.accepted:
            handover.accepted = True
            self.recorder.handoff_accepted(
                run.run_id, handover.handoff_id, agent=role, kind=sc.KIND_HANDOFF
            )

    def _on_agent_completed(self, event: Any) -> None:
        run = self._top.pop(str(event.started_event_id), None)
        if run is not None:
            run.last_agent = role_of(event.agent) or run.last_agent

    def _on_tool_started(self, event: Any) -> None:
        run = self._tasks.get(str(event.task_id)) if event.task_id else None
        if run is None:
            return
        self._scopes.put(str(event.event_id), run)
        tool = tool_key(event.tool_name)
        if tool not in DELEGATION_TOOLS:
            return
        sender = event.agent_role
        to = run.coworker(sender, named_coworker(event.tool_args))
        run.delegations += 1
        delegation = Delegation(HANDOFF_ID_PREFIX + str(event.event_id), run, to)
        self._pending.put(str(event.event_id), delegation)
        self.recorder.handoff_requested(
            run.run_id,
            delegation.handoff_id,
            from_agent=sender,
            to_agent=to,
            kind=sc.KIND_DELEGATION,
            # Unknown (not False) when the crew's agents could not be read.
            route_declared=(to is not None) if run.roles else None,
            turn=run.delegations,
            fingerprint=task_digest(run.run_id, tool, event.tool_args),
            state_version=run.state_version,
            unobserved=DELEGATION_UNOBSERVED,
        )

    def _on_tool_ended(self, event: Any, finished: bool) -> None:
        started = str(event.started_event_id)
        delegation = self._pending.pop(started, None)
        if delegation is not None:
            if not delegation.accepted:
                # CrewAI answered the caller without starting anyone: no such coworker.
                self.recorder.destination_not_started(
                    delegation.run.run_id, delegation.handoff_id, kind=sc.KIND_DELEGATION
                )
            return
        run = self._scopes.get(started)
        if run is not None and finished:
            run.did_work(tool_key(event.tool_name), event.tool_args, getattr(event, "output", None))
