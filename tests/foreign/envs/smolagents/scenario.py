"""smolagents managed agents, for real, offline: a scripted `Model`, OpenInference, OTLP/HTTP out.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT HANDOFFSCOPE_SENTINEL=... \
        ENV_PYTHON tests/foreign/envs/smolagents/scenario.py {delegate,error,crash}

smolagents' own multi-agent example (huggingface/smolagents
`docs/source/en/examples/multiagents.md`): a `ToolCallingAgent` named `web_search_agent`
with a search tool and `visit_webpage`, managed by a `CodeAgent` (no name of its own,
`additional_authorized_imports=["time", "numpy", "pandas"]`). The network tools are local
functions returning scripted pages, and each agent's model is smolagents' stock
`InferenceClientModel` (the example's) with a scripted client (`ScriptedClient`, passed as
its `client=`: answers from a fixed script with the hub's own response type, usage
included, and never touches the network).
Traced as OpenInference's smolagents docs say: `SmolagentsInstrumentor().instrument()`
with an OTLP/HTTP exporter — one span per export as in the quickstart
(`SimpleSpanProcessor`), or batched, by `$HANDOFFSCOPE_OI_EXPORT` (oi_export.py);
OpenInference records content by default.

- delegate: the manager's code calls `web_search_agent(task=...)`; the web agent searches,
  visits a page and answers with `final_answer`; the manager answers with its report.
- error: the web agent's model raises (the sentinel in the message); smolagents raises it
  out of the web agent's run, the manager's code step fails with it, and the manager's
  next step answers anyway.
- crash: the manager's own model raises after the web agent answered: the run fails.

The sentinel is planted in the task, the delegated task (code), tool arguments and outputs,
the answers and the exception message.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driver_common import SENTINEL, finish  # noqa: E402
from oi_export import install  # noqa: E402

SCENARIOS = ("delegate", "error", "crash")
if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
    sys.exit(f"usage: scenario.py {{{','.join(SCENARIOS)}}}")
SCENARIO = sys.argv[1]
PROVIDER = install("smolagents-app")

from openinference.instrumentation.smolagents import SmolagentsInstrumentor  # noqa: E402

SmolagentsInstrumentor().instrument(tracer_provider=PROVIDER)

from huggingface_hub import (  # noqa: E402
    ChatCompletionOutput,
    ChatCompletionOutputComplete,
    ChatCompletionOutputFunctionDefinition,
    ChatCompletionOutputMessage,
    ChatCompletionOutputToolCall,
    ChatCompletionOutputUsage,
)
from smolagents import CodeAgent, InferenceClientModel, ToolCallingAgent, tool  # noqa: E402

Turn = tuple[str, Any]  # ("text", str), ("tool", (name, arguments)) or ("raise", message)
AUTHORS: list[str] = []
"""Which scripted model answered, in order (the driver's account of who held control)."""
INPUT_TOKENS, OUTPUT_TOKENS = 10, 5
"""What every answered scripted call reports (`ChatCompletionOutput.usage`); the test sums them."""
RAISED: list[str] = []
"""Whose call raised (its `LLM` span ends in error with no token counts: still a call)."""


class ScriptedClient:
    """One agent's model service: each `chat_completion` answers the next scripted turn.

    Stands in for the `huggingface_hub.InferenceClient` that `InferenceClientModel` calls
    (its `client=` argument, smolagents' `ApiModel` hook for a pre-configured client), and
    answers with the hub's own `ChatCompletionOutput`, usage included. The model is then a
    stock `InferenceClientModel`, one of the classes OpenInference instruments (it wraps
    the `generate` of each model class smolagents exports, not an app's own `Model`
    subclass): its `generate` spans (`LLM`) carry the call's `llm.token_count.*`.
    """

    def __init__(self, name: str, script: list[Turn]) -> None:
        self._agent = name
        self._script = script
        self._calls = 0

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
            id=f"resp-{self._agent}-{self._calls}",
            model=f"scripted-{self._agent}",
            system_fingerprint="",
            usage=ChatCompletionOutputUsage(
                prompt_tokens=INPUT_TOKENS,
                completion_tokens=OUTPUT_TOKENS,
                total_tokens=INPUT_TOKENS + OUTPUT_TOKENS,
            ),
        )


def scripted_model(name: str, script: list[Turn]) -> InferenceClientModel:
    return InferenceClientModel(model_id=f"scripted-{name}", client=ScriptedClient(name, script))


@tool
def web_search(query: str) -> str:
    """Searches the web.

    Args:
        query: What to search for.
    """
    return f"https://example.invalid/{SENTINEL} results for {query}"


@tool
def visit_webpage(url: str) -> str:
    """Visits a webpage at the given URL and returns its content as a markdown string.

    Args:
        url: The URL of the webpage to visit.
    """
    return f"# Page {url}\nAbout 5 GW {SENTINEL}"


def code(body: str) -> Turn:
    return ("text", f"Thought: {SENTINEL}\n<code>\n{body}\n</code>")


def main() -> dict[str, Any]:
    web_script: list[Turn] = [
        ("tool", ("web_search", {"query": SENTINEL})),
        ("tool", ("visit_webpage", {"url": f"https://example.invalid/{SENTINEL}"})),
        ("tool", ("final_answer", {"answer": f"About 5 GW {SENTINEL}"})),
    ]
    if SCENARIO == "error":
        web_script = [("raise", f"search backend down {SENTINEL}")]
    manager_script: list[Turn] = [
        code(f'report = web_search_agent(task="power needed by 2030 {SENTINEL}")\nprint(report)'),
        code(f'final_answer("303 GW {SENTINEL}")'),
    ]
    if SCENARIO == "crash":
        manager_script[1] = ("raise", f"manager backend down {SENTINEL}")
    web_agent = ToolCallingAgent(
        tools=[web_search, visit_webpage],
        model=scripted_model("web_search_agent", web_script),
        max_steps=10,
        name="web_search_agent",
        description="Runs web searches for you.",
    )
    manager_agent = CodeAgent(
        tools=[],
        model=scripted_model("manager", manager_script),
        managed_agents=[web_agent],
        additional_authorized_imports=["time", "numpy", "pandas"],
    )
    error = None
    try:
        manager_agent.run(f"If LLM training continues to scale up {SENTINEL}?")
    except Exception as exc:  # the driver reports it; the spans say it too
        error = type(exc).__name__
    return {
        "framework": "smolagents",
        "scenario": SCENARIO,
        "authors": AUTHORS,
        "raised": RAISED,
        "error": error,
    }


if __name__ == "__main__":
    finish(PROVIDER, **main())
