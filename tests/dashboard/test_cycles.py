"""The pure parts behind Loops and Control flow: cycle names, grouping, graph layers."""

from __future__ import annotations

import pandas as pd

from handoffscope.dashboard.charts import flow_layers
from handoffscope.dashboard.cycles import by_cycle, cycle_key


def test_a_cycle_has_one_name_whatever_agent_it_was_entered_at() -> None:
    assert cycle_key(["triage", "billing", "triage"]) == ("billing", "triage", "billing")
    assert cycle_key(["billing", "triage", "billing"]) == ("billing", "triage", "billing")
    assert cycle_key(["c", "a", "b", "c"]) == ("a", "b", "c", "a")
    # A different direction round the same agents is a different cycle.
    assert cycle_key(["a", "c", "b", "a"]) != cycle_key(["a", "b", "c", "a"])
    assert cycle_key(["a", "a"]) == ("a", "a")  # a self-loop
    assert cycle_key(None) == () and cycle_key([]) == ()


def test_runs_are_grouped_by_cycle_most_runs_first() -> None:
    loops = pd.DataFrame(
        {
            "run_id": ["r1", "r2", "r3"],
            "service": ["s1", "s2", "s1"],
            "cycle": [["a", "b", "a"], ["x", "y", "x"], ["b", "a", "b"]],
            "repeats": [2, 5, 1],
            "turns": [10, 30, 4],
            "last_seen_at": pd.to_datetime(["2026-12-01", "2026-12-02", "2026-12-03"], utc=True),
        }
    )
    grouped = by_cycle(loops)
    assert list(grouped["key"]) == [("a", "b", "a"), ("x", "y", "x")]
    first = grouped.iloc[0]
    assert (first["runs"], first["repeats"], first["turns"]) == (2, 3, 14)
    assert first["services"] == ["s1"]
    assert first["last_seen_at"] == pd.Timestamp("2026-12-03", tz="UTC")


def test_flow_layers_put_back_edges_and_self_loops_against_the_flow() -> None:
    where = flow_layers([("a", "b"), ("b", "c"), ("c", "a"), ("b", "b"), ("a", "d")])
    column = {agent: c for agent, (c, _) in where.items()}
    # The cycle a → b → c → a reads left to right, its back-edge c → a goes back.
    assert column["a"] < column["b"] < column["c"]
    assert column["d"] == column["a"] + 1
    # No two agents share a place.
    assert len(set(where.values())) == len(where)
