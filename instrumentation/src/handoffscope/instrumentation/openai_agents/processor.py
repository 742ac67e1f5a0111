"""`HandoffTracingProcessor`: the Agents SDK's own trace events, turned into handoff evidence.

The SDK already announces every boundary we care about through its tracing interface
(`agents.tracing.TracingProcessor`), so the adapter listens there instead of patching the
run loop. What each SDK span tells us, and what we emit (docs/semconv.md):

| SDK span | moment | evidence |
|---|---|---|
| task span (one per top-level `Runner.run`, see "What a run is"), or the first agent span when task spans are off | start | `handoff.run` `started` with the entry agent and `gen_ai.conversation.id` (= `group_id`) |
| handoff span (`from_agent`; `to_agent` is set only at its **end**) | end | ONE `handoff.request` span carrying request and transfer: from/to, turn, fingerprint, state version, `route.declared` (to_agent in the sender's declared handoffs), `route.goto`, `control.before`, history counts |
| handoff span with the error "Multiple handoffs requested" | end | one more `handoff.request` per ignored target, with `route.goto` = the agent actually taken, so each is `route_rejected` |
| agent span whose name is a pending handoff's `to_agent` | start | `handoff.accept`: destination started, `control.after` |
| agent span with the error "Max turns exceeded" | end | the run ends `max_turns` |
| function span ended without error | end | state progress (`handoff.state_version` + 1) |
| task span (or, with task spans off, the trace) | end | `handoff.run` ended: `completed` / `failed` / `max_turns`, final agent, turns |

A typical handoff therefore costs two spans (request+transfer, accept).

Usage: each model response's `ModelResponse.usage` is summed into the current leg of its
run (`note_usage`, fed by the run hooks in usage.py) and lands on the span that ends the
leg — the `handoff.request` above, or the run's end (docs/semconv.md, "Usage").

Only names, ids, counts and error *codes* are read from span data — never
`span_data.input` / `output`, tool arguments or model text — so the result is the same
whatever `RunConfig.trace_include_sensitive_data` says. Every callback is wrapped: an
internal failure is logged at debug, counted in `stats.errors`, and the app never sees it.

Run end and interruptions: a run paused for tool approval ends its trace exactly like a
completed one, so span data alone cannot tell them apart. When the adapter also observes
the runner (`runner.py`), the processor hands the run's end facts to it through a context
variable and the runner, which sees `result.interruptions`, emits the end. Otherwise the
processor emits it itself.

What a run is: each top-level `Runner.run` / `run_sync` / `run_streamed` (its task span,
or its first agent span when task spans are off) is one handoffscope run, even when several
share one SDK trace — `with trace(...)` around sequential runs, or `asyncio.gather` of
runs as in the SDK's `agent_patterns/parallelization.py`. Every SDK span belongs to the run
whose task span it descends from, so concurrent runs never mix their handoffs, turns, work
or status. `handoff.run_id`: the first run in a trace gets the trace id (so a trace with
one run reads as before), each later one `<trace id>-<n>` (n = 2, 3, ... in start order);
`run_id(result)` gives the app each one. A run resumed from its `RunState` keeps its id
(the runner finds it by the state's pending approvals, else by its trace). With
`run_id_source="group"` every run of a `group_id` is one run — parallel ones included, as
the app asked. A run nested in another (`Agent.as_tool`) has a task ancestor and stays a
delegation inside its caller's run. Without the runner observed and with task spans off,
the spans cannot tell concurrent runs of one trace apart: they are read as one.

Loops: `handoff.fingerprint` is a keyed HMAC of the run's identity (workflow name and run
id: opaque, stable within the run) and `handoff.state_version` counts the non-handoff tool
results so far. A ping-pong in which no tool ran is therefore a cycle without progress
(`loop`), while a retry after real work is not.
"""

from __future__ import annotations

import contextvars
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.tracing import Span, Trace, TracingProcessor, get_current_span, get_current_trace

