"""LangGraph adapter overhead: the same scripted workload with and without the instrumentor.

The workload is a real two-agent swarm (each agent a compiled subgraph: scripted chat
model -> ToolNode) run through the real runtime: triage hands off to billing with a
`Command(graph=Command.PARENT)` tool, billing looks an invoice up and answers. One
invocation = one handoff, ~20 callback events, 4 evidence spans. Rounds alternate between
the bare graph and the instrumented one (the shipped pipeline: `configure()`'s bounded batch
processor, exporting to a null exporter so the network is not what we measure), and the
medians are compared: the ratio is the adapter's cost to the app's own thread.

    .venv/bin/python bench/bench_adapter_langgraph.py [--invocations 200] [--rounds 7]

Then, instrumented both ways, usage off against usage on (the handler's `on_llm_end`, which
sums each model call's usage into the leg: docs/semconv.md, "Usage"). "Off" is a bench-only
switch — the handler ignoring model events, as it did before usage was read — not an option
of the product; the ratio is what reading usage adds to an instrumented invocation.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Iterator
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import START, StateGraph, add_messages
from langgraph.prebuilt import InjectedState, ToolNode, tools_condition
from langgraph.types import Command
from overhead import (  # bench/ is on sys.path: these scripts run as files
    NullExporter,
    compare,
    report,
)
from typing_extensions import TypedDict

from handoffscope.instrumentation import configure
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor
from handoffscope.instrumentation.langgraph.handler import HandoffCallbackHandler


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    active_agent: str


_ids = itertools.count()


def _call(name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{next(_ids)}"}])


@tool
def transfer_to_billing(
    state: Annotated[dict, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]
) -> Command:
    """Hand the customer to billing."""
    done = ToolMessage("transferred", tool_call_id=tool_call_id)
    return Command(
        goto="billing",
        graph=Command.PARENT,
        update={"messages": [*state["messages"], done], "active_agent": "billing"},
    )


@tool
def lookup_invoice(order_id: str) -> str:
    """Look an invoice up."""
    return f"invoice {order_id}: 80 EUR"


def _agent(name: str, script: Iterator[AIMessage], tools: list) -> Any:
    model = GenericFakeChatModel(messages=script)
    g = StateGraph(State)
    g.add_node("model", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "model")
    g.add_conditional_edges("model", tools_condition)
    g.add_edge("tools", "model")
    return g.compile(name=name)


def build_graph() -> Any:
    def triage_script() -> Iterator[AIMessage]:
        while True:
            yield _call("transfer_to_billing")

    def billing_script() -> Iterator[AIMessage]:
        while True:
            yield _call("lookup_invoice", order_id="A-1")
            yield AIMessage("refund is on its way")

    g = StateGraph(State)
    g.add_node(
        "triage",
        _agent("triage", triage_script(), [transfer_to_billing]),
        destinations=("billing",),
    )
    g.add_node("billing", _agent("billing", billing_script(), [lookup_invoice]))
    g.add_edge(START, "triage")
    return g.compile()


def one_round(graph: Any, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        graph.invoke({"messages": [("user", "refund please")], "active_agent": "triage"})
    return (time.perf_counter() - t0) / n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--invocations", type=int, default=200, help="graph invocations per round")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)

    graph = build_graph()
    provider = configure(service_name="bench-langgraph", exporter=NullExporter(), set_global=False)
    ins = LangGraphInstrumentor()
    bare, instrumented = compare(
        lambda n: one_round(graph, n),
        lambda: ins.instrument(tracer_provider=provider),
        ins.uninstrument,
        n=args.invocations,
        rounds=args.rounds,
    )
    report(
        f"LangGraph adapter: one handoff per invocation, median of {args.rounds} rounds",
        labels=("bare graph invocation", "instrumented invocation"),
        unit="invocation",
        bare=bare,
        instrumented=instrumented,
        units=args.rounds * args.invocations,
    )

    def usage(on: bool) -> None:
        HandoffCallbackHandler.ignore_llm = not on

    ins.instrument(tracer_provider=provider)
    try:
        usage_off, usage_on = compare(
            lambda n: one_round(graph, n),
            lambda: usage(True),
            lambda: usage(False),
            n=args.invocations,
            rounds=args.rounds,
        )
    finally:
        usage(True)
        ins.uninstrument()
    provider.shutdown()
    report(
        f"LangGraph adapter, usage off vs on: 3 model calls per invocation, "
        f"median of {args.rounds} rounds",
        labels=("instrumented, usage off", "instrumented, usage on"),
        unit="invocation",
        bare=usage_off,
        instrumented=usage_on,
        units=2 * args.rounds * args.invocations,  # both modes emit: stats counted them all
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
