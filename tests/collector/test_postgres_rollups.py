"""PostgreSQL's own rollups against a REAL PostgreSQL server (tests/support/postgres.py).

`run_hours` (PostgreSQL engine step 12) counts runs per first-seen hour and service, kept
by triggers on `runs`; the runs list's total (query/runs.sql) adds its whole hours to the
partial hours it counts. Whatever sequence of new versions, old versions removed and
retention the table sees, and whatever window is asked, that total must be the count of
the runs in the window — checked here against `count(*)` over the table itself.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import turns as turn_counts

from handoffscope.collector.engine import ENGINE_VERSION_KEY, HealthEngine
from handoffscope.collector.store import statements
from handoffscope.collector.store.postgres_store import PostgresStore
from handoffscope.collector.store.steps import apply_steps, ddl_dir, read_steps

psycopg = pytest.importorskip("psycopg")

DAY = 86_400 * 10**9
BASE = 20_000 * DAY  # a UTC midnight (2024-10-04)
SERVICES = ("checkout", "billing", None)

# A run row with the columns runs requires; the rest NULL. What the count depends on is
# first_seen_ns and service; last_seen_ns drives retention.
INSERT_RUNS = """
INSERT INTO runs (row_seq, run_id, run_key, service, first_seen_ns, last_seen_ns,
                  handoff_count, path, loop, loop_cycle, loop_repeats, false_complete,
                  failed, pending_approvals, verdict)
