"""LangGraph adapter: handoff evidence from real compiled graphs, in two lines.

    from handoffscope.instrumentation import configure
    from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

    LangGraphInstrumentor().instrument(tracer_provider=configure(service_name="support"))

From then on every `invoke` / `stream` / `ainvoke` / `astream` (and `batch`, `stream_events`,
which go through them) of every compiled graph is observed. Nothing about the graph changes:
the instrumentor wraps `Pregel.stream` / `Pregel.astream` and adds one LangChain callback
handler to the call's config. `uninstrument()` removes the wrappers.

What it sees, and what it emits (names in `semconv`; at most two spans per handoff):

- **Agents** are the nodes of the graph you invoke (the root graph), except LangGraph's own
  `__...` nodes and `ToolNode`s (a root-level react agent's `model` <-> `tools` is one agent
  at work, not two agents handing off). A node may itself be a compiled subgraph with its
  own model and tools (the swarm / supervisor shape). `instrument(agent_nodes=[...])` names
  the agents yourself.
- **A handoff** is any transfer of control from one agent node to another, whatever
  carries it (`handoff.reason`):
  - `command` — a `Command(goto=...)` returned by a root node, or raised from inside its
    subgraph with `graph=Command.PARENT` (a handoff tool: langgraph-swarm's, langgraph-
    supervisor's). A `ParentCommand` bubbles through every level and reaches callbacks
    several times; it is recorded once, when it reaches the root node that hands off.
  - `send` — each `Send` of a `goto` (parallel destinations: one handoff each).
  - `edge` — a static edge (`add_edge("billing", "supervisor")`: langgraph-supervisor's
    workers return to the supervisor this way), recorded when the sender's step ends; or a
    conditional edge (`add_conditional_edges`), whose destination is known only when it
    starts in the next superstep, so request, transfer and admission go on one span then
    (`route.declared` true when the branch lists its destinations, absent when open-ended).
  `goto=END` and a node sending to itself are not handoffs. A `goto` or `Send` to a name
  that is no node is one: LangGraph drops it without running anything, so it is never
  admitted (the collector judges it `destination_not_started`).
- `handoff.request`, as soon as the handoff is known: `from_agent`, `to_agent`,
  `route.goto`, `route.declared` (is the target among the sender's declared destinations:
  its static and conditional edges, `Command[Literal[...]]` return annotation or
  `add_node(..., destinations=...)`; omitted when the node declares nothing or has an
  open-ended branch), `turn` (the superstep), `tool_call.id` (when a tool issued it),
  `control.before`, `fingerprint` and `state_version` (below), `reason`, `kind`
  (`handoff`) and `unobserved`: the boundaries this adapter cannot see — `context` always
  (LangGraph has no context contract), and `tool_protocol` when no tool call carried it.
- `handoff.transfer`, when the destination node starts: `destination.started=true`,
  `control.after` and `tool_call.closed` (does a `ToolMessage` with the handoff's own
  `tool_call_id` sit in the destination's messages). A destination that never starts
  (recursion limit, crash, a dropped `Send`) sends nothing more: the collector calls it
  `destination_not_started`.
- **Control.** Where the graph's state has the control key (`control_key`, default
  `active_agent`, as langgraph-swarm keeps it), `control.before` is the sender's view of it
  and `control.after` the destination's — a graph that declares the key but never set it
  reports `(unset)`, which is stale: that is how a handoff that forgot to move the key is
  caught. A graph without that key (langgraph-supervisor's) gets the runtime's own view:
  `control.before` is the sending node, `control.after` the node that actually started.
- `handoff.run` at start (`started`; with `run.outcome_required=true` under
  `instrument(require_outcome=True)`: the app declares its runs must be verified) and end:
  `completed`, `failed`, `interrupted` (a node called `interrupt()`, or the caller stopped
  iterating), `max_turns` (`GraphRecursionError`), with `run.final_agent` and `run.turns`
  (supersteps).
- `handoff.wait` when an `interrupt()` is checkpointed (`wait.resume_token_id` is the
  interrupt id, `wait.state_persisted` is true when the graph has a checkpointer and a
  thread id), and again with `wait.decision` when `Command(resume=...)` answers it.

**Run ids.** Each invocation is a run (`handoff.run_id`, a random hex id). The thread id
(`config["configurable"]["thread_id"]`) is exported as `gen_ai.conversation.id` (pass an
opaque id, or `export_thread_id=False`). A `Command(resume=...)` on a thread whose run is
waiting continues that run, in this process or another one: the run id is stored in the
checkpoint's metadata under `handoff.run_id`. Nodes that re-run after a resume are not
counted twice (handoff ids derive from LangGraph's own task ids; a destination is admitted
once).

**Loops.** A loop is the same destination getting the same task with no new work, so
`fingerprint` is the task — the keyed HMAC (`fingerprint()`) of the human messages' ids — and
`state_version` is progress: the number of *distinct units of work* produced in the run so
far, each unit a keyed HMAC. The units:

- each tool call (tool name + arguments) and each tool result (`ToolMessage`: name +
  content), except the handoff plumbing: calls that carried a handoff, tools named
  `transfer_to_...` / `transfer_back_to_...`, and langgraph-supervisor's hand-back pair
  (`response_metadata["__is_handoff_back"]`) — with their `ToolMessage`s;
- each AI message without tool calls (its text: the same answer twice is one unit);
- each state value other than the messages, the control key and managed values, per key
  (a list or tuple: one unit per element, so appending an identical note adds nothing).

Repeating work therefore adds nothing and new work adds one per unit: (to_agent,
fingerprint, state_version) repeats exactly when the same destination gets the same task
with no new work in between — a bounce, a supervisor re-dispatching the same request, a
retry that looks the same invoice up again — while a retry that produced something new is
not a loop. Units are read from the state the sender started from and the update its step
writes (work done inside a subgraph reaches the root state only through it). Each message
is digested once per run (remembered by message id); a run remembers its last 10,000
units and message digests — a unit forgotten and seen again counts as new, so a loop
longer than that goes unseen rather than work being mistaken for a loop. Content never
reaches a span: only keyed HMACs, ids, names and counts do.

**Waits.** Say who owns an approval, why, and until when, by merging `wait_details(...)` into
the interrupt value (it travels with the interrupt to your UI and into the checkpoint):

    from handoffscope.instrumentation.langgraph import wait_details
    answer = interrupt({"question": "Refund 80 EUR?",
                        **wait_details(owner="billing-lead", reason="refund_over_limit",
                                       deadline=time.time() + 3600)})

or set defaults for every wait: `instrument(wait_owner=..., wait_reason=..., wait_timeout_s=...)`.
The decision is read from the resume value's *shape* only: `True`/`False`;
`"approved"`/`"rejected"`/`"expired"`; a mapping with `decision`, `type` (`accept`, `edit`,
`response`, `approve` -> approved; `ignore`, `reject` -> rejected) or a boolean `approved`;
a `decisions` list (rejected if any is); a mapping keyed by interrupt id. Any other value
means the human answered, which counts as approved. Waits belong to the run (no
`handoff.id`): a resume served by another process cannot know which handoff a wait
followed, and the checkpoint and its decision must land on the same record.

**Outcomes.** A run that ends `completed` claims to be done; record the verifier's result or
the collector calls it a false completion. Inside a node (or after `invoke`, passing the
config you invoked with):

    instrumentor.record_outcome("refund_posted", passed, receipt_id=receipt.id)

**Limits.** Static breakpoints (`interrupt_before` / `interrupt_after`) are debugging
stops, not waits: such a run reports `completed`. Graphs invoked from inside a node on the
node's own config belong to the outer run; with a thread of their own they are runs of
their own. A `RemoteGraph` is not observed (its graph runs in another process — instrument
that one). Only the root graph's nodes are agents: handoffs inside a subgraph (a swarm
nested in a node) are that node's own work. A conditional edge's destination is recognised
by timing — an agent that starts in the superstep after the edge's sender, among the edge's
destinations, and that nothing else the adapter saw sent there. Adding any callback handler makes LangChain run its callback machinery for every
step; `bench/bench_adapter_langgraph.py` measures what that and the spans cost.

The instrumentor never raises into your graph: its failures are logged at debug level and
counted in `handoffscope.instrumentation.stats`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import re
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

from opentelemetry.trace import TracerProvider

from . import semconv as sc
from .fingerprint import fingerprint
from .recorder import HandoffRecorder, to_epoch_ns
from .singleton import ProcessSingleton
from .stats import stats

_log = logging.getLogger(__name__)

__all__ = ["WAIT_KEY", "LangGraphInstrumentor", "LangGraphSettings", "wait_details"]

WAIT_KEY = "handoffscope.wait"
"""Key of an interrupt value's mapping that holds the wait's owner, reason and deadline."""
UNSET_AGENT = "(unset)"
"""`control.after` when the graph declares the control key but the handoff never set it."""
RUN_ID_METADATA_KEY = sc.RUN_ID
"""Config (and so checkpoint) metadata key holding the run id, for resumes in another process."""

_APPROVE = frozenset({"approved", "approve", "accept", "accepted", "edit", "response", "yes"})
_REJECT = frozenset({"rejected", "reject", "ignore", "deny", "denied", "no"})
_INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")
_CHECKPOINT_COORDINATES = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")
_TASK_ID_KEY = "__pregel_task_id"
_MAX_REMEMBERED = 10_000
"""Per run: units of work and message digests remembered (least recently seen forgotten)."""
_PLUMBING_TOOL_PREFIXES = ("transfer_to_", "transfer_back_to_")
"""Tool names of handoff tools (langgraph-swarm, langgraph-supervisor): plumbing, not work."""
_HANDOFF_BACK_KEY = "__is_handoff_back"
"""`response_metadata` key langgraph-supervisor sets on its hand-back message pair."""
_UNOBSERVED = (sc.BOUNDARY_CONTEXT,)
"""LangGraph has no context contract: the context boundary is never observed."""
_UNOBSERVED_NO_TOOL = (sc.BOUNDARY_CONTEXT, sc.BOUNDARY_TOOL_PROTOCOL)
"""Nor the tool protocol when no tool call carried the handoff (edges, node Commands)."""
_CHECKPOINTER_KEY = "__pregel_checkpointer"

_last_run_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "handoffscope_langgraph_last_run", default=None
)


@dataclass(frozen=True)
class LangGraphSettings:
    """What `instrument(**settings)` accepts. Every field is optional."""

    control_key: str | None = "active_agent"
    """State key naming the agent that holds control. A graph without that key (or with
    `None` here) gets the runtime's own view: the sender before, the node that started after."""
    messages_key: str = "messages"
    """State key of the message list (tool protocol and progress are read from it)."""
    export_thread_id: bool = True
    """Export the thread id as `gen_ai.conversation.id` (it must be opaque)."""
    wait_owner: str | None = None
    """Owner of a wait whose interrupt value names none (a bounded code: `billing-lead`)."""
    wait_reason: str | None = None
    """Reason code of a wait whose interrupt value names none (`refund_over_limit`)."""
    wait_timeout_s: float | None = None
    """Deadline of a wait whose interrupt value names none: this many seconds after it."""
    max_threads: int = 10_000
    """Threads (and runs) remembered for resumes and outcomes; the oldest are forgotten."""
    agent_nodes: Collection[str] | None = None
    """Root node names that are agents (default: every root node except `__...` names and
    `ToolNode`s). Transfers between agents are handoffs; other nodes are steps of an agent."""
    require_outcome: bool = False
    """Declare that runs must be verified: the run-start span carries
    `run.outcome_required=True`, so "completed" without a passing outcome is a false completion."""


