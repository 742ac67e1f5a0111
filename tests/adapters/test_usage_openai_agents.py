"""Usage per leg, OpenAI Agents SDK: the real `Runner`, scripted models that report usage.

Each scripted model call returns `ModelResponse.usage` with known counts (the SDK's own
`agents.testing.ScriptedModel` and `ModelStep(usage=Usage(...))`). A leg is the work one
agent does while it holds control (docs/semconv.md, "Usage"): the test asserts that the
span that ends each leg — the sender's `handoff.request`, or `handoff.run` at the end —
carries exactly the sums of that agent's calls, and that nothing else carries usage.
Content (prompts, tool arguments and outputs, an exception message) is planted with the
SDK's sensitive-data capture ON and must not appear in any exported byte.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import openai_agents_scenarios as scn
import pytest
from agents import Agent, RunConfig, RunHooks, Runner, function_tool, set_trace_processors
from agents.exceptions import AgentsException
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation import stats
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

USAGE = (
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.USAGE_MODEL_CALLS,
    sc.GEN_AI_REQUEST_MODEL,
)


@pytest.fixture
def instrumentor(provider: TracerProvider) -> Iterator[OpenAIAgentsInstrumentor]:
    set_trace_processors([])  # the SDK's default processor would export to OpenAI
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=provider, replace_processors=True)
    yield inst
    inst.uninstrument()
    set_trace_processors([])


class NamedModel(ScriptedModel):
    """A scripted model with a name, as the SDK's OpenAI models have (`Model.model`)."""

    def __init__(self, name: str, steps: list[Any]) -> None:
        super().__init__(steps, emit_traces=True)
        self.model = name


def step(output: list[Any], input_tokens: int, output_tokens: int) -> ModelStep:
    return ModelStep(
        output=output,
        usage=Usage(
            requests=1,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
        ),
    )


@function_tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return scn.planted("tool-output") + order


def usage_of(attrs: dict[str, Any]) -> dict[str, Any]:
    return {k: attrs[k] for k in USAGE if k in attrs}


def spans_of(exporter: InMemorySpanExporter, run_id: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.attributes.get(sc.RUN_ID) == run_id]


def carrying_usage(spans: list[ReadableSpan]) -> list[tuple[str, Any, dict[str, Any]]]:
    """(span name, handoff id or run status, usage) of every span that carries usage."""
    out = []
    for s in spans:
        u = usage_of(dict(s.attributes))
        if u:
            key = s.attributes.get(sc.HANDOFF_ID) or s.attributes.get(sc.RUN_STATUS)
            out.append((s.name, key, u))
    return out


def leg(input_tokens: int, output_tokens: int, calls: int, model: str) -> dict[str, Any]:
    return {
        sc.GEN_AI_USAGE_INPUT_TOKENS: input_tokens,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: output_tokens,
        sc.USAGE_MODEL_CALLS: calls,
        sc.GEN_AI_REQUEST_MODEL: model,
    }


def config() -> RunConfig:
    return RunConfig(workflow_name="support", trace_include_sensitive_data=True)


