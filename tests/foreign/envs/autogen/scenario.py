"""AutoGen (autogen-agentchat / autogen-core), for real, offline, native telemetry, OTLP/HTTP out.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/autogen/scenario.py {healthy,pingpong,limit,error}

A `Swarm` team of two `AssistantAgent`s, `triage` and `billing`, each declaring a handoff to
the other (AutoGen gives each a `transfer_to_<name>` tool; the swarm moves control on the
`HandoffMessage` it returns). Each agent's model is AutoGen's own
`ReplayChatCompletionClient` (autogen-ext), which replays scripted `CreateResult`s in order
and never touches the network.

- healthy: triage calls `lookup(query=SENTINEL)` (output carries the sentinel), then
  `transfer_to_billing`; billing answers and the run ends on `TextMentionTermination`.
- pingpong: the two transfer to each other forever; `Swarm(max_turns=4)` stops the run
  while they bounce.
- limit: triage transfers to billing; billing calls `lookup` turn after turn (the swarm
  keeps the speaker) until `Swarm(max_turns=4)` stops the run: a limit, not a loop.
- error: `lookup` raises an exception carrying the sentinel; AutoGen returns it to the model
  as an error result; triage then transfers and billing answers.

Telemetry: autogen-core's runtime and agentchat's GenAI spans both take the GLOBAL tracer
provider (no constructor argument reaches the team's internal runtime). AutoGen has no
content switch: agentchat's `invoke_agent`/`execute_tool` spans carry what they carry, and
the runtime's message spans are on unless `AUTOGEN_DISABLE_RUNTIME_TRACING=true` (not set).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, finish, install_tracing, scenario_from_argv  # noqa: E402

SCENARIO = scenario_from_argv()
PROVIDER = install_tracing("autogen-app")

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.conditions import TextMentionTermination  # noqa: E402
from autogen_agentchat.teams import Swarm  # noqa: E402
from autogen_core import FunctionCall  # noqa: E402
from autogen_core.models import CreateResult, ModelFamily, ModelInfo, RequestUsage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

# The replay client says it cannot call functions unless told; these scripts do.
MODEL_INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=False,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
)
USAGE = RequestUsage(prompt_tokens=10, completion_tokens=5)
CALLS = iter(range(1, 10_000))


def call(name: str, **args: Any) -> CreateResult:
    function_call = FunctionCall(id=f"call-{next(CALLS)}", name=name, arguments=json.dumps(args))
    return CreateResult(
        finish_reason="function_calls", content=[function_call], usage=USAGE, cached=False
    )


def text(value: str) -> CreateResult:
    return CreateResult(finish_reason="stop", content=value, usage=USAGE, cached=False)


async def lookup(query: str) -> str:
    """Look the customer's account up."""
    if SCENARIO == "error":
        raise RuntimeError(f"lookup backend down {SENTINEL}")
    return f"record for {query} {SENTINEL}"


def scripts() -> tuple[list[CreateResult], list[CreateResult], int | None]:
    answer = text(f"Your refund is on its way {SENTINEL} DONE")
    lookup_call = call("lookup", query=f"account of {SENTINEL}")
    # Enough scripted turns that the turn limit, not the script, ends those runs.
    many = 10
    if SCENARIO in ("healthy", "error"):
        return [lookup_call, call("transfer_to_billing")], [answer], None
    if SCENARIO == "pingpong":
        triage = [call("transfer_to_billing") for _ in range(many)]
        return triage, [call("transfer_to_triage") for _ in range(many)], 4
    # One handoff, then billing calls its tool turn after turn until max_turns.
    lookups = [call("lookup", query=f"account of {SENTINEL}") for _ in range(many)]
    return [call("transfer_to_billing")], lookups, 4


async def main() -> dict[str, Any]:
    triage_script, billing_script, max_turns = scripts()
    triage = AssistantAgent(
        "triage",
        description="Routes the customer.",
        system_message=f"You are triage. Secret policy {SENTINEL}.",
        model_client=ReplayChatCompletionClient(triage_script, model_info=MODEL_INFO),
        tools=[lookup],
        handoffs=["billing"],
        max_tool_iterations=3,
    )
    billing = AssistantAgent(
        "billing",
        description="Handles refunds and invoices.",
        system_message=f"You are billing. Secret policy {SENTINEL}.",
        model_client=ReplayChatCompletionClient(billing_script, model_info=MODEL_INFO),
        tools=[lookup],
        handoffs=["triage"],
    )
    team = Swarm(
        [triage, billing], termination_condition=TextMentionTermination("DONE"), max_turns=max_turns
    )
    result = await team.run(task=f"I want a refund {SENTINEL}")
    authors: list[str] = []
    for message in result.messages:
        if message.source != "user" and (not authors or authors[-1] != message.source):
            authors.append(message.source)
    # The stop reason is AutoGen's own sentence; report only which kind it was.
    reason = result.stop_reason or ""
    stop = "turns" if "turn" in reason.lower() else "text" if "DONE" in reason else reason[:40]
    return {"framework": "autogen", "scenario": SCENARIO, "authors": authors, "stop": stop}


if __name__ == "__main__":
    finish(PROVIDER, **asyncio.run(main()))
