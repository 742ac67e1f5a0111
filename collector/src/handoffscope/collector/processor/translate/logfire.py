"""Logfire (`logfire.instrument_openai_agents()`): OpenAI Agents SDK.

Recognised by scope `logfire.openai_agents` and by the span's message template, which
Logfire uses as the span name (`Handoff: {from_agent} → {to_agent}`, ...).

- `OpenAI Agents trace: {name}` (the root): run start and end (`_agents.workflow_end`);
- `Handoff: {from_agent} → {to_agent}`: the request, with both agents, and whether its
  destination is one the sender declared (`handoff.route.declared`): the sender's
  `Agent run` span (an ancestor: `Agent run` → `Turn` → `Handoff`) lists the agent names
  of its declared handoffs in `handoffs`, a JSON array of names (the SDK's
  `Handoff.agent_name`s; no content). Read only to test membership, never copied. When
  that span did not travel in the same export, the route stays `not_observed` — a guess
  either way would be a verdict the spans do not support;
- `Agent run: {name!r}`: an *arrival* of `name` (the judge admits with it the request
  before it: evidence.pair_arrivals); when it failed, how the run ended (Logfire puts
  the error in `error`, matched for the SDK's turn limit, never copied).

Cannot show: control state, the handoff's tool-call id (inside message content), context
keys, waits, verifier outcomes.
"""

from __future__ import annotations

import json
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
DECLARED = "handoffs"
ROUTE_SEEN = tuple(b for b in STRUCTURE_ONLY if b != sc.BOUNDARY_ROUTE)
"""What a handoff whose sender's declared handoffs are known cannot show."""


def _declared(span: ForeignSpan, sender: str) -> list[str] | None:
    """The agent names the sender declared as handoffs, from its `Agent run` ancestor in the
    same export; None when that span is not there or `handoffs` is not a list of names."""
    owner = span.ancestor(lambda s: s.name == AGENT)
    if owner is None or owner.text("name") != sender:
        return None
    names = owner.texts(DECLARED)  # an OTel string array, should Logfire send one
    if names is None:
        raw = owner.text(DECLARED)  # what Logfire sends: a JSON array in a string
        try:
            names = json.loads(raw) if raw else None
        except ValueError:
            return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return names


class LogfireTranslator(Translator):
    source: ClassVar[str] = "logfire"
    label: ClassVar[str] = "Logfire"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE_AGENTS,)

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
            attrs: dict[str, object] = {
                sc.HANDOFF_ID: _agents.handoff_id("lf", span),
                sc.KIND: sc.KIND_HANDOFF,
                sc.FROM_AGENT: sender,
                sc.TO_AGENT: to,
            }
            declared = _declared(span, sender)
            if declared is not None:
                attrs[sc.ROUTE_DECLARED] = to in declared
                attrs[sc.UNOBSERVED] = list(ROUTE_SEEN)
            return [request(**attrs)]
        return []
