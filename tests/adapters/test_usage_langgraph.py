"""Usage per leg, LangGraph: real compiled graphs, scripted chat models reporting usage.

The scripted model is langchain-core's `GenericFakeChatModel` (as in langgraph_scenarios),
replaying `AIMessage`s that carry `usage_metadata` and `response_metadata["model_name"]`,
as LangChain's chat models report them. The adapter reads them in `on_llm_end` and puts
each leg's sums on the span that ends it — the sender's `handoff.request`, or `handoff.run`
at the end (docs/semconv.md, "Usage"). Every message, tool argument and output, and an
exception message, carries the SENTINEL, which must appear in no exported byte.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Literal

import langgraph_scenarios as scn
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.errors import GraphRecursionError
from langgraph.graph import START, StateGraph
from langgraph.types import Command
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation import stats
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

SENTINEL = scn.SENTINEL
USAGE = (
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.USAGE_MODEL_CALLS,
    sc.GEN_AI_REQUEST_MODEL,
)
_ids = itertools.count(1)


@pytest.fixture
def instrumentor(provider: TracerProvider) -> Iterator[LangGraphInstrumentor]:
    ins = LangGraphInstrumentor()
    ins.instrument(tracer_provider=provider)
    yield ins
    ins.uninstrument()


def reported(message: AIMessage, model: str, input_tokens: int, output_tokens: int) -> AIMessage:
    """The scripted turn, with the usage and model name a chat model reports."""
    return message.model_copy(
        update={
            "usage_metadata": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
            "response_metadata": {"model_name": model},
        }
    )


def call(name: str, model: str, i: int, o: int, **args: Any) -> AIMessage:
    return reported(scn.call(name, **args), model, i, o)


def leg(input_tokens: int, output_tokens: int, calls: int, model: str) -> dict[str, Any]:
    return {
        sc.GEN_AI_USAGE_INPUT_TOKENS: input_tokens,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: output_tokens,
        sc.USAGE_MODEL_CALLS: calls,
        sc.GEN_AI_REQUEST_MODEL: model,
    }


def carrying_usage(spans: list[ReadableSpan]) -> list[tuple[str, Any, dict[str, Any]]]:
    """(span name, from agent or run status, usage) of every span that carries usage."""
    out = []
    for s in spans:
        a = dict(s.attributes or {})
        u = {k: a[k] for k in USAGE if k in a}
        if u:
            out.append((s.name, a.get(sc.FROM_AGENT) or a.get(sc.RUN_STATUS), u))
    return out


def assert_clean(exporter: InMemorySpanExporter) -> None:
    assert SENTINEL.encode() not in encode_spans(exporter.get_finished_spans()).SerializeToString()
    assert stats.attributes_dropped == {}


def test_swarm_legs_sum_each_agents_calls(
    instrumentor: LangGraphInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """triage: looks up, then hands off (2 calls) -> billing: looks up, answers (2 calls)."""
    triage = scn.agent(
        "triage",
        iter(
            [
                call("lookup_invoice", "gpt-4o-mini", 100, 9, order_id=f"A-1 {SENTINEL}"),
                call("transfer_to_billing", "gpt-4o-mini", 150, 12, reason=f"r {SENTINEL}"),
            ]
        ),
        [scn.lookup_invoice, scn.handoff_tool("billing")],
    )
    billing = scn.agent(
        "billing",
        iter(
            [
                call("lookup_invoice", "gpt-4o", 300, 20, order_id=f"A-2 {SENTINEL}"),
                reported(scn.say("refund done"), "gpt-4o", 340, 31),
            ]
        ),
        [scn.lookup_invoice],
    )
    scn.swarm({"triage": triage, "billing": billing}).invoke(scn.first_input())
    assert carrying_usage(list(exporter.get_finished_spans())) == [
        (sc.SPAN_REQUEST, "triage", leg(250, 21, 2, "gpt-4o-mini")),
        (sc.SPAN_RUN, sc.RUN_STATUS_COMPLETED, leg(640, 51, 2, "gpt-4o")),
    ]
    assert_clean(exporter)


def test_ping_pong_each_leg_is_one_call_until_the_recursion_limit(
    instrumentor: LangGraphInstrumentor, exporter: InMemorySpanExporter
) -> None:
    tokens = itertools.count(10, 10)

    def forever(to: str) -> Iterator[AIMessage]:
        while True:
            yield call(f"transfer_to_{to}", "gpt-4o", next(tokens), 1, reason=f"no {SENTINEL}")

    triage = scn.agent("triage", forever("billing"), [scn.handoff_tool("billing")])
    billing = scn.agent("billing", forever("triage"), [scn.handoff_tool("triage")])
    with pytest.raises(GraphRecursionError):
        scn.swarm({"triage": triage, "billing": billing}).invoke(
            scn.first_input(), {"recursion_limit": 6}
        )
    # Each agent's single call ends its leg with its own handoff: 10, 20, 30, ... input
    # tokens in the order the model was called. The last handoff's destination never ran
    # before the limit: the run's end carries no usage.
    assert carrying_usage(list(exporter.get_finished_spans())) == [
        (sc.SPAN_REQUEST, who, leg(10 * (n + 1), 1, 1, "gpt-4o"))
        for n, who in enumerate(["triage", "billing"] * 3)
    ]
    assert next(tokens) == 70, "the model made exactly the six calls the legs sum"
    assert_clean(exporter)


def test_a_leg_without_a_model_call_and_a_model_without_usage(
    instrumentor: LangGraphInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """router (a plain function: no model call) -> billing, whose model reports no usage
    and then crashes with planted text in the exception."""

    def router(state: scn.NetworkState) -> Command[Literal["billing"]]:
        return Command(goto="billing", update={"messages": [scn.say("to billing")]})

    silent = GenericFakeChatModel(messages=iter([scn.say("thinking")]), disable_streaming=True)

    def billing(state: scn.NetworkState) -> dict:
        silent.invoke(state["messages"])
        raise scn.BillingSystemDown(f"billing system down {SENTINEL}")

    g = StateGraph(scn.NetworkState)
    g.add_node("router", router)
    g.add_node("billing", billing)
    g.add_edge(START, "router")
    with pytest.raises(scn.BillingSystemDown):
        g.compile().invoke({"messages": [("user", f"hi {SENTINEL}")]})
    spans = list(exporter.get_finished_spans())
    requests = [dict(s.attributes or {}) for s in spans if s.name == sc.SPAN_REQUEST]
    assert [r[sc.FROM_AGENT] for r in requests] == ["router"]
    # No model call in router's leg: no usage attributes at all (not zeros).
    assert not any(k in requests[0] for k in USAGE)
    # billing's call counts; its tokens were not reported, so none are claimed.
    assert carrying_usage(spans) == [
        (sc.SPAN_RUN, sc.RUN_STATUS_FAILED, {sc.USAGE_MODEL_CALLS: 1}),
    ]
    assert_clean(exporter)
