"""The operator's scenarios at the sizes that break pages, in real headless Chromium.

A real collector per scenario, seeded once with real spans (`seed_operator`: one export
of the real OTLP/HTTP exporter, about 5,000 spans in a few seconds), and the real
dashboard (`handoffscope dashboard`, a subprocess) opened in Debian's Chromium at
1440×900. Each test asserts that what the operator sees is what the query API says, and
what the scenario holds by its own rules:

- loops that ended minutes ago: Live's looping tile counts them, and its link lists
  exactly those runs — not the loops of three hours ago (test_browser_board.py checks the
  count on a busier board; this one reads the run ids off the table);
- a thousand open waits: Approvals counts all of them, puts what is overdue first with
  the run id in the first columns, reaches every owner's waits, and stays as tall as
  with a tenth of the waits;
- over 600 runs: Runs shows the total, and page 4 lists runs 601–800 in the API's order;
- a notifier started on a store of weeks-old history posts none of it, while a loop
  that arrives afterwards is posted (tests/alerts/test_notify.py checks hours-old
  history sent beside fresh events; this is history already stored, weeks old, with the
  notifier's default freshness bound).

Tables are read through the data grid's accessible table (`role="grid"`: header cells
and the rendered rows' cells, `aria-rowcount` for the row count), which Streamlit's
grid keeps beside its canvas.
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest
from alerts.alerts_support import Receiver
from dashboard_support import DAY_NS, PAGE_SECONDS, open_page, settle
from seed_operator import (
    OVERDUE,
    PENDING,
    UNCERTAIN,
    expected,
    seed_operator,
    wait_kind,
)
from support.evidence import Run, S
from support.polling import eventually

from handoffscope.instrumentation import semconv as sc

VIEWPORT = {"width": 1440, "height": 900}
WAITS = 1000
FEW_WAITS = 100
LIVE_WINDOW = 3600
RUNS_A_PAGE = 200
WAIT_MS = PAGE_SECONDS * 1000


@pytest.fixture(scope="module")
def operator_api(module_collector_factory: Any) -> str:
    proc = module_collector_factory()
    seed_operator(proc.http_endpoint, waits=WAITS)
    return proc.http_endpoint


@pytest.fixture(scope="module")
def few_waits_api(module_collector_factory: Any) -> str:
    """The same scenario with a tenth of the waits, over the same owners."""
    proc = module_collector_factory()
    seed_operator(proc.http_endpoint, waits=FEW_WAITS)
    return proc.http_endpoint


@pytest.fixture(scope="module")
def operator_dashboard(operator_api: str, module_dashboard_factory: Any) -> str:
    """`handoffscope dashboard` over `operator_api`, shared by the module (pages only read)."""
    return module_dashboard_factory(operator_api)


@pytest.fixture
def page(browser: Any) -> Any:
    page = browser.new_page(viewport=VIEWPORT)
    yield page
    page.close()


def _api(api: str, path: str, **params: Any) -> Any:
    resp = httpx.get(f"{api}{path}", params=params, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _count(n: int, unit: str) -> str:
    return f"{n:,} {unit if n == 1 else unit + 's'}"


def _metric(page: Any, label: str) -> str:
    metric = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    metric.wait_for(timeout=WAIT_MS)
    return metric.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _grid(table: Any) -> dict[str, Any]:
    """A data grid's header, rendered rows (cell texts) and total row count."""
    table.scroll_into_view_if_needed()
    grid = table.locator('table[role="grid"]')
    grid.wait_for(state="attached", timeout=WAIT_MS)
    header = [h.inner_text().strip() for h in grid.locator("thead th").all()]
    rows = [
        [c.inner_text().strip() for c in r.locator('td[role="gridcell"]').all()]
        for r in grid.locator("tbody tr").all()
    ]
    return {
        "header": header,
        "rows": rows,
        "count": int(grid.get_attribute("aria-rowcount") or 1) - 1,  # the header is a row
    }


def _run_id(cell: str) -> str:
    """The run id of a Run-link cell (the grid's text is the link: run_detail?run_id=…)."""
    m = re.search(r"run_id=([^&]+)$", cell)
    assert m, cell
    return m[1]


