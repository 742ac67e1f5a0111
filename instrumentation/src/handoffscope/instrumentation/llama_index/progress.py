"""Progress without content: the units of work a LlamaIndex run has done, as keyed HMACs.

A unit is one of: a tool call that is not a handoff (tool name + arguments), its result
(tool name + output text, error flag), an agent answer (an `AgentOutput` without tool
calls: its text). Each goes only into `fingerprint()`, a keyed HMAC; `Shared.add_work`
counts each distinct one once per run, and that count is the handoff's `state_version`:
bouncing between agents while repeating the same work leaves it unchanged (a loop), and
a retry that produced something new moves it.
"""

from __future__ import annotations

from typing import Any

from ..fingerprint import fingerprint

HANDOFF_TOOL = "handoff"
"""The name of the tool `AgentWorkflow` gives an agent with somewhere to hand off to."""


def tool_units(result: Any) -> tuple[str, ...]:
    """A `ToolCallResult`'s units (none for the handoff tool: plumbing, not work)."""
    name = getattr(result, "tool_name", None)
    if name == HANDOFF_TOOL:
        return ()
    output = getattr(result, "tool_output", None)
    content = getattr(output, "content", None)
    return (
        fingerprint(("call", name), getattr(result, "tool_kwargs", None)),
        fingerprint(("result", name, bool(getattr(output, "is_error", False))), content),
    )


def answer_unit(output: Any) -> str | None:
    """An `AgentOutput` without tool calls is an answer: its text is one unit."""
    if getattr(output, "tool_calls", None):
        return None
    response = getattr(output, "response", None)
    return fingerprint("answer", getattr(response, "content", None))
