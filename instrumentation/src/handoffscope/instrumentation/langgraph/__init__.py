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
- **Teams: a graph invoked inside an agent's node.** A node function that calls another
  graph (`research_graph.invoke(...)`, as LangGraph's "Hierarchical Agent Teams" tutorial's
  top-level nodes do) runs a team: that graph's agent nodes are agents of the *same run*
  (the outer invocation is the run), found by the same rule, and named
  `<calling agent>/<node>` — `research_team/supervisor` is the research team's supervisor,
  `supervisor` the top-level one; a team called from a team's node nests again
  (`research_team/search/...`). The team's handoffs are recorded like the root graph's,
  with its own routes, edges, control key and progress, and take as `turn` the root
  superstep of the node that called the team (the team counts its own steps from 1; its
  handoffs still sort between the root handoffs around them). A graph with fewer than two
  agents (a react agent a worker runs inside its node, as langgraph-supervisor's workers
  and the tutorial's do) is that agent at work, not a team; so is a compiled graph added
  as a node (`add_node("billing", billing_graph)`: the agent-as-subgraph shape). With
  `agent_nodes` set, a team's agents are the qualified names listed
  (`"research_team/search"`). A `GraphRecursionError` raised in a team graph reaches the
  caller through the node: the run ends `max_turns`, and a team going round when it hit
  the limit is a loop like any other.
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
  - `ignored_same_turn` — a handoff tool of the same model turn that LangGraph did not
    carry out: when one message calls two handoff tools (langgraph-supervisor's
    `create_supervisor(..., parallel_tool_calls=True)`, or any model that returns two),
    each tool raises its own `ParentCommand` and only the first to arrive moves control;
    the other agent never runs. It is recorded with its own `tool_call.id`, `route.goto`
    where the run went instead, and is never admitted: the collector judges it
    `route_rejected`, with the next step for that reason.
  `goto=END` and a node sending to itself are not handoffs. A `goto` or `Send` to a name
  that is no node is one: LangGraph drops it without running anything, so it is never
  admitted (the collector judges it `destination_not_started`).
- `handoff.request`, as soon as the handoff is known: `from_agent`, `to_agent`,
  `route.goto`, `route.declared` (is the target among the sender's declared destinations:
  its static and conditional edges, `Command[Literal[...]]` return annotation or
  `add_node(..., destinations=...)`; omitted when the node declares nothing or has an
  open-ended branch), `turn` (the root superstep), `tool_call.id` (when a tool issued it),
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
- **Usage** (docs/semconv.md, "Usage"): every model call in the run (`on_llm_end`, in any
  node, team or delegate) is summed into the run's current leg — tokens from the message's
  `usage_metadata` (else `llm_output["token_usage"]`), one call, the model from
  `response_metadata["model_name"]` — and the totals go on the span that ends the leg: the
  sender's `handoff.request` of the next handoff, or `handoff.run` at the end. A leg is
  the run's calls between two handoffs, so the model calls of agents running in parallel
  (`Send` fan-out) share one leg: the adapter does not split them per agent. Calls of a
  model that reports no usage are counted, their tokens left out (not sent as 0).
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
`fingerprint` is the task — the keyed HMAC (`fingerprint()`) of the human messages' ids (not
agents' reports, below) — and `state_version` is progress: the number of *distinct units of
work* produced in the run so far, each unit a keyed HMAC. The units:

- each tool call (tool name + arguments) and each tool result (`ToolMessage`: name +
  content), except the handoff plumbing: calls that carried a handoff, tools named
  `transfer_to_...` / `transfer_back_to_...`, and langgraph-supervisor's hand-back pair
  (`response_metadata["__is_handoff_back"]`) — with their `ToolMessage`s;
- each AI message without tool calls (its text: the same answer twice is one unit), and
  each human message named after a node of the graph reading it — a worker's report, as
  the hierarchical-teams tutorial writes them (`HumanMessage(content=..., name="search")`):
  its text, as an answer, and not part of the task;
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
node's own config belong to the outer run (a team, above); with a thread of their own they
are runs of their own. A `RemoteGraph` is not observed (its graph runs in another process —
instrument that one). Handoffs inside a compiled graph added as a node (a swarm nested as
a node) are that node's own work; call it from a node function to have it seen as a team.
Two graphs invoked one after the other by the same node share its prefix (name their
nodes apart). A conditional edge's destination is recognised by timing — an agent that starts in the superstep after the edge's sender, among the edge's
destinations, and that nothing else the adapter saw sent there. Adding any callback handler makes LangChain run its callback machinery for every
step; `bench/bench_adapter_langgraph.py` measures what that and the spans cost.

The instrumentor never raises into your graph: its failures are logged at debug level and
counted in `handoffscope.instrumentation.stats`.

Inside the package: this module holds the settings and the instrumentor (which wraps
`Pregel.stream` / `astream` and decides, per call, which run it belongs to); `graph.py`
reads a compiled graph's shape; `progress.py` turns state into units of work; `waits.py`
reads interrupt and resume values; `run.py` is what is remembered per run; `handler.py`
is the callback handler — the one module that imports langchain-core and LangGraph at
its top, so it is imported only once `instrument()` has found them.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import TracerProvider

from .. import semconv as sc
from ..instrumentor import HandoffInstrumentor
from ..lru import Lru
from ..recorder import HandoffRecorder, names
from ..stats import stats, swallowed
from .graph import UNSET_AGENT, graph_info, graph_info_cache
from .run import Run
from .waits import WAIT_KEY, answers, wait_details

_log = logging.getLogger(__name__)

__all__ = ["UNSET_AGENT", "WAIT_KEY", "LangGraphInstrumentor", "LangGraphSettings", "wait_details"]

RUN_ID_METADATA_KEY = sc.RUN_ID
"""Config (and so checkpoint) metadata key holding the run id, for resumes in another process."""
_CHECKPOINT_COORDINATES = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")
_TASK_ID_KEY = "__pregel_task_id"
_NS_KEY = "checkpoint_ns"
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
    entry_agents: Collection[str] = ()
    """The agents a thread's turn may start at (a supervisor, a triage), declared on every
    run's start (`run.entry_agents`): a turn that starts at one and goes straight to the
    agent that ended the previous turn is re-routed (docs/semconv.md, "Turns"). Without it
    the collector learns them from the threads' first runs."""


@dataclass
class _Plan:
    graph: Any
    config: Any
    thread_id: str | None
    resume: Any
    """The resume value of a `Command(resume=...)` input, else None."""
    continuing: bool
    run: Run | None
    lookup: bool
    """The run may have started in another process: read the checkpoint to find it."""
    persisted: bool


class LangGraphInstrumentor(HandoffInstrumentor):
    """Instrument every compiled LangGraph graph in the process (an OTel `BaseInstrumentor`).

    A process-wide singleton, like OpenTelemetry's instrumentors: `LangGraphInstrumentor()`
    always returns the same object, so instrumenting twice never wraps twice; calling
    `instrument()` again takes the new settings and tracer provider.
    """

    settings_type = LangGraphSettings
    extra = "langgraph"

    def _init(self) -> None:
        self._settings = LangGraphSettings()
        self._recorder = HandoffRecorder()
        self._originals: dict[str, Callable[..., Any]] = {}
        self._threads: Lru[str, Run] = Lru(self._settings.max_threads)
        self._pregel: type | None = None

    def instrumentation_dependencies(self) -> tuple[str, ...]:
        return ("langgraph >= 1.0", "langchain-core >= 1.0")

    def _attach(self, tracer_provider: TracerProvider | None, settings: Any) -> bool:
        from langgraph.pregel import Pregel

        from . import handler  # noqa: F401  (needs langchain-core: fail here, not in a graph)

        self._reconfigure(tracer_provider, settings)
        self._pregel = Pregel
        self._originals = {"stream": Pregel.stream, "astream": Pregel.astream}
        Pregel.stream = self._wrap_stream(Pregel.stream)  # type: ignore[method-assign]
        Pregel.astream = self._wrap_astream(Pregel.astream)  # type: ignore[method-assign]
        return True

    def _reconfigure(self, tracer_provider: TracerProvider | None, settings: Any) -> None:
        self._settings = settings
        self._recorder = HandoffRecorder(tracer_provider)
        self._threads = Lru(settings.max_threads)
        graph_info_cache.clear()

    def _detach(self) -> None:
        """Graphs run exactly as before `instrument()`."""
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
            swallowed(_log, "langgraph run id")
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
                        swallowed(_log, "langgraph checkpoint lookup")
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
                        swallowed(_log, "langgraph checkpoint lookup")
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

            from .handler import our_handler

            conf = (config or {}).get("configurable") or {}
            ambient = var_child_runnable_config.get() or {}
            ambient_conf = ambient.get("configurable") or {}
            inside = _TASK_ID_KEY in conf or (
                # invoked inside a node without a config (the node's config is ambient)
                _TASK_ID_KEY in ambient_conf
                and not any(conf.get(k) for k in _CHECKPOINT_COORDINATES)
            )
            callbacks = (config or {}).get("callbacks")
            if inside:
                # A graph running inside a task of an observed run (a subgraph node, or a
                # graph invoked in a node function): the root's handler sees its nodes, and
                # decides whether it is a team of that run.
                handler = our_handler(callbacks or ambient.get("callbacks"))
                ns = conf.get(_NS_KEY) if _TASK_ID_KEY in conf else ambient_conf.get(_NS_KEY)
                if handler is not None and isinstance(ns, str):
                    handler.nested(ns, graph)
                return None
            if our_handler(callbacks) is not None:
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
            swallowed(_log, "langgraph plan")
            return None

    def _start(self, plan: _Plan, snapshot: Any) -> dict[str, Any] | None:
        """Find or open the run, record resume decisions, and return the call's new config."""
        try:
            from .handler import HandoffCallbackHandler, with_handler

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
                    run = Run(rid, conv)
                    run.open_waits.update(pending_tokens)
                    run.waits_seen.update(pending_tokens)
            if run is None:
                run, is_new = Run(uuid.uuid4().hex, conv), True
            if plan.thread_id is not None:
                with self._lock:
                    self._threads.put(plan.thread_id, run)
            _last_run_id.set(run.run_id)
            if is_new:
                self._recorder.run_started(
                    run.run_id,
                    conversation_id=conv,
                    outcome_required=True if settings.require_outcome else None,
                    entry_agents=names(settings.entry_agents) or None,
                )
            if plan.resume is not None:
                self._decide(run, plan.resume)
            handler = HandoffCallbackHandler(
                self, run, graph_info(plan.graph, settings), plan.persisted
            )
            config = dict(plan.config or {})
            config["callbacks"] = with_handler(config.get("callbacks"), handler)
            config["metadata"] = {**(config.get("metadata") or {}), RUN_ID_METADATA_KEY: run.run_id}
            return config
        except Exception:
            swallowed(_log, "langgraph start")
            return None

    def _decide(self, run: Run, resume: Any) -> None:
        with run.lock:
            waiting = sorted(run.open_waits)
        for token, decision in answers(resume, waiting).items():
            with run.lock:
                if token not in run.open_waits and token in run.waits_seen:
                    continue  # already decided
                run.open_waits.discard(token)
                run.waits_seen.add(token)
            self._recorder.wait_decided(
                run.run_id, decision, resume_token_id=token, conversation_id=run.conversation_id
            )
