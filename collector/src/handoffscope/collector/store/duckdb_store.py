"""The DuckDB file: schema steps, bulk inserts, retention, and cursors for readers.

One collector process owns one file. DuckDB is single-writer across processes (while the
collector holds the file read-write, no other process can open it, not even read-only),
so everything outside this process reads through the query API. Inside the process, the
writer thread uses `DuckDBStore.con` and is the only writer of every table but one;
readers (the query API, the health endpoints) take `store.cursor()`, a connection of
their own to the same database, and see the last committed state (DuckDB's MVCC). The
exception is `notifications`, which the notifier thread alone writes through a cursor of
its own (never inside the writer's transaction; the writer never touches that table, so
the two never conflict).

Tables (DDL in `sql/ddl/`, applied in the order of `sql/ddl/_order`):

- `spans`: one row per accepted evidence span; fixed columns plus ONE typed column per
  contract attribute (`semconv.ATTRIBUTES`, '.' -> '_'). See `sql/ddl/0002_spans.sql`.
- `drops`: attributes the allowlist removed, counted per (service, attribute name).
- `sources`: every span received, counted per (service, instrumentation scope, outcome).
- `notifications`: what the notifier sent (or will resend) per event and destination,
  so a restart does not send twice (`sql/ddl/0007_notifications.sql`, docs/alerts.md).
- `meta`: `store_version` and `semconv_version` stamps.

Versions and upgrades (docs/storage.md): every DDL file is a numbered step
(`0003_drops.sql` is step 3). A fresh file gets all steps; an older file gets the steps
after its `store_version`, each in its own transaction with the new version stamped in
the same transaction, so a crash mid-upgrade leaves the file at a consistent version.
A file stamped newer than this code knows is refused rather than guessed at.

Writes are Arrow tables registered on the connection and inserted with one statement
(≈200–400k rows/s here; `executemany` manages ≈1k rows/s). Every query is a `.sql` file
in `sql/`, one statement each, parameters bound, run through `statements` by name; the
rows of the derived tables are the records of `records.py`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from handoffscope.instrumentation import semconv as sc

from . import statements
from .spans import drops_table, sources_table, span_keys
from .steps import SEMCONV_VERSION_KEY, STORE_VERSION_KEY, ddl_dir, require_steps
from .steps import Step as Step
from .steps import StoreError as StoreError
from .steps import apply_steps as apply_steps
from .steps import read_steps as read_steps

log = logging.getLogger(__name__)

SQL_DIR = statements.SQL_DIR
DDL_DIR = ddl_dir()
ENGINE_DDL_DIR = ddl_dir("engine")
"""The health engine's own numbered steps (its tables, under `meta.engine_version`)."""

CHECKPOINT_THRESHOLD = "16MB"
"""WAL size that triggers an automatic checkpoint (DuckDB's default, set here on purpose).

Until a checkpoint, DuckDB holds what was appended since the last one in memory, inside
`--memory-limit`. With 64 MB, while ingesting at ten million handoffs that data grew to
≈ 140 MB (`duckdb_memory()`: IN_MEMORY_TABLE) of the 160 MB limit and left the query
cache ≈ 3 MB. With 16 MB it stays small, so the same queries keep their cache in a
smaller limit (config.py `memory_limit`). Checkpoints are more frequent; each rewrites
the table's last, partly filled row group, which costs commit time. A/B, 16 MB vs 64 MB,
three rounds each, bench_receiver's load: the default (ingest log on, loads behind the
answer) 33.7k vs 33.1k spans/s (no difference); `--ingest-log off` (a commit per
answer) 21.5k vs 24.5k (-12%)."""
# --- schema steps: steps.py (shared with PostgreSQL); re-exported for the store's users ---


class SoleLease:
    held = True

    def hold(self) -> bool:
        return True

    def release(self) -> None:
        pass


# --- the store --------------------------------------------------------------------------


