"""Turns of one conversation, end to end: where each run started and ended, and whether it
continued with the agent that held the work (docs/semconv.md, "Turns").

The real Agents SDK runner, scripted models, the shipped OTLP/HTTP pipeline into a real
collector subprocess; the conversation is the SDK's `RunConfig.group_id`, each
`Runner.run` one turn — the seed's support desk: a triage agent that routes to a refund
agent and a billing agent. The turns:

1. starts at triage, which hands the customer to refund (the conversation's first run:
   triage becomes a learned entry agent);
2. starts at triage again, which hands straight back to refund — the agent that already
   held the work: **rerouted** (the app should have started at `result.last_agent`);
3. starts at `result.last_agent` (refund), as the SDK's docs advise: **continued**;
4. starts at billing, neither the previous final agent nor an entry agent: **diverted**;
5. starts at triage, which routes to refund while billing held the work: a new request
   routed afresh, **continued**.

The same facts are asserted on each run's detail, on the conversation's view, and as the
weekly review's counts for the service; the planted sentinel is in no answer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai_agents_scenarios as oa
from agents import Agent, Runner, set_trace_processors
from agents.testing import ScriptedModel, assistant_message, function_call
from opentelemetry.sdk.trace import TracerProvider
from support.polling import eventually
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

CONVERSATION = "conv-seed003"


def _desk(model: ScriptedModel) -> dict[str, Agent[Any]]:
    refund = Agent(name="refund", instructions=oa.planted("refund"), model=model)
    billing = Agent(
        name="billing", instructions=oa.planted("billing"), model=model, handoffs=[refund]
    )
    triage = Agent(
        name="triage", instructions=oa.planted("triage"), model=model, handoffs=[refund, billing]
    )
    return {"triage": triage, "refund": refund, "billing": billing}


def _turn(start: str, hand_to: str | None, n: int) -> tuple[str, str]:
    """One turn starting at `start` (handing to `hand_to` first, if given): (run id, last agent)."""
    script: list[Any] = []
    if hand_to is not None:
        script.append([function_call(f"transfer_to_{hand_to}", {}, call_id=f"c{n}")])
    script.append([assistant_message(oa.planted(f"answer-{n}"))])
    agents = _desk(ScriptedModel(script, emit_traces=True))
    trace_id, config = oa.config(True, group=CONVERSATION)
    result = asyncio.run(Runner.run(agents[start], oa.planted(f"turn-{n}"), run_config=config))
    return trace_id, result.last_agent.name


def test_turns_of_a_conversation_say_where_they_started_and_how_they_follow(
    collector: Any, otlp_provider: TracerProvider, fetch_run: Any
) -> None:
    set_trace_processors([])
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=otlp_provider, replace_processors=True)
    try:
        first, last = _turn("triage", "refund", 1)
        rerouted, last = _turn("triage", "refund", 2)
        continued, last = _turn(last, None, 3)  # the SDK's advice: start at last_agent
        assert last == "refund"
        diverted, _ = _turn("billing", None, 4)
        afresh, _ = _turn("triage", "refund", 5)
    finally:
        inst.uninstrument()
        set_trace_processors([])
    otlp_provider.force_flush()

    expected = {
        first: ("triage", "refund", sc.CONTINUITY_FIRST, None),
        rerouted: ("triage", "refund", sc.CONTINUITY_REROUTED, first),
        continued: ("refund", "refund", sc.CONTINUITY_CONTINUED, rerouted),
        diverted: ("billing", "billing", sc.CONTINUITY_DIVERTED, continued),
        afresh: ("triage", "refund", sc.CONTINUITY_CONTINUED, diverted),
    }
    answers: list[str] = []
    for run_id, (start, final, continuity, previous) in expected.items():
        run = fetch_run(run_id, lambda r: r["status"] == "completed")
        answers.append(json.dumps(run))
        assert run["conversation_id"] == CONVERSATION
        assert (run["start_agent"], run["final_agent"]) == (start, final), run_id
        assert (run["continuity"], run["previous_run_id"]) == (continuity, previous), run_id

    conversation = collector.api(f"/api/v1/conversations/{CONVERSATION}")
    answers.append(json.dumps(conversation))
    assert [r["run_id"] for r in conversation["runs"]] == list(expected)
    assert [r["position"] for r in conversation["runs"]] == [1, 2, 3, 4, 5]
    assert [
        (r["start_agent"], r["final_agent"], r["continuity"]) for r in conversation["runs"]
    ] == [(start, final, continuity) for start, final, continuity, _ in expected.values()]
    assert conversation["counts"] == {
        sc.CONTINUITY_FIRST: 1,
        sc.CONTINUITY_CONTINUED: 2,
        sc.CONTINUITY_REROUTED: 1,
        sc.CONTINUITY_DIVERTED: 1,
    }
    assert conversation["services"] == ["adapter-e2e"]
    # The re-routed turn went back through triage: its first handoff went to refund, where
    # the previous turn had ended.
    second = conversation["runs"][1]
    assert (second["first_to_agent"], second["previous_final_agent"]) == ("refund", "refund")

    weekly = collector.api("/api/v1/review/weekly", weeks=1)
    answers.append(json.dumps(weekly))
    assert [
        (w["service"], w["turns"], w["continued"], w["rerouted"], w["diverted"])
        for w in weekly["continuity"]
    ] == [("adapter-e2e", 4, 2, 1, 1)]
    assert weekly["continuity"][0]["rerouted_rate"] == 0.25

    assert collector.get("/api/v1/conversations/no-such-conversation").status_code == 404
    assert_content_free(
        collector,
        oa.SENTINEL,
        stored="refund",
        answers={f"answer {i}": a for i, a in enumerate(answers)},
    )


def test_declared_entry_agents_tell_a_reroute_from_a_diversion(
    collector: Any, otlp_provider: TracerProvider, fetch_run: Any
) -> None:
    """This conversation's first turn starts at billing, so the collector alone would learn
    billing, not triage, as an entry agent: a second turn starting at triage would read
    diverted. The app declares triage an entry agent (`instrument(entry_agents=...)`): the
    turn that goes back through triage to refund reads re-routed."""
    set_trace_processors([])
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=otlp_provider, replace_processors=True, entry_agents=["triage"])
    try:
        first, _ = _turn("billing", "refund", 1)
        second, _ = _turn("triage", "refund", 2)
    finally:
        inst.uninstrument()
        set_trace_processors([])
    otlp_provider.force_flush()
    fetch_run(first, lambda r: r["status"] == "completed")
    run = fetch_run(second, lambda r: r["status"] == "completed")
    assert run["entry_agents"] == ["triage"]
    assert (run["start_agent"], run["first_to_agent"], run["previous_final_agent"]) == (
        "triage",
        "refund",
        "refund",
    )
    assert run["continuity"] == sc.CONTINUITY_REROUTED


def test_langgraph_threads_are_conversations(collector: Any, otlp_provider: TracerProvider) -> None:
    """Real LangGraph threads (a checkpointer, `thread_id` in the config): each `invoke` of a
    thread is one turn. langgraph-swarm's own router starts a thread's next turn at its
    `active_agent` — continued; a graph whose START always goes to triage sends the next
    turn back through triage, which hands straight back to refund — re-routed."""
    import langgraph_scenarios as lg
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph_swarm import create_handoff_tool, create_swarm

    from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

    def turn(graph: Any, thread: str, n: int) -> None:
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"messages": [("user", f"turn {n} {lg.SENTINEL}")]}, config)

    ins = LangGraphInstrumentor()
    ins.instrument(tracer_provider=otlp_provider)
    try:
        from langchain.agents import create_agent

        swarm = create_swarm(
            [
                create_agent(
                    lg.scripted(iter([lg.call("transfer_to_refund")])),
                    tools=[create_handoff_tool(agent_name="refund")],
                    name="triage",
                ),
                create_agent(
                    lg.scripted(iter([lg.say("refund 1"), lg.say("refund 2")])),
                    tools=[create_handoff_tool(agent_name="triage")],
                    name="refund",
                ),
            ],
            default_active_agent="triage",
        ).compile(checkpointer=InMemorySaver())
        turn(swarm, "thread-swarm", 1)
        turn(swarm, "thread-swarm", 2)

        always_triage = lg.swarm(
            {
                "triage": lg.agent(
                    "triage",
                    iter(
                        [
                            lg.call("transfer_to_refund", reason="r1"),
                            lg.call("transfer_to_refund", reason="r2"),
                        ]
                    ),
                    [lg.handoff_tool("refund")],
                ),
                "refund": lg.agent("refund", iter([lg.say("one"), lg.say("two")]), []),
            },
            checkpointer=InMemorySaver(),
        )
        turn(always_triage, "thread-triage", 1)
        turn(always_triage, "thread-triage", 2)
    finally:
        ins.uninstrument()
    otlp_provider.force_flush()

    answers: list[str] = []

    def turns(thread: str) -> list[tuple]:
        body = collector.api(f"/api/v1/conversations/{thread}")
        answers.append(json.dumps(body))
        return [(r["start_agent"], r["final_agent"], r["continuity"]) for r in body["runs"]]

    expected = {
        "thread-swarm": [
            ("triage", "refund", sc.CONTINUITY_FIRST),
            ("refund", "refund", sc.CONTINUITY_CONTINUED),
        ],
        "thread-triage": [
            ("triage", "refund", sc.CONTINUITY_FIRST),
            ("triage", "refund", sc.CONTINUITY_REROUTED),
        ],
    }
    for thread, want in expected.items():
        got = eventually(
            lambda thread=thread: turns(thread),
            lambda t, want=want: t == want,
            or_last=True,
        )
        assert got == want, thread
    assert lg.SENTINEL not in "".join(answers) + collector.log()
