"""`opentelemetry-instrument python app.py`: an app with no handoffscope line in it is instrumented.

Each app below imports only its framework (LangGraph; the Agents SDK with its own scripted
model). Run under the real `opentelemetry-instrument` command, OpenTelemetry finds our
instrumentors through their entry points (instrumentation/pyproject.toml) and, with no
configurator installed, they set up configure()'s provider themselves;
the app's handoff reaches a real collector subprocess over OTLP/HTTP and is judged there,
and the sentinel the app put in its messages is in no API answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.polling import eventually

from handoffscope.instrumentation import semconv as sc

SENTINEL = "ZERO-CODE-SENTINEL-6b1f"

LANGGRAPH_APP = f"""
from typing import Annotated, Literal, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command


class State(TypedDict):
    messages: Annotated[list, add_messages]


def triage(state: State) -> Command[Literal["billing"]]:
    return Command(goto="billing", update={{"messages": [AIMessage("to billing {SENTINEL}")]}})


def billing(state: State) -> dict:
    return {{"messages": [AIMessage("refunded {SENTINEL}")]}}


g = StateGraph(State)
g.add_node("triage", triage)
g.add_node("billing", billing)
g.add_edge(START, "triage")
out = g.compile().invoke({{"messages": [HumanMessage("refund please {SENTINEL}")]}})
print("messages", len(out["messages"]))
"""

OPENAI_AGENTS_APP = f"""
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

model = ScriptedModel(
    [[function_call("transfer_to_billing", {{}}, call_id="call_1")],
     [assistant_message("refunded {SENTINEL}")]]
)
billing = Agent(name="billing", instructions="Refunds. {SENTINEL}", model=model)
triage = Agent(name="triage", instructions="Route.", model=model, handoffs=[billing])
out = Runner.run_sync(triage, "refund please {SENTINEL}")
print("messages", len(out.to_input_list()))
"""


@pytest.mark.parametrize(
    ("service", "source", "printed"),
    [("zero-code-langgraph", LANGGRAPH_APP, 3), ("zero-code-agents", OPENAI_AGENTS_APP, 4)],
)
def test_opentelemetry_instrument_reports_an_uninstrumented_app(
    collector: Any, tmp_path: Path, service: str, source: str, printed: int
) -> None:
    app = tmp_path / "app.py"
    app.write_text(source)
    command = Path(sys.executable).with_name("opentelemetry-instrument")
    env = {
        **os.environ,
        "OTEL_SERVICE_NAME": service,
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.http_endpoint,
        # Only ours: this environment also has other LangChain / Agents SDK instrumentations.
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "langchain,openai_agents",
    }
    env.pop("OPENAI_API_KEY", None)  # the SDK's default processor must not export anywhere
    if collector.token:
        env["HANDOFFSCOPE_TOKEN"] = collector.token
    done = subprocess.run(
        [str(command), sys.executable, str(app)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert f"messages {printed}" in done.stdout  # the app ran as it does uninstrumented

    # Export is asynchronous (flushed at the app's exit, stored by the collector after):
    # wait for the evidence, then let the assertions say what is missing.
    answers: list[Any] = []

    def first_run() -> dict[str, Any]:
        listed = collector.api("/api/v1/runs", service=service, since=0)
        answers.append(listed)
        if not listed["runs"]:
            return {}
        run = collector.api(f"/api/v1/runs/{listed['runs'][0]['run_id']}")
        answers.append(run)
        return run

    run = eventually(
        first_run,
        lambda run: run.get("status") == sc.RUN_STATUS_COMPLETED and bool(run.get("handoffs")),
        timeout=60,
        or_last=True,
    )
    assert (run.get("service"), run.get("status")) == (service, sc.RUN_STATUS_COMPLETED), run
    assert [(h["from_agent"], h["to_agent"]) for h in run["handoffs"]] == [("triage", "billing")]
    assert run["path"] == ["triage", "billing"]
    for answer in answers:
        assert SENTINEL not in json.dumps(answer)


KEEPS_A_CHOSEN_PROVIDER = """
import opentelemetry.instrumentation.auto_instrumentation  # as opentelemetry-instrument does
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

chosen = None
if {preset}:
    chosen = TracerProvider()  # what opentelemetry-distro's configurator would have set
    trace.set_tracer_provider(chosen)
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

LangGraphInstrumentor().instrument()
now = trace.get_tracer_provider()
print("kept" if now is chosen else type(now).__name__)
"""


@pytest.mark.parametrize(("preset", "expected"), [(True, "kept"), (False, "TracerProvider")])
def test_a_provider_a_configurator_chose_is_kept_and_none_gets_ours(
    tmp_path: Path, preset: bool, expected: str
) -> None:
    # A configurator (opentelemetry-distro's) runs before the instrumentors: the adapters
    # report into its provider, never replace it; with none, they set up configure()'s.
    app = tmp_path / "app.py"
    app.write_text(KEEPS_A_CHOSEN_PROVIDER.format(preset=preset))
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    done = subprocess.run(
        [sys.executable, str(app)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == expected
    # OpenTelemetry refuses a second global provider with this warning: not even tried.
    assert "Overriding of current TracerProvider is not allowed" not in done.stderr
