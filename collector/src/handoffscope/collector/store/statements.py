"""Every statement the collector runs, asked for by name: the one door to `sql/`.

A name is the `.sql` file's path under `sql/` without the suffix: `"query/runs"`,
`"engine/insert_handoffs"`, `"count_spans"`. The engine, the judge, the query API, the
health metrics and the notifier never hold SQL text; they ask here, on a connection or
cursor the store gave them (`DuckDBStore.con` for the writer thread, `store.cursor()`
for everyone else). This is the seam another backend replaces.

Every helper reads its result to the end: DuckDB 2 keeps a half-read result open on the
connection and refuses other work (`register`, the next transaction) until it is done.
Arrow tables a statement reads from are registered for exactly its duration with
`registered()`; the name it is registered under is the name the `.sql` file uses.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

SQL_DIR = Path(__file__).parent / "sql"


@functools.cache
def text(name: str) -> str:
    """The text of `sql/<name>.sql`, read once; an unknown name is a KeyError, not a path."""
    path = (SQL_DIR / f"{name}.sql").resolve()
    if SQL_DIR.resolve() not in path.parents or not path.is_file():
        raise KeyError(f"no statement named {name!r} in {SQL_DIR}")
    return path.read_text(encoding="utf-8")


def run(con: Any, name: str, params: object = None) -> None:
    """Execute a statement for its effect (insert, upsert, delete)."""
    con.execute(text(name), params).fetchall()


def rows(con: Any, name: str, params: object = None) -> list[tuple]:
    """Every row, as tuples."""
    return con.execute(text(name), params).fetchall()


def dicts(con: Any, name: str, params: object = None) -> list[dict[str, Any]]:
    """Every row, as dicts keyed by the statement's column names."""
    cur = con.execute(text(name), params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def arrow(con: Any, name: str, params: object = None) -> pa.Table:
    """Every row, as one Arrow table."""
    return con.sql(text(name), params=params).to_arrow_table()


def numpy(con: Any, name: str, params: object = None) -> dict[str, np.ndarray]:
    """Every row, as one numpy array per column (without the pandas import that Arrow's
    `to_numpy` brings, a second of start-up)."""
    return con.execute(text(name), params).fetchnumpy()


@contextlib.contextmanager
def registered(con: Any, tables: Mapping[str, pa.Table]) -> Iterator[None]:
    """Arrow tables visible to statements under their names, for the `with` block only."""
    done: list[str] = []
    try:
        for name, table in tables.items():
            con.register(name, table)
            done.append(name)
        yield
    finally:
        for name in done:
            con.unregister(name)
