"""Semantic Kernel's native spans (semantic-kernel 1.45, `HandoffOrchestration`).

SK traces itself when `SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS` (or
`..._SENSITIVE`, which adds content) is true, each layer under a scope of its own:

- `semantic_kernel.utils.telemetry.agent_diagnostics.decorators`: `invoke_agent <name>`,
  one per agent turn, with `gen_ai.agent.name`;
- `semantic_kernel.connectors.ai.chat_completion_client_base`: `AutoFunctionInvocationLoop`
  (`sk.available_functions`: the functions the model was offered);
- `semantic_kernel.functions.kernel_function`: `execute_tool <plugin>-<function>`, with
  `gen_ai.tool.name` and `gen_ai.tool.call.id`;
- `semantic_kernel.utils.telemetry.model_diagnostics.decorators`: `chat <model>`;
- `agent_runtime InProcessRuntime`: the runtime's messaging spans (message types and
  topics, no message bodies).

- `chat <model>` (one model call, under `AutoFunctionInvocationLoop` under the agent's
  `invoke_agent`, read across SK's scopes): its usage (`handoff.usage`,
  base.model_call_usage) — `gen_ai.usage.input_tokens` / `output_tokens` (what the chat
  service put in its message's `usage` metadata), `gen_ai.request.model` — for that
  agent.

All five are claimed, so the LLM, loop and runtime spans are absorbed (dropped and
counted) rather than refused. Evidence:

- `invoke_agent`: an *arrival* of `gen_ai.agent.name` (evidence.pair_arrivals) and the
  run's possible final agent; `failed` when its status is ERROR (an agent's failure ends
  a handoff orchestration: SK's actor reports it to the orchestration's exception
  callback, and `get()` raises it).
- `execute_tool Handoff-transfer_to_<agent>` (the function SK's handoff actor makes of
  each declared handoff): the request, to the agent the function is named for, with the
  tool-call id as its handoff id. Its sender is the agent of the `invoke_agent` two levels
  up, in another scope (read across SK's scopes: `joins_scopes`); when that span was
  exported apart, the request names none and the judge takes the agent of the latest
  arrival before it (evidence.pair_senders). `handoff.route.declared` is true: SK
  executes only the functions in the agent's kernel, and the handoff actor puts there one
  transfer function per declared handoff, so a call to an undeclared one is answered "not
  part of the provided tools" before any span (nothing to judge; docs/foreign-spans.md).
- `execute_tool Handoff-complete_task`: the agent completed the task (SK's handoff
  actor then reports the orchestration's result): the run ended, `completed`.

Run identity: one orchestration (`invoke()`) is one run. SK's runtime starts a trace per
message it delivers, so an orchestration spans one trace only when the app runs it inside
a span of its own, as SK's observability samples do (`with tracer.start_as_current_span(
"main")`); then the run is that trace (two orchestrations in one app span read as one
run). Without one, as an app that did not add it runs, every agent turn is a trace of its
own, rooted at the runtime's `agent_runtime send`/`publish` span. What ties those traces
together is the orchestration's topic: `invoke()` names a fresh one (`uuid4().hex`) and
puts it in every actor's type (`<agent>_<topic>`) and topic, which the runtime spans carry
as `messaging.destination` (`RefundAgent_<topic>.(default)-A`, `<topic>.(default)-T`). So
when a span's ancestors, read across SK's scopes (`joins_scopes`), reach a trace root that
is SK's own and one of them names a topic, the run id is `sk-<topic>`; otherwise the trace
id. If the SDK exported a span apart from its runtime ancestors (a batch cut between
them), that span keeps its trace id and its turn reads as a run apart: less, never a
guess. `sk.available_functions` is not read: it is on the `AutoFunctionInvocationLoop`
span, a parent of `execute_tool`, and the executed transfer already says the route was
declared.

Cannot show: control state, tool-call closure, context keys, waits, verifier outcomes;
a call to an undeclared handoff (refused before any span); why a run that stopped without
completing stopped (an app's `cancel()` is on no span).
"""

from __future__ import annotations

import re
from typing import ClassVar

from handoffscope.collector.processor.translate.base import (
    ERROR,
    MODEL_OPERATIONS,
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
    model_call_usage,
    run_span,
    tool_call_request,
)
from handoffscope.instrumentation import semconv as sc

