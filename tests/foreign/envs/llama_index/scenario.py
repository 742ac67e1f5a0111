"""LlamaIndex `AgentWorkflow`, for real, offline: scripted models, handoffscope's adapter, OTLP/HTTP out.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/llama_index/scenario.py \
        {healthy,pingpong,undeclared,error,delegation,uninstrumented}

The agents, tools and wiring of LlamaIndex's multi-agent guide ("Multi-agent patterns":
`ResearchAgent` with `search_web` and `record_notes`, `WriteAgent` with `write_report`,
`ReviewAgent` with `review_report`, `can_handoff_to` as the guide sets it, an
`AgentWorkflow` rooted at `ResearchAgent` with the guide's `initial_state`), run with the
guide's `handler.stream_events()` loop. `search_web` answers locally (the guide calls a
web-search LLM). Each agent has its own scripted model: LlamaIndex's own
`MockFunctionCallingLLM` (llama_index.core.llms.mock) with a `response_generator` — its
documented extension point for a function-calling model — returning the next step of a
fixed script (a tool call as a `ToolCallBlock`, an answer, or an exception).

The adapter is switched on exactly as its docstring's two lines say, on the driver's
tracer provider (driver_common.install_tracing), and exports over real OTLP/HTTP.

- healthy: ResearchAgent's first `search_web` raises (the exception text carries the
  sentinel; LlamaIndex hands it to the model as an error output), the second returns the
  sentinel; it records notes, hands off to WriteAgent (the handoff's `reason` carries the
  sentinel); WriteAgent writes the report, hands off to ReviewAgent; ReviewAgent reviews
  and answers.
- pingpong: ResearchAgent and WriteAgent hand the task to each other with no new work
  until `run(max_iterations=6)` stops the run (`WorkflowRuntimeError`).
- undeclared: ResearchAgent asks to hand off to ReviewAgent, which is not in its
  `can_handoff_to`; LlamaIndex refuses (the model reads the refusal) and ResearchAgent
  keeps control, then hands off to WriteAgent, which answers.
- error: ResearchAgent hands off to WriteAgent, whose model call raises (the sentinel in
  the exception's text): the run fails in the receiver.
- delegation: the guide's orchestrator pattern: an orchestrator `FunctionAgent` whose tools
  `call_research_agent` / `call_write_agent` await `research_agent.run(...)` /
  `write_agent.run(...)` and return their answers.
- uninstrumented: `instrument()` then `uninstrument()`, then the healthy run: nothing is
  reported (the span handler is gone from LlamaIndex's dispatcher).

With `HANDOFFSCOPE_LI_OPENINFERENCE=1`, OpenInference's `LlamaIndexInstrumentor` (the
instrumentation LlamaIndex's observability docs point to, which records prompts, messages,
tool arguments and outputs by default) is switched on too, as its README says
(`LlamaIndexInstrumentor().instrument(tracer_provider=...)`), on the same tracer provider,
so its spans go to the same collector in the same exports as the adapter's.

Content: the sentinel is in the user message, every tool argument and output, the handoff
reasons, the answers and an exception; the adapter must send none of it.
"""

# No `from __future__ import annotations`: LlamaIndex finds a tool's `ctx: Context` parameter
# by its annotation object, which a string annotation is not.

import asyncio
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, finish, install_tracing, scenario_from_argv  # noqa: E402
from llama_index.core.agent.workflow import (  # noqa: E402
    AgentOutput,
    AgentWorkflow,
    FunctionAgent,
)
from llama_index.core.base.llms.types import ToolCallBlock  # noqa: E402
from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402
from llama_index.core.workflow import Context  # noqa: E402

from handoffscope.instrumentation.llama_index import LlamaIndexInstrumentor  # noqa: E402

EXTRA = ("undeclared", "delegation", "uninstrumented")


def scripted(name: str, steps: Sequence[Any]) -> MockFunctionCallingLLM:
    """A model that plays `steps` in order: (tool, kwargs) calls a tool, a str answers, an
    exception is raised by the model call."""
    remaining = list(steps)
    calls = iter(range(1, 1000))

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        step = remaining.pop(0) if len(remaining) > 1 else remaining[0]  # the last repeats
        if isinstance(step, Exception):
            raise step
        if isinstance(step, str):
            return ChatMessage(role="assistant", content=step)
        tool, tool_kwargs = step
        block = ToolCallBlock(
            tool_call_id=f"call_{name}_{next(calls)}", tool_name=tool, tool_kwargs=tool_kwargs
        )
        return ChatMessage(role="assistant", blocks=[block])

    return MockFunctionCallingLLM(response_generator=respond)


