"""Scripted LangGraph graphs, traced by ANOTHER instrumentation, exporting to a collector.

    python langgraph_app.py SOURCE ENDPOINT [--mixed]

SOURCE is `openinference` (`openinference-instrumentation-langchain`) or `openllmetry`
(Traceloop's `opentelemetry-instrumentation-langchain`, with `TRACELOOP_TRACE_CONTENT`
on; OpenInference records content by default): the real instrumentation package hooked
into the real LangGraph runtime, exporting through the real OTLP/HTTP exporter to
ENDPOINT. The graphs are the adapter tests' (tests/adapters/langgraph_scenarios.py:
swarm-style agent subgraphs handing off with `Command(goto=..., graph=PARENT)`, function
nodes routing with `Command`), driven by langchain-core's fake chat model, offline; its
SENTINEL is in every prompt, tool argument, tool output, handoff message, the app's run
metadata and the crash's exception message.

Runs every scenario, then prints one JSON line: scenario -> OTel trace id (the run id
the collector derives), plus `sentinel_sent`: whether the sentinel was in the spans the
instrumentation produced (the test asserts it was, so "absent from the store" means
stripped, not never sent), and `sentinel` itself (the test process does not import
LangGraph to learn it). With `--mixed`, only the healthy scenario, and the handoffscope
shim's LangGraph adapter traces it too on the same provider, so its spans and the foreign
ones travel in the same export; the shim's run id is printed under `shim`.

A separate process because each instrumentation hooks LangChain's callback manager
globally, and the test process must not carry two of them (or our own adapter's).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from witness import Witness

sys.path.append(str(Path(__file__).resolve().parent.parent / "adapters"))
import langgraph_scenarios as scenarios  # noqa: E402  (the adapter tests' graphs)

SENTINEL = scenarios.SENTINEL
LIMIT = 6
"""`recursion_limit` of the scenarios that run into it (LangGraph's turn limit)."""


def turn_limit() -> Any:
    """triage hands to billing once; billing then looks invoices up until the limit."""
    triage = scenarios.agent(
        "triage",
        iter([scenarios.call("transfer_to_billing", reason=f"refund {SENTINEL}")]),
        [scenarios.handoff_tool("billing")],
    )
    billing = scenarios.agent(
        "billing",
        scenarios.forever(lambda: scenarios.call("lookup_invoice", order_id=f"A-1 {SENTINEL}")),
        [scenarios.lookup_invoice],
    )
    return scenarios.swarm({"triage": triage, "billing": billing})


LIMITED = "GraphRecursionError"
SCENARIOS: dict[str, tuple[Callable[[], Any], int | None, str | None]] = {
    # name: (graph, recursion_limit, the exception that ends the run)
    # triage -> billing (swarm handoff tool); billing looks an invoice up and answers
    "healthy": (scenarios.healthy, None, None),
    # triage <-> billing handing back and forth until the recursion limit
    "ping_pong": (scenarios.ping_pong, LIMIT, LIMITED),
    "turn_limit": (turn_limit, LIMIT, LIMITED),
    # triage -> billing (declared), billing -> refunds (declared only triage)
    "misrouted": (scenarios.node_commands, None, None),
    # triage -> billing, whose node raises (the sentinel in the exception message)
    "crash": (scenarios.crashing, None, "BillingSystemDown"),
}


def instrument(source: str, provider: TracerProvider) -> None:
    if source == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
    elif source == "openllmetry":
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=provider)
    else:
        raise SystemExit(f"unknown source {source!r}")


def main(argv: list[str]) -> None:
    source, endpoint = argv[0], argv[1]
    mixed = "--mixed" in argv
    witness = Witness(SENTINEL)
    # One export at the end (force_flush): every run's spans travel together, as they do
    # for a short run under the SDK's defaults (5 s delay, 512-span batches).
    batch = BatchSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint + "/v1/traces"),
        schedule_delay_millis=60_000,
        max_queue_size=8192,
        max_export_batch_size=8192,
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "foreign-app"}))
    provider.add_span_processor(witness)
    provider.add_span_processor(batch)
    instrument(source, provider)
    shim = None
    if mixed:
        from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

        shim = LangGraphInstrumentor()
        shim.instrument(tracer_provider=provider)
    ran = {"healthy": SCENARIOS["healthy"]} if mixed else SCENARIOS
    shim_ids: dict[str, str | None] = {}
    for name, (build, limit, ends_by) in ran.items():
        # App metadata is content too: OpenInference keeps it in its `metadata` JSON beside
        # the node keys, Traceloop as association properties.
        config: dict[str, Any] = {"metadata": {"customer_note": f"vip {SENTINEL}"}}
        if limit:
            config["recursion_limit"] = limit
        raised = None
        try:
            build().invoke(scenarios.first_input(), config)
        except Exception as exc:  # the limit and the crash end their runs by raising
            raised = type(exc).__name__
        assert raised == ends_by, f"{name}: raised {raised}, expected {ends_by}"
        if shim is not None:
            shim_ids[name] = shim.run_id()
    provider.force_flush()
    assert len(witness.roots) == len(ran), witness.roots
    out: dict[str, Any] = dict(zip(ran, witness.roots, strict=True))
    if mixed:
        out["shim"] = shim_ids
    out["sentinel_sent"] = witness.sentinel_seen
    out["sentinel"] = SENTINEL
    print(json.dumps(out))
    provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
