"""Handoffs between services over A2A, end to end: two processes, one run.

The receiving service is a real a2a-sdk server process (a2a_server.py: a2a-samples'
helloworld agent and the same agent rejecting, asking for input, failing and never
starting, each its own uvicorn server), instrumented with `A2AInstrumentor`. The sending
service is this test process: a real a2a-sdk client (`create_client`, as the sample's
test_client.py does), instrumented too. Both export over real OTLP/HTTP into one real
collector subprocess (grace 2 s, so "never started" is judged in the test's time), and
every assertion reads the collector's API: the sender's request and the receiver's
admission must be ONE handoff of the sender's run.

What a person reading the spans would say, per scenario:

- the task completed: the remote agent started and finished — healthy;
- the agent rejected the task: the destination refused it — contract_rejected;
- the agent asked for input: the handoff waits on someone (approvals lists it; the
  in-memory task store does not persist the wait, so it is uncertain) — and once
  answered, the task completes — healthy;
- nothing listens, or the agent queued the task and never worked on it:
  destination_not_started;
- the agent started and crashed: run_failed for that handoff;
- a send from a function tool inside an Agents SDK run is a handoff OF that run, from
  the agent that called the tool.

`test_no_content_reaches_the_collector` plants a sentinel in the user's message (text and
metadata), the agents' replies, the rejection, the question and the exception — with
a2a-sdk's own OpenTelemetry tracing on in the server, which records exception texts —
and proves it reaches no API answer and no file of the collector.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# No importorskip: a2a-sdk is a dev dependency (the instrumentation's `a2a` extra), and a
# test that cannot run must fail, not skip.
import a2a_server
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import AgentCard, Role, SendMessageRequest, StreamResponse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.ports import free_port
from support.privacy import assert_content_free

from handoffscope.instrumentation import configure
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.a2a import A2AInstrumentor

SERVER = Path(__file__).with_name("a2a_server.py")
GRACE_SECONDS = 2
WAIT_OWNER = "billing-desk"


# -- the two services ------------------------------------------------------------------------


@dataclass
class Receiver:
    """The a2a_server.py process: agent key -> its base URL."""

    proc: subprocess.Popen[str]
    urls: dict[str, str]
    output: list[str] = field(default_factory=list)


def start_receiver(collector: Any, sentinel: str) -> Receiver:
    ports = {key: free_port() for key in a2a_server.AGENTS}
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.http_endpoint,
        "HANDOFFSCOPE_SENTINEL": sentinel,
        "A2A_WAIT_OWNER": WAIT_OWNER,
        # a2a-sdk's own tracing, on (its default, said out loud): it records exception
        # texts, so the collector must keep them out.
        "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED": "true",
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), json.dumps(ports)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=SERVER.parent,
    )
    receiver = Receiver(proc, {k: f"http://127.0.0.1:{p}" for k, p in ports.items()})
    assert proc.stdout is not None
    for line in proc.stdout:  # bounded by the process: it prints READY or exits
        receiver.output.append(line)
        if a2a_server.READY in line:
            break
    assert proc.poll() is None, "".join(receiver.output)

    def drain() -> None:  # keep the pipe empty so the server never blocks on a log line
        assert proc.stdout is not None
        for line in proc.stdout:
            receiver.output.append(line)

    threading.Thread(target=drain, daemon=True).start()
    return receiver


def stop_receiver(receiver: Receiver) -> None:
    """SIGTERM: uvicorn shuts down and the process flushes its spans on the way out."""
    receiver.proc.terminate()
    try:
        receiver.proc.wait(30)
    except subprocess.TimeoutExpired:
        receiver.proc.kill()
        receiver.proc.wait()


@dataclass
class Sender:
    """This process as the sending service: the instrumentor and its pipeline."""

    inst: A2AInstrumentor
    provider: TracerProvider
    sent: InMemorySpanExporter
    collector: Any
    answers: list[str] = field(default_factory=list)

    def run(self, run_id: str, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The collector's run once `until(run)` holds (asserted), its answer kept."""
        self.provider.force_flush()
        run = self.collector.run(run_id, until)
        self.answers.append(json.dumps(run))
        assert until(run), run
        return run


