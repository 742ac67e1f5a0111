"""What every page shares: the sidebar filters, the error guard, empty states, run links and
verdict-coloured tables.

Filters. The router (`app.py`) draws the service and time-window filters in the sidebar on
every run, before the page runs, so the choice of service follows the operator from page
to page; each page reads them with `current_filters()`. The time window is remembered per
page (Live defaults to the last hour, the lists to the last day); the weekly review picks
a number of ISO weeks instead.

Errors. A page wraps its body in `with guard():` so an unreachable collector, a refused
token or an unknown run is a sentence and a hint on the page, never a traceback.

Links to a run use the Run detail page's URL, `run_detail?run_id=<id>`, relative to the page, so
they work behind a proxy path and can be pasted into a ticket.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import pandas as pd
import streamlit as st

from handoffscope.dashboard import client, style, urlstate
from handoffscope.dashboard.config import ENV_TRACE_LINK, TRACE_ID_FIELD

RUN_PAGE_URL_PATH = "run_detail"
CONVERSATION_PAGE_URL_PATH = "conversation"
"""URL path of the Run detail page; `?run_id=` selects the run."""

WINDOWS: dict[str, int] = {
    "Last 15 minutes": 15 * 60,
    "Last hour": 3600,
    "Last 6 hours": 6 * 3600,
    "Last 24 hours": 24 * 3600,
    "Last 7 days": 7 * 86400,
    "Last 30 days": 30 * 86400,
}
WEEKS_CHOICES = (4, 8, 12, 26)
DEFAULT_WEEKS = 8
ALL_SERVICES = "All services"

_FILTERS_KEY = "handoffscope.filters"
_SERVICE_KEY = "filter.service"


@dataclass(frozen=True)
class Filters:
    service: str | None
    """None: every service."""
    window_seconds: int
    window_label: str
    weeks: int = DEFAULT_WEEKS

    @property
    def scope(self) -> str:
        """The filters in words, for captions and empty states."""
        who = style.md(self.service) if self.service else "all services"
        return f"{who}, {self.window_label.lower()}"


WINDOW_SLUGS: dict[str, str] = {
    "Last 15 minutes": "15m",
    "Last hour": "1h",
    "Last 6 hours": "6h",
    "Last 24 hours": "24h",
    "Last 7 days": "7d",
    "Last 30 days": "30d",
}
"""How a time window is written in the URL (`?window=1h`)."""
_WINDOW_OF_SLUG = {v: k for k, v in WINDOW_SLUGS.items()}


def window_of_slug(slug: str) -> str:
    if slug not in _WINDOW_OF_SLUG:
        raise ValueError(slug)
    return _WINDOW_OF_SLUG[slug]


ANY_AGE = "Any age"


def sidebar_filters(
    page_key: str,
    *,
    default_window: str = "Last 24 hours",
    weeks: bool = False,
    window: bool = True,
    no_window_note: str = "No time window here: every open wait counts, whatever its age.",
) -> Filters:
    """Draw the service and time filters in the sidebar and remember them for the page;
    both are in the URL (`?service=…&window=1h`, `?weeks=12`), so a view can be shared."""
    with st.sidebar:
        st.subheader("Filters")
        names = _service_names()
        options = [ALL_SERVICES, *names]
        # A service that vanished from the list (other window, collector restarted) falls
        # back to all rather than fail (`options`).
        key = urlstate.bind("service", ALL_SERVICES, key=_SERVICE_KEY, options=options)
        service = st.selectbox("Service", options, key=key)

        if weeks:
            key = urlstate.bind(
                "weeks",
                DEFAULT_WEEKS,
                key=f"filter.weeks.{page_key}",
                parse=int,
                options=WEEKS_CHOICES,
            )
            n = st.selectbox(
                "Weeks to compare",
                WEEKS_CHOICES,
                format_func=lambda w: f"Last {w} ISO weeks",
                key=key,
            )
            filters = Filters(_service_or_none(service), n * 7 * 86400, f"Last {n} ISO weeks", n)
        elif not window:
            st.caption(no_window_note)
            filters = Filters(_service_or_none(service), 0, ANY_AGE)
        else:
            key = urlstate.bind(
                "window",
                default_window,
                key=f"filter.window.{page_key}",
                parse=window_of_slug,
                dump=WINDOW_SLUGS.__getitem__,
                options=list(WINDOWS),
            )
            label = st.selectbox("Time window", list(WINDOWS), key=key)
            filters = Filters(_service_or_none(service), WINDOWS[label], label)
    st.session_state[_FILTERS_KEY] = filters
    return filters


def _service_or_none(choice: str | None) -> str | None:
    return None if not choice or choice == ALL_SERVICES else choice


def _service_names() -> list[str]:
    # The sidebar must draw even when the collector is down; the page says why.
    try:
        return client.services()
    except client.CollectorError:
        return []


def current_filters() -> Filters:
    """The filters the router drew for this run (a default when a page runs alone)."""
    found = st.session_state.get(_FILTERS_KEY)
    if isinstance(found, Filters):
        return found
    return Filters(None, WINDOWS["Last 24 hours"], "Last 24 hours")


VERDICTS_BEHIND_S = 5.0
"""Judge lag above which every page says its verdicts trail the spans received. Below it
the lag is the judge's normal batching (it runs behind the acknowledgement by design)."""


