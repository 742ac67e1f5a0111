"""The running dashboard in a real browser: headless Chromium opens every page.

Starts `handoffscope dashboard` (the dashboard's own command, exec'ing `streamlit run`)
against a real collector seeded with real spans, opens each page in Debian's Chromium
driven by Playwright, checks the words an operator looks for are rendered (no traceback),
and saves one screenshot per page — into build/screenshots/ (git-ignored), or into
$HANDOFFSCOPE_SCREENSHOT_DIR (scripts/screenshots.py points it at docs/screenshots/ for
the README).

Without Chromium the test is skipped on a workstation and fails under CI (`CI` set):
`.ci/run` installs it, so a missing browser there is a broken pipeline, not a pass.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_support import RUN_LOOP, RUN_ROUTE

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("HANDOFFSCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1440, "height": 900}
MAX_SHOT_HEIGHT = 4000
STARTUP_SECONDS = 60
PAGE_SECONDS = 30

# (screenshot name, URL path, words that must be on the page)
PAGES = [
    ("live", "", ["Live", "Newest unhealthy handoffs", "Runs in flight", "Last updated"]),
    ("control_flow", "control_flow", ["Control flow", "Runs behind an edge", "Dark outline"]),
    ("loops", "loops", ["Loops", "Turns burned", "triage → billing → triage"]),
    ("approvals", "approvals", ["Approvals", "Overdue", "Time to deadline"]),
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
            "Safe next step: Block; restore a declared route.",
            "Handoffs, boundary by boundary",
        ],
    ),
    ("run_detail_loop", f"run_detail?run_id={RUN_LOOP}", ["Agent path", "Evidence timeline"]),
    (
        "weekly_review",
        "weekly_review",
        ["Weekly review", "Rejection rate, this week", "Download CSV"],
    ),
]


def _shot_dir() -> Path:
    configured = os.environ.get("HANDOFFSCOPE_SCREENSHOT_DIR")
    folder = Path(configured) if configured else ROOT / "build" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the dashboard exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.3)
    pytest.fail(
        f"the dashboard did not answer {url} within {STARTUP_SECONDS} s:\n{log.read_text()[-3000:]}"
    )


@pytest.fixture
def chromium_path() -> str:
    reason = None
    if not Path(CHROMIUM).exists():
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright Python package is not installed"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run under CI: {reason}")
        pytest.skip(reason)
    return CHROMIUM


@pytest.fixture
def dashboard(seeded_api: str, tmp_path: Path) -> Iterator[str]:
    """`handoffscope dashboard` as a real subprocess on a free port; yields its URL."""
    port = _free_port()
    log = tmp_path / "dashboard.log"
    env = dict(os.environ)
    env.pop("HANDOFFSCOPE_TOKEN", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "handoffscope.dashboard.cli",
                "--api", seeded_api, "--port", str(port), "--host", "127.0.0.1",
            ],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
        )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_http(f"{base}/_stcore/health", proc, log)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _settle(page) -> None:
    """Wait until Streamlit has finished the run and every chart has drawn."""
    page.wait_for_selector("h1", timeout=PAGE_SECONDS * 1000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
        timeout=PAGE_SECONDS * 1000,
    )
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
                 .every(c => c.querySelector('.main-svg'))""",
        timeout=PAGE_SECONDS * 1000,
    )


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
    _settle(page)
    page.screenshot(path=str(path))
    page.set_viewport_size(VIEWPORT)


def test_every_page_renders_in_chromium(chromium_path: str, dashboard: str) -> None:
    from playwright.sync_api import sync_playwright

    shots = _shot_dir()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            for name, url_path, words in PAGES:
                page.goto(f"{dashboard}/{url_path}")
                _settle(page)
                for word in words:
                    page.get_by_text(word, exact=False).first.wait_for(timeout=PAGE_SECONDS * 1000)
                assert page.locator('[data-testid="stException"]').count() == 0, name
                assert page.get_by_text("Page not found").count() == 0, name
                _full_height_shot(page, shots / f"{name}.png")
            # The Loops page links to the run's detail, and the link carries the run id.
            page.goto(f"{dashboard}/loops")
            _settle(page)
            page.get_by_text(f"Open run {RUN_LOOP} in Run detail").click()
            page.wait_for_url(f"**/run_detail?run_id={RUN_LOOP}", timeout=PAGE_SECONDS * 1000)
            _settle(page)
            page.get_by_text("Handoffs, boundary by boundary").wait_for(timeout=PAGE_SECONDS * 1000)
        finally:
            browser.close()
    for name, _, _ in PAGES:
        assert (shots / f"{name}.png").stat().st_size > 10_000, f"{name}.png looks empty"
