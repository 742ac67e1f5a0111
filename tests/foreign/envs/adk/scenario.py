"""Google ADK, for real, offline: a scripted `BaseLlm`, native telemetry on, OTLP/HTTP out.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/adk/scenario.py {healthy,pingpong,limit,error,resume}

Two `LlmAgent`s, `triage` (root) with `billing` as its sub-agent; ADK gives each the
`transfer_to_agent` function and the runner moves control when the model calls it. Each agent
has its own scripted model (`ScriptedLlm`, ADK's documented extension point for custom models:
subclass `BaseLlm`, implement `generate_content_async`), which answers from a fixed script and
never touches the network.

- healthy: triage calls `lookup(query=SENTINEL)` (the tool first raises an exception carrying
  the sentinel; `on_tool_error_callback` turns it into a retry answer, as an app would), calls
  it again (output carries the sentinel), transfers to billing; billing answers.
- pingpong: triage and billing transfer to each other forever; `RunConfig(max_llm_calls=6)`
  stops the run with ADK's `LlmCallsLimitExceededError` while they bounce.
- limit: triage transfers to billing once; billing calls `lookup` until
  `RunConfig(max_llm_calls=4)` stops the run (no bouncing: a limit, not a loop).
- error: `lookup` raises an exception carrying the sentinel and nothing handles it: the run
  fails with it (ADK records it as an exception event on the tool, agent and workflow spans).
- resume: two messages to the same session, each its own `run_async` invocation (its own
  trace): triage transfers to billing, billing answers; the customer writes again and ADK
  resumes the session with the agent that last answered, billing, which answers again.
  The result adds the session id (`conversation`) and each invocation's authors.

Content capture is ON: `ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=true` and
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (set before ADK is imported).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

os.environ["ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"] = "true"
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_AND_EVENT"
os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, finish, install_tracing, scenario_from_argv  # noqa: E402

SCENARIO = scenario_from_argv(extra=("resume",))
PROVIDER = install_tracing("adk-app")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.agents.invocation_context import LlmCallsLimitExceededError  # noqa: E402
from google.adk.agents.run_config import RunConfig  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402


def call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def text(value: str) -> types.Part:
    return types.Part(text=value)


INPUT_TOKENS, OUTPUT_TOKENS = 10, 5
"""What every scripted model call reports (`LlmResponse.usage_metadata`, which ADK's tracer
puts on the call's `generate_content` span as `gen_ai.usage.*`); the test sums them."""
CALLS: list[str] = []
"""Whose model was called, in call order (the test's per-leg account of the usage)."""


class ScriptedLlm(BaseLlm):
    """One agent's model: answers the next scripted turn (the last one repeats)."""

    script: list[types.Part]
    calls: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        part = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        # A copy: ADK writes the call id into the Part it is given, and a reused Part would
        # carry the first call's id into every later call.
        part = part.model_copy(deep=True)
        CALLS.append(self.model.removeprefix("scripted-"))
        yield LlmResponse(
            content=types.Content(role="model", parts=[part]),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=INPUT_TOKENS,
                candidates_token_count=OUTPUT_TOKENS,
                total_token_count=INPUT_TOKENS + OUTPUT_TOKENS,
            ),
        )


FAILED_ONCE: list[bool] = []


def lookup(query: str) -> dict[str, str]:
    """Look the customer's account up."""
    if SCENARIO == "error":
        raise RuntimeError(f"lookup backend down {SENTINEL}")
    if not FAILED_ONCE:
        FAILED_ONCE.append(True)
        raise RuntimeError(f"lookup backend refused {SENTINEL}")
    return {"account": f"record for {query} {SENTINEL}"}


def retry_on_error(tool: Any, args: Any, tool_context: Any, error: Exception) -> dict[str, str]:
    return {"status": "retry"}


def scripts() -> tuple[list[types.Part], list[types.Part], int]:
    lookup_call = call("lookup", query=f"account of {SENTINEL}")
    to_billing = call("transfer_to_agent", agent_name="billing")
    to_triage = call("transfer_to_agent", agent_name="triage")
    answer = text(f"Your refund is on its way {SENTINEL}")
    if SCENARIO == "healthy":
        return [lookup_call, lookup_call, to_billing], [answer], 0
    if SCENARIO == "pingpong":
        # Endless bouncing; the LLM-call limit, not the script, ends the run.
        return [to_billing], [to_triage], 6
    if SCENARIO == "resume":
        return [to_billing], [answer], 0
    if SCENARIO == "limit":
        # One handoff, then billing loops on its tool until the LLM-call limit.
        return [to_billing], [lookup_call], 4
    return [lookup_call], [answer], 0  # error


async def main() -> dict[str, Any]:
    triage_script, billing_script, max_llm_calls = scripts()
    billing = LlmAgent(
        name="billing",
        description="Handles refunds and invoices.",
        instruction=f"You are billing. Secret policy {SENTINEL}.",
        model=ScriptedLlm(model="scripted-billing", script=billing_script),
        tools=[lookup],
        on_tool_error_callback=retry_on_error,
    )
    triage = LlmAgent(
        name="triage",
        description="Routes the customer.",
        instruction=f"You are triage. Secret policy {SENTINEL}.",
        model=ScriptedLlm(model="scripted-triage", script=triage_script),
        tools=[lookup],
        # The error scenario lets the tool's exception end the run (ADK records it).
        on_tool_error_callback=None if SCENARIO == "error" else retry_on_error,
        sub_agents=[billing],
    )
    runner = InMemoryRunner(agent=triage, app_name="support")
    session = await runner.session_service.create_session(app_name="support", user_id="u1")
    messages = [f"I want a refund {SENTINEL}"]
    if SCENARIO == "resume":
        messages.append(f"And the second invoice {SENTINEL}")
    config = RunConfig(max_llm_calls=max_llm_calls) if max_llm_calls else RunConfig()
    authors: list[str] = []
    invocations: list[list[str]] = []
    error = None
    try:
        for said in messages:
            message = types.Content(role="user", parts=[text(said)])
            invocations.append([])
            async for event in runner.run_async(
                user_id="u1", session_id=session.id, new_message=message, run_config=config
            ):
                if event.author and (not authors or authors[-1] != event.author):
                    authors.append(event.author)
                if event.author and event.author not in invocations[-1]:
                    invocations[-1].append(event.author)
    except (LlmCallsLimitExceededError, RuntimeError) as exc:
        error = type(exc).__name__
    result = {
        "framework": "adk",
        "scenario": SCENARIO,
        "authors": authors,
        "calls": CALLS,
        "error": error,
    }
    if SCENARIO == "resume":
        result.update(conversation=session.id, invocations=invocations)
    return result


if __name__ == "__main__":
    finish(PROVIDER, **asyncio.run(main()))