class DuckDBStore:
    """The collector's DuckDB file. `con` belongs to the writer thread; readers use `cursor()`."""

    def __init__(
        self, path: str | Path, *, memory_limit: str | None = None, read_only: bool = False
    ) -> None:
        """Open (creating if absent) and upgrade the file; with `read_only`, open an existing
        file without changing it (`handoffscope api`), refused unless its schema is current."""
        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.is_file():
            raise StoreError(f"{self.path} does not exist (a collector creates it)")
        config: dict[str, str | bool | int | float | list[str]] = {
            "checkpoint_threshold": CHECKPOINT_THRESHOLD
        }
        if memory_limit:
            config["memory_limit"] = memory_limit
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only, config=config)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreError(
                    f"{self.path} is in use by another process (DuckDB allows one writer per "
                    f"file; the collector must own it). Stop the other process or use "
                    f"another --db. DuckDB said: {exc}"
                ) from exc
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            if read_only:
                self.store_version = require_steps(self.con, read_steps(), STORE_VERSION_KEY)
                self.version_before = self.store_version
            else:
                self.version_before, self.store_version = apply_steps(
                    self.con, read_steps(), STORE_VERSION_KEY
                )
                statements.run(
                    self.con,
                    "set_meta",
                    {"key": SEMCONV_VERSION_KEY, "value": str(sc.SCHEMA_VERSION)},
                )
        except Exception:
            self.con.close()
            raise
        self._max_start_ns: int | None = statements.rows(self.con, "max_start_ns")[0][0]
        # Readers derive their connections from this one, created here (in the opening
        # thread) and guarded by a lock, because the writer thread may be mid-statement
        # on `con` whenever a reader asks for a cursor.
        self._reader_root = self.con.cursor()
        self._reader_lock = threading.Lock()
        self._closed = False

    # readers -------------------------------------------------------------------------

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A fresh connection to the same database for one reader; close it when done."""
        with self._reader_lock:
            if self._closed:
                raise StoreError("store is closed")
            return self._reader_root.cursor()

    def session(self) -> duckdb.DuckDBPyConnection:
        """A connection of its own with `begin/commit/rollback`, for a second writer
        thread (the judge). Make it in the thread that opened the store."""
        return self.con.cursor()

    # writer (call from the writer thread, inside its transaction) --------------------

    def insert_new_spans(self, incoming: pa.Table, commit_seq: int | None = None) -> pa.Table:
        """Insert the rows of `incoming` not stored yet; return exactly those rows.

        `incoming` must be free of duplicates within itself (the writer sees to that).
        `commit_seq` numbers the group commit, for the judge (store step 8).
        """
        if incoming.num_rows == 0:
            return incoming
        con = self.con
        starts = incoming.column("start_ns")
        latest = pc.max(starts).as_py()
        # Only spans starting no later than anything stored can be copies (a copy keeps
        # its start time); usually few or none, and then the lookup is skipped.
        if self._max_start_ns is None:
            candidates = incoming.slice(0, 0)
        elif latest <= self._max_start_ns:
            candidates = incoming
        else:
            candidates = incoming.filter(pc.less_equal(starts, self._max_start_ns))
        stored: list[tuple] = []
        if candidates.num_rows:
            cstarts = candidates.column("start_ns")
            bounds = {"lo": pc.min(cstarts).as_py(), "hi": pc.max(cstarts).as_py()}
            keys = candidates.select(["trace_id", "span_id"])
            with statements.registered(con, {"incoming_keys": keys}):
                stored = statements.rows(con, "select_stored_keys", bounds)
        # Raised before commit: if the transaction fails, the bound is merely loose
        # (more lookups), never too tight.
        self._max_start_ns = max(latest, self._max_start_ns or latest)
        new = incoming
        if stored:
            stored_keys = pa.array([trace + span for trace, span in stored], pa.string())
            new = incoming.filter(pc.invert(pc.is_in(span_keys(incoming), value_set=stored_keys)))
        if new.num_rows:
            with statements.registered(con, {"new_spans": new}):
                statements.run(con, "insert_spans", {"commit_seq": commit_seq})
        return new

    def lease(self, name: str) -> SoleLease:
        """A lease among the processes sharing this store: one owns the file, so it is
        always this one (PostgreSQL's collectors compete for theirs)."""
        return SoleLease()

    def next_commit_seq(self, after: int) -> int:
        """The number of the group commit being written: the one writer counts on from
        its last (`after`); PostgreSQL's collectors share a sequence instead."""
        return after + 1

    def add_drops(self, drops: Mapping[tuple[str, str], int]) -> None:
        if drops:
            with statements.registered(self.con, {"new_drops": drops_table(drops)}):
                statements.run(self.con, "upsert_drops")

    def add_sources(self, sources: Mapping[tuple[str, str, str], int]) -> None:
        if sources:
            table = sources_table(sources, time.time_ns())
            with statements.registered(self.con, {"new_sources": table}):
                statements.run(self.con, "upsert_sources")

    def delete_expired(self, cutoff_ns: int) -> int:
        """Delete spans that ended before `cutoff_ns`; return how many."""
        return int(statements.rows(self.con, "delete_expired_spans", {"cutoff": cutoff_ns})[0][0])

    def max_commit_seq(self) -> int:
        """The newest group commit number in the file (0: none yet)."""
        return int(statements.rows(self.con, "max_commit_seq")[0][0])

    def commit_sizes(self, after: int, limit: int, con: Any = None) -> dict[int, int]:
        """Spans per group commit after `after` (the oldest `limit` commits), read on `con`
        (default: the writer's connection)."""
        rows = statements.rows(con or self.con, "commit_sizes", {"after": after, "limit": limit})
        return {int(seq): int(n) for seq, n in rows}

    def count_spans(self) -> int:
        return int(statements.rows(self.con, "count_spans")[0][0])

    def get_meta(self, key: str) -> str | None:
        rows = statements.rows(self.con, "get_meta", {"key": key})
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Stamp one fact in meta (inside the writer's transaction, when there is one)."""
        statements.run(self.con, "set_meta", {"key": key, "value": value})

    # lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Checkpoint (fold the WAL into the file) and close. Idempotent."""
        with self._reader_lock:
            if self._closed:
                return
            self._closed = True
        try:
            if not self.read_only:
                self.con.checkpoint()
        finally:
            self._reader_root.close()
            self.con.close()
