"""Demo runs through real compiled LangGraph graphs and the real adapter, offline.

One support desk in LangGraph's swarm shape, compiled once with an `InMemorySaver`: the
root graph's nodes are the agents `triage`, `billing`, `refunds` and `escalation`, each a
compiled subgraph (model -> `ToolNode` -> model ...) whose handoff tools return
`Command(goto=<agent>, graph=Command.PARENT, update=...)`. The routing the graph declares
(`add_node(..., destinations=...)`) is: triage -> billing | refunds; billing -> refunds |
escalation; refunds -> billing | escalation. Triage also carries a `transfer_to_escalation`
tool that the routing never got — the config drift behind `undeclared_route`. The parts
(state, handoff tool and its bad releases, agent subgraph, root graph) are `langgraph_kit`'s,
shared with the adapter tests and the overhead bench.

The chat model is chosen per call, LangGraph's "configurable model" idiom: each agent's
model node takes `config["configurable"]["models"][agent]`, here a langchain-core
`GenericFakeChatModel` replaying a script written for the run. Everything else is the real
runtime — callbacks, `ParentCommand` bubbling, checkpoints, `interrupt()` and
`Command(resume=...)`, `GraphRecursionError` — observed by `LangGraphInstrumentor`. The
app-side facts go through its helpers, as in examples/langgraph_app.py: the approval
tool's `interrupt()` value carries `wait_details(owner, reason, deadline)`, and the app's
verifier result is `record_outcome(...)` after the run.

| kind | what happens | verdict |
|---|---|---|
| `healthy` | triage->billing, triage->refunds, triage->billing->refunds or triage->refunds->escalation; each agent works; verifier passes | `healthy` |
| `unclosed_tool_call` | a triage handoff tool (a bad release) moves control but never answers its tool call with a `ToolMessage` | `open_tool_protocol` |
| `control_not_moved` | a triage handoff tool (another bad release) closes its tool call but leaves `active_agent` on triage | `stale_control` |
| `undeclared_route` | triage sends the customer straight to escalation, a route the graph never declared | `route_rejected` |
| `ping_pong` | billing and refunds hand the case back and forth without working until the recursion limit | `loop` (see below) |
| `approval_decided` | refunds' `create_large_refund` tool calls `interrupt()` (owner, reason, deadline 10-60 min ahead); approved with `Command(resume=...)`; verified | `healthy` |
| `approval_pending` | same interrupt, deadline `PENDING_WINDOW_S` (1-4 h) ahead, nobody decides yet | `waiting_on_approval` |
| `approval_overdue` | same interrupt, deadline `OVERDUE_WINDOW_S` (5-30 s) ahead, never decided | `waiting_on_approval`, then `approval_overdue` on the live board |
| `approval_no_owner` | same interrupt, but the approval policy names no owner for the amount | `wait_uncertain` |
| `false_complete` | a healthy-looking run completes; its verifier fails, or is never run | `false_complete` |

A LangGraph ping-pong stops at the recursion limit *between* supersteps: the last handoff
was requested and its destination never ran. A run stopped at its limit while cycling is a
loop whichever handoff was last (DESIGN §4 rule 7), so that run reads `loop` (with
`max_turns` and the cycle) at any time — its last destination is not judged
`destination_not_started`.

Each call runs one invocation (two for `approval_decided`) synchronously and takes tens of
milliseconds. Threads that finished are deleted from the checkpointer; runs left waiting
keep theirs, up to `MAX_PARKED_THREADS`, as an app with a retention policy would.
"""

from __future__ import annotations

import functools
import random
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.types import Command, interrupt

from handoffscope.demo import desk
from handoffscope.demo import langgraph_kit as kit
from handoffscope.demo.desk import (
    APPROVERS,
    DECIDED_WINDOW_S,
    OVERDUE_WINDOW_S,
    PENDING_WINDOW_S,
    VERIFIERS,
)
from handoffscope.instrumentation.langgraph import LangGraphInstrumentor, wait_details

KINDS: dict[str, float] = {
    "healthy": 5.0,
    "unclosed_tool_call": 0.5,
    "control_not_moved": 0.5,
    "undeclared_route": 0.3,
    "ping_pong": 0.4,
    "approval_decided": 0.8,
    "approval_pending": 0.4,
    "approval_overdue": 0.3,
    "approval_no_owner": 0.3,
    "false_complete": 0.5,
}

