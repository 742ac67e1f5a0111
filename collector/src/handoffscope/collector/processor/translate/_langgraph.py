"""Evidence shapes shared by the translators of LangGraph spans (OpenInference, OpenLLMetry).

Both instrumentations hook LangChain's callbacks, so both see a LangGraph invocation the
same way: one span for the graph (the root of its trace), one per node run at every
level (a swarm agent's node, the subgraph inside it, its `model` and `tools` nodes, the
chat model, the tools), every node span carrying the node's `langgraph_node` and
`langgraph_step`. What decides the rules here:

- **An agent run** is a node run of the graph itself, told by its checkpoint namespace
  (`langgraph_checkpoint_ns`: `<node>:<task id>` at the top, deeper levels joined with
  `|`) — an identifier, read from the span alone, so it does not depend on which export
  carried the span's parent. Deeper node spans inherit their agent's node name and are
  no agent runs. A compiled subgraph run as a node has a second span with the same
  namespace (the subgraph invoked inside the node): OpenInference marks it with a
  `checkpoint_ns` key of its own; Traceloop's is identical to the node's (a second
  arrival of the same agent, which pairs with nothing: harmless).
- **The run's outcome is the graph span's** (the root): ERROR with a
  `GraphRecursionError` exception event is the recursion limit (`max_turns`), any other
  ERROR is `failed` — the exception's TYPE is matched, its message never read (LangGraph's
  `ParentCommand` carries the whole conversation in it). Agent runs end in ERROR on every
  `Command(graph=PARENT)` handoff, so their status says nothing about the run.
"""

from __future__ import annotations

from handoffscope.collector.processor.translate.base import (
    ERROR,
    Evidence,
    ForeignSpan,
    arrival,
    run_span,
)
from handoffscope.instrumentation import semconv as sc

RECURSION_LIMIT = "GraphRecursionError"
"""LangGraph's exception for `recursion_limit` (its turn limit), matched by type name."""


def graph_end(span: ForeignSpan) -> Evidence:
    """How the run ended, from the graph span (the root of the trace)."""
    status = sc.RUN_STATUS_COMPLETED
    if span.status == ERROR:
        limit = any(t.rsplit(".", 1)[-1] == RECURSION_LIMIT for t in span.exception_types())
        status = sc.RUN_STATUS_MAX_TURNS if limit else sc.RUN_STATUS_FAILED
    return run_span(**{sc.RUN_STATUS: status, sc.RUN_STARTED: span.start_ns})


def top_level(namespace: str | None) -> bool:
    """Is this checkpoint namespace a node of the invoked graph itself (not deeper)?"""
    return namespace is not None and namespace != "" and "|" not in namespace


def agent_ran(node: str) -> list[Evidence]:
    """An agent run: the run's possible final agent, and an arrival of the agent (the
    destination side of the handoff before it: evidence.pair_arrivals / pair_senders)."""
    return [run_span(**{sc.RUN_FINAL_AGENT: node}), arrival(node)]
