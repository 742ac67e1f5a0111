"""Every statement the collector runs, asked for by name: the one door to `sql/`.

A name is the `.sql` file's path under `sql/` without the suffix: `"query/runs"`,
`"engine/insert_handoffs"`, `"count_spans"`. The engine, the judge, the query API, the
health metrics and the notifier never hold SQL text; they ask here, on a connection or
cursor the store gave them (`DuckDBStore.con` for the writer thread, `store.cursor()`
for everyone else). This is the seam another backend replaces: on a PostgreSQL connection (psycopg 3) the
same name reads `sql/postgresql/<name>.sql` where PostgreSQL needs its own SQL and the
shared file where it does not, with the same `$name` parameters (turned into psycopg's
`%(name)s` when read), so a caller never says which database it is on.

Every helper reads its result to the end: DuckDB 2 keeps a half-read result open on the
connection and refuses other work (`register`, the next transaction) until it is done.
Arrow tables a statement reads from are registered for exactly its duration with
`registered()`; the name it is registered under is the name the `.sql` file uses.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import re
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from . import pg_copy

SQL_DIR = Path(__file__).parent / "sql"
DUCKDB = "duckdb"
POSTGRESQL = "postgresql"
DIALECT_DIRS = {DUCKDB: SQL_DIR, POSTGRESQL: SQL_DIR / POSTGRESQL}
Connection = Any
"""A connection statements run on: DuckDB's, or psycopg's (bare, or in the PostgreSQL
store's `Session` and pooled wrappers, which say `hs_dialect`)."""
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def dialect(con: Any) -> str:
    """Which database a connection talks to: psycopg's (and the store's wrappers of them,
    which say so in `hs_dialect`) are PostgreSQL, the rest DuckDB."""
    said = getattr(type(con), "hs_dialect", None)
    if said is not None:
        return str(said)
    return POSTGRESQL if type(con).__module__.startswith("psycopg") else DUCKDB


@functools.cache
def text(name: str, dialect: str = DUCKDB) -> str:
    """The text of statement `name` for `dialect`, read once; an unknown name is a KeyError.

    A PostgreSQL connection reads `sql/postgresql/<name>.sql` where the two databases need
    different SQL, and the one shared `sql/<name>.sql` where they read it alike (most
    statements): a statement is written twice only where it must differ."""
    candidates = [SQL_DIR / f"{name}.sql"]
    if dialect == POSTGRESQL:
        candidates.insert(0, DIALECT_DIRS[POSTGRESQL] / f"{name}.sql")
    pg_root = DIALECT_DIRS[POSTGRESQL].resolve()
    for candidate in candidates:
        path = candidate.resolve()
        inside = SQL_DIR.resolve() in path.parents
        # A name never reaches into the other database's directory.
        foreign = dialect == DUCKDB and (path == pg_root or pg_root in path.parents)
        if inside and not foreign and path.is_file():
            break
    else:
        raise KeyError(f"no statement named {name!r} in {SQL_DIR} for {dialect}")
    sql = path.read_text(encoding="utf-8")
    if dialect == POSTGRESQL:
        # psycopg binds `%(name)s`, and a literal % must then be written %%. Comment lines
        # go first: psycopg would read a `$name` they mention as a parameter to bind.
        body = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
        sql = _PARAM.sub(r"%(\1)s", body.replace("%", "%%"))
    return sql


class Forwarded(abc.ABC):
    """A connection in another process: the judge worker's (`engine/worker.py`). A statement
    asked of it travels by name, with its parameters and the Arrow tables registered
    around it, to the collector, which runs it with these same helpers (`HELPERS`) on the
    judge's connection — DuckDB's or PostgreSQL's — and sends the result back."""

    def __init__(self) -> None:
        self.tables: dict[str, pa.Table] = {}
        """What `registered` holds now: it travels with each statement."""

    @abc.abstractmethod
    def statement(self, how: str, name: str, params: object) -> Any:
        """Run statement `name` as helper `how` (`rows`, `arrow`, …) would; its result.
        With `how` `run` it may return before the statement ran (a failure is reported
        by the next statement, or at the end of the call)."""

    @contextlib.contextmanager
    def holding(self, tables: Mapping[str, pa.Table]) -> Iterator[None]:
        before = self.tables
        self.tables = {**before, **tables}
        try:
            yield
        finally:
            self.tables = before


def _execute(con: Any, name: str, params: object) -> Any:
    if dialect(con) == POSTGRESQL:
        # Always through psycopg's placeholder pass, so the %% written for a literal %
        # reads as one whatever the parameters.
        return con.execute(text(name, POSTGRESQL), {} if params is None else params)
    return con.execute(text(name), params)


def run(con: Any, name: str, params: object = None) -> None:
    """Execute a statement for its effect (insert, upsert, delete).

    The judge worker's connection (`Forwarded`) sends it without waiting for it to run:
    the engine goes on judging while the collector writes, and a failure is reported by
    the next statement that returns rows, or at the end of the call."""
    if isinstance(con, Forwarded):
        con.statement("run", name, params)
        return
    cur = _execute(con, name, params)
    if dialect(con) == DUCKDB:
        cur.fetchall()


def rows(con: Any, name: str, params: object = None) -> list[tuple]:
    """Every row, as tuples."""
    if isinstance(con, Forwarded):
        return con.statement("rows", name, params)
    return _execute(con, name, params).fetchall()


def dicts(con: Any, name: str, params: object = None) -> list[dict[str, Any]]:
    """Every row, as dicts keyed by the statement's column names."""
    if isinstance(con, Forwarded):
        return con.statement("dicts", name, params)
    cur = _execute(con, name, params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def arrow(con: Any, name: str, params: object = None) -> pa.Table:
    """Every row, as one Arrow table."""
    if isinstance(con, Forwarded):
        return con.statement("arrow", name, params)
    if dialect(con) == POSTGRESQL:
        return _pg_arrow(_execute(con, name, params))
    return con.sql(text(name), params=params).to_arrow_table()


def numpy(con: Any, name: str, params: object = None) -> dict[str, np.ndarray]:
    """Every row, as one numpy array per column (without the pandas import that Arrow's
    `to_numpy` brings, a second of start-up)."""
    if isinstance(con, Forwarded):
        return con.statement("numpy", name, params)
    if dialect(con) == POSTGRESQL:
        table = _pg_arrow(_execute(con, name, params))
        return {f.name: np.asarray(table.column(f.name).to_pylist()) for f in table.schema}
    return con.execute(text(name), params).fetchnumpy()


HELPERS = {"run": run, "rows": rows, "dicts": dicts, "arrow": arrow, "numpy": numpy}
"""The helpers by name: how a statement forwarded from the judge worker is run."""

_ARROW_OF_PG = {
    # PostgreSQL type oids (pg_type) -> the Arrow type DuckDB would have given the column.
    16: pa.bool_(),
    20: pa.int64(),
    23: pa.int32(),
    25: pa.string(),
    1043: pa.string(),
    1009: pa.list_(pa.string()),
    1015: pa.list_(pa.string()),
    1082: pa.date32(),
    701: pa.float64(),  # double precision
    1700: pa.int64(),  # numeric: what sum() over bigint gives; our sums are integers
}


def _pg_arrow(cur: Any) -> pa.Table:
    # Typed from the result's description, not guessed from values: an empty result
    # still has its columns, and a column of NULLs still has its type.
    rows = cur.fetchall()
    fields = [pa.field(d.name, _ARROW_OF_PG.get(d.type_code, pa.string())) for d in cur.description]
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(fields)
    return pa.Table.from_arrays(
        [pa.array(col, type=f.type) for col, f in zip(columns, fields, strict=True)],
        schema=pa.schema(fields),
    )


@contextlib.contextmanager
def registered(con: Any, tables: Mapping[str, pa.Table]) -> Iterator[None]:
    """Arrow tables visible to statements under their names, for the `with` block only."""
    if isinstance(con, Forwarded):  # they travel with each statement
        with con.holding(tables):
            yield
        return
    if dialect(con) == POSTGRESQL:
        with _temp_tables(con, tables):
            yield
        return
    done: list[str] = []
    try:
        for name, table in tables.items():
            con.register(name, table)
            done.append(name)
        yield
    except BaseException:
        # A failed statement aborts DuckDB's transaction, which then refuses `unregister`
        # too: that refusal ("Current transaction is aborted") must not replace the error
        # that says what failed. A name left registered is replaced by its next use.
        for name in done:
            with contextlib.suppress(Exception):
                con.unregister(name)
        raise
    for name in done:
        con.unregister(name)


_PG_IN_ERROR = 3
"""psycopg.pq.TransactionStatus.INERROR, without importing psycopg where it is absent."""

PG_TYPES = {
    pa.string(): "text",
    pa.int64(): "bigint",
    pa.int32(): "integer",
    pa.bool_(): "boolean",
    pa.float64(): "double precision",
    pa.date32(): "date",
    pa.list_(pa.string()): "text[]",
}


_TEMP_SHAPES: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
"""Per PostgreSQL connection: the temporary tables it made, by name, with their columns."""


@contextlib.contextmanager
def _temp_tables(con: Any, tables: Mapping[str, pa.Table]) -> Iterator[None]:
    # PostgreSQL cannot read an Arrow table in place: each becomes a temporary table of
    # this session, filled with COPY (text, built column-wise: pg_copy.py), and emptied
    # when the block ends. The table is made once per session and kept: creating and
    # dropping one per statement costs two catalog writes each time (and bloats the
    # catalog of a server the collectors use for months); TRUNCATE leaves no dead rows
    # in it either (autovacuum never visits temporary tables).
    raw = getattr(con, "raw", con)
    shapes = _TEMP_SHAPES.setdefault(raw, {})
    filled: list[str] = []
    try:
        for name, table in tables.items():
            columns = ", ".join(f'"{f.name}" {PG_TYPES[f.type]}' for f in table.schema)
            if shapes.get(name) != columns:
                con.execute(f'DROP TABLE IF EXISTS pg_temp."{name}"')
                shapes.pop(name, None)
            # IF NOT EXISTS: a table made in a transaction that rolled back is gone again.
            con.execute(f'CREATE TEMP TABLE IF NOT EXISTS "{name}" ({columns})')
            shapes[name] = columns
            filled.append(name)
            if table.num_rows:
                with con.cursor().copy(f'COPY "{name}" FROM STDIN') as copy:
                    copy.write(pg_copy.copy_text(table))
        yield
    except BaseException:
        shapes.clear()  # what this transaction made may roll back with it
        raise
    finally:
        # In a failed transaction nothing more can run; the rollback that follows
        # undoes the rows with everything else the transaction did.
        if filled and con.info.transaction_status != _PG_IN_ERROR:
            con.execute("TRUNCATE " + ", ".join(f'pg_temp."{n}"' for n in filled))
