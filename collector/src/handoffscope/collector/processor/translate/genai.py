"""OpenTelemetry GenAI agent spans of any framework, read by meaning (source `genai`).

Frameworks that follow OpenTelemetry's GenAI agent conventions (Pydantic AI, and any
other whose instrumentation scope no translator claims by name) are judged from what the
conventions define, not from a scope name: the core (`translate/__init__.py`) sends here
every scope that no translator claims and whose spans carry `gen_ai.operation.name`.
What is read, all of it content-free:

- `gen_ai.operation.name`: `invoke_agent` (an agent run), `execute_tool` (a tool call),
  `invoke_workflow` (a workflow run), and the model calls (`chat`, `text_completion`,
  `generate_content`); other operations (`embeddings`, `create_agent`, ...) are no
  evidence and are absorbed;
- on a model call, its usage: `gen_ai.usage.input_tokens` / `output_tokens` (or the older
  `prompt_tokens` / `completion_tokens`) and `gen_ai.request.model` (else
  `gen_ai.response.model`) — counts and a name, never the messages beside them;
- `gen_ai.agent.name` (on the agent run; on a tool call when the framework puts it there,
  else the nearest `invoke_agent` ancestor's), `gen_ai.tool.name`, `gen_ai.tool.call.id`,
  `gen_ai.conversation.id`, `error.type`, the span status, and parent/child;
- the exception *type* (`error.type`, `exception.type` of exception events, the status
  description) only to MATCH a known turn limit (`LIMIT_ERRORS`), never copied.

Evidence:

- a model call made by an agent (its own `gen_ai.agent.name`, else its nearest
  `invoke_agent` ancestor's in the same export): one `handoff.usage` — that agent, the
  call's token counts and model, the call's own times (base.usage). A model call with no
  agent is absorbed: a scope read by meaning may be a model client's instrumentation,
  whose calls belong to no agent run. Only the model calls are read: an agent span's
  total of its calls (Pydantic AI's `gen_ai.aggregated_usage.*`) would count them twice;
- a root span (no parent) that is an agent or workflow run: the run's start and end —
  `failed` when its status is ERROR, `max_turns` when that error is a known limit,
  `completed` otherwise;
- `invoke_agent`: what the agent run was depends on where it sits:
  - under another agent's `execute_tool` that is a **handoff tool** (`handoff_tool()`
    below, or a framework's output tool, `Hints.output_tool`): the whole handoff in one
    span — from the agent holding the tool, to this agent, destination started — with the
    tool call's id (`gen_ai.tool.call.id`) as its handoff id, so the tool span's own
    request (the same id) merges with it;
  - under another agent's `execute_tool` that is NOT a handoff tool: a **delegation**
    (`handoff.kind` = `delegation`): the caller invoked an agent as a tool and gets its
    result back, keeping control (Pydantic AI's "agent delegation", `Agent.as_tool`);
  - anywhere else (a sibling of the agent before it, as a swarm runs them): an
    *arrival* of the agent (the judge admits with it the request before it,
    evidence.pair_arrivals);
  - the run's possible final agent, unless it handed off itself (a call under it of a
    handoff tool that succeeded, or of a handoff or output tool with an agent run under
    it); its ERROR says how the run ended (a delegate's does not: the caller may catch
    it);
- `execute_tool` of a handoff tool that did not fail: the request, from the agent that
  holds it, to the agent its name names (`transfer_to_billing` → `billing`) or to none
  (`transfer_to_agent`: the destination is only in the arguments, content, never read;
  the arrival names it). A failed handoff tool call with no agent run under it is
  absorbed: nothing content-free says whether the destination was refused or the tool
  broke.

**The handoff-tool rule** (bounded, by name only): a tool named exactly one of
`HANDOFF_TOOLS` (`transfer_to_agent`, `handoff_to_agent`, `hand_off_to_agent`,
`handoff`, `transfer`), or starting with one of `HANDOFF_PREFIXES` (`transfer_to_`,
`handoff_to_`, `hand_off_to_`) followed by the destination's name (a code, taken verbatim:
a framework that mangles agent names into tool names needs a hint). Names and prefixes
are matched case-insensitively; nothing else is guessed from a tool's name.

**Hints** (`HINTS`, by instrumentation scope name) say how a framework deviates, without
a translator of its own. Pydantic AI (`pydantic-ai`): an output function runs as an
output tool named `final_result` (one output) or `final_result_<function>` (several), and
whatever it returns is the agent's output — control never returns to the caller's model,
so an agent run under an output tool is a hand-off (Pydantic AI's "hand-off by output
function"), and the prefix is removed before the handoff-tool rule reads the name. A
framework that deviates further subclasses `GenAiTranslator` (claiming its scope by name
in `SOURCES`) and overrides `hints()`, `handoff_tool()` or `translate()`.

Cannot show: declared routes (a request for an agent the caller does not have is, in the
frameworks measured, an unknown-tool retry recorded only inside message content), control
state, whether the tool call was closed, context keys, waits, verifier outcomes. A hand-off
decided by application code between two agent runs (Pydantic AI's "programmatic hand-off")
is in no span: each run is its own trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from handoffscope.collector.processor.translate.base import (
    ERROR,
    MODEL_OPERATIONS,
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
    model_call_usage,
    request,
    run_span,
    tool_call_request,
)
from handoffscope.instrumentation import semconv as sc

OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
CONVERSATION_ID = "gen_ai.conversation.id"
ERROR_TYPE = "error.type"
INVOKE_AGENT = "invoke_agent"
EXECUTE_TOOL = "execute_tool"
RUN_OPERATIONS = (INVOKE_AGENT, "invoke_workflow")
"""Operations whose root span is a run."""
HANDOFF_TOOLS = (
    "transfer_to_agent",
    "handoff_to_agent",
    "hand_off_to_agent",
    "handoff",
    "transfer",
)
"""Handoff tools whose name carries no destination (it is in their arguments: content)."""
HANDOFF_PREFIXES = ("transfer_to_", "handoff_to_", "hand_off_to_")
"""Handoff tools named for their destination (`transfer_to_billing`)."""
LIMIT_ERRORS = (
    "UsageLimitExceeded",  # Pydantic AI: UsageLimits (request_limit, tool_calls_limit, ...)
    "LlmCallsLimitExceededError",  # Google ADK: RunConfig.max_llm_calls
    "MaxTurnsExceeded",  # OpenAI Agents SDK: max_turns
    "GraphRecursionError",  # LangGraph: recursion_limit
)
"""Exception types that mean "stopped at its turn limit" (`max_turns`): matched, never copied."""
_DEPTH = 4
"""How deep under an agent run a handoff tool call is looked for (agent → cycle → tool)."""


@dataclass(frozen=True)
class Hints:
    """How one framework's GenAI spans deviate from the plain conventions."""

    output_tool: str | None = None
    """Name (and `<name>_` prefix) of the tool through which the framework returns an
    agent's output: an agent run under it is a hand-off, never a delegation."""


