"""Weekly review: which edges and reasons reject most, and is it getting better?

Rejections are `route_rejected` + `contract_rejected` (docs/architecture.md, Verdicts);
weeks are ISO weeks.
Everything here is a rate — rejections as a share of handoffs — because volume changes
from week to week and a count would read a busy week as a bad one.

The current week is partial (the collector says how many of its days have passed), so
the headline compares the last whole week with the one before, and this week is shown
beside it as "so far" (hatched in the rate chart, on a grey band in the by-reason one,
whose hatches mark reasons), never as a like-for-like change. Then the
rate by reason per week, an edge × reason heatmap (which edge is refused for what), and
the rate by edge and by receiving agent. "Download CSV" saves the collector's own CSV
export for the same service and weeks (its cells neutralised against spreadsheet
formulas by the collector), so the file matches what the page shows.

"What failures cost" prices the failures by the runs they ended: what the runs that ended
in a loop, a rejection (route or contract), a false completion or any other failure cost,
and their share of the week's priced spend (of its tokens when nothing could be priced),
compared the same way — last whole week, the week before, this week so far.

"How conversations continued" gives, per service, the share of conversations' later
turns that were re-routed (back through an entry agent only to reach the agent that held
the work) or diverted (started at an agent that is neither), the same three weeks.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import charts, client, cost, layout, style
from handoffscope.instrumentation import semconv as sc

st.title("Weekly review")
st.caption(
    "Rejection rate (route + contract rejections as a share of handoffs) per ISO week: "
    "the last whole week against the one before; this week so far, marked partial."
)
filters = layout.current_filters()


def _rate_of(weeks: pd.DataFrame, week: str | None) -> tuple[float | None, int, int]:
    row = weeks[weeks["week"] == week]
    if week is None or row.empty:
        return None, 0, 0
    r = row.iloc[0]
    rate = None if pd.isna(r["rate"]) else float(r["rate"])
    return rate, int(r["rejections"]), int(r["handoffs"])


def _change_table(
    df: pd.DataFrame,
    key: str,
    label: str,
    full: str | None,
    before: str | None,
    partial: str | None,
    *,
    counted_weeks: frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """One row per `key` value: the last whole week's rate and count, the week before's,
    the change between those two, and this (partial) week's rate so far.

    `counted_weeks`: weeks that had handoffs, for a reason table — a reason missing from
    such a week had no rejection that week (0 %). A reason missing from an empty week, or
    an edge or agent missing from any week (it had no handoff), has no rate ("—").
    """

    parts = {
        w: df[df["week"] == w].drop_duplicates(key).set_index(key) for w in (full, before, partial)
    }
    keys = list(dict.fromkeys(k for part in parts.values() for k in part.index))

    def get(week: str | None, k: str, col: str) -> float | None:
        part = parts[week]
        if k not in part.index:
            return 0.0 if week in counted_weeks else None
        if col not in part.columns or pd.isna(part.at[k, col]):
            return None
        return float(part.at[k, col])

    def counted(k: str) -> str:
        if k not in parts[full].index:
            return "0" if full in counted_weeks else "—"
        rej = get(full, k, "rejections")
        if rej is None:
            return "—"
        total = get(full, k, "handoffs")
        return (
            f"{int(rej)} of {style.count(total, 'handoff')}" if total is not None else f"{int(rej)}"
        )

    out = pd.DataFrame({label: keys})
    out[f"Last week ({full})"] = [style.percent(get(full, k, "rate")) for k in keys]
    out["Rejections last week"] = [counted(k) for k in keys]
    out[f"Week before ({before})"] = [style.percent(get(before, k, "rate")) for k in keys]
    out["Change"] = [_change(get(full, k, "rate"), get(before, k, "rate")) for k in keys]
    out[f"This week so far ({partial}, partial)"] = [
        style.percent(get(partial, k, "rate")) for k in keys
    ]
    # Worst last week first; then, among keys last week did not see, worst so far.
    out["_sort"] = [get(full, k, "rate") or -1.0 for k in keys]
    out["_then"] = [get(partial, k, "rate") or -1.0 for k in keys]
    return out.sort_values(["_sort", "_then"], ascending=False).drop(columns=["_sort", "_then"])


def _change(now: float | None, before: float | None) -> str:
    if now is None or before is None:
        return "new" if before is None and now is not None else "—"
    diff = (float(now) - float(before)) * 100
    if abs(diff) < 0.05:
        return "no change"
    return f"{'▲' if diff > 0 else '▼'} {abs(diff):.1f} pts"


def _edge_names(df: pd.DataFrame) -> list[str]:
    return [style.edge(f, t) for f, t in zip(df["from_agent"], df["to_agent"], strict=True)]


SPANS = ("Last whole week", "All whole weeks shown", "This week so far (partial)")


def _heatmap(review: client.Weekly, full: str | None, partial: str | None) -> None:
    st.subheader("Which edge is refused for what")
    span = st.radio("Weeks", SPANS, horizontal=True, key="wr_heat_span")
    whole = [w for w in review.weeks["week"] if w != partial]
    weeks = {SPANS[0]: [full], SPANS[1]: whole, SPANS[2]: [partial]}[span]
    cells = review.by_edge_reason[review.by_edge_reason["week"].isin(weeks)]
    totals = review.by_edge[review.by_edge["week"].isin(weeks)]
    if cells.empty:
        st.caption("No rejection on any edge in these weeks.")
        return
    st.plotly_chart(charts.edge_reason_heatmap(cells, totals), key="wr_heatmap")
    st.caption(
        "Cell: the share of the edge's handoffs refused for that reason in the weeks chosen "
        "(hover for the counts). Busiest-refused edges first."
    )


# The failures "What failures cost" names, by the verdict runs ended in; every other
# unhealthy verdict is summed as "Other failures".
COST_GROUPS: dict[str, tuple[str, ...]] = {
    "Loops": (sc.LOOP,),
    "Rejections": (sc.ROUTE_REJECTED, sc.CONTRACT_REJECTED),
    "False completions": (sc.FALSE_COMPLETE,),
}
OTHER_FAILURES = "Other failures"


def _cost_group(verdict: object) -> str | None:
    for name, verdicts in COST_GROUPS.items():
        if verdict in verdicts:
            return name
    return OTHER_FAILURES if style.is_unhealthy(verdict) else None


def _cost_cell(rows: pd.DataFrame) -> str:
    """One group's runs in one week: "$0.0123 · 12 % of spend (3 runs)"; by tokens when the
    week priced nothing; "—" when none of its runs ended so (or reported usage)."""
    if rows.empty:
        return "—"
    usage = {
        "cost_usd": None,
        "unpriced": 0,
        "input_tokens": None,
        "output_tokens": None,
    }
    reported = [u for u in rows["usage"] if isinstance(u, dict)]
    costs = [u["cost_usd"] for u in reported if isinstance(u.get("cost_usd"), int | float)]
    if costs:
        usage["cost_usd"] = sum(costs)
    usage["unpriced"] = sum(int(u.get("unpriced") or 0) for u in reported)
    tokens = [cost.total_tokens(u) for u in reported]
    known = [n for n in tokens if n is not None]
    runs = style.count(int(rows["runs"].fillna(0).sum()), "run")
    if not reported:
        return f"— ({runs})"
    shares = [float(x) for x in rows["share"] if pd.notna(x)]
    if shares and usage["cost_usd"]:
        return f"{cost.price(usage)} · {style.percent(sum(shares))} of spend ({runs})"
    token_shares = [float(x) for x in rows["tokens_share"] if pd.notna(x)]
    n = f"{cost.tokens(sum(known))} tokens" if known else "—"
    if token_shares:
        n += f" · {style.percent(sum(token_shares))} of tokens"
    return f"{n}, {cost.NOT_PRICED} ({runs})"


def _three_weeks(
    full: str | None, before: str | None, partial: str | None
) -> dict[str, str | None]:
    """Column label -> week: the last whole week, the one before, this week so far."""
    return {
        f"Last week ({full})": full,
        f"Week before ({before})": before,
        f"This week so far ({partial}, partial)": partial,
    }


def _failure_cost(
    review: client.Weekly, full: str | None, before: str | None, partial: str | None
) -> None:
    st.subheader("What failures cost")
    spend = review.spend
    if spend.empty:
        st.caption("No run in these weeks reported usage (tokens, model calls).")
        return
    groups = spend.assign(_group=[_cost_group(v) for v in spend["verdict"]])
    names = [*COST_GROUPS, OTHER_FAILURES]
    weeks = _three_weeks(full, before, partial)
    table = pd.DataFrame({"Runs that ended in": names})
    for label, week in weeks.items():
        table[label] = [
            _cost_cell(groups[(groups["week"] == week) & (groups["_group"] == g)]) for g in names
        ]
    layout.table(table)
    st.caption(
        "What the runs that ended in each failure cost, by the week they were first seen, "
        "and their share of that week's priced spend (of its tokens when nothing could be "
        "priced). Rejections: route and contract. “Not priced”: a model the price table "
        "lacks; a sum prices what it can and says how many runs it left out."
    )


def _continuity_cell(rows: pd.DataFrame, what: str) -> str:
    """One service's turns of one week: "25 % (1 of 4 turns)"; "—" without turns."""
    if rows.empty:
        return "—"
    r = rows.iloc[0]
    n = int(r["turns"])
    return f"{style.percent(r[f'{what}_rate'])} ({int(r[what]):,} of {style.count(n, 'turn')})"


