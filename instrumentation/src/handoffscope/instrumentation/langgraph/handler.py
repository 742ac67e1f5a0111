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
from .graph import UNSET_AGENT, GraphInfo, agent_name, graph_info, state_get
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


NESTED_SEPARATOR = "/"
"""Joins the agent that invoked a team graph to the team's node names: `research_team/search`."""


@dataclass(frozen=True)
class _Scope:
    """A graph whose agent nodes are agents of the run: the root graph, or a team graph
    invoked inside the node of one of the run's agents (see the package docstring)."""

    info: GraphInfo
    prefix: str = ""
    """Prepended to the graph's node names to name its agents ("" for the root graph)."""
    turn: int | None = None
    """A team graph's handoffs take the root superstep they happen in as their turn (its own
    steps restart at 1 and would sort before earlier handoffs of the run)."""

    @property
    def nested(self) -> bool:
        return bool(self.prefix)


@dataclass
class _Task:
    node: str
    step: int | None
    ns: str
    state: Any
    scope: _Scope

    @property
    def agent(self) -> str:
        return self.scope.prefix + self.node

    @property
    def turn(self) -> int | None:
        return self.scope.turn if self.scope.nested else self.step


class HandoffCallbackHandler(BaseCallbackHandler):
    """Watches one root invocation of a compiled graph; see the package docstring.

    Callbacks arrive on the caller's thread and on LangGraph's worker threads; the
    run's memory is guarded by its lock, and every event is idempotent.
    """

    # Cheap and non-blocking: call it inline in async runs instead of hopping threads.
    run_inline = True
    # Model starts and retriever events carry content and tell us nothing about handoffs.
    # Model ENDS are read (on_llm_end), for their usage counts and model name only.
    ignore_llm = False
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
        self._root_scope = _Scope(info)
        self._persisted = persisted
        self._root: Any = None
        self._tasks: dict[Any, _Task] = {}
        self._by_ns: dict[str, _Task] = {}
        """Running tasks (root and team nodes) by checkpoint namespace."""
        self._scopes: dict[str, _Scope] = {}
        """Team graphs running inside a task, by that task's checkpoint namespace."""
        self._tool_runs: dict[Any, tuple[str, str]] = {}
        self._tool_commands: dict[str, list[tuple[str, list[str], bool]]] = {}
        """Task namespace -> (tool call id, goto targets, aimed at the parent graph) of each
        Command its tools returned."""
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
            if not metadata:
                return
            node = metadata.get("langgraph_node")
            if not isinstance(node, str) or node.startswith("__"):
                return
            ns = str(metadata.get("langgraph_checkpoint_ns") or node)
            scope = self._root_scope if parent_run_id == self._root else self._team(ns, node)
            if scope is None:
                return
            step = metadata.get("langgraph_step")
            step = step if isinstance(step, int) else None
            task = _Task(node, step, ns, inputs, scope)
            self._tasks[run_id] = task
            self._by_ns[ns] = task
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
            task = self._end_task(run_id)
            if task is None:
                return
            items = outputs if isinstance(outputs, (list, tuple)) else (outputs,)
            # A root node's Command(graph=PARENT) would leave the graph: not a handoff.
            commands = [i for i in items if isinstance(i, Command) and i.graph != Command.PARENT]
            updates = [i.update for i in commands] + [i for i in items if isinstance(i, Mapping)]
            self._task_ended(task, commands, updates)
            self._tool_commands.pop(task.ns, None)
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
            # Only a task's own error is handled: the same ParentCommand or GraphInterrupt
            # reached us before from each level below it. (A team graph's recursion error
            # ends its scope here, and the run when it reaches the root.)
            task = self._end_task(run_id)
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
            self._tool_commands.pop(task.ns, None)
        except Exception:
            swallowed(_log, "langgraph chain error")

    # -- model calls: usage per leg -------------------------------------------------

    def on_llm_end(self, response: Any, *, run_id: Any, **kw: Any) -> None:
        """One model call ended: sum its usage into the run's current leg (never content).

        The recorder puts the leg's totals on the span that ends it: the sender's next
        `handoff.request`, or `handoff.run` (docs/semconv.md, "Usage")."""
        try:
            input_tokens, output_tokens, calls, model = llm_usage(response)
            self._ins._recorder.record_usage(
                self._run.run_id,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                calls=calls,
                model=model,
            )
        except Exception:
            swallowed(_log, "langgraph llm end")

    # -- team graphs invoked inside a node ----------------------------------------------

    def nested(self, ns: str, graph: Any) -> None:
        """`graph` is about to run inside the task at checkpoint namespace `ns` (called by
        the instrumentor's stream wrapper): observe it as a team of the run when that task
        is an agent's node function (not the agent's own compiled graph) and the graph has
        two agents or more (a lone react agent inside a node is that agent at work)."""
        try:
            task = self._by_ns.get(ns)
            if task is None:
                return
            info = task.scope.info
            if not info.is_agent(task.node) or task.node in info.subgraph_nodes:
                return
            prefix = task.agent + NESTED_SEPARATOR
            inner = graph_info(graph, self._ins._settings, prefix)
            if len(inner.agents) < 2:
                return
            self._scopes[ns] = _Scope(inner, prefix, task.turn)
        except Exception:
            swallowed(_log, "langgraph nested graph")

    def _team(self, ns: str, node: str) -> _Scope | None:
        """The team graph whose node this chain is, if it is one: one level below a task
        that invoked a team. (Chains inside a task carry the task's own namespace: the
        first one is the task.)"""
        outer, sep, last = ns.rpartition("|")
        scope = self._scopes.get(outer) if sep else None
        if scope is None or ns in self._by_ns or last.split(":", 1)[0] != node:
            return None
        return scope

    def _end_task(self, run_id: Any) -> _Task | None:
        task = self._tasks.pop(run_id, None)
        if task is None:
            return None
        self._by_ns.pop(task.ns, None)
        scope = self._scopes.pop(task.ns, None)
        if scope is not None:
            # The team graph has returned (or raised): what it requested and never started
            # can no longer start, and its conditional edges lead nowhere now.
            run = self._run
            with run.lock:
                for to in [t for t in run.pending if t.startswith(scope.prefix)]:
                    del run.pending[to]
                run.branches = [b for b in run.branches if b.scope != scope.prefix]
        return task

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
                self._tool_runs[run_id] = (tool_call_id, ns)
        except Exception:
            swallowed(_log, "langgraph tool start")

    def on_tool_end(self, output: Any, *, run_id: Any, **kw: Any) -> None:
        try:
            found = self._tool_runs.pop(run_id, None)
            if found is None:
                return
            call_id, ns = found
            # The task the tool works for: the deepest running task around it (a root
            # agent's subgraph runs its tools a level or two below the agent's task).
            while ns and ns not in self._by_ns:
                ns = ns.rpartition("|")[0]
            if not ns:
                return
            items = output if isinstance(output, (list, tuple)) else (output,)
            for item in items:
                if isinstance(item, Command) and item.goto:
                    self._tool_commands.setdefault(ns, []).append(
                        (
                            call_id,
                            [t for t, _ in goto_targets(item.goto)],
                            item.graph == Command.PARENT,
                        )
                    )
        except Exception:
            swallowed(_log, "langgraph tool end")

    def on_tool_error(self, error: BaseException, *, run_id: Any, **kw: Any) -> None:
        self._tool_runs.pop(run_id, None)

    # -- evidence ---------------------------------------------------------------------

    def _task_ended(self, task: _Task, commands: list[Any], updates: list[Any]) -> None:
        """A task's step is done: record the handoffs its writes carry.

        Each `goto` target of its Commands, then each static edge to an agent it did not
        already go to (both known now), then its conditional edges (known only when their
        destination starts: remembered for `_admit`). Edges count from agents only; a
        Command from any node of the graph, to an agent: a ToolNode running a handoff tool
        is then the sender (LangGraph does not say which agent the ToolNode serves).
        Handoff tools of the same model turn whose Command LangGraph did not carry out
        (it takes the first `ParentCommand` of parallel tool calls) are recorded as
        ignored. Names and turns come from the task's scope (root graph or team graph).
        """
        scope = task.scope
        info, prefix = scope.info, scope.prefix
        if not commands and not info.is_agent(task.node):
            return
        run, ins = self._run, self._ins
        settings = ins._settings
        # LangGraph's task id: the same task re-run after a resume keeps it.
        task_key = task.ns.rsplit(":", 1)[-1] if ":" in task.ns else f"{task.agent}.{task.step}"
        # (handoff id, to, reason, tool call id, closed in the update, goto)
        planned: list[tuple[str, str, str, str | None, bool | None, str]] = []
        going: list[str] = []
        carried: set[str] = set()
        # (tool call id, goto targets, aimed at the parent graph) of the task's tools.
        tools = self._tool_commands.pop(task.ns, None) or []
        for n, cmd in enumerate(commands):
            targets = [
                (to, why)
                for to, why in goto_targets(cmd.goto)
                if to != END and to != task.node and info.may_receive(to)
            ]
            if not targets:
                continue
            messages = dict(items(cmd.update)).get(settings.messages_key)
            for i, (to, why) in enumerate(targets):
                # Each target's own tool call (parallel Sends come from different calls).
                call_id = next((c for c, gotos, _ in tools if to in gotos), None)
                if call_id is None and tools and not going:
                    call_id = tools[0][0]
                closed: bool | None = None
                if call_id is not None:
                    carried.add(call_id)
                    closed = tool_closed(messages, call_id)
                # Command i of a step: ".{i}" for the first (the ids of earlier releases).
                hid = f"{task_key}.{i}" if n == 0 else f"{task_key}.{n}.{i}"
                planned.append((hid, to, why, call_id, closed, to))
                going.append(to)
        # (`info.edges` and `info.branches` hold agents' edges only.)
        for i, to in enumerate(info.edges.get(task.node, ())):
            if to not in going:
                planned.append((f"{task_key}.e{i}", to, sc.REASON_EDGE, None, None, to))
        if carried:
            # Handoff tools of the same turn whose Command LangGraph dropped (each raises
            # its own ParentCommand; the first to arrive moves control): requested, never
            # carried out; `goto` says where the run went instead.
            dropped = [
                (call_id, to)
                for call_id, gotos, parent in tools
                if parent and call_id not in carried
                for to in gotos
                if to not in going and to != task.node and info.is_agent(to)
            ]
            for k, (call_id, to) in enumerate(dropped):
                planned.append(
                    (f"{task_key}.x{k}", to, sc.REASON_IGNORED_SAME_TURN, call_id, None, going[0])
                )
        branches = info.branches.get(task.node, ())
        if not planned and not branches:
            return
        fresh: list[tuple[str, str, str, str | None, str]] = []
        with run.lock:
            for hid, to, why, call_id, closed, goto in planned:
                if call_id is not None:
                    run.handoff_calls.add(call_id)
                if hid in run.handoffs:
                    continue
                run.handoffs.add(hid)
                if why != sc.REASON_IGNORED_SAME_TURN:
                    run.pending.setdefault(prefix + to, []).append(
                        Pending(hid, prefix + to, task.step, call_id, closed)
                    )
                fresh.append((hid, to, why, call_id, goto))
            if not fresh and not branches:
                return
            fp, version = progress(
                run, info, settings.messages_key, task.state, [u for u in updates if u]
            )
            before = self._control_before(task)
            for ends in branches:
                run.branches.append(
                    Branch(task.node, task_key, task.step, ends, fp, version, before, prefix)
                )
        routes = info.routes.get(task.node)
        for hid, to, why, call_id, goto in fresh:
            declared = None
            if why == sc.REASON_EDGE:
                declared = True
            elif routes is not None:
                dests, complete = routes
                declared = True if to in dests else (False if complete else None)
            ins._recorder.handoff_requested(
                run.run_id,
                hid,
                from_agent=task.agent,
                to_agent=prefix + to,
                turn=task.turn,
                fingerprint=fp or None,
                state_version=version,
                route_declared=declared,
                tool_call_id=call_id,
                goto=prefix + goto,
                control_before=before,
                reason=why,
                kind=sc.KIND_HANDOFF,
                unobserved=_UNOBSERVED if call_id is not None else _UNOBSERVED_NO_TOOL,
                agent=task.agent,
                conversation_id=run.conversation_id,
            )

    def _control_before(self, task: _Task) -> str | None:
        """Who holds control as the sender sees it: the control key where the graph keeps
        one (that is what catches a stale key), else the runtime's view: the sender."""
        key = self._ins._settings.control_key
        if key and task.scope.info.control_tracked:
            held = agent_name(state_get(task.state, key))
            return None if held is None else task.scope.prefix + held
        return task.agent

    def _control_after(self, task: _Task) -> str | None:
        key = self._ins._settings.control_key
        if key and task.scope.info.control_tracked:
            held = agent_name(state_get(task.state, key))
            return UNSET_AGENT if held is None else task.scope.prefix + held
        return task.agent

    def _admit(self, task: _Task) -> None:
        run = self._run
        scope = task.scope
        agent = task.agent
        branched: list[tuple[str, Branch]] = []
        with run.lock:
            if scope.nested:
                # The run's turns are the root graph's supersteps; a team's agent at work
                # is still who holds the task (should the run end inside the team).
                if scope.info.is_agent(task.node):
                    run.last_agent = agent
            elif task.step is not None:
                if run.first_step is None or task.step < run.first_step:
                    run.first_step = task.step
                if run.last_step is None or task.step >= run.last_step:
                    run.last_step = task.step
                    run.last_agent = task.node
            if task.step is not None:
                # A conditional edge leads to the very next superstep, or nowhere (END).
                run.branches = [
                    b
                    for b in run.branches
                    if b.scope != scope.prefix or b.step is None or b.step >= task.step - 1
                ]
            waiting = run.pending.get(agent)
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
                    run.pending[agent] = rest
                else:
                    del run.pending[agent]
            elif scope.info.is_agent(task.node):
                # Nothing else sent it here: a conditional edge of the last step did.
                dest_key = task.ns.rsplit(":", 1)[-1] if ":" in task.ns else agent
                for b in run.branches:
                    if (
                        b.scope == scope.prefix
                        and b.sender != task.node
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
                agent=agent,
                conversation_id=run.conversation_id,
            )
        for hid, b in branched:
            # Request, transfer and admission are all known now: one span.
            recorder.handoff_requested(
                run.run_id,
                hid,
                from_agent=scope.prefix + b.sender,
                to_agent=agent,
                turn=scope.turn if scope.nested else b.step,
                fingerprint=b.fingerprint or None,
                state_version=b.state_version,
                route_declared=True if b.ends is not None else None,
                goto=agent,
                control_before=b.control_before,
                control_after=after,
                destination_started=True,
                reason=sc.REASON_EDGE,
                kind=sc.KIND_HANDOFF,
                unobserved=_UNOBSERVED_NO_TOOL,
                agent=agent,
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
        self._new_waits.append((token, wait_facts(getattr(itr, "value", None)), task.agent))

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


def llm_usage(response: Any) -> tuple[int | None, int | None, int, str | None]:
    """(input tokens, output tokens, calls, model) of one `on_llm_end`'s `LLMResult`.

    Tokens: each generation message's `usage_metadata` (`input_tokens`, `output_tokens`:
    what LangChain's chat models report), else `llm_output["token_usage"]` (OpenAI-style
    `prompt_tokens` / `completion_tokens`, as older integrations report). Calls: one per
    prompt of the result (a chat model's call has one). Model: a message's
    `response_metadata["model_name"]` (or `["model"]`), else `llm_output["model_name"]`.
    Only these counts and names are read: never a message's content.
    """
    generations = getattr(response, "generations", None) or []
    input_tokens = output_tokens = 0
    reported = False
    model: str | None = None
    for batch in generations:
        for gen in batch or ():
            message = getattr(gen, "message", None)
            usage = getattr(message, "usage_metadata", None)
            if isinstance(usage, Mapping):
                reported = True
                input_tokens += _int(usage.get("input_tokens"))
                output_tokens += _int(usage.get("output_tokens"))
            meta = getattr(message, "response_metadata", None)
            if model is None and isinstance(meta, Mapping):
                model = _text(meta.get("model_name")) or _text(meta.get("model"))
    llm_output = getattr(response, "llm_output", None)
    token_usage: Any = None
    if isinstance(llm_output, Mapping):
        token_usage = llm_output.get("token_usage") or llm_output.get("usage")
        if not reported and isinstance(token_usage, Mapping):
            input_tokens = _int(token_usage.get("prompt_tokens", token_usage.get("input_tokens")))
            output_tokens = _int(
                token_usage.get("completion_tokens", token_usage.get("output_tokens"))
            )
        if model is None:
            model = _text(llm_output.get("model_name")) or _text(llm_output.get("model"))
    if not reported and not (isinstance(llm_output, Mapping) and token_usage):
        # The model reported no usage: the call counts, its tokens are unknown (not 0).
        return None, None, max(1, len(generations)), model
    return input_tokens, output_tokens, max(1, len(generations)), model


def _int(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def goto_targets(goto: Any) -> list[tuple[str, str]]:
    """(target node, reason code) of each item of a Command's `goto`."""
    out: list[tuple[str, str]] = []
    for item in goto if isinstance(goto, (list, tuple)) else (goto,):
        if isinstance(item, Send):
            out.append((item.node, sc.REASON_SEND))  # type: ignore[attr-defined]
        elif isinstance(item, str):
            out.append((item, sc.REASON_COMMAND))
    return out


def our_handler(callbacks: Any) -> HandoffCallbackHandler | None:
    """Our handler among a config's callbacks (a list or a callback manager), if there."""
    if callbacks is None:
        return None
    handlers: Sequence[Any] = (
        callbacks
        if isinstance(callbacks, (list, tuple))
        else [*getattr(callbacks, "handlers", ()), *getattr(callbacks, "inheritable_handlers", ())]
    )
    return next((h for h in handlers if isinstance(h, HandoffCallbackHandler)), None)


def with_handler(callbacks: Any, handler: Any) -> Any:
    if callbacks is None:
        return [handler]
    if isinstance(callbacks, (list, tuple)):
        return [*callbacks, handler]
    # A callback manager: add to a copy, inherited so subgraphs and tools report too.
    manager = callbacks.copy()
    manager.add_handler(handler, inherit=True)
    return manager
