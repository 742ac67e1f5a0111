"""The judges of a shared store share the runs' partitions (engine/leased_judge.py), on a
real PostgreSQL: a judge that joins gets its fair share from one that held them all, the
two hold disjoint sets that cover every partition, each judges only its runs, and
together they judge every run exactly once; a database from before partitions keeps its
unjudged commits, listed for every partition.

The two-collector, SIGKILL-during-ingest version is tests/collector/test_scale_out.py.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from support.polling import eventually

from handoffscope.collector.engine import HealthEngine
from handoffscope.collector.engine.leased_judge import LeasedJudge
from handoffscope.collector.store import statements
from handoffscope.collector.store.postgres_store import PG_DDL_DIR, PostgresStore
from handoffscope.collector.store.records import PARTITIONS, partition_of
from handoffscope.collector.store.spans import ATTRIBUTE_COLUMNS, SPAN_SCHEMA, build_spans_table
from handoffscope.collector.store.steps import apply_steps, read_steps
from handoffscope.instrumentation import semconv as sc

pytestmark = pytest.mark.duckdb_only(
    "it makes its own PostgreSQL database (postgres_dsn) whatever --store is"
)
RUNS = 64


def requests(run_ids: list[str], now: int) -> pa.Table:
    """One handoff.request span per run, as the allowlist would hand them to the writer."""
    columns: dict[str, list] = {f.name: [] for f in SPAN_SCHEMA}
    for i, run_id in enumerate(run_ids):
        row = dict.fromkeys(columns)
        row.update(
            trace_id=f"{i + 1:032x}",
            span_id=f"{i + 1:016x}",
            name=sc.SPAN_REQUEST,
            service="partitions-app",
            start_ns=now,
            end_ns=now + 1,
            received_ns=now,
        )
        row[ATTRIBUTE_COLUMNS[sc.RUN_ID]] = run_id
        row[ATTRIBUTE_COLUMNS[sc.HANDOFF_ID]] = "h1"
        row[ATTRIBUTE_COLUMNS[sc.FROM_AGENT]] = "triage"
        row[ATTRIBUTE_COLUMNS[sc.TO_AGENT]] = "billing"
        for name, value in row.items():
            columns[name].append(value)
    return build_spans_table(columns)


def commit(store: PostgresStore, table: pa.Table) -> None:
    store.con.begin()
    store.insert_new_spans(table, commit_seq=store.next_commit_seq())
    store.con.commit()


def judged_runs(dsn: str) -> dict[str, int]:
    store = PostgresStore(dsn)
    cur = store.cursor()
    try:
        return dict(cur.execute("SELECT run_id, count(*) FROM runs GROUP BY 1").fetchall())
    finally:
        cur.close()
        store.close()


def test_a_judge_that_joins_gets_its_share_and_every_run_is_judged_once(postgres_dsn) -> None:
    writer = PostgresStore(postgres_dsn)
    HealthEngine().install(writer.con)
    writer.con.commit()
    runs = [f"part-run-{i}" for i in range(RUNS)]
    assert len({partition_of(r) for r in runs}) > PARTITIONS // 2  # spread over many
    commit(writer, requests(runs, time.time_ns()))
    first = LeasedJudge(PostgresStore(postgres_dsn), HealthEngine)
    second = LeasedJudge(PostgresStore(postgres_dsn), HealthEngine)
    try:
        first._balance()  # alone: every partition
        assert first.parts == frozenset(range(PARTITIONS))
        second._balance()  # joins: counted, but every partition is taken
        assert second.joined and not second.parts
        first._balance()  # two judges now: it gives half back
        second._balance()  # and the newcomer takes them
        assert len(first.parts) == len(second.parts) == PARTITIONS // 2
        assert first.parts.isdisjoint(second.parts)
        # Each judges the commit for its own partitions only.
        while second._step():
            pass
        mine = judged_runs(postgres_dsn)
        assert set(mine) == {r for r in runs if partition_of(r) in second.parts}
        while first._step():
            pass
        assert judged_runs(postgres_dsn) == dict.fromkeys(runs, 1)
        cur = first.store.cursor()
        assert statements.rows(cur, "judge_backlog")[0][0] == 0
        cur.close()
    finally:
        first.close()
        second.close()
        writer.close()


def test_a_judge_that_leaves_hands_its_partitions_over(postgres_dsn) -> None:
    writer = PostgresStore(postgres_dsn)
    HealthEngine().install(writer.con)
    writer.con.commit()
    stays = LeasedJudge(PostgresStore(postgres_dsn), HealthEngine)
    leaves = LeasedJudge(PostgresStore(postgres_dsn), HealthEngine)
    try:
        leaves._balance()
        stays._balance()
        leaves._balance()
        stays._balance()
        assert len(stays.parts) == len(leaves.parts) == PARTITIONS // 2
        runs = [f"left-run-{i}" for i in range(RUNS)]
        commit(writer, requests(runs, time.time_ns()))
        leaves.close()  # a clean stop: its partitions and its membership go back
        eventually(
            lambda: (stays._balance(), len(stays.parts))[1],
            lambda n: n == PARTITIONS,
            what="the partitions handed over",
        )
        while stays._step():
            pass
        assert judged_runs(postgres_dsn) == dict.fromkeys(runs, 1)
    finally:
        stays.close()
        writer.close()


def test_a_database_from_before_partitions_keeps_its_unjudged_commits(postgres_dsn) -> None:
    """Store step 12 lists a commit left on the work list once for every partition."""
    import psycopg

    from handoffscope.collector.store.postgres_store import Session

    steps = read_steps(PG_DDL_DIR)
    before = [s for s in steps if s.file != "0012_judge_partitions.sql"]
    assert len(before) == len(steps) - 1
    con = Session(psycopg.connect(postgres_dsn, autocommit=False))
    apply_steps(con, before, "store_version")
    con.commit()
    con.execute("INSERT INTO judge_work (commit_seq, spans, committed_ns) VALUES (7, 3, 1)")
    con.commit()
    con.close()
    store = PostgresStore(postgres_dsn)  # applies step 12
    cur = store.cursor()
    rows = cur.execute("SELECT commit_seq, spans, part FROM judge_work ORDER BY part").fetchall()
    assert rows == [(7, 3, p) for p in range(PARTITIONS)]
    assert statements.rows(cur, "judge_backlog")[0][0::2] == (1, 3)
    cur.close()
    store.close()
