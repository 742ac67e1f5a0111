"""Values from the wire are plain text on every page, in a real browser (issue 13, items 3
and 10): no Markdown, no autolink, no icon, no colour, no formula, no HTML — and the
operator's browser asks nothing of any host but the dashboard itself.

A real collector is seeded (real OTLP exporter) with runs whose run ids, agent names and
service name are hostile strings; `handoffscope dashboard` serves them to Debian's
Chromium (Playwright). A loopback HTTP listener stands where an attacker's server would:
several strings point at it, and it must receive no request at all. Every request the
browser makes is recorded and must go to the dashboard's own origin (no favicon or font
from a public host). The DOM is then searched for anything the strings could have turned
into: links, images, KaTeX, icons, emphasis, headings, coloured spans.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

import pytest
from dashboard_support import (
    CHROMIUM_ARGS,
    MINUTE_NS,
    PAGE_SECONDS,
    RunBuilder,
    seed,
    settle,
)
from support.dashboard import PAGES

from handoffscope.instrumentation import semconv as sc

pytestmark = pytest.mark.browser


class Listener:
    """A loopback HTTP server that records every request it gets (it must get none)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                listener.requests.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def corpus(leak: str) -> list[str]:
    """Strings a sender may use as run id, agent or service name (each under the
    contract's 128 characters, no control characters)."""
    return [
        f"![x]({leak}/image)",
        f"[click]({leak}/link)",
        f"<img src={leak}/html>",
        f"{leak}/bare-url",
        "www.autolink-leak.example",
        "mail@autolink-leak.example",
        ":material/rocket_launch: icon",
        ":red[RED-X] colour",
        "$KATEX^2$ formula",
        "**BOLD-X** strong",
        "_EM-X_ emphasis",
        "# HEAD-X",
        "`CODE-X` tick",
        ":smile: emoji",
        "&lt;ENTITY&gt;",
        "a\\*b\\_c backslashes",
    ]


def _hostile_runs(strings: list[str]) -> Any:
    def build(tracers: dict[str, Any], now_ns: int) -> None:
        (service,) = tracers
        for i, text in enumerate(strings):
            run = RunBuilder(tracers[service], text, now_ns - (i + 1) * MINUTE_NS).started()
            nxt = strings[(i + 1) % len(strings)]
            # Undeclared, so the run is unhealthy and listed on Live, Control flow and the
            # weekly review; then back, then the same again: a loop for the Loops page.
            run.handoff(text, nxt, minute=0.1, declared=False)
            run.handoff(nxt, text, minute=0.2)
            run.handoff(text, nxt, minute=0.3, declared=False)
            run.ended(minute=0.4, status=sc.RUN_STATUS_COMPLETED)

    return build


# Text as shown. style.md adds one invisible WORD JOINER after the colon of `:material/`
# (Streamlit rewrites that prefix in the raw source, code spans included); reading it
# back without the joiner is reading what the operator sees.
SHOWN = "const shown = (el) => el.innerText.replaceAll('\\u2060', '');"

# What the strings would have become, had they been rendered: none may exist.
RENDERED = (
    """() => {
    """
    + SHOWN
    + """
    const origin = location.origin;
    const found = [];
    for (const a of document.querySelectorAll('a[href]')) {
        const href = a.href;
        if (!href.startsWith(origin) && !href.startsWith('javascript:')) found.push('link ' + href);
    }
    for (const el of document.querySelectorAll('img[src], source[src], iframe[src], video[src]')) {
        if (!el.src.startsWith(origin) && !el.src.startsWith('data:') && !el.src.startsWith('blob:'))
            found.push('embed ' + el.src);
    }
    if (document.querySelector('.katex')) found.push('katex');
    for (const el of document.querySelectorAll('strong, b, em, i, h1, h2, h3, h4, h5, h6, span')) {
        const t = (el.textContent || '').trim();
        if (['BOLD-X', 'EM-X', 'HEAD-X', 'RED-X'].includes(t)) found.push(el.tagName + ' ' + t);
    }
    for (const el of document.querySelectorAll('code')) {
        if ((el.textContent || '').trim() === 'CODE-X') found.push('code CODE-X');
    }
    const text = shown(document.body);
    for (const m of text.matchAll(/.{0,12}rocket_launch.{0,2}/g)) {
        if (!m[0].includes(':material/rocket_launch:')) found.push('icon ' + m[0]);
    }
    if (text.includes(String.fromCodePoint(0x1F604))) found.push('emoji');
    return found;
}"""
)


