"""OpenAI Agents SDK adapter overhead: the same scripted workload with and without it.

The workload is a real two-agent app run through the real `Runner` with the SDK's
`ScriptedModel` (offline): triage hands off to billing through an input filter, billing
looks an order up and answers. One run = one handoff, 4 evidence spans. The SDK's own
tracing is on in both modes (its default); the baseline has no processor attached, the
instrumented mode has ours, exporting through the shipped pipeline (`configure()`'s bounded
batch processor) to a null exporter so the network is not what we measure. Rounds
alternate and the medians are compared: the ratio is the adapter's cost to the app's own
thread.

    .venv/bin/python bench/bench_adapter_openai.py [--runs 200] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from typing import Any

from agents import Agent, Runner, function_tool, handoff, set_trace_processors
from agents.testing import ScriptedModel, assistant_message, function_call
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from handoffscope.instrumentation import configure, stats
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor


class NullExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@function_tool
def lookup_order(order_id: str) -> str:
    """Find an order."""
    return f"order {order_id}: shipped"


def keep_history(data: Any) -> Any:
    return data.clone(pre_handoff_items=())


def build_app() -> tuple[Agent[Any], ScriptedModel]:
    model = ScriptedModel()
    billing = Agent(name="billing", model=model, tools=[lookup_order])
    triage = Agent(
        name="triage", model=model, handoffs=[handoff(billing, input_filter=keep_history)]
    )
    return triage, model


SCRIPT = [
    [function_call("transfer_to_billing", {}, call_id="call_1")],
    [function_call("lookup_order", {"order_id": "A-1"}, call_id="call_2")],
    [assistant_message("done")],
]


def one_round(triage: Agent[Any], model: ScriptedModel, n: int) -> float:
    async def runs() -> None:
        for _ in range(n):
            model.extend(SCRIPT)
            await Runner.run(triage, "refund please")

    t0 = time.perf_counter()
    asyncio.run(runs())
    return (time.perf_counter() - t0) / n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--runs", type=int, default=200, help="Runner.run calls per round")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)

    set_trace_processors([])  # no export to OpenAI from a benchmark
    triage, model = build_app()
    provider = configure(
        service_name="bench-openai-agents", exporter=NullExporter(), set_global=False
    )
    ins = OpenAIAgentsInstrumentor()
    one_round(triage, model, 20)  # warm up imports and caches, both ways
    ins.instrument(tracer_provider=provider, replace_processors=True)
    one_round(triage, model, 20)
    ins.uninstrument()

    bare, instrumented = [], []
    stats.reset()
    for _ in range(args.rounds):  # alternate so drift on a shared machine hits both
        bare.append(one_round(triage, model, args.runs))
        ins.instrument(tracer_provider=provider, replace_processors=True)
        instrumented.append(one_round(triage, model, args.runs))
        ins.uninstrument()
    provider.shutdown()
    b, i = statistics.median(bare), statistics.median(instrumented)
    spans = stats.spans_emitted / (args.rounds * args.runs)
    print("== OpenAI Agents SDK adapter: one handoff per run, median of", args.rounds, "rounds")
    print(f"bare Runner.run                         : {b * 1e6:9.1f} µs  (baseline)")
    print(f"instrumented Runner.run                 : {i * 1e6:9.1f} µs")
    print(f"ratio                                   : {i / b:9.3f}x")
    print(f"added per run (one handoff)             : {(i - b) * 1e6:9.1f} µs")
    print(f"evidence spans per run                  : {spans:9.1f}")
    print(f"spans dropped / internal errors         : {stats.spans_dropped} / {stats.errors}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
