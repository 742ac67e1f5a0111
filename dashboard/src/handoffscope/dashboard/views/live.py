"""Live: "is anything stuck, looping, waiting past its deadline or claiming done — right now?"

For the operator on shift. Refreshes itself every few seconds (a `st.fragment` with
`run_every`, so only the board reruns, not the sidebar): runs in flight with the agent
holding the work and the time since its last handoff, handoffs per verdict over the
window (the last hour by default), and the newest unhealthy handoffs with the safe next
step. The "last updated" line is the collector's clock at the answer.
"""

from __future__ import annotations

import streamlit as st

from handoffscope.dashboard import charts, client, layout, style
from handoffscope.instrumentation import semconv as sc

REFRESH_SECONDS = 5

st.title("Live")
st.caption(
    "Runs in flight, handoff verdicts over the window, and the newest unhealthy handoffs "
    "with the safe next step."
)
filters = layout.current_filters()


def _metrics(data: client.Live) -> None:
    counts = data.verdict_counts
    total = sum(counts.values())
    unhealthy = sum(n for v, n in counts.items() if style.is_unhealthy(v))
    share = unhealthy / total if total else 0.0
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Runs in flight", style.count(len(data.in_flight), "run"))
    c2.metric(f"Handoffs ({filters.window_label.lower()})", style.count(total, "handoff"))
    c3.metric(
        "Unhealthy",
        style.count(unhealthy, "handoff"),
        f"{style.percent(share)} of all",
        delta_color="off",
        delta_arrow="off",
    )
    overdue = counts.get(sc.APPROVAL_OVERDUE, 0)
    c4.metric("Approvals overdue", style.count(overdue, "wait"))


def _in_flight(data: client.Live) -> None:
    st.subheader("Runs in flight")
    if data.in_flight.empty:
        st.success("No run is in flight right now.", icon=":material/check_circle:")
        return
    df = data.in_flight.sort_values("seconds_since_last_handoff", ascending=False)
    view = layout.with_run_links(df)[["run_id", "service", "current_agent"]].rename(
        columns={"run_id": "Run", "service": "Service", "current_agent": "Agent holding the work"}
    )
    view["Since last handoff"] = [style.duration(s) for s in df["seconds_since_last_handoff"]]
    view["Last handoff"] = [style.clock(t) for t in df["last_handoff_at"]]
    view["Verdict"] = [style.verdict_label(v) for v in df["verdict"]]
    layout.table(view, column_config={"Run": layout.run_link_column()})


def _unhealthy(data: client.Live) -> None:
    st.subheader("Newest unhealthy handoffs")
    if data.unhealthy.empty:
        st.success(f"No unhealthy handoff ({filters.scope}).", icon=":material/check_circle:")
        return
    df = data.unhealthy
    view = layout.with_run_links(df)[["run_id"]].rename(columns={"run_id": "Run"})
    view.insert(0, "When", [style.clock(t) for t in df["requested_at"]])
    view["Handoff"] = [
        style.edge(f, t) for f, t in zip(df["from_agent"], df["to_agent"], strict=True)
    ]
    view["Verdict"] = [style.verdict_label(v) for v in df["verdict"]]
    view["Safe next step"] = [
        style.text(s) or style.next_step(v)
        for s, v in zip(df["next_step"], df["verdict"], strict=True)
    ]
    view["Why"] = [style.text(w) for w in df["why"]]
    view["Service"] = df["service"]
    layout.table(view, column_config={"Run": layout.run_link_column()})


def _drops() -> None:
    df = client.drops(filters.service)
    if df.empty:
        return
    st.subheader("Content dropped at the door")
    st.caption(
        "Attributes outside the handoff contract (prompts, messages, tool arguments from other "
        "instrumentations) that the collector removed before storage: their names and counts, "
        "never their values. Turn them off at the source to save the bandwidth."
    )
    view = df.sort_values("count", ascending=False).rename(
        columns={"service": "Service", "attribute": "Attribute", "count": "Dropped"}
    )
    view["Service"] = [style.text(v) for v in view["Service"]]
    view["Attribute"] = [style.text(v) for v in view["Attribute"]]
    view["Dropped"] = [style.count(int(n), "value") for n in view["Dropped"]]
    layout.table(view)


@st.fragment(run_every=REFRESH_SECONDS)
def board() -> None:
    with layout.guard():
        data = client.live(filters.service, filters.window_seconds)
        layout.last_updated(data.now, REFRESH_SECONDS)
        if not data.verdict_counts and data.in_flight.empty and data.unhealthy.empty:
            conn = client.connection()
            layout.empty_state(
                "No handoffs yet",
                filters,
                f"Evidence appears here within seconds of an instrumented app sending spans to "
                f"`{conn.api}/v1/traces`. Try `handoffscope demo`, or widen the time window.",
            )
            _drops()
            return
        _metrics(data)
        left, right = st.columns([2, 3])
        with left:
            st.subheader("Handoffs by verdict")
            st.plotly_chart(charts.verdict_counts(data.verdict_counts), key="live_counts")
        with right:
            st.subheader("Per minute")
            if data.timeline.empty:
                st.caption("No per-minute breakdown in this window.")
            else:
                st.plotly_chart(charts.verdict_timeline(data.timeline), key="live_timeline")
        _unhealthy(data)
        _in_flight(data)
        _drops()


board()
