"""Real LangGraph multi-agent graphs for the adapter tests, driven by scripted chat models.

The shape is LangGraph's swarm pattern: the root graph's nodes are agents, each a compiled
subgraph (model node -> ToolNode -> model ...) whose handoff tools return
`Command(goto=<agent>, graph=Command.PARENT, update=...)`. Its parts are the demo's
(`handoffscope.demo.langgraph_kit`, shared with the demo and the bench); `call`, `say`,
`handoff_tool`, `agent` and `swarm` here are those parts with the sentinel planted. The
chat model is langchain-core's `GenericFakeChatModel` replaying a script, so everything
runs offline through the real runtime: callbacks on worker threads, ParentCommand
bubbling, checkpoints, interrupts.

Every message, tool argument, tool output and state value carries `SENTINEL`, so a test
can prove that none of it leaves the process.
"""

from __future__ import annotations

import itertools
import operator
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph, add_messages
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

from handoffscope.demo import langgraph_kit as kit
from handoffscope.demo.langgraph_kit import SwarmState
from handoffscope.instrumentation.langgraph import wait_details

SENTINEL = "SENTINEL-7f3a9c-do-not-export"
"""Planted in every prompt, message, tool argument, tool output and state value."""

OWNER = "billing-lead"
REASON = "refund_over_limit"


class SupportState(SwarmState, total=False):
    customer_note: str


def call(name: str, **args: Any) -> AIMessage:
    """A scripted model turn that calls one tool (unique id, sentinel in content and args)."""
    return kit.tool_call(name, args, content=f"calling {name} {SENTINEL}")


def say(text: str = "") -> AIMessage:
    return AIMessage(content=f"{text} {SENTINEL}".strip())


def handoff_tool(agent: str, *, close: bool = True, set_active: bool = True):
    """The kit's swarm handoff tool, its ToolMessage carrying the reason and the sentinel;
    `close=False` / `set_active=False` plant the bugs."""
    return kit.handoff_tool(
        agent,
        close=close,
        move_control=set_active,
        note="transferred to {to} because {reason} " + SENTINEL,
    )


@tool
def lookup_invoice(order_id: str) -> str:
    """Look an invoice up (real work: its result is progress)."""
    return f"invoice for {order_id}: 80 EUR {SENTINEL}"


def approve(state: SupportState) -> dict:
    """The approval step after billing's answer: a human must say yes (`interrupt()`)."""
    answer = interrupt(
        {
            "question": f"refund 80 EUR? {SENTINEL}",
            **wait_details(owner=OWNER, reason=REASON, deadline=time.time() + 3600),
        }
    )
    return {"messages": [say(f"approval was {answer!r}")]}


def agent(name: str, script: Iterator[AIMessage], tools: list, *, approval: bool = False):
    """An agent subgraph: scripted model, ToolNode, and optionally the approval step."""
    return kit.agent(
        name,
        tools,
        kit.scripted_model(script),
        on_answer=approve if approval else None,
        schema=SupportState,
    )


def swarm(agents: dict[str, Any], *, checkpointer: Any = None):
    """Root graph: one node per agent, all may hand off to all; START goes to triage."""
    return kit.swarm(agents, checkpointer=checkpointer, schema=SupportState)


def first_input() -> dict:
    return {
        "messages": [("user", f"my refund please {SENTINEL}")],
        "active_agent": "triage",
        "customer_note": f"vip {SENTINEL}",
    }


# --- the scenarios ----------------------------------------------------------------------


def healthy(verify=None):
    """triage hands to billing (closed, control moved); billing works, answers, verifies."""

    def billing_script() -> Iterator[AIMessage]:
        yield call("lookup_invoice", order_id=f"A-1 {SENTINEL}")
        yield say("refund is on its way")

    billing = agent("billing", billing_script(), [lookup_invoice])
    if verify is not None:
        # A verifier node after the agent's answer (what a real app checks: the refund).
        inner = billing
        g = StateGraph(SupportState)
        g.add_node("work", inner)
        g.add_node("verify", verify)
        g.add_edge(START, "work")
        g.add_edge("work", "verify")
        billing = g.compile(name="billing")
    triage = agent(
        "triage",
        iter([call("transfer_to_billing", reason=f"refund {SENTINEL}")]),
        [handoff_tool("billing")],
    )
    return swarm({"triage": triage, "billing": billing})


