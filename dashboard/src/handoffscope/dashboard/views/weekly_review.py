"""Weekly review: which edges and reasons reject most, and is it getting better?

Rejections are `route_rejected` + `contract_rejected` (DESIGN §4); weeks are ISO weeks.
The page compares this week with last (rate and change), then breaks the rate down by
reason, by edge and by receiving agent. "Download CSV" saves the collector's own CSV
export for the same service and weeks, so the file matches what the page shows.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import charts, client, layout, style

st.title("Weekly review")
st.caption("Rejection rate (route + contract rejections) per ISO week: this week against last.")
filters = layout.current_filters()


def _rate_of(weeks: pd.DataFrame, week: str | None) -> tuple[float | None, int, int]:
    row = weeks[weeks["week"] == week]
    if week is None or row.empty:
        return None, 0, 0
    r = row.iloc[0]
    return float(r["rate"]), int(r["rejections"]), int(r["handoffs"])


def _change_table(
    df: pd.DataFrame,
    key: str,
    label: str,
    this_week: str | None,
    last_week: str | None,
    *,
    absent_is_zero: bool = False,
) -> pd.DataFrame:
    """One row per `key` value: this week's rate and count, last week's rate, the change.

    `absent_is_zero`: a reason missing from a week had no rejection that week (0 %); an
    edge or agent missing from a week had no handoff, so its rate is unknown ("—").
    """

    def pick(week: str | None) -> pd.DataFrame:
        return df[df["week"] == week].drop_duplicates(key).set_index(key)

    now, before = pick(this_week), pick(last_week)
    keys = list(dict.fromkeys([*now.index, *before.index]))

    def get(part: pd.DataFrame, k: str, col: str) -> float | None:
        if k not in part.index:
            return 0.0 if absent_is_zero else None
        if col not in part.columns or pd.isna(part.at[k, col]):
            return None
        return float(part.at[k, col])

    def counted(k: str) -> str:
        if k not in now.index:
            return "0" if absent_is_zero else "—"
        rej = get(now, k, "rejections")
        if rej is None:
            return "—"
        total = get(now, k, "handoffs")
        return (
            f"{int(rej)} of {style.count(total, 'handoff')}" if total is not None else f"{int(rej)}"
        )

    out = pd.DataFrame({label: keys})
    out["This week"] = [style.percent(get(now, k, "rate")) for k in keys]
    out["Rejections this week"] = [counted(k) for k in keys]
    out["Last week"] = [style.percent(get(before, k, "rate")) for k in keys]
    out["Change"] = [_change(get(now, k, "rate"), get(before, k, "rate")) for k in keys]
    out["_sort"] = [get(now, k, "rate") or -1.0 for k in keys]
    return out.sort_values("_sort", ascending=False).drop(columns="_sort")


def _change(now: float | None, before: float | None) -> str:
    if now is None or before is None:
        return "new" if before is None and now is not None else "—"
    diff = (float(now) - float(before)) * 100
    if abs(diff) < 0.05:
        return "no change"
    return f"{'▲' if diff > 0 else '▼'} {abs(diff):.1f} pts"


with layout.guard():
    review = client.weekly(filters.service, filters.weeks)
    if review.weeks.empty or int(review.weeks["handoffs"].fillna(0).sum()) == 0:
        layout.empty_state(
            "No handoffs to review",
            filters,
            "The weekly review counts handoffs per ISO week; it fills in as runs are recorded.",
        )
    else:
        this_rate, this_rej, this_n = _rate_of(review.weeks, review.this_week)
        last_rate, last_rej, last_n = _rate_of(review.weeks, review.last_week)
        delta = None
        if this_rate is not None and last_rate is not None:
            delta = f"{(this_rate - last_rate) * 100:+.1f} pts vs last week"
        c1, c2, c3 = st.columns(3)
        c1.metric(
            f"Rejection rate, this week ({review.this_week})",
            style.percent(this_rate),
            delta,
            delta_color="inverse",  # fewer rejections is better
        )
        c2.metric("Rejections, this week", f"{this_rej} of {style.count(this_n, 'handoff')}")
        c3.metric(
            f"Rejection rate, last week ({review.last_week})",
            style.percent(last_rate),
            f"{last_rej} of {style.count(last_n, 'handoff')}",
            delta_color="off",
            delta_arrow="off",
        )
        st.plotly_chart(charts.weekly_rate(review.weeks, this_week=review.this_week), key="wr_rate")

        by_reason, by_edge, by_agent = st.tabs(["By reason", "By edge", "By agent"])
        with by_reason:
            if review.by_reason.empty:
                st.success("No rejection in these weeks.", icon=":material/check_circle:")
            else:
                st.plotly_chart(charts.weekly_by_reason(review.by_reason), key="wr_reason")
                reasons = review.by_reason.assign(
                    reason=[style.reason_label(r) for r in review.by_reason["reason"]],
                    rejections=review.by_reason["count"],
                )
                layout.table(
                    _change_table(
                        reasons,
                        "reason",
                        "Reason",
                        review.this_week,
                        review.last_week,
                        absent_is_zero=True,
                    )
                )
        with by_edge:
            if review.by_edge.empty:
                st.caption("No handoff between agents in these weeks.")
            else:
                edges = review.by_edge.assign(
                    edge=[
                        style.edge(f, t)
                        for f, t in zip(
                            review.by_edge["from_agent"], review.by_edge["to_agent"], strict=True
                        )
                    ]
                )
                st.plotly_chart(
                    charts.this_vs_last(
                        edges, "edge", this_week=review.this_week, last_week=review.last_week
                    ),
                    key="wr_edge",
                )
                layout.table(
                    _change_table(edges, "edge", "Edge", review.this_week, review.last_week)
                )
        with by_agent:
            if review.by_agent.empty:
                st.caption("No receiving agent in these weeks.")
            else:
                st.plotly_chart(
                    charts.this_vs_last(
                        review.by_agent,
                        "agent",
                        this_week=review.this_week,
                        last_week=review.last_week,
                    ),
                    key="wr_agent",
                )
                layout.table(
                    _change_table(
                        review.by_agent,
                        "agent",
                        "Receiving agent",
                        review.this_week,
                        review.last_week,
                    )
                )

        st.download_button(
            "Download CSV",
            data=client.weekly_csv(filters.service, filters.weeks),
            file_name=f"handoffscope-weekly-{review.this_week or 'review'}.csv",
            mime="text/csv",
            icon=":material/download:",
        )
