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
import time
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from overhead import (  # bench/ is on sys.path: these scripts run as files
    NullExporter,
    compare,
    report,
)

from handoffscope.demo import langgraph_kit as kit
from handoffscope.instrumentation import configure
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor
from handoffscope.instrumentation.langgraph.handler import HandoffCallbackHandler


@tool
def lookup_invoice(order_id: str) -> str:
    """Look an invoice up."""
    return f"invoice {order_id}: 80 EUR"


def build_graph() -> Any:
    """The demo's swarm parts (`langgraph_kit`): triage may hand to billing only."""

    def triage_script() -> Iterator[AIMessage]:
        while True:
            yield kit.tool_call("transfer_to_billing", {"reason": "refund"})

    def billing_script() -> Iterator[AIMessage]:
        while True:
            yield kit.tool_call("lookup_invoice", {"order_id": "A-1"})
            yield AIMessage("refund is on its way")

    triage = kit.agent(
        "triage",
        [kit.handoff_tool("billing", note="transferred")],
        kit.scripted_model(triage_script()),
    )
    billing = kit.agent("billing", [lookup_invoice], kit.scripted_model(billing_script()))
    return kit.swarm({"triage": triage, "billing": billing}, routes={"triage": ("billing",)})


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