def ping_pong():
    """triage and billing hand the customer back and forth without doing anything."""

    def forever(to: str) -> Iterator[AIMessage]:
        while True:
            yield call(f"transfer_to_{to}", reason=f"not mine {SENTINEL}")

    triage = agent("triage", forever("billing"), [handoff_tool("billing")])
    billing = agent("billing", forever("triage"), [handoff_tool("triage")])
    return swarm({"triage": triage, "billing": billing})


def back_and_forth_with_progress():
    """triage -> billing -> triage -> billing, each agent doing real work before handing on."""
    triage = agent(
        "triage",
        iter(
            [
                call("transfer_to_billing", reason=f"refund {SENTINEL}"),
                call("lookup_invoice", order_id=f"A-2 {SENTINEL}"),
                call("transfer_to_billing", reason=f"second order {SENTINEL}"),
            ]
        ),
        [handoff_tool("billing"), lookup_invoice],
    )
    billing = agent(
        "billing",
        iter(
            [
                call("lookup_invoice", order_id=f"A-1 {SENTINEL}"),
                call("transfer_to_triage", reason=f"another order {SENTINEL}"),
                say("both refunds are on their way"),
            ]
        ),
        [handoff_tool("triage"), lookup_invoice],
    )
    return swarm({"triage": triage, "billing": billing})


def fan_out():
    """A dispatcher node hands one request to two agents at once; they run in parallel."""

    def dispatch(state: SupportState) -> Command[Literal["billing", "refunds"]]:
        # One control key cannot name two holders: it names billing.
        return Command(
            goto=["billing", "refunds"],
            update={"messages": [say("splitting")], "active_agent": "billing"},
        )

    def worker(name: str):
        def run(state: SupportState) -> dict:
            return {"messages": [say(f"{name} done")]}

        return run

    g = StateGraph(SupportState)
    g.add_node("triage", dispatch)
    g.add_node("billing", worker("billing"))
    g.add_node("refunds", worker("refunds"))
    g.add_edge(START, "triage")
    return g.compile()


def approval(checkpointer):
    """triage hands to billing, whose refund needs a human: interrupt(), then resume."""
    triage = agent(
        "triage",
        iter([call("transfer_to_billing", reason=f"refund {SENTINEL}")]),
        [handoff_tool("billing")],
    )
    billing = agent("billing", iter([say("needs approval")]), [], approval=True)
    return swarm({"triage": triage, "billing": billing}, checkpointer=checkpointer)


def broken(*, close: bool = True, set_active: bool = True):
    """A handoff tool that forgets the ToolMessage, or forgets to move `active_agent`."""
    triage = agent(
        "triage",
        iter([call("transfer_to_billing", reason=f"refund {SENTINEL}")]),
        [handoff_tool("billing", close=close, set_active=set_active)],
    )
    billing = agent("billing", iter([say("done")]), [])
    return swarm({"triage": triage, "billing": billing})


def node_commands():
    """Function nodes that route with returned Commands; one goes where it never declared."""

    def triage(state: SupportState) -> Command[Literal["billing"]]:
        return Command(goto="billing", update={"active_agent": "billing", "messages": [say()]})

    def billing(state: SupportState) -> Command[Literal["triage"]]:
        # Declared only triage; goes to refunds: an undeclared route.
        return Command(goto="refunds", update={"active_agent": "refunds"})

    def refunds(state: SupportState) -> dict:
        return {"messages": [say("refunded")]}

    g = StateGraph(SupportState)
    g.add_node("triage", triage)
    g.add_node("billing", billing)
    g.add_node("refunds", refunds)
    g.add_edge(START, "triage")
    return g.compile()


# --- published multi-agent libraries and LangGraph's own patterns (issue 10) --------------
#
# langgraph-supervisor's `create_supervisor` and langgraph-swarm's `create_swarm` with their
# own handoff tools, agents from `create_react_agent` / `langchain.agents.create_agent`, and
# a network of function nodes routing with `Command` (LangGraph's multi-agent docs).


class ScriptedChatModel(GenericFakeChatModel):
    """`GenericFakeChatModel` that agents can bind tools to (the script decides the calls)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


def scripted(turns: Any) -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter(turns), disable_streaming=True)


def forever(make: Any) -> Iterator[AIMessage]:
    """An endless script: `make()` gives each turn (a fresh message, a fresh tool-call id)."""
    while True:
        yield make()


@tool
def write_note(text: str) -> str:
    """Write a note on the customer's file."""
    return f"noted {SENTINEL}"


def user_input() -> dict:
    return {"messages": [("user", f"my refund please {SENTINEL}")]}


