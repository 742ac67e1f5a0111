"""AutoGen's native spans (autogen-agentchat / autogen-core 0.7).

Two scopes: `autogen-core` carries the GenAI spans (`create_agent`, `invoke_agent`,
`execute_tool`); `autogen SingleThreadedAgentRuntime` carries the runtime's messaging
spans (`autogen publish|process|create|send|ack ...`), whose `message` attribute is the
whole serialized group-chat message. Both are claimed, so the runtime spans are absorbed
(dropped and counted) rather than refused.

Run identity: one `team.run()` spreads over many traces (every runtime publish starts one;
18 for a two-agent handoff), tied only by span links. The content-free thread through them
is the team id in `gen_ai.agent.id` (`<agent>_<team id>/<team id>`), so the run id is
`autogen-<team id>`. It is per team OBJECT: a second `run()` on the same team continues
the same run here. `execute_tool` spans carry no agent id; they take it from their
`invoke_agent` parent in the same export.

- `invoke_agent`: an *arrival* of `gen_ai.agent.name` (evidence.pair_arrivals) and the
  run's possible final agent; `failed` when its status is ERROR.
- `execute_tool transfer_to_<agent>` (the tool AutoGen makes of each declared handoff):
  the request, to the agent the tool is named for, from the parent `invoke_agent`'s agent,
  with the tool-call id (`gen_ai.tool.call.id`) as its handoff id.
- the runtime's `create` span of a `GroupChatTermination` message (`messaging.message.type`,
  a type name; the team id read from `messaging.destination`,
  `output_topic_<team id>.(<team id>)-T`): the run ended, stated `completed`. WHY it ended
  (a termination condition, or `max_turns`) is only inside the message's JSON (content):
  never read, so a run stopped at its turn limit also reads `completed` — and a ping-pong
  cut off by `max_turns` is seen as repeated handoffs, not as a loop at its limit.

Cannot show: why a run ended, declared routes, control state, context keys, waits,
verifier outcomes.
"""

from __future__ import annotations

import re
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

SCOPE_GENAI = "autogen-core"
SCOPE_RUNTIME = "autogen SingleThreadedAgentRuntime"
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
TOOL_NAME = "gen_ai.tool.name"
TRANSFER_PREFIX = "transfer_to_"
MESSAGE_TYPE = "messaging.message.type"
DESTINATION = "messaging.destination"
OPERATION_MESSAGING = "messaging.operation"
TERMINATION = "GroupChatTermination"
_TOPIC_TEAM = re.compile(r"\.\(([0-9a-f-]{36})\)-T$")


def _team_id(agent_span: ForeignSpan | None) -> str | None:
    agent_id = agent_span.text(AGENT_ID) if agent_span else None
    if not agent_id or "/" not in agent_id:
        return None
    return agent_id.rsplit("/", 1)[1] or None


def _termination_team(span: ForeignSpan) -> str | None:
    """The team id of a runtime span that queues the group chat's termination, else None."""
    if span.text(MESSAGE_TYPE) != TERMINATION or span.text(OPERATION_MESSAGING) != "create":
        return None
    match = _TOPIC_TEAM.search(span.text(DESTINATION) or "")
    return match.group(1) if match else None


def _agent_span(span: ForeignSpan) -> ForeignSpan | None:
    if span.text(OPERATION) == "invoke_agent":
        return span
    parent = span.parent()
    return parent if parent and parent.text(OPERATION) == "invoke_agent" else None


class AutoGenTranslator(Translator):
    source: ClassVar[str] = "autogen"
    label: ClassVar[str] = "AutoGen"
    scopes: ClassVar[tuple[str, ...]] = (SCOPE_GENAI, SCOPE_RUNTIME)

    def run_id(self, span: ForeignSpan) -> str:
        team = _team_id(_agent_span(span)) or _termination_team(span)
        return f"autogen-{team}" if team else span.trace_id

    def translate(self, span: ForeignSpan) -> list[Evidence]:
        if _termination_team(span):
            return [run_span(**{sc.RUN_STATUS: sc.RUN_STATUS_COMPLETED})]
        operation = span.text(OPERATION)
        if operation == "invoke_agent":
            agent = span.text(AGENT_NAME)
            if not agent or not _team_id(span):
                return []
            attrs: dict[str, object] = {sc.RUN_FINAL_AGENT: agent}
            if span.status == ERROR:
                attrs[sc.RUN_STATUS] = sc.RUN_STATUS_FAILED
            return [run_span(**attrs), arrival(agent)]
        tool = span.text(TOOL_NAME) or ""
        if operation == "execute_tool" and tool.startswith(TRANSFER_PREFIX):
            owner = _agent_span(span)
            sender = owner.text(AGENT_NAME) if owner else None
            to = tool.removeprefix(TRANSFER_PREFIX)
            if not sender or not to or not _team_id(owner) or span.status == ERROR:
                return []
            return [tool_call_request(span, "autogen", sender, to)]
        return []