# -- the guide's tools ------------------------------------------------------------------------

search_attempts = 0


async def search_web(query: str) -> str:
    """Useful for searching the web about a specific query or topic"""
    global search_attempts
    search_attempts += 1
    if search_attempts == 1:
        raise ConnectionError(f"search backend unreachable for {query}")
    return f"Results for {query}: the web began at CERN in 1989."


async def record_notes(ctx: Context, notes: str, notes_title: str) -> str:
    """Useful for recording notes on a given topic."""
    current_state = await ctx.store.get("state")
    if "research_notes" not in current_state:
        current_state["research_notes"] = {}
    current_state["research_notes"][notes_title] = notes
    await ctx.store.set("state", current_state)
    return "Notes recorded."


async def write_report(ctx: Context, report_content: str) -> str:
    """Useful for writing a report on a given topic."""
    current_state = await ctx.store.get("state")
    current_state["report_content"] = report_content
    await ctx.store.set("state", current_state)
    return "Report written."


async def review_report(ctx: Context, review: str) -> str:
    """Useful for reviewing a report and providing feedback."""
    current_state = await ctx.store.get("state")
    current_state["review"] = review
    await ctx.store.set("state", current_state)
    return "Report reviewed."


def handoff_to(agent: str) -> tuple[str, dict[str, str]]:
    return ("handoff", {"to_agent": agent, "reason": f"ready: {SENTINEL}"})


SCRIPTS: dict[str, dict[str, list[Any]]] = {
    "healthy": {
        "ResearchAgent": [
            ("search_web", {"query": f"history of the web {SENTINEL}"}),
            ("search_web", {"query": f"history of the www {SENTINEL}"}),
            ("record_notes", {"notes": f"CERN 1989 {SENTINEL}", "notes_title": "origins"}),
            handoff_to("WriteAgent"),
        ],
        "WriteAgent": [
            ("write_report", {"report_content": f"# The web {SENTINEL}"}),
            handoff_to("ReviewAgent"),
        ],
        "ReviewAgent": [
            ("review_report", {"review": f"Approved {SENTINEL}"}),
            f"The report is approved. {SENTINEL}",
        ],
    },
    "pingpong": {
        "ResearchAgent": [handoff_to("WriteAgent")],
        "WriteAgent": [handoff_to("ResearchAgent")],
        "ReviewAgent": ["unused"],
    },
    "undeclared": {
        "ResearchAgent": [handoff_to("ReviewAgent"), handoff_to("WriteAgent")],
        "WriteAgent": [f"Here is the report. {SENTINEL}"],
        "ReviewAgent": ["unused"],
    },
    "error": {
        "ResearchAgent": [handoff_to("WriteAgent")],
        "WriteAgent": [RuntimeError(f"model backend failed on {SENTINEL}")],
        "ReviewAgent": ["unused"],
    },
}


def guide_agents(script: dict[str, list[Any]]) -> list[FunctionAgent]:
    """The guide's three agents, each with its scripted model."""
    research_agent = FunctionAgent(
        name="ResearchAgent",
        description="Useful for searching the web for information on a given topic and "
        "recording notes on the topic.",
        system_prompt="You are the ResearchAgent that can search the web for information on a "
        "given topic and record notes on the topic. Once notes are recorded and you are "
        "satisfied, you should hand off control to the WriteAgent to write a report on the "
        "topic.",
        llm=scripted("research", script["ResearchAgent"]),
        tools=[search_web, record_notes],
        can_handoff_to=["WriteAgent"],
    )
    write_agent = FunctionAgent(
        name="WriteAgent",
        description="Useful for writing a report on a given topic.",
        system_prompt="You are the WriteAgent that can write a report on a given topic. Your "
        "report should be in a markdown format. The content should be grounded in the research "
        "notes. Once the report is written, you should get feedback at least once from the "
        "ReviewAgent.",
        llm=scripted("write", script["WriteAgent"]),
        tools=[write_report],
        can_handoff_to=["ReviewAgent", "ResearchAgent"],
    )
    review_agent = FunctionAgent(
        name="ReviewAgent",
        description="Useful for reviewing a report and providing feedback.",
        system_prompt="You are the ReviewAgent that can review a report and provide feedback. "
        "Your feedback should either approve the current report or request changes for the "
        "WriteAgent to implement.",
        llm=scripted("review", script["ReviewAgent"]),
        tools=[review_report],
        can_handoff_to=["WriteAgent"],
    )
    return [research_agent, write_agent, review_agent]


