"""What the LlamaIndex adapter remembers about a run while it is open."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from ..fingerprint import fingerprint
from ..lru import Lru

MAX_UNITS = 10_000
"""Per run: units of work remembered (least recently seen forgotten: a unit forgotten and
seen again counts as new, so a very long loop goes unseen rather than work being taken
for a loop)."""

UNKNOWN_AGENT = "(unknown)"
"""`to_agent` of a handoff naming no agent of the workflow. The name is the model's text
(a tool argument), so it never goes on the wire; only names the app declared do."""


@dataclass
class Pending:
    """A handoff tool call whose destination has not started yet."""

    handoff_id: str
    from_agent: str
    to_agent: str
    declared: bool
    tool_call_id: str | None
    closed: bool = False


@dataclass
class Shared:
    """What a run and the agents it delegates to share: one id space, one count of work."""

    run_id: str
    conversation_id: str | None
    ids: count[int] = field(default_factory=lambda: count(1))
    units: Lru[str, bool] = field(default_factory=lambda: Lru(MAX_UNITS))
    work: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_id(self) -> str:
        with self.lock:
            return f"h-{next(self.ids)}"

    def add_work(self, unit: str) -> None:
        """Count `unit` (a keyed HMAC) once per run: repeating the same work adds nothing."""
        if not unit:
            return  # the HMAC failed (counted): no evidence either way
        with self.lock:
            if unit not in self.units:
                self.work += 1
            self.units.put(unit, True)


@dataclass
class Run:
    """One observed workflow run: an `AgentWorkflow`, or a single agent's own `run()`.

    A run started inside another run's tool call (an agent used as a tool) is a delegation
    of that run: it shares its `Shared` and reports no `handoff.run` of its own.
    """

    shared: Shared
    agents: Mapping[str, Sequence[str] | None]
    """Agent name -> its `can_handoff_to` (None: any other agent of the workflow)."""
    current: str
    task: str
    """Keyed HMAC of the run's user message (the task): the handoff fingerprint."""
    max_iterations: int
    parent: Run | None = None
    run_span: str = ""
    """LlamaIndex's id of the run's own span."""
    delegation_id: str | None = None
    """This run's handoff id in its parent, until its agent starts (then admitted)."""
    turns: int = 0
    pending: list[Pending] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def run_id(self) -> str:
        return self.shared.run_id

    def declared(self, sender: str, target: str) -> bool:
        """Whether `target` is among the routes `sender` was given (`can_handoff_to`)."""
        if target not in self.agents or target == sender:
            return False
        allowed = self.agents.get(sender)
        return allowed is None or target in allowed


def task_fingerprint(user_msg: Any) -> str:
    """Keyed HMAC of the task the run was given: its user message's text."""
    text = getattr(user_msg, "content", user_msg)
    return fingerprint("task", text if isinstance(text, str) else str(text))
