"""Microsoft Agent Framework's native spans (scope `agent_framework`).

MAF traces a workflow itself (`configure_otel_providers()` / `enable_instrumentation()`):
one trace per `workflow.run(...)` call, rooted at `workflow.run`, so the run id is the
trace id. A `HandoffBuilder` workflow is a fully connected graph of
`HandoffAgentExecutor`s, one per agent, whose executor id is the agent's name; an agent
hands off by calling its generated `handoff_to_<agent>` tool, which MAF's middleware
intercepts (no `execute_tool` span: the call and its id are only in the chat span's
message content), and the executor then sends its destination a message addressed to it.
Measured with agent-framework-core 1.23.0 and agent-framework-orchestrations 1.4.0.

- `workflow.run`: the run's start and end. ERROR with `error.type`
  `WorkflowConvergenceException` (an attribute: the exception's class name, content-free)
  is the workflow's superstep limit (`max_iterations`, 100 by default), its turn limit:
  `max_turns`. Any other ERROR is `failed`; otherwise `completed`. The status description,
  the `workflow.error` event's `error.message` and the exception event are free text,
  never read.
- `message.send` naming `message.destination_executor_id` (a message addressed to one
  executor; the broadcasts that keep every agent's copy of the conversation name none):
  the handoff request, from the `executor.id` of its parent `executor.process` span (when
  it travelled in the same export) to the destination. Its handoff id is derived from
  the span's own id (`maf-<span id>`), which MAF also puts as the span LINK of every span
  that delivers the message — so:
- `edge_group.process` naming both `message.source_id` and `message.target_id` (the
  delivery of an addressed message; `internal:<id>` sources are the workflow's own input
  and replies from the user, not an agent): the same request again, complete on its own
  (from the source, to the target, its id from the span's link), so a handoff whose
  `message.send` went in another export than its parent is still named. The request seen
  twice is one handoff (same run, same id).
- `invoke_agent`: an *arrival* of `gen_ai.agent.name` (evidence.pair_arrivals: the judge
  admits with it the request before it that names this agent), and the run's possible
  final agent. A root `invoke_agent` (an agent run outside any workflow) is the run
  itself: `failed` when its status is ERROR, else `completed`.

- `chat <model>` (one model call, under its agent's `invoke_agent`): its usage
  (`handoff.usage`, base.model_call_usage) — `gen_ai.usage.input_tokens` /
  `output_tokens`, `gen_ai.request.model` (else `gen_ai.response.model`) — for the agent
  of the nearest `invoke_agent` ancestor in the same export. `invoke_agent` may carry the
  total of its calls: never read, it would count twice.

A ping-pong therefore reads as handoffs whose destinations all started but the last: the
limit stops the workflow with that request's message undelivered, and the run is
`max_turns` — a loop (docs/architecture.md, Verdicts, rule 7).

Cannot show: an attempted handoff MAF refused (a `handoff_to_<agent>` the agent was not
given is answered "not found" to the model inside its turn: only the chat span's message
content shows it, so there is no handoff to judge), the handoff's tool-call id and its
closure, control state, declared routes (HandoffBuilder only offers an agent the tools of
its declared handoffs, so every handoff that happened was declared; the spans do not
say which were), context keys, waits (a run that ends waiting for the user's reply —
`request_info` — ends like a completed one), verifier outcomes. Messages carried over a
plain edge (no addressee: SequentialBuilder, `WorkflowBuilder.add_edge`) are not read.
"""

from __future__ import annotations

from typing import ClassVar

from handoffscope.collector.processor.translate.base import (
    ERROR,
    MODEL_OPERATIONS,
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
    model_call_usage,
    request,
    run_span,
)
from handoffscope.instrumentation import semconv as sc

SCOPE = "agent_framework"
WORKFLOW_RUN = "workflow.run"
MESSAGE_SEND = "message.send"
EXECUTOR_PROCESS = "executor.process"
EDGE_GROUP_PROCESS = "edge_group.process"
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
ERROR_TYPE = "error.type"
EXECUTOR_ID = "executor.id"
DESTINATION = "message.destination_executor_id"
SOURCE_ID = "message.source_id"
TARGET_ID = "message.target_id"
INTERNAL_PREFIX = "internal:"
"""MAF's source id for messages the workflow itself injects (its input, the user's reply)."""
LIMIT_ERROR = "WorkflowConvergenceException"
"""What the runner raises when `max_iterations` supersteps still left messages to deliver."""


def _span_name(span: ForeignSpan) -> str:
    # MAF names executor and edge-group spans "<kind> <id>": match the kind only.
    return span.name.split(" ", 1)[0]


def _handoff(span_id: str, sender: str, destination: str) -> Evidence:
    return request(
        **{
            sc.HANDOFF_ID: f"maf-{span_id}",
            sc.KIND: sc.KIND_HANDOFF,
            sc.FROM_AGENT: sender,
            sc.TO_AGENT: destination,
        }
    )


class AgentFrameworkTranslator(Translator):
    source: ClassVar[str] = "agent_framework"
    label: ClassVar[str] = "Microsoft Agent Framework"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE,)

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        name = _span_name(span)
        if name == WORKFLOW_RUN:
            status = sc.RUN_STATUS_COMPLETED
            if span.status == ERROR:
                limit = span.text(ERROR_TYPE) == LIMIT_ERROR
                status = sc.RUN_STATUS_MAX_TURNS if limit else sc.RUN_STATUS_FAILED
            return [run_span(**{sc.RUN_STATUS: status, sc.RUN_STARTED: span.start_ns})]
        if name == MESSAGE_SEND:
            destination = span.text(DESTINATION)
            parent = span.parent()
            if not destination or parent is None or _span_name(parent) != EXECUTOR_PROCESS:
                return []
            sender = parent.text(EXECUTOR_ID)
            if not sender or sender == destination:
                return []
            return [_handoff(span.span_id, sender, destination)]
        if name == EDGE_GROUP_PROCESS:
            sender, destination = span.text(SOURCE_ID), span.text(TARGET_ID)
            links = span.linked_span_ids()
            if (
                not sender
                or not destination
                or sender.startswith(INTERNAL_PREFIX)
                or sender == destination
                or len(links) != 1
            ):
                return []
            return [_handoff(links[0], sender, destination)]
        operation = span.text(OPERATION)
        if operation in MODEL_OPERATIONS:
            return model_call_usage(span)
        if operation == "invoke_agent":
            agent = span.text(AGENT_NAME)
            if not agent:
                return []
            attrs: dict[str, object] = {sc.RUN_FINAL_AGENT: agent}
            if span.parent_span_id is None:
                # An agent run outside any workflow (`agent.run(...)`): the run itself.
                failed = span.status == ERROR
                attrs[sc.RUN_STATUS] = sc.RUN_STATUS_FAILED if failed else sc.RUN_STATUS_COMPLETED
                attrs[sc.RUN_STARTED] = span.start_ns
            return [run_span(**attrs), arrival(agent)]
        return []
