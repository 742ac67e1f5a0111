"""Strands Agents' native GenAI spans (scope `strands.telemetry.tracer`).

Recognised by `gen_ai.operation.name`. One trace per `Swarm.invoke_async` (or per
`Agent` call outside a swarm), so the run id is the trace id; Strands sets no session id
unless the app configures a session manager.

- `invoke_swarm` (the root): the run's start and end. Strands never records the swarm's
  outcome on it (no status, no attribute, no event, not even when the swarm stops at
  `max_handoffs` or `max_iterations`: the span is the same as a healthy run's). One
  structural fact tells a swarm stopped at a limit: its LAST agent asked for a handoff
  (a successful `handoff_to_agent`) and no agent ran after it — the swarm moves control
  whenever a handoff was asked for, and refuses one only at a limit (`max_handoffs`,
  `max_iterations`, its timeouts, repetitive-handoff detection). Read from the swarm's
  children in the same export (`ForeignSpan.children`); then the run's status is
  `max_turns` (its turn limit, in the contract's words), so a ping-pong cut off by the
  limit is a loop (docs/architecture.md, Verdicts, rule 7) and the refused handoff is the limit's doing. When
  the last agent did not hand off — or its spans went in an earlier export than the
  swarm's — the end is stated as `completed` as of the swarm's START, so that a failure
  recorded inside it wins (the judge keeps the latest status).
- `invoke_agent`: an *arrival* of `gen_ai.agent.name` (evidence.pair_arrivals), the run's
  possible final agent, `failed` when its status is ERROR; a root `invoke_agent` (an agent
  called outside a swarm) is the run itself.
- `execute_tool handoff_to_agent` (the swarm's handoff tool): the request, with the
  handoff's tool-call id (`gen_ai.tool.call.id`, content-free) as its handoff id, from the
  agent of the nearest `invoke_agent` ancestor in the same export (the tool span names
  none). The destination is only in the tool's arguments, a content event: never read;
  the arrival names it.

- `chat` (one model call, under the agent's event-loop cycle): its usage
  (`handoff.usage`, base.model_call_usage) — `gen_ai.usage.input_tokens` /
  `output_tokens` and, when the model has one, `gen_ai.request.model` — for the agent of
  the nearest `invoke_agent` ancestor in the same export (the chat span names none; an
  agent run exported apart leaves it unnamed: the run's last leg). `invoke_agent` and
  `invoke_swarm` carry the totals of their calls: never read, they would count twice.

Cannot show: which limit stopped a swarm, the run's outcome, declared routes (`gen_ai.agent.tools` lists
tool names, not destinations), control state, whether the tool call was closed, context
keys, waits, verifier outcomes.
"""

from __future__ import annotations

from typing import ClassVar

from handoffscope.collector.processor.translate.base import (
    ERROR,
    MODEL_OPERATIONS,
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
    model_call_usage,
    run_span,
    tool_call_request,
)
from handoffscope.instrumentation import semconv as sc

SCOPE = "strands.telemetry.tracer"
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
HANDOFF_TOOL = "handoff_to_agent"


def _is_agent(span: ForeignSpan) -> bool:
    return span.text(OPERATION) == "invoke_agent"


def _asked_handoff(span: ForeignSpan, depth: int = 4) -> bool:
    """A successful `handoff_to_agent` under `span` (agent → event-loop cycle → tool)."""
    for child in span.children():
        if child.text(OPERATION) == "execute_tool" and child.text(TOOL_NAME) == HANDOFF_TOOL:
            if child.status != ERROR:
                return True
        elif depth > 1 and _asked_handoff(child, depth - 1):
            return True
    return False


def _stopped_at_limit(swarm: ForeignSpan) -> bool:
    """The swarm's last agent asked for a handoff the swarm never carried out."""
    agents = [c for c in swarm.children() if _is_agent(c)]
    return bool(agents) and _asked_handoff(agents[-1])


class StrandsTranslator(Translator):
    source: ClassVar[str] = "strands"
    label: ClassVar[str] = "Strands"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE,)

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        operation = span.text(OPERATION)
        if operation in MODEL_OPERATIONS:
            return model_call_usage(span)
        if operation == "invoke_swarm" and span.parent_span_id is None:
            if _stopped_at_limit(span):
                return [
                    run_span(
                        **{sc.RUN_STATUS: sc.RUN_STATUS_MAX_TURNS, sc.RUN_STARTED: span.start_ns}
                    )
                ]
            ev = run_span(**{sc.RUN_STATUS: sc.RUN_STATUS_COMPLETED, sc.RUN_STARTED: span.start_ns})
            ev.start_ns = ev.end_ns = span.start_ns
            return [ev]
        if operation == "invoke_agent":
            agent = span.text(AGENT_NAME)
            if not agent:
                return []
            attrs: dict[str, object] = {sc.RUN_FINAL_AGENT: agent}
            if span.status == ERROR:
                attrs[sc.RUN_STATUS] = sc.RUN_STATUS_FAILED
            elif span.parent_span_id is None:
                attrs[sc.RUN_STATUS] = sc.RUN_STATUS_COMPLETED
                attrs[sc.RUN_STARTED] = span.start_ns
            return [run_span(**attrs), arrival(agent)]
        if operation == "execute_tool" and span.text(TOOL_NAME) == HANDOFF_TOOL:
            if span.status == ERROR:
                return []  # the swarm refused it before any handoff (unknown agent)
            owner = span.ancestor(_is_agent)
            sender = owner.text(AGENT_NAME) if owner else None
            if not sender:
                return []
            return [tool_call_request(span, "strands", sender)]
        return []
