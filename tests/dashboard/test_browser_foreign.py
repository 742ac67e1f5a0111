"""A run translated from another instrumentation's spans says so in the browser.

The same Agents SDK run, traced by the real OpenInference instrumentation and by our shim,
reaches a real collector (`foreign_api`); the real dashboard (`handoffscope dashboard`)
shows it in headless Chromium. Run detail labels the translated run with its source and
what that source cannot show, exactly as the API words it ("from OpenInference spans:
context, ... not observed"); the shim's run carries no such label. The Runs list names
the source in its own column. Skipped without Chromium, a failure under CI
(conftest.chromium_path).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from dashboard_support import CHROMIUM_ARGS, PAGE_SECONDS, settle

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1440, "height": 900}
WAIT_MS = PAGE_SECONDS * 1000


def _run(api: str, run_id: str) -> dict[str, Any]:
    response = httpx.get(f"{api}/api/v1/runs/{run_id}", timeout=10)
    response.raise_for_status()
    return response.json()


def _grid_rows(page: Any) -> list[str]:
    """The Runs table's rows as text: Streamlit draws st.dataframe on a canvas, and keeps
    an accessible copy of the visible cells in the DOM (role=grid / row), which is what a
    screen reader — and this test — reads."""
    grid = page.locator('[data-testid="stDataFrame"] [role="grid"]').first
    grid.wait_for(state="attached", timeout=WAIT_MS)
    return grid.locator('[role="row"]').all_inner_texts()


def test_translated_runs_are_labelled_with_their_source(
    chromium_path: str, dashboard_factory: Any, foreign_api: tuple[str, dict[str, str]]
) -> None:
    from playwright.sync_api import sync_playwright

    api, ids = foreign_api
    foreign, shim = _run(api, ids["foreign"]), _run(api, ids["shim"])
    assert (foreign["source_label"], shim["source_label"]) == ("OpenInference", None)
    note = foreign["not_observed"]
    assert note.startswith("from OpenInference spans: ") and "context" in note
    dashboard = dashboard_factory(api)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(f"{dashboard}/run_detail?run_id={ids['foreign']}")
            settle(page)
            page.get_by_text("From OpenInference spans").first.wait_for(timeout=WAIT_MS)
            captions = page.locator('[data-testid="stCaptionContainer"]').all_inner_texts()
            assert any(c.strip().endswith("From OpenInference spans") for c in captions), captions
            assert note in [c.strip() for c in captions], captions
            assert page.locator('[data-testid="stException"]').count() == 0

            page.goto(f"{dashboard}/run_detail?run_id={ids['shim']}")
            settle(page)
            page.get_by_text("Handoffs, boundary by boundary").wait_for(timeout=WAIT_MS)
            assert page.get_by_text("From OpenInference spans").count() == 0
            assert page.get_by_text("spans:", exact=False).count() == 0

            # The Runs list. Searching by the OTel trace id finds both runs (the shim's
            # spans and OpenInference's are of the same trace): one row names its source.
            page.goto(f"{dashboard}/runs?q={ids['foreign']}")
            settle(page)
            page.get_by_text("2 runs match").wait_for(timeout=WAIT_MS)
            rows = _grid_rows(page)
            labelled = [line for line in rows if "from OpenInference spans" in line]
            assert len(labelled) == 1, rows
            assert ids["foreign"][:12] in labelled[0] and ids["shim"][:12] not in labelled[0]
            assert any(ids["shim"][:12] in line for line in rows), rows
        finally:
            browser.close()
