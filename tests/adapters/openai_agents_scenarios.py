"""Scripted OpenAI Agents SDK apps, run through the real `Runner` offline.

The model is the SDK's own `agents.testing.ScriptedModel` (a `Model` subclass returning
real `ResponseFunctionToolCall` / `ResponseOutputMessage` items), with `emit_traces=True`
so the SDK also records generation spans — with the model's input and output in them when
`trace_include_sensitive_data` is on. SENTINEL is planted in every prompt, instruction,
tool argument, tool output, handoff argument and model message: none of it may reach the
exported bytes, the collector's file or its API.

Each scenario sets the SDK trace id itself (`RunConfig.trace_id`) so a test knows the
`handoff.run_id` even when the run ends in an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agents import (
    Agent,
    Handoff,
    RunConfig,
    Runner,
    RunState,
    function_tool,
    gen_trace_id,
    handoff,
)
from agents.exceptions import MaxTurnsExceeded
from agents.testing import ScriptedModel, assistant_message, function_call
from pydantic import BaseModel

SENTINEL = "zqxsentinel51c9"
"""No agent name, id or code contains it; any occurrence in output is leaked content."""


def planted(where: str) -> str:
    return f"{SENTINEL}-{where}"


class HandoffReason(BaseModel):
    reason: str


@function_tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return planted("tool-output") + order


@function_tool(needs_approval=True)
def issue_refund(order: str) -> str:
    """Refund an order (needs a human's approval)."""
    return planted("refund-output") + order


async def _on_handoff(ctx: Any, data: HandoffReason) -> None:
    return None


def keep_only_history(data: Any) -> Any:
    """An app's input filter: the next agent sees the original input, not this turn's items."""
    return data.clone(pre_handoff_items=(), new_items=())


def config(sensitive: bool, *, group: str | None = None, **kw: Any) -> tuple[str, RunConfig]:
    trace_id = gen_trace_id()
    return trace_id, RunConfig(
        workflow_name="support",
        trace_id=trace_id,
        group_id=group,
        trace_include_sensitive_data=sensitive,
        **kw,
    )


# -- healthy ------------------------------------------------------------------------------


async def healthy(
    instrumentor: Any, sensitive: bool, *, group: str = "conv-healthy", verify: bool = True
) -> str:
    """triage -> billing (declared, with an input filter); billing looks up; verified pass.

    With `verify=False` the app never runs its verifier: a claim of completion without proof.
    """
    model = ScriptedModel(
        [
            [
                function_call(
                    "transfer_to_billing", {"reason": planted("handoff-arg")}, call_id="call_h1"
                )
            ],
            [function_call("lookup_order", {"order": planted("tool-arg")}, call_id="call_t1")],
            [assistant_message(planted("final-answer"))],
        ],
        emit_traces=True,
    )
    billing = Agent(
        name="billing",
        instructions=planted("billing-instructions"),
        model=model,
        tools=[lookup_order],
    )
    triage = Agent(
        name="triage",
        instructions=planted("triage-instructions"),
        model=model,
        handoffs=[
            handoff(
                billing,
                input_type=HandoffReason,
                on_handoff=_on_handoff,
                input_filter=keep_only_history,
            )
        ],
    )
    trace_id, run_config = config(sensitive, group=group)
    result = await Runner.run(triage, planted("prompt"), run_config=run_config)
    assert result.final_output == planted("final-answer")
    if verify:
        instrumentor.record_outcome(result, "ticket_updated", True, receipt_id="rcpt-1")
    return trace_id


# -- ping-pong until max_turns ------------------------------------------------------------


def ping_pong_agents(steps: list[Any]) -> tuple[Agent[Any], Agent[Any]]:
    model = ScriptedModel(steps, emit_traces=True)
    a = Agent(name="agent_a", instructions=planted("a-instructions"), model=model)
    b = Agent(name="agent_b", instructions=planted("b-instructions"), model=model, handoffs=[a])
    a.handoffs = [b]
    return a, b


async def ping_pong(instrumentor: Any, sensitive: bool, *, max_turns: int = 4) -> str:
    """a -> b -> a -> b ... with no tool work in between, until the turn limit."""
    steps = [
        [
            function_call(
                "transfer_to_agent_b" if i % 2 == 0 else "transfer_to_agent_a",
                {},
                call_id=f"call_p{i}",
            )
        ]
        for i in range(max_turns + 1)
    ]
    a, _ = ping_pong_agents(steps)
    trace_id, run_config = config(sensitive)
    try:
        await Runner.run(a, planted("prompt"), run_config=run_config, max_turns=max_turns)
    except MaxTurnsExceeded:
        pass
    else:
        raise AssertionError("the scripted ping-pong should exhaust max_turns")
    return trace_id


async def retries_with_progress(instrumentor: Any, sensitive: bool) -> str:
    """a -> b -> a -> b, but each agent runs a tool before handing back: not a loop."""
    steps: list[Any] = [[function_call("transfer_to_agent_b", {}, call_id="call_r0")]]
    for i in range(1, 4):
        target = "transfer_to_agent_a" if i % 2 else "transfer_to_agent_b"
        steps.append(
            # A different order each time: new work (the same call again would be none).
            [
                function_call(
                    "lookup_order", {"order": planted(f"tool-arg-{i}")}, call_id=f"call_rt{i}"
                )
            ]
        )
        steps.append([function_call(target, {}, call_id=f"call_r{i}")])
    steps.append([assistant_message(planted("final-answer"))])
    a, b = ping_pong_agents(steps)
    a.tools = [lookup_order]
    b.tools = [lookup_order]
    trace_id, run_config = config(sensitive)
    result = await Runner.run(a, planted("prompt"), run_config=run_config, max_turns=20)
    instrumentor.record_outcome(result, "answer_checked", True)
    return trace_id


# -- multiple handoffs in one turn --------------------------------------------------------


async def multiple_handoffs(instrumentor: Any, sensitive: bool) -> str:
    """The model asks for billing AND refunds in one turn: the SDK takes the first only."""
    model = ScriptedModel(
        [
            [
                function_call("transfer_to_billing", {}, call_id="call_m1"),
                function_call("transfer_to_refunds", {}, call_id="call_m2"),
            ],
            [assistant_message(planted("final-answer"))],
        ],
        emit_traces=True,
    )
    billing = Agent(name="billing", instructions=planted("billing-instructions"), model=model)
    refunds = Agent(name="refunds", instructions=planted("refunds-instructions"), model=model)
    triage = Agent(name="triage", model=model, handoffs=[billing, refunds])
    trace_id, run_config = config(sensitive)
    result = await Runner.run(triage, planted("prompt"), run_config=run_config)
    assert result.last_agent.name == "billing"
    return trace_id


# -- a handoff the runtime sends elsewhere than declared ------------------------------------


async def undeclared_destination(instrumentor: Any, sensitive: bool) -> str:
    """A custom Handoff named for billing whose invoke returns the fraud agent instead."""
    model = ScriptedModel(
        [
            [function_call("transfer_to_billing", {}, call_id="call_u1")],
            [assistant_message(planted("final-answer"))],
        ],
        emit_traces=True,
    )
    fraud = Agent(name="fraud", model=model)

    async def invoke(ctx: Any, args: str) -> Agent[Any]:
        return fraud

    misrouted = Handoff(
        tool_name="transfer_to_billing",
        tool_description="Hand the conversation to billing.",
        input_json_schema={},
        on_invoke_handoff=invoke,
        agent_name="billing",
    )
    triage = Agent(name="triage", model=model, handoffs=[misrouted])
    trace_id, run_config = config(sensitive)
    await Runner.run(triage, planted("prompt"), run_config=run_config)
    return trace_id


# -- approval: pause, persist, decide, resume ---------------------------------------------


@dataclass
class Paused:
    trace_id: str
    stored_state: str
    triage: Agent[Any]
    result: Any


def approval_agents() -> tuple[Agent[Any], Agent[Any]]:
    model = ScriptedModel(
        [
            [function_call("transfer_to_billing", {}, call_id="call_a1")],
            [
                function_call(
                    "issue_refund", {"order": planted("refund-arg")}, call_id="call_refund_1"
                )
            ],
            [assistant_message(planted("refund-done"))],
        ],
        emit_traces=True,
    )
    billing = Agent(
        name="billing",
        instructions=planted("billing-instructions"),
        model=model,
        tools=[issue_refund],
    )
    triage = Agent(name="triage", model=model, handoffs=[billing])
    return triage, billing


async def approval_pause(
    instrumentor: Any,
    sensitive: bool,
    *,
    deadline: datetime | None = None,
    checkpoint: bool = True,
) -> Paused:
    """Runs until the refund needs approval; records the checkpoint the app made.

    With `checkpoint=False` the app persists nothing and records nothing: only what the
    runner saw by itself reaches the collector.
    """
    triage, _ = approval_agents()
    trace_id, run_config = config(sensitive, group="conv-approval")
    result = await Runner.run(triage, planted("prompt"), run_config=run_config)
    assert [i.tool_name for i in result.interruptions] == ["issue_refund"]
    stored = result.to_state().to_string()  # what the app persists
    if checkpoint:
        instrumentor.record_interruptions(
            result,
            owner="billing-team",
            reason="refund_approval",
            deadline=deadline or datetime.now(UTC) + timedelta(hours=4),
            state_persisted=True,
        )
    return Paused(trace_id, stored, triage, result)


async def approval_resume(instrumentor: Any, paused: Paused, sensitive: bool) -> Any:
    """Later (another request, maybe another process): load, approve, record, resume."""
    state = await RunState.from_string(paused.triage, paused.stored_state)
    for item in state.get_interruptions():
        state.approve(item)
    instrumentor.record_decision(state, approved=True)
    result = await Runner.run(
        paused.triage, state, run_config=RunConfig(trace_include_sensitive_data=sensitive)
    )
    assert result.final_output == planted("refund-done")
    instrumentor.record_outcome(result, "refund_issued", True, receipt_id="rcpt-2")
    return result
