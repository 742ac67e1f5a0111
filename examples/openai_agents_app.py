"""A support desk on the OpenAI Agents SDK, reporting its handoffs to handoffscope.

Runs offline: the SDK's own `agents.testing.ScriptedModel` stands in for the LLM, so no
API key or network is needed. Swap it for a real model (`model="gpt-4.1"`) and nothing
else changes. Start a collector first to see the runs:

    handoffscope collector --db /tmp/handoffscope.duckdb &
    python examples/openai_agents_app.py
    curl http://127.0.0.1:4318/api/v1/runs/<run id printed below>

The two lines that matter are marked (1) and (2). Everything else is an ordinary Agents SDK
app, plus the three one-liners an app adds where only it knows the facts: who owns a
pending approval and until when, what was decided, and whether the result passed its check.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime, timedelta

from agents import Agent, RunConfig, Runner, RunState, function_tool, handoff
from agents.extensions import handoff_filters
from agents.testing import ScriptedModel, assistant_message, function_call

from handoffscope.instrumentation import configure
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

# (1) An OTel pipeline to the collector (OTEL_EXPORTER_OTLP_ENDPOINT, default 127.0.0.1:4318).
provider = configure(service_name="support-desk")
# (2) Instrument the SDK. replace_processors=True also stops the SDK's default export of
#     full traces (with content) to OpenAI; leave it out to keep that export.
instrumentor = OpenAIAgentsInstrumentor()
instrumentor.instrument(tracer_provider=provider, replace_processors=True)


@function_tool
def lookup_order(order_id: str) -> str:
    """Find an order."""
    return f"order {order_id}: 2 items, shipped"


@function_tool(needs_approval=True)
def issue_refund(order_id: str, amount_eur: float) -> str:
    """Refund an order. A person must approve it first."""
    return f"refunded {amount_eur} EUR on {order_id}"


# The scripted model plays both agents' turns in order.
model = ScriptedModel(
    [
        [function_call("transfer_to_billing", {}, call_id="call_1")],
        [function_call("lookup_order", {"order_id": "A-1001"}, call_id="call_2")],
        [
            function_call(
                "issue_refund", {"order_id": "A-1001", "amount_eur": 42.0}, call_id="call_3"
            )
        ],
        [assistant_message("Your refund of 42 EUR is on its way.")],
    ]
)
billing = Agent(
    name="billing",
    instructions="Resolve billing questions. Refunds need approval.",
    model=model,
    tools=[lookup_order, issue_refund],
)
triage = Agent(
    name="triage",
    instructions="Route the customer to the right team.",
    model=model,
    # The filter trims tool chatter from what billing sees; handoffscope counts the items
    # forwarded (never reads them).
    handoffs=[handoff(billing, input_filter=handoff_filters.remove_all_tools)],
)


def refund_was_booked(result: object) -> bool:
    """The app's own check that the work really happened (here: trivially true)."""
    return True


async def main() -> None:
    result = await Runner.run(
        triage,
        "I was charged twice for order A-1001, please refund one.",
        run_config=RunConfig(workflow_name="support", group_id="conversation-1"),
    )
    run_id = instrumentor.run_id(result)
    print(f"run {run_id}: paused for approval of {[i.tool_name for i in result.interruptions]}")

    # The app persists the paused run and tells handoffscope who must decide, by when.
    stored = result.to_state().to_string()
    instrumentor.record_interruptions(
        result,
        owner="billing-leads",
        reason="refund_approval",
        deadline=datetime.now(UTC) + timedelta(hours=4),
        state_persisted=True,
    )

    # ... later, after a person approved in the app's own UI:
    state = await RunState.from_string(triage, stored)
    for item in state.get_interruptions():
        state.approve(item)
    instrumentor.record_decision(state, approved=True)
    result = await Runner.run(triage, state)
    print(f"run {run_id}: {result.final_output}")

    # A run that claims completion without a passing check is shown as a false completion.
    instrumentor.record_outcome(result, "refund_booked", refund_was_booked(result))

    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    print(f"see {endpoint.rstrip('/')}/api/v1/runs/{run_id}")


if __name__ == "__main__":
    asyncio.run(main())
    provider.shutdown()  # flush before exit
