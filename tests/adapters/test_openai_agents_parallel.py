"""Several `Runner.run` calls in one SDK trace, some at once: each is its own run.

The SDK's `agent_patterns/parallelization.py` runs an agent three times with
`asyncio.gather` inside one `with trace(...)`, then a picker; apps route several customers
at once the same way. Each call must be its own handoffscope run — own id, start, end,
status, final agent and handoffs — `run_id(result)` (and of a run's exception) must name
it, and `record_outcome` must land on it. In memory first (exact evidence spans per run,
with and without the runner observed, task spans on and off, a paused branch resumed),
then end to end through the real collector, with the sentinel planted in every prompt,
instruction, tool argument and the crash's message found nowhere it keeps.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import openai_agents_examples as ex
import openai_agents_scenarios as scn
import pytest
from agents import Agent, RunConfig, Runner, RunState, set_trace_processors, trace
from agents.testing import ScriptedModel, assistant_message, function_call
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.privacy import assert_content_free

from handoffscope.instrumentation import configure
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor


@pytest.fixture
def instrument(provider: TracerProvider) -> Iterator[Any]:
    """`instrument(**settings)` -> the instrumentor, exporting to the in-memory exporter."""
    inst = OpenAIAgentsInstrumentor()

    def start(**settings: Any) -> OpenAIAgentsInstrumentor:
        set_trace_processors([])
        inst.instrument(tracer_provider=provider, replace_processors=True, **settings)
        return inst

    yield start
    inst.uninstrument()
    set_trace_processors([])


def run_spans(exporter: InMemorySpanExporter) -> dict[str, list[dict[str, Any]]]:
    """Evidence attributes per `handoff.run_id`, in export order."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for span in exporter.get_finished_spans():
        runs.setdefault(str(span.attributes[sc.RUN_ID]), []).append(
            {"span": span.name, **span.attributes}
        )
    return runs


