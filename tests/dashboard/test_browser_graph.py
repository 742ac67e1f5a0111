"""Control flow, Loops and Weekly review in real headless Chromium, checked against the API.

One real collector holds the 20-agent flow scenario (`dashboard_support.build_flow_scenario`:
a cycle triage → billing → triage, a self-loop triage → triage, an undeclared triage →
legal, refusals) and 30 more handoffs on intake → shipping, one undeclared (so that edge
reads "1 of 33 undeclared"); one `handoffscope dashboard` runs in front of it, and
Chromium opens the pages. The graph is checked in what the browser drew — the SVG paths of the edges,
their dash, the labels as text — against `GET /api/v1/edges`, and every page must load
without a console error or warning.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from dashboard_support import (
    FLOW_AGENTS,
    FLOW_CYCLE,
    FLOW_SELF,
    FLOW_SERVICE,
    FLOW_UNDECLARED,
    MINUTE_NS,
    PAGE_SECONDS,
    RunBuilder,
    build_flow_scenario,
    seed,
    settle,
    shot_dir,
)

from handoffscope.dashboard import style

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1440, "height": 900}


SHARED_EDGE = ("intake", "shipping")
"""An edge of the flow scenario (3 handoffs) that `_build_graph` brings to 33, one of them
over an undeclared route: the graph must say "1 of 33 undeclared" on it."""
SHARED_EXTRA = 30


def _build_graph(tracers: dict[str, Any], now_ns: int) -> None:
    build_flow_scenario(tracers, now_ns)
    for i in range(SHARED_EXTRA):
        RunBuilder(
            tracers[FLOW_SERVICE], f"flow-shared-{i:02d}", now_ns - (20 + i) * MINUTE_NS
        ).started().handoff(*SHARED_EDGE, minute=0.1, declared=i != 0)


@pytest.fixture(scope="module")
def flow_api(module_collector_factory: Any) -> str:
    """The conftest's 20-agent flow collector, plus `SHARED_EXTRA` runs on `SHARED_EDGE`
    (one undeclared), for this module."""
    from dashboard_support import wait_visible

    proc = module_collector_factory()
    seed(proc.http_endpoint, build=_build_graph, services=(FLOW_SERVICE,))
    wait_visible(proc.http_endpoint, ("flow-0", "flow-shared-"))
    return proc.http_endpoint


@pytest.fixture(scope="module")
def flow_dashboard(flow_api: str, module_dashboard_factory: Any) -> str:
    """`handoffscope dashboard` over the flow collector, one for the module."""
    return module_dashboard_factory(flow_api)


# Streamlit's frontend, opened at a page's URL (/loops), first looks for its server one
# level down (/loops/_stcore/health, /loops/_stcore/host-config), gets a 404 and falls back
# to the root: the browser logs each 404 as a console error. That is the framework finding
# its base path, not this page; it is excused only for exactly those probe URLs.
BASE_PATH_PROBE = re.compile(r"/[a-z_]+/_stcore/(health|host-config)$")
FAILED_LOAD_404 = "Failed to load resource: the server responded with a status of 404"


class Console:
    """A fresh page that records every console message and uncaught page error."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport=VIEWPORT)
        self.messages: list[tuple[str, str]] = []
        self.probes = 0
        self.page.on("console", lambda m: self.messages.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.messages.append(("pageerror", str(e))))
        self.page.on("response", self._response)

    def _response(self, response: Any) -> None:
        if response.status == 404 and BASE_PATH_PROBE.search(response.url.split("?")[0]):
            self.probes += 1

    def complaints(self) -> list[tuple[str, str]]:
        """Errors and warnings, less one 404 message per base-path probe seen."""
        out = [(t, m) for t, m in self.messages if t in ("error", "warning", "pageerror")]
        excused = self.probes
        kept = []
        for t, m in out:
            if excused and t == "error" and m.startswith(FAILED_LOAD_404):
                excused -= 1
                continue
            kept.append((t, m))
        return kept


def _open(console: Console, url: str) -> Any:
    page = console.page
    page.goto(url)
    settle(page)
    page.wait_for_timeout(500)  # a late console message still lands before we read them
    assert page.locator('[data-testid="stException"]').count() == 0
    return page