@contextmanager
def sending_service(collector: Any) -> Iterator[Sender]:
    """This process instrumented as the sending service `a2a-sender`, agent `triage`."""
    provider = configure(
        service_name="a2a-sender",
        endpoint=collector.http_endpoint,
        set_global=False,
        export_delay_ms=50,
    )
    sent = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(sent))
    inst = A2AInstrumentor()
    inst.instrument(tracer_provider=provider, agent_name="triage")
    try:
        yield Sender(inst, provider, sent, collector)
    finally:
        inst.uninstrument()
        provider.shutdown()


@pytest.fixture(scope="module")
def sentinel() -> str:
    return f"zqa2a{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def services(module_collector_factory: Any, sentinel: str) -> Iterator[tuple[Any, Receiver]]:
    """One collector (grace 2 s) and the receiving service, for the scenario tests."""
    collector = module_collector_factory(args=["--grace-seconds", str(GRACE_SECONDS)])
    receiver = start_receiver(collector, sentinel)
    yield collector, receiver
    stop_receiver(receiver)


@pytest.fixture
def sender(services: tuple[Any, Receiver]) -> Iterator[Sender]:
    with sending_service(services[0]) as s:
        yield s


# -- the sample client's calls -----------------------------------------------------------------


async def card_of(url: str) -> AgentCard:
    """The agent's public card, resolved as the sample's test_client.py does."""
    async with httpx.AsyncClient() as httpx_client:
        resolver = A2ACardResolver(httpx_client=httpx_client, base_url=url)
        return await resolver.get_agent_card()


async def send(
    card: AgentCard,
    text: str,
    *,
    task_id: str | None = None,
    note: str | None = None,
    streaming: bool = False,
) -> list[StreamResponse]:
    """One `send_message`, as the sample's `send_message()` (or, streaming,
    `send_steaming_message()`); every chunk."""
    client = await create_client(agent=card, client_config=ClientConfig(streaming=streaming))
    message = new_text_message(text, role=Role.ROLE_USER)
    if task_id is not None:
        message.task_id = task_id
    if note is not None:
        message.metadata.update({"note": note})
    try:
        return [chunk async for chunk in client.send_message(SendMessageRequest(message=message))]
    finally:
        await client.close()


def task_state(chunks: list[StreamResponse]) -> str:
    (chunk,) = chunks
    from handoffscope.instrumentation.a2a.states import state_name

    return state_name(chunk.task.status.state)


def only_handoff(run: dict[str, Any]) -> dict[str, Any]:
    (h,) = run["handoffs"]
    return h


def edge(h: dict[str, Any]) -> tuple[str | None, ...]:
    """What a reader checks first: the handoff's kind, sender, destination and verdict."""
    return (h["kind"], h["from_agent"], h["to_agent"], h["verdict"])


def judged(run: dict[str, Any]) -> bool:
    """Every handoff of the run has left `in_flight`."""
    return bool(run["handoffs"]) and all(h["verdict"] != sc.IN_FLIGHT for h in run["handoffs"])


def ended(status: str) -> Callable[[dict[str, Any]], bool]:
    """The run has reached `status` and every handoff of it is judged."""
    return lambda r: r["status"] == status and judged(r)


