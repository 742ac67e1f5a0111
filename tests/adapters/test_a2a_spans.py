"""The A2A adapter's spans, exactly: a real a2a-sdk request handler in this process, in memory.

The sample's `HelloWorldAgentExecutor` (a2a_server.py) behind a real `DefaultRequestHandler`,
called the way its JSON-RPC route calls it (`on_message_send` with the request's
`ServerCallContext`, whose `state['headers']` are the HTTP headers), reporting into an
in-memory exporter: exact span names, attribute names and value types, and what a request
without the sender's baggage records (nothing). test_a2a.py runs the same across processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

# a2a-sdk is a dev dependency: imported outright, so a missing one fails, never skips.
import a2a_server
import pytest
from a2a.helpers import new_text_message
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import Role, SendMessageRequest, TaskState
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.a2a import A2AInstrumentor
from handoffscope.instrumentation.a2a.propagation import extract, inject
from handoffscope.instrumentation.a2a.states import state_name


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    inst = A2AInstrumentor()
    inst.instrument(tracer_provider=provider, wait_owner="billing-desk")
    try:
        yield exporter
    finally:
        inst.uninstrument()


def handler(key: str) -> DefaultRequestHandler:
    """The sample's request handler for agent `key`, built while instrumented."""
    return a2a_server.request_handler(key, a2a_server.agent_card(key, 1))


async def send(
    h: DefaultRequestHandler, headers: dict[str, str], task_id: str | None = None
) -> Any:
    message = new_text_message("Hi there", role=Role.ROLE_USER)
    if task_id:
        message.task_id = task_id
    context = ServerCallContext(state={"headers": headers})
    return await h.on_message_send(SendMessageRequest(message=message), context)


def call(h: DefaultRequestHandler, headers: dict[str, str]) -> Any:
    return asyncio.run(send(h, headers))


