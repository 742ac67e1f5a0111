"""`verdicts.continuity` (the definition) and the SQL `hs_continuity` the query API reads
conversations with say the same of every combination, in both dialects.

Real engines: DuckDB in memory and a real PostgreSQL database (the `postgres_dsn` fixture
starts the server), each given the function as the engine's step ships it.
"""

from __future__ import annotations

import itertools

import duckdb

from handoffscope.collector.store.steps import ddl_dir
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.verdicts import continuity

DUCKDB_STEP = "0024_turns_services.sql"
POSTGRESQL_STEP = "0017_turns_services.sql"
AGENTS = (None, "triage", "refund", "billing")


def cases() -> list[tuple]:
    """Every (has_previous, previous_final, start, first_to, start_is_entry) over 4 names."""
    return list(itertools.product((False, True), AGENTS, AGENTS, AGENTS, (False, True)))


def function_sql(path) -> str:
    """The one statement of the step that creates hs_continuity."""
    statements = path.read_text().split(";\n")
    (found,) = (s for s in statements if "hs_continuity(" in s and "CREATE" in s)
    return found


def test_the_definition_covers_the_four_continuities() -> None:
    got = {continuity(*c) for c in cases()}
    assert got == {*sc.CONTINUITIES, None}
    # The seed's case: back through triage to the agent that already held the work.
    assert continuity(True, "refund", "triage", "refund", True) == sc.CONTINUITY_REROUTED
    assert continuity(True, "refund", "refund", None, False) == sc.CONTINUITY_CONTINUED
    assert continuity(True, "refund", "billing", None, False) == sc.CONTINUITY_DIVERTED
    assert continuity(True, "refund", "triage", "billing", True) == sc.CONTINUITY_CONTINUED
    assert continuity(False, None, "billing", None, False) == sc.CONTINUITY_FIRST


def test_duckdb_tells_continuity_as_python_does() -> None:
    con = duckdb.connect()
    con.execute(function_sql(ddl_dir("engine") / DUCKDB_STEP))
    rows = cases()
    con.execute(
        "CREATE TABLE t (i INTEGER, p BOOLEAN, pf VARCHAR, s VARCHAR, f VARCHAR, e BOOLEAN)"
    )
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", [(i, *c) for i, c in enumerate(rows)]
    )
    got = con.execute("SELECT hs_continuity(p, pf, s, f, e) FROM t ORDER BY i").fetchall()
    assert [g for (g,) in got] == [continuity(*c) for c in rows]


def test_postgresql_tells_continuity_as_python_does(postgres_dsn: str) -> None:
    import psycopg

    rows = cases()
    with psycopg.connect(postgres_dsn, autocommit=True) as con:
        con.execute(function_sql(ddl_dir("engine", "postgresql") / POSTGRESQL_STEP))
        con.execute(
            "CREATE TEMP TABLE t (i integer, p boolean, pf text, s text, f text, e boolean)"
        )
        with con.cursor() as cur:
            cur.executemany(
                "INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)",
                [(i, *c) for i, c in enumerate(rows)],
            )
        got = con.execute("SELECT hs_continuity(p, pf, s, f, e) FROM t ORDER BY i").fetchall()
    assert [g for (g,) in got] == [continuity(*c) for c in rows]