def _main_height(page: Any) -> int:
    """How tall the page's content is: Streamlit scrolls inside its main container, so the
    document and the body stay one viewport high whatever the content. Read once the
    layout has stopped moving (the same height twice, a quarter second apart): tables and
    charts size themselves after the script run ends, later on a loaded machine."""

    def read() -> int:
        return int(
            page.evaluate(
                """() => {
                    const main = document.querySelector('[data-testid="stMain"]');
                    return Math.max(main ? main.scrollHeight : 0, document.body.scrollHeight,
                                    document.documentElement.scrollHeight);
                }"""
            )
        )

    settle(page)
    height = read()
    for _ in range(120):  # readiness, not a timing assertion: at most ~30 s
        page.wait_for_timeout(250)
        again = read()
        if again == height:
            return height
        height = again
    return height


# --- Live: loops that ended minutes ago ---------------------------------------------------


@pytest.mark.browser
def test_looping_tile_lists_exactly_the_loops_it_counts(
    operator_api: str, operator_dashboard: str, page: Any
) -> None:
    want = expected(WAITS)
    board = _api(operator_api, "/api/v1/live", window=LIVE_WINDOW)["board"]
    # Ended 12–16 minutes ago, at their turn limit: still loops of the last hour.
    assert board["looping"]["count"] == len(want["looped_recent"])
    assert board["looping"]["in_flight"] == 0
    listed = _api(
        operator_api,
        "/api/v1/runs",
        state="looping",
        since=round(time.time() - LIVE_WINDOW, 3),
        limit=100,
    )
    assert {r["run_id"] for r in listed["runs"]} == want["looped_recent"]

    page.goto(f"{operator_dashboard}/")
    settle(page)
    assert _metric(page, "Looping") == _count(len(want["looped_recent"]), "run")
    page.get_by_text("All looping runs").first.click()
    page.wait_for_url("**/runs?*state=looping*", timeout=WAIT_MS)
    settle(page)
    page.get_by_text(f"{_count(len(want['looped_recent']), 'run')} match").first.wait_for(
        timeout=WAIT_MS
    )
    grid = _grid(page.locator('[data-testid="stDataFrame"]').first)
    assert grid["header"][0] == "Run"
    shown = {_run_id(row[0]) for row in grid["rows"]}
    assert grid["count"] == len(shown) == len(want["looped_recent"])
    assert shown == want["looped_recent"]  # and none of the loops of three hours ago
    assert not shown & want["looped_old"]


# --- Approvals: a thousand open waits ------------------------------------------------------


def _approvals_page(page: Any, dashboard: str, query: str = "") -> None:
    page.goto(f"{dashboard}/approvals{query}")
    settle(page)
    page.get_by_text("Escalation list, by owner").wait_for(timeout=WAIT_MS)
    page.locator('[data-testid="stExpander"]').first.wait_for(timeout=WAIT_MS)


def _groups(page: Any) -> list[tuple[str, int, int, int]]:
    """Each owner group's title, read as (owner, overdue, uncertain, waiting)."""
    out = []
    for title in page.locator('[data-testid="stExpander"] summary').all():
        # The title reads "<owner> — N overdue, …", after the expander's arrow icon (a
        # Material Symbols ligature, so its name is text too).
        text = re.sub(r"^keyboard_arrow_\w+\s*", "", " ".join(title.inner_text().split()))
        m = re.match(r"^(.*) — (\d+) overdue, (\d+) uncertain, (\d+) waiting$", text)
        assert m, text
        out.append((m[1], int(m[2]), int(m[3]), int(m[4])))
    return out