def baggage_for(run_id: str, handoff_id: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    inject(headers, run_id, handoff_id)
    return headers


def ours(exporter: InMemorySpanExporter) -> list[tuple[str, dict[str, Any]]]:
    return [
        (s.name, dict(s.attributes or {}))
        for s in exporter.get_finished_spans()
        if s.instrumentation_scope is not None
        and s.instrumentation_scope.name == sc.INSTRUMENTATION_SCOPE
    ]


def test_completed_task_exact_spans(spans: InMemorySpanExporter) -> None:
    task = call(handler("hello"), baggage_for("run-1", "h-1"))
    assert state_name(task.status.state) == sc.A2A_COMPLETED
    assert ours(spans) == [
        (
            sc.SPAN_ACCEPT,
            {
                sc.RUN_ID: "run-1",
                sc.HANDOFF_ID: "h-1",
                sc.A2A_TASK_ID: task.id,
                sc.A2A_TASK_STATE: sc.A2A_WORKING,
                sc.DESTINATION_STARTED: True,
                sc.GEN_AI_AGENT_NAME: "Hello World Agent",
            },
        ),
        (
            sc.SPAN_ACCEPT,
            {
                sc.RUN_ID: "run-1",
                sc.HANDOFF_ID: "h-1",
                sc.A2A_TASK_ID: task.id,
                sc.A2A_TASK_STATE: sc.A2A_COMPLETED,
            },
        ),
    ]
    # The sender's trace: every evidence span is a child of the traceparent it sent.
    _, _, parent = extract(baggage_for("run-1", "h-1"))
    from opentelemetry import trace

    sent_trace = trace.get_current_span(parent).get_span_context().trace_id
    assert {s.context.trace_id for s in spans.get_finished_spans()} == {sent_trace}


def test_request_without_baggage_records_nothing(spans: InMemorySpanExporter) -> None:
    """A plain A2A client: no run to name, so no evidence (docs/a2a.md)."""
    task = call(handler("hello"), {"content-type": "application/json"})
    assert state_name(task.status.state) == sc.A2A_COMPLETED
    assert ours(spans) == []


def test_input_required_wait_and_its_decision(spans: InMemorySpanExporter) -> None:
    h = handler("asking")

    async def ask_then_answer() -> tuple[Any, Any]:
        task = await send(h, baggage_for("run-2", "h-2"))
        # The answer carries no baggage (e.g. sent by another process of the sender): the
        # task id alone finds the handoff.
        return task, await send(h, {}, task_id=task.id)

    task, done = asyncio.run(ask_then_answer())  # one loop: the handler keeps the task live
    assert state_name(task.status.state) == sc.A2A_INPUT_REQUIRED
    assert state_name(done.status.state) == sc.A2A_COMPLETED
    waits = [a for name, a in ours(spans) if name == sc.SPAN_WAIT]
    assert waits == [
        {
            sc.RUN_ID: "run-2",
            sc.HANDOFF_ID: "h-2",
            sc.A2A_TASK_ID: task.id,
            sc.A2A_TASK_STATE: sc.A2A_INPUT_REQUIRED,
            sc.WAIT_OWNER: "billing-desk",
            sc.WAIT_REASON: "input_required",
            sc.WAIT_RESUME_TOKEN_ID: task.id,
            sc.WAIT_STATE_PERSISTED: False,
        },
        {
            sc.RUN_ID: "run-2",
            sc.HANDOFF_ID: "h-2",
            sc.A2A_TASK_ID: task.id,
            sc.WAIT_DECISION: sc.WAIT_DECISION_APPROVED,
            sc.WAIT_RESUME_TOKEN_ID: task.id,
        },
    ]
    states = [a.get(sc.A2A_TASK_STATE) for name, a in ours(spans) if name == sc.SPAN_ACCEPT]
    assert states == [sc.A2A_WORKING, sc.A2A_WORKING, sc.A2A_COMPLETED]


def test_rejected_is_no_admission(spans: InMemorySpanExporter) -> None:
    task = call(handler("refusing"), baggage_for("run-3", "h-3"))
    assert state_name(task.status.state) == sc.A2A_REJECTED
    ((name, attrs),) = ours(spans)
    assert name == sc.SPAN_ACCEPT
    assert attrs[sc.A2A_TASK_STATE] == sc.A2A_REJECTED
    assert sc.DESTINATION_STARTED not in attrs


def test_every_task_state_has_a_contract_name() -> None:
    names = {state_name(v) for v in TaskState.values()}
    assert names == set(sc.A2A_STATES)
    assert state_name(TaskState.TASK_STATE_UNSPECIFIED) == sc.A2A_UNKNOWN
    assert state_name(999) == sc.A2A_UNKNOWN  # a state a later SDK adds: unknown, no raise


def test_headers_merge_with_the_apps_own() -> None:
    headers = {"Baggage": "tenant=acme", "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}
    inject(headers, "run-9", "h-9")
    assert headers["traceparent"] == "00-" + "1" * 32 + "-" + "2" * 16 + "-01"  # the app's
    run_id, handoff_id, _ = extract(headers)
    assert (run_id, handoff_id) == ("run-9", "h-9")
    assert headers["Baggage"].startswith("tenant=acme,")


class AuthThenCancel(a2a_server.HelloWorldAgentExecutor):
    """Asks for authorization; cancels the way a2a-python's sample agent does."""

    async def execute(self, context: Any, event_queue: Any) -> None:
        updater = await a2a_server._task(context, event_queue)
        await updater.requires_auth(new_text_message("Sign in first"))

    async def cancel(self, context: Any, event_queue: Any) -> None:
        from a2a.server.tasks import TaskUpdater

        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


def test_auth_required_then_canceled(spans: InMemorySpanExporter) -> None:
    from a2a.types import CancelTaskRequest

    h = DefaultRequestHandler(
        agent_executor=AuthThenCancel(),
        task_store=InMemoryTaskStore(),
        agent_card=a2a_server.agent_card("hello", 1),
    )

    async def auth_then_cancel() -> tuple[Any, Any]:
        task = await send(h, baggage_for("run-4", "h-4"))
        context = ServerCallContext(state={"headers": {}})
        return task, await h.on_cancel_task(CancelTaskRequest(id=task.id), context)

    task, canceled = asyncio.run(auth_then_cancel())
    assert state_name(task.status.state) == sc.A2A_AUTH_REQUIRED
    assert state_name(canceled.status.state) == sc.A2A_CANCELED
    got = ours(spans)
    # Going straight to auth-required admits the agent (it ran), then the wait...
    assert [(n, a.get(sc.A2A_TASK_STATE), a.get(sc.DESTINATION_STARTED)) for n, a in got] == [
        (sc.SPAN_ACCEPT, sc.A2A_AUTH_REQUIRED, True),
        (sc.SPAN_WAIT, sc.A2A_AUTH_REQUIRED, None),
        (sc.SPAN_WAIT, None, None),
        (sc.SPAN_ACCEPT, sc.A2A_CANCELED, None),
    ]
    assert got[1][1][sc.WAIT_REASON] == "auth_required"
    # ...and canceled while waiting: the wait ended without the work going on.
    assert got[2][1][sc.WAIT_DECISION] == sc.WAIT_DECISION_REJECTED


def test_uninstrument_restores_the_sdk_and_silences_handlers_built_before() -> None:
    from a2a.client.base_client import BaseClient
    from a2a.server.request_handlers import DefaultRequestHandlerV2, LegacyRequestHandler

    originals = (
        BaseClient.__dict__["send_message"],
        DefaultRequestHandlerV2.__dict__["__init__"],
        LegacyRequestHandler.__dict__["__init__"],
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    inst = A2AInstrumentor()
    inst.instrument(tracer_provider=provider)
    assert BaseClient.__dict__["send_message"] is not originals[0]
    built_while_on = handler("hello")
    inst.uninstrument()
    assert (
        BaseClient.__dict__["send_message"],
        DefaultRequestHandlerV2.__dict__["__init__"],
        LegacyRequestHandler.__dict__["__init__"],
    ) == originals
    task = call(built_while_on, baggage_for("run-5", "h-5"))
    assert state_name(task.status.state) == sc.A2A_COMPLETED
    assert ours(exporter) == []
