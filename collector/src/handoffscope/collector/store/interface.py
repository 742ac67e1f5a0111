"""What every store offers the collector: the DuckDB file and the shared PostgreSQL database.

The writer, the judges, the query API, the health metrics and the notifier hold a `Store`
and never ask which one it is; what differs is inside the two implementations
(`duckdb_store.DuckDBStore`, `postgres_store.PostgresStore`) and in the statements each
dialect reads (`statements`). Connections are typed loosely (`statements.Connection`): a
DuckDB connection, or a psycopg one behind the store's wrappers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import pyarrow as pa

from .statements import Connection


class Lease(Protocol):
    """Held by one process at a time among those sharing a store (`Store.lease`)."""

    def hold(self) -> bool:
        """Whether this process holds it now, taking it if free; cheap to call often."""

    def release(self) -> None: ...


class Store(Protocol):
    @property
    def path(self) -> Path | str:
        """The file, or the database URL without its password: for messages."""

    store_version: int
    version_before: int
    con: Connection
    """The writer thread's connection (`begin/commit/rollback`)."""

    def cursor(self) -> Connection:
        """A connection for one reader; close it when done."""

    def session(self) -> Connection:
        """A connection of its own with `begin/commit/rollback`, for the judge."""

    def insert_new_spans(self, incoming: pa.Table, commit_seq: int | None = None) -> pa.Table:
        """Insert the rows not stored yet (inside the writer's transaction); return them."""

    def lease(self, name: str) -> Lease:
        """The lease called `name`, for work one process at a time must do."""

    def next_commit_seq(self, after: int) -> int:
        """The number of the group commit being written (`after`: the writer's last)."""

    def add_drops(self, drops: Mapping[tuple[str, str], int]) -> None: ...

    def add_sources(self, sources: Mapping[tuple[str, str, str], int]) -> None:
        """Add spans per (service, scope, outcome) (`SpanBatch.sources`)."""

    def delete_expired(self, cutoff_ns: int) -> int: ...

    def max_commit_seq(self) -> int: ...

    def count_spans(self) -> int: ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def close(self) -> None: ...
