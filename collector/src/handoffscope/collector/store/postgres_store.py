"""The PostgreSQL store: the same tables and the same contract as the DuckDB file, shared.

`--store postgresql://user@host:5432/db` points a collector here instead of at a DuckDB
file. Several collectors may share one database: each inserts and acknowledges after its
own commit, and a span two of them receive (or one receives twice) is stored once,
because the primary key (trace_id, span_id, start_ns) meets both inserts and the later
one skips the row (`sql/postgresql/insert_spans.sql`).

The statements are the DuckDB store's names in `sql/postgresql/` (`statements` picks the
directory by connection), and the schema steps are numbered in
`sql/postgresql/ddl/_order` exactly as the file's are. `spans` is partitioned by day of
`start_ns`, the partitions made on demand (`ddl/0005_span_days.sql`), so retention drops
whole days instead of deleting row by row.

Connections: `con` is the writer's `Session` (one transaction per group commit);
`session()` gives the judge one of its own (its lease is a lock held by that connection);
`cursor()` lends a reader an autocommit connection from a small pool, which sees the last
commit of any collector (READ COMMITTED). Arrow tables a statement reads are sent with binary COPY into
temporary tables (`statements.registered`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from handoffscope.instrumentation import semconv as sc

from . import statements
from .records import PARTITIONS
from .spans import drops_table, sources_table
from .steps import (
    SEMCONV_VERSION_KEY,
    STORE_VERSION_KEY,
    StoreError,
    apply_steps,
    ddl_dir,
    read_steps,
    require_steps,
)

log = logging.getLogger(__name__)

PG_DDL_DIR = ddl_dir("", statements.POSTGRESQL)
NS_PER_DAY = 86_400 * 10**9
POOL_SIZE = 8
"""Reader connections kept open between requests (the API's worker threads are 40 at most;
beyond this many at once, the extra ones are opened and closed)."""
CONNECT_TIMEOUT_S = 10
APPLICATION_NAME = "handoffscope-collector"
DAYS_SCHEMA = pa.schema([("day", pa.int64())])


def is_postgres(target: str | Path) -> bool:
    """Whether a `--store` value names a PostgreSQL database rather than a DuckDB file."""
    return str(target).startswith(("postgresql://", "postgres://"))


def _connect(dsn: str, *, autocommit: bool) -> Any:
    try:
        import psycopg
    except ImportError as exc:  # an optional dependency: say how to get it
        raise StoreError(
            "a postgresql:// store needs psycopg 3: pip install 'handoffscope-collector[postgresql]'"
        ) from exc
    try:
        return psycopg.connect(
            dsn,
            autocommit=autocommit,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name=APPLICATION_NAME,
        )
    except psycopg.OperationalError as exc:
        raise StoreError(f"cannot connect to PostgreSQL ({_redact(dsn)}): {exc}") from exc


def psycopg_error() -> type[Exception]:
    """psycopg's base error (imported late: psycopg is an optional dependency)."""
    import psycopg

    return psycopg.Error


def _redact(dsn: str) -> str:
    """The DSN without its password, for messages."""
    scheme, sep, rest = dsn.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at:
        return dsn
    user = creds.split(":", 1)[0]
    return f"{scheme}{sep}{user}@{host}"