def ends(spans: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """(status, final agent) of each `handoff.run` span."""
    return [
        (s[sc.RUN_STATUS], s.get(sc.RUN_FINAL_AGENT)) for s in spans if s["span"] == sc.SPAN_RUN
    ]


# -- in memory ----------------------------------------------------------------------------


@pytest.mark.parametrize("observe_runner", [True, False], ids=["runner", "spans-only"])
def test_parallelization_example_is_four_runs(
    instrument: Any, exporter: InMemorySpanExporter, observe_runner: bool
) -> None:
    inst = instrument(observe_runner=observe_runner)
    done = asyncio.run(ex.parallelization())
    runs = run_spans(exporter)
    # The trace's first run keeps the trace id; the others are numbered in start order.
    t = done.trace_id
    assert set(runs) == {t, f"{t}-2", f"{t}-3", f"{t}-4"}
    for run_id in (t, f"{t}-2", f"{t}-3"):
        assert ends(runs[run_id]) == [
            (sc.RUN_STATUS_STARTED, None),
            (sc.RUN_STATUS_COMPLETED, "spanish_agent"),
        ]
        assert runs[run_id][0][sc.GEN_AI_AGENT_NAME] == "spanish_agent"
    assert ends(runs[f"{t}-4"]) == [
        (sc.RUN_STATUS_STARTED, None),
        (sc.RUN_STATUS_COMPLETED, "translation_picker"),
    ]
    if observe_runner:
        # Each result names its own run (the gather's order is the start order).
        assert [inst.run_id(r) for r in done.answers] == [t, f"{t}-2", f"{t}-3", f"{t}-4"]


def test_parallel_customers_keep_their_handoffs_and_crashes_apart(
    instrument: Any, exporter: InMemorySpanExporter
) -> None:
    inst = instrument()
    done = asyncio.run(ex.parallel_customers())
    handed, crashed, answered = done.answers
    assert isinstance(crashed, Exception) and not isinstance(handed, BaseException)
    ids = [inst.run_id(a) for a in done.answers]
    t = done.trace_id
    assert ids == [t, f"{t}-2", f"{t}-3"]
    runs = run_spans(exporter)
    assert set(runs) == set(ids)
    assert ends(runs[ids[0]]) == [
        (sc.RUN_STATUS_STARTED, None),
        (sc.RUN_STATUS_COMPLETED, "billing"),
    ]
    assert ends(runs[ids[1]]) == [(sc.RUN_STATUS_STARTED, None), (sc.RUN_STATUS_FAILED, "billing")]
    assert ends(runs[ids[2]]) == [
        (sc.RUN_STATUS_STARTED, None),
        (sc.RUN_STATUS_COMPLETED, "triage"),
    ]
    # Each handoff on its own run, request and admission both.
    for run_id in ids[:2]:
        requests = [s for s in runs[run_id] if s["span"] == sc.SPAN_REQUEST]
        accepts = [s for s in runs[run_id] if s["span"] == sc.SPAN_ACCEPT]
        assert [(r[sc.FROM_AGENT], r[sc.TO_AGENT]) for r in requests] == [("triage", "billing")]
        assert [a[sc.HANDOFF_ID] for a in accepts] == [requests[0][sc.HANDOFF_ID]]
    assert [s["span"] for s in runs[ids[2]]] == [sc.SPAN_RUN, sc.SPAN_RUN]

    # The app's verdict on the third customer's result lands on that run, and only there.
    assert inst.record_outcome(answered, "hours_checked", True, receipt_id="rcpt-3")
    outcomes = [s for s in run_spans(exporter)[ids[2]] if s["span"] == sc.SPAN_OUTCOME]
    assert [o[sc.OUTCOME_RECEIPT_ID] for o in outcomes] == ["rcpt-3"]
    assert all(s["span"] != sc.SPAN_OUTCOME for i in ids[:2] for s in run_spans(exporter)[i])


def test_parallel_runs_with_task_spans_off_are_told_apart_by_the_runner(
    instrument: Any, exporter: InMemorySpanExporter
) -> None:
    """Without task spans a handed-to agent's span is top level too, like a new run's; the
    runner's per-call holder says which run each belongs to."""
    inst = instrument()
    billing = Agent(name="billing")
    triage = Agent(name="triage", handoffs=[billing])
    no_task_spans = {"include_task_and_turn_spans": False}

    def script(*steps: Any) -> RunConfig:
        return RunConfig(model=ScriptedModel(list(steps)), tracing=no_task_spans)  # type: ignore[arg-type]

    async def app() -> tuple[str, list[Any]]:
        with trace("Customer routing") as current:
            results = await asyncio.gather(
                Runner.run(
                    triage,
                    "a",
                    run_config=script(
                        [function_call("transfer_to_billing", {}, call_id="call_t1")],
                        [assistant_message("paid")],
                    ),
                ),
                Runner.run(triage, "b", run_config=script([assistant_message("hi")])),
            )
        return current.trace_id, list(results)

    t, results = asyncio.run(app())
    assert [inst.run_id(r) for r in results] == [t, f"{t}-2"]
    runs = run_spans(exporter)
    assert set(runs) == {t, f"{t}-2"}
    # Reported once each, by the runner (not again when the app's trace ends).
    assert ends(runs[t]) == [(sc.RUN_STATUS_STARTED, None), (sc.RUN_STATUS_COMPLETED, "billing")]
    assert ends(runs[f"{t}-2"]) == [
        (sc.RUN_STATUS_STARTED, None),
        (sc.RUN_STATUS_COMPLETED, "triage"),
    ]
    assert [s[sc.TO_AGENT] for s in runs[t] if s["span"] == sc.SPAN_REQUEST] == ["billing"]
    assert [s["span"] for s in runs[t] if s["span"] == sc.SPAN_ACCEPT] == [sc.SPAN_ACCEPT]


def test_streamed_runs_at_once_are_separate_runs(
    instrument: Any, exporter: InMemorySpanExporter
) -> None:
    """`run_streamed` starts its run in a background task; each task's copy of the context
    carries its own call's holder."""
    inst = instrument()
    billing = Agent(name="billing")
    triage = Agent(name="triage", handoffs=[billing])

    async def consume(result: Any) -> Any:
        async for _event in result.stream_events():
            pass
        return result

    async def app() -> tuple[str, list[Any]]:
        handed = RunConfig(
            model=ScriptedModel(
                [
                    [function_call("transfer_to_billing", {}, call_id="call_s1")],
                    [assistant_message("paid")],
                ]
            )
        )
        direct = RunConfig(model=ScriptedModel([[assistant_message("hi")]]))
        with trace("Streams") as current:
            results = await asyncio.gather(
                consume(Runner.run_streamed(triage, "a", run_config=handed)),
                consume(Runner.run_streamed(triage, "b", run_config=direct)),
            )
        return current.trace_id, list(results)

    t, results = asyncio.run(app())
    assert [inst.run_id(r) for r in results] == [t, f"{t}-2"]
    runs = run_spans(exporter)
    assert ends(runs[t]) == [(sc.RUN_STATUS_STARTED, None), (sc.RUN_STATUS_COMPLETED, "billing")]
    assert ends(runs[f"{t}-2"]) == [
        (sc.RUN_STATUS_STARTED, None),
        (sc.RUN_STATUS_COMPLETED, "triage"),
    ]
    assert [s[sc.TO_AGENT] for s in runs[t] if s["span"] == sc.SPAN_REQUEST] == ["billing"]
    assert all(s["span"] != sc.SPAN_REQUEST for s in runs[f"{t}-2"])


def test_with_group_run_ids_parallel_runs_are_the_group(
    instrument: Any, exporter: InMemorySpanExporter
) -> None:
    """`run_id_source="group"` asks for one run per conversation: parallel runs of one group
    are that run, and each result still names it."""
    inst = instrument(run_id_source="group")

    async def app() -> list[Any]:
        agent = Agent(name="solo", model=ScriptedModel([[assistant_message("hi")]] * 2))
        with trace("Conversation turn", group_id="conv-9"):
            return list(await asyncio.gather(Runner.run(agent, "a"), Runner.run(agent, "b")))

    results = asyncio.run(app())
    assert [inst.run_id(r) for r in results] == ["conv-9", "conv-9"]
    assert all(inst.record_outcome(r, "answer_checked", True) for r in results)
    runs = run_spans(exporter)
    assert set(runs) == {"conv-9"}
    assert ends(runs["conv-9"]) == [
        (sc.RUN_STATUS_STARTED, None),
        (sc.RUN_STATUS_COMPLETED, "solo"),
        (sc.RUN_STATUS_COMPLETED, "solo"),
    ]


def test_a_paused_parallel_branch_resumes_its_own_run(
    instrument: Any, exporter: InMemorySpanExporter
) -> None:
    """The second of two parallel runs pauses for approval; its stored state, loaded and
    resumed later, lands every piece of evidence on that run, not on the trace's first."""
    inst = instrument()
    triage, _ = scn.approval_agents()

    async def pause() -> tuple[str, Any, Any]:
        with trace("Refunds") as current:
            quick, paused = await asyncio.gather(
                Runner.run(
                    Agent(name="faq", model=ScriptedModel([[assistant_message("hi")]])), "q"
                ),
                Runner.run(triage, "refund please"),
            )
        return current.trace_id, quick, paused

    t, quick, paused = asyncio.run(pause())
    assert paused.interruptions and (inst.run_id(quick), inst.run_id(paused)) == (t, f"{t}-2")
    stored = paused.to_state().to_string()

    async def resume() -> Any:
        state = await RunState.from_string(triage, stored)
        assert inst.run_id(state) == f"{t}-2"
        for item in state.get_interruptions():
            state.approve(item)
        inst.record_decision(state, approved=True)
        return await Runner.run(triage, state)

    exporter.clear()
    result = asyncio.run(resume())
    assert inst.run_id(result) == f"{t}-2"
    runs = run_spans(exporter)
    assert set(runs) == {f"{t}-2"}
    assert [s["span"] for s in runs[f"{t}-2"]] == [sc.SPAN_WAIT, sc.SPAN_RUN, sc.SPAN_RUN]
    assert ends(runs[f"{t}-2"])[-1] == (sc.RUN_STATUS_COMPLETED, "billing")


# -- end to end ---------------------------------------------------------------------------


@pytest.fixture
def exporting(collector: Any) -> Iterator[OpenAIAgentsInstrumentor]:
    """The instrumentor over the shipped OTLP/HTTP pipeline into the real collector."""
    tp = configure(service_name="parallel", endpoint=collector.http_endpoint, set_global=False)
    set_trace_processors([])
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=tp, replace_processors=True)
    yield inst
    inst.uninstrument()
    set_trace_processors([])
    tp.shutdown()


