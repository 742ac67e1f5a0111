"""Pydantic AI, for real, offline: its published multi-agent examples, scripted, OTLP/HTTP out.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/pydantic_ai/scenario.py \
        {healthy,delegation,pingpong,route,error}

Traced as Pydantic AI documents it ("OTel without Logfire"): an OpenTelemetry SDK tracer
provider exporting OTLP/HTTP set as the global one, then `Agent.instrument_all()` with
`InstrumentationSettings(include_content=True)` (the default, spelled out: content capture
ON). Every model is Pydantic AI's `FunctionModel` (its documented offline test model), a
script per agent that never touches the network.

The agents are the docs' own ("Multi-agent applications" and "Output functions"):

- healthy — hand-off by output function (docs/output.md): `router_agent` has the output
  function `hand_off_to_sql_agent`, which runs `sql_agent`; control never returns to the
  router's model. `sql_agent` answers through its output function `run_sql_query`.
- delegation — agent delegation (docs/multi-agent-applications.md):
  `joke_selection_agent`'s tool `joke_factory` runs `joke_generation_agent` with
  `usage=ctx.usage` and returns its output; the caller keeps control and answers.
- pingpong — two agents of the hand-off shape, each handing off to the other by its
  output function, sharing the usage (`usage=ctx.usage`); the run's
  `UsageLimits(request_limit=6)` stops the bouncing with `UsageLimitExceeded`.
- route — the router's model asks for a hand-off to an agent it does not have
  (`hand_off_to_refunds_agent`); Pydantic AI tells the model the tool is unknown (a retry),
  and the model then hands off to `sql_agent` as it may.
- error — the hand-off happens, then `sql_agent`'s output function raises (an exception
  carrying the sentinel): the run fails in the receiver.

The sentinel is planted in the prompt, instructions, tool arguments, tool outputs and the
exception message.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, finish, install_tracing  # noqa: E402

SCENARIOS = ("healthy", "delegation", "pingpong", "route", "error")
if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
    sys.exit(f"usage: scenario.py {{{','.join(SCENARIOS)}}}")
SCENARIO = sys.argv[1]
PROVIDER = install_tracing("pydantic-ai-app")

from pydantic import BaseModel  # noqa: E402
from pydantic_ai import Agent, RunContext, UsageLimits  # noqa: E402
from pydantic_ai.exceptions import UsageLimitExceeded  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.instrumented import InstrumentationSettings  # noqa: E402
from pydantic_ai.usage import RequestUsage  # noqa: E402

Agent.instrument_all(InstrumentationSettings(include_content=True))

INPUT_TOKENS, OUTPUT_TOKENS = 10, 5
"""What every scripted model call reports as its usage (the test sums them)."""
AUTHORS: list[str] = []
"""Which agent's model was called, in order: the driver's own account of who ran."""


def scripted(name: str, script: Any) -> FunctionModel:
    """A FunctionModel whose answer is `script(messages, info, call number)`."""
    calls = 0

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        AUTHORS.append(name)
        response = script(messages, info, calls)
        # Known usage per call (FunctionModel would otherwise estimate it from the text).
        response.usage = RequestUsage(input_tokens=INPUT_TOKENS, output_tokens=OUTPUT_TOKENS)
        return response

    return FunctionModel(answer, model_name=f"scripted-{name}")


def call(tool: str, args: dict[str, Any], call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=call_id)])


def last_parts(messages: list[ModelMessage]) -> list[Any]:
    last = messages[-1]
    return list(last.parts) if isinstance(last, ModelRequest) else []


# -- hand-off by output function (docs/output.md "Output functions"), scripted ------------


class Row(BaseModel):
    name: str
    country: str


def run_sql_query(query: str) -> list[Row]:
    """Run a SQL query on the database."""
    if SCENARIO == "error":
        raise RuntimeError(f"database unreachable {SENTINEL}")
    return [Row(name=f"Amsterdam {SENTINEL}", country="Netherlands")]


def sql_script(messages: list[ModelMessage], info: AgentInfo, n: int) -> ModelResponse:
    return call("final_result", {"query": f"SELECT * FROM capital_cities -- {SENTINEL}"}, "sql-1")


sql_agent = Agent(
    scripted("sql_agent", sql_script),
    output_type=run_sql_query,
    instructions=f"You are a SQL agent that can run SQL queries on a database. {SENTINEL}",
)


async def hand_off_to_sql_agent(ctx: RunContext, query: str) -> list[Row]:
    """I take natural language queries, turn them into SQL, and run them on a database."""
    messages = ctx.messages[:-1]
    result = await sql_agent.run(query, message_history=messages)
    return result.output


class RouterFailure(BaseModel):
    """Use me when no appropriate agent is found or the used agent failed."""

    explanation: str


def router_script(messages: list[ModelMessage], info: AgentInfo, n: int) -> ModelResponse:
    if SCENARIO == "route" and n == 1:
        # An agent the router does not have: no such output function.
        return call("hand_off_to_refunds_agent", {"query": f"refund {SENTINEL}"}, "route-1")
    return call("final_result_hand_off_to_sql_agent", {"query": f"capitals {SENTINEL}"}, "route-2")


router_agent = Agent(
    scripted("router_agent", router_script),
    output_type=[hand_off_to_sql_agent, RouterFailure],
    instructions="You are a router to other agents. Never try to solve a problem yourself, "
    f"just pass it on. {SENTINEL}",
)

# -- agent delegation (docs/multi-agent-applications.md), scripted -------------------------


def selection_script(messages: list[ModelMessage], info: AgentInfo, n: int) -> ModelResponse:
    if any(isinstance(p, ToolReturnPart) for p in last_parts(messages)):
        return ModelResponse(parts=[TextPart(f"the best joke {SENTINEL}")])
    return call("joke_factory", {"count": 2}, "joke-1")


def generation_script(messages: list[ModelMessage], info: AgentInfo, n: int) -> ModelResponse:
    return call("final_result", {"response": [f"joke one {SENTINEL}", "joke two"]}, "gen-1")


joke_selection_agent = Agent(
    scripted("joke_selection_agent", selection_script),
    name="joke_selection_agent",
    instructions=(
        "Use the `joke_factory` to generate some jokes, then choose the best. "
        f"You must return just a single joke. {SENTINEL}"
    ),
)
joke_generation_agent = Agent(
    scripted("joke_generation_agent", generation_script),
    name="joke_generation_agent",
    output_type=list[str],
)


@joke_selection_agent.tool
async def joke_factory(ctx: RunContext, count: int) -> list[str]:
    r = await joke_generation_agent.run(
        f"Please generate {count} jokes. {SENTINEL}", usage=ctx.usage
    )
    return r.output


# -- ping-pong: two hand-off agents handing off to each other, one usage budget ------------

PING_LIMITS = UsageLimits(request_limit=6)


def bounce_script(to: str) -> Any:
    def script(messages: list[ModelMessage], info: AgentInfo, n: int) -> ModelResponse:
        # One output function: Pydantic AI names its output tool `final_result`.
        return call("final_result", {"query": f"over to you {SENTINEL}"}, f"{to}-{n}")

    return script


async def hand_off_to_billing(ctx: RunContext, query: str) -> str:
    """Hand the customer to billing."""
    result = await billing.run(query, usage=ctx.usage, usage_limits=PING_LIMITS)
    return result.output


async def hand_off_to_triage(ctx: RunContext, query: str) -> str:
    """Hand the customer to triage."""
    result = await triage.run(query, usage=ctx.usage, usage_limits=PING_LIMITS)
    return result.output


triage = Agent(
    scripted("triage", bounce_script("billing")),
    name="triage",
    output_type=[hand_off_to_billing],
)
billing = Agent(
    scripted("billing", bounce_script("triage")),
    name="billing",
    output_type=[hand_off_to_triage],
)


async def main() -> dict[str, Any]:
    prompt = f"Select the names and countries of all capitals {SENTINEL}"
    if SCENARIO in ("healthy", "route"):
        result = await router_agent.run(prompt)
        return {"output": type(result.output).__name__}
    if SCENARIO == "error":
        try:
            await router_agent.run(prompt)
        except RuntimeError:
            return {"error": "RuntimeError"}
        return {"error": None}
    if SCENARIO == "delegation":
        result = await joke_selection_agent.run(
            f"Tell me a joke. {SENTINEL}",
            usage_limits=UsageLimits(request_limit=5, total_tokens_limit=5000),
        )
        return {"output": type(result.output).__name__, "requests": result.usage.requests}
    try:
        await triage.run(f"My bill is wrong {SENTINEL}", usage_limits=PING_LIMITS)
    except UsageLimitExceeded:
        return {"error": "UsageLimitExceeded"}
    return {"error": None}


outcome = asyncio.run(main())
finish(PROVIDER, scenario=SCENARIO, authors=AUTHORS, **outcome)