def handoff_of(
    sender: Sender, run_id: str, until: Callable[[dict[str, Any]], bool]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The collector's run once `until(run)` holds, and its one handoff."""
    run = sender.run(run_id, until)
    return run, only_handoff(run)


def delegated(to_agent: str, verdict: str, *, by: str = "triage") -> tuple[str, ...]:
    """The `edge` of a delegation from `by` (the sending agent) to `to_agent`."""
    return (sc.KIND_DELEGATION, by, to_agent, verdict)


def send_to(url: str, text: str, *, task_id: str | None = None) -> list[StreamResponse]:
    """Resolve the agent's card and send it `text`, as the sample's client does."""

    async def exchange() -> list[StreamResponse]:
        return await send(await card_of(url), text, task_id=task_id)

    return asyncio.run(exchange())


def sent_task(sender: Sender, url: str, text: str, state: str) -> tuple[str, str]:
    """Send `text` to the agent at `url`; its task must answer in `state`. Returns the task
    id and the sender's run id for it."""
    chunks = send_to(url, text)
    assert task_state(chunks) == state
    task_id = chunks[0].task.id
    run_id = sender.inst.run_id(task_id)
    assert run_id is not None
    return task_id, run_id


# -- scenarios ---------------------------------------------------------------------------------


def test_completed_task_is_one_healthy_handoff_of_the_senders_run(
    services: tuple[Any, Receiver], sender: Sender, sentinel: str
) -> None:
    """The helloworld sample's exchange: the sender's request and the receiver's admission
    meet as one handoff of the sender's run, in one trace across the two processes."""
    _, receiver = services
    task_id, run_id = sent_task(
        sender, receiver.urls["hello"], f"Hi there {sentinel}-prompt", sc.A2A_COMPLETED
    )
    assert run_id.startswith("a2a-run-")

    run, h = handoff_of(sender, run_id, ended(sc.RUN_STATUS_COMPLETED))
    assert edge(h) == delegated("Hello World Agent", sc.HEALTHY)
    assert h["destination_started"] is True
    # The receiver's evidence is in the sender's run and trace: its accept names the
    # remote agent and the task, from the other process.
    accepts = [s["attributes"] for s in run["spans"] if s["name"] == sc.SPAN_ACCEPT]
    assert {a.get(sc.GEN_AI_AGENT_NAME) for a in accepts} >= {"Hello World Agent"}
    assert {a.get(sc.A2A_TASK_STATE) for a in accepts} == {sc.A2A_WORKING, sc.A2A_COMPLETED}
    assert {a.get(sc.A2A_TASK_ID) for a in accepts} == {task_id}
    assert len(run["trace_ids"]) == 1
    # Completed, but nothing verified the result: the engine says so.
    assert (run["final_agent"], run["verdict"]) == ("triage", sc.UNVERIFIED)


def test_two_services_reporting_to_two_collectors_on_one_postgresql(
    collector_factory: Any, postgres_dsn: str, sentinel: str
) -> None:
    """Each service reports to its own collector; the two share one PostgreSQL store. The
    sender's request (collector A) and the receiver's admission (collector B) still meet as
    one handoff of the sender's run, whichever collector's judge holds the lease, and both
    collectors answer it alike."""
    args = ["--store", postgres_dsn, "--grace-seconds", str(GRACE_SECONDS)]
    near, far = collector_factory(args=args), collector_factory(args=args)
    receiver = start_receiver(far, sentinel)
    try:
        with sending_service(near) as sender:
            task_id, run_id = sent_task(
                sender, receiver.urls["hello"], f"Hi there {sentinel}-prompt", sc.A2A_COMPLETED
            )
            run, h = handoff_of(
                sender,
                run_id,
                lambda r: (
                    ended(sc.RUN_STATUS_COMPLETED)(r)
                    and r["handoffs"][0]["destination_started"] is True
                ),
            )
    finally:
        stop_receiver(receiver)
    assert edge(h) == delegated("Hello World Agent", sc.HEALTHY)
    assert (h["task_id"], h["task_state"]) == (task_id, sc.A2A_COMPLETED)
    services = {s["attributes"].get(sc.GEN_AI_AGENT_NAME) for s in run["spans"]}
    assert "Hello World Agent" in services  # the receiver's evidence, through collector B
    other = far.run(run_id, lambda r: judged(r))
    assert [edge(x) for x in other["handoffs"]] == [edge(h)]


def test_rejected_task_is_contract_rejected(
    services: tuple[Any, Receiver], sender: Sender, sentinel: str
) -> None:
    _, receiver = services
    _, run_id = sent_task(
        sender, receiver.urls["refusing"], f"Refund everything {sentinel}-prompt", sc.A2A_REJECTED
    )

    run, h = handoff_of(sender, run_id, ended(sc.RUN_STATUS_FAILED))
    assert edge(h) == delegated("Refusing Agent", sc.CONTRACT_REJECTED)
    # A refusal is not an admission: the agent never started on the task.
    assert h["destination_started"] is None
    assert h["rejection_reason"] is None  # A2A gives no reason code; its text stays home
    assert run["verdict"] == sc.CONTRACT_REJECTED


def test_input_required_is_a_wait_then_the_answer_completes_it(
    services: tuple[Any, Receiver], sender: Sender, sentinel: str
) -> None:
    collector, receiver = services
    url = receiver.urls["asking"]
    task_id, run_id = sent_task(
        sender, url, f"Where is my parcel {sentinel}-prompt", sc.A2A_INPUT_REQUIRED
    )

    run, h = handoff_of(sender, run_id, ended(sc.RUN_STATUS_INTERRUPTED))
    # An in-memory task store loses the wait on a restart, and A2A names no deadline:
    # a wait whose resumption is not assured.
    assert edge(h) == delegated("Asking Agent", sc.WAIT_UNCERTAIN)
    assert (h["destination_started"], h["wait"]) == (True, True)
    approvals = collector.api("/api/v1/approvals")["approvals"]
    sender.answers.append(json.dumps(approvals))
    (wait,) = [a for a in approvals if a["run_id"] == run_id]
    assert (wait["handoff_id"], wait["from_agent"], wait["to_agent"]) == (
        h["handoff_id"],
        "triage",
        "Asking Agent",
    )
    assert (wait["owner"], wait["reason"], wait["resume_token_id"]) == (
        WAIT_OWNER,
        "input_required",
        task_id,
    )
    assert (wait["verdict"], wait["missing"]) == (
        sc.WAIT_UNCERTAIN,
        ["deadline", "state_persisted"],
    )
    assert wait["state_persisted"] is False

    # The answer continues the same task, so the same handoff: no second request.
    answer = send_to(url, f"Order 7 {sentinel}-answer", task_id=task_id)
    assert task_state(answer) == sc.A2A_COMPLETED
    assert sender.inst.run_id(task_id) == run_id

    run, h = handoff_of(
        sender,
        run_id,
        lambda r: r["status"] == sc.RUN_STATUS_COMPLETED and r["handoffs"][0]["wait_decision"],
    )
    assert (h["verdict"], h["wait_decision"]) == (sc.HEALTHY, sc.WAIT_DECISION_APPROVED)
    assert run["pending_approvals"] == 0
    approvals = collector.api("/api/v1/approvals")["approvals"]
    assert not [a for a in approvals if a["run_id"] == run_id]


def test_nothing_listening_is_destination_not_started(sender: Sender) -> None:
    """The card is known, but nothing listens at its URL: the task never reached anyone."""
    from a2a.client import A2AClientError
    from a2a.types import AgentCapabilities, AgentInterface

    url = f"http://127.0.0.1:{free_port()}"
    card = AgentCard(
        name="Billing Agent",
        description="gone",
        version="0.0.1",
        capabilities=AgentCapabilities(streaming=False),
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0")
        ],
    )
    run_id = f"app-run-{uuid.uuid4().hex[:12]}"
    rec = sender.inst.recorder
    assert rec is not None
    rec.run_started(run_id, agent="triage")  # the app's own run this time
    with pytest.raises(A2AClientError), sender.inst.sending(run_id, agent="triage"):
        asyncio.run(send(card, "Anyone there?"))
    rec.run_ended(run_id, sc.RUN_STATUS_FAILED, final_agent="triage")

    _, h = handoff_of(sender, run_id, ended(sc.RUN_STATUS_FAILED))
    assert edge(h) == delegated("Billing Agent", sc.DESTINATION_NOT_STARTED)
    assert h["destination_started"] is False


