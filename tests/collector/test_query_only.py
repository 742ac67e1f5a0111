"""`handoffscope api`: the query API alone, over a store the collectors write — real
processes throughout: a real collector judges real OTLP exports into a DuckDB file or a
real PostgreSQL (Debian's, `support.postgres`), and the query-only process answers from it
exactly as the collector did."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from support.evidence import Run
from support.polling import eventually

from handoffscope.collector.engine import ENGINE_VERSION_KEY
from handoffscope.collector.store import statements
from handoffscope.collector.store.duckdb_store import DuckDBStore

HANDOFFSCOPE = Path(sys.executable).with_name("handoffscope")
READY = re.compile(r"handoffscope api ready: http=(\S+)")


class ApiProcess:
    """`handoffscope api ...` on a free port; `.url` once it said it is ready."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [str(HANDOFFSCOPE), "api", "--http-port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        self.lines: list[str] = []
        self.url = ""
        ready = threading.Event()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line)
                if m := READY.search(line):
                    self.url = m[1]
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        ready.wait(120)
        assert self.url, "".join(self.lines)

    def get(self, path: str, **headers: str) -> httpx.Response:
        return httpx.get(self.url + path, headers=headers, timeout=30)

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(60)


def refused(*args: str) -> str:
    out = subprocess.run(
        [str(HANDOFFSCOPE), "api", "--http-port", "0", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    return out.stderr


def timeless(listing: dict) -> dict:
    """A run listing without the one field that counts from the time of the request."""
    runs = [
        {k: v for k, v in r.items() if k != "seconds_since_last_activity"} for r in listing["runs"]
    ]
    return {**listing, "runs": runs}


def judged_run(collector, sender, rid: str) -> dict:
    r = Run(sender, rid, time.time_ns() - 60 * 10**9)
    r.handoff("h1", "triage", "billing")
    r.ended()
    r.outcome("success")
    sender.send()
    return collector.run(rid, until=lambda run: run.get("status") == "completed")


def test_answers_from_a_file_as_the_collector_did_and_guards_it_the_same(
    collector_factory, otlp_sender_factory
) -> None:
    collector = collector_factory(args=["--grace-seconds", "1"])
    sender = otlp_sender_factory(collector)
    detail = judged_run(collector, sender, "q-file")
    listing = collector.api("/api/v1/runs")
    assert collector.stop() == 0

    api = ApiProcess("--db", str(collector.db_path), "--grace-seconds", "1")
    try:
        assert api.get("/api/v1/runs/q-file").json() == detail
        assert timeless(api.get("/api/v1/runs").json()) == timeless(listing)
        health = api.get("/healthz").json()
        assert health["query_only"] is True and health["status"] == "ok"
        assert api.get("/v1/traces").status_code == 404  # no receiver here
    finally:
        assert api.stop() == 0

    guarded = ApiProcess("--db", str(collector.db_path), env={"HANDOFFSCOPE_TOKEN": "s3"})
    try:
        assert guarded.get("/api/v1/runs").status_code == 401
        assert guarded.get("/api/v1/runs", Authorization="Bearer s3").status_code == 200
        assert guarded.get("/healthz").status_code == 200
        assert guarded.get("/healthz", Host="evil.example").status_code == 400
    finally:
        guarded.stop()


def test_refuses_a_store_it_cannot_answer_from(tmp_path: Path) -> None:
    assert "does not exist" in refused("--db", str(tmp_path / "none.duckdb"))
    bare = tmp_path / "bare.duckdb"
    DuckDBStore(bare).close()  # store schema, no health engine tables yet
    assert "no handoffscope health engine here yet" in refused("--db", str(bare))
    old = tmp_path / "old.duckdb"
    store = DuckDBStore(old)
    from handoffscope.collector.engine import HealthEngine

    HealthEngine().install(store.con)
    statements.run(store.con, "set_meta", {"key": ENGINE_VERSION_KEY, "value": "1"})
    store.close()
    assert "older than this handoffscope reads" in refused("--db", str(old))
    assert "postgresql://user@host:port/db" in refused("--store", "postgresql:nohost")


def test_beside_a_collector_on_postgresql(
    postgres_dsn, collector_factory, otlp_sender_factory
) -> None:
    assert "start a collector on it first" in refused("--store", postgres_dsn)
    collector = collector_factory(args=["--store", postgres_dsn, "--grace-seconds", "1"])
    api = ApiProcess("--store", postgres_dsn, "--grace-seconds", "1")
    try:
        sender = otlp_sender_factory(collector)
        detail = judged_run(collector, sender, "q-pg")
        assert api.get("/api/v1/runs/q-pg").json() == detail  # while the collector runs
        # The api process reads the shared backlog every LeasedJudge.POLL_S, so it may
        # still show the commit it read before the collector's judge took it.
        health = eventually(
            lambda: api.get("/healthz").json(),
            lambda h: h["judge_pending_commits"] == 0,
            timeout=30,
            or_last=True,
        )
        assert health["query_only"] is True and health["judge_pending_commits"] == 0
    finally:
        assert api.stop() == 0
