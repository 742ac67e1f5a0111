"""Which store the collector suites run on: the DuckDB file (default) or PostgreSQL.

`pytest --store postgresql` runs the suites that ask for a store through these helpers
against a REAL PostgreSQL (`support.postgres`, one server per test process, started on
first use) instead of a DuckDB file in the test's tmp dir: every collector, and every
in-process store, gets a database of its own (`CREATE DATABASE`, a few ms), so a test
sees exactly what it wrote, as it does with a fresh file.

- `Stores(kind)`: `.new(path)` -> the target of a fresh store (the DuckDB path itself,
  or the DSN of a new database); `.database()` -> a new database whatever the kind (the
  shared store's own tests); `.close()` stops the server if one was started.
- `open_store(target)`: the collector's own `DuckDBStore` / `PostgresStore` on it.
- `query(target, sql)`: rows of a read-only query against the store a target names (a
  DuckDB file must be closed by its collector first; a database can be read any time).
  The SQL is the subset both databases read alike; `$name` parameters as in `sql/`.

Tests that are about the DuckDB file itself (its lock, its write-ahead log, its
settings) carry `@pytest.mark.duckdb_only` and are skipped under `--store postgresql`.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Any

DUCKDB = "duckdb"
POSTGRESQL = "postgresql"
KINDS = (DUCKDB, POSTGRESQL)
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def is_dsn(target: str | Path) -> bool:
    return str(target).startswith(("postgresql://", "postgres://"))


class Stores:
    """Fresh store targets of one kind; the PostgreSQL server behind them, started lazily."""

    def __init__(self, kind: str = DUCKDB) -> None:
        if kind not in KINDS:
            raise ValueError(f"--store must be one of {KINDS}, not {kind!r}")
        self.kind = kind
        self._server: Any = None
        self._numbers = itertools.count()

    @property
    def server(self) -> Any:
        if self._server is None:
            from support.postgres import PostgresServer

            self._server = PostgresServer(durable=False).start()
        return self._server

    def new(self, path: Path) -> str:
        """A fresh store: `path` itself on DuckDB; a new, empty database on PostgreSQL."""
        if self.kind == DUCKDB:
            return str(path)
        return self.database()

    def database(self) -> str:
        """The DSN of a new, empty database on this process's PostgreSQL server."""
        import psycopg

        # Unique across xdist workers too: each worker has a server of its own.
        name = f"t{os.getpid()}_{next(self._numbers)}"
        with psycopg.connect(self.server.dsn, autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return self.server.dsn.rsplit("/", 1)[0] + "/" + name

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None


def open_store(target: str | Path, **kw: Any) -> Any:
    """The collector's store on `target` (schema steps applied)."""
    if is_dsn(target):
        from handoffscope.collector.store.postgres_store import PostgresStore

        return PostgresStore(str(target), **kw)
    from handoffscope.collector.store.duckdb_store import DuckDBStore

    return DuckDBStore(Path(target), **kw)


def pg_sql(sql: str) -> str:
    """A `$name` statement as psycopg binds it (`%(name)s`, a literal % doubled)."""
    return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


def query(target: str | Path, sql: str, params: Any = None) -> list[tuple]:
    """Every row of a read-only query against the store `target` names."""
    if is_dsn(target):
        import psycopg

        with psycopg.connect(str(target), autocommit=True) as con:
            return [tuple(r) for r in con.execute(pg_sql(sql), params or {}).fetchall()]
    import duckdb

    con = duckdb.connect(str(target), read_only=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()
