"""What the LangGraph adapter remembers about a run while it is open, across resumes."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ..lru import Lru

MAX_REMEMBERED = 10_000
"""Per run: units of work and message digests remembered (least recently seen forgotten)."""


@dataclass
class Pending:
    """A handoff requested and not yet admitted by its destination."""

    handoff_id: str
    to_agent: str
    step: int | None
    tool_call_id: str | None
    closed_in_update: bool | None


@dataclass
class Branch:
    """A sender's conditional edge: its destination is known only when it starts."""

    sender: str
    """The sending node's name within its graph (`scope` + sender is the agent)."""
    task_key: str
    step: int | None
    ends: frozenset[str] | None
    """The branch's declared destinations; None when open-ended."""
    fingerprint: str
    state_version: int
    control_before: str | None
    scope: str = ""
    """Agent-name prefix of the graph the edge belongs to ("" for the root graph)."""


class Run:
    """What the adapter remembers about one run, across its invocations (resumes)."""

    def __init__(self, run_id: str, conversation_id: str | None) -> None:
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.lock = threading.Lock()
        self.open = True
        self.handoffs: set[str] = set()
        """Handoff ids already emitted (a command bubbles; nodes re-run after resume)."""
        self.handoff_calls: set[str] = set()
        """Tool-call ids that carried a handoff: their messages are plumbing, not progress."""
        self.pending: dict[str, list[Pending]] = {}
        self.branches: list[Branch] = []
        """Conditional edges taken in the last superstep, waiting for their destination."""
        self.units: Lru[str, bool] = Lru(MAX_REMEMBERED)
        """Digests of the units of work seen so far (see `progress.py`)."""
        self.work = 0
        """Distinct units of work produced so far: `handoff.state_version`."""
        self.message_units: Lru[str, tuple[Any, ...]] = Lru(MAX_REMEMBERED)
        """Message id -> its unit entries, so each message is digested once per run."""
        self.open_waits: set[str] = set()
        self.waits_seen: set[str] = set()
        self.first_step: int | None = None
        self.last_step: int | None = None
        self.last_agent: str | None = None

    @property
    def turns(self) -> int | None:
        if self.first_step is None or self.last_step is None:
            return None
        return self.last_step - self.first_step + 1