def wait_details(
    *,
    owner: str | None = None,
    reason: str | None = None,
    deadline: datetime | float | int | None = None,
) -> dict[str, dict[str, Any]]:
    """`{WAIT_KEY: {...}}` to merge into an `interrupt()` value: who owns the wait, why, until when.

    `owner` and `reason` are bounded codes (no spaces); `deadline` a datetime, epoch seconds
    or epoch nanoseconds. Only these three facts are read from the interrupt value.
    """
    facts: dict[str, Any] = {}
    if owner is not None:
        facts["owner"] = owner
    if reason is not None:
        facts["reason"] = reason
    ns = to_epoch_ns(deadline)
    if ns is not None:
        facts["deadline_ns"] = ns
    return {WAIT_KEY: facts}


# --- per-run memory ---------------------------------------------------------------------


class _Lru(OrderedDict):  # type: ignore[type-arg]
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = max(1, limit)

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


@dataclass
class _Pending:
    """A handoff requested and not yet admitted by its destination."""

    handoff_id: str
    to_agent: str
    step: int | None
    tool_call_id: str | None
    closed_in_update: bool | None


@dataclass
class _Branch:
    """A sender's conditional edge: its destination is known only when it starts."""

    sender: str
    task_key: str
    step: int | None
    ends: frozenset[str] | None
    """The branch's declared destinations; None when open-ended."""
    fingerprint: str
    state_version: int
    control_before: str | None