HEALTHY_PATHS: dict[tuple[str, ...], float] = {
    ("billing",): 4.0,
    ("refunds",): 3.0,
    ("billing", "refunds"): 2.0,
    ("refunds", "escalation"): 1.0,
}
"""Agents after triage, in order, and how often each path is taken."""

ROUTES: dict[str, tuple[str, ...]] = {
    "triage": ("billing", "refunds"),
    "billing": ("refunds", "escalation"),
    "refunds": ("billing", "escalation"),
    "escalation": (),
}
"""The destinations each agent declares to the graph."""
HANDOFF_TOOLS: dict[str, tuple[str, ...]] = {
    **ROUTES,
    # Added to triage's prompt and tools for VIP customers; nobody updated ROUTES.
    "triage": ("billing", "refunds", "escalation"),
}
"""The agents each agent has a transfer tool for."""

RECURSION_LIMITS = (6, 10)
"""LangGraph's `recursion_limit` for a ping-pong run (inclusive range): where it stops."""

APPROVAL_REASON = "refund_over_limit"

MAX_PARKED_THREADS = 500
"""Threads left waiting on an approval whose checkpoints are kept; older ones are deleted."""


# -- the support desk ---------------------------------------------------------------------


lookup_invoice = tool(desk.lookup_invoice)
create_refund = tool(desk.create_refund)


@tool
def create_large_refund(order_id: str, amount_eur: float, config: RunnableConfig) -> str:
    """Refund an order above the self-service limit. A person must approve it first."""
    # Who approves, and by when, comes from the app's approval policy for this request.
    policy = config["configurable"]["approval"]
    answer = interrupt(
        {
            "question": f"Refund {amount_eur} EUR on {order_id}?",
            **wait_details(
                owner=policy["owner"], reason=APPROVAL_REASON, deadline=policy["deadline"]
            ),
        }
    )
    if isinstance(answer, dict) and answer.get("decision") == "approved":
        return f"refunded {amount_eur} EUR on {order_id} (approved)"
    return "refund declined by the approver"


open_ticket = tool(desk.open_ticket)


WORK_TOOLS: dict[str, list[Any]] = {
    "triage": [],
    "billing": [lookup_invoice],
    "refunds": [create_refund, create_large_refund],
    "escalation": [open_ticket],
}


def _model_of_run(name: str) -> Callable[[RunnableConfig], BaseChatModel]:
    """Where `name`'s model node finds its model: in the run's config (see `_config`)."""
    return lambda config: config["configurable"]["models"][name]


CHECKPOINTER = InMemorySaver()
"""One saver for every desk variant: threads are per run, so they never collide."""


@functools.cache
def _desk(fault: str | None = None) -> Any:
    """The compiled desk; `fault` names the bad release of triage's handoff tools, if any."""
    agents = {}
    for name, targets in HANDOFF_TOOLS.items():
        buggy = name == "triage"
        handoffs = [
            kit.handoff_tool(
                to,
                close=not (buggy and fault == "unclosed_tool_call"),
                move_control=not (buggy and fault == "control_not_moved"),
            )
            for to in targets
        ]
        agents[name] = kit.agent(name, WORK_TOOLS[name] + handoffs, _model_of_run(name))
    return kit.swarm(agents, routes=ROUTES, checkpointer=CHECKPOINTER)


# -- scripts --------------------------------------------------------------------------------


def _transfer(to: str, reason: str = "customer_request") -> AIMessage:
    return kit.tool_call(f"transfer_to_{to}", {"reason": reason})


def _order(rng: random.Random) -> str:
    return f"A-{rng.randrange(1000, 9999)}"


def _work(agent: str, rng: random.Random) -> AIMessage:
    """One tool call typical of `agent`."""
    if agent == "billing":
        return kit.tool_call("lookup_invoice", {"invoice_id": f"INV-{rng.randrange(10**5)}"})
    if agent == "refunds":
        refund = {"order_id": _order(rng), "amount_eur": float(rng.randrange(5, 80))}
        return kit.tool_call("create_refund", refund)
    return kit.tool_call("open_ticket", {"priority": rng.choice(("p2", "p3"))})


