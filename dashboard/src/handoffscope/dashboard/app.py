"""The dashboard's entry point and router: `streamlit run app.py` (via `handoffscope dashboard`).

Ten pages, one file each under `views/`, in the order people reach for them: the live
board and the approvals escalation list for the operator on shift, the runs search and
the drill-downs (control flow, loops, false completions), the run detail an on-call
engineer opens from a link (`run_detail?run_id=<id>`), the conversation a run is a turn
of (`conversation?conversation_id=<id>`), the weekly review, and Sources
(which instrumentations send spans and whether they are judged: the first page to open
when the board stays empty). Every
page's filters and selections are in its URL (`urlstate`), with a copy-link box.

Sign-in (`signin`) comes first: with an `[auth]` section in Streamlit's secrets.toml,
only a signed-in person whose groups are given services gets past it.

The router draws the sidebar filters before the page runs (see `layout.sidebar_filters`)
so the chosen service stays put while moving between pages. Data comes only from the
collector's query API (`client`), never from its DuckDB file.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from handoffscope.dashboard import acknowledge, layout, signin, urlstate

HERE = Path(__file__).parent
# Not `pages/`: Streamlit treats a folder of that name beside the entry point as a legacy
# multipage app, and then runs a fresh server's first request (and every AppTest rerun)
# straight from the page file — without this router, so without filters or navigation.
VIEWS = HERE / "views"

# The favicon is a file of ours, served by the dashboard itself: a `:material/…:` or emoji
# page icon makes every operator's browser fetch it from a public host (fonts.gstatic.com,
# a CDN) — which hangs an air-gapped board and tells a third party who opened it. The
# page and navigation icons are drawn with the Material Symbols font Streamlit bundles.
FAVICON = HERE / "assets" / "favicon.png"

st.set_page_config(page_title="handoffscope", page_icon=str(FAVICON), layout="wide")

# With sign-in on (an `[auth]` section in secrets.toml), whoever may see nothing — signed
# out, or in no mapped group — is told why and the run stops here: before the navigation,
# the sidebar and any request to the collector.
signin.gate()

live = st.Page(VIEWS / "live.py", title="Live", icon=":material/monitor_heart:", default=True)
control_flow = st.Page(
    VIEWS / "control_flow.py",
    title="Control flow",
    icon=":material/account_tree:",
    url_path="control_flow",
)
loops = st.Page(VIEWS / "loops.py", title="Loops", icon=":material/autorenew:", url_path="loops")
approvals = st.Page(
    VIEWS / "approvals.py", title="Approvals", icon=":material/hourglass_top:", url_path="approvals"
)
false_completions = st.Page(
    VIEWS / "false_completions.py",
    title="False completions",
    icon=":material/report:",
    url_path="false_completions",
)
runs = st.Page(VIEWS / "runs.py", title="Runs", icon=":material/list:", url_path="runs")
run_detail = st.Page(
    VIEWS / "run_detail.py",
    title="Run detail",
    icon=":material/search:",
    url_path=layout.RUN_PAGE_URL_PATH,
)
conversation = st.Page(
    VIEWS / "conversation.py",
    title="Conversation",
    icon=":material/forum:",
    url_path=layout.CONVERSATION_PAGE_URL_PATH,
)
weekly_review = st.Page(
    VIEWS / "weekly_review.py",
    title="Weekly review",
    icon=":material/calendar_month:",
    url_path="weekly_review",
)

sources = st.Page(
    VIEWS / "sources.py", title="Sources", icon=":material/input:", url_path="sources"
)

page = st.navigation(
    {
        "Now": [live, approvals],
        "Investigate": [runs, control_flow, loops, false_completions, run_detail, conversation],
        "Review": [weekly_review],
        "Setup": [sources],
    }
)

# Per-page filter defaults: the live board is about the last hour, lists look back a day,
# the weekly review counts whole ISO weeks.
if page.url_path == weekly_review.url_path:
    layout.sidebar_filters(page.url_path, weeks=True)
elif page.url_path == live.url_path:  # the default page lives at the root URL, ""
    layout.sidebar_filters("live", default_window="Last hour")
elif page.url_path == approvals.url_path:
    layout.sidebar_filters(page.url_path, window=False)  # an open wait counts whatever its age
elif page.url_path == conversation.url_path:
    layout.sidebar_filters(
        page.url_path,
        window=False,
        no_window_note="No time window here: a conversation is shown whole.",
    )
elif page.url_path == sources.url_path:
    layout.sidebar_filters(
        page.url_path, window=False, no_window_note="No time window here: counts are all time."
    )
else:
    layout.sidebar_filters(page.url_path)
acknowledge.sidebar()
layout.sidebar_connection()
layout.verdicts_behind_notice()

page.run()
urlstate.share()