class _Run:
    """What the adapter remembers about one run, across its invocations (resumes)."""

    def __init__(self, run_id: str, conversation_id: str | None) -> None:
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.lock = threading.Lock()
        self.open = True
        self.handoffs: set[str] = set()
        """Handoff ids already emitted (a command bubbles; nodes re-run after resume)."""
        self.handoff_calls: set[str] = set()
        """Tool-call ids that carried a handoff: their messages are plumbing, not progress."""
        self.pending: dict[str, list[_Pending]] = {}
        self.branches: list[_Branch] = []
        """Conditional edges taken in the last superstep, waiting for their destination."""
        self.units: _Lru = _Lru(_MAX_REMEMBERED)
        """Digests of the units of work seen so far (see `_Progress`)."""
        self.work = 0
        """Distinct units of work produced so far: `handoff.state_version`."""
        self.message_units: _Lru = _Lru(_MAX_REMEMBERED)
        """Message id -> its unit entries, so each message is digested once per run."""
        self.open_waits: set[str] = set()
        self.waits_seen: set[str] = set()
        self.first_step: int | None = None
        self.last_step: int | None = None
        self.last_agent: str | None = None

    @property
    def turns(self) -> int | None:
        if self.first_step is None or self.last_step is None:
            return None
        return self.last_step - self.first_step + 1


# --- reading graphs and state without reading content -----------------------------------


@dataclass(frozen=True)
class _GraphInfo:
    routes: Mapping[str, tuple[frozenset[str], bool]]
    """node -> (declared destinations, whether that list is complete)."""
    value_keys: frozenset[str] | None
    """State keys whose values are work: the root state's channels less messages, control
    and managed values (None: the graph has no builder to tell, so every key but those)."""
    skip_keys: frozenset[str]
    """State keys that are never work: messages, control, managed values."""
    control_tracked: bool
    """The graph has a channel for the control key."""
    agents: frozenset[str]
    """Root nodes that are agents (see `LangGraphSettings.agent_nodes`)."""
    nodes: frozenset[str]
    """Every root node name: a goto to a name outside it is dropped by LangGraph."""
    edges: Mapping[str, tuple[str, ...]]
    """agent -> agents its static edges lead to."""
    branches: Mapping[str, tuple[frozenset[str] | None, ...]]
    """agent -> the destination sets of its conditional edges (None: open-ended)."""

    def is_agent(self, node: str) -> bool:
        return node in self.agents

    def may_receive(self, node: str) -> bool:
        """A goto target that could be a handoff: an agent, or a name that is no node at
        all (LangGraph drops it silently: a handoff that will never be admitted)."""
        return node in self.agents or node not in self.nodes


