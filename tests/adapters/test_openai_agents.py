"""OpenAI Agents SDK adapter, in memory: the real `Runner` offline, exact spans out.

Each test drives a scripted app (openai_agents_scenarios.py) through the real SDK runner
and asserts the evidence spans exactly: names, attribute names, value types. Verdicts are
checked here with the pure `classify` / `find_loops` over the merged attributes, and again
end to end through the collector in test_openai_agents_e2e.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any

import openai_agents_scenarios as scn
import pytest
from agents import Agent, RunConfig, Runner, handoff, set_trace_processors
from agents.handoffs import Handoff
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tracing import TracingProcessor, add_trace_processor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import HandoffEvidence, classify, stats
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.classify import HandoffStep, find_loops
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from handoffscope.instrumentation.openai_agents.history import FilterAttribute


@pytest.fixture
def instrumentor(provider: TracerProvider) -> Iterator[OpenAIAgentsInstrumentor]:
    # Ours only: the SDK's default processor would try to export to OpenAI over the network.
    set_trace_processors([])
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=provider, replace_processors=True)
    yield inst
    inst.uninstrument()
    set_trace_processors([])


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def spans_of(exporter: InMemorySpanExporter, run_id: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.attributes.get(sc.RUN_ID) == run_id]


def named(spans: list[ReadableSpan], name: str) -> list[dict[str, Any]]:
    return [dict(s.attributes) for s in spans if s.name == name]


def types(attrs: dict[str, Any]) -> dict[str, type]:
    return {k: type(v) for k, v in attrs.items()}


def evidence(spans: list[ReadableSpan]) -> dict[str, HandoffEvidence]:
    """Merge handoff spans by id the way the collector does (later facts fill in)."""
    merged: dict[str, HandoffEvidence] = {}
    for s in spans:
        a = s.attributes
        hid = a.get(sc.HANDOFF_ID)
        if hid is None:
            continue
        ev = merged.setdefault(hid, HandoffEvidence(run_id=a[sc.RUN_ID], handoff_id=hid))
        ev.from_agent = a.get(sc.FROM_AGENT, ev.from_agent)
        ev.to_agent = a.get(sc.TO_AGENT, ev.to_agent)
        ev.route_declared = a.get(sc.ROUTE_DECLARED, ev.route_declared)
        ev.route_goto = a.get(sc.ROUTE_GOTO, ev.route_goto)
        ev.control_before = a.get(sc.CONTROL_BEFORE, ev.control_before)
        ev.control_after = a.get(sc.CONTROL_AFTER, ev.control_after)
        ev.destination_started = a.get(sc.DESTINATION_STARTED, ev.destination_started)
        ev.first_seen_ns = ev.first_seen_ns or s.start_time
    return merged


def steps(spans: list[ReadableSpan]) -> list[HandoffStep]:
    return [
        HandoffStep(
            a[sc.HANDOFF_ID],
            a[sc.FROM_AGENT],
            a[sc.TO_AGENT],
            a[sc.FINGERPRINT],
            a[sc.STATE_VERSION],
        )
        for a in named(spans, sc.SPAN_REQUEST)
    ]


REQUEST_TYPES = {
    sc.RUN_ID: str,
    sc.HANDOFF_ID: str,
    sc.FROM_AGENT: str,
    sc.TO_AGENT: str,
    sc.TURN: int,
    sc.FINGERPRINT: str,
    sc.STATE_VERSION: int,
    sc.ROUTE_DECLARED: bool,
    sc.ROUTE_GOTO: str,
    sc.CONTROL_BEFORE: str,
    # What SDK spans cannot see (the tool protocol and context checks): not_observed.
    sc.UNOBSERVED: tuple,
}


# -- healthy ------------------------------------------------------------------------------


USAGE_COUNTS = (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.USAGE_MODEL_CALLS)


def test_healthy_handoff_is_two_spans_with_exact_attributes(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    run_id = run(scn.healthy(instrumentor, sensitive=True))
    spans = spans_of(exporter, run_id)
    assert [s.name for s in spans] == [
        sc.SPAN_RUN,
        sc.SPAN_REQUEST,
        sc.SPAN_ACCEPT,
        sc.SPAN_RUN,
        sc.SPAN_OUTCOME,
    ]
    start, request, accept, end, outcome = (dict(s.attributes) for s in spans)

    assert types(start) == {
        sc.RUN_ID: str,
        sc.RUN_STATUS: str,
        sc.RUN_STARTED: int,
        sc.GEN_AI_AGENT_NAME: str,
        sc.GEN_AI_CONVERSATION_ID: str,
    }
    assert (start[sc.RUN_STATUS], start[sc.GEN_AI_AGENT_NAME]) == ("started", "triage")
    assert start[sc.GEN_AI_CONVERSATION_ID] == "conv-healthy"

    # Request and transfer are known together (at the SDK handoff span's end): one span.
    # The scripted model reports one request and no tokens, and has no name: triage's leg
    # is one call of 0 tokens (test_usage_openai_agents.py checks other counts).
    assert types(request) == {
        **REQUEST_TYPES,
        sc.HISTORY_ITEMS_FORWARDED: int,
        sc.HISTORY_ITEMS_TOTAL: int,
        sc.GEN_AI_USAGE_INPUT_TOKENS: int,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: int,
        sc.USAGE_MODEL_CALLS: int,
    }
    assert [request[k] for k in USAGE_COUNTS] == [0, 0, 1]
    handoff_id = request[sc.HANDOFF_ID]
    assert request[sc.FROM_AGENT] == request[sc.CONTROL_BEFORE] == "triage"
    assert request[sc.TO_AGENT] == request[sc.ROUTE_GOTO] == "billing"
    assert request[sc.ROUTE_DECLARED] is True
    assert (request[sc.TURN], request[sc.STATE_VERSION]) == (1, 0)
    assert len(request[sc.FINGERPRINT]) == 16
    # prompt + the handoff call + its output went in; the filter kept the prompt only.
    assert (request[sc.HISTORY_ITEMS_FORWARDED], request[sc.HISTORY_ITEMS_TOTAL]) == (1, 3)

    assert accept == {
        sc.RUN_ID: run_id,
        sc.HANDOFF_ID: handoff_id,
        sc.DESTINATION_STARTED: True,
        sc.VERDICT: sc.HEALTHY,
        sc.GEN_AI_AGENT_NAME: "billing",
        sc.CONTROL_AFTER: "billing",
    }
    assert end == {
        sc.RUN_ID: run_id,
        sc.RUN_STATUS: sc.RUN_STATUS_COMPLETED,
        sc.RUN_FINAL_AGENT: "billing",
        sc.RUN_TURNS: 3,
        sc.GEN_AI_USAGE_INPUT_TOKENS: 0,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 0,
        sc.USAGE_MODEL_CALLS: 2,
    }
    assert outcome == {
        sc.RUN_ID: run_id,
        sc.OUTCOME_VERIFIER: "ticket_updated",
        sc.OUTCOME_RESULT: sc.OUTCOME_PASS,
        sc.OUTCOME_RECEIPT_ID: "rcpt-1",
    }
    assert classify(evidence(spans)[handoff_id]).verdict == sc.HEALTHY
    assert stats.attributes_dropped == {} and stats.errors == 0


def test_group_id_can_be_the_run_id(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    set_trace_processors([])
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=provider, replace_processors=True, run_id_source="group")
    try:
        run(scn.healthy(inst, sensitive=False, group="conv-77"))
    finally:
        inst.uninstrument()
    names = [s.name for s in spans_of(exporter, "conv-77")]
    assert names == [sc.SPAN_RUN, sc.SPAN_REQUEST, sc.SPAN_ACCEPT, sc.SPAN_RUN, sc.SPAN_OUTCOME]


# -- history forwarded: both filters, and the SDK's precedence between them ---------------


def _two_agent_run(
    handoff_filter: Any = None, config_filter: Any = None
) -> tuple[RunConfig, Agent[Any]]:
    model = ScriptedModel(
        [
            [function_call("transfer_to_billing", {}, call_id="call_f1")],
            [assistant_message("done")],
        ]
    )
    billing = Agent(name="billing", model=model)
    target: Any = handoff(billing, input_filter=handoff_filter) if handoff_filter else billing
    triage = Agent(name="triage", model=model, handoffs=[target])
    return RunConfig(handoff_input_filter=config_filter), triage


def _request(exporter: InMemorySpanExporter) -> dict[str, Any]:
    (request,) = [
        dict(s.attributes) for s in exporter.get_finished_spans() if s.name == sc.SPAN_REQUEST
    ]
    return request


def test_run_config_filter_is_counted(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    calls: list[int] = []

    def drop_turn_items(data: Any) -> Any:
        calls.append(1)
        return data.clone(new_items=data.new_items[:1])

    run_config, triage = _two_agent_run(config_filter=drop_turn_items)
    run(Runner.run(triage, "hello", run_config=run_config))
    assert calls == [1]
    request = _request(exporter)
    assert (request[sc.HISTORY_ITEMS_FORWARDED], request[sc.HISTORY_ITEMS_TOTAL]) == (2, 3)


def test_per_handoff_filter_overrides_run_config_filter(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    config_calls: list[int] = []

    def config_filter(data: Any) -> Any:
        config_calls.append(1)
        return data

    async def async_handoff_filter(data: Any) -> Any:  # async filters are awaited by the SDK
        return data.clone(pre_handoff_items=(), new_items=())

    run_config, triage = _two_agent_run(
        handoff_filter=async_handoff_filter, config_filter=config_filter
    )
    run(Runner.run(triage, "hello", run_config=run_config))
    assert config_calls == []
    request = _request(exporter)
    assert (request[sc.HISTORY_ITEMS_FORWARDED], request[sc.HISTORY_ITEMS_TOTAL]) == (1, 3)


def test_without_a_filter_history_is_not_claimed(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    run_config, triage = _two_agent_run()
    run(Runner.run(triage, "hello", run_config=run_config))
    request = _request(exporter)
    assert sc.HISTORY_ITEMS_FORWARDED not in request and sc.HISTORY_ITEMS_TOTAL not in request


# -- loops --------------------------------------------------------------------------------


def test_ping_pong_until_max_turns_is_a_loop(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    run_id = run(scn.ping_pong(instrumentor, sensitive=False, max_turns=4))
    spans = spans_of(exporter, run_id)
    requests = named(spans, sc.SPAN_REQUEST)
    assert [(r[sc.FROM_AGENT], r[sc.TO_AGENT], r[sc.TURN]) for r in requests] == [
        ("agent_a", "agent_b", 1),
        ("agent_b", "agent_a", 2),
        ("agent_a", "agent_b", 3),
        ("agent_b", "agent_a", 4),
    ]
    # No tool ran: same task, same state every time.
    assert {r[sc.STATE_VERSION] for r in requests} == {0}
    assert len({r[sc.FINGERPRINT] for r in requests}) == 1
    end = named(spans, sc.SPAN_RUN)[-1]
    assert (end[sc.RUN_STATUS], end[sc.RUN_TURNS]) == (sc.RUN_STATUS_MAX_TURNS, 4)
    report = find_loops(steps(spans))
    assert report.cycle == ["agent_a", "agent_b", "agent_a"]
    assert report.repeats == 3


def test_handing_back_after_tool_work_is_not_a_loop(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    run_id = run(scn.retries_with_progress(instrumentor, sensitive=False))
    spans = spans_of(exporter, run_id)
    assert [r[sc.STATE_VERSION] for r in named(spans, sc.SPAN_REQUEST)] == [0, 1, 2, 3]
    assert find_loops(steps(spans)).looping_ids == set()
    assert named(spans, sc.SPAN_RUN)[-1][sc.RUN_STATUS] == sc.RUN_STATUS_COMPLETED


# -- routes -------------------------------------------------------------------------------


def test_multiple_handoffs_in_one_turn_reject_the_ignored_route(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    run_id = run(scn.multiple_handoffs(instrumentor, sensitive=False))
    spans = spans_of(exporter, run_id)
    taken, ignored = named(spans, sc.SPAN_REQUEST)
    assert types(ignored) == {**REQUEST_TYPES, sc.REASON: str}
    assert ignored[sc.HANDOFF_ID] == taken[sc.HANDOFF_ID] + ":1"
    # Not "restore a declared route": the route was declared; the runtime ignored it.
    assert ignored[sc.REASON] == sc.REASON_IGNORED_SAME_TURN
    assert (ignored[sc.TO_AGENT], ignored[sc.ROUTE_GOTO]) == ("refunds", "billing")
    assert ignored[sc.ROUTE_DECLARED] is True  # declared, but the runtime went elsewhere
    (accept,) = named(spans, sc.SPAN_ACCEPT)
    assert accept[sc.HANDOFF_ID] == taken[sc.HANDOFF_ID]
    merged = evidence(spans)
    merged[ignored[sc.HANDOFF_ID]].reason = ignored[sc.REASON]
    judged = classify(merged[ignored[sc.HANDOFF_ID]])
    assert judged.verdict == sc.ROUTE_REJECTED
    assert "one handoff per turn" in judged.why and "one handoff per turn" in judged.next_step
    assert classify(merged[taken[sc.HANDOFF_ID]]).verdict == sc.HEALTHY


def test_destination_outside_the_declared_handoffs_is_rejected(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    run_id = run(scn.undeclared_destination(instrumentor, sensitive=False))
    spans = spans_of(exporter, run_id)
    (request,) = named(spans, sc.SPAN_REQUEST)
    assert (request[sc.TO_AGENT], request[sc.ROUTE_DECLARED]) == ("fraud", False)
    # Admission (a later green signal) does not hide the route failure.
    assert named(spans, sc.SPAN_ACCEPT)[0][sc.DESTINATION_STARTED] is True
    assert classify(evidence(spans)[request[sc.HANDOFF_ID]]).verdict == sc.ROUTE_REJECTED


# -- approvals ----------------------------------------------------------------------------


def test_approval_pause_checkpoint_decision_and_resume(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    paused = run(scn.approval_pause(instrumentor, sensitive=False))
    run_id = paused.trace_id
    assert instrumentor.run_id(paused.result) == run_id
    spans = spans_of(exporter, run_id)
    assert [a[sc.RUN_STATUS] for a in named(spans, sc.SPAN_RUN)] == ["started", "interrupted"]
    auto, recorded = named(spans, sc.SPAN_WAIT)
    # What the runner knows by itself: an approval is pending, and which tool call.
    assert auto == {
        sc.RUN_ID: run_id,
        sc.WAIT_REASON: "tool_approval",
        sc.WAIT_RESUME_TOKEN_ID: "call_refund_1",
    }
    # What the app adds in one line.
    assert types(recorded) == {
        sc.RUN_ID: str,
        sc.WAIT_OWNER: str,
        sc.WAIT_REASON: str,
        sc.WAIT_DEADLINE: int,
        sc.WAIT_RESUME_TOKEN_ID: str,
        sc.WAIT_STATE_PERSISTED: bool,
    }
    assert (recorded[sc.WAIT_OWNER], recorded[sc.WAIT_REASON]) == (
        "billing-team",
        "refund_approval",
    )
    assert recorded[sc.WAIT_STATE_PERSISTED] is True

    exporter.clear()
    result = run(scn.approval_resume(instrumentor, paused, sensitive=False))
    assert instrumentor.run_id(result) == run_id
    spans = spans_of(exporter, run_id)
    assert [s.name for s in spans] == [sc.SPAN_WAIT, sc.SPAN_RUN, sc.SPAN_RUN, sc.SPAN_OUTCOME]
    decision = named(spans, sc.SPAN_WAIT)[0]
    assert decision == {
        sc.RUN_ID: run_id,
        sc.WAIT_DECISION: sc.WAIT_DECISION_APPROVED,
        sc.WAIT_RESUME_TOKEN_ID: "call_refund_1",
    }
    assert [a[sc.RUN_STATUS] for a in named(spans, sc.SPAN_RUN)] == ["started", "completed"]


def test_streamed_run_reports_its_end_once(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    async def streamed() -> Any:
        triage, _ = scn.approval_agents()
        result = Runner.run_streamed(triage, "refund please")
        async for _event in result.stream_events():
            pass
        return result

    result = run(streamed())
    assert result.interruptions
    spans = spans_of(exporter, instrumentor.run_id(result))
    assert [a[sc.RUN_STATUS] for a in named(spans, sc.SPAN_RUN)] == ["started", "interrupted"]
    assert len(named(spans, sc.SPAN_WAIT)) == 1


def test_run_sync_reports_its_end_once(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([[assistant_message("hi")]])
    result = Runner.run_sync(Agent(name="solo", model=model), "hello")
    spans = spans_of(exporter, instrumentor.run_id(result))
    assert [a[sc.RUN_STATUS] for a in named(spans, sc.SPAN_RUN)] == ["started", "completed"]


def test_agent_used_as_tool_stays_inside_the_outer_run(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    inner_model = ScriptedModel([[assistant_message("inner answer")]])
    researcher = Agent(name="researcher", model=inner_model)
    outer_model = ScriptedModel(
        [
            [function_call("research", {"input": "look"}, call_id="call_n1")],
            [assistant_message("ok")],
        ]
    )
    lead = Agent(
        name="lead",
        model=outer_model,
        tools=[researcher.as_tool(tool_name="research", tool_description="Research.")],
    )
    result = run(Runner.run(lead, "hello"))
    run_id = instrumentor.run_id(result)
    assert {s.attributes[sc.RUN_ID] for s in exporter.get_finished_spans()} == {run_id}
    runs = named(spans_of(exporter, run_id), sc.SPAN_RUN)
    assert [(a[sc.RUN_STATUS], a.get(sc.RUN_FINAL_AGENT)) for a in runs] == [
        ("started", None),
        ("completed", "lead"),
    ]


# -- content never leaves -----------------------------------------------------------------


class SdkSpanLog(TracingProcessor):
    """What the SDK itself hands to every processor: our positive control for sentinels."""

    def __init__(self) -> None:
        self.exported: list[str] = []

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        self.exported.append(json.dumps(span.export(), default=str))

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


async def all_scenarios(instrumentor: OpenAIAgentsInstrumentor, sensitive: bool) -> None:
    await scn.healthy(instrumentor, sensitive)
    await scn.ping_pong(instrumentor, sensitive)
    await scn.retries_with_progress(instrumentor, sensitive)
    await scn.multiple_handoffs(instrumentor, sensitive)
    await scn.undeclared_destination(instrumentor, sensitive)
    paused = await scn.approval_pause(instrumentor, sensitive)
    await scn.approval_resume(instrumentor, paused, sensitive)


@pytest.mark.parametrize(
    "sensitive", [True, False], ids=["sensitive-data-on", "sensitive-data-off"]
)
def test_no_content_in_exported_bytes(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter, sensitive: bool
) -> None:
    sdk_log = SdkSpanLog()
    add_trace_processor(sdk_log)
    run(all_scenarios(instrumentor, sensitive))

    spans = exporter.get_finished_spans()
    assert len(spans) > 30
    payload = encode_spans(spans).SerializeToString()
    assert scn.SENTINEL.encode() not in payload
    assert stats.attributes_dropped == {}, "the adapter tried to send something off-contract"
    # Positive control: with sensitive data on, the SDK put the planted tool arguments and
    # outputs into its own function spans — the adapter was offered them and sent none.
    tool_spans = [e for e in sdk_log.exported if json.loads(e)["span_data"]["type"] == "function"]
    assert len(tool_spans) >= 5
    assert all((scn.SENTINEL in e) is sensitive for e in tool_spans)


# -- lifecycle and robustness -------------------------------------------------------------


def test_uninstrument_restores_the_sdk(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    import agents.run as run_module

    app_processor = SdkSpanLog()
    set_trace_processors([app_processor])
    runner_before = run_module.get_default_agent_runner()
    inst = OpenAIAgentsInstrumentor()
    assert inst is OpenAIAgentsInstrumentor()  # one per process, like BaseInstrumentor

    inst.instrument(tracer_provider=provider)  # beside the app's processor
    assert isinstance(Handoff.__dict__["input_filter"], FilterAttribute)
    assert run_module.get_default_agent_runner() is not runner_before
    inst.uninstrument()

    assert run_module.get_default_agent_runner() is runner_before
    assert Handoff.__dict__["input_filter"] is None
    assert RunConfig.__dict__["handoff_input_filter"] is None
    run_config, triage = _two_agent_run(handoff_filter=scn.keep_only_history)
    assert triage.handoffs[0].input_filter is scn.keep_only_history  # the app's own object
    run(Runner.run(triage, "hello", run_config=run_config))
    assert exporter.get_finished_spans() == ()
    assert app_processor.exported, "the app's own processor was kept and still runs"
    set_trace_processors([])


def test_adapter_failures_never_reach_the_app(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    class Broken(SimpleSpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            raise RuntimeError("exporter down")

    provider.add_span_processor(Broken(InMemorySpanExporter()))
    processor = instrumentor._processor
    processor.on_span_end(object())  # not a span at all
    processor.on_trace_end(None)
    run_id = run(scn.healthy(instrumentor, sensitive=False))  # the app's run still completes
    assert run_id
    assert stats.errors >= 2


def test_guardrail_tripwire_ends_the_run_failed(
    instrumentor: OpenAIAgentsInstrumentor, exporter: InMemorySpanExporter
) -> None:
    from agents import GuardrailFunctionOutput, InputGuardrail
    from agents.exceptions import InputGuardrailTripwireTriggered

    def block(ctx: Any, agent: Any, user_input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    agent = Agent(
        name="gatekeeper",
        model=ScriptedModel([[assistant_message("never")]]),
        input_guardrails=[InputGuardrail(guardrail_function=block)],
    )
    with pytest.raises(InputGuardrailTripwireTriggered) as caught:
        run(Runner.run(agent, "hello"))
    runs = named(spans_of(exporter, instrumentor.run_id(caught.value)), sc.SPAN_RUN)
    assert [a[sc.RUN_STATUS] for a in runs] == ["started", "failed"]


def test_an_sdk_that_does_not_import_is_logged_not_raised(
    provider: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    inst = OpenAIAgentsInstrumentor()
    inst.uninstrument()
    monkeypatch.setitem(sys.modules, "agents.tracing", None)  # installed, but broken
    inst.instrument(tracer_provider=provider)
    assert not inst.is_instrumented_by_opentelemetry


def test_unknown_setting_is_a_clear_error(provider: TracerProvider) -> None:
    with pytest.raises(TypeError, match="replace_processor"):
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, replace_processor=True)
    assert not OpenAIAgentsInstrumentor().is_instrumented_by_opentelemetry
