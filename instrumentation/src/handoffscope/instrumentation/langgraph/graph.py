"""Reading a compiled graph's shape and its state's control key, never its content.

`graph_info()` is computed once per compiled graph (cached weakly): which nodes are
agents, where each may send (its declared destinations), its static and conditional edges,
which nodes are themselves compiled graphs, and which state keys count as work (see
`progress.py`). The same reading serves the root graph and a team graph invoked inside
one of its agents' nodes.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import LangGraphSettings

UNSET_AGENT = "(unset)"
"""`control.after` when the graph declares the control key but the handoff never set it."""


@dataclass(frozen=True)
class GraphInfo:
    routes: Mapping[str, tuple[frozenset[str], bool]]
    """node -> (declared destinations, whether that list is complete)."""
    value_keys: frozenset[str] | None
    """State keys whose values are work: the root state's channels less messages, control
    and managed values (None: the graph has no builder to tell, so every key but those)."""
    skip_keys: frozenset[str]
    """State keys that are never work: messages, control, managed values."""
    control_tracked: bool
    """The graph has a channel for the control key."""
    agents: frozenset[str]
    """Root nodes that are agents (see `LangGraphSettings.agent_nodes`)."""
    nodes: frozenset[str]
    """Every root node name: a goto to a name outside it is dropped by LangGraph."""
    edges: Mapping[str, tuple[str, ...]]
    """agent -> agents its static edges lead to."""
    branches: Mapping[str, tuple[frozenset[str] | None, ...]]
    """agent -> the destination sets of its conditional edges (None: open-ended)."""
    subgraph_nodes: frozenset[str] = frozenset()
    """Nodes that are themselves compiled graphs (`add_node("billing", billing_graph)`):
    the agent-as-subgraph shape, whose inner nodes are that agent's own steps."""

    def is_agent(self, node: str) -> bool:
        return node in self.agents

    def may_receive(self, node: str) -> bool:
        """A goto target that could be a handoff: an agent, or a name that is no node at
        all (LangGraph drops it silently: a handoff that will never be admitted)."""
        return node in self.agents or node not in self.nodes


graph_info_cache: weakref.WeakKeyDictionary[Any, GraphInfo] = weakref.WeakKeyDictionary()


def graph_info(graph: Any, settings: LangGraphSettings, prefix: str = "") -> GraphInfo:
    """The graph's shape. `prefix` is the agent-name prefix of a team graph invoked inside
    an agent's node (`research_team/`): with `agent_nodes` set, its agents are the nodes
    whose qualified name is listed (not cached: the answer depends on where it runs)."""
    names: Collection[str] | None = None
    if prefix and settings.agent_nodes is not None:
        names = {n[len(prefix) :] for n in settings.agent_nodes if n.startswith(prefix)}
    elif not prefix:
        try:
            cached = graph_info_cache.get(graph)
        except TypeError:
            cached = None
        if cached is not None:
            return cached
    info = _read(graph, settings, names)
    if names is None:
        with contextlib.suppress(TypeError):  # an unhashable graph is just not cached
            graph_info_cache[graph] = info
    return info


def _read(graph: Any, settings: LangGraphSettings, names: Collection[str] | None) -> GraphInfo:
    targets: dict[str, set[str]] = {}
    open_ended: set[str] = set()
    managed: set[str] = set()
    nodes: dict[str, Any] = {}
    edges: dict[str, set[str]] = {}
    branch_ends: dict[str, list[frozenset[str] | None]] = {}
    value_keys: set[str] | None = None
    builder = getattr(graph, "builder", None)
    if builder is None:
        nodes = {n: None for n in (getattr(graph, "nodes", None) or {})}
    else:
        nodes = dict(getattr(builder, "nodes", None) or {})
        value_keys = set(getattr(builder, "channels", None) or ())
        for name, spec in (getattr(builder, "nodes", None) or {}).items():
            ends = getattr(spec, "ends", None)
            if ends:
                targets.setdefault(name, set()).update(ends)  # dict ends: keys are nodes
        for start, end in getattr(builder, "edges", ()) or ():
            targets.setdefault(start, set()).add(end)
            edges.setdefault(start, set()).add(end)
        for starts, end in getattr(builder, "waiting_edges", ()) or ():
            for start in starts:
                targets.setdefault(start, set()).add(end)
                edges.setdefault(start, set()).add(end)
        for start, branches in (getattr(builder, "branches", None) or {}).items():
            for branch in branches.values():
                ends = getattr(branch, "ends", None)
                if ends is None:
                    open_ended.add(start)
                    targets.setdefault(start, set())
                    branch_ends.setdefault(start, []).append(None)
                else:
                    targets.setdefault(start, set()).update(ends.values())
                    branch_ends.setdefault(start, []).append(frozenset(ends.values()))
        managed.update(getattr(builder, "managed", None) or ())
    agents = agent_nodes(nodes, settings) if names is None else frozenset(names) & set(nodes)
    routes = {node: (frozenset(dests), node not in open_ended) for node, dests in targets.items()}
    skip = {settings.messages_key, *managed}
    if settings.control_key:
        skip.add(settings.control_key)
    channels = getattr(graph, "channels", None) or {}
    return GraphInfo(
        routes=routes,
        value_keys=None if value_keys is None else frozenset(value_keys - skip),
        skip_keys=frozenset(skip),
        control_tracked=bool(settings.control_key) and settings.control_key in channels,
        agents=agents,
        nodes=frozenset(nodes),
        edges={
            start: tuple(sorted(e for e in ends if e in agents and e != start))
            for start, ends in edges.items()
            if start in agents
        },
        branches={start: tuple(b) for start, b in branch_ends.items() if start in agents},
        subgraph_nodes=frozenset(
            name for name, spec in nodes.items() if _is_graph(getattr(spec, "runnable", None))
        ),
    )


def _is_graph(runnable: Any) -> bool:
    try:
        from langgraph.pregel import Pregel
    except ImportError:  # pragma: no cover - the adapter is only attached with LangGraph
        return False
    return isinstance(runnable, Pregel)


def agent_nodes(nodes: Mapping[str, Any], settings: LangGraphSettings) -> frozenset[str]:
    if settings.agent_nodes is not None:
        return frozenset(settings.agent_nodes)
    try:
        from langgraph.prebuilt import ToolNode
    except ImportError:  # langgraph-prebuilt is optional: then no node is a ToolNode
        ToolNode = ()  # type: ignore[assignment,misc]  # noqa: N806
    # A ToolNode runs the tools of the agent beside it (a root-level react agent's
    # model <-> tools): a step of that agent, not an agent control moves to.
    return frozenset(
        name
        for name, spec in nodes.items()
        if not name.startswith("__") and not isinstance(getattr(spec, "runnable", None), ToolNode)
    )


def state_get(state: Any, key: str | None) -> Any:
    if key is None or state is None:
        return None
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)


def agent_name(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
