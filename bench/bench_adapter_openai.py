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

Then, instrumented both ways, usage off against usage on (the run hooks that sum each
`ModelResponse.usage` into the leg: openai_agents/usage.py). "Off" is a bench-only switch —
the runner not wrapping `hooks=`, as before usage was read — not an option of the product;
the ratio is what reading usage adds to an instrumented run.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from agents import Agent, Runner, function_tool, handoff, set_trace_processors
from agents.testing import ScriptedModel, assistant_message, function_call
from overhead import (  # bench/ is on sys.path: these scripts run as files
    NullExporter,
    compare,
    report,
)

from handoffscope.instrumentation import configure
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor


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
    bare, instrumented = compare(
        lambda n: one_round(triage, model, n),
        lambda: ins.instrument(tracer_provider=provider, replace_processors=True),
        ins.uninstrument,
        n=args.runs,
        rounds=args.rounds,
    )
    report(
        f"OpenAI Agents SDK adapter: one handoff per run, median of {args.rounds} rounds",
        labels=("bare Runner.run", "instrumented Runner.run"),
        unit="run",
        bare=bare,
        instrumented=instrumented,
        units=args.rounds * args.runs,
    )

    from handoffscope.instrumentation.openai_agents import runner as observed

    wrap_hooks = observed.wrap_hooks

    def usage(on: bool) -> None:
        observed.wrap_hooks = wrap_hooks if on else (lambda kwargs, processor: None)  # type: ignore[assignment]

    ins.instrument(tracer_provider=provider, replace_processors=True)
    try:
        usage_off, usage_on = compare(
            lambda n: one_round(triage, model, n),
            lambda: usage(True),
            lambda: usage(False),
            n=args.runs,
            rounds=args.rounds,
        )
    finally:
        usage(True)
        ins.uninstrument()
    provider.shutdown()
    report(
        f"OpenAI Agents SDK adapter, usage off vs on: 3 model calls per run, "
        f"median of {args.rounds} rounds",
        labels=("instrumented, usage off", "instrumented, usage on"),
        unit="run",
        bare=usage_off,
        instrumented=usage_on,
        units=2 * args.rounds * args.runs,  # both modes emit: stats counted them all
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