def supervisor_team(supervisor_turns: Iterator[AIMessage], billing_turns: Iterator[AIMessage]):
    """langgraph-supervisor: a supervisor and one worker, `billing`, which returns to it
    over a static edge with the library's hand-back message pair."""
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    billing = create_react_agent(scripted(billing_turns), tools=[lookup_invoice], name="billing")
    return create_supervisor([billing], model=scripted(supervisor_turns)).compile()


def supervisor_round_trip():
    """The supervisor dispatches once; billing works, answers, returns; the supervisor ends."""
    return supervisor_team(
        iter([call("transfer_to_billing"), say("your refund is on its way")]),
        iter([call("lookup_invoice", order_id=f"A-1 {SENTINEL}"), say("refunded 80 EUR")]),
    )


def supervisor_redispatch():
    """The supervisor sends billing the same task again and again; billing gives the same
    answer each time (no new work): a loop until the recursion limit."""
    return supervisor_team(
        forever(lambda: call("transfer_to_billing")),
        forever(lambda: say("I cannot find that order")),
    )


def swarm_team(triage_turns: Iterator[AIMessage], billing_turns: Iterator[AIMessage]):
    """langgraph-swarm: two `create_agent` agents with the library's handoff tools."""
    from langchain.agents import create_agent
    from langgraph_swarm import create_handoff_tool, create_swarm

    triage = create_agent(
        scripted(triage_turns),
        tools=[create_handoff_tool(agent_name="billing"), write_note, lookup_invoice],
        name="triage",
    )
    billing = create_agent(
        scripted(billing_turns),
        tools=[create_handoff_tool(agent_name="triage"), write_note, lookup_invoice],
        name="billing",
    )
    return create_swarm([triage, billing], default_active_agent="triage").compile()


def swarm_bounce(work: str):
    """triage and billing bounce the customer. `work`: `none` (hand back at once), `same`
    (write the same note / look the same invoice up first, every time) or `new` (look a
    different invoice up each time, then billing answers)."""
    if work == "none":
        return swarm_team(
            forever(lambda: call("transfer_to_billing")),
            forever(lambda: call("transfer_to_triage")),
        )
    if work == "same":

        def same(note: bool, to: str) -> Iterator[AIMessage]:
            while True:
                if note:
                    yield call("write_note", text=f"customer called again {SENTINEL}")
                else:
                    yield call("lookup_invoice", order_id=f"A-1 {SENTINEL}")
                yield call(f"transfer_to_{to}")

        return swarm_team(same(True, "billing"), same(False, "triage"))
    orders = itertools.count(1)

    def new(to: str, rounds: int) -> Iterator[AIMessage]:
        for _ in range(rounds):
            yield call("lookup_invoice", order_id=f"A-{next(orders)} {SENTINEL}")
            yield call(f"transfer_to_{to}")
        yield say("all refunds are on their way")

    return swarm_team(new("billing", 2), new("triage", 1))


class NetworkState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: Annotated[list[str], operator.add]


def command_network(reply: str):
    """LangGraph's multi-agent network: function nodes that answer and route with
    `Command(goto=..., update=...)`, ping-ponging forever. `reply`: `same` (the same
    answer every time), `different` (a new answer every time) or `note` (append the
    same note to the state every time). No control key: the runtime's view of control."""
    count = itertools.count(1)

    def update() -> dict:
        if reply == "note":
            return {"notes": [f"customer called again {SENTINEL}"]}
        text = "not mine" if reply == "same" else f"not mine, try {next(count)}"
        return {"messages": [say(text)]}

    def triage(state: NetworkState) -> Command[Literal["billing"]]:
        return Command(goto="billing", update=update())

    def billing(state: NetworkState) -> Command[Literal["triage"]]:
        return Command(goto="triage", update=update())

    g = StateGraph(NetworkState)
    g.add_node("triage", triage)
    g.add_node("billing", billing)
    g.add_edge(START, "triage")
    return g.compile()


def dropped_send():
    """A dispatcher fans out with two `Send`s; one names a node that does not exist (a
    typo), which LangGraph drops without a word: that destination never runs."""

    def dispatch(state: NetworkState) -> Command:
        return Command(
            goto=[Send("billing", {"messages": state["messages"]}), Send("refund", {})],
            update={"messages": [say("splitting")]},
        )

    def worker(state: NetworkState) -> dict:
        return {"messages": [say("billing done")]}

    g = StateGraph(NetworkState)
    g.add_node("triage", dispatch)
    g.add_node("billing", worker)
    g.add_node("refunds", worker)
    g.add_edge(START, "triage")
    return g.compile()


class BillingSystemDown(RuntimeError):
    pass


