"""OpenInference (Arize Phoenix's instrumentations): agent runs by `openinference.span.kind`.

Claimed scopes, each read off a real export (docs/foreign-spans.md has the tables):
`openinference.instrumentation.openai_agents` (OpenAI Agents SDK),
`openinference.instrumentation.agno` (Agno agents and teams) and
`openinference.instrumentation.smolagents` (smolagents and its managed agents).
(LangChain/LangGraph: openinference_langgraph.py.) An agent run is an `AGENT` span; the
instrumentations say where it came from in one of three shapes, told apart by the span
itself (by what it carries, never by its scope, which a translator does not see):

- **`graph.node.id` is the agent's name** (openai-agents: no `graph.node.name`).
  `graph.node.parent_id` names the agent that handed over — a *sibling* run, so control
  moved: a handoff. The agent span is the whole handoff at once — from, to, and the
  destination started; one span, so no pairing is needed. The root span (no parent) is
  the workflow: run start and end (`_agents.workflow_end`); an agent span in error ends
  the run (`_agents.agent_end`). `handoff to X` tool spans add nothing the destination's
  agent span does not say, and their from-agent is only in `input.value`, content.
- **`graph.node.id` is an opaque per-run id, the name is `graph.node.name`** (Agno).
  `graph.node.parent_id` is the node id of the run this one ran *inside*: a team whose
  leader called `delegate_task_to_member`. The member's run returns its result to the
  leader as that tool's result, and the team's run goes on holding control and ends after
  it — in coordinate mode the leader synthesises, in route mode (`respond_directly`) it
  returns the member's answer as the team's, and no attribute tells the two apart. Control
  never leaves the caller, so it is a **delegation** (`handoff.kind` = `delegation`), from
  the name on the ancestor span with that node id. `session.id` (Agno's session, on every
  agent span) is the conversation id.
- **No `graph.node` at all** (smolagents, recognised by its `smolagents.max_steps`): the
  agent's name is the span's name, `<name>.run` (a managed agent's name is a Python
  identifier, smolagents checks it). A run inside another agent's run (a managed agent,
  called from the manager's step like a tool, its report returned to the manager) is a
  **delegation** from the nearest agent span above it. The manager lists its managed
  agents' names (`smolagents.managed_agents.N.name`): a delegation to one of them has
  its route `passed` (declared), to another `failed`.

For the last two, the sender is read off an ancestor span that travelled in the same
export (the caller's span ends last, so the SDK's batch processor usually sends it with
its members). OpenInference's own quickstarts export with a `SimpleSpanProcessor`, one
span per export, so the caller is often elsewhere: then the delegation names only its
destination, and every caller's span (an Agno team: `agno.team.id`; a smolagents manager:
it lists managed agents) is also an *arrival*, so the judge names the sender as the
caller that started latest before it (evidence.pair_senders) — right for one level of
callers; under nested teams a member called after a sub-team ran is credited to the
sub-team. The root agent span is the run: start, end at ITS end (`failed` when in
error), final agent. A member's failure does not end the run: both frameworks hand the error to the
caller, which goes on, and the root's later end says how the run ended. One exception is
visible: smolagents ends a run by raising `AgentGenerationError` out of it (its model
failed), recorded on the step span it happened in (type matched, message never read),
and OpenInference never ends the run span of a run that raised — so that step span is
how a crashed run reads `failed`; when the root's end follows, the root wins.

**Usage**: every `LLM` span (one model call) is a `handoff.usage` (base.usage) —
`llm.token_count.prompt` / `llm.token_count.completion`, `llm.model_name` — for the agent
of its nearest `AGENT` ancestor in the same export, named as above (Agno's
`graph.node.name`, smolagents' `<name>.run`, openai-agents' `graph.node.id`). Agent spans
carry their own total of their calls too (smolagents' `<name>.run` has
`llm.token_count.*`): never read, it would count every call twice. A call whose agent's
span travelled in another export (one span per export) names no agent and counts in the
run's last leg; a root `LLM` span (a lone call outside any agent run) is no run's work.

Cannot show: control state, the handoff's tool-call id (in message content), context
keys, waits, verifier outcomes; declared routes except smolagents' managed agents; a
handoff whose destination never started; smolagents' `max_steps` (the run ends with an
answer and an OK span); the run that raised, in smolagents (its span never ends: a
delegation into it is not seen, one out of it names no sender); a smolagents agent under
a span of another scope (the app's) reads as a delegation with no sender: nothing on its
span tells it from a managed agent whose manager's span travelled apart.
"""

