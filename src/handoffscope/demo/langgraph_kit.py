"""LangGraph's swarm, in parts: the graphs the demo, the adapter tests and the bench run.

The pattern is the swarm of LangGraph's multi-agent docs ("Handoffs", and the
`langgraph-swarm` library built on it): the root graph's nodes are the agents, each a
compiled subgraph of its own, and an agent hands the customer on by calling a tool that
returns `Command(goto=<agent>, graph=Command.PARENT, update=...)` — the command bubbles
out of the subgraph as a `ParentCommand` and the root graph runs the named agent next.
Who holds the customer is a state key, `active_agent`, that the handoff tool moves.

The pieces, each written once here so that the demo (`langgraph_scenarios`), the adapter
tests (tests/adapters/langgraph_scenarios.py) and the overhead bench
(bench/bench_adapter_langgraph.py) run the same graphs:

| piece | what it is |
|---|---|
| `SwarmState` | the root state: `messages` (reduced by `add_messages`) and `active_agent`; subclass it to add keys |
| `tool_call(name, args, content=)` | a scripted model turn: an `AIMessage` calling one tool, with a fresh, unique tool-call id |
| `scripted_model(turns)` | langchain-core's `GenericFakeChatModel` replaying `turns`, streaming off |
| `handoff_tool(to, close=, move_control=, note=)` | the swarm handoff tool `transfer_to_<to>(reason)` |
| `agent(name, tools, model, on_answer=)` | an agent subgraph: model node -> `ToolNode` -> model ... until the model answers (`tools_condition`) |
| `swarm(agents, routes=, start=, checkpointer=)` | the root graph: one node per agent, the routes each declares (`destinations`), START -> the first agent |

`handoff_tool` as it should be closes its own tool call — it appends a `ToolMessage`
answering the call to the history it hands over, since a chat model refuses a history
with an unanswered tool call — and moves `active_agent` to the destination. The two
switches make the two bad releases a real app ships, so the adapter has something true to
catch: `close=False` hands over a history whose tool call is never answered (the handoff
reads `open_tool_protocol`), `move_control=False` goes to the destination but leaves
`active_agent` on the sender, so the next turn would be routed back to it
(`stale_control`). `note` is the `ToolMessage`'s text, a template of `{to}` and
`{reason}` (the tests plant their sentinel in it).

`agent`'s `model` is a chat model, or a callable that takes the run's `RunnableConfig`
and returns one: LangGraph's "configurable model" idiom, with which the demo gives each
run its own scripted models through `config["configurable"]`. `on_answer` is an optional
node run when the model answers without calling a tool (the tests' human approval, an
`interrupt()`); it is named after its function, as `StateGraph.add_node` names one.

The chat model is scripted so everything runs offline; the rest is the real runtime —
callbacks, `ParentCommand` bubbling, checkpoints, interrupts — and what the adapter sees
is what it would see of an app with a real model.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.prebuilt import InjectedState, ToolNode, tools_condition
from langgraph.types import Checkpointer, Command
from typing_extensions import TypedDict

__all__ = [
    "SwarmState",
    "agent",
    "call_id",
    "handoff_tool",
    "scripted_model",
    "swarm",
    "tool_call",
]


class SwarmState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    active_agent: str
    """Who holds the customer; handoff tools must move it."""


ChatModelChoice = BaseChatModel | Callable[[RunnableConfig], BaseChatModel]
"""A chat model, or where to find one in the run's config (the configurable-model idiom)."""


def call_id() -> str:
    """A fresh tool-call id, unique across runs and processes (the adapter exports it)."""
    return f"call_{uuid.uuid4().hex[:12]}"


def tool_call(name: str, args: Mapping[str, Any] | None = None, *, content: str = "") -> AIMessage:
    """A scripted model turn calling tool `name` with `args`.

    `args` is a mapping, not keywords, so a tool may take arguments named `name` or
    `content` (the tutorials' `write_document(content, file_name)` does)."""
    return AIMessage(
        content, tool_calls=[{"name": name, "args": dict(args or {}), "id": call_id()}]
    )


def scripted_model(turns: Iterable[AIMessage]) -> GenericFakeChatModel:
    """A chat model that answers with `turns`, one a call, whatever it is asked."""
    # disable_streaming: the fake model drops tool calls when it streams (stream_mode
    # "messages" or astream_events would make it); a real chat model streams them fine.
    return GenericFakeChatModel(messages=iter(turns), disable_streaming=True)


def handoff_tool(
    to: str,
    *,
    close: bool = True,
    move_control: bool = True,
    note: str = "Transferred to {to}.",
) -> BaseTool:
    """The swarm handoff tool `transfer_to_<to>`; `close=False` and `move_control=False`
    are the bad releases (see the module docstring)."""

    def transfer(
        reason: str,
        state: Annotated[dict, InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        messages = list(state["messages"])
        if close:
            text = note.format(to=to, reason=reason)
            messages.append(ToolMessage(text, tool_call_id=tool_call_id))
        update: dict[str, Any] = {"messages": messages}
        if move_control:
            update["active_agent"] = to
        return Command(goto=to, graph=Command.PARENT, update=update)

    return tool(f"transfer_to_{to}", description="Hand the customer to another agent.")(transfer)


def agent(
    name: str,
    tools: Sequence[BaseTool | Callable[..., Any]],
    model: ChatModelChoice,
    *,
    on_answer: Callable[..., Any] | None = None,
    schema: type[Any] = SwarmState,
) -> Any:
    """An agent subgraph named `name`: its model, its tools, back to the model until the
    model answers; then `on_answer`, if given. `schema`: the state (a `SwarmState`)."""

    # `state: Any`, not a state class: LangGraph would read a class here as the node's
    # input schema, and the node must see the whole state of whatever `schema` is.
    def call_model(state: Any, config: RunnableConfig) -> dict[str, Any]:
        chat = model if isinstance(model, BaseChatModel) else model(config)
        return {"messages": [chat.invoke(state["messages"])]}

    g = StateGraph(schema)
    g.add_node("model", call_model)
    g.add_node("tools", ToolNode(list(tools)))
    g.add_edge(START, "model")
    if on_answer is None:
        g.add_conditional_edges("model", tools_condition)
    else:
        step = on_answer.__name__
        g.add_node(step, on_answer)
        g.add_conditional_edges("model", tools_condition, {"tools": "tools", END: step})
        g.add_edge(step, END)
    g.add_edge("tools", "model")
    return g.compile(name=name)


def swarm(
    agents: Mapping[str, Any],
    *,
    routes: Mapping[str, Sequence[str]] | None = None,
    start: str = "triage",
    checkpointer: Checkpointer = None,
    schema: type[Any] = SwarmState,
) -> Any:
    """The root graph: one node per agent, START -> `start`. `routes`: the agents each may
    hand to, declared to the graph (`destinations`); an agent it leaves out declares none.
    Without `routes`, every agent may hand to every other."""
    g = StateGraph(schema)
    for name, subgraph in agents.items():
        if routes is None:
            declared = tuple(other for other in agents if other != name)
        else:
            declared = tuple(routes.get(name, ()))
        g.add_node(name, subgraph, destinations=declared)
    g.add_edge(START, start)
    return g.compile(checkpointer=checkpointer)