@pytest.mark.browser
def test_a_thousand_waits_overdue_first_every_one_reachable_page_bounded(
    operator_api: str,
    operator_dashboard: str,
    few_waits_api: str,
    module_dashboard_factory: Any,
    page: Any,
) -> None:
    want = expected(WAITS)
    api = _api(operator_api, "/api/v1/approvals", limit=WAITS)
    assert api["total"] == WAITS

    # Paged through in the answer's order, 300 at a time, the waits are the same ones.
    def key(a: dict) -> tuple:
        return (a["run_id"], a["handoff_id"])

    paged = [
        key(a)
        for offset in range(0, WAITS, 300)
        for a in _api(operator_api, "/api/v1/approvals", limit=300, offset=offset)["approvals"]
    ]
    assert paged == [key(a) for a in api["approvals"]]
    assert api["counts"] == {
        sc.APPROVAL_OVERDUE: want[OVERDUE],
        sc.WAIT_UNCERTAIN: want[UNCERTAIN],
        sc.WAITING_ON_APPROVAL: want[PENDING],
    }

    dashboard = operator_dashboard
    _approvals_page(page, dashboard)
    assert _metric(page, "Open waits") == _count(WAITS, "wait")
    assert _metric(page, "Overdue") == _count(want[OVERDUE], "wait")
    assert _metric(page, "Uncertain") == _count(want[UNCERTAIN], "wait")
    assert _metric(page, "Waiting on time") == _count(want[PENDING], "wait")
    assert page.get_by_text("Showing").count() == 0  # nothing cut at 1,000

    # Every wait is in one owner's group: the groups' counts add up to every open wait,
    # owner by owner as the scenario made them.
    groups = _groups(page)
    by_owner = {owner: o + u + w for owner, o, u, w in groups}
    assert sum(by_owner.values()) == WAITS
    assert by_owner == {
        ("— no owner —" if owner is None else owner): n for owner, n in want["per_owner"].items()
    }
    # Nobody will answer an unowned wait: that group first; then the most overdue.
    assert groups[0][0] == "— no owner —"
    overdue = [o for _owner, o, _u, _w in groups[1:]]
    assert overdue == sorted(overdue, reverse=True) and overdue[0] > 0

    # The first owned group's table: Status and the run in the first columns, overdue
    # rows first, each row's run one the scenario made overdue.
    tables = page.locator('[data-testid="stExpander"] [data-testid="stDataFrame"]')
    grid = _grid(tables.nth(1))
    assert grid["header"][:2] == ["Status", "Run"]
    assert grid["count"] == by_owner[groups[1][0]]
    statuses = [row[0] for row in grid["rows"]]
    label = sc.VERDICT_LABELS[sc.APPROVAL_OVERDUE]
    assert statuses[0] == label
    first_not_overdue = next((i for i, s in enumerate(statuses) if s != label), len(statuses))
    assert label not in statuses[first_not_overdue:]
    for row in grid["rows"][:first_not_overdue]:
        run = _run_id(row[1])
        assert wait_kind(int(run.rsplit("-", 1)[1])) == OVERDUE, run

    # Bounded: one bar and one summary row per owner, tables of bounded height, groups
    # past the first three folded — so the page is as tall with ten times the waits.
    height = _main_height(page)
    few = module_dashboard_factory(few_waits_api)
    _approvals_page(page, few)
    assert _metric(page, "Open waits") == _count(FEW_WAITS, "wait")
    assert len(_groups(page)) == len(groups)  # the same owners
    few_height = _main_height(page)
    assert height <= few_height + 0.05 * VIEWPORT["height"], (height, few_height)
    assert height < 4 * VIEWPORT["height"], height

    # One owner's link reaches just that owner's waits, all of them.
    owner = groups[-1][0]
    _approvals_page(page, dashboard, f"?owner={owner}")
    (only,) = _groups(page)
    assert only[0] == owner and sum(only[1:]) == by_owner[owner]
    grid = _grid(page.locator('[data-testid="stExpander"] [data-testid="stDataFrame"]').first)
    assert grid["count"] == by_owner[owner]