def _continuity(
    review: client.Weekly, full: str | None, before: str | None, partial: str | None
) -> None:
    st.subheader("How conversations continued")
    turns = review.continuity
    if turns.empty:
        st.caption(
            "No run in these weeks followed another run of its conversation "
            "(gen_ai.conversation.id: the Agents SDK's group_id, LangGraph's thread_id)."
        )
        return
    services = sorted({s for s in turns["service"] if isinstance(s, str)})
    if turns["service"].isna().any():
        services.append("")
    weeks = _three_weeks(full, before, partial)
    table = pd.DataFrame({"Service": [s or "—" for s in services]})
    for what, word in (("rerouted", "Re-routed"), ("diverted", "Diverted")):
        for label, week in weeks.items():
            table[f"{word} · {label}"] = [
                _continuity_cell(
                    turns[(turns["week"] == week) & (turns["service"].fillna("") == svc)], what
                )
                for svc in services
            ]
    layout.table(table)
    st.caption(
        "Of each service's later turns (runs that follow another run of their conversation), "
        "the share re-routed — back through an entry agent only to reach the agent that "
        "already held the work, a model call and a handoff more each — and the share "
        "diverted — started at an agent that is neither that agent nor an entry agent."
    )


with layout.guard():
    review = client.weekly(filters.service, filters.weeks)
    if review.weeks.empty or int(review.weeks["handoffs"].fillna(0).sum()) == 0:
        layout.empty_state(
            "No handoffs to review",
            filters,
            "The weekly review counts handoffs per ISO week; it fills in as runs are recorded.",
        )
    else:
        labels = list(review.weeks["week"])
        partial = review.this_week
        full = review.last_week
        before = labels[-3] if len(labels) >= 3 else None
        days = review.weeks.loc[review.weeks["week"] == partial, "days"]
        days_so_far = float(days.iloc[0]) if len(days) and pd.notna(days.iloc[0]) else None
        full_rate, full_rej, full_n = _rate_of(review.weeks, full)
        before_rate, _, before_n = _rate_of(review.weeks, before)
        now_rate, now_rej, now_n = _rate_of(review.weeks, partial)
        delta = None
        if full_rate is not None and before_rate is not None:
            delta = f"{(full_rate - before_rate) * 100:+.1f} pts vs {before}"
        c1, c2, c3 = st.columns(3)
        c1.metric(
            f"Rejection rate, last week ({full})",
            style.percent(full_rate),
            delta,
            delta_color="inverse",  # fewer rejections is better
        )
        c2.metric("Rejections, last week", f"{full_rej} of {style.count(full_n, 'handoff')}")
        so_far = f"{days_so_far:.1f} of 7 days" if days_so_far is not None else "part of the week"
        c3.metric(
            f"This week so far ({partial}, partial)",
            style.percent(now_rate),
            f"{now_rej} of {style.count(now_n, 'handoff')} in {so_far} — not compared",
            delta_color="off",
            delta_arrow="off",
        )
        st.plotly_chart(
            charts.weekly_rate(review.weeks, this_week=full, partial_week=partial), key="wr_rate"
        )

        by_reason, by_edge, by_agent = st.tabs(["By reason", "By edge", "By agent"])
        with by_reason:
            if review.by_reason.empty:
                st.success("No rejection in these weeks.", icon=":material/check_circle:")
            else:
                st.plotly_chart(
                    charts.weekly_by_reason(review.by_reason, partial_week=partial),
                    key="wr_reason",
                )
                reasons = review.by_reason.assign(
                    reason=[style.reason_label(r) for r in review.by_reason["reason"]],
                    rejections=review.by_reason["count"],
                    handoffs=[_rate_of(review.weeks, w)[2] for w in review.by_reason["week"]],
                )
                layout.table(
                    _change_table(
                        reasons,
                        "reason",
                        "Reason",
                        full,
                        before,
                        partial,
                        counted_weeks=frozenset(
                            review.weeks.loc[review.weeks["handoffs"].fillna(0) > 0, "week"]
                        ),
                    )
                )
        with by_edge:
            if review.by_edge.empty:
                st.caption("No handoff between agents in these weeks.")
            else:
                _heatmap(review, full, partial)
                edges = review.by_edge.assign(edge=_edge_names(review.by_edge))
                st.plotly_chart(
                    charts.this_vs_last(edges, "edge", this_week=full, last_week=before),
                    key="wr_edge",
                )
                layout.table(_change_table(edges, "edge", "Edge", full, before, partial))
        with by_agent:
            if review.by_agent.empty:
                st.caption("No receiving agent in these weeks.")
            else:
                st.plotly_chart(
                    charts.this_vs_last(review.by_agent, "agent", this_week=full, last_week=before),
                    key="wr_agent",
                )
                layout.table(
                    _change_table(
                        review.by_agent, "agent", "Receiving agent", full, before, partial
                    )
                )

        _failure_cost(review, full, before, partial)
        _continuity(review, full, before, partial)

        st.download_button(
            "Download CSV",
            data=client.weekly_csv(filters.service, filters.weeks),
            file_name=f"handoffscope-weekly-{review.this_week or 'review'}.csv",
            mime="text/csv",
            icon=":material/download:",
            key="wr_csv",
        )
