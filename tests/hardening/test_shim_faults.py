"""The shim under faults: its collector down, stalled, or answering 503.

An instrumented app must not notice: every recording call returns normally, nothing is
raised, nothing swallowed is counted as an internal error — and what could not be queued
is counted in `stats.spans_dropped`. `provider.shutdown()` at exit must return (how fast
is measured by bench/bench_faults.py, not asserted here).

The faults are real: a closed loopback port, a real HTTP server that sleeps before
answering, one that answers 503 + Retry-After (tests/hardening/conftest.py `FaultServer`),
reached by the real OTLP exporters that `configure()` builds. A healthy control (the same
burst into a server that answers at once, with the default queue) shows the drop counter
is not simply always above zero.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from hardening_support import closed_port_url
from support.shim import record_handoff

from handoffscope.instrumentation import HandoffRecorder, configure, stats

HANDOFFS = 1500
"""Three spans each: well past the small test queue below, so drops must happen."""
SMALL_QUEUE = 64


@pytest.fixture(autouse=True)
def _quiet_exporters(caplog: pytest.LogCaptureFixture) -> None:
    # The OTLP exporters log an error per failed batch; that is their business, not ours,
    # and the lines would bury the test's own output.
    caplog.set_level(logging.CRITICAL, logger="opentelemetry")
    stats.reset()


def drive_app(recorder: HandoffRecorder, handoffs: int, prefix: str) -> list[bool]:
    """An agent app's handoffs, as an adapter records them; returns each call's result."""
    results = []
    for i in range(handoffs):
        results.extend(record_handoff(recorder, f"{prefix}-run-{i // 10}", i))
    return results


def endpoint_for(fault: str, fault_server) -> str:
    if fault == "down":
        return closed_port_url()
    if fault == "slow":
        return fault_server("slow", delay_s=2.0).url
    return fault_server("unavailable").url


@pytest.mark.parametrize("fault", ["down", "slow", "unavailable"])
def test_app_never_sees_a_fault_and_drops_are_counted(fault: str, fault_server) -> None:
    provider = configure(
        service_name="shim-under-faults",
        endpoint=endpoint_for(fault, fault_server),
        timeout=1.0,
        max_queue_size=SMALL_QUEUE,
        max_export_batch_size=16,
        export_delay_ms=50,
        set_global=False,
    )
    recorder = HandoffRecorder(provider)

    results = drive_app(recorder, HANDOFFS, fault)

    # Every call handed its evidence to the SDK (True) and returned: no exception reached
    # the app (one would have failed this test where it was raised).
    assert all(results)
    snapshot = stats.snapshot()
    assert snapshot["spans_emitted"] == 3 * HANDOFFS
    assert snapshot["errors"] == 0
    # The exporter is stuck or failing, so the bounded queue filled and refused spans —
    # counted, not raised, not blocking.
    assert 0 < snapshot["spans_dropped"] < 3 * HANDOFFS
    provider.shutdown()  # returns (pytest-timeout guards a hang); duration: bench_faults.py
    assert stats.snapshot()["errors"] == 0


def test_grpc_collector_down_is_invisible_to_the_app() -> None:
    provider = configure(
        service_name="shim-under-faults",
        endpoint=closed_port_url(),
        protocol="grpc",
        timeout=1.0,
        max_queue_size=SMALL_QUEUE,
        max_export_batch_size=16,
        export_delay_ms=50,
        set_global=False,
    )
    results = drive_app(HandoffRecorder(provider), HANDOFFS, "grpc-down")
    assert all(results)
    snapshot = stats.snapshot()
    assert snapshot["errors"] == 0
    assert 0 < snapshot["spans_dropped"] < 3 * HANDOFFS
    provider.shutdown()


def test_healthy_endpoint_with_default_queue_drops_nothing(fault_server) -> None:
    """The control: the counter above counts real refusals, not every span."""
    sink = fault_server("ok")
    provider = configure(service_name="shim-healthy", endpoint=sink.url, set_global=False)
    results = drive_app(HandoffRecorder(provider), HANDOFFS, "healthy")
    provider.shutdown()
    assert all(results)
    assert stats.snapshot()["spans_dropped"] == 0
    assert sink.spans_received == 3 * HANDOFFS


def test_openai_agents_run_completes_with_collector_down() -> None:
    """A real Agents SDK run (scripted model, offline) with the adapter and no collector."""
    agents = pytest.importorskip("agents")
    from agents.testing import ScriptedModel, assistant_message, function_call

    from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    provider = configure(
        service_name="agents-collector-down",
        endpoint=closed_port_url(),
        timeout=1.0,
        set_global=False,
    )
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider, replace_processors=True)
    try:
        model = ScriptedModel(
            [
                [function_call("transfer_to_billing", {}, call_id="call_h1")],
                [assistant_message("refunded")],
            ]
        )
        billing = agents.Agent(name="billing", instructions="refund", model=model)
        triage = agents.Agent(name="triage", instructions="route", model=model, handoffs=[billing])
        result = asyncio.run(agents.Runner.run(triage, "refund my order"))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    assert result.final_output == "refunded"
    assert result.last_agent.name == "billing"
    snapshot = stats.snapshot()
    assert snapshot["spans_emitted"] >= 3  # run start, the handoff's evidence, run end
    assert snapshot["errors"] == 0
