"""Control flow: which agents hand work to which, how often, and how often it goes wrong.

A directed graph of agent→agent edges across runs in the window (`charts.control_flow`):
cycles read as arcs going back, a self-loop as a loop on its agent; each edge is labelled
with its handoffs and unhealthy share and coloured by that share (green 0 % → red 100 %);
an edge with handoffs over an undeclared route is dashed and says how many of how many
("1 of 33 undeclared"); each agent carries a health mark (the share of what it
received that was unhealthy). Below it, the same edges as a table and, for a chosen edge,
the runs behind it with links to their Run detail. Delegations — an agent called as a
tool, control never leaving the caller — are not handoffs: they are drawn dotted and
labelled "calls", listed apart under the table, and left out of every handoff count.
The table also says what each edge cost (the legs its handoffs gave their destinations)
and how much of that went to handoffs judged unhealthy ("wasted").
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import charts, client, cost, layout, style, urlstate
from handoffscope.instrumentation import semconv as sc

st.title("Control flow")
st.caption("Agent → agent handoffs across runs: each edge says how many and what share went wrong.")
filters = layout.current_filters()


def _verdict_words(verdicts: object) -> str:
    if not isinstance(verdicts, dict) or not verdicts:
        return ""
    order = sorted(verdicts, key=lambda v: sc.RANK.get(v, 99))
    return ", ".join(f"{style.verdict_label(v)} {int(verdicts[v])}" for v in order)


def _worst_first(edges: pd.DataFrame) -> pd.DataFrame:
    """Undeclared routes first (a policy breach whatever the share), then by unhealthy
    share, then by volume."""
    return edges.sort_values(
        ["undeclared", "unhealthy_share", "count"], ascending=False
    ).reset_index(drop=True)


def _runs_behind(ranked: pd.DataFrame) -> None:
    st.subheader("Runs behind an edge")
    names = [
        style.edge(f, t) for f, t in zip(ranked["from_agent"], ranked["to_agent"], strict=True)
    ]
    key = urlstate.bind(
        "edge",
        0,
        key="cf_edge",
        parse=names.index,
        dump=names.__getitem__,
        options=range(len(ranked)),
    )
    choice = st.selectbox("Edge", range(len(ranked)), format_func=lambda i: names[i], key=key)
    row = ranked.iloc[int(choice)]
    run_ids = [r for r in (row["runs"] if isinstance(row["runs"], list) else []) if r]
    if not run_ids:
        st.caption("The collector lists no run for this edge.")
        return
    known = client.runs(filters.service, filters.window_seconds, limit=1000).set_index("run_id")
    view = pd.DataFrame({"Run": [layout.run_url(r) for r in run_ids]})
    view["Verdict"] = [
        style.verdict_label(known.at[r, "verdict"]) if r in known.index else "—" for r in run_ids
    ]
    view["Status"] = [
        style.status_label(known.at[r, "status"]) if r in known.index else "—" for r in run_ids
    ]
    view["Last seen"] = [
        style.clock(known.at[r, "last_seen_at"]) if r in known.index else "—" for r in run_ids
    ]
    st.caption(
        f"Newest {style.count(len(run_ids), 'run')} with a handoff {style.md(names[int(choice)])}."
    )
    layout.table(view, column_config={"Run": layout.run_link_column()})


def _delegations(calls: pd.DataFrame) -> None:
    st.subheader("Delegations (agents called as tools)")
    st.caption(
        "The caller keeps control and gets the delegate's result back: not a handoff, so not "
        "in the chart or the handoff counts. A repeat is the same question with no new work."
    )
    layout.table(
        pd.DataFrame(
            {
                "Caller → delegate": [
                    style.edge(f, t)
                    for f, t in zip(calls["from_agent"], calls["to_agent"], strict=True)
                ],
                "Calls": calls["count"],
                "Unhealthy": [style.percent(s) for s in calls["unhealthy_share"]],
                "Verdicts": [_verdict_words(v) for v in calls["verdicts"]],
            }
        )
    )


with layout.guard():
    everything = client.edges(filters.service, filters.window_seconds)
    kinds = everything["kind"].fillna(sc.KIND_HANDOFF) if not everything.empty else None
    edges = (
        everything[kinds == sc.KIND_HANDOFF].reset_index(drop=True)
        if kinds is not None
        else everything
    )
    calls = (
        everything[kinds == sc.KIND_DELEGATION].reset_index(drop=True)
        if kinds is not None
        else everything
    )
    if edges.empty:
        layout.empty_state(
            "No handoffs between agents",
            filters,
            "Edges appear once an instrumented app records a `handoff.request`. Widen the time "
            "window or choose another service.",
        )
    else:
        total = int(edges["count"].sum())
        unhealthy = int(edges["unhealthy"].sum())
        undeclared = int(edges["undeclared"].sum())
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("Edges", style.count(len(edges), "edge"))
        c2.metric("Handoffs", style.count(total, "handoff"))
        c3.metric("Unhealthy", style.percent(unhealthy / total if total else 0.0))
        c4.metric("Undeclared", style.count(undeclared, "handoff"))

        drawn = pd.concat([edges, calls]) if not calls.empty else edges
        st.plotly_chart(charts.control_flow(drawn), key="cf_graph")
        st.caption(
            "Edge label: handoffs · share unhealthy; colour: that share, green 0 % → red "
            "100 %; width: volume. Dashed: an undeclared route, taken by the share its label "
            "says (“1 of 33 undeclared”). Dotted grey: a delegation (agent called as a tool), "
            "not a handoff. An arc going back is a cycle. Beside each agent: the share of the "
            "handoffs it received that were unhealthy."
        )

        ranked = _worst_first(edges)
        table = pd.DataFrame(
            {
                "Edge": [
                    style.edge(f, t)
                    for f, t in zip(ranked["from_agent"], ranked["to_agent"], strict=True)
                ],
                "Handoffs": ranked["count"],
                "Unhealthy": [style.percent(s) for s in ranked["unhealthy_share"]],
                "Undeclared": [
                    f"⚠ {charts.undeclared_words(n, c)}" if n else "declared"
                    for n, c in zip(ranked["undeclared"], ranked["count"], strict=True)
                ],
                "Verdicts": [_verdict_words(v) for v in ranked["verdicts"]],
                "Spend": [cost.cell(u) for u in ranked["usage"]],
                "Wasted": [
                    cost.wasted(u, b)
                    for u, b in zip(ranked["usage"], ranked["unhealthy_usage"], strict=True)
                ],
            }
        )
        layout.table(table)
        st.caption(
            "Spend: the tokens and dollars of the legs this edge's handoffs gave their "
            "destinations. Wasted: the share of that spend in handoffs judged unhealthy. "
            "“Not priced”: a model the price table lacks; “—”: no usage reported."
        )
        _runs_behind(ranked)
    if not calls.empty:
        _delegations(calls)
