"""Loops grouped by cycle: one name per cycle of agents, and the per-cycle totals.

Pure functions over the `/api/v1/loops` frame (no Streamlit), so the Loops page stays a
short "fetch, then draw" and the grouping is tested on its own.
"""

from __future__ import annotations

import pandas as pd

from handoffscope.dashboard import style


def cycle_key(cycle: object) -> tuple[str, ...]:
    """One name for a cycle whatever agent it was entered at: the closing repeat dropped,
    rotated to start at its smallest name, closed again ("a → b → a")."""
    agents = [style.text(a, "?") for a in cycle] if isinstance(cycle, list) else []
    if len(agents) > 1 and agents[0] == agents[-1]:
        agents = agents[:-1]
    if not agents:
        return ()
    start = min(range(len(agents)), key=lambda i: agents[i:] + agents[:i])
    turned = agents[start:] + agents[:start]
    return (*turned, turned[0])


def by_cycle(loops: pd.DataFrame) -> pd.DataFrame:
    """One row per cycle: runs, repeats, turns burned, services, last seen; worst first."""
    keyed = loops.assign(
        key=[cycle_key(c) for c in loops["cycle"]],
        repeats=pd.to_numeric(loops["repeats"], errors="coerce").fillna(0).astype(int),
        turns=pd.to_numeric(loops["turns"], errors="coerce").fillna(0).astype(int),
    )
    grouped = (
        keyed.groupby("key", sort=False)
        .agg(
            runs=("run_id", "count"),
            repeats=("repeats", "sum"),
            turns=("turns", "sum"),
            services=("service", lambda s: sorted({style.text(v, "—") for v in s})),
            last_seen_at=("last_seen_at", "max"),
        )
        .reset_index()
    )
    return grouped.sort_values(["runs", "turns"], ascending=False).reset_index(drop=True)