from .. import semconv as sc
from ..fingerprint import fingerprint
from ..lru import Lru
from ..recorder import HandoffRecorder
from ..stats import swallowed

_log = logging.getLogger(__name__)

MAX_TURNS_ERROR = "Max turns exceeded"
"""`SpanError.message` the SDK sets on the agent span when `max_turns` runs out."""
MULTIPLE_HANDOFFS_ERROR = "Multiple handoffs requested"
"""`SpanError.message` on the handoff span when the model asked for several handoffs in
one turn; the SDK takes the first and answers the others "ignoring this one"."""

RUN_ID_FROM_TRACE = "trace"
RUN_ID_FROM_GROUP = "group"

TOOL_NOT_FOUND_ERROR = "Tool not found"
"""`SpanError.message` on the turn span when the model called a tool its agent lacks."""
HANDOFF_TOOL_PREFIX = "transfer_to_"
MAX_WORK_UNITS = 100_000
HANDOFF_UNOBSERVED = (sc.BOUNDARY_TOOL_PROTOCOL, sc.BOUNDARY_CONTEXT)
"""What SDK spans cannot show about a handoff: the SDK writes the handoff's tool output
itself and has no context contract, so neither check is observed (not passed)."""
DELEGATION_UNOBSERVED = (sc.BOUNDARY_CONTROL, sc.BOUNDARY_TOOL_PROTOCOL, sc.BOUNDARY_CONTEXT)

MAX_TRACES = 4096
"""Traces and runs remembered (LRU each). A run resumed from `RunState` in the same process
keeps its run id, so its state version and pending handoffs must outlive the first trace
end."""
MAX_APPROVALS = 65_536
"""Pending approvals remembered ((trace id, tool call id) -> run id), to resume the right
run. Keyed by trace too: a call id is unique within one model's answers, not across runs
(scripted and replayed models reuse them)."""
MAX_OPEN_SPANS = 65_536
"""Open SDK spans tracked for parent lookups; the SDK always ends its spans, the bound
only protects the app if some other code starts spans and never ends them."""


@dataclass
class RunFacts:
    """What the processor knows about a run segment when it ends."""

    run_id: str
    status: str
    final_agent: str | None
    turns: int | None


@dataclass
class RunHolder:
    """Set by the runner observer around one `Runner.run`; see the module docstring.

    The processor writes `run_id` at segment start and `facts` at segment end instead of
    emitting the run end, when `delegate` is true.
    """

    delegate: bool = True
    run_id: str | None = None
    conversation_id: str | None = None
    facts: RunFacts | None = None
    resumes: str | None = None
    """The run id of the `RunState` this call resumes, when the runner knows it."""


CURRENT_RUN: contextvars.ContextVar[RunHolder | None] = contextvars.ContextVar(
    "handoffscope_openai_agents_run", default=None
)


@dataclass
class _Segment:
    span_id: str | None
    """The task span that opened it; None when task spans are off (ends with the trace)."""
    trace_id: str
    status: str | None = None
    started_emitted: bool = False


@dataclass
class _TraceState:
    """The runs one SDK trace has seen (there may be several: see the module docstring)."""

    name: str
    group_id: str | None
    first_run: str | None = None
    """The run id of its first run; a trace reattached to resume a run continues it."""
    runs: int = 0
    ended: bool = False
    open: list[str] = field(default_factory=list)
    """Run ids whose segment in this trace is still open, in start order."""


@dataclass
class _RunState:
    """One handoffscope run: the bookkeeping that used to be kept per trace."""

    run_id: str
    conversation_id: str | None
    fingerprint: str
    work: Lru[str, str] = field(default_factory=lambda: Lru(MAX_WORK_UNITS))
    """Keyed digests of the distinct units of work done so far (tool name, input, output),
    each with the digest of its question (tool name, input): `state_version` is their
    number, so repeating the same call is not progress."""
    turns: int | None = None
    last_agent: str | None = None
    segment: _Segment | None = None
    pending: dict[tuple[str | None, str], list[str]] = field(default_factory=dict)
    """(parent span of the sender's agent span, to_agent) -> handoff ids not yet admitted."""

    @property
    def state_version(self) -> int:
        return len(self.work)


