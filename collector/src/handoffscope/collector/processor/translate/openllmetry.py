"""OpenLLMetry (Traceloop's instrumentations): OpenAI Agents SDK.

Recognised by scope `opentelemetry.instrumentation.openai_agents` and by
`traceloop.span.kind`. (LangChain/LangGraph: openllmetry_langgraph.py.)

OpenAI Agents SDK
- `workflow` span (the root): run start and end (`_agents.workflow_end`);
- `handoff` span: the request, from `gen_ai.handoff.from_agent`. Traceloop never sets the
  destination on SDK handoffs (the span is named `<from> → unknown.handoff`), so the
  request names none;
- `agent` span: an *arrival* of `gen_ai.agent.name`; the judge admits with it the
  request before it (evidence.pair_arrivals), which also names the destination.

Cannot show: declared routes, control state, the handoff's tool-call id (inside message
content), context keys, waits, verifier outcomes.
"""

from __future__ import annotations

from typing import ClassVar

from handoffscope.collector.processor.translate import _agents
from handoffscope.collector.processor.translate.base import (
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
    request,
)
from handoffscope.instrumentation import semconv as sc

SCOPE_AGENTS = "opentelemetry.instrumentation.openai_agents"
KIND = "traceloop.span.kind"
AGENT_NAME = "gen_ai.agent.name"
HANDOFF_FROM = "gen_ai.handoff.from_agent"
HANDOFF_TO = "gen_ai.handoff.to_agent"


class OpenLLMetryTranslator(Translator):
    source: ClassVar[str] = "openllmetry"
    label: ClassVar[str] = "OpenLLMetry"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE_AGENTS,)

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        kind = span.text(KIND)
        if kind == "workflow" and span.parent_span_id is None:
            return [_agents.workflow_end(span)]
        if kind == "agent":
            agent = span.text(AGENT_NAME)
            if not agent:
                return []
            return [_agents.agent_end(span, agent), arrival(agent)]
        if kind == "handoff":
            sender = span.text(HANDOFF_FROM)
            if not sender:
                return []
            attrs: dict[str, object] = {
                sc.HANDOFF_ID: _agents.handoff_id("tl", span),
                sc.KIND: sc.KIND_HANDOFF,
                sc.FROM_AGENT: sender,
            }
            to = span.text(HANDOFF_TO)
            if to and to != "unknown":
                attrs[sc.TO_AGENT] = to
            return [request(**attrs)]
        return []