class Session:
    """A psycopg connection with the `begin/commit/rollback` the writer and the judge call.

    psycopg opens a transaction implicitly at the first statement; `begin()` only makes
    sure none is left open from before. Everything else is the connection's own
    (`statements` sees `hs_dialect` and talks PostgreSQL to it).
    """

    hs_dialect = statements.POSTGRESQL

    def __init__(self, raw: Any, on_rollback: Any = None, reconnect: Any = None) -> None:
        self.raw = raw
        self._on_rollback = on_rollback
        self._reconnect = reconnect

    def begin(self) -> None:
        if self.raw.closed or self.raw.broken:
            # The server restarted or the network dropped: what this session had open is
            # gone with it (rolled back there), so a new session is all it takes.
            if self._reconnect is None:
                raise StoreError("the connection to PostgreSQL was lost")
            self.raw = self._reconnect()
            if self._on_rollback is not None:
                self._on_rollback()
        elif self.raw.info.transaction_status != 0:  # pq.TransactionStatus.IDLE
            self.rollback()

    def commit(self) -> None:
        self.raw.commit()

    def rollback(self) -> None:
        try:
            if not self.raw.closed:
                self.raw.rollback()
        except Exception:
            if not self.raw.broken:
                raise
            # A lost connection has nothing left to roll back: the server did it.
        finally:
            if self._on_rollback is not None:
                self._on_rollback()

    def execute(self, sql: str, params: object = None) -> Any:
        return self.raw.execute(sql, params)

    def close(self) -> None:
        self.raw.close()

    def __getattr__(self, name: str) -> Any:  # cursor(), info, transaction(), ...
        return getattr(self.raw, name)


class AdvisoryLease:
    """A named lease several collectors compete for: a session advisory lock held by a
    connection of its own, freed by PostgreSQL when the holder's session ends (`hold()`
    notices a lost connection and tries again on a new one)."""

    def __init__(self, dsn: str, name: str) -> None:
        self.dsn = dsn
        self.params = {"name": name}
        self._con: Any = None
        self.held = False

    def hold(self) -> bool:
        """Whether this process holds the lease now (taking it if it is free)."""
        try:
            if self._con is None or self._con.closed or self._con.broken:
                self.held = False
                self._con = _connect(self.dsn, autocommit=True)
            if self.held:
                statements.rows(self._con, "lease_alive")
            else:
                self.held = bool(statements.rows(self._con, "try_lease", self.params)[0][0])
        except Exception:
            log.debug("lease %s: connection lost", self.params["name"], exc_info=True)
            self.held = False
            if self._con is not None:
                self._con.close()
            self._con = None
        return self.held

    def release(self) -> None:
        if self._con is not None:
            self._con.close()  # the lock goes with the session
        self._con = None
        self.held = False


class _Pooled:
    """A reader's connection from the pool: `close()` gives it back instead of ending it."""

    hs_dialect = statements.POSTGRESQL

    def __init__(self, raw: Any, pool: _ReaderPool) -> None:
        self.raw = raw
        self._pool = pool

    def close(self) -> None:
        raw, self.raw = self.raw, None
        if raw is not None:
            self._pool.give_back(raw)

    def __getattr__(self, name: str) -> Any:
        if self.raw is None:
            raise StoreError("this connection went back to the pool")
        return getattr(self.raw, name)


def _answers(raw: Any) -> bool:
    """Whether a pooled connection still answers. A PostgreSQL restart (or a proxy's idle
    timeout) leaves pooled connections that look open until used, and the request that
    used one answered 500 (seen after a restart); one trivial round trip before lending
    it (tens of µs here) is what every request pays instead."""
    try:
        statements.rows(raw, "lease_alive")
        return True
    except Exception:
        return False


