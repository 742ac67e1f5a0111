"""Agno teams, for real, offline: scripted `Model`s, OpenInference's `AgnoInstrumentor`, OTLP/HTTP out.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/agno/scenario.py {route,coordinate,error,crash}

Agno's own cookbook teams (agno-agi/agno `cookbook/03_teams/01_quickstart/`), each model
is Agno's stock `HuggingFace` model with a scripted client (`ScriptedClient`, its `client=`:
answers from a fixed script with the hub's own response type, usage included, never
touching the network), traced as OpenInference's Agno docs say: `AgnoInstrumentor().instrument()`
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
from pathlib import Path
from types import SimpleNamespace
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
from agno.models.huggingface import HuggingFace  # noqa: E402
from agno.team import Team, TeamMode  # noqa: E402
from huggingface_hub import (  # noqa: E402
    ChatCompletionOutput,
    ChatCompletionOutputComplete,
    ChatCompletionOutputFunctionDefinition,
    ChatCompletionOutputMessage,
    ChatCompletionOutputToolCall,
    ChatCompletionOutputUsage,
)

Turn = tuple[str, Any]  # ("text", str), ("tool", (name, arguments)) or ("raise", message)
AUTHORS: list[str] = []
"""Which scripted model answered, in order (the driver's account of who held control)."""
RAISED: list[str] = []
"""Whose call raised (its `LLM` span ends in error with no token counts: still a call)."""
INPUT_TOKENS, OUTPUT_TOKENS = 10, 5
"""What every answered scripted call reports (`ChatCompletionOutput.usage`); the test sums them."""


class _Completions:
    def __init__(self, client: ScriptedClient) -> None:
        self.create = client.chat_completion


class ScriptedClient:
    """One agent's model service: each chat completion answers the next scripted turn.

    Stands in for the `huggingface_hub.InferenceClient` Agno's `HuggingFace` model calls
    (its `client=` field: a pre-configured client), and answers with the hub's own
    `ChatCompletionOutput`, usage included. The model is then a stock `HuggingFace`, one of
    the `agno.models` classes OpenInference instruments (it wraps the model classes
    `agno.models` defines, not an app's own `Model` subclass): its `<name>.invoke` spans
    (`LLM`) carry the call's `llm.token_count.*`.
    """

    def __init__(self, name: str, script: list[Turn]) -> None:
        self._agent = name
        self._script = script
        self._calls = 0
        self.chat = SimpleNamespace(completions=_Completions(self))

    def chat_completion(self, **kwargs: Any) -> ChatCompletionOutput:
        kind, value = self._script[min(self._calls, len(self._script) - 1)]
        self._calls += 1
        AUTHORS.append(self._agent)
        if kind == "raise":
            RAISED.append(self._agent)
            raise RuntimeError(value)
        if kind == "text":
            message = ChatCompletionOutputMessage(role="assistant", content=value)
        else:
            name, arguments = value
            call = ChatCompletionOutputToolCall(
                id=f"call-{self._agent}-{self._calls}",
                type="function",
                function=ChatCompletionOutputFunctionDefinition(
                    name=name, arguments=json.dumps(arguments)
                ),
            )
            message = ChatCompletionOutputMessage(role="assistant", content="", tool_calls=[call])
        return ChatCompletionOutput(
            choices=[ChatCompletionOutputComplete(finish_reason="stop", index=0, message=message)],
            created=0,
            id=f"resp-{self._calls}",
            model=model_id(self._agent),
            system_fingerprint="",
            usage=ChatCompletionOutputUsage(
                prompt_tokens=INPUT_TOKENS,
                completion_tokens=OUTPUT_TOKENS,
                total_tokens=INPUT_TOKENS + OUTPUT_TOKENS,
            ),
        )


def model_id(agent: str) -> str:
    """`scripted-<agent>`, spaces as dashes: a model name is one word."""
    return "scripted-" + agent.replace(" ", "-")


def scripted_model(name: str, script: list[Turn]) -> HuggingFace:
    return HuggingFace(id=model_id(name), client=ScriptedClient(name, script))


def lookup(query: str) -> str:
    """Look the project's prior art up."""
    return f"notes for {query} {SENTINEL}"


def delegate(member_id: str) -> Turn:
    return ("tool", ("delegate_task_to_member", {"member_id": member_id, "task": SENTINEL}))


def route_team() -> Team:
    english = Agent(
        name="English Agent",
        role=f"You only answer in English {SENTINEL}",
        model=scripted_model("English Agent", [("text", f"I am well {SENTINEL}")]),
    )
    spanish = Agent(
        name="Spanish Agent",
        role=f"You can only answer in Spanish {SENTINEL}",
        model=scripted_model("Spanish Agent", [("text", f"Estoy bien {SENTINEL}")]),
    )
    return Team(
        name="Multi Language Team",
        model=scripted_model("Multi Language Team", [delegate("english-agent")]),
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
        model=scripted_model(
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
        model=scripted_model("Writer", [writer_turn]),
    )
    leader: list[Turn] = [delegate("planner"), delegate("writer"), ("text", f"Outline {SENTINEL}")]
    if SCENARIO == "crash":
        leader[1] = ("raise", f"leader backend down {SENTINEL}")
    return Team(
        model=scripted_model("Planning Team", leader),
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
        "raised": RAISED,
        "status": status,
        "error": error,
    }


if __name__ == "__main__":
    finish(PROVIDER, **main())
