"""Numbered schema steps, for either database: read them, apply the ones a store lacks.

Every DDL file is a numbered step (`0003_drops.sql` is step 3) listed in its directory's
`_order`. The store's steps live in `sql/ddl/`, the health engine's in `sql/engine/ddl/`
(own version key), and PostgreSQL's in the same places under `sql/postgresql/`
(`ddl_dir`). A fresh database gets every step; an older one the steps after its version,
each in its own transaction together with its version stamp, so a crash mid-upgrade
leaves a consistent version. A database stamped newer than this code knows is refused
rather than guessed at.

On PostgreSQL several collectors may start at once on a fresh database; the steps run
under a session advisory lock (`lock_schema.sql`), so step 1 is applied once and the
others find it done.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import statements

log = logging.getLogger(__name__)

SCHEMA_LOCK = "handoffscope.schema"
"""Advisory lock (PostgreSQL) held while schema steps run."""


STORE_VERSION_KEY = "store_version"
"""`meta` key of the store's schema step (the DDL steps applied)."""
SEMCONV_VERSION_KEY = "semconv_version"
"""`meta` key of the contract version the store was written under."""


class StoreError(RuntimeError):
    """The store cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Step:
    version: int
    file: str
    sql: str


def ddl_dir(part: str = "", dialect: str = statements.DUCKDB) -> Path:
    """Where the steps of `part` ("" for the store, "engine" for the health engine) live."""
    base = statements.DIALECT_DIRS[dialect]
    return (base / part if part else base) / "ddl"


def read_steps(directory: Path | None = None) -> list[Step]:
    """The numbered DDL steps listed in `<directory>/_order`, checked to be 1, 2, 3, ..."""
    directory = directory or ddl_dir()
    steps = []
    for line in (directory / "_order").read_text(encoding="utf-8").splitlines():
        file = line.strip()
        if not file or file.startswith("#"):
            continue
        version = int(file.split("_", 1)[0])
        steps.append(Step(version, file, (directory / file).read_text(encoding="utf-8")))
    expected = list(range(1, len(steps) + 1))
    if [s.version for s in steps] != expected:
        raise StoreError(
            f"{directory}/_order must number its steps 1..N, got {[s.file for s in steps]}"
        )
    return steps


def apply_steps(
    con: Any,
    steps: list[Step],
    version_key: str,
    *,
    what: str = "store",
    then: Callable[[Any], object] | None = None,
) -> tuple[int, int]:
    """Bring `con`'s database up to the last of `steps`; return (version before, after).

    `con` has `begin/commit/rollback` (a DuckDB connection, or a PostgreSQL `Session`).
    The version lives in `meta` under `version_key`: the store uses `store_version`; a
    part with its own tables (the health engine) keeps its own key. `then(con)` runs
    last, still under PostgreSQL's schema lock: work a step asked for that must be done
    once however many collectors start (engine/turns.py, `rebuild_if_asked`).
    """
    shared = statements.dialect(con) == statements.POSTGRESQL
    if shared:
        statements.rows(con, "lock_schema", {"name": SCHEMA_LOCK})
        con.commit()
    try:
        current = 0
        if statements.rows(con, "table_exists", {"name": "meta"})[0][0]:
            rows = statements.rows(con, "get_meta", {"key": version_key})
            current = int(rows[0][0]) if rows else 0
        latest = steps[-1].version if steps else 0
        if current > latest:
            where = "database" if shared else "file"
            raise StoreError(
                f"this {where}'s {what} schema is at version {current}, newer than this "
                f"handoffscope knows ({latest}); upgrade handoffscope or use another {where}"
            )
        for step in steps:
            if step.version <= current:
                continue
            con.begin()
            try:
                # A step is DDL read from its numbered file, not a named statement; it may
                # hold several statements (no parameters, so PostgreSQL takes them too).
                con.execute(step.sql)
                statements.run(con, "set_meta", {"key": version_key, "value": str(step.version)})
                con.commit()
            except Exception:
                con.rollback()
                raise
            # One line per step at debug: a new file applies every step at once, and 30
            # lines of them buried the line that says where the collector listens.
            log.debug("%s schema step %s applied", what, step.file)
        if latest > current:
            log.info("%s schema: steps %d to %d applied", what, current + 1, latest)
        if then is not None:
            then(con)
        return current, max(current, latest)
    finally:
        if shared:
            con.rollback()
            statements.rows(con, "unlock_schema", {"name": SCHEMA_LOCK})
            con.commit()


def require_steps(con: Any, steps: list[Step], version_key: str, *, what: str = "store") -> int:
    """For a reader that must not change the schema: the version, if it is exactly the
    last of `steps`; otherwise a StoreError saying what to do."""
    current = 0
    if statements.rows(con, "table_exists", {"name": "meta"})[0][0]:
        rows = statements.rows(con, "get_meta", {"key": version_key})
        current = int(rows[0][0]) if rows else 0
    latest = steps[-1].version if steps else 0
    if current == 0:
        raise StoreError(
            f"no handoffscope {what} here yet: start a collector on it first (it creates the schema)"
        )
    if current != latest:
        newer = "newer" if current > latest else "older"
        raise StoreError(
            f"the {what} schema here is at version {current}, {newer} than this handoffscope "
            f"reads ({latest}): run the same handoffscope version as the collectors"
        )
    return current
