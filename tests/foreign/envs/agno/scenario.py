"""Agno teams, for real, offline: scripted `Model`s, OpenInference's `AgnoInstrumentor`, OTLP/HTTP out.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/agno/scenario.py {route,coordinate,error,crash}

Agno's own cookbook teams (agno-agi/agno `cookbook/03_teams/01_quickstart/`), each model
replaced by a scripted one (`ScriptedModel`: a subclass of `agno.models.base.Model`, the
documented extension point, returning `ModelResponse`s from a fixed script, never touching
the network), traced as OpenInference's Agno docs say: `AgnoInstrumentor().instrument()`
with the global tracer provider exporting OTLP/HTTP — one span per export as in the
quickstart (`SimpleSpanProcessor`), or batched, by `$HANDOFFSCOPE_OI_EXPORT` (oi_export.py).
OpenInference records content by default (no `TraceConfig` given: inputs, outputs,
messages and tool arguments are all on the spans).

- route: `02_respond_directly_router_team.py` — the "Multi Language Team" with
  `mode=TeamMode.route`; the leader routes an English question to "English Agent" with
  `delegate_task_to_member`, and the member's answer is the team's (respond directly).
- coordinate: `01_basic_coordination.py` — the "Planning Team" (default coordinate mode):
  the leader delegates to "Planner", then to "Writer", and writes the final answer itself.
  Planner calls a tool, `lookup` (arguments and output carry the sentinel).
- error: the coordinate team, whose "Writer" crashes: its model raises an exception whose
  message carries the sentinel. Agno contains it: the member's run ends in error, the
  leader gets the error as the tool's result and finishes the team's run.
- crash: the coordinate team, whose leader's model raises (the sentinel in the message)
  after Planner answered: the team's run itself ends in error.

The sentinel is planted in the user's message, every instruction, the delegated task
(tool arguments), tool output, every answer and the exception message.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, finish  # noqa: E402
from oi_export import install  # noqa: E402

SCENARIOS = ("route", "coordinate", "error", "crash")
if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
    sys.exit(f"usage: scenario.py {{{','.join(SCENARIOS)}}}")
SCENARIO = sys.argv[1]
PROVIDER = install("agno-app")

from openinference.instrumentation.agno import AgnoInstrumentor  # noqa: E402

AgnoInstrumentor().instrument()

from agno.agent import Agent  # noqa: E402
from agno.models.base import Model  # noqa: E402
from agno.models.response import ModelResponse  # noqa: E402
from agno.team import Team, TeamMode  # noqa: E402

Turn = tuple[str, Any]  # ("text", str), ("tool", (name, arguments)) or ("raise", message)
AUTHORS: list[str] = []
"""Which scripted model answered, in order (the driver's account of who held control)."""


class ScriptedModel(Model):
    """One agent's model: each call returns the next scripted turn (a tool call or text)."""

    def __init__(self, name: str, script: list[Turn]) -> None:
        super().__init__(id=f"scripted-{name}", name="Scripted", provider="Scripted")
        self._agent = name
        self._script = script
        self._calls = 0

    def _next(self) -> ModelResponse:
        kind, value = self._script[min(self._calls, len(self._script) - 1)]
        self._calls += 1
        AUTHORS.append(self._agent)
        if kind == "raise":
            raise RuntimeError(value)
        if kind == "text":
            return ModelResponse(role="assistant", content=value)
        name, arguments = value
        call = {
            "id": f"call-{self._agent}-{self._calls}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return ModelResponse(role="assistant", content="", tool_calls=[call])

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next()

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next()

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield self._next()

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        yield self._next()

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response


def lookup(query: str) -> str:
    """Look the project's prior art up."""
    return f"notes for {query} {SENTINEL}"


def delegate(member_id: str) -> Turn:
    return ("tool", ("delegate_task_to_member", {"member_id": member_id, "task": SENTINEL}))


def route_team() -> Team:
    english = Agent(
        name="English Agent",
        role=f"You only answer in English {SENTINEL}",
        model=ScriptedModel("English Agent", [("text", f"I am well {SENTINEL}")]),
    )
    spanish = Agent(
        name="Spanish Agent",
        role=f"You can only answer in Spanish {SENTINEL}",
        model=ScriptedModel("Spanish Agent", [("text", f"Estoy bien {SENTINEL}")]),
    )
    return Team(
        name="Multi Language Team",
        model=ScriptedModel("Multi Language Team", [delegate("english-agent")]),
        mode=TeamMode.route,
        members=[english, spanish],
        markdown=True,
        instructions=[f"You are a language router {SENTINEL}."],
        show_members_responses=True,
    )


def coordinate_team() -> Team:
    planner = Agent(
        name="Planner",
        role=f"You plan tasks and split work into clear, ordered steps {SENTINEL}.",
        model=ScriptedModel(
            "Planner",
            [("tool", ("lookup", {"query": SENTINEL})), ("text", f"1. 2. 3. {SENTINEL}")],
        ),
        tools=[lookup],
    )
    writer_turn: Turn = (
        ("raise", f"writer backend down {SENTINEL}")
        if SCENARIO == "error"
        else ("text", f"A summary {SENTINEL}")
    )
    writer = Agent(
        name="Writer",
        role=f"You draft concise, readable summaries {SENTINEL}.",
        model=ScriptedModel("Writer", [writer_turn]),
    )
    leader: list[Turn] = [delegate("planner"), delegate("writer"), ("text", f"Outline {SENTINEL}")]
    if SCENARIO == "crash":
        leader[1] = ("raise", f"leader backend down {SENTINEL}")
    return Team(
        model=ScriptedModel("Planning Team", leader),
        name="Planning Team",
        members=[planner, writer],
        instructions=[f"Coordinate with the two members {SENTINEL}."],
        markdown=True,
        show_members_responses=True,
    )


def main() -> dict[str, Any]:
    team = route_team() if SCENARIO == "route" else coordinate_team()
    error = None
    status = None
    try:
        out = team.run(f"How are you? {SENTINEL}")
        status = str(getattr(out.status, "value", out.status))
    except Exception as exc:  # the driver reports it; the spans say it too
        error = type(exc).__name__
    return {
        "framework": "agno",
        "scenario": SCENARIO,
        "authors": AUTHORS,
        "status": status,
        "error": error,
    }


if __name__ == "__main__":
    finish(PROVIDER, **main())