@dataclass
class _Open:
    kind: str
    parent_id: str | None
    data: Any
    run: _RunState | None
    """The run this span belongs to (inherited from its parent; set where a run begins)."""


Emit = tuple[Callable[..., bool], tuple[Any, ...], dict[str, Any]]


class HandoffTracingProcessor(TracingProcessor):
    """An Agents SDK `TracingProcessor` that emits handoffscope evidence spans."""

    def __init__(
        self,
        recorder: HandoffRecorder,
        *,
        tracer_provider: Any = None,
        run_id_source: str = RUN_ID_FROM_TRACE,
        require_outcome: bool = False,
        entry_agents: tuple[str, ...] = (),
    ) -> None:
        self.recorder = recorder
        self.tracer_provider = tracer_provider
        self.run_id_source = run_id_source
        self.require_outcome = require_outcome
        self.entry_agents = entry_agents or None
        self._delegations: Lru[str, str] = Lru(MAX_OPEN_SPANS)
        """Open tool-call span id -> the delegation (agent-as-tool) running inside it."""
        self._agent_names: Lru[str, str] = Lru(MAX_TRACES)
        """Tool-style name (`transfer_to_<this>`) -> agent name, of every agent seen."""
        self.enabled = True
        """Cleared by `uninstrument()`, in case the SDK's processor list cannot be edited."""
        self._lock = threading.Lock()
        self._traces: Lru[str, _TraceState] = Lru(MAX_TRACES)
        self._runs: Lru[str, _RunState] = Lru(MAX_TRACES)
        self._approvals: Lru[tuple[str | None, str], str] = Lru(MAX_APPROVALS)
        self._open: Lru[str, _Open] = Lru(MAX_OPEN_SPANS)
        self._history: Lru[str, tuple[int, int]] = Lru(MAX_OPEN_SPANS)

    # -- TracingProcessor ------------------------------------------------------------------

    def on_trace_start(self, trace: Trace) -> None:
        if not self.enabled:
            return
        try:
            with self._lock:
                self._trace(trace.trace_id, trace)
        except Exception:
            _failed("on_trace_start")

    def on_trace_end(self, trace: Trace) -> None:
        if not self.enabled:
            return
        try:
            emits: list[Emit] = []
            with self._lock:
                ts = self._traces.get(trace.trace_id)
                if ts is not None:
                    ts.ended = True
                    # Segments with no task span end with their trace (task spans off).
                    for run_id in list(ts.open):
                        run = self._runs.get(run_id)
                        if run is not None:
                            self._end_segment(run, emits)
                    ts.open.clear()
            self._flush(emits)
        except Exception:
            _failed("on_trace_end")

    def on_span_start(self, span: Span[Any]) -> None:
        if not self.enabled:
            return
        try:
            emits: list[Emit] = []
            with self._lock:
                self._span_started(span, emits)
            self._flush(emits)
        except Exception:
            _failed("on_span_start")

    def on_span_end(self, span: Span[Any]) -> None:
        if not self.enabled:
            return
        try:
            emits: list[Emit] = []
            with self._lock:
                self._span_ended(span, emits)
            self._flush(emits)
        except Exception:
            _failed("on_span_end")

    def shutdown(self) -> None:
        # The OTel TracerProvider belongs to the app and has its own exit hook; the SDK's
        # provider calling us at exit must not shut it down under the app.
        return None

    def force_flush(self) -> None:
        # `agents.flush_traces()` means "make it visible now": pass that on to OTel.
        try:
            flush = getattr(self.tracer_provider, "force_flush", None)
            if callable(flush):
                flush()
        except Exception:
            _failed("force_flush")

    # -- called by the input-filter wrapper (history.py) -----------------------------------

    def note_history(self, handoff_span_id: str, forwarded: int, total: int) -> None:
        with self._lock:
            self._history.put(handoff_span_id, (forwarded, total))

    # -- for the runner and the instrumentor's record_* helpers ----------------------------

    def run_id_for(
        self, trace_id: str | None, group_id: str | None, approvals: tuple[str, ...] = ()
    ) -> str | None:
        """The run a `RunState` (or an untagged result) belongs to: the run that paused on
        one of its pending `approvals` (tool call ids), else its trace's first run, else
        what the first run of a trace would be called."""
        with self._lock:
            for token in approvals:
                known = self._approvals.get((trace_id, token))
                if known is not None:
                    return known
            if self.run_id_source == RUN_ID_FROM_GROUP and group_id:
                return group_id
            ts = self._traces.get(trace_id) if trace_id else None
            if ts is not None and ts.first_run is not None:
                return ts.first_run
        return trace_id or None

    def current_run(self) -> tuple[str, str | None] | None:
        """(run id, agent) of the SDK span current in this context: the run it belongs to and
        the agent of its nearest agent span (None outside a traced run). For other adapters
        that act inside a run's tools — an A2A send is a handoff of that run."""
        span = get_current_span()
        node = self._open.get(span.span_id) if span is not None else None
        run = node.run if node is not None else None
        if run is None or not isinstance(run.run_id, str):
            return None
        agent_node = self._ancestor(span.span_id, ("agent",)) if span is not None else None
        agent = getattr(getattr(agent_node, "data", None), "name", None)
        return run.run_id, agent if isinstance(agent, str) else None

    def note_usage(
        self,
        *,
        input_tokens: Any,
        output_tokens: Any,
        calls: int,
        model: str | None,
    ) -> None:
        """Sum one model response into the current leg of the run the current SDK span
        belongs to (usage.py); a delegation's nested spans belong to its caller's run."""
        if not self.enabled:
            return
        try:
            span = get_current_span()
            node = self._open.get(span.span_id) if span is not None else None
            run_id = node.run.run_id if node is not None and node.run is not None else None
            if run_id is None:
                holder = CURRENT_RUN.get()
                run_id = holder.run_id if holder is not None else None
            if run_id is None:
                return
            self.recorder.record_usage(
                run_id,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                calls=calls,
                model=model,
            )
        except Exception:
            _failed("note_usage")

    def note_approvals(self, run_id: str, trace_id: str | None, approvals: tuple[str, ...]) -> None:
        """`run_id` paused on these approvals (tool call ids) in this trace: resuming them
        resumes it."""
        with self._lock:
            for token in approvals:
                self._approvals.put((trace_id, token), run_id)

    def run_reported(self, run_id: str) -> None:
        """The runner reported this run's end: a segment still open (task spans off, the
        trace the app's own) must not report it again when the trace ends."""
        with self._lock:
            run = self._runs.get(run_id)
            seg = run.segment if run is not None else None
            if run is None or seg is None:
                return
            run.segment = None
            ts = self._traces.get(seg.trace_id)
            if ts is not None and run_id in ts.open:
                ts.open.remove(run_id)

    # -- internals (called with the lock held) ---------------------------------------------

    def _trace(self, trace_id: str, trace: Trace | None = None) -> _TraceState:
        ts = self._traces.get(trace_id)
        if ts is not None:
            self._traces.put(trace_id, ts)
            return ts
        if trace is None:
            # A trace reattached from RunState never calls on_trace_start; the live trace
            # object still carries its name and group id.
            current = get_current_trace()
            trace = current if current is not None and current.trace_id == trace_id else None
        group_id = getattr(trace, "group_id", None)
        ts = _TraceState(
            name=getattr(trace, "name", None) or "",
            group_id=group_id if isinstance(group_id, str) else None,
        )
        self._traces.put(trace_id, ts)
        return ts

    def _next_run_id(self, trace_id: str, ts: _TraceState, holder: RunHolder | None) -> str:
        if holder is not None and holder.resumes is not None:
            return holder.resumes
        if self.run_id_source == RUN_ID_FROM_GROUP and ts.group_id:
            return ts.group_id
        if ts.first_run is None:
            return trace_id
        if ts.ended:
            # The trace was reattached (a `RunState` resumed) and the runner could not say
            # which run: its first, as when one run per trace was all there was.
            return ts.first_run
        # Another run in a trace still open (`with trace(...)` around several runs). The
        # trace id plus its start order: readable, and no second id scheme to learn.
        return f"{trace_id}-{ts.runs + 1}"

    def _begin_run(self, trace_id: str, span_id: str | None) -> _RunState:
        """A top-level run starts (or resumes) a segment in this trace."""
        ts = self._trace(trace_id)
        holder = CURRENT_RUN.get()
        run_id = self._next_run_id(trace_id, ts, holder)
        run = self._runs.get(run_id)
        if run is None:
            run = _RunState(
                run_id=run_id,
                conversation_id=ts.group_id,
                fingerprint=fingerprint({"workflow": ts.name, "run": run_id}),
            )
            ts.runs += 1
        self._runs.put(run_id, run)
        if ts.first_run is None:
            ts.first_run = run_id
        if holder is not None and holder.run_id is None:
            holder.run_id = run.run_id
            holder.conversation_id = run.conversation_id
        if run.segment is not None:
            # Joins a segment already open: with run_id_source="group", parallel runs of
            # one group are one run, as the app asked. Each call still tags its result
            # and reports how it ended; the first task span to end closes the segment.
            return run
        run.segment = _Segment(span_id, trace_id)
        ts.open.append(run_id)
        return run

    def _top_level_agent_run(self, trace_id: str) -> _RunState:
        """With task spans off, a top-level agent span starts a run or follows a handoff in
        one: the runner's holder says which run this call is; without it, the trace's
        latest open run."""
        holder = CURRENT_RUN.get()
        if holder is not None:
            if holder.run_id is not None:
                run = self._runs.get(holder.run_id)
                if run is not None and run.segment is not None:
                    return run
            return self._begin_run(trace_id, None)
        ts = self._trace(trace_id)
        for run_id in reversed(ts.open):
            run = self._runs.get(run_id)
            if run is not None and run.segment is not None:
                return run
        return self._begin_run(trace_id, None)

    def _ancestor_id(self, parent_id: str | None, kinds: tuple[str, ...]) -> str | None:
        seen = 0
        while parent_id is not None and seen < 256:
            node = self._open.get(parent_id)
            if node is None:
                return None
            if node.kind in kinds:
                return parent_id
            parent_id = node.parent_id
            seen += 1
        return None

    def _ancestor(self, parent_id: str | None, kinds: tuple[str, ...]) -> _Open | None:
        seen = 0
        while parent_id is not None and seen < 256:  # bounded: a cycle must not hang the app
            node = self._open.get(parent_id)
            if node is None:
                return None
            if node.kind in kinds:
                return node
            parent_id = node.parent_id
            seen += 1
        return None

    def _span_started(self, span: Span[Any], emits: list[Emit]) -> None:
        data = span.span_data
        kind = data.type
        parent_id = span.parent_id
        parent = self._open.get(parent_id) if parent_id is not None else None
        tr = parent.run if parent is not None else None
        if kind in ("task", "agent") and self._ancestor(parent_id, ("task",)) is None:
            # No task span above, so not inside another run (an agent used as a tool is):
            # a task span begins a run; with task spans off, so may an agent span.
            if kind == "task":
                tr = self._begin_run(span.trace_id, span.span_id)
            elif self._ancestor(parent_id, ("agent",)) is None:
                tr = self._top_level_agent_run(span.trace_id)
        self._open.put(span.span_id, _Open(kind, parent_id, data, tr))
        if kind == "agent":
            self._learn_names(data)
        if tr is None:
            # Outside any run (e.g. the app's own custom span at the trace's root).
            return

        if kind == "turn":
            turn = getattr(data, "turn", None)
            if isinstance(turn, int) and (tr.turns is None or turn > tr.turns):
                tr.turns = turn
        elif kind == "agent":
            name = _name(getattr(data, "name", None))
            nested = self._ancestor(parent_id, ("agent",)) is not None
            if not nested:
                tr.last_agent = name
                seg = tr.segment
                if seg is not None and not seg.started_emitted:
                    seg.started_emitted = True
                    emits.append(
                        (
                            self.recorder.run_started,
                            (tr.run_id,),
                            {
                                "agent": name,
                                "conversation_id": tr.conversation_id,
                                "outcome_required": True if self.require_outcome else None,
                                "entry_agents": self.entry_agents,
                            },
                        )
                    )
            waiting = tr.pending.get((parent_id, name)) if name is not None else None
            if nested and not waiting:
                self._delegated(tr, span, name, emits)
            if waiting and name is not None:
                handoff_id = waiting.pop(0)
                if not waiting:
                    del tr.pending[(parent_id, name)]
                emits.append(
                    (
                        self.recorder.handoff_accepted,
                        (tr.run_id, handoff_id),
                        {"agent": name, "control_after": name},
                    )
                )

    def _span_ended(self, span: Span[Any], emits: list[Emit]) -> None:
        node = self._open.pop(span.span_id, None)
        tr = node.run if node is not None else None
        if tr is None:
            return
        data = span.span_data
        kind = data.type
        if kind == "handoff":
            self._handoff_ended(tr, span, emits)
        elif kind == "function":
            delegation = self._delegations.pop(span.span_id, None)
            if delegation is not None:
                # The task of a delegation is the question asked; the delegate's earlier
                # answers to that same question are not new work, so asking it again with
                # nothing else done repeats the key at the second call.
                question = _question(span.span_data)
                emits.append(
                    (
                        self.recorder.handoff_requested,
                        (tr.run_id, delegation),
                        {
                            "from_agent": None,
                            "to_agent": None,
                            "kind": sc.KIND_DELEGATION,
                            "fingerprint": fingerprint(tr.fingerprint, question),
                            "state_version": sum(1 for q in tr.work.values() if q != question),
                        },
                    )
                )
            if span.error is None:
                unit, question = _work_unit(span)
                tr.work.put(unit, question)  # bounded; only the count is used
        elif kind == "turn":
            error = span.error
            if error is not None and error.get("message") == TOOL_NOT_FOUND_ERROR:
                self._missing_handoff(tr, span, error, emits)
        elif kind == "agent":
            error = span.error
            if error is not None and tr.segment is not None:
                failed = error.get("message") != MAX_TURNS_ERROR
                tr.segment.status = sc.RUN_STATUS_FAILED if failed else sc.RUN_STATUS_MAX_TURNS
        elif kind == "guardrail":
            if getattr(data, "triggered", False) and tr.segment is not None:
                tr.segment.status = sc.RUN_STATUS_FAILED
        elif kind == "task" and tr.segment is not None and tr.segment.span_id == span.span_id:
            self._end_segment(tr, emits)

    def _handoff_ended(self, tr: _RunState, span: Span[Any], emits: list[Emit]) -> None:
        data = span.span_data
        handoff_id = span.span_id
        from_agent = _name(getattr(data, "from_agent", None))
        to_agent = _name(getattr(data, "to_agent", None))
        sender = self._ancestor(span.parent_id, ("agent",))
        turn_span = self._ancestor(span.parent_id, ("turn",))
        declared_raw = getattr(sender.data, "handoffs", None) if sender is not None else None
        declared = (
            [d for d in declared_raw if isinstance(d, str)] if declared_raw is not None else None
        )
        control_before = _name(getattr(sender.data, "name", None)) if sender is not None else None
        turn = getattr(turn_span.data, "turn", None) if turn_span is not None else None
        counts = self._history.pop(handoff_id, None)
        common: dict[str, Any] = {
            "turn": turn if isinstance(turn, int) else None,
            "fingerprint": tr.fingerprint,
            "state_version": tr.state_version,
            "control_before": control_before,
            "unobserved": HANDOFF_UNOBSERVED,
        }
        emits.append(
            (
                self.recorder.handoff_requested,
                (tr.run_id, handoff_id),
                {
                    "from_agent": from_agent,
                    "to_agent": to_agent,
                    "route_declared": _declared(to_agent, declared),
                    "goto": to_agent,
                    "history_items_forwarded": counts[0] if counts else None,
                    "history_items_total": counts[1] if counts else None,
                    **common,
                },
            )
        )
        if to_agent is not None:
            key = (sender.parent_id if sender is not None else None, to_agent)
            tr.pending.setdefault(key, []).append(handoff_id)

        error = span.error
        if error is not None and error.get("message") == MULTIPLE_HANDOFFS_ERROR:
            requested = (error.get("data") or {}).get("requested_agents")
            if isinstance(requested, list):
                # requested[0] is the one the SDK took; the rest were answered "ignoring
                # this one". Each becomes its own handoff whose goto is where the run went.
                for index, other in enumerate(requested[1:], start=1):
                    other_name = _name(other)
                    if other_name is None or other_name == to_agent:
                        continue
                    emits.append(
                        (
                            self.recorder.handoff_requested,
                            (tr.run_id, f"{handoff_id}:{index}"),
                            {
                                "from_agent": from_agent,
                                "to_agent": other_name,
                                "route_declared": _declared(other_name, declared),
                                "goto": to_agent,
                                "reason": sc.REASON_IGNORED_SAME_TURN,
                                **common,
                            },
                        )
                    )

    def _delegated(
        self, tr: _RunState, span: Span[Any], name: str | None, emits: list[Emit]
    ) -> None:
        """An agent span inside another agent's tool call: the agent was used as a tool.

        Control never leaves the caller (its result returns as the tool's output), so this
        is a delegation: requested and admitted at once, judged for repeats, not a handoff.
        """
        caller = self._ancestor(span.parent_id, ("agent",))
        tool = self._ancestor(span.parent_id, ("function",))
        if caller is None or name is None:
            return
        caller_name = _name(getattr(caller.data, "name", None))
        tools = getattr(caller.data, "tools", None)
        tool_name = _name(getattr(tool.data, "name", None)) if tool is not None else None
        turn_span = self._ancestor(span.parent_id, ("turn",))
        turn = getattr(turn_span.data, "turn", None) if turn_span is not None else None
        tool_id = self._ancestor_id(span.parent_id, ("function",))
        if tool_id is not None:
            # Its task (the question: tool and input) is known when the tool call ends.
            self._delegations.put(tool_id, span.span_id)
        emits.append(
            (
                self.recorder.handoff_requested,
                (tr.run_id, span.span_id),
                {
                    "kind": sc.KIND_DELEGATION,
                    "from_agent": caller_name,
                    "to_agent": name,
                    "turn": turn if isinstance(turn, int) else None,
                    "route_declared": (
                        tool_name in tools
                        if isinstance(tools, list) and tool_name is not None
                        else None
                    ),
                    "destination_started": True,
                    "agent": name,
                    "unobserved": DELEGATION_UNOBSERVED,
                },
            )
        )

    def _missing_handoff(
        self, tr: _RunState, span: Span[Any], error: Any, emits: list[Emit]
    ) -> None:
        """The model called `transfer_to_<x>`, a handoff its agent does not have: the SDK
        raises (the run fails). Recorded as the handoff it tried, on an undeclared route."""
        tool_name = (error.get("data") or {}).get("tool_name")
        if not isinstance(tool_name, str) or not tool_name.startswith(HANDOFF_TOOL_PREFIX):
            return
        target = tool_name[len(HANDOFF_TOOL_PREFIX) :]
        to_agent = self._agent_names.get(target)
        if to_agent is None:
            # An agent this process never saw: the tool-style name is all there is, and
            # only if it is a plain code (the model wrote it; free text must not pass).
            to_agent = target if sc.CODE_PATTERN.match(target) else None
        sender = self._ancestor(span.parent_id, ("agent",))
        from_agent = _name(getattr(sender.data, "name", None)) if sender is not None else None
        turn = getattr(span.span_data, "turn", None)
        emits.append(
            (
                self.recorder.handoff_requested,
                (tr.run_id, span.span_id),
                {
                    "from_agent": from_agent,
                    "to_agent": to_agent,
                    "turn": turn if isinstance(turn, int) else None,
                    "fingerprint": tr.fingerprint,
                    "state_version": tr.state_version,
                    "route_declared": False,
                    "control_before": from_agent,
                    "reason": sc.REASON_TOOL_MISSING,
                    "unobserved": HANDOFF_UNOBSERVED,
                },
            )
        )

    def _learn_names(self, data: Any) -> None:
        names = [getattr(data, "name", None), *(getattr(data, "handoffs", None) or ())]
        for n in names:
            if isinstance(n, str) and n:
                self._agent_names.put(_tool_style(n), n)

    def _end_segment(self, tr: _RunState, emits: list[Emit]) -> None:
        seg = tr.segment
        tr.segment = None
        if seg is None:
            return
        ts = self._traces.get(seg.trace_id)
        if ts is not None and tr.run_id in ts.open:
            ts.open.remove(tr.run_id)
        facts = RunFacts(
            run_id=tr.run_id,
            status=seg.status or sc.RUN_STATUS_COMPLETED,
            final_agent=tr.last_agent,
            turns=tr.turns,
        )
        holder = CURRENT_RUN.get()
        if holder is not None and holder.delegate and holder.run_id == tr.run_id:
            holder.facts = facts
            return
        emits.append(_run_ended(self.recorder, facts))

    def _flush(self, emits: list[Emit]) -> None:
        # Outside the lock: exporting is the OTel processor's business, not ours to serialize.
        for fn, args, kwargs in emits:
            fn(*args, **kwargs)