class _ReaderPool:
    """Autocommit connections for readers, kept for the next one: a new connection costs
    a round trip, a TLS handshake on a managed database and a backend process (several
    ms), which every API request and health read would otherwise pay."""

    def __init__(self, dsn: str, keep: int) -> None:
        self.dsn = dsn
        self.keep = keep
        self._idle: list[tuple[Any, float]] = []
        """Connections put back, with when (monotonic)."""
        self._lock = threading.Lock()
        self.closed = False

    def take(self) -> _Pooled:
        while True:
            with self._lock:
                if self.closed:
                    raise StoreError("store is closed")
                idle = self._idle.pop() if self._idle else None
            if idle is None:
                raw = _connect(self.dsn, autocommit=True)
                # Never server-side prepared: the query API's statements are written with
                # optional filters (`$service IS NULL OR service = $service`, a CASE per
                # sort order) that only a plan made for the bound values folds away.
                # psycopg prepares a statement after its 5th use, and PostgreSQL then
                # settles on a generic plan that keeps every branch: the runs page of a
                # 30-day window went from 0.1 s to 3.3 s that way (bench_scale_out.py,
                # EXPLAIN via auto_explain). Unprepared, a statement is planned for its
                # values each time (~1 ms).
                raw.prepare_threshold = None
                return _Pooled(raw, self)
            raw, _ = idle
            if _answers(raw):
                return _Pooled(raw, self)
            raw.close()  # the server restarted, or dropped it: try the next one

    def give_back(self, raw: Any) -> None:
        # Only a clean, idle connection is kept: one broken by a restart of the server,
        # or left in a transaction by a failed statement, is closed instead.
        healthy = not raw.closed and raw.info.transaction_status == 0
        with self._lock:
            if healthy and not self.closed and len(self._idle) < self.keep:
                self._idle.append((raw, time.monotonic()))
                return
        raw.close()

    def close(self) -> None:
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
        for raw, _ in idle:
            raw.close()