def test_task_queued_but_never_started_is_destination_not_started_after_the_grace(
    services: tuple[Any, Receiver], sender: Sender
) -> None:
    _, receiver = services
    task_id, run_id = sent_task(
        sender, receiver.urls["idle"], "Please look into it", sc.A2A_SUBMITTED
    )

    # In flight until the grace has passed, then judged (the collector judges on query).
    run, h = handoff_of(sender, run_id, judged)
    assert edge(h) == delegated("Idle Agent", sc.DESTINATION_NOT_STARTED)
    assert h["destination_started"] is None
    assert run["status"] == sc.RUN_STATUS_STARTED  # a run of its own, its task still queued
    # The task id came from the client side alone: the receiver recorded nothing.
    assert [s["name"] for s in run["spans"] if s["name"] == sc.SPAN_ACCEPT] == []
    requests = [s["attributes"] for s in run["spans"] if s["name"] == sc.SPAN_REQUEST]
    assert {r.get(sc.A2A_TASK_ID) for r in requests} == {None, task_id}


def test_failed_task_is_run_failed(
    services: tuple[Any, Receiver], sender: Sender, sentinel: str
) -> None:
    """The agent started, then raised: the SDK answers with an error and marks the task
    failed; the receiver says so, and that handoff (and the run) failed."""
    from a2a.utils.errors import InternalError

    _, receiver = services
    run_id = f"app-run-{uuid.uuid4().hex[:12]}"

    async def scenario() -> None:
        card = await card_of(receiver.urls["failing"])
        with sender.inst.sending(run_id, agent="triage"):
            await send(card, f"Post the refund {sentinel}-prompt")

    with pytest.raises(InternalError):  # a JSON-RPC error answer: the server was reached
        asyncio.run(scenario())

    run, h = handoff_of(
        sender, run_id, lambda r: judged(r) and r["handoffs"][0]["verdict"] == sc.RUN_FAILED
    )
    assert edge(h) == delegated("Failing Agent", sc.RUN_FAILED)
    # It had started: the error answer did not make the client call it unreachable.
    assert h["destination_started"] is True
    states = {
        s["attributes"].get(sc.A2A_TASK_STATE) for s in run["spans"] if s["name"] == sc.SPAN_ACCEPT
    }
    assert states == {sc.A2A_WORKING, sc.A2A_FAILED}
    assert run["verdict"] == sc.RUN_FAILED


