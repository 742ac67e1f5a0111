"""Usage through the recorder API (any runtime): `record_usage` per model call, summed into
the run's current leg, carried by the span that ends it (docs/semconv.md, "Usage")."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation import stats
from handoffscope.instrumentation.recorder import HandoffRecorder, LegUsage

USAGE = (
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.USAGE_MODEL_CALLS,
    sc.GEN_AI_REQUEST_MODEL,
)


def usage(exporter: InMemorySpanExporter) -> list[tuple[str, dict[str, Any]]]:
    return [
        (s.name, {k: s.attributes[k] for k in USAGE if k in s.attributes})
        for s in exporter.get_finished_spans()
    ]


def test_legs_end_on_a_handoff_request_and_the_run_end(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    rec = HandoffRecorder(provider)
    rec.run_started("r1", agent="triage")
    rec.record_usage("r1", input_tokens=100, output_tokens=10, model="gpt-4.1-mini")
    rec.record_usage("r1", input_tokens=50, output_tokens=5, model="gpt-4.1")
    rec.record_usage("r1", input_tokens=20, output_tokens=2, model="gpt-4.1-mini")
    # A delegation's callee works inside the caller's leg: its request does not end it.
    rec.handoff_requested("r1", "d1", from_agent="triage", to_agent="lookup", kind="delegation")
    rec.record_usage("r1", input_tokens=7, output_tokens=1, model="gpt-4.1-nano")
    rec.handoff_requested("r1", "h1", from_agent="triage", to_agent="billing")
    rec.handoff_transferred("r1", "h1", goto="billing")
    rec.handoff_accepted("r1", "h1", agent="billing")
    rec.record_usage("r1", input_tokens=300, output_tokens=30, model="gpt-4.1")
    rec.run_ended("r1", "completed", final_agent="billing")
    leg1 = {
        sc.GEN_AI_USAGE_INPUT_TOKENS: 177,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 18,
        sc.USAGE_MODEL_CALLS: 4,
        sc.GEN_AI_REQUEST_MODEL: "gpt-4.1-mini",  # two of the four calls
    }
    leg2 = {
        sc.GEN_AI_USAGE_INPUT_TOKENS: 300,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 30,
        sc.USAGE_MODEL_CALLS: 1,
        sc.GEN_AI_REQUEST_MODEL: "gpt-4.1",
    }
    assert usage(exporter) == [
        (sc.SPAN_RUN, {}),
        (sc.SPAN_REQUEST, {}),
        (sc.SPAN_REQUEST, leg1),
        (sc.SPAN_TRANSFER, {}),
        (sc.SPAN_ACCEPT, {}),
        (sc.SPAN_RUN, leg2),
    ]
    assert stats.attributes_dropped == {}


def test_a_leg_without_calls_carries_nothing_and_known_totals_win(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    rec = HandoffRecorder(provider)
    rec.handoff_requested("r2", "h1", from_agent="router", to_agent="billing")
    rec.record_usage("r2", input_tokens=999, output_tokens=99)
    totals = LegUsage()
    totals.add(40, 4, calls=2, model="claude-sonnet-4@20250514")
    rec.handoff_requested("r2", "h2", from_agent="billing", to_agent="refunds", usage=totals)
    rec.record_usage("r2", calls=1, model="openai/gpt-4o")  # a model that reports no tokens
    rec.run_ended("r2", "completed")
    assert usage(exporter) == [
        (sc.SPAN_REQUEST, {}),
        (
            sc.SPAN_REQUEST,
            {
                sc.GEN_AI_USAGE_INPUT_TOKENS: 40,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 4,
                sc.USAGE_MODEL_CALLS: 2,
                sc.GEN_AI_REQUEST_MODEL: "claude-sonnet-4@20250514",
            },
        ),
        (sc.SPAN_RUN, {sc.USAGE_MODEL_CALLS: 1, sc.GEN_AI_REQUEST_MODEL: "openai/gpt-4o"}),
    ]


def test_off_contract_usage_values_are_dropped_never_raised(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    rec = HandoffRecorder(provider)
    # Negative / non-int counts read as 0; a sentence is not a model name.
    rec.record_usage("r3", input_tokens=-5, output_tokens=True, model="write a poem about x")
    rec.record_usage(None, input_tokens=1)  # type: ignore[arg-type]
    rec.run_ended("r3", "completed", input_tokens=-1, model_calls=3, usage="lots")
    [(name, got)] = usage(exporter)
    assert (name, got) == (sc.SPAN_RUN, {sc.USAGE_MODEL_CALLS: 3})
    assert stats.attributes_dropped == {
        sc.GEN_AI_USAGE_INPUT_TOKENS: 1,
        "usage": 1,
    }
