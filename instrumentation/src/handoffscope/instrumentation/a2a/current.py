"""Which run an A2A send belongs to: the app's word, else another adapter's current run.

A task sent from inside an agent run (a function tool of an Agents SDK agent, a LangGraph
node) is a handoff OF that run, sent by the agent that was working. Lookup order:

1. `sending(run_id=..., agent=...)` around the send (the app says so; `SENDING` below);
2. the OpenAI Agents SDK adapter, when it is instrumented and an SDK span is current: the
   run the current SDK span belongs to, and the agent of its nearest agent span;
3. the LangGraph adapter, when it is instrumented and the send runs inside a graph node:
   the running graph's run id, and the node's name (LangGraph's own `langgraph_node`
   metadata) as the agent;
4. none: the send is a run of its own (client.py).

Read-only: nothing here changes the other adapters' state, and nothing is imported that the
app has not imported already (an adapter that was never imported has no current run).
Steps 2 and 3 ask the adapters' public accessors (`OpenAIAgentsInstrumentor.current_run`,
`LangGraphInstrumentor.run_id`), behind a try: a failure falls through to the next step,
never into the app.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..stats import swallowed

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CurrentRun:
    run_id: str
    agent: str | None
    source: str
    """`app` (sending()), `openai_agents` or `langgraph`: who named the run."""


SENDING: contextvars.ContextVar[CurrentRun | None] = contextvars.ContextVar(
    "handoffscope_a2a_sending", default=None
)


@contextmanager
def sending(run_id: str, agent: str | None = None) -> Iterator[None]:
    """Every A2A message sent inside this block is a handoff of run `run_id`, sent by
    `agent` (default: the instrumentor's `agent_name` setting). Contextvar-scoped, so
    concurrent tasks each keep their own."""
    token = SENDING.set(CurrentRun(run_id, agent, "app"))
    try:
        yield
    finally:
        SENDING.reset(token)


def current_run() -> CurrentRun | None:
    """The run an A2A send happening now belongs to (see the module docstring)."""
    found = SENDING.get()
    if found is not None:
        return found
    for lookup in (_openai_agents_run, _langgraph_run):
        try:
            found = lookup()
        except Exception:
            swallowed(_log, "a2a current run")
            found = None
        if found is not None:
            return found
    return None


def _instance(module_name: str, class_name: str) -> Any:
    """The adapter's instance if its module was imported and it was created (never makes one)."""
    module = sys.modules.get(module_name)
    cls = getattr(module, class_name, None) if module is not None else None
    inst = cls.__dict__.get("_instance") if cls is not None else None
    if inst is None or not getattr(inst, "_is_instrumented_by_opentelemetry", False):
        return None
    return inst


def _openai_agents_run() -> CurrentRun | None:
    inst = _instance("handoffscope.instrumentation.openai_agents", "OpenAIAgentsInstrumentor")
    found = inst.current_run() if inst is not None else None
    if found is None:
        return None
    return CurrentRun(found[0], found[1], "openai_agents")


def _langgraph_run() -> CurrentRun | None:
    inst = _instance("handoffscope.instrumentation.langgraph", "LangGraphInstrumentor")
    if inst is None:
        return None
    from langgraph.config import get_config

    try:
        config = get_config()
    except RuntimeError:  # not inside a runnable: this send is not a graph's
        return None
    run_id = inst.run_id(config)
    if not isinstance(run_id, str):
        return None
    node = (config.get("metadata") or {}).get("langgraph_node")
    return CurrentRun(run_id, node if isinstance(node, str) else None, "langgraph")
