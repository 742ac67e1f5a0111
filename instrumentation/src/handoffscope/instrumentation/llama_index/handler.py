"""The span handler: LlamaIndex's instrumentation spans -> handoff evidence.

The one module that imports LlamaIndex at its top, so it is imported only once
`instrument()` has found it. The handler is added to LlamaIndex's root dispatcher
(`llama_index.core.instrumentation.get_dispatcher()`), the documented place for an
observability integration; every workflow run and step reaches it as a span:

- the run span (`<Workflow>.run-<uuid>`, `instance` the workflow, `bound_args` holding the
  start event) opens and closes a run: exit is `completed`, drop is `failed` — or
  `max_turns` when `AgentWorkflow` raised at its `max_iterations` (the run's model turns
  reached the limit; the exception's text is never read);
- a step span's `bound_args["ev"]` is the event the step handles: `AgentInput` (an agent
  takes control: admits a handoff to it), `ToolCall` (a call of the `handoff` tool is a
  handoff request), and on exit `AgentOutput` (a model turn) and `ToolCallResult` (work
  done, and the handoff's tool call closed);
- spans opened inside a step (a tool's `acall`, a model call, a whole nested run) carry
  their parent's id, so an agent's `run()` called from a tool is found to be a delegation
  of the run that called the tool.

Why spans rather than the `AgentInput` / `ToolCall` events apps read from
`handler.stream_events()`: those are written to the app's stream, which only the app
consumes; the dispatcher sees every run, streamed or awaited, with no change to the app.
"""

from __future__ import annotations

import inspect
import logging
import threading
from typing import Any

