"""`handoffscope demo`, headless: every verdict kind shows up through the query API.

The real command starts the real collector (its own DuckDB file), backfills a little
history, and drives live traffic through the OpenAI Agents SDK and LangGraph adapters
and the plain recorder. We poll the API while it runs, then stop it with SIGTERM and
expect a clean exit.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from support.polling import eventually
from support.ports import free_port

from handoffscope.instrumentation import semconv as sc

# Every verdict a run can end up with. `in_flight` is transient (seconds) and is not
# required; the failure kinds, a pending wait and healthy runs must all appear.
EXPECTED = [v for v in sc.PRECEDENCE if v != sc.IN_FLIGHT]
DEADLINE_S = 150
BACKFILL_WEEKS = 3
"""Three weeks back from now always cover the two ISO weeks before this one in full
(two would leave the older one a sliver on a Sunday night), so both past weeks hold
history whatever day the test runs."""


def test_demo_shows_every_verdict(tmp_path: Path) -> None:
    http_port, grpc_port = free_port(), free_port()
    cmd = [
        sys.executable, "-m", "handoffscope.cli", "demo",
        "--db", str(tmp_path / "demo.duckdb"),
        "--http-port", str(http_port), "--grpc-port", str(grpc_port),
        "--no-dashboard", "--duration", str(DEADLINE_S), "--rate", "12",
        "--backfill-weeks", str(BACKFILL_WEEKS), "--backfill-runs", "40",
        "--grace-seconds", "2", "--seed", "7",
    ]  # fmt: skip
    log = (tmp_path / "demo.log").open("w")
    demo = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
    api = f"http://127.0.0.1:{http_port}"
    seen: set[str] = set()
    notified: set[str] = set()
    try:
        with httpx.Client(base_url=api, timeout=10) as client:

            def progress() -> bool:
                """Add what the API shows now to `seen` and `notified`; all there yet?"""
                if demo.poll() is not None:  # pytest.fail is no Exception: ends the wait
                    pytest.fail((tmp_path / "demo.log").read_text())
                for verdict in set(EXPECTED) - seen:
                    resp = client.get("/api/v1/runs", params={"verdict": verdict, "limit": 1})
                    if resp.status_code == 200 and resp.json()["runs"]:
                        seen.add(verdict)
                resp = client.get("/api/v1/approvals")  # a TransportError: still starting
                if resp.status_code == 200:
                    notified.update(
                        n["event"]
                        for a in resp.json()["approvals"]
                        for n in a["notifications"]
                        if n["status"] == "sent"
                    )
                return seen == set(EXPECTED) and bool(notified)

            eventually(progress, timeout=DEADLINE_S, every=1, or_last=True)
            weekly = client.get(
                "/api/v1/review/weekly", params={"weeks": BACKFILL_WEEKS + 1}
            ).json()
    finally:
        demo.send_signal(signal.SIGTERM)
        code = demo.wait(60)
        log.close()
    output = (tmp_path / "demo.log").read_text()
    assert sorted(set(EXPECTED) - seen) == [], output[-3000:]
    assert code == 0, output[-3000:]
    assert "backfill: 120/120 runs" in output
    assert sum(w["handoffs"] for w in weekly["weeks"]) > 0  # history for the weekly review
    # The history reports usage too: "What failures cost" has priced weeks before this
    # one (live traffic only reaches this week), and failures among what they cost.
    past = [s for s in weekly["spend"] if s["week"] != weekly["this_week"]]
    priced = [s for s in past if s["usage"] and s["usage"]["cost_usd"] > 0]
    assert len({s["week"] for s in priced}) >= 2, weekly["spend"]
    assert {s["verdict"] for s in priced} - {sc.HEALTHY}, weekly["spend"]
    assert "unavailable" not in output  # both framework scenario modules loaded
    # The demo's own receiver got the collector's signed notifications, and the API (so
    # the dashboard) shows them as sent.
    assert notified, output[-3000:]
    received = re.search(r"demo: (\d+) notifications received", output)
    assert received and int(received.group(1)) > 0, output[-3000:]
