"""Approvals: legitimate waits on a person, and the ones that need a push — by owner.

A chart of open waits by owner and deadline bucket (one bar per owner, so the page stays
one screen tall at a thousand waits), then an escalation list: one line per owner (overdue, uncertain and waiting counts, the most
overdue wait, the next deadline), worst owner first, then each owner's waits — overdue
first, then uncertain (a checkpoint that lacks an owner, reason, future deadline, resume
token or persisted state), then by deadline; each wait's status and run come first. Waits
without an owner are their own group at the top: nobody will answer them, so their next
step names the service's operator, not an owner.

Every open wait counts whatever its age and level (run-level waits have no handoff id):
there is no time window on this page. The figures are the collector's counts of every
open wait (`/api/v1/approvals` `counts`, the same query as the Live board's tile and
`/metrics`); the list is capped at `LIMIT` and says "N of M" when it is cut. Refreshes
itself like the Live board.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import acknowledge, charts, client, layout, notified, style, urlstate
from handoffscope.instrumentation import semconv as sc

REFRESH_SECONDS = 5
# Waits read for the page (a page of the API at a time): every open wait, up to this many.
LIMIT = 10_000
NO_OWNER = "— no owner —"
OPEN_GROUPS = 3  # owners shown expanded; the rest are one click away

st.title("Approvals")
st.caption("Runs waiting on a person, by owner: overdue and uncertain waits first.")
filters = layout.current_filters()
owner_key = urlstate.bind("owner", "", key="approvals_owner")


def _owners(waits: pd.DataFrame) -> pd.DataFrame:
    """One row per owner, worst first: most overdue, most uncertain, most overdue-by."""
    g = waits.assign(
        _owner=waits["owner"].fillna(NO_OWNER),
        _overdue=waits["verdict"] == sc.APPROVAL_OVERDUE,
        _uncertain=waits["verdict"] == sc.WAIT_UNCERTAIN,
        _waiting=waits["verdict"] == sc.WAITING_ON_APPROVAL,
    ).groupby("_owner", dropna=False)
    out = pd.DataFrame(
        {
            "overdue": g["_overdue"].sum(),
            "uncertain": g["_uncertain"].sum(),
            "waiting": g["_waiting"].sum(),
            "worst_left": g["seconds_left"].min(),
        }
    ).reset_index(names="owner")
    out["_none"] = out["owner"] != NO_OWNER
    return out.sort_values(
        ["_none", "overdue", "uncertain", "worst_left"],
        ascending=[True, False, False, True],
        na_position="last",
    ).reset_index(drop=True)


def _next_step(verdict: object, owner: object, service: object) -> str:
    """The verdict's safe next step — but a wait nobody owns cannot be escalated to its
    owner: its service's operator has to act (assign an owner, or decide it)."""
    if style.text(owner):
        return style.next_step(verdict)
    who = f"the operator of {style.text(service)}" if style.text(service) else "the operator"
    return f"No owner: {who} assigns one or decides it; then fix the checkpoint."


def _wait_rows(waits: pd.DataFrame) -> pd.DataFrame:
    # Status and the run first: at 1440 px the columns after the sixth are off-screen.
    view = pd.DataFrame({"Status": [style.verdict_label(v) for v in waits["verdict"]]})
    view["Run"] = [layout.run_url(r) for r in waits["run_id"]]
    view["Time left"] = [style.time_left(s) for s in waits["seconds_left"]]
    view["Acknowledged"] = acknowledge.column(waits["acknowledgement"])
    view["Safe next step"] = [
        _next_step(v, o, s)
        for v, o, s in zip(waits["verdict"], waits["owner"], waits["service"], strict=True)
    ]
    view["Deadline"] = [style.clock(t) for t in waits["deadline"]]
    view["Reason"] = waits["reason"].fillna("— none —").to_numpy()
    view["Missing"] = [", ".join(m) if isinstance(m, list) and m else "" for m in waits["missing"]]
    view["Notified"] = [notified.summary(n) for n in waits["notifications"]]
    view["Level"] = ["handoff" if style.text(h) else "run" for h in waits["handoff_id"]]
    view["Service"] = waits["service"].to_numpy()
    view["Checkpointed"] = [style.clock(t) for t in waits["checkpointed_at"]]
    return view


@st.fragment(run_every=REFRESH_SECONDS)
def board() -> None:
    with layout.guard():
        listed = client.approvals(filters.service, limit=LIMIT)
        waits, counts = acknowledge.unacknowledged_first(listed.rows, "verdict"), listed.counts
        layout.last_updated(pd.Timestamp.now(tz="UTC"), REFRESH_SECONDS)
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("Overdue", style.count(counts.get(sc.APPROVAL_OVERDUE, 0), "wait"))
        c2.metric("Uncertain", style.count(counts.get(sc.WAIT_UNCERTAIN, 0), "wait"))
        c3.metric("Waiting on time", style.count(counts.get(sc.WAITING_ON_APPROVAL, 0), "wait"))
        c4.metric("Open waits", style.count(listed.total, "wait"))
        if waits.empty:
            layout.empty_state(
                "No open approvals",
                filters,
                "A run appears here while a `handoff.wait` is checkpointed and not yet decided.",
            )
            return
        layout.capped(
            len(waits),
            listed.total,
            "open wait",
            "The list is capped, worst first; the counts above are of every open wait.",
        )

        st.subheader("Deadlines, by owner")
        st.caption(
            "Open waits counted by where their deadline falls; overdue on the left. "
            "One bar per owner (the most urgent first), whatever the number of waits."
        )
        st.plotly_chart(charts.deadline_buckets(waits), key="approvals_deadlines")

        owners = _owners(waits)
        st.subheader("Escalation list, by owner")
        summary = pd.DataFrame(
            {
                "Owner": owners["owner"].to_numpy(),
                "Overdue": owners["overdue"].astype(int).to_numpy(),
                "Uncertain": owners["uncertain"].astype(int).to_numpy(),
                "Waiting": owners["waiting"].astype(int).to_numpy(),
                "Most urgent": [style.time_left(s) for s in owners["worst_left"]],
            }
        )
        layout.table(summary, key="approvals_owners")

        chosen = st.session_state.get(owner_key) or ""
        for i, row in owners.iterrows():
            owner = row["owner"]
            if chosen and owner != chosen:
                continue
            mine = waits[waits["owner"].fillna(NO_OWNER) == owner]
            title = (
                f"{style.md(owner)} — {int(row['overdue'])} overdue, "
                f"{int(row['uncertain'])} uncertain, {int(row['waiting'])} waiting"
            )
            with st.expander(title, expanded=bool(chosen) or i < OPEN_GROUPS):
                layout.table(
                    _wait_rows(mine),
                    verdict_columns=("Status",),
                    column_config={"Run": layout.run_link_column()},
                    key=f"approvals_owner_{i}",
                )


st.columns([1, 2])[0].text_input(
    "Only this owner",
    placeholder="every owner",
    key=owner_key,
    help="Show one owner's waits (the counts stay those of every owner).",
)
board()
