"""Logfire (`logfire.instrument_openai_agents()`): OpenAI Agents SDK.

Recognised by scope `logfire.openai_agents` and by the span's message template, which
Logfire uses as the span name (`Handoff: {from_agent} → {to_agent}`, ...).

- `OpenAI Agents trace: {name}` (the root): run start and end (`_agents.workflow_end`);
- `Handoff: {from_agent} → {to_agent}`: the request, with both agents;
- `Agent run: {name!r}`: an *arrival* of `name` (the judge admits with it the request
  before it: evidence.pair_arrivals); when it failed, how the run ended (Logfire puts
  the error in `error`, matched for the SDK's turn limit, never copied).

Cannot show: control state, the handoff's tool-call id (inside message content), context
keys, waits, verifier outcomes. (The agent span's `handoffs` lists the agent's declared
handoffs, but on a span that ends after the handoff; not used yet, so routes are
`not_observed`.)
"""

from __future__ import annotations

from typing import ClassVar

from handoffscope.collector.processor.translate import _agents
from handoffscope.collector.processor.translate.base import (
    STRUCTURE_ONLY,
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
    request,
)
from handoffscope.instrumentation import semconv as sc

SCOPE_AGENTS = "logfire.openai_agents"
TRACE = "OpenAI Agents trace: {name}"
AGENT = "Agent run: {name!r}"
HANDOFF = "Handoff: {from_agent} → {to_agent}"


class LogfireTranslator(Translator):
    source: ClassVar[str] = "logfire"
    label: ClassVar[str] = "Logfire"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE_AGENTS,)
    unobserved: ClassVar[tuple[str, ...]] = STRUCTURE_ONLY

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        name = span.name
        if name == TRACE and span.parent_span_id is None:
            return [_agents.workflow_end(span)]
        if name == AGENT:
            agent = span.text("name")
            if not agent:
                return []
            return [_agents.agent_end(span, agent, span.text("error")), arrival(agent)]
        if name == HANDOFF:
            sender, to = span.text("from_agent"), span.text("to_agent")
            if not sender or not to:
                return []
            return [
                request(
                    **{
                        sc.HANDOFF_ID: _agents.handoff_id("lf", span),
                        sc.KIND: sc.KIND_HANDOFF,
                        sc.FROM_AGENT: sender,
                        sc.TO_AGENT: to,
                    }
                )
            ]
        return []