def _api_edges(api: str) -> list[dict[str, Any]]:
    body = httpx.get(
        f"{api}/api/v1/edges", params={"service": FLOW_SERVICE, "since": 0}, timeout=10
    ).json()
    return body["edges"]


# What the browser drew for the graph: each edge's SVG path (its `d` and dash), and
# every text in the chart (edge labels are annotations, agent names scatter text).
DRAWN = """() => {
    const chart = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
        .find(c => c.querySelector('.shapelayer path'));
    if (!chart) return null;
    const paths = [...chart.querySelectorAll('.shapelayer path')].map(p => ({
        d: p.getAttribute('d'),
        dash: (p.style.strokeDasharray || p.getAttribute('stroke-dasharray') || '').trim(),
    }));
    const texts = [...chart.querySelectorAll('.annotation-text, .textpoint text')]
        .map(t => t.textContent);
    return {paths, texts};
}"""


def _is_loop(d: str) -> bool:
    """A self-loop starts and ends at its agent: first and last points a few px apart."""
    points = re.findall(r"-?\d+(?:\.\d+)?", d)
    x0, y0, x1, y1 = (float(v) for v in (points[0], points[1], points[-2], points[-1]))
    return abs(x0 - x1) < 30 and abs(y0 - y1) < 30


def test_control_flow_graph_draws_cycle_self_loop_and_undeclared_edge(
    browser: Any, flow_dashboard: str, flow_api: str
) -> None:
    edges = _api_edges(flow_api)
    pairs = {(e["from_agent"], e["to_agent"]): e for e in edges}
    a, b = FLOW_CYCLE
    assert (a, b) in pairs and (b, a) in pairs and (FLOW_SELF, FLOW_SELF) in pairs
    assert pairs[FLOW_UNDECLARED]["undeclared"] > 0

    console = Console(browser)
    page = _open(console, f"{flow_dashboard}/control_flow")
    page.get_by_text("Runs behind an edge").wait_for(timeout=PAGE_SECONDS * 1000)
    # plotly draws layout shapes after the chart's first SVG (which `settle` waits for)
    page.wait_for_selector(
        '[data-testid="stPlotlyChart"] .shapelayer path', timeout=PAGE_SECONDS * 1000
    )
    drawn = page.evaluate(DRAWN)
    assert drawn is not None, "no graph on Control flow"
    # One path per edge the API lists, back-edge and self-loop included.
    assert len(drawn["paths"]) == len(edges)
    dashed = [p for p in drawn["paths"] if p["dash"] not in ("", "none")]
    assert len(dashed) == sum(1 for e in edges if e["undeclared"] > 0)
    assert sum(_is_loop(p["d"]) for p in drawn["paths"]) == sum(
        1 for e in edges if e["from_agent"] == e["to_agent"]
    )
    # Every edge's count and unhealthy share is written on it, as text, and where some of
    # its handoffs went over an undeclared route, how many of how many.
    texts = drawn["texts"]
    for e in edges:
        label = f"{e['count']:,} · {style.percent(e['unhealthy_share'])}"
        if e["undeclared"]:
            label += f" · {e['undeclared']:,} of {e['count']:,} undeclared"
        assert label in texts, (e, texts)
    shared = pairs[SHARED_EDGE]
    assert (shared["count"], shared["undeclared"]) == (3 + SHARED_EXTRA, 1)
    assert any(t.endswith("· 1 of 33 undeclared") for t in texts), texts
    page.get_by_text("1 of 33 undeclared").first.wait_for(timeout=PAGE_SECONDS * 1000)
    # Each agent is drawn, with its health mark in words.
    for agent in FLOW_AGENTS:
        assert any(t.startswith(agent) for t in texts), agent
    assert any(re.search(r"⚠ \d+ % of \d+ in", t) for t in texts)
    assert any(re.search(r"✓ \d+ in, healthy", t) for t in texts)
    page.screenshot(path=str(shot_dir() / "control_flow_20_agents.png"))
    # The whole graph (taller than the window at 20 agents), for a person to look at.
    page.locator('[data-testid="stPlotlyChart"]').first.screenshot(
        path=str(shot_dir() / "control_flow_20_agents_graph.png")
    )
    assert console.complaints() == []


