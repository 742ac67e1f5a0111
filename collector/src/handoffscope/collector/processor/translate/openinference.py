"""OpenInference (Arize Phoenix's instrumentations): OpenAI Agents SDK.

Recognised by scope `openinference.instrumentation.openai_agents` and by
`openinference.span.kind`. (LangChain/LangGraph: openinference_langgraph.py.)

OpenAI Agents SDK
- the root span (no parent) is the workflow: run start and end (`_agents.workflow_end`);
- each agent span (`AGENT`, with `graph.node.id`) names the agent; when it also has
  `graph.node.parent_id` (the agent that handed over) it is the whole handoff at once:
  from, to, and the destination started — one span, so no pairing is needed;
- `handoff to X` tool spans add nothing the destination's agent span does not say.
  Their from-agent is only in `input.value`, a content attribute never read.

Cannot show: declared routes, control state, the handoff's tool-call id (it is inside
message content), context keys, waits, verifier outcomes; a handoff whose destination never
started (no span ties the request to an admission) is not seen at all.
"""

from __future__ import annotations

from typing import ClassVar

from handoffscope.collector.processor.translate import _agents
from handoffscope.collector.processor.translate.base import (
    Evidence,
    ForeignSpan,
    Translator,
    request,
)
from handoffscope.instrumentation import semconv as sc

SCOPE_AGENTS = "openinference.instrumentation.openai_agents"
KIND = "openinference.span.kind"
NODE_ID = "graph.node.id"
NODE_PARENT_ID = "graph.node.parent_id"


class OpenInferenceTranslator(Translator):
    source: ClassVar[str] = "openinference"
    label: ClassVar[str] = "OpenInference"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE_AGENTS,)

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        if span.parent_span_id is None:
            return [_agents.workflow_end(span)]
        if span.text(KIND) != "AGENT":
            return []
        agent = span.text(NODE_ID)
        if not agent:
            return []
        out = [_agents.agent_end(span, agent)]
        sender = span.text(NODE_PARENT_ID)
        if sender:
            out.append(
                request(
                    **{
                        sc.HANDOFF_ID: _agents.handoff_id("oi", span),
                        sc.KIND: sc.KIND_HANDOFF,
                        sc.FROM_AGENT: sender,
                        sc.TO_AGENT: agent,
                        sc.DESTINATION_STARTED: True,
                    }
                )
            )
        return out