HINTS: dict[str, Hints] = {"pydantic-ai": Hints(output_tool="final_result")}
"""Instrumentation scope name -> hints (docs/foreign-spans.md, "OpenTelemetry GenAI")."""
NO_HINTS = Hints()


def _operation(span: ForeignSpan) -> str | None:
    return span.text(OPERATION)


def _is_agent(span: ForeignSpan) -> bool:
    return _operation(span) == INVOKE_AGENT


def _container(span: ForeignSpan) -> ForeignSpan | None:
    """The nearest ancestor that is an agent run or a tool call (framework spans between
    them, such as an event-loop cycle, are walked through)."""
    return span.ancestor(lambda s: _operation(s) in (INVOKE_AGENT, EXECUTE_TOOL))


def limit_reached(span: ForeignSpan) -> bool:
    """The span's error is a known turn limit (`LIMIT_ERRORS`), by type only."""
    types = [span.text(ERROR_TYPE) or "", *span.exception_types()]
    description = span.status_description
    return any(
        limit in t or description.startswith(limit) or f".{limit}:" in description
        for limit in LIMIT_ERRORS
        for t in types
    )


def ended(span: ForeignSpan) -> str | None:
    """How a run ended, when the span says it failed: `max_turns` or `failed`."""
    if span.status != ERROR:
        return None
    return sc.RUN_STATUS_MAX_TURNS if limit_reached(span) else sc.RUN_STATUS_FAILED