from __future__ import annotations

from typing import ClassVar

from handoffscope.collector.processor.translate import _agents
from handoffscope.collector.processor.translate.base import (
    ERROR,
    STRUCTURE_ONLY,
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
    request,
    run_span,
    usage,
)
from handoffscope.instrumentation import semconv as sc

SCOPE_AGENTS = "openinference.instrumentation.openai_agents"
SCOPE_AGNO = "openinference.instrumentation.agno"
SCOPE_SMOLAGENTS = "openinference.instrumentation.smolagents"
KIND = "openinference.span.kind"
AGENT = "AGENT"
LLM = "LLM"
TOKENS_IN = ("llm.token_count.prompt",)
TOKENS_OUT = ("llm.token_count.completion",)
MODEL_NAME = ("llm.model_name",)
NODE_ID = "graph.node.id"
NODE_NAME = "graph.node.name"
NODE_PARENT_ID = "graph.node.parent_id"
SESSION_ID = "session.id"
SMOL_MAX_STEPS = "smolagents.max_steps"
SMOL_MANAGED = "smolagents.managed_agents.{}.name"
SMOL_RUN_SUFFIX = ".run"
AGNO_TEAM_ID = "agno.team.id"
SMOL_RUN_FAILED = "AgentGenerationError"
"""The one smolagents error that ends a run (raised out of it); others go to the model."""
MAX_MANAGED = 64
"""Managed agents read per manager (a bound on a walk over numbered attributes)."""


def _agno_name(span: ForeignSpan) -> str | None:
    """The agent's name when node ids and names are split (`graph.node.name`)."""
    return span.text(NODE_NAME) if span.text(KIND) == AGENT else None


def _smol_name(span: ForeignSpan) -> str | None:
    """The agent's name of a smolagents run span (`<name>.run`)."""
    if span.text(KIND) != AGENT or span.integer(SMOL_MAX_STEPS) is None:
        return None
    name = span.name.removesuffix(SMOL_RUN_SUFFIX)
    return name if name and name != span.name else None


class OpenInferenceTranslator(Translator):
    source: ClassVar[str] = "openinference"
    label: ClassVar[str] = "OpenInference"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE_AGENTS, SCOPE_AGNO, SCOPE_SMOLAGENTS)

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        if span.text(KIND) == LLM:  # the most frequent span: one attribute read decides
            return _llm_usage(span)
        name = _agno_name(span)
        if name:
            return _agno_run(span, name)
        name = _smol_name(span)
        if name:
            return _smol_run(span, name)
        if _smol_step_raised(span):
            return [run_span(**{sc.RUN_STATUS: sc.RUN_STATUS_FAILED})]
        if span.parent_span_id is None:
            return [_agents.workflow_end(span)]
        if span.text(KIND) != AGENT:
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

    def conversation_id(self, span: ForeignSpan) -> str | None:
        # Only Agno's (`session.id` on every agent run); the openai-agents instrumentation
        # sets it only under `using_session`, and its runs keep no conversation id
        # (docs/foreign-spans.md, "Run identity"); smolagents sets none.
        return span.text(SESSION_ID) if _agno_name(span) else None


def _agent_name(span: ForeignSpan) -> str | None:
    """The agent an `AGENT` span is the run of, in whichever shape its source uses."""
    return _agno_name(span) or _smol_name(span) or span.text(NODE_ID)