def test_each_leg_carries_its_agent_calls_on_the_span_that_ends_it(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """triage: a tool call then the handoff (2 calls) -> billing: 1 call, then done."""
    triage_model = NamedModel(
        "gpt-4.1-mini",
        [
            step(
                [function_call("lookup_order", {"order": scn.planted("a")}, call_id="c1")], 101, 7
            ),
            step([function_call("transfer_to_billing", {}, call_id="c2")], 130, 11),
        ],
    )
    billing_model = NamedModel("gpt-4.1", [step([assistant_message(scn.planted("done"))], 260, 40)])
    billing = Agent(name="billing", instructions=scn.planted("b"), model=billing_model)
    triage = Agent(
        name="triage",
        instructions=scn.planted("t"),
        model=triage_model,
        tools=[lookup_order],
        handoffs=[billing],
    )
    result = asyncio.run(Runner.run(triage, scn.planted("prompt"), run_config=config()))
    run_id = instrumentor.run_id(result)
    spans = spans_of(exporter, run_id)
    requests = [s for s in spans if s.name == sc.SPAN_REQUEST]
    assert len(requests) == 1
    assert carrying_usage(spans) == [
        (sc.SPAN_REQUEST, requests[0].attributes[sc.HANDOFF_ID], leg(231, 18, 2, "gpt-4.1-mini")),
        (sc.SPAN_RUN, sc.RUN_STATUS_COMPLETED, leg(260, 40, 1, "gpt-4.1")),
    ]
    # The run's totals are the sum of its legs, as the SDK itself counted them.
    total = result.context_wrapper.usage
    assert (total.input_tokens, total.output_tokens, total.requests) == (491, 58, 3)
    assert stats.attributes_dropped == {}


def test_ping_pong_legs_each_sum_their_own_calls_until_max_turns(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """a <-> b bouncing: every leg is one call; the cut-off last leg ends on the run."""
    model = NamedModel(
        "gpt-4o",
        [
            step([function_call("transfer_to_b", {}, call_id="p1")], 10, 1),
            step([function_call("transfer_to_a", {}, call_id="p2")], 20, 2),
            step([function_call("transfer_to_b", {}, call_id="p3")], 30, 3),
            step([function_call("transfer_to_a", {}, call_id="p4")], 40, 4),
        ],
    )
    a = Agent(name="a", model=model)
    b = Agent(name="b", model=model, handoffs=[a])
    a.handoffs = [b]
    with pytest.raises(AgentsException) as caught:
        asyncio.run(Runner.run(a, scn.planted("go"), max_turns=4, run_config=config()))
    run_id = instrumentor.run_id(caught.value)
    spans = spans_of(exporter, run_id)
    got = carrying_usage(spans)
    assert [(name, u) for name, _, u in got] == [
        (sc.SPAN_REQUEST, leg(10, 1, 1, "gpt-4o")),
        (sc.SPAN_REQUEST, leg(20, 2, 1, "gpt-4o")),
        (sc.SPAN_REQUEST, leg(30, 3, 1, "gpt-4o")),
        (sc.SPAN_REQUEST, leg(40, 4, 1, "gpt-4o")),
    ]
    # The fourth handoff's destination never got a model call before the limit: its leg
    # made none, so the run's end carries no usage (absent, not a made-up 0).
    ends = [dict(s.attributes) for s in spans if s.name == sc.SPAN_RUN]
    assert ends[-1][sc.RUN_STATUS] == sc.RUN_STATUS_MAX_TURNS
    assert not usage_of(ends[-1])


def test_a_delegation_is_the_callers_leg_and_the_apps_hooks_still_run(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    seen: list[str] = []

    class AppHooks(RunHooks[Any]):
        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            seen.append(f"llm:{agent.name}")

        async def on_agent_start(self, context: Any, agent: Any) -> None:
            seen.append(f"start:{agent.name}")

    inner = NamedModel("gpt-4.1-nano", [step([assistant_message(scn.planted("inner"))], 50, 5)])
    researcher = Agent(name="researcher", model=inner)
    outer = NamedModel(
        "gpt-4.1",
        [
            step([function_call("research", {"input": scn.planted("q")}, call_id="d1")], 70, 6),
            step([assistant_message(scn.planted("final"))], 90, 9),
        ],
    )
    lead = Agent(
        name="lead",
        model=outer,
        tools=[researcher.as_tool(tool_name="research", tool_description="Research.")],
    )
    result = asyncio.run(Runner.run(lead, scn.planted("hi"), hooks=AppHooks(), run_config=config()))
    run_id = instrumentor.run_id(result)
    spans = spans_of(exporter, run_id)
    # The callee's call is summed into the caller's only leg (lead never gave up
    # control); the delegation's own request carries none. Most calls: the caller's model.
    assert carrying_usage(spans) == [
        (sc.SPAN_RUN, sc.RUN_STATUS_COMPLETED, leg(210, 20, 3, "gpt-4.1")),
    ]
    assert seen == ["start:lead", "llm:lead", "llm:lead"]


def test_no_content_and_usage_of_a_failed_run(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A model error (with planted text) ends the run failed; the calls before it count."""
    model = NamedModel(
        "gpt-4.1-mini",
        [
            step(
                [function_call("lookup_order", {"order": scn.planted("arg")}, call_id="f1")], 5, 2
            ),
            ModelStep(error=RuntimeError(scn.planted("exception-message"))),
        ],
    )
    agent = Agent(name="solo", instructions=scn.planted("i"), model=model, tools=[lookup_order])
    with pytest.raises(RuntimeError) as caught:
        asyncio.run(Runner.run(agent, scn.planted("prompt"), run_config=config()))
    run_id = instrumentor.run_id(caught.value)
    spans = spans_of(exporter, run_id)
    assert carrying_usage(spans) == [
        (sc.SPAN_RUN, sc.RUN_STATUS_FAILED, leg(5, 2, 1, "gpt-4.1-mini"))
    ]
    payload = encode_spans(exporter.get_finished_spans()).SerializeToString()
    assert scn.SENTINEL.encode() not in payload
    assert stats.attributes_dropped == {}
