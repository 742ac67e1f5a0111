"""The one sentinel scan: a planted string must reach no API answer, log, file byte or
stored value (DESIGN §5, "no content, proven").

On either store (support/stores.py): the DuckDB file and its WAL, or — under `--store
postgresql` — the files of the collector's database in the server's data directory
(after a CHECKPOINT writes its pages out) and the server's write-ahead log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from support.stores import is_dsn

API_PATHS = (
    "/healthz",
    "/metrics",
    "/api/v1/services",
    "/api/v1/runs",
    "/api/v1/handoffs",
    "/api/v1/edges",
    "/api/v1/loops",
    "/api/v1/approvals",
    "/api/v1/false_completions",
    "/api/v1/live",
    "/api/v1/review/weekly",
    "/api/v1/drops",
)
"""Every GET of the collector that answers from stored data."""


def api_answers(collector: Any) -> dict[str, str]:
    """The text of every answer in API_PATHS, the weekly CSV, and every run's detail."""
    answers = {path: collector.get(path).text for path in API_PATHS}
    answers["weekly csv"] = collector.get("/api/v1/review/weekly", format="csv").text
    for run in collector.api("/api/v1/runs", limit=1000)["runs"]:
        path = f"/api/v1/runs/{run['run_id']}"
        answers[path] = collector.get(path).text
    return answers


def stored_text(db_path: Path | str) -> str:
    """Every value of every table, read back through the database as text (strings are
    compressed on disk, so the file's bytes alone could hide one)."""
    if is_dsn(db_path):
        return _pg_stored_text(str(db_path))
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        tables = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
        ).fetchall()
        return "\n".join(
            repr(con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall())
            for schema, table in tables
        )
    finally:
        con.close()


def assert_content_free(
    collector: Any, sentinel: str, *, stored: str, answers: dict[str, str] | None = None
) -> None:
    """`sentinel` is in no API answer (`api_answers` plus any `answers` the test read),
    then — after stopping the collector cleanly — in no log line, no byte of any file of
    its folder (the DuckDB file, its WAL) and no stored value. `stored` is a string the
    store must show (proves the read-back sees stored strings at all)."""
    for where, text in {**api_answers(collector), **(answers or {})}.items():
        assert sentinel not in text, f"sentinel in {where}"
    assert collector.stop() == 0
    assert sentinel not in collector.log(), "sentinel in the collector's log"
    if is_dsn(collector.store):
        db, files = _pg_files(collector.store)
        text = stored_text(collector.store)
    else:
        db = Path(collector.db_path)
        files = [p for p in db.parent.rglob("*") if p.is_file()]
        text = stored_text(db)
    assert db in files
    for path in files:
        assert sentinel.encode() not in path.read_bytes(), f"sentinel bytes in {path.name}"
    assert stored in text, f"the read-back does not show {stored!r}"
    assert sentinel not in text, "sentinel in a stored value"


def _pg_stored_text(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as con:
        tables = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        return "\n".join(
            repr(con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall())
            for schema, table in tables
        )


def _pg_files(dsn: str) -> tuple[Path, list[Path]]:
    """The directory of the collector's database (its first relation file stands for it)
    and every file to scan: that database's files and the server's WAL segments."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute("CHECKPOINT")  # pages from shared buffers into the files read below
        data = Path(con.execute("SHOW data_directory").fetchone()[0])
        oid = con.execute(
            "SELECT oid FROM pg_database WHERE datname = current_database()"
        ).fetchone()[0]
        table = con.execute("SELECT pg_relation_filepath('handoffs')").fetchone()[0]
    base = data / "base" / str(oid)
    files = [p for p in base.rglob("*") if p.is_file()]
    files += [p for p in (data / "pg_wal").glob("*") if p.is_file()]
    return data / table, files
