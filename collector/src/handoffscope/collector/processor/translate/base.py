"""What a translator is: the interface every source module implements.

A translator turns one span of another instrumentation (OpenInference, OpenLLMetry,
Logfire, a framework's native GenAI spans) into zero or more pieces of *contract*
evidence (`Evidence`: a contract span name and contract attributes). It reads the foreign
span through `ForeignSpan` and never copies a value anywhere except into a contract
attribute, where the allowlist checks it like any other (type, length, code pattern).

The shared core (`translate/__init__.py`) does the rest, identically for every source:
picks the translator by instrumentation scope, stamps `handoff.run_id`, `handoff.source`
and the source's `handoff.unobserved`, gives each piece of evidence a span id, counts
everything of the foreign span as dropped (per service and source) and hands the
contract spans to the allowlist. See docs/foreign-spans.md.

Translators are stateless: they see one span at a time, and the span that completes a
handoff may arrive in another export, or at another collector. Evidence that only
another span can complete is emitted so the judge can combine it by stable ids: derive
`handoff.id` from ids the span carries, or emit an *arrival* (`arrival()`: the
destination's agent run, paired with the request before it by the judge).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from handoffscope.collector.otlp.values import read_or_none
from handoffscope.instrumentation import semconv as sc

OK, ERROR, UNSET = "ok", "error", "unset"
_STATUS = {
    Status.STATUS_CODE_OK: OK,
    Status.STATUS_CODE_ERROR: ERROR,
    Status.STATUS_CODE_UNSET: UNSET,
}


@dataclass
class Evidence:
    """One contract span a translator derived from a foreign span."""

    name: str
    """A contract span name (`semconv.SPAN_NAMES`)."""
    attributes: dict[str, object] = field(default_factory=dict)
    """Contract attribute -> value; anything outside `semconv.ATTRIBUTES` is dropped."""
    start_ns: int | None = None
    """Default: the foreign span's start."""
    end_ns: int | None = None
    """Default: the foreign span's end."""


def run_span(**attributes: object) -> Evidence:
    return Evidence(sc.SPAN_RUN, dict(attributes))


def request(**attributes: object) -> Evidence:
    return Evidence(sc.SPAN_REQUEST, dict(attributes))


TOOL_CALL_ID = "gen_ai.tool.call.id"
"""The GenAI convention's tool-call id: content-free where the framework sets it (ADK,
Strands, AutoGen: the model's call id or the framework's own)."""


def tool_call_request(
    span: ForeignSpan, prefix: str, sender: str, to: str | None = None
) -> Evidence:
    """The request of a handoff carried by a tool call: its handoff id is the call's
    `gen_ai.tool.call.id` (also sent as `handoff.tool_call.id`), so every piece of the
    handoff can name it; without one, an id derived from the span (`<prefix>-<span id>`)."""
    call_id = span.text(TOOL_CALL_ID)
    attrs: dict[str, object] = {
        sc.HANDOFF_ID: call_id or f"{prefix}-{span.span_id}",
        sc.KIND: sc.KIND_HANDOFF,
        sc.FROM_AGENT: sender,
    }
    if to:
        attrs[sc.TO_AGENT] = to
    if call_id:
        attrs[sc.TOOL_CALL_ID] = call_id
    return request(**attrs)


def arrival(agent: str) -> Evidence:
    """The destination side of a handoff the source cannot name: `agent` started running.

    The judge admits with it the earliest request of the run that has no admission of its
    own, started no later than this span and names this agent or no agent
    (evidence.pair_arrivals).
    """
    return Evidence(sc.SPAN_ACCEPT, {sc.GEN_AI_AGENT_NAME: agent, sc.DESTINATION_STARTED: True})


