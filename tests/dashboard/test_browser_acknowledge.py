"""Acknowledge an alert in the dashboard, and see it on every page (issue 39).

First the words and the order, from `acknowledge` alone: the banner's sentence (who,
until when, why — untrusted values inert), the table cell, the note labels, and
acknowledged rows after the unacknowledged ones of the same urgency.

Then the real thing: a real collector seeded with real OTLP spans (dashboard_support's
scenario: an overdue wait, a loop, …), the real dashboard as a subprocess, real headless
Chromium. An operator acknowledges the overdue wait through the form on Run detail
(click, fill, submit); the banner, the Approvals column, the Live tile, the sidebar and
the collector's API all show it; Clear in the page, and it is gone from all of them.
Last, a dashboard reading a `handoffscope api` process (the store read-only, 405 to
writes) shows an acknowledgement made earlier and, instead of the form, says where to
acknowledge.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from dashboard_support import (
    CHROMIUM_ARGS,
    OWNER_OVERDUE,
    PAGE_SECONDS,
    RUN_LOOP,
    RUN_OVERDUE,
    RUN_ROUTE,
    open_page,
    seed,
    settle,
    shot_dir,
    tables,
    texts,
)
from support.polling import eventually

from handoffscope.dashboard import acknowledge, style
from handoffscope.instrumentation import semconv as sc

ACKS = "/api/v1/acknowledgements"
VIEWPORT = {"width": 1440, "height": 900}
WAIT = PAGE_SECONDS * 1000
UNTIL = "2031-05-06T16:00:00.000Z"


def _ack(**over: Any) -> dict[str, Any]:
    """An `Acknowledgement` as the API answers it."""
    return {
        "event": sc.NOTIFY_RUN_LOOPING,
        "run_id": "run-1",
        "handoff_id": None,
        "service": "billing-app",
        "by": "alice",
        "note": "investigating",
        "created": "2031-05-06T15:00:00.000Z",
        "until": UNTIL,
        "cleared": None,
        "active": True,
        **over,
    }


# --- words and order --------------------------------------------------------------------


def test_the_banner_says_who_until_when_and_why() -> None:
    assert acknowledge.sentence(_ack()) == (
        "**Loop** acknowledged by `alice` until 2031-05-06 16:00 UTC — investigating"
    )
    wait = _ack(event=sc.NOTIFY_APPROVAL_OVERDUE, handoff_id="h1", note="known_issue")
    assert acknowledge.sentence(wait) == (
        "**Overdue wait** (handoff `h1`) acknowledged by `alice` until 2031-05-06 16:00 UTC "
        "— known issue"
    )
    stuck = _ack(event=sc.NOTIFY_RUN_STUCK, by="ops@example.com", note="false_alarm")
    assert acknowledge.sentence(stuck).startswith("**Stuck run** acknowledged by `ops@example.com`")
    # The until is the pages' clock: today's without the date.
    now = pd.Timestamp.now(tz="UTC").floor("s")
    assert acknowledge.until(_ack(until=now.isoformat())) == style.clock(now)


def test_who_and_which_handoff_are_inert_text() -> None:
    """`by` is checked by the collector, a handoff id is not: neither can become a link,
    emphasis or an icon on the page."""
    hostile = _ack(
        event=sc.NOTIFY_APPROVAL_OVERDUE, by="`[x](http://e.com)`", handoff_id="**h** :material/x:"
    )
    text = acknowledge.sentence(hostile)
    assert "``" in text and "[x](http://e.com)" in text.split("acknowledged by ")[1]
    assert style.md(hostile["by"]) in text and style.md(hostile["handoff_id"]) in text


def test_the_table_cell_is_who_and_until_or_nothing() -> None:
    assert acknowledge.cell(_ack()) == "alice · until 2031-05-06 16:00 UTC"
    assert acknowledge.column([_ack(by="bob"), None, float("nan"), _ack(active=False)]) == [
        "bob · until 2031-05-06 16:00 UTC",
        "",
        "",
        "",
    ]
    assert acknowledge.tile_note(0) == ""
    assert acknowledge.tile_note(3) == "3 acknowledged"
    assert acknowledge.tile_note(0, "2 still running") == "2 still running"
    assert acknowledge.tile_note(1, "2 still running") == "2 still running · 1 acknowledged"


def test_every_note_code_has_words() -> None:
    assert list(acknowledge.NOTE_LABELS) == list(sc.ACK_NOTES)
    assert acknowledge.NOTE_LABELS["known_issue"] == "known issue"
    assert set(acknowledge.EVENT_WORDS) == {
        sc.NOTIFY_RUN_STUCK,
        sc.NOTIFY_RUN_LOOPING,
        sc.NOTIFY_APPROVAL_OVERDUE,
    }


def test_acknowledged_rows_follow_the_unacknowledged_of_the_same_urgency() -> None:
    # In the collector's order: overdue, then uncertain, then waiting, each by deadline.
    waits = pd.DataFrame(
        {
            "run_id": ["o1", "o2", "o3", "u1", "u2", "w1"],
            "verdict": [sc.APPROVAL_OVERDUE] * 3 + [sc.WAIT_UNCERTAIN] * 2
            + [sc.WAITING_ON_APPROVAL],
            "acknowledgement": [_ack(), None, None, _ack(), None, _ack()],
        }
    )  # fmt: skip
    ordered = acknowledge.unacknowledged_first(waits, "verdict")
    # An acknowledged overdue wait still comes before any uncertain one.
    assert list(ordered["run_id"]) == ["o2", "o3", "o1", "u2", "u1", "w1"]
    loops = pd.DataFrame({"run_id": ["a", "b", "c"], "acknowledgement": [_ack(), None, None]})
    assert list(acknowledge.unacknowledged_first(loops)["run_id"]) == ["b", "c", "a"]
    # Nothing acknowledged: the collector's order, untouched.
    calm = waits.assign(acknowledgement=None)
    assert list(acknowledge.unacknowledged_first(calm, "verdict")["run_id"]) == list(
        waits["run_id"]
    )


# --- the pages, under Streamlit's AppTest -----------------------------------------------


@contextlib.contextmanager
def _acknowledged(api: str, *acks: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
    """Acknowledge through the collector's API; clear them again on exit (the seeded
    collector serves the whole module)."""
    made = []
    try:
        for body in acks:
            resp = httpx.post(api + ACKS, json=body, timeout=30)
            assert resp.status_code == 201, resp.text
            made.append(resp.json())
        yield made
    finally:
        for ack in made:
            target = {k: ack[k] for k in ("event", "run_id", "handoff_id") if ack[k]}
            httpx.delete(api + ACKS, params=target, timeout=30)


def _rows_of(at: Any, run_id: str) -> list[Any]:
    """Rows naming `run_id` in the page's tables that have an "Acknowledged" column."""
    found = [t for t in tables(at) if "Acknowledged" in t.columns]
    assert found, "no table with an Acknowledged column"
    return [row for t in found for _, row in t.iterrows() if run_id in " ".join(map(str, row))]