def crashing():
    """triage hands to billing, whose node crashes."""

    def triage(state: NetworkState) -> Command[Literal["billing"]]:
        return Command(goto="billing", update={"messages": [say("over to billing")]})

    def billing(state: NetworkState) -> dict:
        raise BillingSystemDown(f"billing system down {SENTINEL}")

    g = StateGraph(NetworkState)
    g.add_node("triage", triage)
    g.add_node("billing", billing)
    g.add_edge(START, "triage")
    return g.compile()


def conditional_edges(*, declared: bool):
    """triage routes by a conditional edge (to billing, then to END); billing returns to
    triage over a static edge. `declared`: the branch lists its destinations."""
    visits = itertools.count()

    def triage(state: NetworkState) -> dict:
        return {"messages": [say("triaged")]}

    def route(state: NetworkState) -> str:
        return "billing" if next(visits) == 0 else END

    def billing(state: NetworkState) -> dict:
        return {"messages": [say("billing done")]}

    g = StateGraph(NetworkState)
    g.add_node("triage", triage)
    g.add_node("billing", billing)
    g.add_edge(START, "triage")
    if declared:
        g.add_conditional_edges("triage", route, ["billing", END])
    else:
        g.add_conditional_edges("triage", route)
    g.add_edge("billing", "triage")
    return g.compile()


def react_agent():
    """A root-level agent (`create_agent`): its model <-> tools steps are not handoffs."""
    from langchain.agents import create_agent

    return create_agent(
        scripted([call("lookup_invoice", order_id=f"A-1 {SENTINEL}"), say("refund is on its way")]),
        tools=[lookup_invoice],
        name="billing",
    )


# --- LangGraph's "Hierarchical Agent Teams" tutorial: team graphs invoked inside a node ----
#
# As the tutorial builds it (docs/docs/tutorials/multi_agent/hierarchical_agent_teams.ipynb
# in langchain-ai/langgraph): `make_supervisor_node` routes with the model's structured
# output and `Command(goto=...)`; each worker node runs a `create_react_agent` and reports
# back to its supervisor as a named `HumanMessage`; each team is a graph of its own, and the
# top-level supervisor's nodes call a team with `team_graph.invoke(...)` inside the node.
# The web and file tools are local stand-ins for Tavily and the file system (offline).


class TeamState(MessagesState):
    next: str


def make_supervisor_node(llm: Any, members: list[str]) -> Any:
    options = ["FINISH", *members]
    system_prompt = (
        "You are a supervisor tasked with managing a conversation between the"
        f" following workers: {members}. Given the following user request,"
        " respond with the worker to act next. Each worker will perform a"
        " task and respond with their results and status. When finished,"
        f" respond with FINISH. {SENTINEL}"
    )

    # The tutorial writes `next: Literal[*options]` and `-> Command[Literal[*members,
    # "__end__"]]`; this module postpones annotations, which would leave those as strings
    # naming locals, so the same types are built as objects.
    router = TypedDict("Router", {"next": Literal[tuple(options)]})  # type: ignore[misc]  # noqa: UP013
    router.__doc__ = "Worker to route to next. If no workers needed, route to FINISH."

    def supervisor_node(state: TeamState) -> Command:
        """An LLM-based router."""
        messages = [{"role": "system", "content": system_prompt}, *state["messages"]]
        response = llm.with_structured_output(router).invoke(messages)
        goto = response["next"]
        if goto == "FINISH":
            goto = END
        return Command(goto=goto, update={"next": goto})

    supervisor_node.__annotations__["return"] = Command[Literal[(*members, END)]]  # type: ignore[misc]
    return supervisor_node


def route(to: str) -> AIMessage:
    """The supervisor model's structured answer: a `Router` tool call naming the next worker."""
    return call("Router", next=to)


@tool
def search_web(query: str) -> str:
    """Search the web (stands in for the tutorial's Tavily tool)."""
    return f"three articles about {query} {SENTINEL}"


@tool
def create_outline(points: list[str], file_name: str) -> str:
    """Create and save an outline."""
    return f"Outline saved to {file_name} {SENTINEL}"


class DiskFull(OSError):
    pass


def write_document_tool(*, fail: bool = False):
    @tool
    def write_document(content: str, file_name: str) -> str:
        """Create and save a text document."""
        if fail:
            raise DiskFull(f"no space left for {file_name} {SENTINEL}")
        return f"Document saved to {file_name} {SENTINEL}"

    return write_document


