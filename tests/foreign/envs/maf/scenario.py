"""Microsoft Agent Framework, for real, offline: MAF's handoff sample, scripted chat clients.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/maf/scenario.py {healthy,pingpong,undeclared,error}

MAF's published `samples/03-workflows/orchestrations/handoff_simple.py`, reproduced: `Agent`s
built with `require_per_service_call_history_persistence=True` and `@tool` tools, a
`HandoffBuilder(name=..., participants=[...], termination_condition=...)`
`.with_start_agent(triage).build()`, run with `workflow.run(message, stream=True)` and the
sample's request/response cycle (`HandoffAgentUserRequest.create_response` / `.terminate()`)
over `workflow.run(responses=...)`. Departures: the sample's triage agent and specialists
are `triage` (start), `billing` and `refunds` with `lookup` / `refund` tools; there are no
scripted user replies (the first request for input ends the conversation with
`terminate()`, the sample's branch when its replies run out); and each agent's client is
`ScriptedChatClient`, a custom client built the way MAF documents it
(`samples/02-agents/chat_client/custom_chat_client.py`: `BaseChatClient` with
`_inner_get_response`, composed with `FunctionInvocationLayer`, `ChatMiddlewareLayer` and
`ChatTelemetryLayer`), which answers from a fixed script and never touches the network.

Telemetry exactly as MAF's observability samples set it up: `configure_otel_providers()`
(its own tracer, meter and logger providers, OTLP exporters for traces, metrics and logs
from `OTEL_EXPORTER_OTLP_ENDPOINT`), with `enable_sensitive_data=True` — prompts, messages,
tool arguments and results go onto the spans. The protocol is `http/protobuf`
(`OTEL_EXPORTER_OTLP_PROTOCOL`; MAF's default is gRPC) because the tests' collector is
reached over OTLP/HTTP. A span counter is added to MAF's tracer provider so the test can
check that every span ended reached the collector.

- healthy: triage calls `lookup(query=SENTINEL)` (output carries the sentinel), then
  `handoff_to_billing`; billing answers "You're welcome ..." and the sample's termination
  condition ends the run.
- pingpong: triage and billing hand off to each other forever; a handoff needs no user
  turn, so only the workflow's superstep limit (`max_iterations`, 100 by default; the
  builder does not expose it) stops it: `WorkflowConvergenceException`.
- undeclared: `add_handoff(triage, [billing])` declares only billing for triage, and its
  model calls `handoff_to_refunds` anyway. MAF never gave triage that tool, so its function
  layer answers the model with a "not found" error result and calls it again; triage then
  asks the user, who ends the conversation (a second `workflow.run`). Control never moves.
- error: triage hands off to billing; billing's `refund` tool raises (the message carries
  the sentinel; MAF hands the model an error result), then billing's model call itself
  raises (sentinel again): the agent run fails, and with it the workflow.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterable, Awaitable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, _Count  # noqa: E402

SCENARIOS = ("healthy", "pingpong", "undeclared", "error")
if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
    sys.exit(f"usage: scenario.py {{{','.join(SCENARIOS)}}}")
SCENARIO = sys.argv[1]
if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
    sys.exit("OTEL_EXPORTER_OTLP_ENDPOINT is not set (the collector's http endpoint)")
os.environ["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/protobuf"
os.environ.setdefault("OTEL_SERVICE_NAME", "maf-app")

from agent_framework import (  # noqa: E402
    Agent,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    UsageDetails,
    WorkflowEvent,
    tool,
)
from agent_framework.observability import ChatTelemetryLayer, configure_otel_providers  # noqa: E402
from agent_framework.orchestrations import HandoffAgentUserRequest, HandoffBuilder  # noqa: E402
from opentelemetry import trace  # noqa: E402

configure_otel_providers(enable_sensitive_data=True)
PROVIDER: Any = trace.get_tracer_provider()
PROVIDER.add_span_processor(_Count())

# A turn is ("text", str), ("call", (tool name, arguments)) or ("raise", message).
Turn = tuple[str, Any]
INPUT_TOKENS, OUTPUT_TOKENS = 10, 5
"""What every answered scripted call reports (`ChatResponse.usage_details`, which MAF's
`ChatTelemetryLayer` puts on the call's `chat` span as `gen_ai.usage.*`); the test sums them."""
CALLS: list[str] = []
"""Whose model answered, in call order (the test's per-leg account of the usage)."""
RAISED: list[str] = []
"""Whose model call raised (its `chat` span ends in error with no usage: still a call)."""


class ScriptedClient(BaseChatClient):
    """One agent's model: the next scripted turn, streamed or not; the script repeats."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "scripted"

    def __init__(self, *, name: str, script: list[Turn], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.script = script
        self.calls = 0

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool = False,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        kind, value = self.script[self.calls % len(self.script)]
        self.calls += 1
        if kind == "raise":
            RAISED.append(self.name)
            raise RuntimeError(value)
        CALLS.append(self.name)
        if kind == "text":
            content = Content.from_text(value)
        else:
            name, arguments = value
            content = Content.from_function_call(
                call_id=f"call_{self.name}_{self.calls}", name=name, arguments=arguments
            )
        response = ChatResponse(
            messages=[Message(role="assistant", contents=[content])],
            model="scripted-model",
            response_id=f"resp_{self.name}_{self.calls}",
            usage_details=UsageDetails(
                input_token_count=INPUT_TOKENS,
                output_token_count=OUTPUT_TOKENS,
                total_token_count=INPUT_TOKENS + OUTPUT_TOKENS,
            ),
        )
        if not stream:

            async def _get() -> ChatResponse:
                return response

            return _get()

        async def _stream() -> AsyncIterable[ChatResponseUpdate]:
            yield ChatResponseUpdate(
                contents=[content],
                role="assistant",
                response_id=response.response_id,
                model="scripted-model",
            )

        return ResponseStream(_stream(), finalizer=lambda updates: response)


class ScriptedChatClient(  # type: ignore[misc]
    FunctionInvocationLayer,
    ChatMiddlewareLayer,
    ChatTelemetryLayer,
    ScriptedClient,
):
    """The scripted client with MAF's function, middleware and telemetry layers."""

    OTEL_PROVIDER_NAME: ClassVar[str] = "scripted"


@tool(approval_mode="never_require")
def lookup(query: Annotated[str, "What to look up"]) -> str:
    """Look the customer's account up."""
    return f"record for {query} {SENTINEL}"


@tool(approval_mode="never_require")
def refund(order_number: Annotated[str, "Order number to refund"]) -> str:
    """Process a refund for an order."""
    if SCENARIO == "error":
        raise RuntimeError(f"refund backend down {SENTINEL}")
    return f"Refund processed for order {order_number} {SENTINEL}."


def scripts() -> dict[str, list[Turn]]:
    look: Turn = ("call", ("lookup", {"query": f"account of {SENTINEL}"}))
    ask: Turn = ("text", f"Could you tell me more? {SENTINEL}")
    welcome: Turn = ("text", f"Refund sent. You're welcome! {SENTINEL}")

    def handoff(to: str) -> Turn:
        return ("call", (f"handoff_to_{to}", {}))

    if SCENARIO == "healthy":
        return {"triage": [look, handoff("billing")], "billing": [welcome], "refunds": [welcome]}
    if SCENARIO == "pingpong":
        return {
            "triage": [handoff("billing")],
            "billing": [handoff("triage")],
            "refunds": [welcome],
        }
    if SCENARIO == "undeclared":
        return {"triage": [handoff("refunds"), ask], "billing": [welcome], "refunds": [welcome]}
    return {
        "triage": [handoff("billing")],
        "billing": [
            ("call", ("refund", {"order_number": f"1234 {SENTINEL}"})),
            ("raise", f"model service unavailable {SENTINEL}"),
        ],
        "refunds": [welcome],
    }


def create_agents() -> tuple[Agent, Agent, Agent]:
    script = scripts()

    def agent(name: str, instructions: str, tools: list[Any]) -> Agent:
        return Agent(
            client=ScriptedChatClient(name=name, script=script[name]),
            instructions=f"{instructions} Secret policy {SENTINEL}.",
            name=name,
            tools=tools,
            require_per_service_call_history_persistence=True,
        )

    return (
        agent("triage", "You are frontline support triage.", [lookup]),
        agent("billing", "You process refund requests.", [refund]),
        agent("refunds", "You pay refunds out.", [refund]),
    )


def note(event: WorkflowEvent, account: dict[str, Any], pending: list[WorkflowEvent]) -> None:
    """The sample's `_handle_events` for one event, recording agent names, never content."""
    if event.type == "handoff_sent":
        account["handoffs"].append([event.data.source, event.data.target])
    elif event.type == "output" and event.executor_id:
        # Streaming yields an output event per update: one author per run of updates.
        if not account["authors"] or account["authors"][-1] != event.executor_id:
            account["authors"].append(event.executor_id)
    elif event.type == "executor_failed":
        account["failed"].append(event.executor_id)
    elif event.type == "request_info" and isinstance(event.data, HandoffAgentUserRequest):
        pending.append(event)


async def main() -> dict[str, Any]:
    triage, billing, refunds = create_agents()
    builder = HandoffBuilder(
        name="customer_support_handoff",
        participants=[triage, billing, refunds],
        # The sample's termination: the last message closes the conversation.
        termination_condition=lambda conversation: (
            len(conversation) > 0 and "welcome" in conversation[-1].text.lower()
        ),
    ).with_start_agent(triage)
    if SCENARIO == "undeclared":
        # Declared routes (the sample's `add_handoff` form): triage may reach billing only.
        builder = builder.add_handoff(triage, [billing]).add_handoff(billing, [triage, refunds])
    workflow = builder.build()

    account: dict[str, Any] = {"handoffs": [], "authors": [], "failed": [], "error": None}
    # The sample's scripted user replies; none here: the first request for input ends the
    # conversation (`HandoffAgentUserRequest.terminate()`), as when the sample runs out.
    responses: Iterator[str] = iter(())
    pending: list[WorkflowEvent] = []
    account["runs"] = 1
    try:
        async for event in workflow.run(f"Hello, I need a refund {SENTINEL}", stream=True):
            note(event, account, pending)
        while pending:
            answer = next(responses, None)
            replies = {
                request.request_id: (
                    HandoffAgentUserRequest.terminate()
                    if answer is None
                    else HandoffAgentUserRequest.create_response(answer)
                )
                for request in pending
            }
            pending = []
            account["runs"] += 1
            for event in await workflow.run(responses=replies):
                note(event, account, pending)
    except Exception as exc:  # the run's failure is the scenario's outcome, not the driver's
        account["error"] = type(exc).__name__
    return {"framework": "maf", "scenario": SCENARIO, "calls": CALLS, "raised": RAISED, **account}


def finish(**outcome: Any) -> None:
    import json

    flushed = PROVIDER.force_flush(30_000)
    PROVIDER.shutdown()
    print("SCENARIO-RESULT " + json.dumps({"flushed": flushed, "spans": _Count.ended, **outcome}))


if __name__ == "__main__":
    finish(**asyncio.run(main()))