def test_loops_runs_and_live_show_acknowledged_runs(
    seeded_api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = {"event": sc.NOTIFY_RUN_LOOPING, "run_id": RUN_LOOP, "by": "bob",
            "for_seconds": 3600, "note": "mitigated"}  # fmt: skip
    stuck = {"event": sc.NOTIFY_RUN_STUCK, "run_id": RUN_ROUTE, "by": "carol",
             "for_seconds": 900, "note": "investigating"}  # fmt: skip
    with _acknowledged(seeded_api, loop, stuck) as (by_bob, by_carol):
        bob = f"bob · until {acknowledge.until(by_bob)}"
        carol = f"carol · until {acknowledge.until(by_carol)}"

        loops = open_page("loops", monkeypatch, seeded_api)
        (row,) = _rows_of(loops, RUN_LOOP)
        assert row["Acknowledged"] == bob

        runs = open_page("runs", monkeypatch, seeded_api)
        assert [r["Acknowledged"] for r in _rows_of(runs, RUN_LOOP)] == [bob]
        assert [r["Acknowledged"] for r in _rows_of(runs, RUN_ROUTE)] == [carol]
        others = [t for t in tables(runs) if "Acknowledged" in t.columns][0]
        assert sorted(others["Acknowledged"])[-2:] == sorted([bob, carol])
        assert (others["Acknowledged"] == "").sum() == len(others) - 2

        live = open_page("live", monkeypatch, seeded_api)
        board = httpx.get(f"{seeded_api}/api/v1/live", timeout=30).json()["board"]
        assert (board["stuck_acknowledged"], board["looping_acknowledged"]) == (1, 1)
        captions = [c.value for c in live.caption]
        in_flight = board["looping"]["in_flight"]
        assert "1 acknowledged" in captions
        assert f"{in_flight} still running · 1 acknowledged" in captions
        assert [r["Acknowledged"] for r in _rows_of(live, RUN_ROUTE)] == [carol] * 2
        assert [e.label for e in live.sidebar.expander] == ["2 acknowledged"]

        # The stuck run's page offers to acknowledge its being stuck, and says it is.
        detail = open_page("run_detail", monkeypatch, seeded_api, query={"run_id": RUN_ROUTE})
        page = texts(detail)
        assert "**Stuck run** acknowledged by `carol`" in page
        assert "Acknowledge the run being stuck." in page


# --- in the real dashboard, in Chromium ---------------------------------------------------


def _acks(api: str, active: bool = True) -> list[dict[str, Any]]:
    resp = httpx.get(
        f"{api}/api/v1/acknowledgements", params={"active": str(active).lower()}, timeout=30
    )
    assert resp.status_code == 200, resp.text
    acks: list[dict[str, Any]] = resp.json()["acknowledgements"]
    return acks


def _expand(page: Any, title: str, scope: str = '[data-testid="stMain"]') -> Any:
    """Open the expander titled `title` (if it is closed) and return it."""
    expander = page.locator(f'{scope} [data-testid="stExpander"]').filter(has_text=title).first
    expander.wait_for(timeout=WAIT)
    if expander.locator("details").get_attribute("open") is None:
        expander.locator("summary").click()
    return expander


def _grid_rows(page: Any) -> list[str]:
    """Every table's visible rows as text: st.dataframe draws on a canvas and keeps an
    accessible copy of the visible cells in the DOM (role=grid / row)."""
    grids = page.locator('[data-testid="stDataFrame"] [role="grid"]')
    grids.first.wait_for(state="attached", timeout=WAIT)
    return [row for grid in grids.all() for row in grid.locator('[role="row"]').all_inner_texts()]


def _rows_naming(page: Any, run_id: str) -> list[str]:
    """The tables' visible rows, once one names `run_id` (the owners' tables draw after
    the summary's)."""
    rows: list[str] = eventually(
        lambda: _grid_rows(page),
        lambda rows: any(run_id in r for r in rows),
        timeout=PAGE_SECONDS,
        what=f"a table row naming {run_id}",
    )
    return rows


def _sidebar(page: Any) -> Any:
    return page.locator('[data-testid="stSidebar"]')


def _banner(page: Any) -> Any:
    """The acknowledgement banners of the page (not the sidebar's list)."""
    alerts = page.locator('[data-testid="stMain"] [data-testid="stAlert"]')
    return alerts.filter(has_text="acknowledged by")


def _banners(page: Any) -> list[str]:
    texts: list[str] = _banner(page).all_inner_texts()
    return texts


@pytest.mark.browser
def test_acknowledge_a_wait_through_the_form_and_see_it_on_every_page(
    chromium_path: str, seeded_api: str, dashboard_factory: Any
) -> None:
    from playwright.sync_api import sync_playwright

    assert _acks(seeded_api) == []
    dashboard = dashboard_factory(seeded_api)
    shots = shot_dir()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))

            # Run detail of the overdue wait: the form, filled and sent like an operator.
            page.goto(f"{dashboard}/run_detail?run_id={RUN_OVERDUE}")
            settle(page)
            assert _banners(page) == []
            form = _expand(page, "Acknowledge").locator('[data-testid="stForm"]')
            form.wait_for(timeout=WAIT)
            assert OWNER_OVERDUE in form.inner_text() and "h1" in form.inner_text()
            form.get_by_label("By", exact=True).fill("alice")
            form.get_by_text("4 h", exact=True).click()
            form.get_by_text("known issue", exact=True).click()
            form.locator('[data-testid="stFormSubmitButton"] button').click()
            _banner(page).first.wait_for(timeout=WAIT)
            settle(page)

            # The collector has it, as sent.
            (ack,) = _acks(seeded_api)
            assert (ack["event"], ack["run_id"], ack["handoff_id"]) == (
                sc.NOTIFY_APPROVAL_OVERDUE,
                RUN_OVERDUE,
                "h1",
            )
            assert (ack["by"], ack["note"], ack["active"], ack["cleared"]) == (
                "alice",
                "known_issue",
                True,
                None,
            )
            until = pd.Timestamp(ack["until"])
            assert until - pd.Timestamp(ack["created"]) == pd.Timedelta(hours=4)
            # The banner says who, until when, why.
            (banner,) = _banners(page)
            assert (
                f"Overdue wait (handoff h1) acknowledged by alice until {style.clock(until)}"
                in (banner)
            )
            assert banner.rstrip().endswith("— known issue"), banner
            # The form remembers who, for the next one.
            form = _expand(page, "Acknowledge").locator('[data-testid="stForm"]')
            assert form.get_by_label("By", exact=True).input_value() == "alice"
            assert "1 acknowledged" in _sidebar(page).inner_text()
            page.screenshot(path=str(shots / "ack_run_detail.png"))

            # Approvals: the wait's row says who and until when; the others say nothing.
            page.goto(f"{dashboard}/approvals")
            settle(page)
            rows = _rows_naming(page, RUN_OVERDUE)
            mine = [r for r in rows if RUN_OVERDUE in r]
            assert len(mine) == 1 and f"alice · until {style.clock(until)}" in mine[0], rows
            assert sum("alice" in r for r in rows) == 1, rows
            assert "1 acknowledged" in _sidebar(page).inner_text()
            page.screenshot(path=str(shots / "ack_approvals.png"))

            # Live: the overdue tile counts it, as the collector does; the sidebar lists it.
            page.goto(f"{dashboard}/")
            settle(page)
            board = httpx.get(f"{seeded_api}/api/v1/live", timeout=30).json()["board"]
            assert board["overdue_acknowledged"] == 1
            assert board["stuck_acknowledged"] == board["looping_acknowledged"] == 0
            notes = page.locator('[data-testid="stMain"] [data-testid="stCaptionContainer"]')
            notes.filter(has_text="acknowledged").first.wait_for(timeout=WAIT)
            acked = [t for t in notes.all_inner_texts() if "acknowledged" in t]
            assert acked == ["1 acknowledged"], acked
            tile = page.locator('[data-testid="stColumn"]').filter(has_text="Approvals overdue")
            assert "1 acknowledged" in tile.first.inner_text()
            listed = _expand(page, "1 acknowledged", '[data-testid="stSidebar"]')
            assert f"Run {RUN_OVERDUE}" in listed.inner_text()
            assert "acknowledged by alice" in listed.inner_text()
            page.screenshot(path=str(shots / "ack_live.png"))

            # Its link opens the run; Clear there, and it is gone everywhere.
            listed.get_by_text(f"Run {RUN_OVERDUE}").click()
            page.wait_for_url(f"**/run_detail?run_id={RUN_OVERDUE}", timeout=WAIT)
            settle(page)
            _banner(page).first.wait_for(timeout=WAIT)
            page.locator('[data-testid="stMain"]').get_by_role("button", name="Clear").click()
            _banner(page).first.wait_for(state="detached", timeout=WAIT)
            settle(page)
            assert _banners(page) == []
            assert _acks(seeded_api) == []
            (cleared,) = [a for a in _acks(seeded_api, active=False) if a["by"] == "alice"]
            assert cleared["by"] == "alice" and cleared["cleared"] and not cleared["active"]
            assert "acknowledged" not in _sidebar(page).inner_text()
            page.goto(f"{dashboard}/approvals")
            settle(page)
            assert not any("alice" in r for r in _rows_naming(page, RUN_OVERDUE))
            assert errors == [], errors
        finally:
            browser.close()