SCOPE_AGENT = "semantic_kernel.utils.telemetry.agent_diagnostics.decorators"
SCOPE_LOOP = "semantic_kernel.connectors.ai.chat_completion_client_base"
SCOPE_FUNCTION = "semantic_kernel.functions.kernel_function"
SCOPE_MODEL = "semantic_kernel.utils.telemetry.model_diagnostics.decorators"
SCOPE_RUNTIME = "agent_runtime InProcessRuntime"
DESTINATION = "messaging.destination"
# An orchestration's topic (`uuid4().hex`) in a runtime destination: an actor type
# `<agent>_<topic>` or the topic itself, then `.(<key>)-A` (an agent) or `-T` (a topic).
TOPIC = re.compile(r"(?:^|_)([0-9a-f]{32})\.\(")
RUN_PREFIX = "sk-"
_DEPTH = 64
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
# SK's handoff actor names its plugin `Handoff` (HANDOFF_PLUGIN_NAME) and its functions
# `transfer_to_<agent>` and `complete_task`; a fully qualified name joins them with `-`.
TRANSFER_PREFIX = "Handoff-transfer_to_"
COMPLETE_TASK = "Handoff-complete_task"


class SemanticKernelTranslator(Translator):
    source: ClassVar[str] = "semantic_kernel"
    label: ClassVar[str] = "Semantic Kernel"
    scopes: ClassVar[tuple[str, ...]] = (
        SCOPE_AGENT,
        SCOPE_LOOP,
        SCOPE_FUNCTION,
        SCOPE_MODEL,
        SCOPE_RUNTIME,
    )
    # invoke_agent's parent is the runtime's `process` span, in another scope (run_id).
    joins_scopes: ClassVar[bool] = True
    # The route is observed: an executed transfer function is a declared handoff (above).
    unobserved: ClassVar[tuple[str, ...]] = (
        sc.BOUNDARY_CONTROL,
        sc.BOUNDARY_TOOL_PROTOCOL,
        sc.BOUNDARY_CONTEXT,
    )

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        operation = span.text(OPERATION)
        if operation in MODEL_OPERATIONS:
            return model_call_usage(span)
        if operation == "invoke_agent":
            agent = span.text(AGENT_NAME)
            if not agent:
                return []
            attrs: dict[str, object] = {sc.RUN_FINAL_AGENT: agent}
            if span.status == ERROR:
                attrs[sc.RUN_STATUS] = sc.RUN_STATUS_FAILED
            return [run_span(**attrs), arrival(agent)]
        if operation != "execute_tool" or span.status == ERROR:
            # A handoff function that raised moved nothing; SK hands the error to the model.
            return []
        tool = span.text(TOOL_NAME) or ""
        if tool == COMPLETE_TASK:
            return [run_span(**{sc.RUN_STATUS: sc.RUN_STATUS_COMPLETED})]
        to = tool.removeprefix(TRANSFER_PREFIX) if tool.startswith(TRANSFER_PREFIX) else ""
        if not to:
            return []
        owner = span.ancestor(lambda s: s.text(OPERATION) == "invoke_agent")
        sender = owner.text(AGENT_NAME) if owner else None
        evidence = tool_call_request(span, "sk", sender or "", to)
        if not sender:
            # Its agent run was exported apart: the judge names it (pair_senders), not "".
            del evidence.attributes[sc.FROM_AGENT]
        evidence.attributes[sc.ROUTE_DECLARED] = True
        return [evidence]

    def run_id(self, span: ForeignSpan) -> str:
        """`sk-<topic>` when the span's trace was started by SK's runtime and an ancestor
        names the orchestration's topic; else the trace id (module docstring)."""
        topic: str | None = None
        node = span
        for _ in range(_DEPTH):
            if topic is None:
                found = TOPIC.search(node.text(DESTINATION) or "")
                topic = found.group(1) if found else None
            parent = node.parent()
            if parent is None:
                break
            node = parent
        # A parent outside the batch (the app's own span, or one exported apart) leaves
        # `node` a non-root: the trace is not SK's alone, and its id stays the run.
        if topic is not None and node.parent_span_id is None:
            return f"{RUN_PREFIX}{topic}"
        return span.trace_id
