"""The store's one door to SQL (store/statements.py): names, results, registered tables."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from handoffscope.collector.store import statements


def test_every_sql_file_is_reachable_by_its_name() -> None:
    names = [
        p.relative_to(statements.SQL_DIR).with_suffix("").as_posix()
        for p in statements.SQL_DIR.rglob("*.sql")
        if statements.DIALECT_DIRS[statements.POSTGRESQL] not in p.parents
    ]
    assert "query/runs" in names and "engine/insert_handoffs" in names
    for name in names:
        assert statements.text(name).strip()


@pytest.mark.parametrize(
    "name", ["query/nope", "../statements", "/etc/passwd", "query", "postgresql/insert_spans"]
)
def test_an_unknown_or_escaping_name_is_refused(name: str) -> None:
    with pytest.raises(KeyError, match="no statement named"):
        statements.text(name)


def test_rows_dicts_arrow_and_registered_tables() -> None:
    con = duckdb.connect()
    table = pa.table({"x": [1, 2, 3]})
    with statements.registered(con, {"t": table}):
        assert con.execute("SELECT sum(x) FROM t").fetchall() == [(6,)]
    with pytest.raises(duckdb.CatalogException):
        con.execute("SELECT * FROM t")
    with pytest.raises(RuntimeError), statements.registered(con, {"t": table}):
        raise RuntimeError("boom")
    with pytest.raises(duckdb.CatalogException):
        con.execute("SELECT * FROM t")
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    statements.run(con, "set_meta", {"key": "k", "value": "v"})
    assert statements.rows(con, "get_meta", {"key": "k"}) == [("v",)]
    assert [list(d.values()) for d in statements.dicts(con, "get_meta", {"key": "k"})] == [["v"]]
    assert statements.arrow(con, "get_meta", {"key": "k"}).num_rows == 1
    assert list(statements.numpy(con, "get_meta", {"key": "k"})["value"]) == ["v"]
