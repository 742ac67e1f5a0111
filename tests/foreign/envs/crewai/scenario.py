"""CrewAI's hierarchical crew, for real, offline: scripted LLMs, our CrewAI adapter, OTLP/HTTP out.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/crewai/scenario.py \
        {healthy,pingpong,undeclared,error,sequential,sequential_crash,sequential_nocontext}

CrewAI's own hierarchical-process example (docs "Hierarchical Process": a Researcher and a
Writer, `Crew(..., process=Process.hierarchical, manager_llm=...)`, CrewAI creating the
manager, which delegates with its "Delegate work to coworker" / "Ask question to coworker"
tools), without `planning=True` (its planner is one more model call, not a delegation).
Every model is scripted: `ScriptedLLM` subclasses `crewai.llms.base_llm.BaseLLM` and
implements `call`, CrewAI's documented custom-LLM extension point, answering in CrewAI's
own ReAct format (`Action:` / `Action Input:` / `Final Answer:`), or, with
`HANDOFFSCOPE_CREWAI_CALLING=native`, with OpenAI-style tool calls (CrewAI's native
tool-calling path, whose tool events are shaped differently). Traced as the adapter's
docstring says: `CrewAIInstrumentor().instrument(tracer_provider=...)`.

- healthy: the manager asks the Writer a question, then delegates the research to the
  Researcher, who searches (a tool) and answers; the manager answers.
- pingpong: the manager delegates the same research to the Researcher, then the same
  write-up to the Writer, and round again, each answering the same without any tool (one
  call differs from the last, so CrewAI's "same input as last time" guard lets it run),
  until CrewAI's limit on identical tool calls (`MAX_REPEATED_TOOL_CALLS`, 5 calls with the
  same arguments and result) raises `ToolExecutionFailedError` and the kickoff fails.
- undeclared: the manager delegates to "Legal Counsel", an agent the crew does not have;
  CrewAI answers that there is no such coworker; the manager then delegates to the
  Researcher and answers.
- error: the Researcher's model raises (the sentinel in the message) on every try; CrewAI
  retries it, then gives the manager the error as the tool's answer; the manager's own
  model then raises too, so the crew's kickoff fails.

The sequential scenarios run CrewAI's own quickstart crew instead (the `crewai create crew`
template, `latest_ai_development`: its `researcher` and `reporting_analyst` agents and its
`research_task` and `reporting_task`, from the template's `agents.yaml` / `tasks.yaml`
given as the `config=` dicts `@CrewBase` would load, `process=Process.sequential`,
`kickoff(inputs={"topic": "AI LLMs"})`); the template's `output_file='report.md'` is left
out (nothing is written to disk):

- sequential: the researcher searches (a tool) and answers; CrewAI hands its output to the
  reporting analyst's task as context; the analyst answers.
- sequential_crash: the reporting analyst's model raises on every try (the sentinel in the
  message): CrewAI retries, then the task and the kickoff fail.
- sequential_nocontext: the same crew, the reporting task declaring `context=[]` (it takes
  no earlier output): CrewAI hands it nothing.

With `HANDOFFSCOPE_CREWAI_OPENINFERENCE=1`, OpenInference's CrewAI instrumentor (content
capture on by default) is switched on beside the adapter, on the same tracer provider.

The sentinel is planted in the task, the delegated tasks and context (tool arguments), the
search tool's arguments and output, every answer and the exception messages.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, finish, install_tracing  # noqa: E402

SEQUENTIAL = ("sequential", "sequential_crash", "sequential_nocontext")
SCENARIOS = ("healthy", "pingpong", "undeclared", "error", *SEQUENTIAL)
if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
    sys.exit(f"usage: scenario.py {{{','.join(SCENARIOS)}}}")
SCENARIO = sys.argv[1]
NATIVE = os.environ.get("HANDOFFSCOPE_CREWAI_CALLING") == "native"
"""The model calls tools natively (OpenAI-style tool calls), not in ReAct text."""
# CrewAI's own anonymous telemetry would try the network; the docs' switch turns it off.
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
PROVIDER = install_tracing("crewai-app")

from handoffscope.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402

CrewAIInstrumentor().instrument(tracer_provider=PROVIDER)
if os.environ.get("HANDOFFSCOPE_CREWAI_OPENINFERENCE") == "1":
    # OpenInference's CrewAI instrumentor as its README sets it up, on the same provider:
    # it records task descriptions, agent inputs and outputs and tool arguments (content).
    from openinference.instrumentation.crewai import (  # noqa: E402
        CrewAIInstrumentor as OpenInferenceInstrumentor,
    )

    OpenInferenceInstrumentor().instrument(tracer_provider=PROVIDER)

from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402

MANAGER = "Crew Manager"  # the role CrewAI gives the manager it creates from manager_llm
RESEARCHER, WRITER = "Researcher", "Writer"
CALLS: list[str] = []
"""Which scripted model answered, in order (the driver's account of who held control)."""
NATIVE_CALLS: list[str] = []
"""Which models answered with a native tool call (the driver's account of the path taken)."""


ACTION_PREFIX = "Thought: I should use a tool.\nAction: "


def act(tool_name: str, **args: str) -> str:
    return f"{ACTION_PREFIX}{tool_name}\nAction Input: {json.dumps(args)}"


def answer(text: str) -> str:
    return f"Thought: I now know the final answer.\nFinal Answer: {text} {SENTINEL}"


def delegate(coworker: str, task: str) -> str:
    return act(
        "Delegate work to coworker",
        task=f"{task} {SENTINEL}",
        context=f"the customer wrote {SENTINEL}",
        coworker=coworker,
    )


class ScriptedLLM(BaseLLM):
    """One agent's model: its turns in order; the last one repeats once they run out, or
    all of them round again (`cycle`)."""

    turns: list[str] = []
    name: str = ""
    cycle: bool = False

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        CALLS.append(self.name)
        turn = self.turns.pop(0) if len(self.turns) > 1 else self.turns[0]
        if self.cycle:
            self.turns.append(turn)
        if turn.startswith("raise:"):
            raise RuntimeError(f"{turn.removeprefix('raise:')} {SENTINEL}")
        if NATIVE and tools and turn.startswith(ACTION_PREFIX):
            NATIVE_CALLS.append(self.name)
            return [native_call(turn, len(CALLS))]
        return turn

    def supports_function_calling(self) -> bool:
        # ReAct text (`Action:` lines) unless the scenario runs CrewAI's native tool calling.
        return NATIVE


def native_call(turn: str, n: int) -> dict[str, Any]:
    """A ReAct action of the script as the OpenAI-style tool call a native model returns."""
    action, _, args = turn.removeprefix(ACTION_PREFIX).partition("\nAction Input: ")
    name = "_".join(action.strip().lower().split())
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": args}}


def scripted(name: str, turns: list[str]) -> ScriptedLLM:
    cycle = SCENARIO == "pingpong" and name == MANAGER
    return ScriptedLLM(model=f"scripted-{name}", turns=list(turns), name=name, cycle=cycle)


@tool("search")
def search(query: str) -> str:
    """Search the web for a query."""
    return f"three results for {query} {SENTINEL}"


SEARCH = act("search", query=f"AI agents market {SENTINEL}")
SCRIPTS: dict[str, dict[str, list[str]]] = {
    "healthy": {
        MANAGER: [
            act(
                "Ask question to coworker",
                question=f"Which audience? {SENTINEL}",
                context=f"blog post {SENTINEL}",
                coworker=WRITER,
            ),
            delegate(RESEARCHER, "Research AI agents"),
            answer("The report"),
        ],
        RESEARCHER: [SEARCH, answer("Findings")],
        WRITER: [answer("Engineers")],
    },
    "pingpong": {
        MANAGER: [delegate(RESEARCHER, "Research AI agents"), delegate(WRITER, "Write it up")],
        RESEARCHER: [answer("Findings")],
        WRITER: [answer("Draft")],
    },
    "undeclared": {
        MANAGER: [
            delegate("Legal Counsel", "Check the licence"),
            delegate(RESEARCHER, "Research AI agents"),
            answer("The report"),
        ],
        RESEARCHER: [answer("Findings")],
        WRITER: [answer("unused")],
    },
    "error": {
        MANAGER: [delegate(RESEARCHER, "Research AI agents"), "raise:manager model down"],
        RESEARCHER: ["raise:researcher model down"],
        WRITER: [answer("unused")],
    },
}

# The quickstart template's config (agents.yaml, tasks.yaml), as `@CrewBase` loads it.
AGENTS_YAML = {
    "researcher": {
        "role": "{topic} Senior Data Researcher",
        "goal": "Uncover cutting-edge developments in {topic}",
        "backstory": (
            "You're a seasoned researcher with a knack for uncovering the latest developments"
            " in {topic}. Known for your ability to find the most relevant information and"
            " present it in a clear and concise manner."
        ),
    },
    "reporting_analyst": {
        "role": "{topic} Reporting Analyst",
        "goal": "Create detailed reports based on {topic} data analysis and research findings",
        "backstory": (
            "You're a meticulous analyst with a keen eye for detail. You're known for your"
            " ability to turn complex data into clear and concise reports, making it easy for"
            " others to understand and act on the information you provide."
        ),
    },
}
TASKS_YAML = {
    "research_task": {
        "description": (
            "Conduct a thorough research about {topic} Make sure you find any interesting and"
            " relevant information given the current year is 2025."
        ),
        "expected_output": (
            "A list with 10 bullet points of the most relevant information about {topic}"
        ),
    },
    "reporting_task": {
        "description": (
            "Review the context you got and expand each topic into a full section for a"
            " report. Make sure the report is detailed and contains any and all relevant"
            " information."
        ),
        "expected_output": (
            "A fully fledged report with the main topics, each with a full section of"
            " information. Formatted as markdown without '```'"
        ),
    },
}
TOPIC = f"AI LLMs {SENTINEL}"
RESEARCH_ROLE, REPORTING_ROLE = "researcher", "reporting_analyst"
SEQUENTIAL_SCRIPTS: dict[str, dict[str, list[str]]] = {
    "sequential": {
        RESEARCH_ROLE: [SEARCH, answer("Ten bullet points")],
        REPORTING_ROLE: [answer("# Report")],
    },
    "sequential_crash": {
        RESEARCH_ROLE: [SEARCH, answer("Ten bullet points")],
        REPORTING_ROLE: ["raise:reporting model down"],
    },
    "sequential_nocontext": {
        RESEARCH_ROLE: [SEARCH, answer("Ten bullet points")],
        REPORTING_ROLE: [answer("# Report")],
    },
}


def sequential_crew() -> Crew:
    """The quickstart template's crew (crew.py), with scripted models."""
    script = SEQUENTIAL_SCRIPTS[SCENARIO]
    researcher = Agent(
        config=AGENTS_YAML[RESEARCH_ROLE],
        verbose=True,
        tools=[search],
        llm=scripted(RESEARCH_ROLE, script[RESEARCH_ROLE]),
    )
    reporting_analyst = Agent(
        config=AGENTS_YAML[REPORTING_ROLE],
        verbose=True,
        llm=scripted(REPORTING_ROLE, script[REPORTING_ROLE]),
    )
    research_task = Task(config=TASKS_YAML["research_task"], agent=researcher)
    context: dict[str, Any] = {"context": []} if SCENARIO == "sequential_nocontext" else {}
    reporting_task = Task(config=TASKS_YAML["reporting_task"], agent=reporting_analyst, **context)
    return Crew(
        agents=[researcher, reporting_analyst],
        tasks=[research_task, reporting_task],
        process=Process.sequential,
        verbose=True,
    )


def hierarchical_crew() -> Crew:
    """The docs' hierarchical example, with scripted models (the manager's included)."""
    script = SCRIPTS[SCENARIO]
    researcher = Agent(
        role=RESEARCHER,
        goal="Conduct in-depth analysis",
        backstory="Experienced data analyst with a knack for uncovering hidden trends.",
        tools=[search],
        llm=scripted(RESEARCHER, script[RESEARCHER]),
    )
    writer = Agent(
        role=WRITER,
        goal="Create engaging content",
        backstory="Creative writer passionate about storytelling.",
        llm=scripted(WRITER, script[WRITER]),
    )
    task = Task(
        description=f"Write a short report on AI agents for {SENTINEL}",
        expected_output="A three-paragraph report",
    )
    return Crew(
        tasks=[task],
        agents=[researcher, writer],
        manager_llm=scripted(MANAGER, script[MANAGER]),
        process=Process.hierarchical,
    )


if SCENARIO in SEQUENTIAL:
    # The template's main.py: `kickoff(inputs={"topic": "AI LLMs", ...})`.
    crew, inputs = sequential_crew(), {"topic": TOPIC}
else:
    crew, inputs = hierarchical_crew(), None

failed: str | None = None
try:
    crew.kickoff(inputs=inputs)
except Exception as exc:  # the error scenario: the crew's kickoff raises
    failed = type(exc).__name__
# CrewAI runs event handlers off the app's thread; its kickoff flushes them, this again.
from crewai.events import crewai_event_bus  # noqa: E402

crewai_event_bus.flush()
finish(PROVIDER, scenario=SCENARIO, calls=CALLS, native_calls=len(NATIVE_CALLS), failed=failed)
