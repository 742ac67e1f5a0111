"""A scripted OpenAI Agents SDK app, traced by ANOTHER instrumentation, exporting to a collector.

    python agents_app.py SOURCE ENDPOINT [--mixed]

SOURCE is `openinference`, `openllmetry` or `logfire`: the real instrumentation package,
with its content capture on (the SDK's `trace_include_sensitive_data`, OpenInference's
default of no masking, Traceloop's `TRACELOOP_TRACE_CONTENT`, Logfire's defaults), exporting
through the real OTLP/HTTP exporter to ENDPOINT. The models are the SDK's own
`ScriptedModel` (offline). SENTINEL is planted in every prompt, instruction, tool
argument, tool output, model message and exception.

Runs every scenario, then prints one JSON line: scenario -> OTel trace id (the run id
the collector derives), plus `sentinel_sent`: whether the sentinel was in the spans the
instrumentation produced (the test asserts it was, so "absent from the store" means
stripped, not never sent). With `--mixed`, the handoffscope shim traces the same runs on
the same provider, so its spans and the foreign ones travel in the same exports; the
shim's run ids (the SDK trace ids) are printed under `shim`.

A separate process because each instrumentation registers itself globally with the SDK
(trace processors), and the test process must not keep three of them at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from agents import Agent, Handoff, RunConfig, Runner, function_tool, gen_trace_id
from agents.exceptions import MaxTurnsExceeded
from agents.testing import ScriptedModel, assistant_message, function_call
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from witness import Witness

SENTINEL = "zqxsentinel7f3a"


def planted(where: str) -> str:
    return f"{SENTINEL}-{where}"


@function_tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return planted("tool-output") + order


def run_config(workflow: str, shim: dict[str, str]) -> RunConfig:
    trace_id = gen_trace_id()
    shim[workflow] = trace_id
    return RunConfig(workflow_name=workflow, trace_id=trace_id, trace_include_sensitive_data=True)


async def healthy(shim: dict[str, str]) -> None:
    """triage -> billing; billing looks an order up and answers."""
    model = ScriptedModel(
        [
            [function_call("transfer_to_billing", {}, call_id="call_h1")],
            [function_call("lookup_order", {"order": planted("tool-arg")}, call_id="call_t1")],
            [assistant_message(planted("final-answer"))],
        ],
        emit_traces=True,
    )
    billing = Agent(
        name="billing", instructions=planted("billing"), model=model, tools=[lookup_order]
    )
    triage = Agent(name="triage", instructions=planted("triage"), model=model, handoffs=[billing])
    await Runner.run(triage, planted("prompt"), run_config=run_config("healthy", shim))


async def ping_pong(shim: dict[str, str]) -> None:
    """triage <-> billing, back and forth, until the turn limit stops it."""
    calls = [
        [function_call(f"transfer_to_{'billing' if i % 2 == 0 else 'triage'}", {}, call_id=f"c{i}")]
        for i in range(6)
    ]
    model = ScriptedModel([*calls, [assistant_message(planted("never"))]], emit_traces=True)
    billing = Agent(name="billing", instructions=planted("billing"), model=model)
    triage = Agent(name="triage", instructions=planted("triage"), model=model, handoffs=[billing])
    billing.handoffs = [triage]
    try:
        await Runner.run(
            triage, planted("prompt"), max_turns=4, run_config=run_config("ping_pong", shim)
        )
    except MaxTurnsExceeded:
        return
    raise AssertionError("the ping-pong should exhaust max_turns")


async def turn_limit(shim: dict[str, str]) -> None:
    """triage -> billing once; billing then looks orders up until the turn limit."""
    calls = [[function_call("transfer_to_billing", {}, call_id="call_h1")]]
    calls += [
        [function_call("lookup_order", {"order": planted(f"arg{i}")}, call_id=f"t{i}")]
        for i in range(6)
    ]
    model = ScriptedModel([*calls, [assistant_message(planted("never"))]], emit_traces=True)
    billing = Agent(
        name="billing", instructions=planted("billing"), model=model, tools=[lookup_order]
    )
    triage = Agent(name="triage", instructions=planted("triage"), model=model, handoffs=[billing])
    try:
        await Runner.run(
            triage, planted("prompt"), max_turns=4, run_config=run_config("turn_limit", shim)
        )
    except MaxTurnsExceeded:
        return
    raise AssertionError("the tool loop should exhaust max_turns")


async def undeclared(shim: dict[str, str]) -> None:
    """triage's only declared handoff is to billing; the runtime sends the run to fraud (a
    custom Handoff named for billing whose invoke returns another agent)."""
    model = ScriptedModel(
        [
            [function_call("transfer_to_billing", {}, call_id="call_u1")],
            [assistant_message(planted("final-answer"))],
        ],
        emit_traces=True,
    )
    fraud = Agent(name="fraud", instructions=planted("fraud"), model=model)

    async def invoke(ctx: Any, args: str) -> Agent[Any]:
        return fraud

    misrouted = Handoff(
        tool_name="transfer_to_billing",
        tool_description=planted("handoff-description"),
        input_json_schema={},
        on_invoke_handoff=invoke,
        agent_name="billing",
    )
    triage = Agent(name="triage", instructions=planted("triage"), model=model, handoffs=[misrouted])
    await Runner.run(triage, planted("prompt"), run_config=run_config("undeclared", shim))


SCENARIOS = (healthy, ping_pong, turn_limit, undeclared)


def instrument(source: str, provider: TracerProvider, processors: list[SpanProcessor]) -> None:
    if source == "openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    elif source == "openllmetry":
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    elif source == "logfire":
        import logfire

        # No Logfire account: nothing goes to Logfire; the spans go to our processors.
        logfire.configure(
            send_to_logfire=False,
            console=False,
            service_name="foreign-app",
            additional_span_processors=processors,
            inspect_arguments=False,
        )
        logfire.instrument_openai_agents()
    else:
        raise SystemExit(f"unknown source {source!r}")


def main(argv: list[str]) -> None:
    source, endpoint = argv[0], argv[1]
    mixed = "--mixed" in argv
    witness = Witness(SENTINEL)
    exporter = OTLPSpanExporter(endpoint=endpoint + "/v1/traces")
    # One export at the end (force_flush): every span of the process in one batch, so
    # the mixed case really mixes the shim's spans and the foreign ones in one export.
    batch = BatchSpanProcessor(
        exporter, schedule_delay_millis=60_000, max_queue_size=4096, max_export_batch_size=4096
    )
    processors: list[SpanProcessor] = [witness, batch]
    provider = TracerProvider(resource=Resource.create({"service.name": "foreign-app"}))
    for p in processors:
        provider.add_span_processor(p)
    from agents import set_trace_processors

    set_trace_processors([])  # not the SDK's default exporter to OpenAI's backend (offline)
    instrument(source, provider, processors)
    if mixed:
        from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor as Ours

        Ours().instrument(tracer_provider=provider)
    shim: dict[str, str] = {}
    for scenario in SCENARIOS if not mixed else (healthy,):
        asyncio.run(scenario(shim))
    provider.force_flush()
    ran = SCENARIOS if not mixed else (healthy,)
    assert len(witness.roots) == len(ran), witness.roots
    out: dict[str, Any] = {s.__name__: root for s, root in zip(ran, witness.roots, strict=True)}
    out["sentinel_sent"] = witness.sentinel_seen
    if mixed:
        out["shim"] = shim
    print(json.dumps(out))
    provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