DEMO_MODEL = "gpt-4o-mini"
"""The model name the demo's scripted turns report: one the collector's price table knows."""


def _reported(script: Iterable[AIMessage], rng: random.Random) -> Iterator[AIMessage]:
    """Each turn with the usage and model name a LangChain chat model reports
    (`usage_metadata`, `response_metadata["model_name"]`): the same counts for every call of
    one agent in one run (a support desk's prompts: 600-2,400 tokens in, 40-260 out), so
    the board says what each run, leg and loop cost."""
    tin, tout = rng.randint(600, 2400), rng.randint(40, 260)
    usage = {"input_tokens": tin, "output_tokens": tout, "total_tokens": tin + tout}
    for message in script:
        yield message.model_copy(
            update={"usage_metadata": usage, "response_metadata": {"model_name": DEMO_MODEL}}
        )


def _models(
    turns: Mapping[str, Iterable[AIMessage]], rng: random.Random
) -> dict[str, GenericFakeChatModel]:
    return {agent: kit.scripted_model(_reported(script, rng)) for agent, script in turns.items()}


def _path_turns(path: tuple[str, ...], rng: random.Random) -> dict[str, list[AIMessage]]:
    """Model turns for triage->path[0]->...->path[-1], each agent working before it hands on."""
    turns: dict[str, list[AIMessage]] = {"triage": [_transfer(path[0])]}
    for here, there in zip(path, (*path[1:], None), strict=True):
        turns[here] = [
            _work(here, rng),
            _transfer(there) if there else AIMessage("Done: your request is resolved."),
        ]
    return turns


def _forever(message: Callable[[], AIMessage]) -> Iterator[AIMessage]:
    while True:
        yield message()


def _healthy_path(rng: random.Random) -> tuple[str, ...]:
    return rng.choices(list(HEALTHY_PATHS), weights=list(HEALTHY_PATHS.values()))[0]


# -- running ----------------------------------------------------------------------------------


_parked: deque[str] = deque()


def _instrumentor() -> LangGraphInstrumentor:
    return LangGraphInstrumentor()  # one per process: the same instance setup() armed


def _config(models: dict[str, GenericFakeChatModel], **configurable: Any) -> dict[str, Any]:
    # A fresh, opaque thread id per run: it is exported as gen_ai.conversation.id.
    return {
        "configurable": {"thread_id": f"conv-{uuid.uuid4().hex[:12]}", "models": models}
        | configurable
    }


def _input(rng: random.Random) -> dict[str, Any]:
    return {
        "messages": [("user", f"Question about order {_order(rng)}.")],
        "active_agent": "triage",
    }


def _run_id(config: dict[str, Any]) -> str:
    run_id = _instrumentor().run_id(config)
    if run_id is None:
        raise RuntimeError("the LangGraph adapter is not attached; call setup() first")
    return run_id


def _finished(config: dict[str, Any]) -> None:
    CHECKPOINTER.delete_thread(config["configurable"]["thread_id"])


def _park(config: dict[str, Any]) -> None:
    _parked.append(config["configurable"]["thread_id"])
    while len(_parked) > MAX_PARKED_THREADS:
        CHECKPOINTER.delete_thread(_parked.popleft())


def _verify(config: dict[str, Any], agent: str, passed: bool) -> None:
    receipt = f"rcpt-{uuid.uuid4().hex[:10]}" if passed else None
    _instrumentor().record_outcome(VERIFIERS[agent], passed, receipt_id=receipt, config=config)


def _complete(
    rng: random.Random,
    path: tuple[str, ...],
    *,
    fault: str | None = None,
    verifier: bool | None = True,
) -> str:
    """Run triage->path on the desk (or a faulty release of it); `verifier=None`: never run."""
    config = _config(_models(_path_turns(path, rng), rng))
    _desk(fault).invoke(_input(rng), config)
    if verifier is not None:
        _verify(config, path[-1], verifier)
    _finished(config)
    return _run_id(config)


def _healthy(rng: random.Random) -> str:
    return _complete(rng, _healthy_path(rng))


def _unclosed_tool_call(rng: random.Random) -> str:
    return _complete(rng, rng.choice((("billing",), ("refunds",))), fault="unclosed_tool_call")


