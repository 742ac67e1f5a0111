"""One sender's huge run never stalls anyone else (issue 13, item 1), and the cap marks it.

The finding: 10,000 pending handoffs of one run (no destination admitted), one 3.8 MB
export, made the single writer spend quadratic time judging — 503 after 30 s, for that
sender and for an unrelated one. Now judging is behind the acknowledgement and linear in
the run, and a run is capped at `--max-handoffs-per-run` (default 10,000).

Against the real collector process over OTLP/HTTP: while that export goes in, an
unrelated sender keeps posting one-handoff exports, and every one is answered 200 (or 429
with Retry-After, never anything else); the judge then catches up, the big run's
verdicts are right (half its handoffs past their grace, half inside it), and one handoff
more marks the run `handoffs_capped` and is counted on /metrics. No timing is asserted:
bench/bench_judge.py measures the cost per span.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
from hardening_support import SECOND_NS
from support.evidence import request_attributes
from support.otlp import PROTOBUF, export_request, otlp_span
from support.polling import eventually

from handoffscope.instrumentation import semconv as sc

BIG = 10_000
"""Handoffs of the big run: exactly the default --max-handoffs-per-run."""
GRACE_S = 600
"""Wide enough that the recent half stays in flight however slow the machine is."""


def _big_export(run_id: str, now: int) -> bytes:
    spans = []
    for i in range(BIG):
        # The first half was requested 20 minutes ago (past its grace), the rest just now.
        start = now - (1200 if i < BIG // 2 else 1) * SECOND_NS + i
        frm, to = ("triage", "billing") if i % 2 == 0 else ("billing", "triage")
        attrs = request_attributes(
            run_id,
            f"h{i:05d}",
            **{sc.FROM_AGENT: frm, sc.TO_AGENT: to, sc.TURN: i, sc.STATE_VERSION: i},
        )
        spans.append(otlp_span(sc.SPAN_REQUEST, attrs, start_ns=start, end_ns=start + 1000))
    return export_request(spans, service="big-sender").SerializeToString()


def _small_export(run_id: str) -> bytes:
    return export_request(
        [
            otlp_span(sc.SPAN_REQUEST, request_attributes(run_id, "h1")),
            otlp_span(
                sc.SPAN_ACCEPT,
                {sc.RUN_ID: run_id, sc.HANDOFF_ID: "h1", sc.DESTINATION_STARTED: True},
            ),
        ],
        service="small-sender",
    ).SerializeToString()


class SmallSender(threading.Thread):
    """An unrelated sender: one-handoff exports back to back, every answer kept."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.stop = threading.Event()
        self.answers: list[tuple[int, str | None]] = []
        self.runs: list[str] = []

    def run(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self.stop.is_set():
                run_id = f"small-{len(self.runs)}"
                r = client.post(
                    self.endpoint + "/v1/traces",
                    content=_small_export(run_id),
                    headers={"Content-Type": PROTOBUF},
                )
                self.answers.append((r.status_code, r.headers.get("Retry-After")))
                if r.status_code == 200:
                    self.runs.append(run_id)
                else:
                    time.sleep(float(r.headers.get("Retry-After") or 1))


def test_a_huge_pending_run_stalls_no_other_sender_and_is_judged(
    module_collector_factory: Any,
) -> None:
    collector = module_collector_factory(args=["--grace-seconds", str(GRACE_S)])
    body = _big_export("big-run", time.time_ns())
    small = SmallSender(collector.http_endpoint)
    small.start()
    try:
        eventually(lambda: len(small.answers), lambda n: n >= 3, timeout=60)
        before = len(small.answers)
        big = collector.post_traces(body)
        assert big.status_code == 200, big.text
        # The unrelated sender keeps being answered while the big run is judged: it sends
        # until the judge has written the big run (read without waiting for the judge to
        # be idle, which it never is while the small sender keeps sending).
        eventually(
            lambda: httpx.get(
                collector.http_endpoint + "/api/v1/runs/big-run",
                params={"handoffs_limit": 1},
                timeout=30,
            ),
            lambda r: r.status_code == 200 and r.json()["handoffs_total"] == BIG,
            timeout=120,
        )
        eventually(lambda: len(small.answers), lambda n: n >= before + 5, timeout=60)
    finally:
        small.stop.set()
        small.join(timeout=60)
    collector.judged()
    for status, retry_after in small.answers:
        assert status == 200 or (status == 429 and retry_after), (status, retry_after)
    assert small.runs, "the unrelated sender got nothing through"

    run = collector.api("/api/v1/runs/big-run", handoffs_offset=BIG - 2)
    assert run["handoffs_total"] == BIG and run["handoff_count"] == BIG
    assert run["verdict"] == sc.DESTINATION_NOT_STARTED
    assert run["handoffs_capped"] is False
    assert [h["verdict"] for h in run["handoffs"]] == [sc.IN_FLIGHT, sc.IN_FLIGHT]
    first = collector.api("/api/v1/runs/big-run", handoffs_limit=2)
    assert [h["verdict"] for h in first["handoffs"]] == [sc.DESTINATION_NOT_STARTED] * 2
    assert first["path_summary"]["text"].startswith("(triage → billing) ×")
    assert collector.api(f"/api/v1/runs/{small.runs[-1]}")["verdict"] == sc.HEALTHY
    assert collector.healthz()["status"] == "ok"

    # One handoff more than the cap: refused by the judge, counted, the run marked.
    extra = export_request(
        [otlp_span(sc.SPAN_REQUEST, request_attributes("big-run", "one-too-many"))]
    )
    assert collector.post_traces(extra.SerializeToString()).status_code == 200
    capped = collector.api("/api/v1/runs/big-run", handoffs_limit=1)
    assert capped["handoffs_capped"] is True and capped["handoff_cap"] == BIG
    assert capped["handoffs_total"] == BIG
    assert capped["spans_total"] == BIG + 1  # the refused span is still stored
    assert collector.metric("handoffscope_engine_handoff_spans_over_cap_total") == 1
