"""Strands Agents, for real, offline: a scripted `Model` provider, native telemetry, OTLP/HTTP out.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/strands/scenario.py {healthy,pingpong,limit,error}

A `Swarm` of two `Agent`s, `triage` (entry point) and `billing`; Strands gives each the
`handoff_to_agent` tool and the swarm moves control when a model calls it. Each agent has its
own scripted model (`ScriptedModel`, a custom provider: Strands' documented extension point is
subclassing `strands.models.Model` and implementing `stream`), which yields Bedrock-shaped
stream events from a fixed script and never touches the network.

- healthy: triage calls `lookup(query=SENTINEL)` (output carries the sentinel), hands off to
  billing (the handoff message carries the sentinel); billing answers.
- pingpong: triage and billing hand off to each other forever; `Swarm(max_handoffs=4)` stops
  the run ("Max handoffs reached") while they bounce, and the swarm result is FAILED.
- limit: triage hands off to billing; billing's handoff to a third agent, refunds, is over
  `Swarm(max_handoffs=2)`: FAILED, with no bouncing (a limit, not a loop).
- error: `lookup` raises an exception carrying the sentinel; Strands turns it into an error
  tool result for the model, triage then hands off and billing answers.

Content: Strands records message content whatever the settings (span events under the legacy
conventions, attributes under `gen_ai_latest_experimental`); `OTEL_SEMCONV_STABILITY_OPT_IN`
is taken from `HANDOFFSCOPE_STRANDS_SEMCONV` (default: `gen_ai_tool_definitions`, the legacy
conventions plus tool definitions) so a test can run either shape.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterable
from pathlib import Path
from typing import Any

os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = os.environ.get(
    "HANDOFFSCOPE_STRANDS_SEMCONV", "gen_ai_tool_definitions"
)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, finish, install_tracing, scenario_from_argv  # noqa: E402

SCENARIO = scenario_from_argv()
PROVIDER = install_tracing("strands-app")

from strands import Agent, tool  # noqa: E402
from strands.models import Model  # noqa: E402
from strands.multiagent import Swarm  # noqa: E402

Turn = tuple[str, Any]  # ("text", str) or ("tool", (name, input))
INPUT_TOKENS, OUTPUT_TOKENS = 10, 5
"""What every scripted model call reports as its usage (the stream's `metadata` event, which
Strands' tracer puts on the call's `chat` span as `gen_ai.usage.*`); the test sums them."""
CALLS: list[str] = []
"""Whose model was called, in call order (the test's per-leg account of the usage)."""


class ScriptedModel(Model):
    """One agent's model: streams the next scripted turn.

    A Strands agent keeps calling its model until it answers without a tool call, and the
    swarm moves control only when the node's turn ends, so a handoff is a tool call followed
    by a closing text. Past the end, the script starts again (the limit scenario's endless
    bounce).
    """

    def __init__(self, name: str, script: list[Turn]) -> None:
        self.name = name
        self.script = script
        self.calls = 0
        # Strands' providers keep their settings in `config`; its tracer reads the model
        # name from `config["model_id"]` (the `chat` span's `gen_ai.request.model`).
        self.config: dict[str, Any] = {"model_id": f"scripted-{name}"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(
        self, output_model: Any, prompt: Any, system_prompt: Any = None, **kw: Any
    ) -> Any:
        raise NotImplementedError("the scenarios use no structured output")

    async def stream(
        self,
        messages: Any,
        tool_specs: Any = None,
        system_prompt: Any = None,
        **kwargs: Any,
    ) -> AsyncIterable[Any]:
        kind, value = self.script[self.calls % len(self.script)]
        self.calls += 1
        CALLS.append(self.name)
        yield {"messageStart": {"role": "assistant"}}
        if kind == "text":
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": value}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        else:
            name, tool_input = value
            tool_use_id = f"call-{self.name}-{self.calls}"
            yield {
                "contentBlockStart": {
                    "start": {"toolUse": {"name": name, "toolUseId": tool_use_id}}
                }
            }
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(tool_input)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        yield {
            "metadata": {
                "usage": {
                    "inputTokens": INPUT_TOKENS,
                    "outputTokens": OUTPUT_TOKENS,
                    "totalTokens": INPUT_TOKENS + OUTPUT_TOKENS,
                },
                "metrics": {"latencyMs": 1},
            }
        }


@tool
def lookup(query: str) -> str:
    """Look the customer's account up."""
    if SCENARIO == "error":
        raise RuntimeError(f"lookup backend down {SENTINEL}")
    return f"record for {query} {SENTINEL}"


def scripts() -> tuple[list[Turn], list[Turn], int]:
    lookup_call: Turn = ("tool", ("lookup", {"query": f"account of {SENTINEL}"}))

    def handoff(to: str) -> Turn:
        return ("tool", ("handoff_to_agent", {"agent_name": to, "message": f"take it {SENTINEL}"}))

    answer: Turn = ("text", f"Your refund is on its way {SENTINEL}")
    passed: Turn = ("text", "Handed over.")
    if SCENARIO in ("healthy", "error"):
        return [lookup_call, handoff("billing"), passed], [answer], 20
    if SCENARIO == "pingpong":
        # Endless bouncing; the swarm's handoff limit, not the script, ends the run.
        return [handoff("billing"), passed], [handoff("triage"), passed], 4
    # One handoff, then billing's onward handoff (to refunds) is over the limit.
    return [handoff("billing"), passed], [handoff("refunds"), passed], 2


def answer_turn() -> Turn:
    return ("text", f"Paid {SENTINEL}")


async def main() -> dict[str, Any]:
    triage_script, billing_script, max_handoffs = scripts()
    triage = Agent(
        name="triage",
        description="Routes the customer.",
        system_prompt=f"You are triage. Secret policy {SENTINEL}.",
        model=ScriptedModel("triage", triage_script),
        tools=[lookup],
        callback_handler=None,
    )
    billing = Agent(
        name="billing",
        description="Handles refunds and invoices.",
        system_prompt=f"You are billing. Secret policy {SENTINEL}.",
        model=ScriptedModel("billing", billing_script),
        callback_handler=None,
    )
    refunds = Agent(
        name="refunds",
        description="Pays refunds out.",
        system_prompt=f"You are refunds. Secret policy {SENTINEL}.",
        model=ScriptedModel("refunds", [answer_turn()]),
        callback_handler=None,
    )
    nodes = [triage, billing, refunds] if SCENARIO == "limit" else [triage, billing]
    swarm = Swarm(nodes, entry_point=triage, max_handoffs=max_handoffs, max_iterations=20)
    result = await swarm.invoke_async(f"I want a refund {SENTINEL}")
    return {
        "framework": "strands",
        "scenario": SCENARIO,
        "authors": [node.node_id for node in result.node_history],
        "calls": CALLS,
        "status": str(result.status.value),
    }


if __name__ == "__main__":
    finish(PROVIDER, **asyncio.run(main()))
