"""Runs: find a run by what the on-call engineer arrives with.

A ticket rarely carries our run id: it carries a conversation (thread) id, a trace id from
the app's own tracing, or an agent's name. The search box takes any of them — a run id
or its beginning, a trace id, or a `gen_ai.conversation.id` one of the run's evidence spans
carried — and the list narrows by agent, verdict, state (in flight, stuck, looping) and
service, sorted by severity, silence, newest or latest evidence; a run translated from
another instrumentation's spans names its source ("from OpenInference spans"). Every choice is in the
URL (`runs?q=thread-12&sort=severity`), so the Live board's tiles link here and a view can
be pasted into a ticket. The collector does the search (`/api/v1/runs`); the page says
"N of M" when the list is capped.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import acknowledge, client, layout, style, urlstate
from handoffscope.instrumentation import semconv as sc

# Runs a page; every match is reachable page by page (`?page=`). A comment, not a string:
# Streamlit's "magic" would draw a bare string above the page's title.
LIMIT = 200
ANY = ""
STATES = {
    ANY: "Any state",
    "in_flight": "In flight (no end yet, any age)",
    "stuck": "Stuck (in flight, silent past grace)",
    "looping": "Looping (in the window, ended or not)",
}
SORTS = {
    "newest": "Newest first",
    "severity": "Worst verdict first, then longest silent",
    "silent": "Longest silent first",
    "last_seen": "Latest evidence first",
}
VERDICTS = [ANY, *sc.PRECEDENCE]

st.title("Runs")
st.caption(
    "Search by run id, trace id or conversation / thread id; narrow by agent, verdict, "
    "state and service."
)
filters = layout.current_filters()

top = st.columns([3, 2])
q = top[0].text_input(
    "Search",
    placeholder="run id, trace id or conversation id",
    key=urlstate.bind("q", "", key="runs_q"),
)
agent = top[1].text_input(
    "Agent", placeholder="any agent", key=urlstate.bind("agent", "", key="runs_agent")
)
row = st.columns(3)
verdict = row[0].selectbox(
    "Verdict",
    VERDICTS,
    format_func=lambda v: "Any verdict" if v == ANY else style.verdict_label(v),
    key=urlstate.bind("verdict", ANY, key="runs_verdict", options=VERDICTS),
)
state = row[1].selectbox(
    "State",
    list(STATES),
    format_func=STATES.__getitem__,
    key=urlstate.bind("state", ANY, key="runs_state", options=list(STATES)),
)
sort = row[2].selectbox(
    "Sort",
    list(SORTS),
    format_func=SORTS.__getitem__,
    key=urlstate.bind("sort", "newest", key="runs_sort", options=list(SORTS)),
)


def _ids(values: object, n: int = 1) -> str:
    """The first `n` ids, and how many more."""
    ids = [str(v) for v in values] if isinstance(values, list | tuple) else []
    if not ids:
        return ""
    more = f" (+{len(ids) - n})" if len(ids) > n else ""
    return ", ".join(ids[:n]) + more


def _state_words(row) -> str:
    if bool(row.stuck):
        return "Stuck"
    if bool(row.in_flight):
        return "Looping" if bool(row.loop) else "Running"
    return style.status_label(row.status)


page_key = urlstate.bind("page", 1, key="runs_page", parse=int)
page = max(1, int(st.session_state.get(page_key) or 1))

with layout.guard():
    listed = client.run_list(
        filters.service,
        filters.window_seconds,
        q=q.strip() or None,
        agent=agent.strip() or None,
        state=state or None,
        verdict=verdict or None,
        sort=sort,
        limit=LIMIT,
        offset=(page - 1) * LIMIT,
    )
    runs = listed.rows
    # A run in flight or stuck is listed whatever its age; a loop, when it looped.
    scope = "any age" if state in ("in_flight", "stuck") else filters.scope
    if runs.empty and page > 1 and listed.total:
        layout.empty_state(
            "No run on this page",
            None,
            f"{style.count(listed.total, 'run')} match; go back to page 1.",
        )
    elif runs.empty:
        layout.empty_state(
            "No run matches",
            None,
            f"Nothing for these filters ({scope}). "
            + (
                "Clear the state, verdict or agent filter to see more."
                if state in ("in_flight", "stuck")
                else "Widen the time window, or clear a filter. A trace or conversation id "
                "is found only while its spans are retained."
            ),
        )
    else:
        st.caption(f"{style.count(listed.total, 'run')} match ({scope}).")
        view = pd.DataFrame({"Run": [layout.run_url(r) for r in runs["run_id"]]})
        view["Verdict"] = [style.verdict_label(v) for v in runs["verdict"]]
        view["State"] = [_state_words(r) for r in runs.itertuples()]
        view["Acknowledged"] = acknowledge.column(runs["acknowledgement"])
        view["Service"] = [style.text(v) for v in runs["service"]]
        # A run translated from another instrumentation's spans says so: what it can show
        # differs (Run detail says what was not observed). Empty for the shim's own runs.
        view["Source"] = [
            f"from {style.text(v)} spans" if style.text(v) else "" for v in runs["source_label"]
        ]
        view["Agent"] = [
            style.text(c) or style.text(f)
            for c, f in zip(runs["current_agent"], runs["final_agent"], strict=True)
        ]
        view["Silent for"] = [
            style.duration(s) if bool(f) else ""
            for s, f in zip(runs["seconds_since_last_activity"], runs["in_flight"], strict=True)
        ]
        view["Last evidence"] = [style.clock(t) for t in runs["last_seen_at"]]
        view["Conversation"] = [_ids(v) for v in runs["conversation_ids"]]
        view["Trace"] = [_ids(v) for v in runs["trace_ids"]]
        view["Handoffs"] = [int(n) if pd.notna(n) else 0 for n in runs["handoff_count"]]
        view["Turns"] = [int(n) if pd.notna(n) else None for n in runs["turns"]]
        layout.table(view, column_config={"Run": layout.run_link_column()}, key="runs_table")
        pages = max(1, -(-listed.total // LIMIT))
        if pages > 1:
            first = (page - 1) * LIMIT + 1
            st.caption(
                f"Runs {first:,}–{first + len(runs) - 1:,} of {listed.total:,}, "
                f"{LIMIT} a page, in the order above."
            )
    if listed.total > LIMIT or page > 1:
        last_page = max(1, -(-listed.total // LIMIT))
        if page > last_page:  # the matches shrank under the page (new filters, retention)
            st.session_state[page_key] = last_page
        st.number_input(
            "Page",
            min_value=1,
            max_value=last_page,
            step=1,
            key=page_key,
            help="Every match is reachable, page by page; the URL keeps the page.",
        )