def test_parallel_runs_are_judged_apart_by_the_collector(
    exporting: OpenAIAgentsInstrumentor, collector: Any, fetch_run: Any
) -> None:
    inst = exporting
    translation = asyncio.run(ex.parallelization())
    customers = asyncio.run(ex.parallel_customers())
    # The service reports outcomes, so every completion must be proven: each result gets
    # its own receipt, and each receipt must come back on that result's run.
    for i, result in enumerate(translation.answers, start=1):
        assert inst.record_outcome(result, "translation_checked", True, receipt_id=f"rcpt-t{i}")
    handed, crashed, answered = customers.answers
    assert inst.record_outcome(handed, "invoice_sent", True, receipt_id="rcpt-c1")
    assert inst.record_outcome(answered, "hours_checked", True, receipt_id="rcpt-c3")
    inst._processor.tracer_provider.force_flush()
    answers: list[dict[str, Any]] = []

    def get(run_id: str | None, until: Any) -> dict[str, Any]:
        assert run_id is not None
        run = fetch_run(run_id, until)
        answers.append(run)
        return run

    def proven(r: dict[str, Any]) -> bool:
        return bool(r["outcomes"])

    # parallelization.py: four runs, each healthy, each with its own receipt.
    ids = [inst.run_id(r) for r in translation.answers]
    assert len(set(ids)) == 4
    for i, run_id in enumerate(ids, start=1):
        run = get(run_id, proven)
        final = "translation_picker" if i == 4 else "spanish_agent"
        assert (run["status"], run["final_agent"], run["verdict"]) == (
            sc.RUN_STATUS_COMPLETED,
            final,
            sc.HEALTHY,
        ), run
        assert [o["receipt_id"] for o in run["outcomes"]] == [f"rcpt-t{i}"]
        assert run["handoffs"] == []
    # The trace id (a prefix of every run id it holds) finds all four.
    listed = collector.api("/api/v1/runs", q=translation.trace_id, service="parallel", since=0)
    assert sorted(r["run_id"] for r in listed["runs"]) == sorted(ids)

    # Customers routed at once: a handoff, a crash, a direct answer — judged apart.
    first, second, third = (inst.run_id(a) for a in customers.answers)
    assert len({first, second, third}) == 3
    run = get(first, proven)
    assert (run["status"], run["verdict"], run["final_agent"]) == (
        sc.RUN_STATUS_COMPLETED,
        sc.HEALTHY,
        "billing",
    ), run
    assert [(h["from_agent"], h["to_agent"], h["verdict"]) for h in run["handoffs"]] == [
        ("triage", "billing", sc.HEALTHY)
    ]
    assert [o["receipt_id"] for o in run["outcomes"]] == ["rcpt-c1"]
    run = get(second, lambda r: r["status"] == sc.RUN_STATUS_FAILED)
    assert (run["verdict"], run["final_agent"], run["outcomes"]) == (
        sc.RUN_FAILED,
        "billing",
        [],
    ), run
    assert [(h["to_agent"], h["verdict"]) for h in run["handoffs"]] == [("billing", sc.HEALTHY)]
    run = get(third, proven)
    assert (run["status"], run["verdict"], run["final_agent"], run["handoffs"]) == (
        sc.RUN_STATUS_COMPLETED,
        sc.HEALTHY,
        "triage",
        [],
    ), run
    assert [o["receipt_id"] for o in run["outcomes"]] == ["rcpt-c3"]

    # Prompts, instructions, tool arguments and the crash's message all carried it.
    assert_content_free(
        collector,
        scn.SENTINEL,
        stored="translation_picker",
        answers={"runs": json.dumps(answers), "listed": json.dumps(listed)},
    )
