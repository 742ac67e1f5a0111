"""Approvals: legitimate waits on a person, and the ones that need a push.

Open waits (no decision yet) in the collector's order: overdue first, then uncertain
(a checkpoint that lacks an owner, reason, future deadline, resume token or persisted
state), then healthy waits by deadline. Each shows the owner, reason, deadline and time
left. The time window applies to when the wait was checkpointed; the page says how many
open waits it leaves out, so an old overdue wait is never silently hidden.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import charts, client, layout, notified, style
from handoffscope.instrumentation import semconv as sc

st.title("Approvals")
st.caption("Runs waiting on a person: overdue and uncertain waits first.")
filters = layout.current_filters()

with layout.guard():
    everything = client.approvals(filters.service)
    cutoff = pd.Timestamp.now(tz="UTC") - pd.Timedelta(seconds=filters.window_seconds)
    # A wait without a checkpoint time cannot be placed in the window; keep it visible.
    in_window = everything["checkpointed_at"].isna() | (everything["checkpointed_at"] >= cutoff)
    waits = everything[in_window]
    hidden = len(everything) - len(waits)
    layout.last_updated(pd.Timestamp.now(tz="UTC"))

    if waits.empty:
        layout.empty_state(
            "No open approvals",
            filters,
            "A run appears here while a `handoff.wait` is checkpointed and not yet decided.",
        )
    else:
        verdicts = waits["verdict"]
        c1, c2, c3 = st.columns(3)
        c1.metric("Overdue", style.count(int((verdicts == sc.APPROVAL_OVERDUE).sum()), "wait"))
        c2.metric("Uncertain", style.count(int((verdicts == sc.WAIT_UNCERTAIN).sum()), "wait"))
        c3.metric(
            "Waiting on time", style.count(int((verdicts == sc.WAITING_ON_APPROVAL).sum()), "wait")
        )

        view = pd.DataFrame({"Status": [style.verdict_label(v) for v in waits["verdict"]]})
        view["Owner"] = waits["owner"].fillna("— none —").to_numpy()
        view["Reason"] = waits["reason"].fillna("— none —").to_numpy()
        view["Deadline"] = [style.clock(t) for t in waits["deadline"]]
        view["Time left"] = [style.time_left(s) for s in waits["seconds_left"]]
        view["Missing"] = [
            ", ".join(m) if isinstance(m, list) and m else "" for m in waits["missing"]
        ]
        view["Safe next step"] = [style.next_step(v) for v in waits["verdict"]]
        view["Notified"] = [notified.summary(n) for n in waits["notifications"]]
        view["Run"] = [layout.run_url(r) for r in waits["run_id"]]
        view["Service"] = waits["service"].to_numpy()
        view["Checkpointed"] = [style.clock(t) for t in waits["checkpointed_at"]]
        layout.table(
            view, verdict_columns=("Status",), column_config={"Run": layout.run_link_column()}
        )

        if waits["seconds_left"].notna().any():
            st.subheader("Time to deadline")
            st.plotly_chart(charts.time_left(waits), key="approvals_time_left")
    if hidden:
        older = everything[~in_window]
        overdue = int((older["verdict"] == sc.APPROVAL_OVERDUE).sum())
        text = (
            f"{style.count(hidden, 'older open wait')} checkpointed before this window"
            + (f", {overdue} of them overdue" if overdue else "")
            + ". Widen the time window to see them."
        )
        if overdue:
            st.warning(text, icon=":material/alarm:")
        else:
            st.caption(text)