# -- inside an Agents SDK run --------------------------------------------------------------


async def concierge_asks_billing(url: str, sentinel: str) -> str:
    """An Agents SDK agent (`concierge`) whose function tool asks the remote agent over A2A,
    driven offline by the SDK's own ScriptedModel, content capture on. Returns the run id
    (the SDK trace id)."""
    from a2a.helpers import get_artifact_text
    from agents import Agent, RunConfig, Runner, function_tool, gen_trace_id
    from agents.testing import ScriptedModel, assistant_message, function_call

    card = await card_of(url)

    @function_tool
    async def ask_billing(question: str) -> str:
        """Ask the billing service's agent a question."""
        (chunk,) = await send(card, question, note=f"{sentinel}-metadata")
        return get_artifact_text(chunk.task.artifacts[0])

    model = ScriptedModel(
        [
            [function_call("ask_billing", {"question": f"{sentinel}-tool-arg"}, call_id="c1")],
            [assistant_message(f"{sentinel}-final-answer")],
        ],
        emit_traces=True,
    )
    concierge = Agent(
        name="concierge", instructions=f"{sentinel}-instructions", model=model, tools=[ask_billing]
    )
    trace_id = gen_trace_id()
    result = await Runner.run(
        concierge,
        f"{sentinel}-prompt",
        run_config=RunConfig(
            workflow_name="front-desk", trace_id=trace_id, trace_include_sensitive_data=True
        ),
    )
    assert result.final_output == f"{sentinel}-final-answer"
    return trace_id


@contextmanager
def agents_sdk_instrumented(provider: TracerProvider) -> Iterator[None]:
    from agents import set_trace_processors

    from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_trace_processors([])  # nothing exported to OpenAI from a test
    oai = OpenAIAgentsInstrumentor()
    oai.instrument(tracer_provider=provider, replace_processors=True)
    try:
        yield
    finally:
        oai.uninstrument()


def test_send_from_an_agents_sdk_tool_is_a_handoff_of_that_run(
    services: tuple[Any, Receiver], sender: Sender, sentinel: str
) -> None:
    _, receiver = services
    with agents_sdk_instrumented(sender.provider):
        run_id = asyncio.run(concierge_asks_billing(receiver.urls["hello"], sentinel))

    run, h = handoff_of(sender, run_id, ended(sc.RUN_STATUS_COMPLETED))
    # The SDK run's agent sent it (not the instrumentor's `agent_name` "triage"), and the
    # remote's admission joined that run.
    assert edge(h) == delegated("Hello World Agent", sc.HEALTHY, by="concierge")
    assert h["destination_started"] is True
    assert (run["run_id"], run["final_agent"]) == (run_id, "concierge")


