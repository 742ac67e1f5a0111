"""One CrewAI kickoff as handoffscope sees it: ids, declared coworkers, progress.

Only names, CrewAI's own ids and keyed HMACs are kept. A delegation's task text and a
tool's arguments and output are read once, at their event, to make a keyed HMAC
(`fingerprint`) and are never stored or sent. The coworker a model names is read only to
compare it with the crew's declared roles; what goes on the wire is the declared role, or
nothing when the model named an agent the crew does not have.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..fingerprint import fingerprint
from ..lru import Lru

DELEGATE_WORK = "delegate_work_to_coworker"
ASK_QUESTION = "ask_question_to_coworker"
DELEGATION_TOOLS = frozenset((DELEGATE_WORK, ASK_QUESTION))
"""CrewAI's two delegation tools, by normalized name: its events name them "Delegate work to
coworker" when they start and "delegate_work_to_coworker" when they finish."""
COWORKER_KEYS = ("coworker", "co_worker")
"""Where CrewAI's delegation tools read the coworker from (`BaseAgentTool._get_coworker`)."""

MAX_WORK_UNITS = 100_000


def tool_key(name: Any) -> str:
    """A tool name as CrewAI's two spellings of it compare equal."""
    return "_".join(str(name or "").casefold().split())


def role_of(agent: Any) -> str | None:
    """An agent's name on the wire: its role as the app wrote it. CrewAI interpolates a
    kickoff's `inputs` into roles (the quickstart's `{topic} Senior Data Researcher`), so
    the role it runs with can hold what the user typed; it keeps the written one as
    `_original_role` and names agents by it in its own tool events (`agent_role`)."""
    role = getattr(agent, "_original_role", None) or getattr(agent, "role", None)
    return role if isinstance(role, str) and role else None


def role_key(role: Any) -> str:
    """CrewAI's own matching of a coworker name (`BaseAgentTool.sanitize_agent_name`)."""
    return " ".join(str(role or "").split()).replace('"', "").casefold()


def parsed_args(args: Any) -> Any:
    """A tool call's arguments: CrewAI's started event has the model's JSON text, its
    finished event the parsed mapping."""
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def named_coworker(args: Any) -> str | None:
    """The coworker a delegation call names, as CrewAI reads it (the first of a list)."""
    args = parsed_args(args)
    if not isinstance(args, Mapping):
        return None
    for key in COWORKER_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1].split(",")[0]
            return value
    return None


def task_digest(run_id: str, tool: str, args: Any) -> str:
    """Keyed HMAC of what a delegation asks (its tool, task or question, and context)."""
    args = parsed_args(args)
    if isinstance(args, Mapping):
        asked = {k: v for k, v in args.items() if k not in COWORKER_KEYS}
    else:
        asked = {"args": args}
    return fingerprint({"run": run_id, "tool": tool, "asked": asked})


@dataclass
class Delegation:
    handoff_id: str
    run: Run
    to_agent: str | None
    accepted: bool = False


@dataclass
class Run:
    """One `Crew.kickoff`: `run_id` is CrewAI's id of its kickoff-started event."""

    run_id: str
    roles: dict[str, str] = field(default_factory=dict)
    """role_key(role) -> role, for every agent of the crew (its declared coworkers)."""
    work: Lru[str, bool] = field(default_factory=lambda: Lru(MAX_WORK_UNITS))
    """Keyed digests of the distinct tool results so far (name, arguments, output)."""
    delegations: int = 0
    """Delegations requested so far: the next one's `handoff.turn`."""
    last_agent: str | None = None
    sequential: bool = False
    """The crew runs `Process.sequential`: each task is handed over to the next."""
    task_agent: str | None = None
    """The role whose task completed last: the sender of the next task's handover."""
    handovers: int = 0
    """Task handovers requested so far: the next one's `handoff.turn`."""

    def declare(self, roles: Iterable[Any]) -> None:
        for role in roles:
            if isinstance(role, str) and role:
                self.roles.setdefault(role_key(role), role)

    def coworker(self, sender: str | None, named: str | None) -> str | None:
        """The declared role `named` designates (never the sender itself), else None."""
        if named is None:
            return None
        role = self.roles.get(role_key(named))
        if role is None or (sender is not None and role_key(role) == role_key(sender)):
            return None
        return role

    def did_work(self, tool: str, args: Any, output: Any) -> None:
        """A tool returned: a unit of work, once per distinct (tool, arguments, output)."""
        digest = fingerprint({"tool": tool, "args": parsed_args(args), "output": output})
        if digest:
            self.work.put(digest, True)

    @property
    def state_version(self) -> int:
        return len(self.work)