def _llm_usage(span: ForeignSpan) -> list[Evidence]:
    """One model call's usage, for the agent whose run it ran in (module docstring)."""
    if span.parent_span_id is None:
        return []
    owner = span.ancestor(lambda s: s.text(KIND) == AGENT)
    agent = _agent_name(owner) if owner else None
    return [usage(span, agent, input_keys=TOKENS_IN, output_keys=TOKENS_OUT, model_keys=MODEL_NAME)]


def _run_itself(span: ForeignSpan, name: str) -> Evidence:
    """The root agent span: the run's start, end (at the span's end) and final agent."""
    status = sc.RUN_STATUS_FAILED if span.status == ERROR else sc.RUN_STATUS_COMPLETED
    attrs = {sc.RUN_STATUS: status, sc.RUN_STARTED: span.start_ns, sc.RUN_FINAL_AGENT: name}
    return run_span(**attrs)


def _delegation(span: ForeignSpan, sender: str | None, to: str, **extra: object) -> Evidence:
    """A delegation into `span`'s run; without a sender, the judge names the caller that
    started latest before it (the callers' arrivals, evidence.pair_senders)."""
    attrs: dict[str, object] = {
        sc.HANDOFF_ID: _agents.handoff_id("oi", span),
        sc.KIND: sc.KIND_DELEGATION,
        sc.TO_AGENT: to,
        sc.DESTINATION_STARTED: True,
        **extra,
    }
    if sender:
        attrs[sc.FROM_AGENT] = sender
    return request(**attrs)


def _with_arrival(out: list[Evidence], caller: bool, name: str) -> list[Evidence]:
    """A caller's run is also an arrival, for the delegations that could not name it."""
    return [*out, arrival(name)] if caller else out


def _agno_run(span: ForeignSpan, name: str) -> list[Evidence]:
    team = span.has(AGNO_TEAM_ID)
    parent_id = span.text(NODE_PARENT_ID)
    if not parent_id:
        if span.parent_span_id is None:
            return _with_arrival([_run_itself(span, name)], team, name)
        # Under a span of another kind (an Agno workflow step, the app's own span): whoever
        # owns the run ends it; this agent may be its last.
        return _with_arrival([run_span(**{sc.RUN_FINAL_AGENT: name})], team, name)
    caller = span.ancestor(lambda s: s.text(NODE_ID) == parent_id)
    sender = _agno_name(caller) if caller else None
    return _with_arrival([_delegation(span, sender, name)], team, name)


def _managed(span: ForeignSpan) -> set[str]:
    """The names of the managed agents a smolagents run span lists."""
    names = set()
    for k in range(MAX_MANAGED):
        listed = span.text(SMOL_MANAGED.format(k))
        if listed is None:
            break
        names.add(listed)
    return names


def _smol_run(span: ForeignSpan, name: str) -> list[Evidence]:
    manager = bool(_managed(span))
    if span.parent_span_id is None:
        return _with_arrival([_run_itself(span, name)], manager, name)
    caller = span.ancestor(lambda s: s.text(KIND) == AGENT)
    sender = _smol_name(caller) if caller else None
    if caller is None or not sender:
        return _with_arrival([_delegation(span, None, name)], manager, name)
    declared = {
        sc.ROUTE_DECLARED: name in _managed(caller),
        sc.UNOBSERVED: [b for b in STRUCTURE_ONLY if b != sc.BOUNDARY_ROUTE],
    }
    return _with_arrival([_delegation(span, sender, name, **declared)], manager, name)


def _smol_step_raised(span: ForeignSpan) -> bool:
    """A smolagents step span whose run raised out (`AgentGenerationError`)."""
    if span.status != ERROR or span.parent_span_id is None:
        return False
    return any(t.rsplit(".", 1)[-1] == SMOL_RUN_FAILED for t in span.exception_types())
