"""A LangGraph support swarm instrumented with handoffscope — runs offline, no API keys.

Two agents, each a compiled subgraph (model -> tools), hand the customer to each other
with handoff tools that return `Command(goto=..., graph=Command.PARENT, update=...)`;
the refund needs a human's approval (`interrupt()`), given later with
`Command(resume=...)`. The chat models are scripted (`GenericFakeChatModel`) so it runs
anywhere; swap in a real model and nothing else changes.

Start a collector, run the app, look at the runs:

    handoffscope collector --db /tmp/handoffscope.duckdb &
    python examples/langgraph_app.py               # or --endpoint http://host:4318
    handoffscope dashboard --api http://127.0.0.1:4318

The two lines that instrument the app are marked below. Exported spans carry agent names,
opaque ids and bounded codes only — none of the messages, tool arguments or results.
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
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.prebuilt import InjectedState, ToolNode, tools_condition
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from handoffscope.instrumentation import configure
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor, wait_details


class SupportState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    active_agent: str  # who holds the customer; handoff tools must move it


def handoff_tool(agent: str):
    """The swarm handoff: close the tool call with its own ToolMessage, move control, go."""

    @tool(f"transfer_to_{agent}")
    def transfer(
        reason: str,
        state: Annotated[dict, InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        """Hand the customer to another agent."""
        done = ToolMessage(f"Transferred to {agent}.", tool_call_id=tool_call_id)
        return Command(
            goto=agent,
            graph=Command.PARENT,
            update={"messages": [*state["messages"], done], "active_agent": agent},
        )

    return transfer


@tool
def lookup_invoice(order_id: str) -> str:
    """Find the invoice of an order."""
    return f"Order {order_id}: 80 EUR, paid by card."


def request_refund_approval(state: SupportState) -> dict:
    # Who must decide, why, and by when travel with the interrupt (and into the checkpoint).
    answer = interrupt(
        {
            "question": "Refund 80 EUR to the customer's card?",
            **wait_details(
                owner="billing-lead", reason="refund_over_limit", deadline=time.time() + 4 * 3600
            ),
        }
    )
    verdict = "approved" if answer.get("decision") == "approved" else "declined"
    return {"messages": [AIMessage(f"Your refund was {verdict}.")]}


_ids = itertools.count(1)


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{next(_ids)}"}])


def agent(name: str, script: Iterator[AIMessage], tools: list, *, approval: bool = False):
    model = GenericFakeChatModel(messages=script)  # a real chat model goes here

    def call_model(state: SupportState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(SupportState)
    g.add_node("model", call_model)
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "model")
    g.add_edge("tools", "model")
    if approval:
        g.add_node("approval", request_refund_approval)
        g.add_conditional_edges("model", tools_condition, {"tools": "tools", END: "approval"})
        g.add_edge("approval", END)
    else:
        g.add_conditional_edges("model", tools_condition)
    return g.compile(name=name)


def build_app():
    triage = agent(
        "triage",
        iter([call("transfer_to_billing", reason="refund")]),
        [handoff_tool("billing")],
    )
    billing = agent(
        "billing",
        iter([call("lookup_invoice", order_id="A-1001"), AIMessage("Let me get that approved.")]),
        [lookup_invoice, handoff_tool("triage")],
        approval=True,
    )
    g = StateGraph(SupportState)
    g.add_node("triage", triage, destinations=("billing",))
    g.add_node("billing", billing, destinations=("triage",))
    g.add_edge(START, "triage")
    return g.compile(checkpointer=InMemorySaver())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--endpoint",
        help="collector OTLP/HTTP endpoint (default: OTEL_EXPORTER_OTLP_ENDPOINT or http://127.0.0.1:4318)",
    )
    p.add_argument("--service", default="support-langgraph", help="service.name of the spans")
    args = p.parse_args(argv)

    # --- the two lines that instrument every graph in the process ----------------------
    provider = configure(service_name=args.service, endpoint=args.endpoint)
    LangGraphInstrumentor().instrument(tracer_provider=provider)
    # ----------------------------------------------------------------------------------------
    instrumentor = LangGraphInstrumentor()  # the same, process-wide instrumentor

    app = build_app()
    config = {"configurable": {"thread_id": "ticket-4711"}}
    out = app.invoke({"messages": [("user", "I was charged twice, refund please.")]}, config)
    print("waiting on:", [i.value["question"] for i in out["__interrupt__"]])
    run_id = instrumentor.run_id(config)

    # ... later, the billing lead approves in your UI:
    out = app.invoke(Command(resume={"decision": "approved"}), config)
    print("answer:", out["messages"][-1].content)
    # A run that says "completed" should prove it: record the verifier's result.
    instrumentor.record_outcome("refund_posted", True, receipt_id="rfnd-4711", config=config)

    provider.shutdown()  # flush before exit
    print(f"run {run_id}: see /api/v1/runs/{run_id} or the dashboard's run detail")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