async def run_workflow(scenario: str) -> dict[str, Any]:
    agent_workflow = AgentWorkflow(
        agents=guide_agents(SCRIPTS[scenario]),
        root_agent="ResearchAgent",
        initial_state={
            "research_notes": {},
            "report_content": "Not written yet.",
            "review": "Review required.",
        },
    )
    kwargs: dict[str, Any] = {"max_iterations": 6} if scenario == "pingpong" else {}
    conversation = None
    if scenario == "healthy":
        # LlamaIndex's documented memory, with a session id: the run's conversation.
        conversation = f"session-{secrets.token_hex(6)}"
        kwargs["memory"] = Memory.from_defaults(session_id=conversation, token_limit=40000)
    handler = agent_workflow.run(user_msg=f"Write me a report on the web. {SENTINEL}", **kwargs)
    authors: list[str] = []
    error = None
    try:
        async for event in handler.stream_events():
            name = getattr(event, "current_agent_name", None)
            if isinstance(event, AgentOutput) and (not authors or authors[-1] != name):
                authors.append(name)
        await handler
    except Exception as exc:  # the scenario's own account says how it ended
        error = type(exc).__name__
    return {"authors": authors, "error": error, "conversation": conversation}


async def run_orchestrator() -> dict[str, Any]:
    """The guide's orchestrator pattern: sub-agents called as tools."""
    research_agent, write_agent, _ = guide_agents(
        {
            "ResearchAgent": [
                ("record_notes", {"notes": f"CERN {SENTINEL}", "notes_title": "origins"}),
                f"Notes: CERN 1989. {SENTINEL}",
            ],
            "WriteAgent": [f"# Report {SENTINEL}"],
            "ReviewAgent": ["unused"],
        }
    )
    called: list[str] = []

    async def call_research_agent(ctx: Context, prompt: str) -> str:
        """Useful for recording research notes based on a specific prompt."""
        called.append(research_agent.name)
        result = await research_agent.run(
            user_msg=f"Write some notes about the following: {prompt}"
        )
        return str(result)

    async def call_write_agent(ctx: Context) -> str:
        """Useful for writing a report based on the research notes."""
        called.append(write_agent.name)
        result = await write_agent.run(user_msg="Write a markdown report from the notes.")
        return str(result)

    orchestrator = FunctionAgent(
        name="Orchestrator",
        description="Plans the report and calls the research and write agents.",
        system_prompt="You are an expert in the field of report writing. You will be given a "
        "user request and a list of tools that can help with the request.",
        llm=scripted(
            "orchestrator",
            [
                ("call_research_agent", {"prompt": f"the web {SENTINEL}"}),
                ("call_write_agent", {}),
                f"Done. {SENTINEL}",
            ],
        ),
        tools=[call_research_agent, call_write_agent],
    )
    handler = orchestrator.run(user_msg=f"Write me a report on the web. {SENTINEL}")
    await handler
    return {"authors": ["Orchestrator"], "delegated": called, "error": None}


def main() -> None:
    scenario = scenario_from_argv(EXTRA)
    provider = install_tracing("llama-index-app")
    if os.environ.get("HANDOFFSCOPE_LI_OPENINFERENCE") == "1":
        from openinference.instrumentation.llama_index import (
            LlamaIndexInstrumentor as OpenInferenceInstrumentor,
        )

        OpenInferenceInstrumentor().instrument(tracer_provider=provider)
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    if scenario == "uninstrumented":
        instrumentor.uninstrument()
        outcome = asyncio.run(run_workflow("healthy"))
    elif scenario == "delegation":
        outcome = asyncio.run(run_orchestrator())
    else:
        outcome = asyncio.run(run_workflow(scenario))
    finish(provider, **outcome)


if __name__ == "__main__":
    main()