_graph_info_cache: weakref.WeakKeyDictionary[Any, _GraphInfo] = weakref.WeakKeyDictionary()


def _graph_info(graph: Any, settings: LangGraphSettings) -> _GraphInfo:
    try:
        cached = _graph_info_cache.get(graph)
    except TypeError:
        cached = None
    if cached is not None:
        return cached
    targets: dict[str, set[str]] = {}
    open_ended: set[str] = set()
    managed: set[str] = set()
    nodes: dict[str, Any] = {}
    edges: dict[str, set[str]] = {}
    branch_ends: dict[str, list[frozenset[str] | None]] = {}
    value_keys: set[str] | None = None
    builder = getattr(graph, "builder", None)
    if builder is None:
        nodes = {n: None for n in (getattr(graph, "nodes", None) or {})}
    else:
        nodes = dict(getattr(builder, "nodes", None) or {})
        value_keys = set(getattr(builder, "channels", None) or ())
        for name, spec in (getattr(builder, "nodes", None) or {}).items():
            ends = getattr(spec, "ends", None)
            if ends:
                targets.setdefault(name, set()).update(ends)  # dict ends: keys are nodes
        for start, end in getattr(builder, "edges", ()) or ():
            targets.setdefault(start, set()).add(end)
            edges.setdefault(start, set()).add(end)
        for starts, end in getattr(builder, "waiting_edges", ()) or ():
            for start in starts:
                targets.setdefault(start, set()).add(end)
                edges.setdefault(start, set()).add(end)
        for start, branches in (getattr(builder, "branches", None) or {}).items():
            for branch in branches.values():
                ends = getattr(branch, "ends", None)
                if ends is None:
                    open_ended.add(start)
                    targets.setdefault(start, set())
                    branch_ends.setdefault(start, []).append(None)
                else:
                    targets.setdefault(start, set()).update(ends.values())
                    branch_ends.setdefault(start, []).append(frozenset(ends.values()))
        managed.update(getattr(builder, "managed", None) or ())
    agents = _agent_nodes(nodes, settings)
    routes = {node: (frozenset(dests), node not in open_ended) for node, dests in targets.items()}
    skip = {settings.messages_key, *managed}
    if settings.control_key:
        skip.add(settings.control_key)
    channels = getattr(graph, "channels", None) or {}
    info = _GraphInfo(
        routes=routes,
        value_keys=None if value_keys is None else frozenset(value_keys - skip),
        skip_keys=frozenset(skip),
        control_tracked=bool(settings.control_key) and settings.control_key in channels,
        agents=agents,
        nodes=frozenset(nodes),
        edges={
            start: tuple(sorted(e for e in ends if e in agents and e != start))
            for start, ends in edges.items()
            if start in agents
        },
        branches={start: tuple(b) for start, b in branch_ends.items() if start in agents},
    )
    with contextlib.suppress(TypeError):  # an unhashable graph is just not cached
        _graph_info_cache[graph] = info
    return info


def _agent_nodes(nodes: Mapping[str, Any], settings: LangGraphSettings) -> frozenset[str]:
    if settings.agent_nodes is not None:
        return frozenset(settings.agent_nodes)
    try:
        from langgraph.prebuilt import ToolNode
    except ImportError:  # langgraph-prebuilt is optional: then no node is a ToolNode
        ToolNode = ()  # type: ignore[assignment,misc]  # noqa: N806
    # A ToolNode runs the tools of the agent beside it (a root-level react agent's
    # model <-> tools): a step of that agent, not an agent control moves to.
    return frozenset(
        name
        for name, spec in nodes.items()
        if not name.startswith("__") and not isinstance(getattr(spec, "runnable", None), ToolNode)
    )


def _get(state: Any, key: str | None) -> Any:
    if key is None or state is None:
        return None
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)


