"""The DuckDB store: columns follow the contract, versions are stamped, upgrades run,
newer files are refused, duplicates are found against the table."""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from handoffscope.collector.store.duckdb_store import (
    DDL_DIR,
    SQL_DIR,
    DuckDBStore,
    StoreError,
    apply_steps,
    read_steps,
)
from handoffscope.collector.store.spans import SPAN_SCHEMA, build_spans_table
from handoffscope.collector.store.steps import STORE_VERSION_KEY
from handoffscope.instrumentation import semconv as sc

EXPECTED_TYPES = {
    sc.STR: "VARCHAR",
    sc.INT: "BIGINT",
    sc.BOOL: "BOOLEAN",
    sc.STR_ARRAY: "VARCHAR[]",
}
FIXED = {
    "trace_id": "VARCHAR",
    "span_id": "VARCHAR",
    "name": "VARCHAR",
    "service": "VARCHAR",
    "start_ns": "BIGINT",
    "end_ns": "BIGINT",
    "received_ns": "BIGINT",
}


def columns_of(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return dict(rows)


def test_spans_columns_are_exactly_the_contract(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    try:
        columns = columns_of(store.con, "spans")
    finally:
        store.close()
    expected = dict(FIXED)
    for name, spec in sc.ATTRIBUTES.items():
        expected[name.replace(".", "_")] = EXPECTED_TYPES[spec.type]
    # The writer adds the group commit's number as it inserts (the judge's mark, step 8).
    assert columns == {**expected, "commit_seq": "BIGINT"}
    # The Arrow schema the writer builds agrees, name for name, in the same order.
    assert SPAN_SCHEMA.names == list(expected)
    assert columns["handoff_from_agent"] == "VARCHAR"
    assert columns["run_status"] == "VARCHAR"
    assert columns["wait_deadline"] == "BIGINT"


def test_versions_are_stamped_and_older_files_are_upgraded(tmp_path: Path) -> None:
    steps = read_steps()
    assert [s.version for s in steps] == list(range(1, len(steps) + 1))
    path = tmp_path / "old.duckdb"
    # A file as an older collector left it: only the first two steps.
    con = duckdb.connect(str(path))
    assert apply_steps(con, steps[:2], STORE_VERSION_KEY) == (0, 2)
    con.close()

    store = DuckDBStore(path)
    try:
        assert (store.version_before, store.store_version) == (2, len(steps))
        assert store.get_meta(STORE_VERSION_KEY) == str(len(steps))
        assert store.get_meta("semconv_version") == str(sc.SCHEMA_VERSION)
        assert "drops" in {r[0] for r in store.con.execute("SHOW TABLES").fetchall()}
    finally:
        store.close()
    # Opening again applies nothing.
    store = DuckDBStore(path)
    assert store.version_before == store.store_version == len(steps)
    store.close()


def test_a_file_from_a_newer_collector_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    DuckDBStore(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '999' WHERE key = ?", [STORE_VERSION_KEY])
    con.close()
    with pytest.raises(StoreError, match="newer than this handoffscope knows"):
        DuckDBStore(path)


def test_insert_new_spans_skips_what_is_stored_even_after_reopening(tmp_path: Path) -> None:
    def rows(n: int, t0: int) -> dict[str, list]:
        columns = {f.name: [None] * n for f in SPAN_SCHEMA}
        columns.update(
            trace_id=[os.urandom(16).hex() for _ in range(n)],
            span_id=[os.urandom(8).hex() for _ in range(n)],
            name=[sc.SPAN_REQUEST] * n,
            service=["svc"] * n,
            start_ns=[t0 + i for i in range(n)],
            end_ns=[t0 + i + 1 for i in range(n)],
            received_ns=[t0] * n,
            handoff_run_id=[f"run-{i}" for i in range(n)],
        )
        return columns

    path = tmp_path / "dedup.duckdb"
    first = build_spans_table(rows(100, 10**18))
    store = DuckDBStore(path)
    assert store.insert_new_spans(first).num_rows == 100
    store.close()

    store = DuckDBStore(path)
    try:
        mixed = build_spans_table(rows(50, 10**18 + 50))  # overlaps first's start range
        both = first.slice(40, 20).to_pylist() + mixed.to_pylist()
        import pyarrow as pa

        new = store.insert_new_spans(pa.Table.from_pylist(both, schema=SPAN_SCHEMA))
        assert new.num_rows == 50
        assert set(new.column("span_id").to_pylist()) == set(mixed.column("span_id").to_pylist())
        assert store.count_spans() == 150
    finally:
        store.close()


def test_a_group_keeps_the_first_of_each_span_and_counts_drops_of_exports_with_new_ones(
    tmp_path: Path,
) -> None:
    # The writer's group step, on real Arrow tables and a real file: copies within the
    # group are removed (first kept, order kept), copies of stored spans are not
    # inserted, and an export made only of copies (a retry) adds no drop (or source) counts.
    from collections import Counter
    from concurrent.futures import Future

    from handoffscope.collector.processor.allowlist import SpanBatch
    from handoffscope.collector.writer import _fresh_jobs, _group_table, _Job

    def table(ids: list[int], t0: int = 10**18) -> pa.Table:
        columns = {f.name: [None] * len(ids) for f in SPAN_SCHEMA}
        columns.update(
            trace_id=["ab" * 16] * len(ids),
            span_id=[f"{i:016x}" for i in ids],
            name=[sc.SPAN_REQUEST] * len(ids),
            service=["svc"] * len(ids),
            start_ns=[t0 + i for i in ids],
            end_ns=[t0 + i + 1 for i in ids],
            received_ns=[t0] * len(ids),
            handoff_run_id=[f"run-{i}" for i in ids],
        )
        return build_spans_table(columns)

    def job(ids: list[int], drops: dict) -> _Job:
        batch = SpanBatch(columns={}, count=len(ids), received=len(ids), drops=Counter(drops))
        return _Job(table(ids), batch, Future())

    store = DuckDBStore(tmp_path / "group.duckdb")
    try:
        assert store.insert_new_spans(table([1, 2])).num_rows == 2
        jobs = [
            job([3, 4, 3], {("svc", "a"): 1}),
            job([1, 2], {("svc", "retried"): 5}),  # all stored already: a retry
            job([4, 5], {("svc", "b"): 2}),
        ]
        group = _group_table(jobs)
        assert group.column("span_id").to_pylist() == [f"{i:016x}" for i in (3, 4, 1, 2, 5)]
        new = store.insert_new_spans(group, commit_seq=7)
        assert new.column("span_id").to_pylist() == [f"{i:016x}" for i in (3, 4, 5)]
        fresh = _fresh_jobs(jobs, new, group.num_rows)
        assert sum((j.batch.drops for j in fresh), Counter()) == Counter(
            {("svc", "a"): 1, ("svc", "b"): 2}
        )
        assert store.count_spans() == 5
        seqs = store.con.execute("SELECT commit_seq FROM spans ORDER BY span_id").fetchall()
        assert seqs == [(None,), (None,), (7,), (7,), (7,)]
    finally:
        store.close()


def test_every_sql_file_holds_one_statement_with_a_comment() -> None:
    files = sorted(SQL_DIR.glob("*.sql")) + sorted(DDL_DIR.glob("*.sql"))
    files += sorted((SQL_DIR / "notify").glob("*.sql"))
    assert len(files) >= 10
    for path in files:
        text = path.read_text()
        assert text.lstrip().startswith("--"), f"{path.name}: say why in a comment first"
        code = "\n".join(line.split("--", 1)[0] for line in text.splitlines())
        statements = [s for s in code.split(";") if s.strip()]
        if path.parent == DDL_DIR and all("ALTER TABLE" in s for s in statements):
            # A step adding several columns: DuckDB takes one ALTER command per statement,
            # and a step is applied as one transaction (steps.py), so it stays one step.
            assert statements, path.name
        else:
            assert len(statements) == 1, path.name
        assert not re.search(r"\{\w*\}|%s", code), f"{path.name}: bind parameters, never format"
    listed = (DDL_DIR / "_order").read_text().split()
    assert sorted(listed) == sorted(p.name for p in DDL_DIR.glob("*.sql"))


def test_notifications_table_is_the_notifier_row_record(tmp_path: Path) -> None:
    from handoffscope.collector.notify.notifier import NOTIFICATION_SCHEMA, NotificationRow

    store = DuckDBStore(tmp_path / "n.duckdb")
    try:
        columns = columns_of(store.con, "notifications")
    finally:
        store.close()
    assert list(columns) == list(NotificationRow._fields) == NOTIFICATION_SCHEMA.names
    arrow_to_duckdb = {"string": "VARCHAR", "int64": "BIGINT", "int32": "INTEGER"}
    assert columns == {f.name: arrow_to_duckdb[str(f.type)] for f in NOTIFICATION_SCHEMA}


def test_the_postgresql_insert_names_every_span_column_in_schema_order() -> None:
    """PostgreSQL's insert names its target columns (later steps' columns sit after
    commit_seq there): the list must be SPAN_SCHEMA's, then commit_seq."""
    import re

    from handoffscope.collector.store import statements

    sql = (statements.SQL_DIR / "postgresql" / "insert_spans.sql").read_text()
    named = re.search(r"INSERT INTO spans \(([^)]*)\)", sql)
    assert named is not None
    columns = [c.strip() for c in named[1].split(",")]
    assert columns == [f.name for f in SPAN_SCHEMA] + ["commit_seq"]