def test_hostile_strings_are_plain_text_on_every_page(
    chromium_path: str, collector_factory: Any, dashboard_factory: Any, listener: Listener
) -> None:
    from playwright.sync_api import sync_playwright

    strings = corpus(listener.origin)
    service = f"svc ![s]({listener.origin}/service) :material/rocket_launch:"
    collector = collector_factory()
    seed(collector.http_endpoint, build=_hostile_runs(strings), services=(service,))
    board = dashboard_factory(collector.http_endpoint)

    paths = ["" if p == "live" else p for p in PAGES]
    paths += [f"run_detail?run_id={quote(s, safe='')}" for s in strings]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            requested: list[str] = []
            page.on("request", lambda r: requested.append(r.url))
            for path in paths:
                page.goto(f"{board}/{path}")
                settle(page)
                assert page.locator('[data-testid="stException"]').count() == 0, path
                assert page.evaluate(RENDERED) == [], path
                if path.startswith("run_detail?"):
                    run_id = next(s for s in strings if path.endswith(quote(s, safe="")))
                    # As typed, in the header and the caption: the lookup worked, nothing
                    # was rendered.
                    for selector, want in (
                        ("[data-testid=stMain] h3", run_id),
                        ("[data-testid=stMain]", f"Service {service}"),
                    ):
                        page.wait_for_function(
                            "([selector, want]) => { " + SHOWN + " const el = "
                            "document.querySelector(selector); return el && shown(el).includes(want); }",
                            arg=[selector, want],
                            timeout=PAGE_SECONDS * 1000,
                        )
                    assert "No run" not in page.locator("body").inner_text()
        finally:
            browser.close()
    assert listener.requests == []
    foreign = [u for u in requested if not u.startswith((board, "data:", "blob:"))]
    assert foreign == [], foreign


def test_a_page_reached_under_another_host_name_gets_no_data(
    chromium_path: str, seeded_api: str, dashboard_factory: Any
) -> None:
    """DNS rebinding: Chromium resolves `*.localhost` to loopback without DNS, so
    `rebound.localhost` stands for an attacker's name re-pointed at the dashboard. The
    WebSocket — the only channel with data on it — is refused; by 127.0.0.1 it works."""
    from playwright.sync_api import sync_playwright

    board = dashboard_factory(seeded_api)
    port = board.rsplit(":", 1)[1]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(board)
            settle(page)
            assert "Newest unhealthy handoffs" in page.locator("body").inner_text()

            rebound = browser.new_page()
            ended: list[str] = []

            def watch(ws: Any) -> None:
                ws.on("close", lambda _: ended.append("close"))
                ws.on("socketerror", lambda _: ended.append("socketerror"))

            rebound.on("websocket", watch)
            rebound.goto(f"http://rebound.localhost:{port}/")
            # Refused: the socket ends (Playwright may report it as a socket error).
            rebound.wait_for_function("() => true")  # the page is up
            deadline = PAGE_SECONDS * 1000
            while not ended and deadline > 0:
                rebound.wait_for_timeout(200)  # Playwright delivers events while it waits
                deadline -= 200
            assert ended, "the WebSocket under a foreign Host name stayed open"
            body = rebound.locator("body").inner_text()
            assert rebound.locator("h1").count() == 0, body[:300]
            assert "Newest unhealthy handoffs" not in body
            assert "run-" not in body
        finally:
            browser.close()
