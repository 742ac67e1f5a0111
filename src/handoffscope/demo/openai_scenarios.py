"""Demo runs through the real OpenAI Agents SDK `Runner` and the real adapter, offline.

One support desk, declared once as a real app would: `triage` routes to `billing`,
`refunds` or `escalation`; `billing` and `refunds` can hand to each other and to
`escalation`. Each run gets its own scripted "LLM" — the SDK's `agents.testing.ScriptedModel`,
passed as `RunConfig.model`, which overrides every agent's model, named `DEMO_MODEL` and
reporting a token count per call as a real model does (so the board says what each run,
leg and loop cost, priced from the collector's table) — so everything else is
the SDK doing its job: taking handoffs, running tools, pausing a `needs_approval` tool,
serialising and resuming a `RunState`, raising `MaxTurnsExceeded`. The adapter
(`OpenAIAgentsInstrumentor`) reports what it saw; the app-side facts (who owns an
approval and until when, what was decided, whether the verifier passed) go through its
one-line helpers, as in examples/openai_agents_app.py.

| kind | what happens | verdict |
|---|---|---|
| `healthy` | triage→billing, triage→refunds, triage→billing→refunds or triage→escalation, tools run, verifier passes | `healthy` |
| `ping_pong` | billing and refunds hand the case back and forth with no tool work until `max_turns` | `loop` |
| `approval_decided` | refunds pauses on an over-limit refund; wait recorded (owner, reason, deadline ahead, state persisted); approved, resumed from the stored `RunState`, verified | `healthy` |
| `approval_pending` | same pause, deadline 1–4 h ahead, nobody decides yet | `waiting_on_approval` |
| `approval_overdue` | same pause, deadline `OVERDUE_WINDOW_S` (5–30 s) ahead, never decided | `waiting_on_approval`, then `approval_overdue` on the live board |
| `multiple_handoffs` | triage asks for billing and refunds/escalation in one turn; the SDK takes the first | `route_rejected` |
| `false_complete` | the run completes but the verifier fails, or is never run | `false_complete` |
| `follow_up` | two turns of one conversation (`group_id`): the second starts at the first's `last_agent` (continued), or at triage, which hands straight back to it (re-routed) | `healthy`; continuity `continued` or `rerouted` |

Offline: no API key, no network. `setup()` empties the SDK's trace processor list before
instrumenting with `replace_processors=True`, so the SDK's default exporter (which would
send full traces to OpenAI) is never installed, and `uninstrument()` cannot bring it back.
The SDK's own tracing must stay on (`OPENAI_AGENTS_DISABLE_TRACING` unset): the adapter is
a trace processor.

Each `run_scenario` call drives its runs inside one `asyncio.run`, which closes its loop
and joins its executor threads before returning: nothing is left behind, and a call takes
tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

from agents import (
    Agent,
    RunConfig,
    Runner,
    RunState,
    Usage,
    function_tool,
    gen_trace_id,
    handoff,
)
from agents.exceptions import MaxTurnsExceeded
from agents.extensions import handoff_filters
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tracing import set_trace_processors

from handoffscope.demo import desk
from handoffscope.demo.desk import (
    APPROVERS,
    DECIDED_WINDOW_S,
    DEMO_MODEL,
    OVERDUE_WINDOW_S,
    PENDING_WINDOW_S,
    VERIFIERS,
)
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

WORKFLOW = "support"

KINDS: dict[str, float] = {
    "healthy": 6.0,
    "ping_pong": 0.5,
    "approval_decided": 1.0,
    "approval_pending": 0.5,
    "approval_overdue": 0.4,
    "multiple_handoffs": 0.4,
    "false_complete": 0.6,
    "follow_up": 1.0,
}

HEALTHY_PATHS: dict[tuple[str, ...], float] = {
    ("billing",): 4.0,
    ("refunds",): 3.0,
    ("billing", "refunds"): 2.0,
    ("escalation",): 1.0,
}
"""Destinations after triage, and how often each path is taken."""


# -- the support desk ---------------------------------------------------------------------


lookup_invoice = function_tool(desk.lookup_invoice)
create_refund = function_tool(desk.create_refund)


@function_tool(needs_approval=True)
def create_large_refund(order_id: str, amount_eur: float) -> str:
    """Refund an order above the self-service limit. A person must approve it first."""
    return f"refunded {amount_eur} EUR on {order_id} (approved)"


open_ticket = function_tool(desk.open_ticket)


def _desk() -> Agent[Any]:
    # No model on the agents: each run brings its scripted one through RunConfig.model.
    billing = Agent(
        name="billing", instructions="Resolve invoice questions.", tools=[lookup_invoice]
    )
    refunds = Agent(
        name="refunds",
        instructions="Refund orders; large refunds need approval.",
        tools=[create_refund, create_large_refund],
    )
    escalation = Agent(
        name="escalation", instructions="Open a ticket for the on-call team.", tools=[open_ticket]
    )
    billing.handoffs = [refunds, escalation]
    refunds.handoffs = [billing, escalation]
    return Agent(
        name="triage",
        instructions="Route the customer to the right team.",
        # The filter trims tool chatter from what the next agent sees; the adapter counts
        # the items forwarded (never reads them), so the run detail shows history counts.
        handoffs=[
            handoff(billing, input_filter=handoff_filters.remove_all_tools),
            handoff(refunds, input_filter=handoff_filters.remove_all_tools),
            handoff(escalation, input_filter=handoff_filters.remove_all_tools),
        ],
    )


TRIAGE = _desk()
"""The entry agent. Built once: agents hold no per-run state, the scripted model does."""


def _transfer(to: str) -> Any:
    return function_call(f"transfer_to_{to}", {}, call_id=_call_id())


def _work(agent: str, rng: random.Random) -> Any:
    """One tool call typical of `agent`."""
    if agent == "billing":
        return function_call(
            "lookup_invoice", {"invoice_id": f"INV-{rng.randrange(10**5)}"}, call_id=_call_id()
        )
    if agent == "refunds":
        args = {"order_id": _order(rng), "amount_eur": float(rng.randrange(5, 80))}
        return function_call("create_refund", args, call_id=_call_id())
    return function_call("open_ticket", {"priority": rng.choice(("p2", "p3"))}, call_id=_call_id())


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def _order(rng: random.Random) -> str:
    return f"A-{rng.randrange(1000, 9999)}"


def _model(rng: random.Random, steps: list[Any]) -> ScriptedModel:
    """A scripted model named `DEMO_MODEL` whose every call reports the same usage, drawn
    once per run (a support desk's prompts: 600-2,400 tokens in, 40-260 out)."""
    tin, tout = rng.randint(600, 2400), rng.randint(40, 260)
    model = ScriptedModel(
        steps,
        default_usage=Usage(
            requests=1, input_tokens=tin, output_tokens=tout, total_tokens=tin + tout
        ),
    )
    model.model = DEMO_MODEL  # type: ignore[attr-defined]  # what a real Model names itself
    return model


def _config(model: ScriptedModel, group: str | None = None) -> tuple[str, RunConfig]:
    # The trace id is chosen here so the run id is known even if the adapter is not
    # attached (SDK tracing disabled); group_id becomes gen_ai.conversation.id.
    trace_id = gen_trace_id()
    return trace_id, RunConfig(
        model=model,
        workflow_name=WORKFLOW,
        trace_id=trace_id,
        group_id=group or f"conv-{uuid.uuid4().hex[:12]}",
    )


def _instrumentor() -> OpenAIAgentsInstrumentor:
    return OpenAIAgentsInstrumentor()  # one per process: the same instance setup() armed


def _run_id(obj: Any, fallback: str) -> str:
    return _instrumentor().run_id(obj) or fallback


def _path_steps(path: tuple[str, ...], rng: random.Random) -> list[list[Any]]:
    """Model turns for triage→path[0]→…→path[-1], each agent doing its work first."""
    steps: list[list[Any]] = [[_transfer(path[0])]]
    for here, there in zip(path, path[1:], strict=False):
        steps.append([_work(here, rng)])
        steps.append([_transfer(there)])
    steps.append([_work(path[-1], rng)])
    steps.append([assistant_message("Done: your request is resolved.")])
    return steps


def _receipt() -> str:
    return f"rcpt-{uuid.uuid4().hex[:10]}"


# -- scenarios ----------------------------------------------------------------------------


async def _healthy(rng: random.Random) -> str:
    path = rng.choices(list(HEALTHY_PATHS), weights=list(HEALTHY_PATHS.values()))[0]
    trace_id, config = _config(_model(rng, _path_steps(path, rng)))
    result = await Runner.run(TRIAGE, "Customer message.", run_config=config)
    _instrumentor().record_outcome(result, VERIFIERS[path[-1]], True, receipt_id=_receipt())
    return _run_id(result, trace_id)


async def _false_complete(rng: random.Random) -> str:
    path = rng.choices(list(HEALTHY_PATHS), weights=list(HEALTHY_PATHS.values()))[0]
    trace_id, config = _config(_model(rng, _path_steps(path, rng)))
    result = await Runner.run(TRIAGE, "Customer message.", run_config=config)
    if rng.random() < 0.5:
        # The verifier ran and found the work not done (e.g. no refund on the ledger).
        _instrumentor().record_outcome(result, VERIFIERS[path[-1]], False)
    # else: the app trusted the agent's "done" and never ran its verifier.
    return _run_id(result, trace_id)


async def _ping_pong(rng: random.Random) -> str:
    max_turns = rng.randint(4, 7)
    # One turn more than the limit allows; the runner stops at max_turns.
    steps = [[_transfer("billing")]] + [
        [_transfer("refunds" if i % 2 == 0 else "billing")] for i in range(max_turns)
    ]
    trace_id, config = _config(_model(rng, steps))
    try:
        await Runner.run(TRIAGE, "Customer message.", run_config=config, max_turns=max_turns)
    except MaxTurnsExceeded as exc:
        return _run_id(exc, trace_id)
    raise RuntimeError("the scripted ping-pong should have run out of turns")


async def _multiple_handoffs(rng: random.Random) -> str:
    second = rng.choice(("refunds", "escalation"))
    steps = [
        [_transfer("billing"), _transfer(second)],  # the SDK takes billing, ignores the other
        [_work("billing", rng)],
        [assistant_message("Done: your invoice is corrected.")],
    ]
    trace_id, config = _config(_model(rng, steps))
    result = await Runner.run(TRIAGE, "Customer message.", run_config=config)
    _instrumentor().record_outcome(result, VERIFIERS["billing"], True, receipt_id=_receipt())
    return _run_id(result, trace_id)


async def _approval(rng: random.Random, window: tuple[float, float], *, decide: bool) -> str:
    args = {"order_id": _order(rng), "amount_eur": float(rng.randrange(250, 2000))}
    model = _model(
        rng,
        [
            [_transfer("refunds")],
            [function_call("create_large_refund", args, call_id=_call_id())],
            [assistant_message("Done: your refund is on its way.")],  # after approval
        ],
    )
    trace_id, config = _config(model)
    inst = _instrumentor()
    paused = await Runner.run(TRIAGE, "Customer message.", run_config=config)
    run_id = _run_id(paused, trace_id)
    if not paused.interruptions:
        raise RuntimeError("the scripted refund should have paused for approval")
    stored = paused.to_state().to_string()  # what the app persists
    inst.record_interruptions(
        paused,
        owner=rng.choice(APPROVERS),
        reason="refund_over_limit",
        deadline=datetime.now(UTC) + timedelta(seconds=rng.uniform(*window)),
        state_persisted=True,
    )
    if not decide:
        return run_id
    # Later, in the app's approval UI: load the stored run, approve, resume.
    state = await RunState.from_string(TRIAGE, stored)
    for item in state.get_interruptions():
        state.approve(item)
    inst.record_decision(state, approved=True)
    resumed = await Runner.run(TRIAGE, state, run_config=RunConfig(model=model))
    inst.record_outcome(resumed, VERIFIERS["refunds"], True, receipt_id=_receipt())
    return run_id


# The windows are read when a scenario runs (not bound here), so a test can shorten them.
async def _approval_decided(rng: random.Random) -> str:
    return await _approval(rng, DECIDED_WINDOW_S, decide=True)


async def _approval_pending(rng: random.Random) -> str:
    return await _approval(rng, PENDING_WINDOW_S, decide=False)


async def _approval_overdue(rng: random.Random) -> str:
    return await _approval(rng, OVERDUE_WINDOW_S, decide=False)


async def _follow_up(rng: random.Random) -> str:
    """Two turns of one conversation (one `group_id`): the customer comes back. Half the
    time the app starts the second turn at `result.last_agent`, as the SDK's docs advise
    (continued); half the time at triage again, which hands straight back to the agent that
    already held the work (re-routed: a model call and a handoff more). Both verified."""
    path = rng.choices(list(HEALTHY_PATHS), weights=list(HEALTHY_PATHS.values()))[0]
    group = f"conv-{uuid.uuid4().hex[:12]}"
    _, config = _config(_model(rng, _path_steps(path, rng)), group)
    first = await Runner.run(TRIAGE, "Customer message.", run_config=config)
    _instrumentor().record_outcome(first, VERIFIERS[path[-1]], True, receipt_id=_receipt())
    holder = path[-1]
    answer = [[_work(holder, rng)], [assistant_message("Done: your follow-up is resolved.")]]
    if rng.random() < 0.5:
        start, steps = first.last_agent, answer
    else:
        start, steps = TRIAGE, [[_transfer(holder)], *answer]
    trace_id, config = _config(_model(rng, steps), group)
    second = await Runner.run(start, "Customer follow-up.", run_config=config)
    _instrumentor().record_outcome(second, VERIFIERS[holder], True, receipt_id=_receipt())
    return _run_id(second, trace_id)


SCENARIOS: dict[str, Callable[[random.Random], Coroutine[Any, Any, str]]] = {
    "healthy": _healthy,
    "ping_pong": _ping_pong,
    "approval_decided": _approval_decided,
    "approval_pending": _approval_pending,
    "approval_overdue": _approval_overdue,
    "multiple_handoffs": _multiple_handoffs,
    "false_complete": _false_complete,
    "follow_up": _follow_up,
}


# -- the demo runner's interface ----------------------------------------------------------


def setup(tracer_provider: Any) -> None:
    """Instrument the Agents SDK into `tracer_provider` once; later calls do nothing."""
    inst = _instrumentor()
    if inst.is_instrumented_by_opentelemetry:
        return
    # Emptied first so the SDK's default processor (export to OpenAI) is never installed
    # and is not what uninstrument() would restore.
    set_trace_processors([])
    inst.instrument(tracer_provider=tracer_provider, replace_processors=True)


def run_scenario(kind: str, rng: random.Random) -> str:
    """Run one scenario of `kind` synchronously through the real Runner; return its run id.

    Must not be called from a thread with a running event loop (it runs its own).
    """
    scenario = SCENARIOS.get(kind)
    if scenario is None:
        raise ValueError(f"unknown OpenAI Agents demo kind {kind!r}; known: {', '.join(KINDS)}")
    return asyncio.run(scenario(rng))
