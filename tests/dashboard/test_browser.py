"""The running dashboard in a real browser: headless Chromium opens every page.

Starts `handoffscope dashboard` (the dashboard's own command, exec'ing `streamlit run`)
against a real collector seeded with real spans, opens each page in Debian's Chromium
driven by Playwright, checks the words an operator looks for are rendered (no traceback),
and saves two screenshots per page: `<page>.png`, the first screen at 1440×900 (what an
operator sees without scrolling, and what the README shows), and `<page>-full.png`, the
whole page at 1440 wide — into build/screenshots/ (git-ignored), or into
$HANDOFFSCOPE_SCREENSHOT_DIR (scripts/screenshots.py points it at docs/screenshots/ for
the README).

Without Chromium the test is skipped on a workstation and fails under CI (`CI` set):
`.ci/run` installs it, so a missing browser there is a broken pipeline, not a pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dashboard_support import CHROMIUM_ARGS, PAGE_SECONDS, RUN_LOOP, RUN_ROUTE, settle, shot_dir

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1440, "height": 900}
MAX_SHOT_HEIGHT = 4000

# (screenshot name, URL path, words that must be on the page)
PAGES = [
    ("live", "", ["Live", "Newest unhealthy handoffs", "Runs in flight", "Last updated"]),
    (
        "control_flow",
        "control_flow",
        ["Control flow", "Runs behind an edge", "Dashed: an undeclared"],
    ),
    ("loops", "loops", ["Loops", "Turns burned", "Cycles", "burned. Safe next step"]),
    ("approvals", "approvals", ["Approvals", "Overdue", "Escalation list, by owner"]),
    ("runs", "runs", ["Runs", "Search", "match"]),
    (
        "false_completions",
        "false_completions",
        ["False completions", "Who claims done without proof"],
    ),
    (
        "run_detail",
        f"run_detail?run_id={RUN_ROUTE}",
        [
            "Run detail",
            "Do: Block; restore a declared route.",
            "Handoffs, boundary by boundary",
        ],
    ),
    ("run_detail_loop", f"run_detail?run_id={RUN_LOOP}", ["Agent path", "Evidence timeline"]),
    (
        "weekly_review",
        "weekly_review",
        ["Weekly review", "Rejection rate, last week", "This week so far", "Download CSV"],
    ),
    ("sources", "sources", ["Sources", "Instrumentation scope", "What this collector reads"]),
]


@pytest.fixture
def dashboard(dashboard_factory: Any, seeded_api: str) -> str:
    """`handoffscope dashboard` over the seeded collector; its URL."""
    return dashboard_factory(seeded_api)


def _full_height_shot(page, path: Path) -> None:
    """Streamlit scrolls inside its main container, so a 'full page' screenshot is one
    viewport high; grow the viewport to the content instead."""
    height = page.evaluate(
        """() => {
            const main = document.querySelector('[data-testid="stMain"]');
            return Math.max(main ? main.scrollHeight : 0, document.documentElement.scrollHeight);
        }"""
    )
    page.set_viewport_size(
        {"width": VIEWPORT["width"], "height": min(int(height) + 40, MAX_SHOT_HEIGHT)}
    )
    page.wait_for_timeout(300)  # let plotly relayout to the new size before the shot
    settle(page)
    page.screenshot(path=str(path))
    page.set_viewport_size(VIEWPORT)


def test_every_page_renders_in_chromium(chromium_path: str, dashboard: str) -> None:
    from playwright.sync_api import sync_playwright

    shots = shot_dir()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            for name, url_path, words in PAGES:
                page.goto(f"{dashboard}/{url_path}")
                settle(page)
                for word in words:
                    page.get_by_text(word, exact=False).first.wait_for(timeout=PAGE_SECONDS * 1000)
                assert page.locator('[data-testid="stException"]').count() == 0, name
                assert page.get_by_text("Page not found").count() == 0, name
                page.screenshot(path=str(shots / f"{name}.png"))  # 1440×900, first screen
                _full_height_shot(page, shots / f"{name}-full.png")
            # The Loops page links to the run's detail, and the link carries the run id.
            page.goto(f"{dashboard}/loops")
            settle(page)
            page.get_by_text(f"Open run {RUN_LOOP} in Run detail").click()
            page.wait_for_url(f"**/run_detail?run_id={RUN_LOOP}", timeout=PAGE_SECONDS * 1000)
            settle(page)
            page.get_by_text("Handoffs, boundary by boundary").wait_for(timeout=PAGE_SECONDS * 1000)
        finally:
            browser.close()
    for name, _, _ in PAGES:
        for shot in (f"{name}.png", f"{name}-full.png"):
            assert (shots / shot).stat().st_size > 10_000, f"{shot} looks empty"
