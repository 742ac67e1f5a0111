"""OpenLLMetry (Traceloop's `opentelemetry-instrumentation-langchain`): LangChain/LangGraph.

Recognised by scope `opentelemetry.instrumentation.langchain`. The graph invocation is an
`invoke_agent <graph>` span (the root) over a `<graph>.workflow` span; each node run is
an `execute_task <node>` span naming its node in
`traceloop.association.properties.langgraph_node`; each `Command(goto=...)` a node or a
tool returns is a `goto <node>` span.

- the root span (no parent): the run's start and end (`_langgraph.graph_end`) — but not a
  `create_agent <name>` root, the construction of an agent (its own trace: no run);
- an agent run (an `execute_task` of the graph itself, see `_langgraph`): the run's
  possible final agent and an *arrival* of the node, which admits the request before it
  (evidence.pair_arrivals);
- `goto <node>` (`langgraph.command.goto_node`): the request, from the agent run it
  happened in — not `langgraph.command.source_node`, which for a swarm agent's handoff
  tool is the agent's inner `tools` node. Traceloop records each such goto twice (under
  the tool and under the agent's subgraph): the handoff id is derived from the agent run
  and the destination, so both spans are one handoff. `route.goto` is the goto node;
  `route.declared` whether `<agent> -> <node>` is among the graph's declared edges
  (`gen_ai.workflow.edges` on the `invoke_agent` span above: LangGraph's drawing of the
  graph — static and conditional edges, `destinations=`, `Command[Literal[...]]`
  annotations), left unstated (route `not_observed`) when the agent declares no edge at
  all or the graph span travelled in another export than the goto.

Cannot show: control state, the handoff's tool-call id, context keys, waits, verifier
outcomes; a static or conditional edge between agents (a supervisor's worker returning to
it) has no goto span and is not seen as a handoff.
"""

from __future__ import annotations

import hashlib
from typing import ClassVar

from handoffscope.collector.processor.translate import _langgraph
from handoffscope.collector.processor.translate.base import (
    STRUCTURE_ONLY,
    Evidence,
    ForeignSpan,
    Translator,
    request,
)
from handoffscope.instrumentation import semconv as sc

SCOPE_LANGCHAIN = "opentelemetry.instrumentation.langchain"
NODE = "traceloop.association.properties.langgraph_node"
NAMESPACE = "traceloop.association.properties.langgraph_checkpoint_ns"
GOTO = "langgraph.command.goto_node"
OPERATION = "gen_ai.operation.name"
CREATE_AGENT = "create_agent"
"""Traceloop's operation for a span around building an agent: a root span, no run."""
WORKFLOW_NODES = "gen_ai.workflow.nodes"
WORKFLOW_EDGES = "gen_ai.workflow.edges"
EDGE = " -> "
ROUTE_SEEN: tuple[str, ...] = tuple(b for b in STRUCTURE_ONLY if b != sc.BOUNDARY_ROUTE)
"""What a handoff whose route was judged leaves unobserved."""


def agent_run(span: ForeignSpan) -> str | None:
    """The node when the span is an agent run (`_langgraph`), else None."""
    if span.text(OPERATION) != "execute_task" or not _langgraph.top_level(span.text(NAMESPACE)):
        return None
    return span.text(NODE) or None


def _is_graph(span: ForeignSpan) -> bool:
    return span.has(WORKFLOW_NODES)


def declared(edges: list[str] | None, sender: str, to: str) -> bool | None:
    """Is `sender -> to` a declared edge? None when the sender declares none (open)."""
    if edges is None:
        return None
    if f"{sender}{EDGE}{to}" in edges:
        return True
    prefix = f"{sender}{EDGE}"
    return False if any(e.startswith(prefix) for e in edges) else None


class OpenLLMetryLangGraphTranslator(Translator):
    source: ClassVar[str] = "openllmetry"
    label: ClassVar[str] = "OpenLLMetry"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE_LANGCHAIN,)

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        if span.parent_span_id is None:
            if span.text(OPERATION) == CREATE_AGENT:
                # Building an agent (`create_agent` / `create_react_agent`, when the app
                # constructs its graph) is a trace of its own, not a run: read as one, a
                # supervisor with two workers was 3-4 runs per invocation.
                return []
            return [_langgraph.graph_end(span)]
        to = span.text(GOTO)
        if to and span.text(OPERATION) == "goto":
            return self._goto(span, to)
        node = agent_run(span)
        return _langgraph.agent_ran(node) if node else []

    def _goto(self, span: ForeignSpan, to: str) -> list[Evidence]:
        run = span.ancestor(lambda a: agent_run(a) is not None)
        sender = agent_run(run) if run is not None else None
        if run is None or not sender:
            return []  # the agent's span travelled in another export: no guess
        graph = run.ancestor(_is_graph)
        route = declared(graph.texts(WORKFLOW_EDGES) if graph else None, sender, to)
        attrs: dict[str, object] = {
            sc.HANDOFF_ID: f"tl-{run.span_id}-{_digest(to)}",
            sc.KIND: sc.KIND_HANDOFF,
            sc.FROM_AGENT: sender,
            sc.TO_AGENT: to,
            sc.ROUTE_GOTO: to,
            sc.UNOBSERVED: list(STRUCTURE_ONLY if route is None else ROUTE_SEEN),
        }
        if route is not None:
            attrs[sc.ROUTE_DECLARED] = route
        return [request(**attrs)]


def _digest(node: str) -> str:
    """A node name as an id segment (any characters in, hex out)."""
    return hashlib.blake2b(node.encode(), digest_size=4).hexdigest()