def _agent(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# Unit entries of a message: (role, tool-call id, digest). Roles: a human message (the
# task: its id, never digested), plumbing (a handoff's own messages), a tool call, a tool
# result, an answer (an AI message without tool calls).
_HUMAN, _PLUMBING, _CALL, _RESULT, _ANSWER = "human", "plumbing", "call", "result", "answer"
_Entry = tuple[str, "str | None", str]


def _is_plumbing_name(name: Any) -> bool:
    return isinstance(name, str) and name.startswith(_PLUMBING_TOOL_PREFIXES)


def _message_units(m: Any) -> tuple[_Entry, ...]:
    """A message's unit entries. Content only ever goes into a keyed HMAC (`fingerprint`)."""
    kind = getattr(m, "type", None)
    meta = getattr(m, "response_metadata", None)
    handoff_back = isinstance(meta, Mapping) and bool(meta.get(_HANDOFF_BACK_KEY))
    if kind == "human":
        mid = getattr(m, "id", None)
        return ((_HUMAN, mid if isinstance(mid, str) else None, ""),)
    if kind == "ai":
        calls = [c for c in getattr(m, "tool_calls", None) or () if isinstance(c, Mapping)]
        if not calls:
            if handoff_back:
                return ()
            return ((_ANSWER, None, fingerprint(_ANSWER, getattr(m, "content", None))),)
        out: list[_Entry] = []
        for c in calls:
            call_id = c.get("id") if isinstance(c.get("id"), str) else None
            name = c.get("name")
            if handoff_back or _is_plumbing_name(name):
                out.append((_PLUMBING, call_id, ""))
            else:
                out.append((_CALL, call_id, fingerprint((_CALL, name), c.get("args"))))
        return tuple(out)
    if kind == "tool":
        call_id = getattr(m, "tool_call_id", None)
        call_id = call_id if isinstance(call_id, str) else None
        name = getattr(m, "name", None)
        if handoff_back or _is_plumbing_name(name):
            return ((_PLUMBING, call_id, ""),)
        return ((_RESULT, call_id, fingerprint((_RESULT, name), getattr(m, "content", None))),)
    return ()


def _messages(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value] if hasattr(value, "type") else []


def _items(update: Any) -> list[tuple[Any, Any]]:
    """A state update's (key, value) pairs: a mapping, or a Command's list of pairs."""
    if isinstance(update, Mapping):
        return list(update.items())
    if isinstance(update, (list, tuple)):
        return [u for u in update if isinstance(u, tuple) and len(u) == 2]
    return []


def _state_items(state: Any) -> list[tuple[Any, Any]]:
    """A state's (key, value) pairs: a TypedDict state, or a dataclass / pydantic one."""
    if isinstance(state, Mapping):
        return list(state.items())
    attrs = getattr(state, "__dict__", None)
    if isinstance(attrs, dict):
        return [(k, v) for k, v in attrs.items() if not k.startswith("_")]
    return []


def _progress(
    run: _Run, info: _GraphInfo, messages_key: str, state: Any, updates: Sequence[Any]
) -> tuple[str, int]:
    """(task fingerprint, state_version) after a step; the module docstring says what counts.

    `state` is the state the sender started from, `updates` what its step writes: work an
    agent did inside its subgraph reaches the root state only through them. Call with
    `run.lock` held (the run's unit and message memories are shared by parallel tasks).
    """
    pairs = _state_items(state)
    for update in updates:
        pairs.extend(_items(update))
    human: list[str] = []
    seen_human: set[str] = set()
    plumbing = run.handoff_calls
    position = 0
    units: list[str] = []
    for key, value in pairs:
        if key == messages_key:
            for m in _messages(value):
                position += 1
                mid = getattr(m, "id", None)
                entries = run.message_units.get(mid) if isinstance(mid, str) else None
                if entries is None:
                    entries = _message_units(m)
                    if isinstance(mid, str):
                        run.message_units.put(mid, entries)
                for role, ref, digest in entries:
                    if role == _HUMAN:
                        hid = ref or f"#{position}"
                        if hid not in seen_human:
                            seen_human.add(hid)
                            human.append(hid)
                    elif role == _PLUMBING:
                        if ref is not None:
                            plumbing.add(ref)
                    elif ref is None or ref not in plumbing:
                        units.append(digest)
        elif (
            isinstance(key, str)
            and key not in info.skip_keys
            and (info.value_keys is None or key in info.value_keys)
        ):
            # One unit per element: appending an identical note adds nothing.
            for element in value if isinstance(value, (list, tuple)) else (value,):
                units.append(fingerprint(("state", key), element))
    for unit in units:
        if not unit:
            continue  # the HMAC failed (counted): no evidence either way
        if unit not in run.units:
            run.work += 1
        run.units.put(unit, True)
    return fingerprint(human), run.work


def _tool_closed(messages: Any, tool_call_id: str) -> bool | None:
    if not isinstance(messages, (list, tuple)):
        return None
    for m in reversed(messages):
        if getattr(m, "type", None) == "tool" and getattr(m, "tool_call_id", None) == tool_call_id:
            return True
    return False


def _decision(value: Any) -> str:
    """A wait decision from the resume value's shape; see the module docstring."""
    if isinstance(value, bool):
        return sc.WAIT_DECISION_APPROVED if value else sc.WAIT_DECISION_REJECTED
    if isinstance(value, str):
        word = value.strip().lower()
        if word == sc.WAIT_DECISION_EXPIRED:
            return sc.WAIT_DECISION_EXPIRED
        if word in _REJECT:
            return sc.WAIT_DECISION_REJECTED
        return sc.WAIT_DECISION_APPROVED
    if isinstance(value, Mapping):
        approved = value.get("approved")
        if isinstance(approved, bool):
            return _decision(approved)
        for key in ("decision", "type"):
            named = value.get(key)
            if isinstance(named, str) and named.strip().lower() in (
                _APPROVE | _REJECT | {sc.WAIT_DECISION_EXPIRED}
            ):
                return _decision(named)
        many = value.get("decisions")
        if isinstance(many, (list, tuple)) and many:
            found = [_decision(d) for d in many]
            for worst in (sc.WAIT_DECISION_REJECTED, sc.WAIT_DECISION_EXPIRED):
                if worst in found:
                    return worst
    return sc.WAIT_DECISION_APPROVED


def _wait_facts(value: Any) -> Mapping[str, Any]:
    if isinstance(value, (list, tuple)):
        value = next((v for v in value if isinstance(v, Mapping) and WAIT_KEY in v), None)
    if isinstance(value, Mapping):
        facts = value.get(WAIT_KEY)
        if isinstance(facts, Mapping):
            return facts
    return {}


def _targets(goto: Any, send_type: type) -> list[tuple[str, str]]:
    """(target node, reason code) of each item of a Command's `goto`."""
    items = goto if isinstance(goto, (list, tuple)) else (goto,)
    out: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, send_type):
            out.append((item.node, sc.REASON_SEND))  # type: ignore[attr-defined]
        elif isinstance(item, str):
            out.append((item, sc.REASON_COMMAND))
    return out


