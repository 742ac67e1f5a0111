"""Google ADK's native GenAI spans (scope `gcp.vertex.agent`), both of its schemas.

Recognised by `gen_ai.operation.name`, which ADK sets on every span in both its current
schema (`invoke_workflow` root) and its legacy one (`ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`:
`invocation` root, `call_llm` spans). One trace per `Runner.run_async` invocation, so the
run id is the trace id. `gen_ai.conversation.id` is the ADK session: a resume (another
message to the session) is a new trace, so a new run, and every piece of evidence carries
the session id so the session's runs are found together (`Translator.conversation_id`).
Not the run id: ADK leaves it off `execute_tool` spans (the handoff request) and off the
legacy `invocation` root (measured), so a run keyed by it would split whenever their
`invoke_agent` ancestor went in another export; the tool span takes it from that ancestor
when it is in the same export, and carries none otherwise.

- root workflow span (`invoke_workflow` / `invocation`, no parent): the run's start and
  end. ADK marks it ERROR when the run failed; `LlmCallsLimitExceededError` (ADK's
  `RunConfig.max_llm_calls`, its turn limit) is matched in the status description, never
  copied, and makes the status `max_turns`;
- `invoke_agent`: an *arrival* of `gen_ai.agent.name` (the judge admits with it the
  request before it: evidence.pair_arrivals), the run's possible final agent, and, when it
  failed, how the run ended (same match);
- `execute_tool` of ADK's `TransferToAgentTool` (`transfer_to_agent`): the request, from
  the `gen_ai.agent.name` ADK puts on the tool span, with the handoff's tool-call id
  (`gen_ai.tool.call.id`, content-free) as its handoff id. The destination is only in
  `gen_ai.tool.call.arguments` (content, and absent with capture off): never read; the
  arrival names it.

- `generate_content <model>` (one model call): its usage (`handoff.usage`,
  base.model_call_usage) — `gen_ai.usage.input_tokens` / `output_tokens` (ADK's sums of
  the response's prompt and tool-use prompt tokens, and of its candidate and thought
  tokens), `gen_ai.request.model`, and the calling agent, `gen_ai.agent.name`, which ADK
  puts on the span itself. Not `call_llm` (legacy schema: the same call's usage again).

Cannot show: declared routes (the transfer tool's description lists them, as free text),
control state, whether the tool call was closed, context keys, waits, verifier outcomes.
"""

from __future__ import annotations

from typing import ClassVar

from handoffscope.collector.processor.translate.base import (
    ERROR,
    Evidence,
    ForeignSpan,
    Translator,
    arrival,
    model_call_usage,
    run_span,
    tool_call_request,
)
from handoffscope.instrumentation import semconv as sc

SCOPE = "gcp.vertex.agent"
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
CONVERSATION_ID = "gen_ai.conversation.id"
WORKFLOW_OPERATIONS = ("invoke_workflow", "invocation")
TRANSFER_TOOL = "transfer_to_agent"
TRANSFER_TOOL_TYPE = "TransferToAgentTool"
MODEL_CALL = "generate_content"
"""ADK's model-call span, in both schemas. The legacy schema's `call_llm` span wraps it
and carries the same usage again: never read (it would count every call twice)."""
LIMIT_ERROR = "LlmCallsLimitExceededError"
"""The exception type ADK raises at `RunConfig.max_llm_calls`, first in its status text."""


def _status(span: ForeignSpan) -> str | None:
    if span.status != ERROR:
        return None
    if LIMIT_ERROR in span.status_description or LIMIT_ERROR in span.name:
        return sc.RUN_STATUS_MAX_TURNS
    return sc.RUN_STATUS_FAILED


class AdkTranslator(Translator):
    source: ClassVar[str] = "adk"
    label: ClassVar[str] = "Google ADK"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE,)

    def conversation_id(self, span: ForeignSpan) -> str | None:
        found = span.text(CONVERSATION_ID)
        if found:
            return found
        owner = span.ancestor(lambda s: bool(s.text(CONVERSATION_ID)))
        return owner.text(CONVERSATION_ID) if owner else None

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        operation = span.text(OPERATION) or (span.name if span.name == "invocation" else None)
        if operation == MODEL_CALL:
            return model_call_usage(span)
        if operation in WORKFLOW_OPERATIONS and span.parent_span_id is None:
            status = _status(span) or sc.RUN_STATUS_COMPLETED
            return [run_span(**{sc.RUN_STATUS: status, sc.RUN_STARTED: span.start_ns})]
        if operation == "invoke_agent":
            agent = span.text(AGENT_NAME)
            if not agent:
                return []
            attrs: dict[str, object] = {sc.RUN_FINAL_AGENT: agent}
            ended = _status(span)
            if ended:
                attrs[sc.RUN_STATUS] = ended
            return [run_span(**attrs), arrival(agent)]
        if operation == "execute_tool" and (
            span.text(TOOL_NAME) == TRANSFER_TOOL or span.text(TOOL_TYPE) == TRANSFER_TOOL_TYPE
        ):
            sender = span.text(AGENT_NAME)
            if not sender:
                return []
            return [tool_call_request(span, "adk", sender)]
        return []