from llama_index.core.agent.workflow import (
    AgentInput,
    AgentOutput,
    AgentSetup,
    AgentWorkflow,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.agent.workflow.base_agent import DEFAULT_MAX_ITERATIONS, BaseWorkflowAgent
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from llama_index.core.workflow import WorkflowRuntimeError
from pydantic import PrivateAttr

from .. import semconv as sc
from ..lru import Lru
from ..recorder import HandoffRecorder
from ..stats import swallowed
from .progress import HANDOFF_TOOL, answer_unit, tool_units
from .run import UNKNOWN_AGENT, Pending, Run, Shared, task_fingerprint

_log = logging.getLogger(__name__)

MAX_OPEN_SPANS = 100_000
"""Open LlamaIndex spans remembered (span id -> run); a forgotten one costs its evidence."""
_RUN_SPAN = ".run-"
_UNOBSERVED = (sc.BOUNDARY_CONTEXT,)
"""LlamaIndex has no context contract between agents: the context boundary is not seen."""


class Observer:
    """Turns span callbacks into recorder calls. Thread-safe; never raises."""

    def __init__(self, recorder: HandoffRecorder, settings: Any) -> None:
        self.recorder = recorder
        self.settings = settings
        # span id -> (run, tool call id of the step it is in, the step's event type when
        # its result is evidence: a model turn's AgentSetup, a tool call's ToolCall)
        self._spans: Lru[str, tuple[Run, str | None, type | None]] = Lru(MAX_OPEN_SPANS)
        self._lock = threading.Lock()

    # -- span callbacks ----------------------------------------------------------------------

    def enter(self, id_: str, bound_args: Any, instance: Any, parent_id: str | None) -> None:
        try:
            with self._lock:
                parent = self._spans.get(parent_id) if parent_id else None
            if _RUN_SPAN in id_ and isinstance(instance, (AgentWorkflow, BaseWorkflowAgent)):
                run = self._open_run(id_, bound_args, instance, parent)
                with self._lock:
                    self._spans.put(id_, (run, None, None))
                return
            if parent is None:
                return
            run, tool_call_id, _ = parent
            ev = _event(bound_args)
            if isinstance(ev, ToolCall):
                tool_call_id = ev.tool_id
            # Only the workflow's own steps' results count (not an agent method's span nested
            # in them that returns the same event type): one turn, one tool result.
            step = type(ev) if isinstance(ev, (AgentSetup, ToolCall)) else None
            with self._lock:
                self._spans.put(id_, (run, tool_call_id, step))
            if isinstance(ev, AgentInput):
                self._agent_started(run, ev.current_agent_name)
            elif isinstance(ev, ToolCall) and ev.tool_name == HANDOFF_TOOL and len(run.agents) > 1:
                # Only an AgentWorkflow of several agents has the handoff tool; an agent's
                # own tool of that name, run alone, is just a tool.
                self._handoff_called(run, ev)
        except Exception:
            swallowed(_log, "llama_index span enter")

    def exit(self, id_: str, result: Any) -> None:
        try:
            with self._lock:
                found = self._spans.pop(id_, None)
            if found is None:
                return
            run, _, step = found
            if run.run_span == id_:
                self._close_run(run, None)
            elif step is AgentSetup and isinstance(result, AgentOutput):
                with run.lock:
                    run.turns += 1
                unit = answer_unit(result)
                if unit is not None:
                    run.shared.add_work(unit)
            elif step is ToolCall and isinstance(result, ToolCallResult):
                for unit in tool_units(result):
                    run.shared.add_work(unit)
                if result.tool_name == HANDOFF_TOOL:
                    with run.lock:
                        for p in run.pending:
                            if p.tool_call_id == result.tool_id:
                                p.closed = True
        except Exception:
            swallowed(_log, "llama_index span exit")

    def drop(self, id_: str, err: BaseException | None) -> None:
        try:
            with self._lock:
                found = self._spans.pop(id_, None)
            if found is not None and found[0].run_span == id_:
                self._close_run(found[0], err if err is not None else RuntimeError())
        except Exception:
            swallowed(_log, "llama_index span drop")

    # -- runs -------------------------------------------------------------------------------

    def _open_run(
        self,
        id_: str,
        bound_args: Any,
        workflow: Any,
        parent: tuple[Run, str | None, type | None] | None,
    ) -> Run:
        start = (bound_args.arguments or {}).get("start_event") if bound_args else None
        if isinstance(workflow, AgentWorkflow):
            agents = {name: _routes(a) for name, a in workflow.agents.items()}
            root_agent = workflow.root_agent
        else:
            agents = {workflow.name: []}
            root_agent = workflow.name
        max_iterations = _get(start, "max_iterations") or DEFAULT_MAX_ITERATIONS
        task = task_fingerprint(_get(start, "user_msg"))
        if parent is not None:
            caller, tool_call_id, _ = parent
            run = Run(caller.shared, agents, root_agent, task, int(max_iterations), parent=caller)
            run.run_span = id_
            self._delegated(caller, run, root_agent, tool_call_id)
            return run
        conversation = None
        if self.settings.export_conversation_id:
            session = getattr(_get(start, "memory"), "session_id", None)
            conversation = session if isinstance(session, str) else None
        # The run span's own uuid: opaque, unique, and in any trace of LlamaIndex's spans.
        run_id = id_.rsplit(_RUN_SPAN, 1)[1].replace("-", "")
        run = Run(Shared(run_id, conversation), agents, root_agent, task, int(max_iterations))
        run.run_span = id_
        self.recorder.run_started(
            run.run_id,
            agent=root_agent,
            conversation_id=conversation,
            outcome_required=True if self.settings.require_outcome else None,
        )
        return run

    def _close_run(self, run: Run, err: BaseException | None) -> None:
        with run.lock:
            turns, final = run.turns, run.current
            stale = list(run.pending)
            run.pending.clear()
        self._not_carried_out(run, stale, final)
        if run.parent is not None:
            return  # a delegation returns into its caller's tool call; the caller's run goes on
        if err is None:
            status = sc.RUN_STATUS_MAX_TURNS if turns >= run.max_iterations else None
        elif isinstance(err, WorkflowRuntimeError) and turns >= run.max_iterations:
            status = sc.RUN_STATUS_MAX_TURNS
        else:
            status = sc.RUN_STATUS_FAILED
        self.recorder.run_ended(
            run.run_id,
            status or sc.RUN_STATUS_COMPLETED,
            final_agent=final,
            turns=turns,
            conversation_id=run.shared.conversation_id,
        )

    # -- handoffs and delegations -------------------------------------------------------------

    def _handoff_called(self, run: Run, ev: Any) -> None:
        kwargs = ev.tool_kwargs if isinstance(ev.tool_kwargs, dict) else {}
        asked = kwargs.get("to_agent")
        with run.lock:
            sender, turn = run.current, run.turns
        target = asked if isinstance(asked, str) and asked in run.agents else UNKNOWN_AGENT
        declared = run.declared(sender, target)
        handoff_id = run.shared.next_id()
        with run.lock:
            run.pending.append(Pending(handoff_id, sender, target, declared, ev.tool_id))
        self.recorder.handoff_requested(
            run.run_id,
            handoff_id,
            from_agent=sender,
            to_agent=target,
            turn=turn,
            fingerprint=run.task,
            state_version=run.shared.work,
            route_declared=declared,
            tool_call_id=ev.tool_id or None,
            control_before=sender,
            kind=sc.KIND_HANDOFF,
            unobserved=_UNOBSERVED,
            # An agent given nowhere to go has no handoff tool: the framework answers
            # "tool not found" to the model's call.
            reason=sc.REASON_TOOL_MISSING if run.agents.get(sender) == [] else None,
            conversation_id=run.shared.conversation_id,
        )

    def _agent_started(self, run: Run, agent: str) -> None:
        with run.lock:
            before = run.current
            pending = list(run.pending)
            run.pending.clear()
            run.current = agent
            delegation, run.delegation_id = run.delegation_id, None
        if delegation is not None and run.parent is not None:
            self.recorder.handoff_accepted(
                run.run_id, delegation, agent=agent, conversation_id=run.shared.conversation_id
            )
        admitted = [p for p in pending if p.to_agent == agent and agent != before]
        # Several handoffs in one turn: the last to run sets the next agent; admit one.
        chosen = admitted[-1] if admitted else None
        if chosen is not None:
            self.recorder.handoff_accepted(
                run.run_id,
                chosen.handoff_id,
                agent=agent,
                goto=agent,
                control_after=agent,
                tool_call_closed=chosen.closed,
                conversation_id=run.shared.conversation_id,
            )
        self._not_carried_out(run, [p for p in pending if p is not chosen], agent)

    def _not_carried_out(self, run: Run, pending: list[Pending], went_to: str) -> None:
        """Handoffs the framework did not carry out: it refused an undeclared target (the
        sender keeps control), or took another handoff of the same turn."""
        for p in pending:
            self.recorder.handoff_transferred(
                run.run_id,
                p.handoff_id,
                goto=went_to,
                control_after=went_to,
                tool_call_closed=p.closed,
                reason=sc.REASON_IGNORED_SAME_TURN if p.declared else None,
                conversation_id=run.shared.conversation_id,
            )

    def _delegated(self, caller: Run, run: Run, agent: str, tool_call_id: str | None) -> None:
        handoff_id = caller.shared.next_id()
        run.delegation_id = handoff_id
        with caller.lock:
            sender, turn = caller.current, caller.turns
        self.recorder.handoff_requested(
            caller.run_id,
            handoff_id,
            from_agent=sender,
            to_agent=agent,
            turn=turn,
            fingerprint=run.task,
            state_version=caller.shared.work,
            tool_call_id=tool_call_id or None,
            kind=sc.KIND_DELEGATION,
            unobserved=_UNOBSERVED,
            conversation_id=caller.shared.conversation_id,
        )


class HandoffSpanHandler(BaseSpanHandler[Any]):  # type: ignore[misc]
    """A LlamaIndex span handler that keeps no spans of its own: it forwards to `Observer`."""

    _observer: Observer = PrivateAttr()

    def __init__(self, observer: Observer) -> None:
        super().__init__()
        self._observer = observer

    @classmethod
    def class_name(cls) -> str:
        return "HandoffSpanHandler"

    def span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._observer.enter(id_, bound_args, instance, parent_id)

    def span_exit(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> None:
        self._observer.exit(id_, result)

    def span_drop(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        self._observer.drop(id_, err)

    # BaseSpanHandler's abstract hooks: unused, since the three calls above are overridden.
    def new_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
        return None


def _event(bound_args: Any) -> Any:
    arguments = getattr(bound_args, "arguments", None)
    return arguments.get("ev") if isinstance(arguments, dict) else None


def _get(event: Any, key: str) -> Any:
    """A start event's field (a `StartEvent` is a mapping-like pydantic model)."""
    if event is None:
        return None
    try:
        return event.get(key, None)
    except Exception:
        return getattr(event, key, None)


def _routes(agent: Any) -> list[str] | None:
    routes = getattr(agent, "can_handoff_to", None)
    return None if routes is None else [r for r in routes if isinstance(r, str)]
