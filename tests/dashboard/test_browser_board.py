"""The operator surfaces count true, and say the same number everywhere.

One real collector per module, seeded once (`seed_board`: real OTLP export) with more
than 100 open waits at run and handoff level and runs stuck for longer than the live
window. First the API: each figure is checked against what the scenario holds (counted
from its own rules) and against the other endpoints that show it — the Live tiles,
`/approvals`, `/runs?state=…`, `/false_completions` and `/metrics`. Then the real
dashboard in real headless Chromium at 1440×900: Live, Approvals, Runs and the Run detail
header must show the API's figures, with no console error or warning on those pages;
each page is saved as a screenshot (build/screenshots/board_*.png) to look at.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from dashboard_support import CHROMIUM_ARGS, PAGE_SECONDS, settle
from seed_board import (
    BOARD,
    CONVERSATION_ID,
    LOOP_RUN,
    OVERDUE,
    PENDING,
    RUNNING_RUN,
    SEARCH_RUN,
    SEARCH_TRACE_ID,
    UNCERTAIN,
    expected,
)

from handoffscope.instrumentation import semconv as sc

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT = {"width": 1440, "height": 900}
LIVE_WINDOW = 3600


def _api(api: str, path: str, **params: Any) -> Any:
    resp = httpx.get(f"{api}{path}", params=params, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json() if path != "/metrics" else resp.text


def _gauge(metrics: str, family: str, service: str = BOARD) -> int:
    m = re.search(
        rf'^handoffscope_{family}{{service="{re.escape(service)}"}} (\S+)$', metrics, re.M
    )
    assert m, f"no {family} sample for {service}"
    return int(float(m[1]))


# --- the API: true counts, the same on every endpoint -------------------------------------


def test_counts_are_true_whatever_the_age(board_api: str) -> None:
    want = expected()
    live = _api(board_api, "/api/v1/live", window=LIVE_WINDOW)
    board = live["board"]
    assert board["stuck"]["count"] == want["stuck"]
    # Loops that ended minutes ago count (a loop ends at its turn limit within seconds);
    # ones that ended hours ago, outside the window, do not.
    assert board["looping"]["count"] == want["looping"]
    assert board["looping"]["in_flight"] == want["looping_in_flight"]
    assert board["approvals_overdue"]["count"] == want[OVERDUE]
    assert board["false_complete"]["count"] == want["false_complete"]
    # Stuck for longer than the window, still listed — the longest silent first.
    flying = live["runs_in_flight"]
    ids = [r["run_id"] for r in flying]
    old = [i for i in ids if i.startswith("board-stuck-old-")]
    assert len(old) == want["stuck_old"]
    assert all(r["seconds_since_last_handoff"] > LIVE_WINDOW for r in flying if r["run_id"] in old)
    stuck_flags = [r["stuck"] for r in flying]
    assert stuck_flags == sorted(stuck_flags, reverse=True)
    silences = [r["seconds_since_last_handoff"] for r in flying if r["stuck"] and not r["loop"]]
    assert silences == sorted(silences, reverse=True)
    # Every run in flight: stuck ones and the ones held by a wait (none other is seeded).
    assert live["runs_in_flight_total"] == want["stuck"] + want["waits"]
    # Trend: the recently stuck ones became stuck inside the window, the old ones did not.
    assert (
        board["stuck"]["new_in_window"]
        == want["stuck"] - want["stuck_old"] - want["looping_in_flight"]
    )

    approvals = _api(board_api, "/api/v1/approvals", limit=1000)
    assert approvals["total"] == want["waits"] > 100
    assert len(approvals["approvals"]) == want["waits"]
    counts = approvals["counts"]
    assert counts[sc.APPROVAL_OVERDUE] == want[OVERDUE]
    assert counts[sc.WAIT_UNCERTAIN] == want[UNCERTAIN]
    assert counts[sc.WAITING_ON_APPROVAL] == want[PENDING]
    run_level = [a for a in approvals["approvals"] if a["handoff_id"] is None]
    assert len(run_level) == want["waits_run_level"]
    assert {a["verdict"] for a in run_level} == set(counts)


def test_every_page_counts_with_the_same_query(board_api: str) -> None:
    live = _api(board_api, "/api/v1/live", window=LIVE_WINDOW)
    board = live["board"]
    capped = _api(board_api, "/api/v1/approvals", limit=10)
    full = _api(board_api, "/api/v1/approvals", limit=1000)
    # A capped list still counts everything, and says so.
    assert len(capped["approvals"]) == 10
    assert capped["total"] == full["total"] and capped["counts"] == full["counts"]
    assert live["wait_counts"] == full["counts"]
    assert board["approvals_overdue"]["count"] == full["counts"][sc.APPROVAL_OVERDUE]

    stuck = _api(board_api, "/api/v1/runs", state="stuck", since=0, limit=5, sort="severity")
    assert stuck["total"] == board["stuck"]["count"]
    assert len(stuck["runs"]) == 5 and all(r["in_flight"] for r in stuck["runs"])
    # The looping tile's list: the same runs, whenever they started (the window applies to
    # when they looped), ended ones included; not the loops of three hours ago.
    looping = _api(board_api, "/api/v1/runs", state="looping", since=_since(LIVE_WINDOW), limit=100)
    assert looping["total"] == board["looping"]["count"] == len(looping["runs"])
    ids = {r["run_id"] for r in looping["runs"]}
    assert not any(i.startswith("board-looped-old-") for i in ids)
    assert sum(r["in_flight"] for r in looping["runs"]) == board["looping"]["in_flight"]
    everything = _api(board_api, "/api/v1/runs", state="looping", since=0, limit=100)
    assert everything["total"] == board["looping"]["count"] + expected()["looped_old"]
    in_flight = _api(board_api, "/api/v1/runs", state="in_flight", since=0, limit=1)
    assert in_flight["total"] == live["runs_in_flight_total"]

    fc = _api(board_api, "/api/v1/false_completions", since=f"{_since(LIVE_WINDOW)}", limit=2)
    assert fc["total"] == board["false_complete"]["count"] and len(fc["runs"]) == 2

    metrics = _api(board_api, "/metrics")
    assert _gauge(metrics, "runs_stuck") == board["stuck"]["count"]
    assert _gauge(metrics, "runs_looping") == board["looping"]["count"]
    assert _gauge(metrics, "runs_in_flight") == live["runs_in_flight_total"]
    assert _gauge(metrics, "approvals_overdue") == full["counts"][sc.APPROVAL_OVERDUE]
    assert _gauge(metrics, "approvals_uncertain") == full["counts"][sc.WAIT_UNCERTAIN]
    assert _gauge(metrics, "approvals_waiting") == full["counts"][sc.WAITING_ON_APPROVAL]


def _since(seconds: int) -> float:
    return round(time.time() - seconds, 3)


def test_runs_are_found_by_thread_id_trace_id_and_agent(board_api: str) -> None:
    for q in (CONVERSATION_ID, SEARCH_TRACE_ID, SEARCH_TRACE_ID.upper(), SEARCH_RUN[:12]):
        found = _api(board_api, "/api/v1/runs", q=q, since=0, ids="true")
        assert SEARCH_RUN in [r["run_id"] for r in found["runs"]], q
    hit = _api(board_api, "/api/v1/runs", q=CONVERSATION_ID, since=0, ids="true")
    assert hit["total"] == 1
    assert hit["runs"][0]["conversation_ids"] == [CONVERSATION_ID]
    assert hit["runs"][0]["trace_ids"] == [SEARCH_TRACE_ID]
    assert _api(board_api, "/api/v1/runs", q="thread-none", since=0)["total"] == 0
    refunds = _api(board_api, "/api/v1/runs", agent="refunds", since=0, limit=1000)
    assert refunds["total"] == 4 and all(
        r["run_id"].startswith("board-stuck-new-") for r in refunds["runs"]
    )
    worst = _api(board_api, "/api/v1/runs", since=0, sort="severity", limit=1000)["runs"]
    ranks = [sc.RANK[r["verdict"]] for r in worst]
    assert ranks == sorted(ranks)
    detail = _api(board_api, f"/api/v1/runs/{SEARCH_RUN}")
    assert detail["conversation_ids"] == [CONVERSATION_ID]
    assert detail["trace_ids"] == [SEARCH_TRACE_ID]
    bad = httpx.get(f"{board_api}/api/v1/runs", params={"state": "asleep"}, timeout=10)
    assert bad.status_code == 400 and "state" in bad.json()["error"]


# --- the dashboard in Chromium: the figures the API gives, no console noise ----------------


def _shot_dir() -> Path:
    configured = os.environ.get("HANDOFFSCOPE_SCREENSHOT_DIR")
    folder = Path(configured) if configured else ROOT / "build" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _metric(page: Any, label: str) -> str:
    """The value shown under a metric's label (first such metric on the page)."""
    metric = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    metric.wait_for(timeout=PAGE_SECONDS * 1000)
    return metric.locator('[data-testid="stMetricValue"]').inner_text().strip()