def test_the_approvals_page_reads_every_wait_a_page_at_a_time(
    operator_api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past one API page (here 300, as if the collector held 3,000+ waits): the page reads
    the rest with `offset`, so every wait is in an owner's group, none counted twice."""
    from handoffscope.dashboard import client

    monkeypatch.setattr(client, "APPROVALS_PAGE", 300)
    client.clear_cache()
    at = open_page("approvals", monkeypatch, operator_api)
    assert not at.exception
    listed = client.approvals(None)
    assert len(listed.rows) == listed.total == WAITS
    keys = list(zip(listed.rows["run_id"], listed.rows["handoff_id"], strict=True))
    assert len(set(keys)) == WAITS
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Open waits"] == _count(WAITS, "wait")
    assert not [c.value for c in at.caption if "Showing" in str(c.value)]


# --- Runs: past 600 --------------------------------------------------------------------------


@pytest.mark.browser
def test_runs_page_four_lists_runs_601_on(
    operator_api: str, operator_dashboard: str, page: Any
) -> None:
    total = expected(WAITS)["runs"]
    since = round(time.time() - 86400, 3)  # the page's window below: the last 24 hours

    def newest(offset: int, limit: int) -> dict[str, Any]:
        return _api(
            operator_api, "/api/v1/runs", since=since, sort="newest", offset=offset, limit=limit
        )

    assert newest(0, 1)["total"] == total > 600
    last_page = -(-total // RUNS_A_PAGE)
    for number in (4, last_page):
        offset = (number - 1) * RUNS_A_PAGE
        want = [r["run_id"] for r in newest(offset, RUNS_A_PAGE)["runs"]]
        page.goto(f"{operator_dashboard}/runs?window=24h&page={number}")
        settle(page)
        page.get_by_text(f"{total:,} runs match").first.wait_for(timeout=WAIT_MS)
        shown_range = f"Runs {offset + 1:,}–{offset + len(want):,} of {total:,}"
        page.get_by_text(shown_range).first.wait_for(timeout=WAIT_MS)
        grid = _grid(page.locator('[data-testid="stDataFrame"]').first)
        assert grid["count"] == len(want)
        shown = [_run_id(row[0]) for row in grid["rows"]]
        # The rendered rows (the grid draws what fits) are the API's, in its order.
        assert shown and shown == want[: len(shown)], (number, shown[:3], want[:3])
    # The last page ends with the oldest run of all.
    assert want[-1] == newest(total - 1, 1)["runs"][0]["run_id"]


# --- the notifier on weeks-old history -------------------------------------------------------


def _notify_args(url: str) -> list[str]:
    # Fast polling so the test does not wait long; the freshness bound is the default.
    return [
        "--grace-seconds", "1",
        "--notify-poll-seconds", "0.2",
        "--notify-stuck-factor", "2",
        "--notify", f"{url}#rate=50&burst=50",
    ]  # fmt: skip


HISTORY_RUNS = 50


def _seed_weeks_of_history(sender: Any, now: int) -> set[str]:
    """Loops that ended, waits overdue for weeks and runs silent for weeks, 2–3 weeks ago."""
    ids = set()
    for i in range(HISTORY_RUNS):
        start = now - (14 + i % 7) * DAY_NS - i * 60 * S
        r = Run(sender, f"hist-{i:03d}", start)
        r.started()
        if i % 3 == 0:
            r.loop()
            r.ended(sc.RUN_STATUS_MAX_TURNS, at=1.0)
        elif i % 3 == 1:
            r.handoff("h1", "triage", "refunds")
            r.wait("h1", deadline=start + 3600 * S, owner="finance", at=0.2)
        else:
            r.handoff("h1", "triage", "billing")
        ids.add(f"hist-{i:03d}")
    assert sender.send().name == "SUCCESS"
    return ids


@pytest.mark.slow
def test_notifier_started_on_weeks_of_history_pages_only_what_arrives_after(
    collector_factory: Any, otlp_sender_factory: Any
) -> None:
    receiver = Receiver()
    try:
        # The store fills first (a backfill, or a collector that ran without --notify).
        collector = collector_factory()
        sender = otlp_sender_factory(collector, service="history")
        history = _seed_weeks_of_history(sender, time.time_ns())
        collector.judged()
        # The history is there, and is what would page people: loops, overdue, stuck.
        looping = _api(collector.http_endpoint, "/api/v1/runs", state="looping", since=0,
                       limit=1000)  # fmt: skip
        assert looping["total"] == len(range(0, HISTORY_RUNS, 3))
        overdue = _api(collector.http_endpoint, "/api/v1/approvals", limit=1000)["counts"]
        assert overdue[sc.APPROVAL_OVERDUE] == len(range(1, HISTORY_RUNS, 3))
        stuck = _api(collector.http_endpoint, "/api/v1/runs", state="stuck", since=0, limit=1)
        assert stuck["total"] == len(range(2, HISTORY_RUNS, 3))

        collector.restart(args=_notify_args(receiver.url))
        sender = otlp_sender_factory(collector, service="fresh")
        fresh = Run(sender, "fresh-loop", time.time_ns() - 2 * S)
        fresh.started()
        fresh.loop()
        fresh.ended(sc.RUN_STATUS_MAX_TURNS, at=1.0)
        assert sender.send().name == "SUCCESS"

        got = eventually(
            lambda: [(e["event"], e["run_id"]) for e in receiver.events()],
            lambda got: (sc.NOTIFY_RUN_LOOPING, "fresh-loop") in got,
            timeout=60,
            what="the fresh loop posted",
        )
        # Posted after the notifier had read the whole store: nothing of the history.
        assert not {run for _event, run in got if run in history}, got
        assert {run for _event, run in got} == {"fresh-loop"}, got
    finally:
        receiver.close()
