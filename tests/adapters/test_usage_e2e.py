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
from agents import Agent, RunConfig, Runner, set_trace_processors
from agents.testing import assistant_message, function_call
from opentelemetry.sdk.trace import TracerProvider
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
