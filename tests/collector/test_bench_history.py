"""The set-based DuckDB history (bench/gen_history.py's default, gen_history_duckdb.sql).

`make bench` measures the query API over a history written by SQL rather than by the
collector, so that history must be one a collector could have written: rollups that are
the engine's own recount of the handoff rows (`edge_key`, `daily_key`), runs and
handoffs that agree, evidence spans behind every row where the collector's queries look
for them, and a judge mark that leaves a collector opening the file nothing to judge.
The last test starts the real collector on a copy of the file and asks its API.
"""

from __future__ import annotations

import shutil
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from support import turns as turn_counts
from support.collector import CollectorProcess, metric_value
from support.polling import eventually

from handoffscope.collector.engine import EDGE_RUNS_KEPT, daily_key, edge_key, run_daily_key
from handoffscope.collector.engine.judge import MARK_KEY
from handoffscope.collector.store.records import HandoffRecord, RunRecord, read, run_key
from handoffscope.instrumentation import semconv as sc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gen_history  # noqa: E402  (bench/ scripts are files, not a package)

pytestmark = pytest.mark.duckdb_only("the generator writes a DuckDB file")

HANDOFFS = 3_000
CHUNK = 990
NS_PER_DAY = 86_400 * 10**9


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 handoffs over the last 2.4 hours: all inside the API's default 24 h window, and
    enough in the last 15 minutes for handoffs in flight (verdicts that flip). In chunks
    of 990 handoffs, so the steps join up as they do at ten million."""
    db = tmp_path_factory.mktemp("history") / "h.duckdb"
    written = gen_history.generate_set_based(db, HANDOFFS, days=0.1, chunk_handoffs=CHUNK)
    assert written["handoffs"] == HANDOFFS
    return db


@pytest.fixture
def con(history: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    c = duckdb.connect(str(history), read_only=True)
    yield c
    c.close()


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return sorted(con.execute(sql).fetchall())


def handoff_rows(con: duckdb.DuckDBPyConnection) -> list[HandoffRecord]:
    return read(HandoffRecord, con.sql("SELECT * FROM handoffs").to_arrow_table())


def test_the_rollups_are_the_engines_recount_of_the_handoff_rows(con) -> None:
    handoffs = handoff_rows(con)
    hourly = Counter(k for k in map(edge_key, handoffs) if k is not None)
    daily: Counter[tuple] = Counter()
    for (hour, *rest), n in hourly.items():
        daily[(hour // 24, *rest)] += n
    assert rows(
        con,
        "SELECT hour, service, from_agent, to_agent, verdict, undeclared, handoffs FROM edge_hourly",
    ) == sorted((*k, n) for k, n in hourly.items())
    assert rows(
        con,
        "SELECT day, service, from_agent, to_agent, verdict, undeclared, handoffs FROM edge_daily",
    ) == sorted((*k, n) for k, n in daily.items())
    weekly = Counter(k for k in map(daily_key, handoffs) if k is not None)
    assert rows(
        con,
        "SELECT (day - DATE '1970-01-01')::BIGINT, service, from_agent, to_agent, reason,"
        " handoffs FROM handoff_daily",
    ) == sorted((*k, n) for k, n in weekly.items())
    runs = read(RunRecord, con.sql("SELECT * FROM runs").to_arrow_table())
    by_day = Counter(run_daily_key(r) for r in runs)
    assert rows(con, "SELECT day, service, verdict, runs FROM run_daily") == sorted(
        (*k, n) for k, n in by_day.items()
    )
    # No usage in this history: every usage sum is 0.
    for table in ("edge_hourly", "edge_daily", "run_daily"):
        assert rows(con, f"SELECT DISTINCT input_tokens, cost_nusd, unpriced FROM {table}") == [
            (0, 0, 0)
        ]
    # The rule under test matters here: timelines that flip, counted as they end.
    flipped = [h for h in handoffs if h.flip1_ns is not None]
    assert {h.flip1_verdict for h in flipped} >= {sc.DESTINATION_NOT_STARTED}
    assert any(edge_key(h)[4] != h.verdict for h in flipped)  # type: ignore[index]


def test_the_turn_rollups_count_what_the_conversations_tell(con) -> None:
    """The weekly review's turn counts (engine/turns.py's tables, rebuilt by the
    generator) are continuity.sql's over the runs themselves, and every run is a turn."""
    assert con.execute("SELECT count(*) FROM runs WHERE conversation_id IS NULL").fetchone()[0] == 0
    runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    assert con.execute("SELECT count(*) FROM turns").fetchone()[0] == runs
    later = turn_counts.told(con, 0)
    assert turn_counts.weekly(con) == later and sum(later.values()) > 0


