"""Semantic Kernel, for real, offline: SK's handoff sample, scripted chat services, native spans.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/semantic_kernel/scenario.py \
        {healthy,pingpong,undeclared,error,crash}

SK's published `HandoffOrchestration` sample (python/samples/getting_started_with_agents/
multi_agent_orchestration/step4_handoff.py) reproduced: the same four `ChatCompletionAgent`s
(TriageAgent, RefundAgent, OrderStatusAgent, OrderReturnAgent), the same plugins, the same
`OrchestrationHandoffs` (triage to each specialist, each specialist back to triage), an
`InProcessRuntime`, `invoke(task=...)`, `get()`, `stop_when_idle()`. Two things differ, both
to run offline and unattended: every agent's `service` is a `ScriptedChatCompletion` that
returns scripted function calls and never touches the network (a `ChatCompletionClientBase`
subclass, SK's extension point for a chat service, traced with the
`trace_streaming_chat_completion` decorator SK's own connectors wear: the handoff actor
invokes its agents streaming), and the sample's `input()` human is a scripted one.

Telemetry as SK's orchestration samples set it up (their `observability.py`):
`SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS` and `..._SENSITIVE` true (content
capture ON), the global tracer provider with a batch processor and the OTLP exporter
(driver_common; HTTP rather than the samples' gRPC: the collector's OTLP/HTTP endpoint), and
the whole run inside an app span `main` (tracer `observability`, the samples' module). That
span matters: SK's runtime starts a trace per message it delivers, so without it every agent
turn is a trace of its own (HANDOFFSCOPE_SK_MAIN_SPAN=0 runs that shape, as an app that did
not open a span runs it; the translator ties those traces by the orchestration's topic).
`main` is the app's span, in a scope no translator claims: the collector refuses it by
name. The samples' `set_up_logging` too: SK writes the chat messages it sends and receives
as log records (`semantic_kernel` loggers), exported over OTLP to the same endpoint
(`/v1/logs`), which the collector accepts and discards undecoded; `logs` in the account
counts the records emitted.

- healthy: triage hands off to refunds (`Handoff-transfer_to_RefundAgent`); RefundAgent calls
  `process_refund(order_id, reason=SENTINEL)` and `complete_task`.
- pingpong: triage and refunds hand off to each other forever. `HandoffOrchestration` has no
  turn limit of its own; the app's guard does what SK's cancellation sample shows: after
  `PINGPONG_HANDOFFS` handoffs it calls `orchestration_result.cancel()` and stops the runtime.
- undeclared: RefundAgent calls `Handoff-transfer_to_OrderReturnAgent`, which its declared
  handoffs (back to triage only) do not include; SK answers the model "not part of the
  provided tools" and the agent goes on (it then completes the task).
- error: `process_refund` raises with the sentinel in the message; SK's auto function
  invocation hands the error to the model as the tool result, and RefundAgent completes.
- crash: RefundAgent's chat service raises (the sentinel in the message): the agent's
  invocation fails, the orchestration's exception callback fires, `get()` raises.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"
os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE"] = "true"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, finish, install_tracing, scenario_from_argv  # noqa: E402

SCENARIO = scenario_from_argv(extra=("undeclared", "crash"))
PROVIDER = install_tracing("sk-handoff-sample")

import logging  # noqa: E402

from opentelemetry import trace  # noqa: E402
from opentelemetry._logs import set_logger_provider  # noqa: E402
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler  # noqa: E402
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor  # noqa: E402
from semantic_kernel.agents import Agent, ChatCompletionAgent, HandoffOrchestration  # noqa: E402
from semantic_kernel.agents.orchestration.handoffs import OrchestrationHandoffs  # noqa: E402
from semantic_kernel.agents.runtime import InProcessRuntime  # noqa: E402
from semantic_kernel.connectors.ai.chat_completion_client_base import (  # noqa: E402
    ChatCompletionClientBase,
)
from semantic_kernel.connectors.ai.completion_usage import CompletionUsage  # noqa: E402
from semantic_kernel.contents import (  # noqa: E402
    AuthorRole,
    ChatHistory,
    ChatMessageContent,
    FunctionCallContent,
    StreamingChatMessageContent,
)
from semantic_kernel.functions import kernel_function  # noqa: E402
from semantic_kernel.utils.telemetry.model_diagnostics.decorators import (  # noqa: E402
    trace_streaming_chat_completion,
)


class _CountLogs(logging.Filter):
    """Counts the SK log records the handler exports (the account's `logs`)."""

    emitted = 0

    def filter(self, record: logging.LogRecord) -> bool:
        _CountLogs.emitted += 1
        return True


def set_up_logging() -> LoggerProvider:
    """The samples' `set_up_logging`, with the OTLP/HTTP log exporter as the only exporter."""

    class KernelFilter(logging.Filter):
        """A filter to not process records from semantic_kernel."""

        namespaces_to_exclude: list[str] = [
            "semantic_kernel.functions.kernel_plugin",
            "semantic_kernel.prompt_template.kernel_prompt_template",
        ]

        def filter(self, record: logging.LogRecord) -> bool:
            return not any(record.name.startswith(ns) for ns in self.namespaces_to_exclude)

    logger_provider = LoggerProvider(resource=PROVIDER.resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    set_logger_provider(logger_provider)
    handler = LoggingHandler()
    handler.addFilter(logging.Filter("semantic_kernel"))
    handler.addFilter(KernelFilter())
    handler.addFilter(_CountLogs())
    logger = logging.getLogger()
    logger.addHandler(handler)
    logger.setLevel(logging.NOTSET)
    return logger_provider


LOGS = set_up_logging()
PINGPONG_HANDOFFS = 6
Turn = tuple[str, Any]  # ("text", str) | ("call", (fully qualified name, arguments))
# Who ran, in order, and how many handoffs were made: the driver's own account.
HELD: list[str] = []
HANDOFFS: list[tuple[str, str]] = []
ENOUGH = asyncio.Event()
INPUT_TOKENS, OUTPUT_TOKENS = 10, 5
"""What every answered scripted request reports: `metadata["usage"]` (a `CompletionUsage`,
as SK's OpenAI connector puts on its stream's usage chunk), which SK's
`trace_streaming_chat_completion` puts on the call's `chat` span as `gen_ai.usage.*`."""
CALLS: list[str] = []
"""Whose service answered, in call order (the test's per-leg account of the usage)."""
RAISED: list[str] = []
"""Whose service call raised (its `chat` span ends in error with no usage: still a call)."""


class ScriptedChatCompletion(ChatCompletionClientBase):
    """One agent's chat service: each request answers the next scripted turn.

    A turn is a function call (SK's auto function invocation runs it and, for a `Handoff-*`
    function, ends the agent's turn) or text. Past the end the script starts again (the
    ping-pong's endless bounce).
    """

    SUPPORTS_FUNCTION_CALLING = True
    agent: str
    script: list[Any]
    calls: int = 0
    fail_with: str | None = None

    def service_url(self) -> str | None:
        return None

    def _next(self) -> Turn:
        turn: Turn = self.script[self.calls % len(self.script)]
        self.calls += 1
        if not HELD or HELD[-1] != self.agent:
            HELD.append(self.agent)
        if self.fail_with is not None:
            RAISED.append(self.agent)
            raise RuntimeError(self.fail_with)
        CALLS.append(self.agent)
        kind, value = turn
        if kind == "call" and value[0].startswith("Handoff-transfer_to_"):
            HANDOFFS.append((self.agent, value[0].removeprefix("Handoff-transfer_to_")))
            if SCENARIO == "pingpong" and len(HANDOFFS) >= PINGPONG_HANDOFFS:
                ENOUGH.set()
        return turn

    def _items(self, turn: Turn) -> dict[str, Any]:
        kind, value = turn
        if kind == "text":
            return {"content": value}
        name, arguments = value
        call = FunctionCallContent(
            id=f"call_{self.agent}_{self.calls}", name=name, arguments=json.dumps(arguments)
        )
        return {"items": [call], "finish_reason": "tool_calls"}

    @trace_streaming_chat_completion("scripted")
    async def _inner_get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: Any, function_invoke_attempt: int = 0
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        fields = self._items(self._next())
        fields.pop("finish_reason", None)
        yield [
            StreamingChatMessageContent(
                role=AuthorRole.ASSISTANT,
                choice_index=0,
                ai_model_id=self.ai_model_id,
                function_invoke_attempt=function_invoke_attempt,
                metadata={
                    "usage": CompletionUsage(
                        prompt_tokens=INPUT_TOKENS, completion_tokens=OUTPUT_TOKENS
                    )
                },
                **fields,
            )
        ]


def service(agent: str, script: list[Turn], fail_with: str | None = None) -> Any:
    return ScriptedChatCompletion(
        ai_model_id=f"scripted-{agent}", agent=agent, script=script, fail_with=fail_with
    )


# The sample's plugins, verbatim but for the error scenario's raise.
class OrderStatusPlugin:
    @kernel_function
    def check_order_status(self, order_id: str) -> str:
        """Check the status of an order."""
        return f"Order {order_id} is shipped and will arrive in 2-3 days."


class OrderRefundPlugin:
    @kernel_function
    def process_refund(self, order_id: str, reason: str) -> str:
        """Process a refund for an order."""
        if SCENARIO == "error":
            raise RuntimeError(f"refund ledger unavailable {SENTINEL}")
        return f"Refund for order {order_id} has been processed successfully. {SENTINEL}"


class OrderReturnPlugin:
    @kernel_function
    def process_return(self, order_id: str, reason: str) -> str:
        """Process a return for an order."""
        return f"Return for order {order_id} has been processed successfully."


def scripts() -> tuple[list[Turn], list[Turn], str | None]:
    """TriageAgent's and RefundAgent's scripts, and RefundAgent's service failure if any."""

    def handoff(to: str) -> Turn:
        return ("call", (f"Handoff-transfer_to_{to}", {}))

    refund: Turn = (
        "call",
        ("OrderRefundPlugin-process_refund", {"order_id": "123", "reason": f"broken {SENTINEL}"}),
    )
    done: Turn = ("call", ("Handoff-complete_task", {"task_summary": f"refunded {SENTINEL}"}))
    if SCENARIO in ("healthy", "error"):
        return [handoff("RefundAgent")], [refund, done], None
    if SCENARIO == "pingpong":
        return [handoff("RefundAgent")], [handoff("TriageAgent")], None
    if SCENARIO == "undeclared":
        # RefundAgent's declared handoffs are back to TriageAgent only.
        return [handoff("RefundAgent")], [handoff("OrderReturnAgent"), refund, done], None
    return [handoff("RefundAgent")], [refund, done], f"model endpoint refused {SENTINEL}"


def get_agents() -> tuple[list[Agent], OrchestrationHandoffs]:
    """The sample's agents and handoff relationships, with scripted services."""
    triage_script, refund_script, refund_failure = scripts()
    idle: list[Turn] = [("text", "Nothing to do here.")]
    support_agent = ChatCompletionAgent(
        name="TriageAgent",
        description="A customer support agent that triages issues.",
        instructions=f"Handle customer requests. {SENTINEL}",
        service=service("TriageAgent", triage_script),
    )
    refund_agent = ChatCompletionAgent(
        name="RefundAgent",
        description="A customer support agent that handles refunds.",
        instructions="Handle refund requests.",
        service=service("RefundAgent", refund_script, refund_failure),
        plugins=[OrderRefundPlugin()],
    )
    order_status_agent = ChatCompletionAgent(
        name="OrderStatusAgent",
        description="A customer support agent that checks order status.",
        instructions="Handle order status requests.",
        service=service("OrderStatusAgent", idle),
        plugins=[OrderStatusPlugin()],
    )
    order_return_agent = ChatCompletionAgent(
        name="OrderReturnAgent",
        description="A customer support agent that handles order returns.",
        instructions="Handle order return requests.",
        service=service("OrderReturnAgent", idle),
        plugins=[OrderReturnPlugin()],
    )
    handoffs = (
        OrchestrationHandoffs()
        .add_many(
            support_agent.name,
            {
                refund_agent.name: "Transfer to this agent if the issue is refund related",
                order_status_agent.name: "Transfer to this agent if the issue is order status related",
                order_return_agent.name: "Transfer to this agent if the issue is order return related",
            },
        )
        .add(
            refund_agent.name,
            support_agent.name,
            "Transfer to this agent if the issue is not refund related",
        )
        .add(
            order_status_agent.name,
            support_agent.name,
            "Transfer to this agent if the issue is not order status related",
        )
        .add(
            order_return_agent.name,
            support_agent.name,
            "Transfer to this agent if the issue is not order return related",
        )
    )
    return [support_agent, refund_agent, order_status_agent, order_return_agent], handoffs


def agent_response_callback(message: ChatMessageContent) -> None:
    """The sample prints each agent message; the driver keeps its output to the account."""


def human_response_function() -> ChatMessageContent:
    """The sample's `input()` human, scripted."""
    return ChatMessageContent(role=AuthorRole.USER, content=f"Please go on {SENTINEL}")


async def run() -> dict[str, Any]:
    agents, handoffs = get_agents()
    handoff_orchestration = HandoffOrchestration(
        members=agents,
        handoffs=handoffs,
        agent_response_callback=agent_response_callback,
        human_response_function=human_response_function,
    )
    runtime = InProcessRuntime()
    runtime.start()
    orchestration_result = await handoff_orchestration.invoke(
        task=f"A customer is on the line. {SENTINEL}", runtime=runtime
    )
    ended = "completed"
    if SCENARIO == "pingpong":
        # The app's guard: SK's handoff orchestration never stops a bounce by itself.
        await ENOUGH.wait()
        orchestration_result.cancel()
        ended = "cancelled"
        await runtime.stop()
    else:
        try:
            await orchestration_result.get()
        except Exception as exc:  # the crash scenario: the agent's failure surfaces here
            ended = f"failed:{type(exc).__name__}"
        await runtime.stop_when_idle()
    return {"ended": ended}


async def main() -> dict[str, Any]:
    if os.environ.get("HANDOFFSCOPE_SK_MAIN_SPAN", "1") == "1":
        with trace.get_tracer("observability").start_as_current_span("main"):
            return await run()
    return await run()


if __name__ == "__main__":
    outcome = asyncio.run(main())
    logs_flushed = LOGS.force_flush(30_000)
    LOGS.shutdown()
    finish(
        PROVIDER,
        scenario=SCENARIO,
        held=HELD,
        handoffs=HANDOFFS,
        calls=CALLS,
        raised=RAISED,
        logs=_CountLogs.emitted,
        logs_flushed=logs_flushed,
        **outcome,
    )
