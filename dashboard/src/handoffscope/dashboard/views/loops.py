"""Loops: runs that went round in circles, the cycle itself, and what it cost.

A loop is docs/architecture.md, Verdicts, rule 7: the same destination, task fingerprint and
state version seen again in a run, or a cycle of agents with no state progress. The table
lists every run with one, grouped first by cycle: one row per cycle of agents (a rotation of
the same cycle — billing → triage → billing and triage → billing → triage — is one cycle),
with how many runs went round it, the repeats and the turns they burned, worst first, so the
back-edge to break first is the top row. Below, the runs themselves (newest first, narrowed
to one cycle if chosen) and the chosen run's cycle drawn as a path of agents.

What a loop cost is what it burned after its first repeat (the API's `burned` and
`tokens_burned`): the runs are listed most expensive first by default — by burned dollars,
then burned tokens, loops whose burn could not be priced after every priced one — and
"most recent first" stays one click away.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import acknowledge, charts, client, cost, layout, style, urlstate
from handoffscope.dashboard.cycles import by_cycle, cycle_key
from handoffscope.instrumentation import semconv as sc

st.title("Loops")
st.caption(
    "Runs that handed work around without progress: the cycle, its repeats and the turns it burned."
)
filters = layout.current_filters()
# Runs read to group (a bare string here would be drawn: Streamlit's "magic"); the page
# says so when the collector had as many or more.
LIMIT = 500
ALL_CYCLES = "All cycles"
ORDERS = ["Most expensive first", "Most recent first"]


with layout.guard():
    loops = client.loops(filters.service, filters.window_seconds, limit=LIMIT)
    if loops.empty:
        layout.empty_state(
            "No loops",
            filters,
            "A run shows here when a handoff repeats the same destination, task fingerprint "
            "and state version, or agents cycle without state progress.",
        )
    else:
        c1, c2, c3 = st.columns(3)
        c1.metric("Runs with a loop", style.count(len(loops), "run"))
        c2.metric(
            "Repeated handoffs", style.count(int(loops["repeats"].fillna(0).sum()), "handoff")
        )
        c3.metric("Turns burned", style.count(int(loops["turns"].fillna(0).sum()), "turn"))

        cycles = by_cycle(loops)
        st.subheader("Cycles")
        capped = (
            f" (grouped from the newest {LIMIT:,} runs with a loop)" if len(loops) >= LIMIT else ""
        )
        st.caption(
            f"{style.count(len(cycles), 'cycle')} across {style.count(len(loops), 'run')}{capped}, "
            "most runs first. Safe next step: " + style.next_step(sc.LOOP)
        )
        layout.table(
            pd.DataFrame(
                {
                    "Cycle": [style.path(k) if k else "—" for k in cycles["key"]],
                    "Runs": cycles["runs"],
                    "Repeats": [style.count(n, "repeat") for n in cycles["repeats"]],
                    "Turns burned": [style.count(n, "turn") for n in cycles["turns"]],
                    "Services": [", ".join(s) for s in cycles["services"]],
                    "Last seen": [style.clock(t) for t in cycles["last_seen_at"]],
                }
            )
        )

        st.subheader("Runs")
        names = [ALL_CYCLES] + [style.path(k) if k else "—" for k in cycles["key"]]
        pick_key = urlstate.bind(
            "cycle",
            0,
            key="loops_cycle_filter",
            parse=names.index,
            dump=names.__getitem__,
            options=range(len(names)),
        )
        pick = st.selectbox(
            "Cycle", range(len(names)), format_func=lambda i: names[i], key=pick_key
        )
        if int(pick) > 0:
            chosen = cycles.iloc[int(pick) - 1]["key"]
            loops = loops[[cycle_key(c) == chosen for c in loops["cycle"]]].reset_index(drop=True)
        order_key = urlstate.bind(
            "order",
            0,
            key="loops_order",
            parse=ORDERS.index,
            dump=ORDERS.__getitem__,
            options=range(len(ORDERS)),
        )
        order = st.radio(
            "Order",
            range(len(ORDERS)),
            format_func=lambda i: ORDERS[i],
            key=order_key,
            horizontal=True,
        )
        if int(order) == 0:
            # The collector answers most recent first; a stable sort keeps that order
            # among loops that burned the same.
            ranks = [
                cost.sort_key(b, t)
                for b, t in zip(loops["burned"], loops["tokens_burned"], strict=True)
            ]
            loops = (
                loops.assign(_rank=ranks)
                .sort_values("_rank", kind="stable")
                .drop(columns="_rank")
                .reset_index(drop=True)
            )
            st.caption(
                "By what each loop burned after its first repeat: dollars, then tokens. "
                "Loops whose burn could not be priced (a model the price table lacks) come "
                "after every priced one, by tokens; loops that reported no usage come last."
            )
        loops = acknowledge.unacknowledged_first(loops)

        view = layout.with_run_links(loops)[["run_id", "service"]].rename(
            columns={"run_id": "Run", "service": "Service"}
        )
        view["Cycle"] = [style.path(c) if isinstance(c, list) else "—" for c in loops["cycle"]]
        view["Repeats"] = [style.count(n, "repeat") for n in loops["repeats"]]
        view["Turns burned"] = [style.count(n, "turn") for n in loops["turns"]]
        view["Tokens burned"] = [cost.tokens(n) for n in loops["tokens_burned"]]
        view["$ burned"] = [cost.price(b) for b in loops["burned"]]
        view["Status"] = [style.status_label(s) for s in loops["status"]]
        view["Acknowledged"] = acknowledge.column(loops["acknowledgement"])
        view["Last seen"] = [style.clock(t) for t in loops["last_seen_at"]]
        layout.table(view, column_config={"Run": layout.run_link_column()})

        st.subheader("The cycle")
        run_ids = [str(r) for r in loops["run_id"]]
        key = urlstate.bind(
            "run",
            0,
            key="loops_run",
            parse=run_ids.index,
            dump=run_ids.__getitem__,
            options=range(len(loops)),
        )
        idx = st.selectbox(
            "Run",
            range(len(loops)),
            format_func=lambda i: (
                f"{loops.iloc[i]['run_id']} ({style.path(loops.iloc[i]['cycle'] or [])})"
            ),
            key=key,
        )
        row = loops.iloc[int(idx)]
        cycle = row["cycle"] if isinstance(row["cycle"], list) else []
        if len(cycle) < 2:
            st.caption("The collector reported no cycle path for this run.")
        else:
            st.plotly_chart(
                charts.agent_path(cycle, step_verdicts=[sc.LOOP] * (len(cycle) - 1)),
                key="loops_cycle",
            )
            repeats = int(row["repeats"]) if pd.notna(row["repeats"]) else 0
            turns = int(row["turns"]) if pd.notna(row["turns"]) else 0
            st.markdown(
                f"**{style.md(style.path(cycle))}** — repeated {style.count(repeats, 'time')}, "
                f"{style.count(turns, 'turn')} burned. Safe next step: {style.next_step(sc.LOOP)}"
            )
        st.page_link(
            "views/run_detail.py",
            label=f"Open run {style.md(row['run_id'])} in Run detail",
            icon=":material/search:",
            query_params={"run_id": str(row["run_id"])},
        )