def test_send_from_a_langgraph_node_is_a_handoff_of_that_run(
    services: tuple[Any, Receiver], sender: Sender, sentinel: str
) -> None:
    """A graph node that asks the remote agent: a handoff of the graph's run, from the node."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from handoffscope.instrumentation.langgraph import LangGraphInstrumentor

    _, receiver = services

    class State(TypedDict):
        question: str
        answer: str

    async def concierge(state: State) -> dict[str, str]:
        card = await card_of(receiver.urls["hello"])
        (chunk,) = await send(card, state["question"])
        return {"answer": chunk.task.artifacts[0].parts[0].text}

    builder = StateGraph(State)
    builder.add_node("concierge", concierge)
    builder.add_edge(START, "concierge")
    builder.add_edge("concierge", END)
    graph = builder.compile()

    lg = LangGraphInstrumentor()
    lg.instrument(tracer_provider=sender.provider)
    try:
        config = {"configurable": {"thread_id": f"thread-{uuid.uuid4().hex[:8]}"}}
        out = asyncio.run(graph.ainvoke({"question": f"{sentinel}-prompt"}, config))
        assert f"{sentinel}-prompt" in out["answer"]
        run_id = lg.run_id(config)
    finally:
        lg.uninstrument()
    assert run_id is not None

    _, h = handoff_of(sender, run_id, ended(sc.RUN_STATUS_COMPLETED))
    assert edge(h) == delegated("Hello World Agent", sc.HEALTHY, by="concierge")


# -- no content ---------------------------------------------------------------------------------


def test_no_content_reaches_the_collector(collector_factory: Any) -> None:
    """Every scenario once more into a fresh collector, the sentinel in everything either
    side wrote; then no API answer, no byte the sender exported and no file of the
    collector holds it."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    sentinel = f"zqa2a{uuid.uuid4().hex[:10]}"
    collector = collector_factory(args=["--grace-seconds", str(GRACE_SECONDS)])
    receiver = start_receiver(collector, sentinel)
    try:
        with sending_service(collector) as sender:

            async def everything() -> list[str]:
                runs = []
                for key in ("hello", "refusing", "asking", "failing", "idle"):
                    card = await card_of(receiver.urls[key])
                    streaming = key in ("hello", "asking")  # both of the sample's ways
                    try:
                        chunks = await send(
                            card,
                            f"{sentinel}-prompt {key}",
                            note=f"{sentinel}-metadata",
                            streaming=streaming,
                        )
                    except Exception:  # the failing agent's error answer
                        continue
                    task = chunks[0].task
                    if key == "asking":
                        await send(card, f"{sentinel}-answer", task_id=task.id, streaming=streaming)
                    runs.append(sender.inst.run_id(task.id) or "")
                return runs

            runs = asyncio.run(everything())
            with agents_sdk_instrumented(sender.provider):
                runs.append(asyncio.run(concierge_asks_billing(receiver.urls["hello"], sentinel)))
            for run_id in runs:
                sender.run(run_id, judged)
            sender.provider.force_flush()
            wire = encode_spans(sender.sent.get_finished_spans()).SerializeToString()
            assert sentinel.encode() not in wire
            assert b"Hello World Agent" in wire  # the bytes checked are the real ones
    finally:
        stop_receiver(receiver)
    # The content was really there: the receiver's own log printed the exception's text,
    # and a2a-sdk's own spans (which record it) reached the collector and were refused.
    assert any(sentinel in line for line in receiver.output), "the sentinel was never planted"
    collector.healthz()
    assert collector.metric("handoffscope_spans_refused_total", reason="not_evidence") > 0
    assert_content_free(
        collector,
        sentinel,
        stored="Hello World Agent",
        answers={f"answer {i}": a for i, a in enumerate(sender.answers)},
    )