class PostgresStore:
    """A PostgreSQL database several collectors share. Same surface as `DuckDBStore`."""

    def __init__(
        self,
        dsn: str,
        *,
        retention_days: float = 0.0,
        pool_size: int = POOL_SIZE,
        read_only: bool = False,
    ) -> None:
        """Connect and bring the schema up to date; with `read_only` (`handoffscope api`),
        change nothing and refuse a schema that is not current."""
        self.path = _redact(dsn)
        self.dsn = dsn
        self.retention_days = retention_days
        self._days: set[int] = set()
        self.con = Session(
            _connect(dsn, autocommit=False),
            on_rollback=self._days.clear,
            reconnect=lambda: _connect(dsn, autocommit=False),
        )
        """The writer's session: one transaction per group commit."""
        try:
            if read_only:
                self.store_version = require_steps(
                    self.con, read_steps(PG_DDL_DIR), STORE_VERSION_KEY
                )
                self.version_before = self.store_version
            else:
                self.version_before, self.store_version = apply_steps(
                    self.con, read_steps(PG_DDL_DIR), STORE_VERSION_KEY
                )
                statements.run(
                    self.con,
                    "set_meta",
                    {"key": SEMCONV_VERSION_KEY, "value": str(sc.SCHEMA_VERSION)},
                )
            self.con.commit()
        except psycopg_error() as exc:
            self.con.close()
            raise StoreError(f"cannot prepare the PostgreSQL schema: {exc}") from exc
        except BaseException:
            self.con.close()
            raise
        if read_only:
            # Nothing writes through it: kept open, it was one idle backend per `handoffscope
            # api` process for as long as the process ran (PostgreSQL's max_connections is
            # shared by every collector and API process: docs/scale-out.md, "Connections per
            # collector").
            self.con.close()
        self._pool = _ReaderPool(dsn, pool_size)
        self._closed = False

    # readers ---------------------------------------------------------------------------

    def cursor(self) -> Any:
        """A connection for one reader (autocommit, from the pool); close it when done."""
        if self._closed:
            raise StoreError("store is closed")
        return self._pool.take()

    def session(self) -> Session:
        """A connection of its own with `begin/commit/rollback`, for a second writer (the
        judge, whose lease is held by this very connection)."""
        if self._closed:
            raise StoreError("store is closed")
        # No reconnect behind its back: the judge's lease lives and dies with this very
        # connection, so the judge must see it lost (leased_judge.py) and take it again.
        return Session(_connect(self.dsn, autocommit=False))

    # writer (from the writer thread, inside its transaction) -------------------------

    def insert_new_spans(self, incoming: pa.Table, commit_seq: int | None = None) -> pa.Table:
        """Insert the rows of `incoming` not stored yet; return exactly those rows."""
        if incoming.num_rows == 0:
            return incoming
        raw = self.con.raw
        days = set(pc.unique(pc.divide(incoming.column("start_ns"), NS_PER_DAY)).to_pylist())
        missing = days - self._days
        if missing:
            oldest = self._oldest_day()
            table = pa.table({"day": pa.array(sorted(missing), pa.int64())}, schema=DAYS_SCHEMA)
            with statements.registered(raw, {"incoming_days": table}):
                statements.rows(raw, "ensure_span_days", {"oldest_day": oldest})
            # Forgotten on rollback (Session), which undoes the CREATEs too.
            self._days |= {d for d in missing if d >= oldest}
        with statements.registered(raw, {"new_spans": incoming}):
            stored = statements.rows(raw, "insert_spans", {"commit_seq": commit_seq})
        if stored and commit_seq is not None:
            work = {
                "commit_seq": commit_seq,
                "spans": len(stored),
                "now": time.time_ns(),
                "partitions": PARTITIONS,  # listed once for each judge partition
            }
            statements.run(raw, "add_judge_work", work)
        if len(stored) == incoming.num_rows:
            return incoming
        keys = pa.array([trace + span for trace, span in stored], pa.string())
        joined = pc.binary_join_element_wise(
            incoming.column("trace_id"), incoming.column("span_id"), ""
        )
        return incoming.filter(pc.is_in(joined, value_set=keys))

    def lease(self, name: str) -> AdvisoryLease:
        """A lease one collector at a time holds (the notifier's: one sender of each event)."""
        return AdvisoryLease(self.dsn, name)

    def next_commit_seq(self, after: int = 0) -> int:
        """A number for the group commit being written, unique across collectors (from one
        sequence: `after`, the writer's last, does not matter here)."""
        return int(statements.rows(self.con.raw, "next_commit_seq")[0][0])

    def _oldest_day(self) -> int:
        """Days before this go to spans_old: retention would delete them at once anyway."""
        if not self.retention_days:
            return -(2**62)
        return (time.time_ns() - int(self.retention_days * NS_PER_DAY)) // NS_PER_DAY - 1

    def add_drops(self, drops: Mapping[tuple[str, str], int]) -> None:
        if drops:
            with statements.registered(self.con.raw, {"new_drops": drops_table(drops)}):
                statements.run(self.con.raw, "upsert_drops")

    def add_sources(self, sources: Mapping[tuple[str, str, str], int]) -> None:
        if sources:
            table = sources_table(sources, time.time_ns())
            with statements.registered(self.con.raw, {"new_sources": table}):
                statements.run(self.con.raw, "upsert_sources")

    def delete_expired(self, cutoff_ns: int) -> int:
        """Delete spans that ended before `cutoff_ns`, drop emptied days; return how many."""
        deleted = int(
            statements.rows(self.con.raw, "delete_expired_spans", {"cutoff": cutoff_ns})[0][0]
        )
        statements.rows(self.con.raw, "drop_empty_span_days", {"cutoff": cutoff_ns})
        self._days.clear()
        return deleted

    def max_commit_seq(self) -> int:
        return int(self._read_one("max_commit_seq"))

    def count_spans(self) -> int:
        return int(self._read_one("count_spans"))

    def set_meta(self, key: str, value: str) -> None:
        """Stamp one fact in meta (inside the writer's transaction, when there is one)."""
        statements.run(self.con.raw, "set_meta", {"key": key, "value": value})

    def get_meta(self, key: str) -> str | None:
        con = self.cursor()
        try:
            found = statements.rows(con, "get_meta", {"key": key})
        finally:
            con.close()
        return found[0][0] if found else None

    def _read_one(self, name: str) -> Any:
        con = self.cursor()
        try:
            return statements.rows(con, name)[0][0]
        finally:
            con.close()

    # lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the writer's connection (an open transaction rolls back). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._pool.close()
        self.con.close()
