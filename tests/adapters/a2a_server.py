"""A2A server agents for tests/adapters/test_a2a.py, each a real a2a-sdk server, in one process.

`python a2a_server.py '{"hello": 41001, "refusing": 41002, ...}'` serves every agent named
in the JSON on its port of 127.0.0.1, each its own Starlette app under its own uvicorn
server (as a2a-python's samples/hello_world_agent.py runs several servers with
`asyncio.gather`), and prints `A2A-SERVERS-READY` once all listen. The process is the
receiving SERVICE: it instruments itself with `A2AInstrumentor` before any request handler
is built and reports to the collector named by `OTEL_EXPORTER_OTLP_ENDPOINT`.

`hello` is a2a-samples' Python helloworld agent (samples/python/agents/helloworld,
a2a-sdk 1.x): its `HelloWorldAgent`, `HelloWorldAgentExecutor`, `AgentSkill`, public
`AgentCard`, `DefaultRequestHandler` with an `InMemoryTaskStore`, agent-card and JSON-RPC
routes and a Starlette app, reproduced as published — except that the port is the test's,
the card's name is the agent's, and its status and artifact texts also carry the
sentinel. The others are the same executor with the step the A2A protocol allows instead
of doing the work — each what a real agent does:

- `refusing`: rejects the task (`TaskUpdater.reject`, its reason in the message);
- `asking`: asks for input (`requires_input`); the answer resumes it, and it completes;
- `failing`: starts working, then raises (the SDK marks the task failed);
- `idle`: accepts the task (enqueues it, `submitted`) and never starts it.

Every text an agent writes carries `$HANDOFFSCOPE_SENTINEL` (the reply artifact, status
messages, the rejection, the question, the exception), so none of it may reach the
collector.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import uvicorn
from a2a.helpers import (
    get_message_text,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState
from starlette.applications import Starlette

from handoffscope.instrumentation import configure
from handoffscope.instrumentation.a2a import A2AInstrumentor

SENTINEL = os.environ.get("HANDOFFSCOPE_SENTINEL", "SENTINEL-unset-a2a")
READY = "A2A-SERVERS-READY"


# -- a2a-samples' helloworld, as published -------------------------------------------------


class HelloWorldAgent:
    """Hello World Agent."""

    async def invoke(self, user_request: str) -> str:
        """Invoke the Hello World agent to generate a response."""
        return f"Hello, World! I have received your request ({user_request})"


class HelloWorldAgentExecutor(AgentExecutor):
    """Test AgentProxy Implementation."""

    def __init__(self) -> None:
        self.agent = HelloWorldAgent()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Process user request."""
        # 1. Collect a task from request context
        if context.current_task:
            task = context.current_task
        else:
            # 1.1 If there is no task, create one and add it event queue
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)

        # 2. Update task status in EventQueue using TaskUpdater class object
        task_updater = TaskUpdater(
            event_queue=event_queue, task_id=task.id, context_id=task.context_id
        )
        await task_updater.update_status(
            state=TaskState.TASK_STATE_WORKING,
            message=new_text_message(f"Processing request... {SENTINEL}-status"),
        )

        # 3. Collect user request from request content and invoke LLM agent to generate content
        query = get_message_text(context.message)
        if query:
            result = await self.agent.invoke(user_request=query)
        else:
            result = "No text input is provided!"

        # 4. Add generated response as an artifact to EventQueue
        await task_updater.add_artifact(
            parts=[new_text_part(text=f"{result} {SENTINEL}-artifact", media_type="text/plain")]
        )
        print("Result: ", result)

        # 5. Update task status to completed
        await task_updater.update_status(
            state=TaskState.TASK_STATE_COMPLETED,
            message=new_text_message("Request is completed!"),
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Raise exception as cancel is not supported."""
        raise NotImplementedError("Cancel is not supported.")


# -- the same agent taking the other steps A2A allows --------------------------------------


async def _task(context: RequestContext, event_queue: EventQueue) -> TaskUpdater:
    if context.current_task:
        task = context.current_task
    else:
        task = new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
    return TaskUpdater(event_queue=event_queue, task_id=task.id, context_id=task.context_id)


class RefusingExecutor(HelloWorldAgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _task(context, event_queue)
        await updater.reject(new_text_message(f"I will not do that: {SENTINEL}-rejection"))


class AskingExecutor(HelloWorldAgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            updater = await _task(context, event_queue)
            await updater.start_work(new_text_message(f"Looking... {SENTINEL}-status"))
            await updater.requires_input(new_text_message(f"Which order? {SENTINEL}-question"))
            return
        await super().execute(context, event_queue)  # the answer: work and complete


class FailingExecutor(HelloWorldAgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _task(context, event_queue)
        await updater.start_work(new_text_message(f"Processing request... {SENTINEL}-status"))
        raise RuntimeError(f"the ledger is down: {SENTINEL}-exception")


class IdleExecutor(HelloWorldAgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await _task(context, event_queue)  # queued, never worked on


AGENTS: dict[str, tuple[str, type[AgentExecutor]]] = {
    "hello": ("Hello World Agent", HelloWorldAgentExecutor),
    "refusing": ("Refusing Agent", RefusingExecutor),
    "asking": ("Asking Agent", AskingExecutor),
    "failing": ("Failing Agent", FailingExecutor),
    "idle": ("Idle Agent", IdleExecutor),
}
"""Key -> (AgentCard name, executor)."""


def agent_card(key: str, port: int) -> AgentCard:
    """The helloworld sample's public card, named for agent `key`, served on `port`."""
    skill = AgentSkill(
        id="echo_bot",
        name="Echo Bot",
        description='An example agent that acknowledges client request and responds with a "Hello World" message.',
        input_modes=["text/plain"],
        output_modes=["text/plain"],
        tags=["a2a", "echo-example"],
        examples=["hi", "how are you"],
    )
    return AgentCard(
        name=AGENTS[key][0],
        description="Just a hello world agent",
        version="0.0.1",
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        capabilities=AgentCapabilities(streaming=True, extended_agent_card=True),
        supported_interfaces=[
            AgentInterface(
                protocol_binding="JSONRPC",
                url=f"http://127.0.0.1:{port}",
                protocol_version="1.0",
            )
        ],
        skills=[skill],
    )


def request_handler(key: str, card: AgentCard) -> DefaultRequestHandler:
    """The sample's request handler (built after `instrument()`, as an app does)."""
    return DefaultRequestHandler(
        agent_executor=AGENTS[key][1](),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )


def app_for(key: str, port: int) -> Starlette:
    """The helloworld sample's server, for agent `key` on `port`."""
    public_agent_card = agent_card(key, port)
    routes = []
    routes.extend(create_agent_card_routes(public_agent_card))
    routes.extend(create_jsonrpc_routes(request_handler(key, public_agent_card), "/"))
    return Starlette(routes=routes)


async def serve(ports: dict[str, int]) -> None:
    servers = [
        uvicorn.Server(uvicorn.Config(app_for(key, port), host="127.0.0.1", port=port))
        for key, port in ports.items()
    ]
    tasks = [asyncio.create_task(s.serve()) for s in servers]
    while not all(s.started for s in servers):
        if any(t.done() for t in tasks):  # one could not start (its port was taken)
            for s in servers:
                s.should_exit = True
            await asyncio.gather(*tasks, return_exceptions=True)
            sys.exit("an A2A server did not start")
        await asyncio.sleep(0.02)
    print(READY, flush=True)
    await asyncio.gather(*tasks)


def main() -> None:
    ports = {k: int(v) for k, v in json.loads(sys.argv[1]).items()}
    provider = configure(service_name="a2a-receiver", export_delay_ms=50)
    A2AInstrumentor().instrument(
        tracer_provider=provider,
        wait_owner=os.environ.get("A2A_WAIT_OWNER") or None,
    )
    try:
        asyncio.run(serve(ports))
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
