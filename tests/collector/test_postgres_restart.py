"""A collector on a shared PostgreSQL outlives a restart of the database.

PostgreSQL restarts (an upgrade, a fail-over of a managed instance) cut every session. A
collector must then refuse exports it cannot store (503, so the exporter retries), lose
nothing it acknowledged, and go back to storing and judging once the server is back —
without being restarted itself. Real collector process, real PostgreSQL
(tests/support/postgres.py), stopped and started under it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.collector import Collectors
from support.evidence import request_attributes
from support.otlp import export_request, otlp_span
from support.polling import eventually
from support.postgres import PostgresServer

from handoffscope.instrumentation import semconv as sc

pytest.importorskip("psycopg")


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    s = PostgresServer(durable=False).start()
    try:
        yield s
    finally:
        s.stop()


def export(run_id: str) -> bytes:
    span = otlp_span(sc.SPAN_REQUEST, request_attributes(run_id, "h1"))
    return export_request([span]).SerializeToString()


def test_collector_stores_and_judges_again_after_postgres_restarts(
    server: PostgresServer, collector_factory: Collectors
) -> None:
    collector = collector_factory(args=["--store", server.dsn])
    assert collector.post_traces(export("before")).status_code == 200
    assert collector.run("before")["handoff_count"] == 1

    with server.down():
        refused = collector.post_traces(export("during"))
        # Not stored, so not acknowledged: the exporter is told to come back.
        assert refused.status_code == 503, refused.text
        assert refused.headers.get("Retry-After")

    # Back: an export, re-sent as an exporter would until it is taken, is stored (the
    # writer opens a new connection instead of failing on its dead one forever).
    again = export("after")
    stored = eventually(
        lambda: collector.post_traces(again),
        lambda response: response.status_code == 200,
        timeout=60,
        what="an export stored after the restart",
    )
    assert stored.status_code == 200
    # The query API's pooled connections died with the server: none is lent again (the
    # first request after a restart used to answer 500).
    assert collector.get("/api/v1/runs").status_code == 200
    # ... and judged: the judge reconnected and took the lease again.
    assert collector.run("after")["handoff_count"] == 1
    health = eventually(collector.healthz, lambda h: h["status"] == "ok", or_last=True)
    assert health["status"] == "ok", health
    # What was acknowledged before the restart is still there, once.
    assert collector.run("before")["handoff_count"] == 1
    assert collector.api("/api/v1/runs", limit=10)["total"] == 2