def _values(v: Any) -> list[Any]:
    """A plotly JSON array: a list, or (plotly ≥ 6, numpy input) base64 typed data."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        import numpy as np

        return list(np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]))
    return list(v)


def _weekly(api: str) -> dict[str, Any]:
    return httpx.get(
        f"{api}/api/v1/review/weekly", params={"service": FLOW_SERVICE, "weeks": 8}, timeout=10
    ).json()


def test_loops_and_weekly_review_render_without_console_complaints(
    browser: Any, flow_dashboard: str, flow_api: str
) -> None:
    console = Console(browser)
    page = _open(console, f"{flow_dashboard}/loops")
    # Grouped by cycle, named from its smallest agent whatever agent it was entered at.
    page.get_by_text("Cycles", exact=True).wait_for(timeout=PAGE_SECONDS * 1000)
    a, b = sorted(FLOW_CYCLE)
    # (table cells are drawn on a canvas; the grid keeps their text in hidden cells)
    page.get_by_text(f"{a} → {b} → {a}").first.wait_for(
        state="attached", timeout=PAGE_SECONDS * 1000
    )
    page = _open(console, f"{flow_dashboard}/weekly_review")
    body = _weekly(flow_api)
    now = body["weeks"][-1]
    assert now["partial"] is True and body["weeks"][-2]["partial"] is False
    page.get_by_text(f"This week so far ({body['this_week']}, partial)").first.wait_for(
        timeout=PAGE_SECONDS * 1000
    )
    shown = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    assert style.percent(now["rate"]) in shown, shown
    # the chart's week label (plotly may draw its ticks after the page settles)
    page.get_by_text("(partial)").first.wait_for(timeout=PAGE_SECONDS * 1000)
    page.get_by_text("Download CSV").wait_for(timeout=PAGE_SECONDS * 1000)
    assert console.complaints() == []


def test_weekly_rates_by_reason_and_edge_match_the_api(flow_api: str, monkeypatch) -> None:
    """The page's rates are the API's: by reason per week, and the edge × reason cells."""
    from dashboard_support import open_page, plotly_specs, tables

    body = _weekly(flow_api)
    this_week = body["this_week"]
    at = open_page("weekly_review", monkeypatch, flow_api, query={})
    at.sidebar.selectbox[0].select(FLOW_SERVICE).run()
    by_reason = tables(at)[0]
    column = f"This week so far ({this_week}, partial)"
    expected = {
        style.reason_label(r["reason"]): style.percent(r["rate"])
        for r in body["by_reason"]
        if r["week"] == this_week
    }
    assert expected, "the flow scenario refuses handoffs this week"
    assert dict(zip(by_reason["Reason"], by_reason[column], strict=True)) == expected
    # Rates, not counts: the reason chart's bars are the API's rates in percent.
    reason_chart = next(
        spec
        for spec in map(json.loads, plotly_specs(at))
        if spec["data"] and all("name" in t and t["type"] == "bar" for t in spec["data"])
    )
    bars = {
        (t["name"], x): y
        for t in reason_chart["data"]
        for x, y in zip(_values(t["x"]), _values(t["y"]), strict=True)
    }
    for r in body["by_reason"]:
        if r["week"] == this_week:
            tick = f"{this_week}<br>(partial)"
            assert bars[(style.reason_label(r["reason"]), tick)] == pytest.approx(
                r["rate"] * 100, abs=1e-3
            )
    # The heatmap over this week: each cell the API's share of that edge's handoffs.
    at.radio(key="wr_heat_span").set_value("This week so far (partial)").run()
    heat = next(
        t
        for spec in map(json.loads, plotly_specs(at))
        for t in spec["data"]
        if t["type"] == "heatmap"
    )
    cells = {
        (y, x): z
        for y, row in zip(_values(heat["y"]), heat["z"], strict=True)
        for x, z in zip(_values(heat["x"]), _values(row), strict=True)
        if z
    }
    expected_cells = {
        (style.edge(r["from_agent"], r["to_agent"]), style.reason_label(r["reason"])): r["rate"]
        * 100
        for r in body["by_edge_reason"]
        if r["week"] == this_week
    }
    assert cells.keys() == expected_cells.keys()
    for k, v in expected_cells.items():
        assert cells[k] == pytest.approx(v, abs=1e-3)  # the API rounds rates