@contextlib.contextmanager
def _query_only(db: Path) -> Iterator[str]:
    """`handoffscope api --db db` (the query API alone, the store read-only) on a free
    port, stopped on exit; yields its URL once it says it is ready."""
    ready = re.compile(r"handoffscope api ready: http=(\S+)")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("handoffscope")), "api", "--db", str(db),
         "--http-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: list[str] = []
    url: list[str] = []
    said = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if m := ready.search(line):
                url.append(m[1])
                said.set()
        said.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        said.wait(120)
        assert url, "".join(lines)
        yield url[0]
    finally:
        proc.terminate()
        proc.wait(60)


@pytest.mark.browser
def test_a_read_only_api_shows_acknowledgements_and_says_where_to_make_them(
    chromium_path: str, collector_factory: Any, dashboard_factory: Any
) -> None:
    from playwright.sync_api import sync_playwright

    collector = collector_factory()
    seed(collector.http_endpoint)
    made = httpx.post(
        collector.http_endpoint + ACKS,
        json={"event": sc.NOTIFY_RUN_LOOPING, "run_id": RUN_LOOP, "by": "bob",
              "for_seconds": 3600, "note": "expected"},
        timeout=30,
    )  # fmt: skip
    assert made.status_code == 201, made.text
    until = pd.Timestamp(made.json()["until"])
    assert collector.stop() == 0
    with _query_only(collector.db_path) as api:
        # What the dashboard asks before drawing a form: 405, whatever the body.
        refused = httpx.post(api + ACKS, json={}, timeout=30)
        assert refused.status_code == 405 and "collector" in refused.json()["error"]
        dashboard = dashboard_factory(api)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport=VIEWPORT)
                page.goto(f"{dashboard}/run_detail?run_id={RUN_LOOP}")
                settle(page)
                _banner(page).first.wait_for(timeout=WAIT)
                (banner,) = _banners(page)
                assert (
                    f"Loop acknowledged by bob until {style.clock(until)} — expected" in banner
                ), banner
                # Nothing here can write: no form, no Clear; one line says where to go.
                expander = _expand(page, "Acknowledge")
                expander.get_by_text("To acknowledge, use a collector").wait_for(timeout=WAIT)
                assert "handoffscope ack" in expander.inner_text()
                assert page.locator('[data-testid="stForm"]').count() == 0
                assert page.get_by_role("button", name="Clear").count() == 0
                assert "1 acknowledged" in _sidebar(page).inner_text()
                page.screenshot(path=str(shot_dir() / "ack_read_only.png"))
            finally:
                browser.close()