class ForeignSpan:
    """Read-only view of a foreign span, for translators.

    `text()`, `integer()`, `flag()`, `texts()` read one attribute by its expected type
    (None when absent or of another type). `status_description` and event names are there to be *matched*
    (e.g. "Max turns exceeded"), never copied: they are free text.
    """

    __slots__ = ("_span", "_attrs", "_batch", "_scope")

    def __init__(
        self, span: Span, batch: Mapping[bytes, Span] | None = None, scope: str = ""
    ) -> None:
        self._span = span
        self._attrs: dict | None = None
        self._batch = batch
        self._scope = scope

    @property
    def scope(self) -> str:
        """The instrumentation scope name the span came in (its parent and children share
        it): for a translator that serves several frameworks and reads one's quirks by it
        (genai.py's hints)."""
        return self._scope

    def parent(self) -> ForeignSpan | None:
        """The parent span when it travelled in the same export (same scope, or a scope of
        the same translator when it `joins_scopes`), else None.

        For sources that put a fact on the parent only (Strands and AutoGen name the agent
        on `invoke_agent`, not on its `execute_tool` spans). An SDK's batch processor
        usually exports a parent with its children (the parent ends last, within the same
        batch delay); when it did not, the translator gets None and emits less, never a
        guess.
        """
        if not self._batch or not self._span.parent_span_id:
            return None
        found = self._batch.get(self._span.parent_span_id)
        return ForeignSpan(found, self._batch, self._scope) if found is not None else None

    def children(self) -> list[ForeignSpan]:
        """The span's children that travelled in the same export (same scope), in start order.

        For a root span that ends after its children and must say what they did (Strands'
        `invoke_swarm` never records its outcome: its last agent's refused handoff does).
        The SDK's batch processor exports spans in end order, so what is here is the LAST
        children: an earlier export may hold earlier ones, never later ones.
        """
        if not self._batch:
            return []
        me = self._span.span_id
        found = [s for s in self._batch.values() if s.parent_span_id == me]
        found.sort(key=lambda s: s.start_time_unix_nano)
        return [ForeignSpan(s, self._batch, self._scope) for s in found]

    def ancestor(self, predicate: Callable[[ForeignSpan], bool]) -> ForeignSpan | None:
        """The nearest ancestor in the same export that satisfies `predicate` (bounded walk)."""
        span = self.parent()
        for _ in range(64):
            if span is None or predicate(span):
                return span
            span = span.parent()
        return None

    @property
    def name(self) -> str:
        return self._span.name

    @property
    def trace_id(self) -> str:
        return self._span.trace_id.hex()

    @property
    def span_id(self) -> str:
        return self._span.span_id.hex()

    @property
    def parent_span_id(self) -> str | None:
        return self._span.parent_span_id.hex() or None

    @property
    def start_ns(self) -> int:
        return self._span.start_time_unix_nano

    @property
    def end_ns(self) -> int:
        return self._span.end_time_unix_nano

    @property
    def status(self) -> str:
        return _STATUS.get(self._span.status.code, UNSET)

    @property
    def status_description(self) -> str:
        return self._span.status.message

    def event_names(self) -> Iterator[str]:
        return (e.name for e in self._span.events)

    def exception_types(self) -> list[str]:
        """`exception.type` of the span's `exception` events: class names, to *match*
        (LangGraph's `GraphRecursionError`), never to copy; the messages beside them are
        free text and never read."""
        return [
            kv.value.string_value
            for e in self._span.events
            if e.name == "exception"
            for kv in e.attributes
            if kv.key == "exception.type"
        ]

    def linked_trace_ids(self) -> list[str]:
        return [link.trace_id.hex() for link in self._span.links]

    def linked_span_ids(self) -> list[str]:
        """Span ids of the span's links (MAF links a message's delivery to its send)."""
        return [link.span_id.hex() for link in self._span.links]

    def _values(self) -> dict:
        if self._attrs is None:
            self._attrs = {kv.key: kv.value for kv in self._span.attributes}
        return self._attrs

    def has(self, key: str) -> bool:
        return key in self._values()

    def text(self, key: str) -> str | None:
        return read_or_none(sc.STR, self._values().get(key))

    def integer(self, key: str) -> int | None:
        return read_or_none(sc.INT, self._values().get(key))

    def flag(self, key: str) -> bool | None:
        return read_or_none(sc.BOOL, self._values().get(key))

    def texts(self, key: str) -> list[str] | None:
        return read_or_none(sc.STR_ARRAY, self._values().get(key))


STRUCTURE_ONLY: tuple[str, ...] = (
    sc.BOUNDARY_ROUTE,
    sc.BOUNDARY_CONTROL,
    sc.BOUNDARY_TOOL_PROTOCOL,
    sc.BOUNDARY_CONTEXT,
)
"""The boundaries no source translated so far can show (`Translator.unobserved`'s
default): their spans carry no declared edges, control holder, tool-call closure or
context keys in content-free form (docs/foreign-spans.md)."""


class Translator:
    """Base of the per-source translators (one module per source)."""

    source: ClassVar[str]
    """`handoff.source` of everything it emits: a bounded code (`openinference`)."""
    scopes: ClassVar[Sequence[str]]
    """Instrumentation scope names whose spans it reads (exact names)."""
    unobserved: ClassVar[Sequence[str]] = STRUCTURE_ONLY
    """Boundaries this source can never show: stamped as `handoff.unobserved` on every
    handoff it emits (a translator may set its own per piece of evidence instead).
    STRUCTURE_ONLY by default, because every source translated so far shows only
    structure; a source that shows more declares its own (`()` for none)."""
    label: ClassVar[str] = ""
    """How people call the source ("OpenInference"): the dashboard's "from ... spans"."""
    joins_scopes: ClassVar[bool] = False
    """Whether `ForeignSpan.parent()` / `ancestor()` / `children()` reach across all the
    scopes the translator claims (of one resource, in one export), not only the span's own:
    for a framework that traces each layer under a scope of its own (Semantic Kernel)."""

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        """Contract evidence of one foreign span; [] when it is no evidence (an LLM call,
        a tool run, a turn). Must not raise on odd input: it is the sender's data."""
        raise NotImplementedError

    def run_id(self, span: ForeignSpan) -> str:
        """The span's `handoff.run_id`. Default: its trace id — one trace per invocation,
        for every source measured. Override to stitch a run across traces by a
        conversation id the source puts on EVERY span of the run."""
        return span.trace_id

    def conversation_id(self, span: ForeignSpan) -> str | None:
        """The conversation (session, thread) the span's run belongs to, stamped as
        `gen_ai.conversation.id` on its evidence: the runs of one conversation (a resume is
        a new trace, so a new run) are then found together (`GET /api/v1/runs?q=<id>`),
        at any collector, without merging them. Default: none. Only an id the source
        defines as one, never a content field; the allowlist checks it is a code."""
        return None