def _run_ended(recorder: HandoffRecorder, facts: RunFacts, status: str | None = None) -> Emit:
    return (
        recorder.run_ended,
        (facts.run_id, status or facts.status),
        {"final_agent": facts.final_agent, "turns": facts.turns},
    )


def _work_unit(span: Span[Any]) -> tuple[str, str]:
    """(unit, question): keyed digests of one tool call's name, input and output, and of its
    name and input. The same call with the same result is the same unit. Input and output
    are on the span only when the run traces sensitive data (`trace_include_sensitive_data`,
    on by default); without them each call counts as new work — loops of repeated calls
    then go unseen, none is made up."""
    data = span.span_data
    name = getattr(data, "name", None)
    given, produced = getattr(data, "input", None), getattr(data, "output", None)
    if given is None and produced is None:
        unit = fingerprint({"tool": name, "call": span.span_id})
        return unit, unit
    unit = fingerprint({"tool": name, "input": str(given), "output": str(produced)})
    return unit, _question(data)


def _question(data: Any) -> str:
    given = getattr(data, "input", None)
    return fingerprint({"tool": getattr(data, "name", None), "input": str(given)})


def _tool_style(name: str) -> str:
    # The SDK names a handoff's tool `transfer_to_` + this (Handoff.default_tool_name).
    try:
        from agents.util._transforms import transform_string_function_style

        return str(transform_string_function_style(name))
    except Exception:
        return re.sub(r"[^a-z0-9]", "_", name.replace(" ", "_").lower())


def _name(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _declared(to_agent: str | None, declared: list[str] | None) -> bool | None:
    if to_agent is None or declared is None:
        return None
    return to_agent in declared


def _failed(where: str) -> None:
    swallowed(_log, f"openai-agents processor {where}")