class GenAiTranslator(Translator):
    """GenAI agent spans, by meaning. Claims no scope by name: the core routes to it the
    scopes no other translator claims whose spans carry `gen_ai.operation.name`."""

    source: ClassVar[str] = "genai"
    label: ClassVar[str] = "OpenTelemetry GenAI"
    scopes: ClassVar[tuple[str, ...]] = ()

    def hints(self, span: ForeignSpan) -> Hints:
        return HINTS.get(span.scope, NO_HINTS)

    def handoff_tool(self, span: ForeignSpan) -> tuple[bool, str | None]:
        """(is a handoff tool, the destination its name names) of an `execute_tool` span."""
        name = span.text(TOOL_NAME) or ""
        output = self.hints(span).output_tool
        if output and name.startswith(f"{output}_"):
            name = name[len(output) + 1 :]
        lowered = name.lower()
        if lowered in HANDOFF_TOOLS:
            return True, None
        for prefix in HANDOFF_PREFIXES:
            if lowered.startswith(prefix):
                to = name[len(prefix) :]
                return True, to if to and sc.CODE_PATTERN.match(to) else None
        return False, None

    def _carries_handoff(self, tool: ForeignSpan) -> bool:
        """An agent run under `tool` is a hand-off (not a delegation)."""
        if self.handoff_tool(tool)[0]:
            return True
        output = self.hints(tool).output_tool
        name = tool.text(TOOL_NAME) or ""
        return bool(output) and (name == output or name.startswith(f"{output}_"))

    def _holder(self, tool: ForeignSpan) -> str | None:
        """The agent holding a tool call: its own agent name, else its agent run's."""
        own = tool.text(AGENT_NAME)
        if own:
            return own
        owner = tool.ancestor(_is_agent)
        return owner.text(AGENT_NAME) if owner else None

    def _handed_off(self, agent: ForeignSpan, depth: int = _DEPTH) -> bool:
        """A call under `agent` of a handoff tool that succeeded, or of a handoff or output
        tool with an agent run under it (an output tool alone is the agent answering)."""
        for child in agent.children():
            operation = _operation(child)
            if operation == EXECUTE_TOOL and self._carries_handoff(child):
                if any(_is_agent(c) for c in child.children()):
                    return True
                if child.status != ERROR and self.handoff_tool(child)[0]:
                    return True
            elif operation != INVOKE_AGENT and depth > 1 and self._handed_off(child, depth - 1):
                return True
        return False

    def conversation_id(self, span: ForeignSpan) -> str | None:
        found = span.text(CONVERSATION_ID)
        if found:
            return found
        owner = span.ancestor(lambda s: bool(s.text(CONVERSATION_ID)))
        return owner.text(CONVERSATION_ID) if owner else None

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        operation = _operation(span)
        if operation in MODEL_OPERATIONS:
            # Only under an agent: an unclaimed scope may be a model client's alone.
            return model_call_usage(span, need_agent=True)
        out: list[Evidence] = []
        if operation in RUN_OPERATIONS and span.parent_span_id is None:
            status = ended(span) or sc.RUN_STATUS_COMPLETED
            out.append(run_span(**{sc.RUN_STATUS: status, sc.RUN_STARTED: span.start_ns}))
        if operation == INVOKE_AGENT:
            out.extend(self._agent_run(span))
        elif operation == EXECUTE_TOOL:
            out.extend(self._tool_call(span))
        return out

    def _agent_run(self, span: ForeignSpan) -> list[Evidence]:
        agent = span.text(AGENT_NAME)
        if not agent:
            return []
        container = _container(span)
        if container is not None and _operation(container) == EXECUTE_TOOL:
            caller = self._holder(container)
            if caller:
                return self._called(span, agent, caller, container)
        attrs: dict[str, object] = {}
        if not self._handed_off(span):
            attrs[sc.RUN_FINAL_AGENT] = agent
        status = ended(span)
        if status:
            attrs[sc.RUN_STATUS] = status
        return [run_span(**attrs), arrival(agent)] if attrs else [arrival(agent)]

    def _called(
        self, span: ForeignSpan, agent: str, caller: str, tool: ForeignSpan
    ) -> list[Evidence]:
        """An agent run inside another agent's tool call: a hand-off or a delegation."""
        started = {sc.FROM_AGENT: caller, sc.TO_AGENT: agent, sc.DESTINATION_STARTED: True}
        if not self._carries_handoff(tool):
            # The caller's model gets the result back: control never moved.
            return [
                request(
                    **{sc.HANDOFF_ID: f"genai-{span.span_id}", sc.KIND: sc.KIND_DELEGATION},
                    **started,
                )
            ]
        # The tool span's request (the same id) merges with this one.
        handoff = tool_call_request(tool, "genai", caller)
        handoff.attributes.update(started)
        out = [handoff]
        attrs: dict[str, object] = {}
        if not self._handed_off(span):
            attrs[sc.RUN_FINAL_AGENT] = agent
        status = ended(span)
        if status:
            attrs[sc.RUN_STATUS] = status
        if attrs:
            out.append(run_span(**attrs))
        return out

    def _tool_call(self, span: ForeignSpan) -> list[Evidence]:
        handoff, to = self.handoff_tool(span)
        if not handoff or span.status == ERROR:
            return []
        sender = self._holder(span)
        if not sender:
            return []
        return [tool_call_request(span, "genai", sender, to)]