# --- the callback handler, one per root invocation --------------------------------------


@dataclass
class _Task:
    node: str
    step: int | None
    ns: str
    state: Any


_handler_type: type | None = None


def _handler_class() -> type:
    """The handler class, built on first use so langchain-core is imported lazily."""
    global _handler_type
    if _handler_type is not None:
        return _handler_type

    from langchain_core.callbacks import BaseCallbackHandler
    from langgraph.constants import END
    from langgraph.errors import GraphInterrupt, GraphRecursionError, ParentCommand
    from langgraph.types import Command, Send

    class HandoffCallbackHandler(BaseCallbackHandler):
        """Watches one root invocation of a compiled graph; see the module docstring.

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
            self, instrumentor: LangGraphInstrumentor, run: _Run, info: _GraphInfo, persisted: bool
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
                task = _Task(
                    node, step, str(metadata.get("langgraph_checkpoint_ns") or node), inputs
                )
                self._tasks[run_id] = task
                self._admit(task)
            except Exception:
                _swallow("chain start")

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
                commands = [
                    i for i in items if isinstance(i, Command) and i.graph != Command.PARENT
                ]
                updates = [i.update for i in commands] + [
                    i for i in items if isinstance(i, Mapping)
                ]
                self._task_ended(task, commands, updates)
            except Exception:
                _swallow("chain end")

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
                _swallow("chain error")

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
                _swallow("tool start")

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
                            (call_id, [t for t, _ in _targets(item.goto, Send)])
                        )
            except Exception:
                _swallow("tool end")

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
                    for to, why in _targets(cmd.goto, Send)
                    if to != END and to != task.node and info.may_receive(to)
                ]
                if not targets:
                    continue
                call_id = self._tool_call_for(task.ns, [to for to, _ in targets])
                closed: bool | None = None
                if call_id is not None:
                    messages = dict(_items(cmd.update)).get(settings.messages_key)
                    closed = _tool_closed(messages, call_id)
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
                    run.pending.setdefault(to, []).append(
                        _Pending(hid, to, task.step, call_id, closed)
                    )
                    fresh.append((hid, to, why, call_id))
                if not fresh and not branches:
                    return
                fp, version = _progress(
                    run, info, settings.messages_key, task.state, [u for u in updates if u]
                )
                before = self._control_before(task)
                for ends in branches:
                    run.branches.append(
                        _Branch(task.node, task_key, task.step, ends, fp, version, before)
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
                return _agent(_get(task.state, key))
            return task.node

        def _control_after(self, task: _Task) -> str | None:
            key = self._ins._settings.control_key
            if key and self._info.control_tracked:
                return _agent(_get(task.state, key)) or UNSET_AGENT
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
            branched: list[tuple[str, _Branch]] = []
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
            messages = _get(task.state, settings.messages_key)
            recorder = self._ins._recorder
            for p in admitted:
                closed = None
                if p.tool_call_id is not None:
                    closed = _tool_closed(messages, p.tool_call_id)
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
            self._new_waits.append((token, _wait_facts(getattr(itr, "value", None)), task.node))

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

    _handler_type = HandoffCallbackHandler
    return _handler_type


def _swallow(where: str) -> None:
    stats.error()
    _log.debug("handoffscope: langgraph %s failed", where, exc_info=True)


# --- the instrumentor -------------------------------------------------------------------


@dataclass
class _Plan:
    graph: Any
    config: Any
    thread_id: str | None
    resume: Any
    """The resume value of a `Command(resume=...)` input, else None."""
    continuing: bool
    run: _Run | None
    lookup: bool
    """The run may have started in another process: read the checkpoint to find it."""
    persisted: bool


class LangGraphInstrumentor(ProcessSingleton):
    """Instrument every compiled LangGraph graph in the process (OTel `BaseInstrumentor` shape).

    A process-wide singleton, like OpenTelemetry's instrumentors: `LangGraphInstrumentor()`
    always returns the same object, so instrumenting twice never wraps twice.
    """

    def _init(self) -> None:
        self._lock = threading.Lock()
        self._settings = LangGraphSettings()
        self._recorder = HandoffRecorder()
        self._originals: dict[str, Callable[..., Any]] = {}
        self._threads: _Lru = _Lru(self._settings.max_threads)
        self._pregel: type | None = None

    # -- OTel BaseInstrumentor shape --------------------------------------------------------

    @property
    def is_instrumented_by_opentelemetry(self) -> bool:
        return bool(self._originals)

    def instrumentation_dependencies(self) -> tuple[str, ...]:
        return ("langgraph >= 1.0", "langchain-core >= 1.0")

    def instrument(self, tracer_provider: TracerProvider | None = None, **settings: Any) -> None:
        """Start observing every graph. `settings`: the fields of `LangGraphSettings`.

        Unknown settings raise `TypeError` here, at setup, where a typo should be loud;
        nothing raises once graphs run.
        """
        known = {f.name for f in fields(LangGraphSettings)}
        unknown = set(settings) - known
        if unknown:
            raise TypeError(f"unknown LangGraphInstrumentor settings: {', '.join(sorted(unknown))}")
        with self._lock:
            self._settings = replace(LangGraphSettings(), **settings)
            self._recorder = HandoffRecorder(tracer_provider)
            self._threads = _Lru(self._settings.max_threads)
            _graph_info_cache.clear()
            if self._originals:
                return
            try:
                from langgraph.pregel import Pregel

                _handler_class()
            except ImportError:
                # As OTel's BaseInstrumentor does: a missing framework is logged, not raised.
                _log.warning(
                    "handoffscope: langgraph / langchain-core not importable; LangGraph "
                    "instrumentation skipped (pip install 'handoffscope-instrumentation[langgraph]')"
                )
                return
            self._pregel = Pregel
            self._originals = {"stream": Pregel.stream, "astream": Pregel.astream}
            Pregel.stream = self._wrap_stream(Pregel.stream)  # type: ignore[method-assign]
            Pregel.astream = self._wrap_astream(Pregel.astream)  # type: ignore[method-assign]

    def uninstrument(self) -> None:
        """Stop observing; graphs run exactly as before `instrument()`."""
        with self._lock:
            if self._pregel is not None:
                for name, original in self._originals.items():
                    setattr(self._pregel, name, original)
            self._originals = {}
            self._pregel = None

    # -- user-facing helpers ----------------------------------------------------------------

    wait_details = staticmethod(wait_details)

    def run_id(self, config: Mapping[str, Any] | None = None) -> str | None:
        """The run id for `config`'s thread; inside a node, of the running graph; else the
        last run this context started."""
        try:
            if config is not None:
                tid = (config.get("configurable") or {}).get("thread_id")
                if tid is not None:
                    run = self._threads.get(str(tid))
                    if run is not None:
                        return str(run.run_id)
                meta = config.get("metadata") or {}
                if isinstance(meta.get(RUN_ID_METADATA_KEY), str):
                    return str(meta[RUN_ID_METADATA_KEY])
            try:
                from langgraph.config import get_config

                found = (get_config().get("metadata") or {}).get(RUN_ID_METADATA_KEY)
                if isinstance(found, str):
                    return found
            except Exception:  # outside a runnable context: expected
                pass
            return _last_run_id.get()
        except Exception:
            _swallow("run id")
            return None

    def record_outcome(
        self,
        verifier: str,
        result: bool | str,
        *,
        receipt_id: str | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> bool:
        """Record a verifier's result for the current run (see `run_id`). Never raises."""
        rid = self.run_id(config)
        if rid is None:
            stats.drop_attribute(sc.RUN_ID)
            return False
        return self._recorder.outcome_verified(rid, verifier, result, receipt_id=receipt_id)

    # -- wrapping ---------------------------------------------------------------------------

    def _wrap_stream(self, original: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        ins = self

        @functools.wraps(original)
        def stream(
            graph: Any, input: Any, config: Any = None, *args: Any, **kwargs: Any
        ) -> Iterator[Any]:
            plan = ins._plan(graph, input, config)
            if plan is not None:
                snapshot = None
                if plan.lookup:
                    try:
                        snapshot = graph.get_state(config)
                    except Exception:
                        _swallow("checkpoint lookup")
                new_config = ins._start(plan, snapshot)
                if new_config is not None:
                    config = new_config
            return original(graph, input, config, *args, **kwargs)

        return stream

    def _wrap_astream(
        self, original: Callable[..., AsyncIterator[Any]]
    ) -> Callable[..., AsyncIterator[Any]]:
        ins = self

        @functools.wraps(original)
        async def astream(
            graph: Any, input: Any, config: Any = None, *args: Any, **kwargs: Any
        ) -> AsyncIterator[Any]:
            plan = ins._plan(graph, input, config)
            if plan is not None:
                snapshot = None
                if plan.lookup:
                    try:
                        snapshot = await graph.aget_state(config)
                    except Exception:
                        _swallow("checkpoint lookup")
                new_config = ins._start(plan, snapshot)
                if new_config is not None:
                    config = new_config
            inner = original(graph, input, config, *args, **kwargs)
            try:
                async for chunk in inner:
                    yield chunk
            finally:
                # Close the graph's own generator now, not at garbage collection, so its
                # end (and our run end) happens when the caller stops.
                await inner.aclose()  # type: ignore[attr-defined]

        return astream

    def _plan(self, graph: Any, input: Any, config: Any) -> _Plan | None:
        """Decide, without I/O, whether this call is a root invocation and of which run."""
        try:
            from langchain_core.runnables.config import var_child_runnable_config
            from langgraph.types import Command

            conf = (config or {}).get("configurable") or {}
            if _TASK_ID_KEY in conf:
                return None  # a subgraph run as a task: the root's handler sees it
            ambient = var_child_runnable_config.get() or {}
            ambient_conf = ambient.get("configurable") or {}
            if _TASK_ID_KEY in ambient_conf and not any(
                conf.get(k) for k in _CHECKPOINT_COORDINATES
            ):
                return None  # a graph invoked inside a node, on the node's config
            if _has_our_handler((config or {}).get("callbacks")):
                return None
            tid = conf.get("thread_id")
            thread_id = str(tid) if tid is not None else None
            checkpointer = conf.get(_CHECKPOINTER_KEY) or getattr(graph, "checkpointer", None)
            persisted = bool(thread_id) and checkpointer not in (None, False)
            is_command = isinstance(input, Command)
            resume = input.resume if is_command else None
            continuing = input is None or is_command
            run = None
            if continuing and thread_id is not None:
                found = self._threads.get(thread_id)
                if found is not None and found.open:
                    run = found
            lookup = run is None and resume is not None and persisted
            return _Plan(graph, config, thread_id, resume, continuing, run, lookup, persisted)
        except Exception:
            _swallow("plan")
            return None

    def _start(self, plan: _Plan, snapshot: Any) -> dict[str, Any] | None:
        """Find or open the run, record resume decisions, and return the call's new config."""
        try:
            settings = self._settings
            conv = plan.thread_id if settings.export_thread_id else None
            run, is_new = plan.run, False
            pending_tokens: list[str] = []
            if run is None and snapshot is not None:
                rid = (getattr(snapshot, "metadata", None) or {}).get(RUN_ID_METADATA_KEY)
                pending_tokens = [
                    i.id
                    for i in (getattr(snapshot, "interrupts", None) or ())
                    if isinstance(getattr(i, "id", None), str)
                ]
                if isinstance(rid, str) and rid and pending_tokens:
                    run = _Run(rid, conv)
                    run.open_waits.update(pending_tokens)
                    run.waits_seen.update(pending_tokens)
            if run is None:
                run, is_new = _Run(uuid.uuid4().hex, conv), True
            if plan.thread_id is not None:
                with self._lock:
                    self._threads.put(plan.thread_id, run)
            _last_run_id.set(run.run_id)
            if is_new:
                self._recorder.run_started(
                    run.run_id,
                    conversation_id=conv,
                    outcome_required=True if settings.require_outcome else None,
                )
            if plan.resume is not None:
                self._decide(run, plan.resume)
            handler = _handler_class()(self, run, _graph_info(plan.graph, settings), plan.persisted)
            config = dict(plan.config or {})
            config["callbacks"] = _with_handler(config.get("callbacks"), handler)
            config["metadata"] = {**(config.get("metadata") or {}), RUN_ID_METADATA_KEY: run.run_id}
            return config
        except Exception:
            _swallow("start")
            return None

    def _decide(self, run: _Run, resume: Any) -> None:
        with run.lock:
            waiting = sorted(run.open_waits)
        if (
            isinstance(resume, Mapping)
            and resume
            and all(isinstance(k, str) and (k in waiting or _INTERRUPT_ID.match(k)) for k in resume)
        ):
            answers = {k: _decision(v) for k, v in resume.items()}
        else:
            # One value resumes every pending interrupt.
            answers = {token: _decision(resume) for token in waiting}
        for token, decision in answers.items():
            with run.lock:
                if token not in run.open_waits and token in run.waits_seen:
                    continue  # already decided
                run.open_waits.discard(token)
                run.waits_seen.add(token)
            self._recorder.wait_decided(
                run.run_id, decision, resume_token_id=token, conversation_id=run.conversation_id
            )


def _has_our_handler(callbacks: Any) -> bool:
    handler_type = _handler_type
    if handler_type is None or callbacks is None:
        return False
    handlers: Sequence[Any] = (
        callbacks
        if isinstance(callbacks, (list, tuple))
        else [*getattr(callbacks, "handlers", ()), *getattr(callbacks, "inheritable_handlers", ())]
    )
    return any(isinstance(h, handler_type) for h in handlers)


def _with_handler(callbacks: Any, handler: Any) -> Any:
    if callbacks is None:
        return [handler]
    if isinstance(callbacks, (list, tuple)):
        return [*callbacks, handler]
    # A callback manager: add to a copy, inherited so subgraphs and tools report too.
    manager = callbacks.copy()
    manager.add_handler(handler, inherit=True)
    return manager
