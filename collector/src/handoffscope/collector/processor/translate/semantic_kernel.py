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

All five are claimed, so the LLM, loop and runtime spans are absorbed (dropped and
counted) rather than refused. Evidence:

- `invoke_agent`: an *arrival* of `gen_ai.agent.name` (evidence.pair_arrivals) and the
  run's possible final agent; `failed` when its status is ERROR (an agent's failure ends
  a handoff orchestration: SK's actor reports it to the orchestration's exception
  callback, and `get()` raises it).
- `execute_tool Handoff-transfer_to_<agent>` (the function SK's handoff actor makes of
  each declared handoff): the request, to the agent the function is named for, with the
  tool-call id as its handoff id. Its sender is on `invoke_agent`, two levels up and in
  another scope (the core reads a parent only within one scope), so the request names
  none and the judge takes the agent of the latest arrival before it
  (evidence.pair_senders). `handoff.route.declared` is true: SK executes only the
  functions in the agent's kernel, and the handoff actor puts there one transfer function
  per declared handoff, so a call to an undeclared one is answered "not part of the
  provided tools" before any span (nothing to judge; docs/foreign-spans.md).
- `execute_tool Handoff-complete_task`: the agent completed the task (SK's handoff
  actor then reports the orchestration's result): the run ended, `completed`.

Run identity: the trace id. SK's runtime starts a trace per message it delivers, so one
orchestration spans one trace only when the app runs it inside a span of its own, as SK's
observability samples do (`with tracer.start_as_current_span("main")`); without one,
every agent turn is a run of its own here, and each handoff reads
`destination_not_started` (its destination ran in another trace). The orchestration id
that ties those traces together is only on the runtime spans (`messaging.destination`),
and the agent's runtime `process` span is in another scope than `invoke_agent`. `sk.available_functions` is not read: it is on
the `AutoFunctionInvocationLoop` span, in another scope than the `execute_tool` it
would judge.

Cannot show: control state, tool-call closure, context keys, waits, verifier outcomes;
a call to an undeclared handoff (refused before any span); why a run that stopped without
completing stopped (an app's `cancel()` is on no span).
"""

from __future__ import annotations

from typing import ClassVar

from handoffscope.collector.processor.translate.base import (
    ERROR,
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
    run_span,
    tool_call_request,
)
from handoffscope.instrumentation import semconv as sc

SCOPE_AGENT = "semantic_kernel.utils.telemetry.agent_diagnostics.decorators"
SCOPE_LOOP = "semantic_kernel.connectors.ai.chat_completion_client_base"
SCOPE_FUNCTION = "semantic_kernel.functions.kernel_function"
SCOPE_MODEL = "semantic_kernel.utils.telemetry.model_diagnostics.decorators"
SCOPE_RUNTIME = "agent_runtime InProcessRuntime"
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
    # The route is observed: an executed transfer function is a declared handoff (above).
    unobserved: ClassVar[tuple[str, ...]] = (
        sc.BOUNDARY_CONTROL,
        sc.BOUNDARY_TOOL_PROTOCOL,
        sc.BOUNDARY_CONTEXT,
    )

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        operation = span.text(OPERATION)
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
        evidence = tool_call_request(span, "sk", "", to)
        # No sender on this span: the judge names it (evidence.pair_senders), not "".
        del evidence.attributes[sc.FROM_AGENT]
        evidence.attributes[sc.ROUTE_DECLARED] = True
        return [evidence]
