"""`HandoffCallbackHandler`: the LangChain callback handler that watches one root invocation.

Imported only once `LangGraphInstrumentor.instrument()` has found LangGraph: it subclasses
langchain-core's `BaseCallbackHandler` and reads LangGraph's `Command` / `Send` / errors,
so importing it needs the optional `langgraph` extra. The package docstring says what it
records; this module is the how.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.constants import END
from langgraph.errors import GraphInterrupt, GraphRecursionError, ParentCommand
from langgraph.types import Command, Send

from .. import semconv as sc
from ..stats import swallowed
from .graph import UNSET_AGENT, GraphInfo, agent_name, state_get
from .progress import items, progress, tool_closed
from .run import Branch, Pending, Run
from .waits import wait_facts

if TYPE_CHECKING:
    from . import LangGraphInstrumentor

_log = logging.getLogger(__name__)

_UNOBSERVED = (sc.BOUNDARY_CONTEXT,)
"""LangGraph has no context contract: the context boundary is never observed."""
_UNOBSERVED_NO_TOOL = (sc.BOUNDARY_CONTEXT, sc.BOUNDARY_TOOL_PROTOCOL)
"""Nor the tool protocol when no tool call carried the handoff (edges, node Commands)."""


@dataclass
class _Task:
    node: str
    step: int | None
    ns: str
    state: Any


class HandoffCallbackHandler(BaseCallbackHandler):
    """Watches one root invocation of a compiled graph; see the package docstring.

    Callbacks arrive on the caller's thread and on LangGraph's worker threads; the
    run's memory is guarded by its lock, and every event is idempotent.
    """

    # Cheap and non-blocking: call it inline in async runs instead of hopping threads.
    run_inline = True
    # Model and retriever events carry content and tell us nothing about handoffs.
    ignore_llm = True
    ignore_chat_model = True
    ignore_retriever = True
    # (Not ignore_agent: LangChain gates tool events behind it, and tools carry handoffs.)
    ignore_retry = True
    ignore_custom_event = True

    def __init__(
        self, instrumentor: LangGraphInstrumentor, run: Run, info: GraphInfo, persisted: bool
    ) -> None:
        super().__init__()
        self._ins = instrumentor
        self._run = run
        self._info = info
        self._persisted = persisted
        self._root: Any = None
        self._tasks: dict[Any, _Task] = {}
        self._tool_runs: dict[Any, tuple[str, str]] = {}
        self._tool_commands: dict[str, list[tuple[str, list[str]]]] = {}
        self._new_waits: list[tuple[str, Mapping[str, Any], str]] = []
        self._ended = False

    # -- node lifecycle ------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: Any,
        parent_run_id: Any = None,
        metadata: Any = None,
        **kw: Any,
    ) -> None:
        try:
            if self._root is None:
                self._root = run_id
                return
            if parent_run_id != self._root or not metadata:
                return
            node = metadata.get("langgraph_node")
            if not isinstance(node, str) or node.startswith("__"):
                return
            step = metadata.get("langgraph_step")
            step = step if isinstance(step, int) else None
            task = _Task(node, step, str(metadata.get("langgraph_checkpoint_ns") or node), inputs)
            self._tasks[run_id] = task
            self._admit(task)
        except Exception:
            swallowed(_log, "langgraph chain start")

    def on_chain_end(
        self, outputs: Any, *, run_id: Any, parent_run_id: Any = None, **kw: Any
    ) -> None:
        try:
            if run_id == self._root:
                self._finish(
                    sc.RUN_STATUS_INTERRUPTED if self._new_waits else sc.RUN_STATUS_COMPLETED
                )
                return
            task = self._tasks.pop(run_id, None)
            if task is None:
                return
            items = outputs if isinstance(outputs, (list, tuple)) else (outputs,)
            # A root node's Command(graph=PARENT) would leave the graph: not a handoff.
            commands = [i for i in items if isinstance(i, Command) and i.graph != Command.PARENT]
            updates = [i.update for i in commands] + [i for i in items if isinstance(i, Mapping)]
            self._task_ended(task, commands, updates)
        except Exception:
            swallowed(_log, "langgraph chain end")

    def on_chain_error(
        self, error: BaseException, *, run_id: Any, parent_run_id: Any = None, **kw: Any
    ) -> None:
        try:
            if run_id == self._root:
                if isinstance(error, GraphRecursionError):
                    status = sc.RUN_STATUS_MAX_TURNS
                elif isinstance(error, GeneratorExit):
                    status = sc.RUN_STATUS_INTERRUPTED
                else:
                    status = sc.RUN_STATUS_FAILED
                self._finish(status)
                return
            # Only the root node's own error is handled: the same ParentCommand or
            # GraphInterrupt reached us before from each level below it.
            task = self._tasks.pop(run_id, None)
            if task is None:
                return
            if isinstance(error, ParentCommand):
                cmd = error.args[0] if error.args else None
                if isinstance(cmd, Command) and cmd.graph != Command.PARENT:
                    # LangGraph hands this command to the node's writers: its goto,
                    # and its static and conditional edges too, as if it had returned it.
                    self._task_ended(task, [cmd], [cmd.update])
            elif isinstance(error, GraphInterrupt):
                for itr in (error.args[0] if error.args else ()) or ():
                    self._interrupted(task, itr)
        except Exception:
            swallowed(_log, "langgraph chain error")

    # -- tools: which tool call carried a handoff -----------------------------------

    def on_tool_start(
        self,
        serialized: Any,
        input_str: Any,
        *,
        run_id: Any,
        metadata: Any = None,
        tool_call_id: Any = None,
        **kw: Any,
    ) -> None:
        try:
            if isinstance(tool_call_id, str) and metadata:
                ns = str(metadata.get("langgraph_checkpoint_ns") or "")
                self._tool_runs[run_id] = (tool_call_id, ns.split("|", 1)[0])
        except Exception:
            swallowed(_log, "langgraph tool start")

    def on_tool_end(self, output: Any, *, run_id: Any, **kw: Any) -> None:
        try:
            found = self._tool_runs.pop(run_id, None)
            if found is None:
                return
            items = output if isinstance(output, (list, tuple)) else (output,)
            for item in items:
                if isinstance(item, Command) and item.goto:
                    call_id, top = found
                    self._tool_commands.setdefault(top, []).append(
                        (call_id, [t for t, _ in goto_targets(item.goto)])
                    )
        except Exception:
            swallowed(_log, "langgraph tool end")

    def on_tool_error(self, error: BaseException, *, run_id: Any, **kw: Any) -> None:
        self._tool_runs.pop(run_id, None)

    # -- evidence ---------------------------------------------------------------------

    def _task_ended(self, task: _Task, commands: list[Any], updates: list[Any]) -> None:
        """A root node's step is done: record the handoffs its writes carry.

        Each `goto` target of its Commands, then each static edge to an agent it did not
        already go to (both known now), then its conditional edges (known only when their
        destination starts: remembered for `_admit`). Edges count from agents only; a
        Command from any root node, to an agent: a root-level ToolNode running a handoff
        tool is then the sender (LangGraph does not say which agent the ToolNode serves).
        """
        info = self._info
        if not commands and not info.is_agent(task.node):
            return
        run, ins = self._run, self._ins
        settings = ins._settings
        # LangGraph's task id: the same task re-run after a resume keeps it.
        task_key = task.ns.rsplit(":", 1)[-1] if ":" in task.ns else f"{task.node}.{task.step}"
        # (handoff id, to, reason, tool call id, closed in the update)
        planned: list[tuple[str, str, str, str | None, bool | None]] = []
        going: set[str] = set()
        for n, cmd in enumerate(commands):
            targets = [
                (to, why)
                for to, why in goto_targets(cmd.goto)
                if to != END and to != task.node and info.may_receive(to)
            ]
            if not targets:
                continue
            call_id = self._tool_call_for(task.ns, [to for to, _ in targets])
            closed: bool | None = None
            if call_id is not None:
                messages = dict(items(cmd.update)).get(settings.messages_key)
                closed = tool_closed(messages, call_id)
            for i, (to, why) in enumerate(targets):
                # Command i of a step: ".{i}" for the first (the ids of earlier releases).
                hid = f"{task_key}.{i}" if n == 0 else f"{task_key}.{n}.{i}"
                planned.append((hid, to, why, call_id, closed))
                going.add(to)
        # (`info.edges` and `info.branches` hold agents' edges only.)
        for i, to in enumerate(info.edges.get(task.node, ())):
            if to not in going:
                planned.append((f"{task_key}.e{i}", to, sc.REASON_EDGE, None, None))
        branches = info.branches.get(task.node, ())
        if not planned and not branches:
            return
        fresh: list[tuple[str, str, str, str | None]] = []
        with run.lock:
            for hid, to, why, call_id, closed in planned:
                if call_id is not None:
                    run.handoff_calls.add(call_id)
                if hid in run.handoffs:
                    continue
                run.handoffs.add(hid)
                run.pending.setdefault(to, []).append(Pending(hid, to, task.step, call_id, closed))
                fresh.append((hid, to, why, call_id))
            if not fresh and not branches:
                return
            fp, version = progress(
                run, info, settings.messages_key, task.state, [u for u in updates if u]
            )
            before = self._control_before(task)
            for ends in branches:
                run.branches.append(
                    Branch(task.node, task_key, task.step, ends, fp, version, before)
                )
        routes = info.routes.get(task.node)
        for hid, to, why, call_id in fresh:
            declared = None
            if why == sc.REASON_EDGE:
                declared = True
            elif routes is not None:
                dests, complete = routes
                declared = True if to in dests else (False if complete else None)
            ins._recorder.handoff_requested(
                run.run_id,
                hid,
                from_agent=task.node,
                to_agent=to,
                turn=task.step,
                fingerprint=fp or None,
                state_version=version,
                route_declared=declared,
                tool_call_id=call_id,
                goto=to,
                control_before=before,
                reason=why,
                kind=sc.KIND_HANDOFF,
                unobserved=_UNOBSERVED if call_id is not None else _UNOBSERVED_NO_TOOL,
                agent=task.node,
                conversation_id=run.conversation_id,
            )

    def _control_before(self, task: _Task) -> str | None:
        """Who holds control as the sender sees it: the control key where the graph keeps
        one (that is what catches a stale key), else the runtime's view: the sender."""
        key = self._ins._settings.control_key
        if key and self._info.control_tracked:
            return agent_name(state_get(task.state, key))
        return task.node

    def _control_after(self, task: _Task) -> str | None:
        key = self._ins._settings.control_key
        if key and self._info.control_tracked:
            return agent_name(state_get(task.state, key)) or UNSET_AGENT
        return task.node

    def _tool_call_for(self, ns: str, targets: list[str]) -> str | None:
        found = self._tool_commands.pop(ns, None)
        if not found:
            return None
        for call_id, gotos in found:
            if any(t in gotos for t in targets):
                return call_id
        return found[0][0]

    def _admit(self, task: _Task) -> None:
        run = self._run
        branched: list[tuple[str, Branch]] = []
        with run.lock:
            if task.step is not None:
                if run.first_step is None or task.step < run.first_step:
                    run.first_step = task.step
                if run.last_step is None or task.step >= run.last_step:
                    run.last_step = task.step
                    run.last_agent = task.node
                # A conditional edge leads to the very next superstep, or nowhere (END).
                run.branches = [
                    b for b in run.branches if b.step is None or b.step >= task.step - 1
                ]
            waiting = run.pending.get(task.node)
            # Only handoffs from an earlier superstep: the destination of a handoff made
            # in this step cannot already be running.
            admitted = [
                p
                for p in waiting or ()
                if p.step is None or task.step is None or p.step < task.step
            ]
            if admitted:
                rest = [p for p in waiting or () if p not in admitted]
                if rest:
                    run.pending[task.node] = rest
                else:
                    del run.pending[task.node]
            elif self._info.is_agent(task.node):
                # Nothing else sent it here: a conditional edge of the last step did.
                dest_key = task.ns.rsplit(":", 1)[-1] if ":" in task.ns else task.node
                for b in run.branches:
                    if (
                        b.sender != task.node
                        and (b.ends is None or task.node in b.ends)
                        and (b.step is None or task.step is None or b.step < task.step)
                    ):
                        hid = f"{b.task_key}.{dest_key}"
                        if hid not in run.handoffs:
                            run.handoffs.add(hid)
                            branched.append((hid, b))
            if not admitted and not branched:
                return
        settings = self._ins._settings
        after = self._control_after(task)
        messages = state_get(task.state, settings.messages_key)
        recorder = self._ins._recorder
        for p in admitted:
            closed = None
            if p.tool_call_id is not None:
                closed = tool_closed(messages, p.tool_call_id)
                if closed is None:
                    closed = p.closed_in_update
            recorder.handoff_transferred(
                run.run_id,
                p.handoff_id,
                goto=p.to_agent,
                control_after=after,
                tool_call_closed=closed,
                destination_started=True,
                agent=task.node,
                conversation_id=run.conversation_id,
            )
        for hid, b in branched:
            # Request, transfer and admission are all known now: one span.
            recorder.handoff_requested(
                run.run_id,
                hid,
                from_agent=b.sender,
                to_agent=task.node,
                turn=b.step,
                fingerprint=b.fingerprint or None,
                state_version=b.state_version,
                route_declared=True if b.ends is not None else None,
                goto=task.node,
                control_before=b.control_before,
                control_after=after,
                destination_started=True,
                reason=sc.REASON_EDGE,
                kind=sc.KIND_HANDOFF,
                unobserved=_UNOBSERVED_NO_TOOL,
                agent=task.node,
                conversation_id=run.conversation_id,
            )

    def _interrupted(self, task: _Task, itr: Any) -> None:
        token = getattr(itr, "id", None)
        if not isinstance(token, str):
            return
        run = self._run
        with run.lock:
            if token in run.waits_seen:
                return
            run.waits_seen.add(token)
            run.open_waits.add(token)
        self._new_waits.append((token, wait_facts(getattr(itr, "value", None)), task.node))

    def _finish(self, status: str) -> None:
        if self._ended:
            return
        self._ended = True
        run, ins = self._run, self._ins
        settings = ins._settings
        now = time.time()
        for token, facts, node in self._new_waits:
            deadline = facts.get("deadline_ns", facts.get("deadline"))
            if deadline is None and settings.wait_timeout_s is not None:
                deadline = now + settings.wait_timeout_s
            ins._recorder.wait_checkpointed(
                run.run_id,
                owner=facts.get("owner") or settings.wait_owner,
                reason=facts.get("reason") or settings.wait_reason,
                deadline=deadline,
                resume_token_id=token,
                state_persisted=self._persisted,
                agent=node,
                conversation_id=run.conversation_id,
            )
        with run.lock:
            run.open = status == sc.RUN_STATUS_INTERRUPTED
            final, turns = run.last_agent, run.turns
        ins._recorder.run_ended(
            run.run_id,
            status,
            final_agent=final,
            turns=turns,
            conversation_id=run.conversation_id,
        )


def goto_targets(goto: Any) -> list[tuple[str, str]]:
    """(target node, reason code) of each item of a Command's `goto`."""
    out: list[tuple[str, str]] = []
    for item in goto if isinstance(goto, (list, tuple)) else (goto,):
        if isinstance(item, Send):
            out.append((item.node, sc.REASON_SEND))  # type: ignore[attr-defined]
        elif isinstance(item, str):
            out.append((item, sc.REASON_COMMAND))
    return out


def has_our_handler(callbacks: Any) -> bool:
    if callbacks is None:
        return False
    handlers: Sequence[Any] = (
        callbacks
        if isinstance(callbacks, (list, tuple))
        else [*getattr(callbacks, "handlers", ()), *getattr(callbacks, "inheritable_handlers", ())]
    )
    return any(isinstance(h, HandoffCallbackHandler) for h in handlers)


def with_handler(callbacks: Any, handler: Any) -> Any:
    if callbacks is None:
        return [handler]
    if isinstance(callbacks, (list, tuple)):
        return [*callbacks, handler]
    # A callback manager: add to a copy, inherited so subgraphs and tools report too.
    manager = callbacks.copy()
    manager.add_handler(handler, inherit=True)
    return manager