def _control_not_moved(rng: random.Random) -> str:
    return _complete(rng, rng.choice((("billing",), ("refunds",))), fault="control_not_moved")


def _undeclared_route(rng: random.Random) -> str:
    return _complete(rng, ("escalation",))


def _false_complete(rng: random.Random) -> str:
    # The verifier ran and found the work not done (no refund on the ledger), or the app
    # trusted the agent's "done" and never ran it.
    return _complete(rng, _healthy_path(rng), verifier=rng.choice((False, None)))


def _ping_pong(rng: random.Random) -> str:
    config = _config(
        _models(
            {
                "triage": [_transfer("billing")],
                "billing": _forever(lambda: _transfer("refunds", "not_billing")),
                "refunds": _forever(lambda: _transfer("billing", "not_refunds")),
            },
            rng,
        ),
    )
    config["recursion_limit"] = rng.randint(*RECURSION_LIMITS)
    try:
        _desk().invoke(_input(rng), config)
    except GraphRecursionError:
        _finished(config)
        return _run_id(config)
    raise RuntimeError("the scripted ping-pong should have hit the recursion limit")


def _approval(
    rng: random.Random, window: tuple[float, float], *, owner: bool = True, decide: bool = False
) -> str:
    amount = float(rng.randrange(250, 2000))
    models = _models(
        {
            "triage": [_transfer("refunds", "refund_request")],
            "refunds": [
                kit.tool_call(
                    "create_large_refund", {"order_id": _order(rng), "amount_eur": amount}
                ),
                AIMessage("Done: your refund is on its way."),  # after the approval
            ],
        },
        rng,
    )
    policy = {
        "owner": rng.choice(APPROVERS) if owner else None,
        "deadline": time.time() + rng.uniform(*window),
    }
    config = _config(models, approval=policy)
    desk = _desk()
    paused = desk.invoke(_input(rng), config)
    if not paused.get("__interrupt__"):
        raise RuntimeError("the scripted refund should have paused for approval")
    run_id = _run_id(config)
    if not decide:
        _park(config)
        return run_id
    # Later, in the app's approval UI: the approver says yes, the thread resumes.
    desk.invoke(Command(resume={"decision": "approved"}), config)
    _verify(config, "refunds", True)
    _finished(config)
    return run_id


# The windows are read when a scenario runs (not bound here), so a test can shorten them.
def _approval_decided(rng: random.Random) -> str:
    return _approval(rng, DECIDED_WINDOW_S, decide=True)


def _approval_pending(rng: random.Random) -> str:
    return _approval(rng, PENDING_WINDOW_S)


def _approval_overdue(rng: random.Random) -> str:
    return _approval(rng, OVERDUE_WINDOW_S)


def _approval_no_owner(rng: random.Random) -> str:
    return _approval(rng, PENDING_WINDOW_S, owner=False)


SCENARIOS: dict[str, Callable[[random.Random], str]] = {
    "healthy": _healthy,
    "unclosed_tool_call": _unclosed_tool_call,
    "control_not_moved": _control_not_moved,
    "undeclared_route": _undeclared_route,
    "ping_pong": _ping_pong,
    "approval_decided": _approval_decided,
    "approval_pending": _approval_pending,
    "approval_overdue": _approval_overdue,
    "approval_no_owner": _approval_no_owner,
    "false_complete": _false_complete,
}


# -- the demo runner's interface ----------------------------------------------------------


_instrumented_for: list[Any] = []


def setup(tracer_provider: Any) -> None:
    """Instrument LangGraph into `tracer_provider` once; later calls with it do nothing."""
    inst = _instrumentor()
    if inst.is_instrumented_by_opentelemetry and _instrumented_for == [tracer_provider]:
        return
    # Default settings on purpose: no fallback wait owner, so a wait without one is
    # reported as such (`approval_no_owner`).
    inst.instrument(tracer_provider=tracer_provider)
    _instrumented_for[:] = [tracer_provider]


def run_scenario(kind: str, rng: random.Random) -> str:
    """Run one scenario of `kind` synchronously through the real graph; return its run id."""
    scenario = SCENARIOS.get(kind)
    if scenario is None:
        raise ValueError(f"unknown LangGraph demo kind {kind!r}; known: {', '.join(KINDS)}")
    return scenario(rng)