def test_edge_runs_are_the_newest_runs_of_each_edge(con) -> None:
    handoffs = handoff_rows(con)
    for unit, table in ((3600 * 10**9, "edge_runs"), (NS_PER_DAY, "edge_runs_daily")):
        newest: defaultdict[tuple, dict[str, int]] = defaultdict(dict)
        for h in handoffs:
            key = (h.first_seen_ns // unit, h.service, h.from_agent, h.to_agent)
            runs = newest[key]
            runs[h.run_id] = max(runs.get(h.run_id, 0), h.first_seen_ns)
        expected = sorted(
            (*k, sorted(runs, key=lambda r, runs=runs: (-runs[r], r))[:EDGE_RUNS_KEPT])
            for k, runs in newest.items()
        )
        assert rows(con, f"SELECT * FROM {table}") == expected


def test_every_handoff_belongs_to_a_run_that_counts_it(con) -> None:
    assert con.execute(
        "SELECT count(*) FROM handoffs h ANTI JOIN runs r USING (run_id, run_key)"
    ).fetchone() == (0,)
    counted = dict(rows(con, "SELECT run_id, count(*) FROM handoffs GROUP BY 1"))
    runs = rows(con, "SELECT run_id, run_key, handoff_count, len(path) FROM runs")
    assert len(runs) == len(counted)
    for run_id, key, handoff_count, path in runs:
        assert key == run_key(run_id)
        assert handoff_count == counted[run_id]
        assert path == handoff_count + 1
    assert con.execute("SELECT count(DISTINCT row_seq), count(*) FROM runs").fetchone() == (
        len(runs),
        len(runs),
    )


def test_spans_back_every_row_where_the_collectors_queries_look(con) -> None:
    spans = con.execute("SELECT count(*) FROM spans").fetchone()[0]
    assert 2.2 * HANDOFFS < spans < 3.0 * HANDOFFS  # like the engine path's ~2.6
    # Every handoff has its request span, carrying the row's edge, inside its seen window.
    assert con.execute(
        """SELECT count(*) FROM handoffs h ANTI JOIN spans s
           ON s.handoff_run_id = h.run_id AND s.handoff_id = h.handoff_id
              AND s.name = 'handoff.request' AND s.start_ns = h.first_seen_ns
              AND s.handoff_from_agent = h.from_agent AND s.handoff_to_agent = h.to_agent"""
    ).fetchone() == (0,)
    assert con.execute(
        """SELECT count(*) FROM spans s JOIN handoffs h
           ON s.handoff_run_id = h.run_id AND s.handoff_id = h.handoff_id
           WHERE s.start_ns < h.first_seen_ns OR s.end_ns > h.last_seen_ns"""
    ).fetchone() == (0,)
    # Every run has its run span, and all its spans arrived inside the run's received
    # window (run_spans.sql and reload_spans.sql read only that window), under one trace.
    assert con.execute(
        """SELECT count(*) FROM runs r ANTI JOIN spans s
           ON s.handoff_run_id = r.run_id AND s.name = 'handoff.run'
              AND s.run_status = r.status"""
    ).fetchone() == (0,)
    assert con.execute(
        """SELECT count(*) FROM spans s JOIN runs r ON s.handoff_run_id = r.run_id
           WHERE s.received_ns NOT BETWEEN r.min_received_ns AND r.max_received_ns"""
    ).fetchone() == (0,)
    assert con.execute(
        "SELECT max(n) FROM (SELECT count(DISTINCT trace_id) AS n FROM spans GROUP BY handoff_run_id)"
    ).fetchone() == (1,)
    assert con.execute("SELECT count(DISTINCT (trace_id, span_id)) FROM spans").fetchone() == (
        spans,
    )
    # In arrival order, as a collector stores them (row-group min/max pruning): each
    # chunk's spans sorted, so time steps back at most once per chunk boundary.
    chunks = -(-HANDOFFS // CHUNK)
    back = con.execute(
        """SELECT count(*) FILTER (back) FROM (
               SELECT received_ns < lag(received_ns) OVER (ORDER BY rowid) AS back FROM spans
           )"""
    ).fetchone()[0]
    assert back <= chunks - 1
    # Every commit judged: a collector opening the file has nothing to catch up on.
    mark = con.execute("SELECT value FROM meta WHERE key = ?", [MARK_KEY]).fetchone()
    assert mark is not None
    assert con.execute(
        "SELECT max(commit_seq), count(*) FILTER (commit_seq IS NULL) FROM spans"
    ).fetchone() == (
        int(mark[0]),
        0,
    )


def test_a_collector_on_the_history_answers_without_judging_it_again(
    history: Path, tmp_path: Path
) -> None:
    shutil.copy(history, tmp_path / "h.duckdb")
    with duckdb.connect(str(history), read_only=True) as c:
        runs_total, spans_total = c.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM spans)"
        ).fetchone()
        run_id, trace_id, run_spans, handoff_count = c.execute(
            """SELECT r.run_id, any_value(s.trace_id), count(*), any_value(r.handoff_count)
               FROM runs r JOIN spans s ON s.handoff_run_id = r.run_id
               WHERE r.handoff_count >= 3 GROUP BY 1 ORDER BY 1 LIMIT 1"""
        ).fetchone()
    collector = CollectorProcess(tmp_path).start()
    try:
        health = collector.healthz()
        assert health["spans_stored"] == spans_total
        assert health["judge_pending_commits"] == 0
        assert health["judge_lag_seconds"] == 0
        # Had the mark been behind, the judge would be re-judging the history by now
        # (7,800 spans go fast, so a backlog in /healthz alone could be missed).
        collector.judged()
        # At start the engine reloads the last hour's runs and re-judges them from their
        # spans, rewriting any row that differs: the spans say what the rows say. Its
        # worker process does that first thing, beside a collector already ready.
        metrics = eventually(
            collector.metrics_text,
            lambda text: metric_value(text, "handoffscope_engine_runs_reloaded_total") > 0,
            timeout=60,
            or_last=True,
        )
        assert "handoffscope_engine_spans_applied_total" in metrics
        assert metric_value(metrics, "handoffscope_engine_spans_applied_total") == 0
        assert metric_value(metrics, "handoffscope_engine_runs_reloaded_total") > 100
        assert metric_value(metrics, "handoffscope_engine_handoff_rows_written_total") <= 30
        page = collector.api("/api/v1/runs", limit=10)
        assert page["total"] == runs_total
        assert len(page["runs"]) == 10
        edges = collector.api("/api/v1/edges")["edges"]
        assert sum(e["count"] for e in edges) == HANDOFFS
        assert all(e["runs"] for e in edges)
        run = collector.api(f"/api/v1/runs/{run_id}")
        assert run["handoff_count"] == handoff_count == len(run["handoffs"])
        assert run["spans_total"] == run_spans == len(run["spans"])
        assert run["trace_ids"] == [trace_id]
        found = collector.api("/api/v1/runs", q=trace_id)["runs"]
        assert [r["run_id"] for r in found] == [run_id]
    finally:
        collector.close()
