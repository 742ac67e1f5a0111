"""A run's continuity in its conversation: did the turn start where the work was?

A conversation (`gen_ai.conversation.id`) is a sequence of runs, one per turn. Each run is
compared with the run before it (docs/semconv.md, "Turns"):

- `first` — no earlier run of the conversation;
- `continued` — it started at the previous run's final agent, or at an entry agent whose
  first handoff went elsewhere (a new request, routed afresh);
- `rerouted` — it started at an entry agent and its first handoff went straight to the
  previous run's final agent: back through the supervisor to reach the agent that already
  held the work, one model call and one handoff more, and that agent's local context lost;
- `diverted` — it started at an agent that is neither the previous final agent nor an
  entry agent.

None when it cannot be told: the run names no start agent, or it started at an agent
that is no entry agent after a run whose final agent is unknown.

This is the definition; the collector's SQL (`hs_continuity`, one per dialect) computes
the same over stored runs, and a test holds the two equal on every combination.
"""

from __future__ import annotations

from .. import semconv as sc


def continuity(
    has_previous: bool,
    previous_final: str | None,
    start_agent: str | None,
    first_to: str | None,
    start_is_entry: bool,
) -> str | None:
    """The continuity of a run (see the module's docstring)."""
    if not has_previous:
        return sc.CONTINUITY_FIRST
    if start_agent is None:
        return None
    if previous_final is not None and start_agent == previous_final:
        return sc.CONTINUITY_CONTINUED
    if start_is_entry:
        if previous_final is not None and first_to == previous_final:
            return sc.CONTINUITY_REROUTED
        return sc.CONTINUITY_CONTINUED
    if previous_final is None:
        return None
    return sc.CONTINUITY_DIVERTED
