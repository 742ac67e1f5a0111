"""OpenInference agent runs of Agno and smolagents, through the real registry, by hand.

The shapes are the ones read off the real instrumentations (docs/foreign-spans.md;
end to end with the real frameworks: tests/foreign/test_openinference_agno.py and
_smolagents.py). These pin each rule on its own: the caller's span in another export
(one span per export, OpenInference's quickstart: the delegation names only its
destination, and the caller's span is an arrival the judge names it by), a delegation to an agent the manager does not list
(route failed), an Agno agent under another span, and the openai-agents shape unchanged
beside them.
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span
from support.otlp import export_request, otlp_span

from handoffscope.collector.processor.translate import Translators
from handoffscope.collector.processor.translate.openinference import (
    SCOPE_AGENTS,
    SCOPE_AGNO,
    SCOPE_SMOLAGENTS,
)
from handoffscope.instrumentation import semconv as sc

TRACE = os.urandom(16)
START = 10**18


def span(
    name: str, parent: Span | None = None, error: str = "", end: int = 1000, **attrs: Any
) -> Span:
    return otlp_span(
        name,
        {key.replace("__", "."): value for key, value in attrs.items()},
        trace_id=TRACE,
        span_id=os.urandom(8),
        parent_span_id=b"" if parent is None else parent.span_id,
        start_ns=START,
        end_ns=START + end,
        error=error,
    )


def translate(scope: str, *spans: Span) -> list[dict[str, Any]]:
    request = export_request(spans, service=None, scope=scope)
    result = Translators().translate(request, lambda _attrs: "svc")
    assert result is not None and result.foreign == len(spans)
    out = []
    for s in request.resource_spans[0].scope_spans[0].spans:
        values: dict[str, Any] = {}
        for kv in s.attributes:
            value = getattr(kv.value, kv.value.WhichOneof("value"))
            if kv.value.WhichOneof("value") == "array_value":
                value = [v.string_value for v in value.values]
            values[kv.key] = value
        out.append({"name": s.name, **values})
    return out


def requests(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in evidence if e["name"] == sc.SPAN_REQUEST]


def agno_team() -> tuple[Span, Span, Span]:
    team = span(
        "Planning_Team.run",
        end=9000,
        openinference__span__kind="AGENT",
        graph__node__id="d2e478a14d77725d",
        graph__node__name="Planning Team",
        agent__name="Planning Team",
        agno__team__id="planning-team",
        session__id="8ee45cb6-c185-405b-b294-0c2a807ca5ef",
        input__value="SECRET",
    )
    tool = span(
        "delegate_task_to_member",
        team,
        openinference__span__kind="TOOL",
        tool__name="delegate_task_to_member",
        tool__parameters='{"member_id": "planner", "task": "SECRET"}',
    )
    member = span(
        "Planner.run",
        team,
        error="run status: error",
        openinference__span__kind="AGENT",
        graph__node__id="f1185c23beaeeffb",
        graph__node__name="Planner",
        agent__name="Planner",
        graph__node__parent_id="d2e478a14d77725d",
        session__id="8ee45cb6-c185-405b-b294-0c2a807ca5ef",
    )
    return team, tool, member


def test_agno_member_is_a_delegation_from_its_team_and_does_not_end_the_run() -> None:
    team, tool, member = agno_team()
    evidence = translate(SCOPE_AGNO, team, tool, member)
    (run,) = [e for e in evidence if e["name"] == sc.SPAN_RUN]
    assert (run[sc.RUN_STATUS], run[sc.RUN_FINAL_AGENT]) == (
        sc.RUN_STATUS_COMPLETED,
        "Planning Team",
    )
    assert run[sc.GEN_AI_CONVERSATION_ID] == "8ee45cb6-c185-405b-b294-0c2a807ca5ef"
    (delegation,) = requests(evidence)
    assert (delegation[sc.KIND], delegation[sc.FROM_AGENT], delegation[sc.TO_AGENT]) == (
        sc.KIND_DELEGATION,
        "Planning Team",
        "Planner",
    )
    assert delegation[sc.DESTINATION_STARTED] is True
    assert "SECRET" not in repr(evidence)


def test_agno_member_without_its_team_in_the_export_names_only_its_destination() -> None:
    # The parent node id is opaque: without the team's span the translator names no sender
    # (the judge takes the team's arrival, below); the team's own span is that arrival.
    team, _tool, member = agno_team()
    (alone,) = translate(SCOPE_AGNO, member)
    assert (alone["name"], alone[sc.TO_AGENT], alone[sc.KIND]) == (
        sc.SPAN_REQUEST,
        "Planner",
        sc.KIND_DELEGATION,
    )
    assert sc.FROM_AGENT not in alone
    arrivals = [e for e in translate(SCOPE_AGNO, team) if e["name"] == sc.SPAN_ACCEPT]
    assert [(a[sc.GEN_AI_AGENT_NAME], sc.HANDOFF_ID in a) for a in arrivals] == [
        ("Planning Team", False)
    ]


def test_agno_agent_under_another_span_names_only_the_final_agent() -> None:
    step = span("Step.execute", openinference__span__kind="CHAIN")
    agent = span(
        "Writer.run",
        step,
        openinference__span__kind="AGENT",
        graph__node__id="8f2459dbcdce5bcf",
        graph__node__name="Writer",
    )
    evidence = translate(SCOPE_AGNO, step, agent)
    runs = [e for e in evidence if e["name"] == sc.SPAN_RUN]
    assert {sc.RUN_FINAL_AGENT: "Writer"}.items() <= runs[-1].items()
    assert sc.RUN_STATUS not in runs[-1] and requests(evidence) == []


def smol_manager(**managed: str) -> Span:
    return span(
        "CodeAgent.run",
        end=9000,
        openinference__span__kind="AGENT",
        smolagents__max_steps=20,
        **{f"smolagents__managed_agents__{k}__name": v for k, v in managed.items()},
    )


def test_smolagents_managed_agent_is_a_delegation_with_its_route_declared() -> None:
    manager = smol_manager(**{"0": "web_search_agent"})
    step = span("Step 1", manager, openinference__span__kind="CHAIN")
    worker = span(
        "web_search_agent.run", step, openinference__span__kind="AGENT", smolagents__max_steps=10
    )
    (delegation,) = requests(translate(SCOPE_SMOLAGENTS, manager, step, worker))
    assert (delegation[sc.FROM_AGENT], delegation[sc.TO_AGENT], delegation[sc.KIND]) == (
        "CodeAgent",
        "web_search_agent",
        sc.KIND_DELEGATION,
    )
    assert delegation[sc.ROUTE_DECLARED] is True
    assert sc.BOUNDARY_ROUTE not in delegation[sc.UNOBSERVED]


def test_smolagents_agent_the_manager_does_not_list_is_undeclared() -> None:
    manager = smol_manager(**{"0": "other_agent"})
    worker = span(
        "web_search_agent.run", manager, openinference__span__kind="AGENT", smolagents__max_steps=5
    )
    (delegation,) = requests(translate(SCOPE_SMOLAGENTS, manager, worker))
    assert delegation[sc.ROUTE_DECLARED] is False


def test_smolagents_run_that_raised_fails_from_its_step_and_a_later_end_wins() -> None:
    # OpenInference never ends the run span of a run that raised; the step span says it.
    raised = span("Step 2", span("CodeAgent.run"), error="AgentGenerationError: SECRET")
    raised.events.add(name="exception").attributes.add(
        key="exception.type"
    ).value.string_value = "smolagents.utils.AgentGenerationError"
    recovered = span("Step 1", span("CodeAgent.run"), error="AgentExecutionError: SECRET")
    evidence = translate(SCOPE_SMOLAGENTS, raised, recovered)
    assert [(e["name"], e.get(sc.RUN_STATUS)) for e in evidence] == [
        (sc.SPAN_RUN, sc.RUN_STATUS_FAILED)
    ]
    assert "SECRET" not in repr(evidence)


def test_openai_agents_shape_is_unchanged() -> None:
    # graph.node.id is the name, parent_id the sibling that handed over: a handoff.
    workflow = span("Agent workflow", openinference__span__kind="CHAIN")
    billing = span(
        "billing",
        workflow,
        openinference__span__kind="AGENT",
        graph__node__id="billing",
        graph__node__parent_id="triage",
        agent__name="billing",
        session__id="s-1",
    )
    evidence = translate(SCOPE_AGENTS, workflow, billing)
    (handoff,) = requests(evidence)
    assert (handoff[sc.KIND], handoff[sc.FROM_AGENT], handoff[sc.TO_AGENT]) == (
        sc.KIND_HANDOFF,
        "triage",
        "billing",
    )
    assert all(sc.GEN_AI_CONVERSATION_ID not in e for e in evidence)


def usages(evidence: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            e.get(sc.GEN_AI_AGENT_NAME),
            e.get(sc.GEN_AI_USAGE_INPUT_TOKENS),
            e.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS),
            e[sc.USAGE_MODEL_CALLS],
            e.get(sc.GEN_AI_REQUEST_MODEL),
        )
        for e in evidence
        if e["name"] == sc.SPAN_USAGE
    ]


def llm(parent: Span, model: str, prompt: int | None = 10, completion: int = 5) -> Span:
    tokens: dict[str, Any] = {"llm__token_count__completion": completion}
    if prompt is not None:
        tokens["llm__token_count__prompt"] = prompt
    return span(
        "InferenceClientModel.generate",
        parent,
        openinference__span__kind="LLM",
        llm__model_name=model,
        llm__token_count__total=(prompt or 0) + completion,
        input__value="SECRET",
        **tokens,
    )


def test_smolagents_llm_spans_are_usage_of_their_agent_and_agent_totals_are_not() -> None:
    # Shapes read off a real export: each `<name>.run` AGENT span carries its calls' total
    # (`llm.token_count.*`) again; only the LLM spans count.
    manager = span(
        "CodeAgent.run",
        end=9000,
        openinference__span__kind="AGENT",
        smolagents__max_steps=20,
        smolagents__managed_agents__0__name="web_search_agent",
        llm__token_count__prompt=20,
        llm__token_count__completion=10,
    )
    step = span("Step 1", manager, openinference__span__kind="CHAIN")
    worker = span(
        "web_search_agent.run",
        step,
        openinference__span__kind="AGENT",
        smolagents__max_steps=10,
        llm__token_count__prompt=10,
        llm__token_count__completion=5,
    )
    inner_step = span("Step 1", worker, openinference__span__kind="CHAIN")
    spans = (
        manager,
        step,
        llm(step, "scripted-manager"),
        worker,
        inner_step,
        llm(inner_step, "scripted-web", prompt=None),
    )
    evidence = translate(SCOPE_SMOLAGENTS, *spans)
    assert usages(evidence) == [
        ("CodeAgent", 10, 5, 1, "scripted-manager"),
        ("web_search_agent", None, 5, 1, "scripted-web"),  # not reported: absent, not 0
    ]
    assert "SECRET" not in repr(evidence)


def test_agno_llm_span_is_usage_of_the_agent_by_its_name() -> None:
    team, _tool, member = agno_team()
    evidence = translate(SCOPE_AGNO, team, member, llm(member, "gpt-4o"), llm(team, "gpt-4o"))
    assert usages(evidence) == [
        ("Planner", 10, 5, 1, "gpt-4o"),  # graph.node.name, not the opaque node id
        ("Planning Team", 10, 5, 1, "gpt-4o"),
    ]


def test_llm_span_without_its_agent_names_none_and_a_root_one_is_no_run() -> None:
    team, _tool, member = agno_team()
    # Its agent's span went in another export (one span per export): the call still
    # counts, in the run's last leg (no agent named).
    assert usages(translate(SCOPE_AGNO, llm(member, "gpt-4o"))) == [(None, 10, 5, 1, "gpt-4o")]
    # A lone call outside any agent run: no evidence at all (not even the run's end).
    lone = span("OpenAIChat.invoke", openinference__span__kind="LLM", llm__token_count__prompt=3)
    assert translate(SCOPE_AGNO, lone) == []
    # A model name that is a sentence is left out, the counts kept.
    evidence = translate(SCOPE_AGNO, team, llm(team, "a model with spaces"))
    assert usages(evidence) == [("Planning Team", 10, 5, 1, None)]