def worker_node(name: str, agent_graph: Any) -> Any:
    """A team's worker: runs its react agent, then ALWAYS reports back to the supervisor."""

    def node(state: TeamState) -> Command[Literal["supervisor"]]:
        result = agent_graph.invoke(state)
        return Command(
            update={"messages": [HumanMessage(content=result["messages"][-1].content, name=name)]},
            goto="supervisor",
        )

    return node


def team_graph(supervisor_llm: Any, workers: dict[str, Any]):
    """A team: its own supervisor (also named `supervisor`) and its workers."""
    builder = StateGraph(TeamState)
    builder.add_node("supervisor", make_supervisor_node(supervisor_llm, list(workers)))
    for name, agent_graph in workers.items():
        builder.add_node(name, worker_node(name, agent_graph))
    builder.add_edge(START, "supervisor")
    return builder.compile()


def call_team(name: str, graph: Any) -> Any:
    """A top-level node that gives a team the last message and reports its answer back."""

    def node(state: TeamState) -> Command[Literal["supervisor"]]:
        response = graph.invoke({"messages": state["messages"][-1]})
        return Command(
            update={
                "messages": [HumanMessage(content=response["messages"][-1].content, name=name)]
            },
            goto="supervisor",
        )

    return node


def hierarchical(top: Iterator[AIMessage], teams: dict[str, Any]):
    """The top-level graph: a supervisor over the teams, each called inside a node."""
    builder = StateGraph(TeamState)
    builder.add_node("supervisor", make_supervisor_node(scripted(top), list(teams)))
    for name, graph in teams.items():
        builder.add_node(name, call_team(name, graph))
    builder.add_edge(START, "supervisor")
    return builder.compile()


def react(turns: Any, tools: list, prompt: str | None = None):
    from langgraph.prebuilt import create_react_agent

    return create_react_agent(scripted(turns), tools=tools, prompt=prompt)


def research_team(supervisor_turns: Iterator[AIMessage], search_turns: Iterator[AIMessage]):
    return team_graph(scripted(supervisor_turns), {"search": react(search_turns, [search_web])})


def hierarchical_teams(*, disk_full: bool = False):
    """The tutorial's run: research, then writing (outline, then document), then FINISH.
    `disk_full`: the doc writer's `write_document` raises (the run fails inside the team)."""
    research = research_team(
        iter([route("search"), route("FINISH")]),
        iter([call("search_web", query=f"AI agents {SENTINEL}"), say("agents are booming")]),
    )
    writing = team_graph(
        scripted([route("note_taker"), route("doc_writer"), route("FINISH")]),
        {
            "note_taker": react(
                [
                    call("create_outline", points=[f"intro {SENTINEL}"], file_name="o.txt"),
                    say("outline ready"),
                ],
                [create_outline],
                prompt=f"You can read documents and create outlines. {SENTINEL}",
            ),
            "doc_writer": react(
                [
                    call("write_document", content=f"report {SENTINEL}", file_name="r.txt"),
                    say("report written"),
                ],
                [write_document_tool(fail=disk_full)],
                prompt=f"You can read, write and edit documents. {SENTINEL}",
            ),
        },
    )
    return hierarchical(
        iter([route("research_team"), route("writing_team"), route("FINISH")]),
        {"research_team": research, "writing_team": writing},
    )


def hierarchical_research_loop():
    """The research team's supervisor sends `search` the same request again and again;
    the search agent finds nothing new each time: a ping-pong inside the team, until the
    recursion limit (raised in the team graph, through the top-level node, to the caller)."""
    research = research_team(
        forever(lambda: route("search")),
        forever(lambda: say("I found nothing new")),
    )
    return hierarchical(forever(lambda: route("research_team")), {"research_team": research})


# --- langgraph-supervisor with parallel handoff tool calls ---------------------------------


def supervisor_parallel_handoffs():
    """`create_supervisor(..., parallel_tool_calls=True)`: the supervisor's model asks for
    billing and refunds in one message. The library's handoff tools each return a `Send`;
    LangGraph carries out the first `ParentCommand` and drops the other agent's."""
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    both = AIMessage(
        content=f"asking both {SENTINEL}",
        tool_calls=[
            {"name": "transfer_to_billing", "args": {}, "id": kit.call_id()},
            {"name": "transfer_to_refunds", "args": {}, "id": kit.call_id()},
        ],
    )
    billing = create_react_agent(scripted([say("billing checked")]), tools=[], name="billing")
    refunds = create_react_agent(scripted([say("refund issued")]), tools=[], name="refunds")
    return create_supervisor(
        [billing, refunds],
        model=scripted([both, say("your case is handled")]),
        parallel_tool_calls=True,
    ).compile()
