"""`Timeline.at` (verdicts/timeline.py) and the SQL `hs_verdict_at` read a stored timeline
the same way, in both dialects: the API's filters and aggregates (SQL) and the engine's
own reading (Python) agree on what a verdict is now.

Real engines: DuckDB in memory and a real PostgreSQL database (the `postgres_dsn` fixture
starts the server), each given the engine's own step 1 as shipped.
"""

from __future__ import annotations

import itertools
import random

import duckdb
import pytest

from handoffscope.collector.store.steps import ddl_dir
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.verdicts import Timeline

STEP = "0001_verdict_at.sql"


def timelines() -> list[Timeline]:
    """Every shape a timeline has: no flip, one, two; flips at equal and distinct instants."""
    rnd = random.Random(4)
    out = [Timeline(v) for v in sc.PRECEDENCE]
    for _ in range(300):
        t1 = rnd.randrange(-(2**40), 2**40)
        t2 = t1 + rnd.choice([0, 1, rnd.randrange(1, 2**30)])
        v0, v1, v2 = (rnd.choice(sc.PRECEDENCE) for _ in range(3))
        out.append(Timeline(v0, t1, v1))
        out.append(Timeline(v0, t1, v1, t2, v2))
    return out


def instants(tl: Timeline) -> list[int]:
    """Just before, at and after each flip, and far from them."""
    flips = [t for t in (tl.flip1_ns, tl.flip2_ns) if t is not None]
    return [-(2**62), 2**62, *itertools.chain.from_iterable((t - 1, t, t + 1) for t in flips)]


def cases() -> list[tuple[Timeline, int]]:
    return [(tl, now) for tl in timelines() for now in instants(tl)]


def test_duckdb_reads_a_timeline_as_python_does() -> None:
    con = duckdb.connect()
    con.execute((ddl_dir("engine") / STEP).read_text())
    rows = cases()
    con.execute(
        "CREATE TABLE t (i INTEGER, verdict VARCHAR, f1 BIGINT, v1 VARCHAR, f2 BIGINT, "
        "v2 VARCHAR, now BIGINT)"
    )
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(i, *tl, now) for i, (tl, now) in enumerate(rows)],
    )
    got = con.execute(
        "SELECT hs_verdict_at(verdict, f1, v1, f2, v2, now) FROM t ORDER BY i"
    ).fetchall()
    assert [g for (g,) in got] == [tl.at(now) for tl, now in rows]


def test_postgresql_reads_a_timeline_as_python_does(postgres_dsn: str) -> None:
    import psycopg

    rows = cases()
    with psycopg.connect(postgres_dsn, autocommit=True) as con:
        con.execute((ddl_dir("engine", "postgresql") / STEP).read_text())
        con.execute(
            "CREATE TEMP TABLE t (i integer, verdict text, f1 bigint, v1 text, f2 bigint, "
            "v2 text, now bigint)"
        )
        with con.cursor() as cur:
            cur.executemany(
                "INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [(i, *tl, now) for i, (tl, now) in enumerate(rows)],
            )
        got = con.execute(
            "SELECT hs_verdict_at(verdict, f1, v1, f2, v2, now) FROM t ORDER BY i"
        ).fetchall()
    assert [g for (g,) in got] == [tl.at(now) for tl, now in rows]


@pytest.mark.parametrize("tl", [Timeline(sc.IN_FLIGHT, 10, sc.DESTINATION_NOT_STARTED)])
def test_a_flip_holds_from_its_instant(tl: Timeline) -> None:
    assert (tl.at(9), tl.at(10)) == (sc.IN_FLIGHT, sc.DESTINATION_NOT_STARTED)
