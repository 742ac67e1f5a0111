"""The dashboard shows what the collector's notifier sent: on the Approvals list and on
Run detail ("owner notified 14:02, overdue escalation 15:02").

A real collector with `--notify` posts to a real local HTTP server that answers 200; the
real Streamlit app (AppTest) reads the collector's API. The receiver's contents are the
alert tests' business (tests/alerts/test_notify.py); here only the pages matter.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from dashboard_support import open_page, tables, texts
from support import evidence as ev
from support.polling import eventually

from handoffscope.instrumentation import semconv as sc

S = 10**9


class _Ok(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hook_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


def test_approvals_and_run_detail_say_who_was_notified_and_when(
    collector_factory, otlp_sender_factory, hook_url, monkeypatch
) -> None:
    collector = collector_factory(args=["--notify", hook_url, "--notify-poll-seconds", "0.2"])
    sender = otlp_sender_factory(collector, service="support")
    now = time.time_ns()
    a = {sc.RUN_ID: "run-notified", sc.HANDOFF_ID: "h1"}
    sender.emit(sc.SPAN_REQUEST, {**a, sc.FROM_AGENT: "triage", sc.TO_AGENT: "refunds"})
    sender.emit(sc.SPAN_ACCEPT, {**a, **ev.accept()})
    sender.emit(
        sc.SPAN_WAIT, {**a, **ev.wait(owner="finance", resume_token="tok", deadline=now + 3 * S)}
    )
    assert sender.send().name == "SUCCESS"
    sent = eventually(
        lambda: [
            n["event"]
            for n in collector.api("/api/v1/runs/run-notified")["notifications"]
            if n["status"] == "sent"
        ],
        lambda sent: sent == [sc.NOTIFY_WAIT_CHECKPOINTED, sc.NOTIFY_APPROVAL_OVERDUE],
        timeout=60,
        or_last=True,
    )
    assert sent == [sc.NOTIFY_WAIT_CHECKPOINTED, sc.NOTIFY_APPROVAL_OVERDUE]

    at = open_page("approvals", monkeypatch, collector.http_endpoint)
    assert tables(at)[0].iloc[0]["Owner"] == "finance"  # the escalation list, by owner
    row = next(t for t in tables(at) if "Notified" in t.columns).iloc[0]
    assert row["Notified"].startswith("owner notified ")
    assert ", overdue escalation " in row["Notified"]

    at = open_page(
        "run_detail", monkeypatch, collector.http_endpoint, query={"run_id": "run-notified"}
    )
    waits = next(t for t in tables(at) if "Notified" in t.columns)
    assert ", overdue escalation " in waits.iloc[0]["Notified"]
    assert "Notifications: owner notified " in texts(at)
