"""Live: "is anything stuck, looping, waiting past its deadline or claiming done — right now?"

For the operator on shift. The first screen answers those four questions: one tile each —
stuck runs, runs that looped in the window (ended or not), overdue approvals, runs done without proof — with its trend
(how many became so inside the window) and a link to its list, worst and oldest first;
then the stuck runs themselves. Below: handoffs per minute (the unhealthy ones on their
own scale), every run in flight, the newest unhealthy handoffs.

A run is in flight until it ends, however old its last evidence: the longest-stuck runs
head the list, they do not fall off it. Each tile is the collector's own count (one query
per figure, the same one `/metrics` and the list pages use), never a count of a capped list.
Refreshes itself every few seconds (a `st.fragment` with `run_every`, so only the board
reruns, not the sidebar). The "last updated" line is the collector's clock at the answer.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import acknowledge, charts, client, layout, style

REFRESH_SECONDS = 5
STUCK_ROWS = 8  # stuck runs on the first screen; the tile links to all of them

RUNS_PAGE = "views/runs.py"
APPROVALS_PAGE = "views/approvals.py"
FALSE_COMPLETIONS_PAGE = "views/false_completions.py"

st.title("Live")
filters = layout.current_filters()


def _tile(
    column,
    label: str,
    value: int,
    unit: str,
    trend: str,
    link: tuple[str, str, dict[str, str]],
    help_: str,
    note: str = "",
) -> None:
    page, words, params = link
    with column.container(border=True):
        st.metric(
            label,
            style.count(value, unit),
            trend,
            delta_color="off" if trend.startswith(("+0 ", "±0 ")) else "inverse",
            help=help_,
        )
        if note:
            st.caption(note)
        st.page_link(page, label=words, icon=":material/arrow_forward:", query_params=params)


def _tiles(data: client.Live) -> None:
    b = data.board
    window = filters.window_label.lower()
    stuck, looping = b.get("stuck", {}), b.get("looping", {})
    overdue, done = b.get("approvals_overdue", {}), b.get("false_complete", {})
    acked = data.acknowledged
    c1, c2, c3, c4 = st.columns(4)
    _tile(
        c1,
        "Stuck runs",
        stuck.get("count", 0),
        "run",
        f"+{stuck.get('new_in_window', 0)} in the {window}",
        (RUNS_PAGE, "All stuck runs", {"state": "stuck", "sort": "severity"}),
        "In flight (no end yet, whatever its age), silent for longer than the grace window "
        "and not waiting on a person.",
        note=acknowledge.tile_note(acked.get("stuck", 0)),
    )
    _tile(
        c2,
        "Looping",
        looping.get("count", 0),
        "run",
        f"+{looping.get('new_in_window', 0)} in the {window}",
        (
            RUNS_PAGE,
            "All looping runs",
            {
                "state": "looping",
                "sort": "severity",
                "window": layout.WINDOW_SLUGS[filters.window_label],
            },
        ),
        "Runs whose handoffs repeat the same work (same destination, task and state), still "
        f"running or ended in the {window}: a loop usually ends within seconds at its turn "
        "limit, so ended ones count too.",
        note=acknowledge.tile_note(
            acked.get("looping", 0), f"{looping.get('in_flight', 0):,} still running"
        ),
    )
    _tile(
        c3,
        "Approvals overdue",
        overdue.get("count", 0),
        "wait",
        f"+{overdue.get('new_in_window', 0)} in the {window}",
        (APPROVALS_PAGE, "All open waits, by owner", {}),
        "Open waits on a person past their deadline, run-level and handoff-level, whatever "
        "their age (the Approvals page counts the same).",
        note=acknowledge.tile_note(acked.get("overdue", 0)),
    )
    now_n, before = done.get("count", 0), done.get("previous_window", 0)
    diff = now_n - before
    _tile(
        c4,
        f"Done without proof, {window}",
        now_n,
        "run",
        f"{'+' if diff > 0 else '±' if diff == 0 else ''}{diff} vs the {window[5:]} before",
        (
            FALSE_COMPLETIONS_PAGE,
            "All false completions",
            {"window": layout.WINDOW_SLUGS.get(filters.window_label, "1h")},
        ),
        "Runs first seen in the window that claimed completion without a passing verifier.",
    )


def _stuck(data: client.Live) -> None:
    stuck = data.in_flight[data.in_flight["stuck"].fillna(False).astype(bool)]
    total = data.board.get("stuck", {}).get("count", len(stuck))
    st.subheader("Stuck runs")
    if stuck.empty:
        st.success("No run is stuck.", icon=":material/check_circle:")
        return
    shown = stuck.head(STUCK_ROWS)
    layout.table(_run_rows(shown), column_config={"Run": layout.run_link_column()})
    if total > len(shown):
        st.page_link(
            RUNS_PAGE,
            label=f"Showing {len(shown)} of {style.count(total, 'stuck run')} — see them all",
            icon=":material/arrow_forward:",
            query_params={"state": "stuck", "sort": "severity"},
        )


def _run_rows(df: pd.DataFrame) -> pd.DataFrame:
    view = layout.with_run_links(df)[["run_id", "service", "current_agent"]].rename(
        columns={"run_id": "Run", "service": "Service", "current_agent": "Agent holding the work"}
    )
    view["Silent for"] = [style.duration(s) for s in df["seconds_since_last_handoff"]]
    view["Last handoff"] = [style.clock(t) for t in df["last_handoff_at"]]
    view["Verdict"] = [style.verdict_label(v) for v in df["verdict"]]
    view["Loop"] = ["loop" if bool(x) else "" for x in df["loop"].fillna(False)]
    view["Acknowledged"] = acknowledge.column(df["acknowledgement"])
    # Budget burn only where a run stated a call budget (`handoff.budget.remaining`): a
    # column of blanks would read as "no budget problem" for apps that never state one.
    used = pd.to_numeric(df.get("budget_used"), errors="coerce")
    if used is not None and used.notna().any():
        view["Budget used"] = [
            "—" if pd.isna(u) else f"{style.percent(float(u))} ({_left(r)})"
            for u, r in zip(used, df["budget_remaining"], strict=True)
        ]
    return view


def _left(remaining: object) -> str:
    n = pd.to_numeric(remaining, errors="coerce")
    return "left unstated" if pd.isna(n) else style.count(n, "call") + " left"


def _in_flight(data: client.Live) -> None:
    st.subheader("Runs in flight")
    if data.in_flight.empty:
        st.success("No run is in flight right now.", icon=":material/check_circle:")
        return
    layout.table(_run_rows(data.in_flight), column_config={"Run": layout.run_link_column()})
    total = max(data.in_flight_total, len(data.in_flight))
    layout.capped(
        len(data.in_flight),
        total,
        "run in flight",
        link="runs?state=in_flight&sort=severity",
    )
    st.caption("Stuck first (longest silent), then looping, then the rest by silence.")


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


def _unjudged_sources() -> None:
    """Instrumentations whose spans are refused: said on the board itself, since an empty
    or partial board is where a team first looks (the Sources page has the details)."""
    sources, _ = client.sources(filters.service)
    refused = sources[sources["status"] == "refused"] if not sources.empty else sources
    if refused.empty:
        return
    names = ", ".join(f"`{style.text(s)}`" for s in refused["scope"].head(3))
    more = ", …" if len(refused) > 3 else ""
    st.warning(
        f"**Spans not judged from {style.count(len(refused), 'instrumentation scope')}** "
        f"({names}{more}): no translator reads them and they are not handoff evidence. "
        "See [Sources](sources) for why, and what to do.",
        icon=":material/warning:",
    )


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
        if (
            not data.verdict_counts
            and data.in_flight.empty
            and data.unhealthy.empty
            and not any(t.get("count") for t in data.board.values())
        ):
            conn = client.connection()
            layout.empty_state(
                "No handoffs yet",
                filters,
                f"Evidence appears here within seconds of an instrumented app sending spans to "
                f"`{conn.api}/v1/traces`. Try `handoffscope demo`, or widen the time window.",
            )
            _unjudged_sources()
            _drops()
            return
        _unjudged_sources()
        _tiles(data)
        _stuck(data)
        st.subheader(f"Handoffs per minute ({filters.window_label.lower()})")
        if data.timeline.empty:
            st.caption("No handoff in this window.")
        else:
            total = sum(data.verdict_counts.values())
            unhealthy = sum(n for v, n in data.verdict_counts.items() if style.is_unhealthy(v))
            st.caption(
                f"{style.count(total, 'handoff')}, {unhealthy:,} unhealthy "
                f"({style.percent(unhealthy / total if total else 0.0)}). Top: unhealthy "
                "handoffs per minute, stacked by verdict (the six boundary failures are "
                "shades of red, plain or cross-hatched). Below, on its own scale: every "
                "handoff per minute, whatever its verdict."
            )
            st.plotly_chart(charts.unhealthy_timeline(data.timeline), key="live_timeline")
            st.plotly_chart(charts.handoffs_per_minute(data.timeline), key="live_volume")
        _in_flight(data)
        _unhealthy(data)
        _drops()


board()
