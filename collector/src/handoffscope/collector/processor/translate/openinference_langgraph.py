"""OpenInference (`openinference-instrumentation-langchain`): LangChain/LangGraph.

Recognised by scope `openinference.instrumentation.langchain`. Every span is a LangChain
run (`openinference.span.kind` CHAIN / LLM / TOOL); a LangGraph node's span names the node
and its step inside `metadata`, a JSON object that also carries whatever metadata the
app passed (content): only `langgraph_node`, `langgraph_step`, `langgraph_checkpoint_ns`
and the presence of `checkpoint_ns` are read from it (identifiers), and nothing of it is
kept.

- the root span (no parent): the run's start and end (`_langgraph.graph_end`);
- an agent run (a node span of the graph itself, see `_langgraph`): the run's
  possible final agent and an *arrival* of the node; from the second step on, also the
  handoff INTO it — a request naming only its destination, seen to start (one span). Its
  sender is the agent that ran before it, named by the judge (evidence.pair_senders): no
  span of OpenInference's shows the sender's side of a handoff (the `Command` it returned
  is only in `output.value` and the `ParentCommand` exception's message, both content).

Cannot show: declared routes (no span carries the graph's edges; `langgraph_triggers`
reads `branch:to:<node>` whether the edge was declared or not), `route.goto`, control
state, the handoff's tool-call id, context keys, waits, verifier outcomes; a handoff whose
destination never ran (the recursion limit stopping it, a refused `Command`) is not seen.
"""

from __future__ import annotations

import json
from typing import ClassVar

from handoffscope.collector.processor.translate import _langgraph
from handoffscope.collector.processor.translate.base import (
    Evidence,
    ForeignSpan,
    Translator,
    request,
)
from handoffscope.instrumentation import semconv as sc

SCOPE_LANGCHAIN = "openinference.instrumentation.langchain"
METADATA = "metadata"
NODE = "langgraph_node"
STEP = "langgraph_step"


NAMESPACE = "langgraph_checkpoint_ns"
SUBGRAPH = "checkpoint_ns"


def agent_run(span: ForeignSpan) -> tuple[str, int | None] | None:
    """(node, step) when the span is an agent run (`_langgraph`), else None.

    Reads these keys of the `metadata` JSON and nothing else; a value of another type
    than expected counts as absent.
    """
    text = span.text(METADATA)
    if not text or NODE not in text:
        return None
    try:
        meta = json.loads(text)
    except ValueError:
        return None
    if not isinstance(meta, dict) or SUBGRAPH in meta:
        return None  # not a node span, or the subgraph invoked inside an agent's node
    node, step, namespace = meta.get(NODE), meta.get(STEP), meta.get(NAMESPACE)
    if not isinstance(node, str) or not node or not isinstance(namespace, str):
        return None
    if not _langgraph.top_level(namespace):
        return None
    return node, step if isinstance(step, int) and not isinstance(step, bool) else None


class OpenInferenceLangGraphTranslator(Translator):
    source: ClassVar[str] = "openinference"
    label: ClassVar[str] = "OpenInference"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE_LANGCHAIN,)

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        if span.parent_span_id is None:
            return [_langgraph.graph_end(span)]
        found = agent_run(span)
        if found is None:
            return []
        node, step = found
        out = _langgraph.agent_ran(node)
        if step is not None and step > 1:  # step 1: the graph's first agent, no handoff
            out.append(
                request(
                    **{
                        sc.HANDOFF_ID: f"oi-{span.span_id}",
                        sc.KIND: sc.KIND_HANDOFF,
                        sc.TO_AGENT: node,
                        sc.DESTINATION_STARTED: True,
                    }
                )
            )
        return out
