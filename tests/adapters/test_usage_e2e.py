"""Usage end to end: the real Agents SDK runner and a real LangGraph graph, scripted models
reporting known usage, the shipped OTLP/HTTP pipeline into a real collector subprocess.

The four usage columns of the stored spans (read back from the DuckDB file after the
collector stopped) hold exactly each leg's sums on the span that ended the leg, the
verdicts are what the evidence says, and the planted sentinel is in no API answer, log
line or stored byte.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import langgraph_scenarios as lg
import openai_agents_scenarios as oa
import pytest
from agents import Agent, RunConfig, Runner, set_trace_processors
from agents.testing import assistant_message, function_call
from opentelemetry.sdk.trace import TracerProvider
from support.collector import metric_value
from support.privacy import assert_content_free, stored_text
from support.stores import is_dsn
from test_usage_langgraph import call, reported
from test_usage_openai_agents import NamedModel, lookup_order, step

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

COLUMNS = (
    "gen_ai_usage_input_tokens",
    "gen_ai_usage_output_tokens",
    "usage_model_calls",
    "gen_ai_request_model",
)


def sdk_run(otlp_provider: TracerProvider) -> str:
    """triage: tool call, then handoff (2 calls) -> billing answers (1 call)."""
    set_trace_processors([])
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=otlp_provider, replace_processors=True)
    try:
        triage_model = NamedModel(
            "gpt-4.1-mini",
            [
                step(
                    [function_call("lookup_order", {"order": oa.planted("a")}, call_id="e1")],
                    101,
                    7,
                ),
                step([function_call("transfer_to_billing", {}, call_id="e2")], 130, 11),
            ],
        )
        billing = Agent(
            name="billing",
            instructions=oa.planted("b"),
            model=NamedModel("gpt-4.1", [step([assistant_message(oa.planted("done"))], 260, 40)]),
        )
        triage = Agent(
            name="triage",
            instructions=oa.planted("t"),
            model=triage_model,
            tools=[lookup_order],
            handoffs=[billing],
        )
        config = RunConfig(workflow_name="support", trace_include_sensitive_data=True)
        result = asyncio.run(Runner.run(triage, oa.planted("prompt"), run_config=config))
        return str(inst.run_id(result))
    finally:
        inst.uninstrument()
        set_trace_processors([])


def graph_run(otlp_provider: TracerProvider) -> None:
    """triage: looks up, hands off (2 calls) -> billing answers (1 call)."""
    ins = LangGraphInstrumentor()
    ins.instrument(tracer_provider=otlp_provider)
    try:
        triage = lg.agent(
            "triage",
            iter(
                [
                    call("lookup_invoice", "gpt-4o-mini", 100, 9, order_id=f"A {lg.SENTINEL}"),
                    call("transfer_to_billing", "gpt-4o-mini", 150, 12, reason=lg.SENTINEL),
                ]
            ),
            [lg.lookup_invoice, lg.handoff_tool("billing")],
        )
        billing = lg.agent(
            "billing", iter([reported(lg.say("refund done"), "gpt-4o", 340, 31)]), []
        )
        lg.swarm({"triage": triage, "billing": billing}).invoke(lg.first_input())
    finally:
        ins.uninstrument()


def test_usage_columns_are_stored_per_leg(
    collector: Any, otlp_provider: TracerProvider, fetch_run: Any
) -> None:
    sdk_run_id = sdk_run(otlp_provider)
    graph_run(otlp_provider)
    otlp_provider.force_flush()

    answers: list[str] = []
    sdk = fetch_run(sdk_run_id, lambda r: r["status"] == "completed" and r["handoffs"])
    answers.append(json.dumps(sdk))
    # A careful reader: one declared, closed, admitted handoff, and a completed run that no
    # verifier checked.
    assert [(h["from_agent"], h["to_agent"], h["verdict"]) for h in sdk["handoffs"]] == [
        ("triage", "billing", sc.HEALTHY)
    ]
    assert sdk["verdict"] == sc.UNVERIFIED
    runs = collector.api("/api/v1/runs")
    answers.append(json.dumps(runs))
    graph_ids = [r["run_id"] for r in runs["runs"] if r["run_id"] != sdk_run_id]
    assert len(graph_ids) == 1
    graph = fetch_run(graph_ids[0], lambda r: r["status"] == "completed" and r["handoffs"])
    answers.append(json.dumps(graph))
    assert [(h["from_agent"], h["to_agent"], h["verdict"]) for h in graph["handoffs"]] == [
        ("triage", "billing", sc.HEALTHY)
    ]
    assert graph["verdict"] == sc.UNVERIFIED

    assert_content_free(
        collector,
        oa.SENTINEL,
        stored="billing",
        answers={f"answer {i}": a for i, a in enumerate(answers)},
    )
    # The graph's scenarios plant their own sentinel: none of it in any answer or byte.
    assert lg.SENTINEL not in "".join(answers) + collector.log()
    if is_dsn(collector.store):  # --store postgresql: every stored value
        assert lg.SENTINEL not in stored_text(collector.store)
    else:
        db = Path(collector.db_path)
        for path in (p for p in db.parent.rglob("*") if p.is_file()):
            assert lg.SENTINEL.encode() not in path.read_bytes(), path.name
        assert lg.SENTINEL not in stored_text(db)

    # Every span that carries usage, read back from the store (no bound parameter: DuckDB
    # and PostgreSQL spell placeholders differently).
    rows = collector.query(
        "SELECT handoff_run_id, name, handoff_from_agent, run_status, " + ", ".join(COLUMNS) + " "
        "FROM spans WHERE usage_model_calls IS NOT NULL ORDER BY start_ns, name"
    )

    def stored(run_id: str) -> list[tuple[Any, ...]]:
        return [tuple(r[1:]) for r in rows if r[0] == run_id]

    assert stored(sdk_run_id) == [
        (sc.SPAN_REQUEST, "triage", None, 231, 18, 2, "gpt-4.1-mini"),
        (sc.SPAN_RUN, None, sc.RUN_STATUS_COMPLETED, 260, 40, 1, "gpt-4.1"),
    ]
    assert stored(graph_ids[0]) == [
        (sc.SPAN_REQUEST, "triage", None, 250, 21, 2, "gpt-4o-mini"),
        (sc.SPAN_RUN, None, sc.RUN_STATUS_COMPLETED, 340, 31, 1, "gpt-4o"),
    ]
    # No other span carries usage: only the span that ends a leg does.
    assert len(rows) == 4


def ping_pong_run(otlp_provider: TracerProvider, model_name: str) -> str:
    """a <-> b bouncing until max_turns: every leg one call of `model_name`."""
    set_trace_processors([])
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=otlp_provider, replace_processors=True)
    try:
        model = NamedModel(
            model_name,
            [
                step([function_call(f"transfer_to_{to}", {}, call_id=f"p{i}")], 10 * i, i)
                for i, to in enumerate("baba", start=1)
            ],
        )
        a = Agent(name="a", model=model, instructions=oa.planted("a"))
        b = Agent(name="b", model=model, handoffs=[a])
        a.handoffs = [b]
        config = RunConfig(workflow_name="pingpong", trace_include_sensitive_data=True)
        try:
            asyncio.run(Runner.run(a, oa.planted("go"), max_turns=4, run_config=config))
        except Exception as e:  # MaxTurnsExceeded: the run is cut, as the SDK documents
            return str(inst.run_id(e))
        raise AssertionError("the ping-pong was not cut")
    finally:
        inst.uninstrument()
        set_trace_processors([])


def figures(u: dict[str, Any] | None) -> tuple | None:
    return None if u is None else (u["input_tokens"], u["output_tokens"], u["model_calls"])


def test_run_leg_loop_and_edge_usage_through_the_api(
    collector: Any, otlp_provider: TracerProvider, fetch_run: Any
) -> None:
    """What each leg, run, loop and edge cost, as the API answers it, equals the sums of
    what the scripted models reported; a model without a price has no cost, not a guess."""
    from handoffscope.collector.prices import PriceBook

    book = PriceBook.load()
    sdk_run_id = sdk_run(otlp_provider)
    loop_id = ping_pong_run(otlp_provider, "gpt-4o")
    unknown_id = ping_pong_run(otlp_provider, "our-private-model-v3")
    otlp_provider.force_flush()

    sdk = fetch_run(sdk_run_id, lambda r: r["status"] == "completed" and r["handoffs"])
    # triage's leg (two calls) belongs to no handoff; the handoff gave billing its leg.
    [h] = sdk["handoffs"]
    assert figures(h["usage"]) == (260, 40, 1) and h["usage"]["model"] == "gpt-4.1"
    assert h["usage"]["cost_usd"] == pytest.approx(book.cost("gpt-4.1", 260, 40))
    assert figures(sdk["usage"]) == (231 + 260, 18 + 40, 3)
    assert sdk["usage"]["cost_usd"] == pytest.approx(
        book.cost("gpt-4.1-mini", 231, 18) + book.cost("gpt-4.1", 260, 40)
    )
    assert sdk["usage"]["unpriced_models"] == []

    loop = fetch_run(loop_id, lambda r: r["status"] == sc.RUN_STATUS_MAX_TURNS)
    assert loop["verdict"] == sc.LOOP
    # Each handoff gave its destination one call: b 20, a 30, b 40; the fourth was cut
    # before its destination called the model (no usage, not 0).
    assert [figures(h["usage"]) for h in loop["handoffs"]] == [
        (20, 2, 1),
        (30, 3, 1),
        (40, 4, 1),
        None,
    ]
    assert figures(loop["usage"]) == (100, 10, 4)
    # Burned: the legs from the first repeat on, as the handoffs themselves say.
    first = next(i for i, h in enumerate(loop["handoffs"]) if h["loop"])
    burned = [h["usage"] for h in loop["handoffs"][first:] if h["usage"]]
    want = (
        sum(u["input_tokens"] for u in burned),
        sum(u["output_tokens"] for u in burned),
        len(burned),
    )
    assert figures(loop["loop_usage"]) == want
    assert 0 < want[0] < 100  # something was burned, not everything
    loops = collector.api("/api/v1/loops")["loops"]
    [listed] = [x for x in loops if x["run_id"] == loop_id]
    assert listed["tokens_burned"] == want[0] + want[1]
    assert listed["burned"]["cost_usd"] == pytest.approx(
        sum(book.cost("gpt-4o", u["input_tokens"], u["output_tokens"]) for u in burned)
    )

    unknown = fetch_run(unknown_id, lambda r: r["status"] == sc.RUN_STATUS_MAX_TURNS)
    assert figures(unknown["usage"]) == (100, 10, 4)
    assert unknown["usage"]["cost_usd"] is None
    assert unknown["usage"]["unpriced_models"] == ["our-private-model-v3"]

    # The edges: a -> b is given b's legs (20 and 40), in both ping-pong runs.
    edges = collector.api("/api/v1/edges")["edges"]
    [ab] = [e for e in edges if (e["from_agent"], e["to_agent"]) == ("a", "b")]
    assert figures(ab["usage"]) == (2 * 60, 2 * 6, 4)
    assert ab["usage"]["cost_usd"] == pytest.approx(book.cost("gpt-4o", 60, 6))
    assert ab["usage"]["unpriced"] == 2  # the unknown model's two legs, left out
    # The share wasted: the a -> b handoffs judged unhealthy (the loop's, from its first
    # repeat; the first a -> b, before anything repeated, was healthy), as the runs say.
    wasted = [
        h["usage"]
        for r in (loop, unknown)
        for h in r["handoffs"]
        if (h["from_agent"], h["to_agent"]) == ("a", "b") and h["verdict"] != sc.HEALTHY
    ]
    assert 0 < len(wasted) < 4
    assert figures(ab["unhealthy_usage"]) == (
        sum(u["input_tokens"] for u in wasted),
        sum(u["output_tokens"] for u in wasted),
        len(wasted),
    )

    # The weekly review: what runs that ended in a loop cost, and their share.
    spend = collector.api("/api/v1/review/weekly")["spend"]
    [looped] = [s for s in spend if s["verdict"] == sc.LOOP]
    assert looped["runs"] == 2 and figures(looped["usage"]) == (200, 20, 8)
    assert looped["usage"]["unpriced"] == 1
    this_week = [s for s in spend if s["week"] == looped["week"]]
    assert sum(s["share"] for s in this_week) == pytest.approx(1.0)
    # /metrics counts the same as the review's spend.
    text = collector.metrics_text()
    [service] = {r["service"] for r in collector.api("/api/v1/runs")["runs"]}
    labels = {"service": service, "verdict": sc.LOOP}
    assert metric_value(text, "handoffscope_tokens_total", direction="input", **labels) == 200
    assert metric_value(text, "handoffscope_model_calls_total", **labels) == 8
    assert metric_value(text, "handoffscope_cost_usd_total", **labels) == pytest.approx(
        looped["usage"]["cost_usd"]
    )
    assert_content_free(
        collector,
        oa.SENTINEL,
        stored="billing",
        answers={"loops": json.dumps(loops), "edges": json.dumps(edges), "loop": json.dumps(loop)},
    )


def test_a_langgraph_loop_costs_what_its_models_reported_through_the_api(
    collector: Any, otlp_provider: TracerProvider, fetch_run: Any
) -> None:
    """A real LangGraph swarm bouncing triage <-> billing until its recursion limit: each
    agent's one call per leg (10, 20, 30, ... input tokens, in call order) is the leg its
    handoff gave; the run is their sum, the loop what came after its first repeat, and
    each edge the legs its handoffs gave."""
    import itertools
    from collections.abc import Iterator

    from langchain_core.messages import AIMessage
    from langgraph.errors import GraphRecursionError

    from handoffscope.collector.prices import PriceBook

    tokens = itertools.count(10, 10)

    def forever(to: str) -> Iterator[AIMessage]:
        while True:
            yield call(f"transfer_to_{to}", "gpt-4o", next(tokens), 1, reason=lg.SENTINEL)

    ins = LangGraphInstrumentor()
    ins.instrument(tracer_provider=otlp_provider)
    try:
        triage = lg.agent("triage", forever("billing"), [lg.handoff_tool("billing")])
        billing = lg.agent("billing", forever("triage"), [lg.handoff_tool("triage")])
        try:
            lg.swarm({"triage": triage, "billing": billing}).invoke(
                lg.first_input(), {"recursion_limit": 6}
            )
        except GraphRecursionError:
            pass
        else:
            raise AssertionError("the ping-pong was not cut")
    finally:
        ins.uninstrument()
    otlp_provider.force_flush()
    assert next(tokens) == 70  # six calls: 10 .. 60

    [run_id] = [r["run_id"] for r in collector.api("/api/v1/runs")["runs"]]
    run = fetch_run(run_id, lambda r: r["verdict"] == sc.LOOP and len(r["handoffs"]) == 6)
    assert run["verdict"] == sc.LOOP
    # Handoff i (triage, billing, triage, ...) is sent by the agent whose call i made it;
    # the leg it gives is its destination's next call: 20, 30, ..., 60, and none for the
    # last (the limit stopped the graph before billing's next call).
    handoffs = run["handoffs"]
    assert [figures(h["usage"]) for h in handoffs] == [
        *[(10 * (i + 2), 1, 1) for i in range(5)],
        None,
    ]
    assert figures(run["usage"]) == (210, 6, 6)  # 10 + ... + 60: every leg, the first too
    book = PriceBook.load()
    assert run["usage"]["cost_usd"] == pytest.approx(
        sum(book.cost("gpt-4o", 10 * n, 1) for n in range(1, 7))
    )
    first = next(i for i, h in enumerate(handoffs) if h["loop"])
    burned = [h["usage"] for h in handoffs[first:] if h["usage"]]
    assert figures(run["loop_usage"]) == (
        sum(u["input_tokens"] for u in burned),
        len(burned),
        len(burned),
    )
    [listed] = collector.api("/api/v1/loops")["loops"]
    assert listed["tokens_burned"] == sum(u["input_tokens"] + 1 for u in burned)
    # Edges: triage -> billing gave billing's legs (20, 40, 60), billing -> triage
    # triage's (30, 50).
    edges = {(e["from_agent"], e["to_agent"]): e for e in collector.api("/api/v1/edges")["edges"]}
    assert figures(edges[("triage", "billing")]["usage"]) == (120, 3, 3)
    assert figures(edges[("billing", "triage")]["usage"]) == (80, 2, 2)
    answers = json.dumps([run, listed, list(edges.values())])
    assert lg.SENTINEL not in answers + collector.log()