# Streamlit's own frontend, opened on a page's URL, first asks for its health and host
# config under that page's path (404), then under the root: streamlit/streamlit#7074
# (open). Those two probes, and the browser's "failed to load" lines for them, are the
# only 4xx this test lets pass; any other 4xx, console error or warning fails it.
_STREAMLIT_PROBE = re.compile(r"^https?://[^/]+/[^?]+/_stcore/(health|host-config)$")


def _probe(url: str) -> bool:
    return bool(_STREAMLIT_PROBE.match(url))


def _count(n: int, unit: str) -> str:
    return f"{n:,} {unit if n == 1 else unit + 's'}"


def test_board_pages_show_the_api_figures_in_chromium(
    chromium_path: str, board_api: str, dashboard_factory: Any
) -> None:
    from playwright.sync_api import sync_playwright

    dashboard = dashboard_factory(board_api)
    shots = _shot_dir()
    noise: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.on(
                "console",
                lambda m: (
                    noise.append(f"{page.url}: {m.type}: {m.text}")
                    if m.type in ("error", "warning") and not _probe(m.location.get("url", ""))
                    else None
                ),
            )
            page.on("pageerror", lambda e: noise.append(f"{page.url}: pageerror: {e}"))
            page.on(
                "response",
                lambda r: (
                    noise.append(f"{page.url}: {r.status} {r.url}")
                    if r.status >= 400 and not _probe(r.url)
                    else None
                ),
            )

            # Live: the four tiles, first screen, equal to the API's board.
            page.goto(f"{dashboard}/")
            settle(page)
            board = _api(board_api, "/api/v1/live", window=LIVE_WINDOW)["board"]
            assert _metric(page, "Stuck runs") == _count(board["stuck"]["count"], "run")
            assert _metric(page, "Looping") == _count(board["looping"]["count"], "run")
            assert _metric(page, "Approvals overdue") == _count(
                board["approvals_overdue"]["count"], "wait"
            )
            assert _metric(page, "Done without proof") == _count(
                board["false_complete"]["count"], "run"
            )
            # Above the fold at 1440×900: the tiles and the stuck runs' table.
            stuck_table = page.get_by_text("Stuck runs", exact=True).last
            top = stuck_table.bounding_box()
            assert top is not None and top["y"] < VIEWPORT["height"], top
            page.get_by_text(f"of {_count(board['stuck']['count'], 'stuck run')}").first.wait_for(
                timeout=PAGE_SECONDS * 1000
            )
            page.screenshot(path=str(shots / "board_live.png"))
            # The looping tile's link lists exactly the runs it counts, ended ones included.
            page.get_by_text("All looping runs").first.click()
            settle(page)
            page.get_by_text(
                f"{_count(board['looping']['count'], 'run')} match (all services, last hour)"
            ).first.wait_for(timeout=PAGE_SECONDS * 1000)
            page.goto(f"{dashboard}/")
            settle(page)

            # The stuck tile's link: the Runs page, stuck runs, severity order, the same total.
            page.get_by_text("All stuck runs").first.click()
            page.wait_for_url("**/runs?*state=stuck*", timeout=PAGE_SECONDS * 1000)
            settle(page)
            page.get_by_text(f"{_count(board['stuck']['count'], 'run')} match").first.wait_for(
                timeout=PAGE_SECONDS * 1000
            )

            # Approvals: every open wait counted, grouped by owner, not cut at 100.
            page.goto(f"{dashboard}/approvals")
            settle(page)
            counts = _api(board_api, "/api/v1/approvals", limit=1)["counts"]
            total = _api(board_api, "/api/v1/approvals", limit=1)["total"]
            assert _metric(page, "Overdue") == _count(counts[sc.APPROVAL_OVERDUE], "wait")
            assert _metric(page, "Uncertain") == _count(counts[sc.WAIT_UNCERTAIN], "wait")
            assert _metric(page, "Waiting on time") == _count(
                counts[sc.WAITING_ON_APPROVAL], "wait"
            )
            assert _metric(page, "Open waits") == _count(total, "wait")
            page.get_by_text("Escalation list, by owner").wait_for(timeout=PAGE_SECONDS * 1000)
            groups = page.locator('[data-testid="stExpander"]')
            groups.first.wait_for(timeout=PAGE_SECONDS * 1000)
            # Waits nobody owns come first: nobody will answer them.
            assert "no owner" in groups.first.inner_text()
            # A summary chart, not a bar per wait: the page stays a few screens tall with
            # over a hundred open waits (one bar a wait made it 9,800 px at ~200).
            page.get_by_text("Deadlines, by owner").wait_for(timeout=PAGE_SECONDS * 1000)
            height = page.evaluate("document.documentElement.scrollHeight")
            assert height < 4 * VIEWPORT["height"], height
            page.screenshot(path=str(shots / "board_approvals.png"))

            # Runs: the on-call engineer arrives with a thread id; the URL carries it.
            page.goto(f"{dashboard}/runs?q={quote(CONVERSATION_ID)}")
            settle(page)
            page.get_by_text("1 run match").wait_for(timeout=PAGE_SECONDS * 1000)
            tables = page.locator('[data-testid="stDataFrame"]')
            tables.first.wait_for(timeout=PAGE_SECONDS * 1000)
            assert tables.count() == 1
            page.goto(f"{dashboard}/runs?state=stuck&sort=severity")
            settle(page)
            page.get_by_text(f"{_count(board['stuck']['count'], 'run')} match").first.wait_for(
                timeout=PAGE_SECONDS * 1000
            )
            page.screenshot(path=str(shots / "board_runs.png"))

            # Run detail header: a loop reads as a loop, a waiting run as running.
            loop = _api(board_api, f"/api/v1/runs/{LOOP_RUN}")
            page.goto(f"{dashboard}/run_detail?run_id={LOOP_RUN}")
            settle(page)
            page.get_by_text("Loop evidence:").wait_for(timeout=PAGE_SECONDS * 1000)
            assert _metric(page, "Turns") == _count(loop["turns"] or 0, "turn")
            assert _metric(page, "Status") == "Running"
            alert = page.locator('[data-testid="stAlert"]').first.inner_text()
            assert sc.VERDICT_LABELS[loop["verdict"]] in alert and "Do:" in alert
            page.screenshot(path=str(shots / "board_run_detail_loop.png"))

            waiting = _api(board_api, f"/api/v1/runs/{RUNNING_RUN}")
            page.goto(f"{dashboard}/run_detail?run_id={RUNNING_RUN}")
            settle(page)
            page.get_by_text("Waiting on:").wait_for(timeout=PAGE_SECONDS * 1000)
            assert _metric(page, "Status") == "Running"
            assert _metric(page, "Running for") not in ("0 s", "—")
            owner = waiting["waits"][0]["owner"]
            assert owner in page.locator('[data-testid="stMain"]').inner_text()
            page.screenshot(path=str(shots / "board_run_detail_wait.png"))

            # A run that is a turn of a conversation links to it; the link opens the
            # Conversation page on that thread, its one turn listed.
            page.goto(f"{dashboard}/run_detail?run_id={SEARCH_RUN}")
            settle(page)
            page.get_by_text(f"Open conversation {CONVERSATION_ID}").first.click()
            page.wait_for_url(
                f"**/conversation?conversation_id={CONVERSATION_ID}", timeout=PAGE_SECONDS * 1000
            )
            settle(page)
            assert _metric(page, "Turns") == "1"
            # The grid draws on a canvas; its cells are in the DOM, hidden, for accessibility.
            cell = page.locator('[data-testid="stDataFrame"] td', has_text="First turn")
            cell.first.wait_for(state="attached", timeout=PAGE_SECONDS * 1000)
            assert cell.count() == 1
            page.screenshot(path=str(shots / "board_conversation.png"))
        finally:
            browser.close()
    assert noise == [], "\n".join(noise)
