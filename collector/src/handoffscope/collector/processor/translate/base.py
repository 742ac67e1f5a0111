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


_OPERATION = "gen_ai.operation.name"
_AGENT_NAME = "gen_ai.agent.name"
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
"""`gen_ai.operation.name` of a model call (OpenTelemetry's GenAI conventions): the spans
whose usage is one call's. Agent and workflow spans may carry a total of their calls too
(Strands' `invoke_agent`), which would count them twice: never read."""
GENAI_INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
"""Where a GenAI model span puts its input tokens: the current name, then the older one."""
GENAI_OUTPUT_TOKENS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
GENAI_MODELS = ("gen_ai.request.model", "gen_ai.response.model")
"""The model asked for, else the one that answered."""


def usage(
    span: ForeignSpan,
    agent: str | None,
    input_keys: Sequence[str] = GENAI_INPUT_TOKENS,
    output_keys: Sequence[str] = GENAI_OUTPUT_TOKENS,
    model_keys: Sequence[str] = GENAI_MODELS,
) -> Evidence:
    """One model call's usage (`handoff.usage`): the calling agent, the call's token counts
    where the source reported them (absent, not 0, where it did not: a call still counts),
    one call, and the model's name when it is a name (`MODEL_PATTERN`; anything else — a
    sentence, a path with spaces — is left out, not cut). No handoff id: the judge places
    it in the leg `agent` held at the span's start (engine/usage.py); without an agent it
    counts in the run's last leg. Counts and a name only: never content."""
    attrs: dict[str, object] = {sc.USAGE_MODEL_CALLS: 1}
    if agent:
        attrs[sc.GEN_AI_AGENT_NAME] = agent
    for target, keys in (
        (sc.GEN_AI_USAGE_INPUT_TOKENS, input_keys),
        (sc.GEN_AI_USAGE_OUTPUT_TOKENS, output_keys),
    ):
        for key in keys:
            count = span.count(key)
            if count is not None:
                attrs[target] = count
                break
    for key in model_keys:
        model = span.text(key)
        if model and sc.MODEL_PATTERN.match(model):
            attrs[sc.GEN_AI_REQUEST_MODEL] = model
            break
    return Evidence(sc.SPAN_USAGE, attrs)


def model_call_usage(span: ForeignSpan, need_agent: bool = False) -> list[Evidence]:
    """`usage()` of a GenAI model-call span (`MODEL_OPERATIONS`), naming the agent that
    made the call: the span's own `gen_ai.agent.name`, else its nearest `invoke_agent`
    ancestor's in the same export.

    A root model call (no parent: made outside any agent run) is no run's work: [] — any
    span with a run id makes a run, and a lone call is not one. A call under a parent whose
    agent span went in another export (an SDK's batch processor exports in end order, and
    an agent run outlasts its batch delay) names no agent and counts in the run's last
    leg — unless `need_agent`: a source read by meaning may be a plain model client's
    instrumentation whose calls, under an app's own spans, belong to no agent run."""
    agent = span.text(_AGENT_NAME)
    if not agent:
        if span.parent_span_id is None:
            return []
        owner = span.ancestor(lambda s: s.text(_OPERATION) == "invoke_agent")
        agent = owner.text(_AGENT_NAME) if owner else None
        if not agent and need_agent:
            return []
    return [usage(span, agent)]


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
    (None when absent or of another type); `count()` a token count (an int, or a whole
    double). `status_description` and event names are there to be *matched*
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

    def count(self, key: str) -> int | None:
        """A non-negative count: an int, or a double holding a whole number (some
        instrumentations send token counts as doubles); None otherwise."""
        value = self._values().get(key)
        if value is None:
            return None
        kind = value.WhichOneof("value")
        if kind == "int_value":
            found = value.int_value
        elif kind == "double_value" and value.double_value.is_integer():
            found = int(value.double_value)
        else:
            return None
        return found if 0 <= found < 2**63 else None

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