def verdicts_behind(lag_seconds: float | None) -> str | None:
    """The sentence shown when verdicts trail the spans stored, or None when they do not."""
    if lag_seconds is None or lag_seconds <= VERDICTS_BEHIND_S:
        return None
    return (
        f"Verdicts {style.duration(lag_seconds)} behind: the collector has stored spans it has "
        "not judged yet (it is catching up), so the figures here trail what was received."
    )


def verdicts_behind_notice() -> None:
    """At the top of every page: say so when the collector's judge lags (issue 14)."""
    try:
        text = verdicts_behind(client.health().judge_lag_seconds)
    except client.CollectorError:
        return  # the sidebar and the page say the collector does not answer
    if text:
        st.warning(text, icon=":material/hourglass_top:")


def sidebar_connection() -> None:
    """Where the dashboard reads from, and whether it answers (bottom of the sidebar)."""
    conn = client.connection()
    with st.sidebar:
        st.divider()
        try:
            h = client.health()
        except client.CollectorError:
            st.caption(f"Collector: {style.md(conn.api)} — not answering")
        else:
            stored = f", {h.spans_stored:,} spans stored" if h.spans_stored is not None else ""
            st.caption(f"Collector: {style.md(conn.api)} — up{stored}")
        if st.button("Refresh now", help="Forget cached answers and ask the collector again."):
            client.clear_cache()
            st.rerun()


@contextmanager
def guard() -> Iterator[None]:
    """Show a `CollectorError` as a message with a hint instead of a traceback."""
    try:
        yield
    except client.CollectorError as exc:
        show_error(exc)


def show_error(exc: client.CollectorError) -> None:
    if isinstance(exc, client.TokenRefused):
        icon = ":material/lock:"
    elif isinstance(exc, client.CollectorUnreachable):
        icon = ":material/cloud_off:"
    else:
        icon = ":material/warning:"
    text = f"**{style.md(exc.message)}**"
    if exc.hint:
        text += f"\n\n{exc.hint}"
    st.error(text, icon=icon)


def empty_state(what: str, filters: Filters | None = None, advice: str = "") -> None:
    """Say what is missing, for which scope, and what would make it appear."""
    scope = f" ({filters.scope})" if filters else ""
    st.info(f"**{what}{scope}.**" + (f"\n\n{advice}" if advice else ""), icon=":material/info:")


def run_url(run_id: str) -> str:
    return f"{RUN_PAGE_URL_PATH}?run_id={quote(str(run_id), safe='')}"


def with_run_links(df: pd.DataFrame, column: str = "run_id") -> pd.DataFrame:
    """Replace the run id by a link to its Run detail page (shown as the id)."""
    out = df.copy()
    out[column] = [run_url(r) for r in out[column]]
    return out


def run_link_column(label: str = "Run") -> Any:
    return st.column_config.LinkColumn(
        label, display_text=r"run_id=(.*)$", help="Open this run in Run detail"
    )


def table(
    df: pd.DataFrame,
    *,
    verdict_columns: Sequence[str] = ("Verdict",),
    boundary_columns: Sequence[str] = (),
    column_config: dict | None = None,
    height: int | Literal["auto"] = "auto",
    key: str | None = None,
) -> None:
    """A read-only table with verdict cells in their colours (no index, no JSON)."""
    styler = df.style
    present = [c for c in verdict_columns if c in df.columns]
    if present:
        styler = styler.map(style.verdict_cell_css, subset=present)
    bounds = [c for c in boundary_columns if c in df.columns]
    if bounds:
        styler = styler.map(style.boundary_cell_css, subset=bounds)
    st.dataframe(
        styler,
        hide_index=True,
        width="stretch",
        height=height,
        column_config=column_config or {},
        key=key,
    )


def verdict_badge(verdict: str | None) -> str:
    """A verdict as a coloured badge for st.markdown."""
    color = style.verdict_color(verdict)
    label = html.escape(style.verdict_label(verdict))
    return (
        f'<span style="background:{color};color:{style.text_on(color)};padding:2px 10px;border-radius:10px;'
        f'font-weight:600">{label}</span>'
    )


def last_updated(ts: pd.Timestamp | None, every_seconds: int | None = None) -> None:
    when = style.clock(ts if ts is not None else pd.Timestamp.now(tz="UTC"))
    tail = f" · refreshes every {every_seconds} s" if every_seconds else ""
    st.caption(f"Last updated {when}{tail}")


def capped(shown: int, total: int, unit: str, how: str = "", link: str | None = None) -> None:
    """Under a capped list: "Showing N of M <unit>s" and how to reach the rest; silent when
    nothing is cut."""
    if total <= shown:
        return
    text = f"Showing {shown:,} of {style.count(total, unit)}."
    if link:
        text += f" [See all of them]({link})."
    if how:
        text += f" {how}"
    st.warning(text, icon=":material/filter_list:")


_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


def trace_ref(trace_id: object) -> str:
    """A trace id as Markdown: a link into the team's trace viewer when the dashboard has a
    `--trace-link` template (HANDOFFSCOPE_TRACE_LINK), else the id as code. Only a 32-hex
    id is put into a URL."""
    text = style.text(trace_id)
    template = os.environ.get(ENV_TRACE_LINK, "")
    if template and _TRACE_ID.match(text):
        return f"[`{text}`]({template.replace(TRACE_ID_FIELD, text)})"
    return style.md(text)
