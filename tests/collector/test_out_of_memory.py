"""A query the DuckDB file's memory limit cannot hold answers 503 with Retry-After and
says why, instead of a bare 500, and the collector goes on answering (real DuckDB, a real
out-of-memory error: the file opened with a limit too small for the runs query)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from handoffscope.collector.config import CollectorConfig
from handoffscope.collector.engine import HealthEngine
from handoffscope.collector.server import OUT_OF_MEMORY_RETRY_S, assemble
from handoffscope.collector.store.duckdb_store import DuckDBStore

TOO_LITTLE = "4MB"
"""Enough for the file to open, not for the runs query's buffers (DuckDB 1.x allocates a
2 MiB block for it): measured, 2MB does not open, 4MB fails the query (and a commit)."""


def _get(app, path: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            return await c.get(path)

    return asyncio.run(go())


@pytest.mark.duckdb_only("DuckDB's --memory-limit; PostgreSQL spills to disk instead")
def test_a_query_out_of_memory_answers_503_and_says_why(tmp_path: Path) -> None:
    settings = CollectorConfig(db=str(tmp_path / "oom.duckdb"), retention_days=0, ingest_log="off")
    made = DuckDBStore(settings.db)  # made with room to spare, as a collector would
    HealthEngine().install(made.con)
    made.close()
    store = DuckDBStore(settings.db, memory_limit=TOO_LITTLE)
    engine = HealthEngine()
    engine.load(store.con)
    parts = assemble(settings, store, engine)
    parts.writer.start()
    try:
        answer = _get(parts.app, "/api/v1/runs")
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == str(OUT_OF_MEMORY_RETRY_S)
        assert "--memory-limit" in answer.json()["error"]
        health = _get(parts.app, "/healthz")  # the collector still answers
        assert health.status_code in (200, 503) and "status" in health.json()
    finally:
        parts.writer.close()
        parts.judge.close()
        store.close()