SELECT s, 'run-' || s, s, svc, fs, fs + 1000, 0, '{}', false, '{}', 0, false, false, 0, 'ok'
FROM unnest(%(seqs)s::bigint[], %(services)s::text[], %(firsts)s::bigint[]) AS r(s, svc, fs)
"""

times = st.integers(min_value=BASE - 3 * DAY, max_value=BASE + 3 * DAY)
batches = st.lists(st.tuples(st.sampled_from(SERVICES), times), min_size=1, max_size=30)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), batches),
        # a judge step: old versions of some runs removed (every k-th stored row)
        st.tuples(st.just("remove"), st.integers(min_value=1, max_value=4)),
        # retention: runs last seen before the cutoff
        st.tuples(st.just("expire"), times),
    ),
    min_size=1,
    max_size=8,
)
windows = st.lists(
    st.tuples(
        st.one_of(times, st.just(-(2**63))),
        st.one_of(times, st.just(2**63 - 1)),
        st.sampled_from((None, "checkout", "billing")),
    ),
    min_size=1,
    max_size=6,
)


def runs_page_total(con, since: int, until: int, service: str | None) -> int:
    """The runs list's total for a window with no filter but the service: query/runs.sql,
    with the parameters the API binds (a page of one row suffices for the total)."""
    rows = statements.dicts(
        con,
        "query/runs",
        {
            "now": BASE,
            "since": since,
            "until": until,
            "service": service,
            "scope": None,
            "verdict": None,
            "limit": 1,
            "offset": 0,
            "q": None,
            "agent": None,
            "state": None,
            "sort": "newest",
            "ranked": ["ok"],
            "started": "started",
            "stuck_before": BASE,
            "looped_since": since,
            "spans_since": since,
        },
    )
    return rows[0]["total"] if rows else 0


def counted(con, since: int, until: int, service: str | None) -> int:
    return con.execute(
        "SELECT count(*) FROM runs WHERE first_seen_ns >= %s AND first_seen_ns < %s"
        " AND (%s::text IS NULL OR service = %s)",
        (since, until, service, service),
    ).fetchone()[0]


@pytest.fixture
def con(postgres_dsn: str):
    store = PostgresStore(postgres_dsn)
    HealthEngine().install(store.con)
    store.close()
    with psycopg.connect(postgres_dsn, autocommit=True) as c:
        yield c


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations, asked=windows)
def test_the_runs_total_is_the_count_of_the_window_whatever_changed(con, ops, asked) -> None:
    con.execute("TRUNCATE runs, run_hours")  # TRUNCATE fires no trigger: both at once
    seq = 0
    for op, arg in ops:
        if op == "insert":
            seqs = list(range(seq + 1, seq + 1 + len(arg)))
            seq += len(arg)
            con.execute(
                INSERT_RUNS,
                {
                    "seqs": seqs,
                    "services": [svc for svc, _ in arg],
                    "firsts": [t for _, t in arg],
                },
            )
        elif op == "remove":
            con.execute("DELETE FROM runs WHERE row_seq %% %s = 0", (arg,))
        else:
            statements.run(con, "engine/expire_runs", {"cutoff": arg})
    for since, until, service in asked:
        assert runs_page_total(con, since, until, service) == counted(con, since, until, service)
    # and the table itself: one row per hour and service with runs, none left at zero
    assert con.execute("SELECT count(*) FROM run_hours WHERE runs <= 0").fetchone()[0] == 0


def test_a_database_from_before_run_hours_gets_its_runs_counted(postgres_dsn: str) -> None:
    """Engine step 12 on a database that already holds runs (an upgrade): the backfill
    counts them, and the triggers every run after."""
    steps = read_steps(ddl_dir("engine", statements.POSTGRESQL))
    store = PostgresStore(postgres_dsn)
    before = [s for s in steps if s.version < 12]
    apply_steps(store.con, before, ENGINE_VERSION_KEY, what="health engine")
    store.close()
    with psycopg.connect(postgres_dsn, autocommit=True) as c:
        firsts = [BASE - DAY + i * 3_600 * 10**9 for i in range(40)]  # over two days
        c.execute(
            INSERT_RUNS,
            {"seqs": list(range(1, 41)), "services": ["checkout"] * 40, "firsts": firsts},
        )
    store = PostgresStore(postgres_dsn)
    assert HealthEngine().install(store.con)[1] >= 12
    store.close()
    with psycopg.connect(postgres_dsn, autocommit=True) as c:
        assert c.execute("SELECT sum(runs) FROM run_hours").fetchone()[0] == 40
        c.execute(
            INSERT_RUNS,
            {"seqs": [41], "services": ["checkout"], "firsts": [BASE + 5]},
        )
        for since, until in [(BASE - DAY, BASE + DAY), (BASE - DAY // 2, BASE + 10)]:
            assert runs_page_total(c, since, until, "checkout") == counted(
                c, since, until, "checkout"
            )


def test_the_benchmark_history_has_the_rollups_the_engine_would_write(postgres_dsn: str) -> None:
    """bench/gen_history_pg.py writes the derived tables set-based, not through the
    engine; its rollups must be the engine's recount of its handoffs and runs, or the
    10M-handoff query figures would be measured over tables no collector writes."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import gen_history_pg

    written = gen_history_pg.generate(postgres_dsn, 3_000)
    assert written["handoffs"] == 3_000
    with psycopg.connect(postgres_dsn, autocommit=True) as c:

        def rows(sql: str) -> list[tuple]:
            return sorted(c.execute(sql).fetchall())

        assert rows(
            "SELECT hour, service, from_agent, to_agent, verdict, undeclared, handoffs"
            " FROM edge_hourly WHERE handoffs <> 0"
        ) == rows(
            """SELECT first_seen_ns / 3600000000000, coalesce(service, ''),
                      coalesce(from_agent, ''), coalesce(to_agent, ''),
                      CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict
                           WHEN flip1_ns IS NOT NULL THEN flip1_verdict ELSE verdict END,
                      route_declared IS FALSE, count(*)
               FROM handoffs WHERE kind IS DISTINCT FROM 'delegation'
               GROUP BY 1, 2, 3, 4, 5, 6"""
        )
        assert c.execute("SELECT count(*) FROM handoffs WHERE flip1_ns IS NOT NULL").fetchone()[0]
        assert rows("SELECT hour, service, runs FROM run_hours") == rows(
            "SELECT first_seen_ns / 3600000000000, coalesce(service, ''), count(*)"
            " FROM runs GROUP BY 1, 2"
        )
        # Its runs are turns of conversations, and the weekly review's turn rollups count
        # them as the conversations tell them (continuity.sql over the runs themselves).
        assert (
            c.execute("SELECT count(*) FROM runs WHERE conversation_id IS NULL").fetchone()[0] == 0
        )
        later = turn_counts.told(c, BASE)
        assert turn_counts.weekly(c) == later and sum(later.values()) > 0
