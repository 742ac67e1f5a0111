"""Progress without content: a run's task fingerprint and its count of distinct units of work.

The LangGraph package docstring ("Loops") says what a unit of work is. Content only ever
goes into a keyed HMAC (`fingerprint`); each message is digested once per run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..fingerprint import fingerprint
from .graph import GraphInfo
from .run import Run

_PLUMBING_TOOL_PREFIXES = ("transfer_to_", "transfer_back_to_")
"""Tool names of handoff tools (langgraph-swarm, langgraph-supervisor): plumbing, not work."""
_HANDOFF_BACK_KEY = "__is_handoff_back"
"""`response_metadata` key langgraph-supervisor sets on its hand-back message pair."""

# Unit entries of a message: (role, tool-call id, digest). Roles: a human message (the
# task: its id, never digested), plumbing (a handoff's own messages), a tool call, a tool
# result, an answer (an AI message without tool calls).
_HUMAN, _PLUMBING, _CALL, _RESULT, _ANSWER = "human", "plumbing", "call", "result", "answer"
_Entry = tuple[str, "str | None", str]


def _is_plumbing_name(name: Any) -> bool:
    return isinstance(name, str) and name.startswith(_PLUMBING_TOOL_PREFIXES)


def _message_units(m: Any, nodes: frozenset[str]) -> tuple[_Entry, ...]:
    """A message's unit entries. Content only ever goes into a keyed HMAC (`fingerprint`).

    `nodes` are the node names of the graph reading it: a human message named after one is
    that node's report (LangGraph's hierarchical-teams tutorial has workers report back as
    `HumanMessage(content=..., name="search")`), so it is work — its text, like an answer —
    not a new task.
    """
    kind = getattr(m, "type", None)
    meta = getattr(m, "response_metadata", None)
    handoff_back = isinstance(meta, Mapping) and bool(meta.get(_HANDOFF_BACK_KEY))
    name = getattr(m, "name", None)
    if kind == "human" and isinstance(name, str) and name in nodes:
        return ((_ANSWER, None, fingerprint(_ANSWER, getattr(m, "content", None))),)
    if kind == "human":
        mid = getattr(m, "id", None)
        return ((_HUMAN, mid if isinstance(mid, str) else None, ""),)
    if kind == "ai":
        calls = [c for c in getattr(m, "tool_calls", None) or () if isinstance(c, Mapping)]
        if not calls:
            if handoff_back:
                return ()
            return ((_ANSWER, None, fingerprint(_ANSWER, getattr(m, "content", None))),)
        out: list[_Entry] = []
        for c in calls:
            call_id = c.get("id") if isinstance(c.get("id"), str) else None
            name = c.get("name")
            if handoff_back or _is_plumbing_name(name):
                out.append((_PLUMBING, call_id, ""))
            else:
                out.append((_CALL, call_id, fingerprint((_CALL, name), c.get("args"))))
        return tuple(out)
    if kind == "tool":
        call_id = getattr(m, "tool_call_id", None)
        call_id = call_id if isinstance(call_id, str) else None
        name = getattr(m, "name", None)
        if handoff_back or _is_plumbing_name(name):
            return ((_PLUMBING, call_id, ""),)
        return ((_RESULT, call_id, fingerprint((_RESULT, name), getattr(m, "content", None))),)
    return ()


def _messages(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value] if hasattr(value, "type") else []


def items(update: Any) -> list[tuple[Any, Any]]:
    """A state update's (key, value) pairs: a mapping, or a Command's list of pairs."""
    if isinstance(update, Mapping):
        return list(update.items())
    if isinstance(update, (list, tuple)):
        return [u for u in update if isinstance(u, tuple) and len(u) == 2]
    return []


def _state_items(state: Any) -> list[tuple[Any, Any]]:
    """A state's (key, value) pairs: a TypedDict state, or a dataclass / pydantic one."""
    if isinstance(state, Mapping):
        return list(state.items())
    attrs = getattr(state, "__dict__", None)
    if isinstance(attrs, dict):
        return [(k, v) for k, v in attrs.items() if not k.startswith("_")]
    return []


def progress(
    run: Run, info: GraphInfo, messages_key: str, state: Any, updates: Sequence[Any]
) -> tuple[str, int]:
    """(task fingerprint, state_version) after a step; the package docstring says what counts.

    `state` is the state the sender started from, `updates` what its step writes: work an
    agent did inside its subgraph reaches the root state only through them. Call with
    `run.lock` held (the run's unit and message memories are shared by parallel tasks).
    """
    pairs = _state_items(state)
    for update in updates:
        pairs.extend(items(update))
    human: list[str] = []
    seen_human: set[str] = set()
    plumbing = run.handoff_calls
    position = 0
    units: list[str] = []
    for key, value in pairs:
        if key == messages_key:
            for m in _messages(value):
                position += 1
                mid = getattr(m, "id", None)
                entries = run.message_units.get(mid) if isinstance(mid, str) else None
                if entries is None:
                    entries = _message_units(m, info.nodes)
                    if isinstance(mid, str):
                        run.message_units.put(mid, entries)
                for role, ref, digest in entries:
                    if role == _HUMAN:
                        hid = ref or f"#{position}"
                        if hid not in seen_human:
                            seen_human.add(hid)
                            human.append(hid)
                    elif role == _PLUMBING:
                        if ref is not None:
                            plumbing.add(ref)
                    elif ref is None or ref not in plumbing:
                        units.append(digest)
        elif (
            isinstance(key, str)
            and key not in info.skip_keys
            and (info.value_keys is None or key in info.value_keys)
        ):
            # One unit per element: appending an identical note adds nothing.
            for element in value if isinstance(value, (list, tuple)) else (value,):
                units.append(fingerprint(("state", key), element))
    for unit in units:
        if not unit:
            continue  # the HMAC failed (counted): no evidence either way
        if unit not in run.units:
            run.work += 1
        run.units.put(unit, True)
    return fingerprint(human), run.work


def tool_closed(messages: Any, tool_call_id: str) -> bool | None:
    if not isinstance(messages, (list, tuple)):
        return None
    for m in reversed(messages):
        if getattr(m, "type", None) == "tool" and getattr(m, "tool_call_id", None) == tool_call_id:
            return True
    return False
