"""Verdicts behind the acknowledgement: the judge (collector/engine/judge.py).

In-process with the collector's real parts (DuckDB file, writer, judge, engine, Starlette
app): an export is acknowledged once its spans are durable, whether or not anything has
judged them yet; the judge derives the verdicts from its durable mark, resumes from it
after a restart (a collector stopped before judging loses nothing), and counts nothing
twice.

The in-process tests are the DuckDB file's `Judge` (its durable mark, its step sizing):
on PostgreSQL the judge is `LeasedJudge` over the shared work list, so they are
`duckdb_only`; the process test (judge off, then on) runs on either store.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx
import pytest
from ingest_support import handoff_body, read_db
from support.polling import eventually

from handoffscope.collector import arrivals
from handoffscope.collector.config import CollectorConfig
from handoffscope.collector.engine import HealthEngine
from handoffscope.collector.engine import judge as judge_module
from handoffscope.collector.server import assemble
from handoffscope.collector.store import statements
from handoffscope.collector.store.duckdb_store import DuckDBStore

PB = "application/x-protobuf"


def _body(run_id: str) -> bytes:
    return handoff_body(run_id, "judge-app")


def _open(db: Path):
    # Answered after each commit (no ingest log): these tests count group commits, one per
    # export. The log answers first and loads exports together (tests/collector/
    # test_ingest_log.py); the judge then sees fewer, larger commits, judged the same way.
    settings = CollectorConfig(db=str(db), retention_days=0, ingest_log="off")
    store = DuckDBStore(settings.db)
    engine = HealthEngine()
    engine.install(store.con)
    engine.load(store.con)
    parts = assemble(settings, store, engine)
    parts.writer.start()
    return parts


def _post(app, body: bytes) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            return await c.post("/v1/traces", content=body, headers={"Content-Type": PB})

    return asyncio.run(go())


def _count(store: DuckDBStore, sql: str) -> int:
    cur = store.cursor()
    try:
        return int(cur.execute(sql).fetchall()[0][0] or 0)
    finally:
        cur.close()


def _close(parts) -> None:
    parts.writer.close()
    parts.judge.close()
    parts.store.close()


@pytest.mark.duckdb_only("the DuckDB file's Judge and its mark; PostgreSQL judges by lease")
def test_ack_means_durable_and_the_judge_catches_up_from_its_mark(tmp_path: Path) -> None:
    db = tmp_path / "j.duckdb"
    parts = _open(db)
    # No judge running: the export is still acknowledged once its spans are stored.
    assert _post(parts.app, _body("run-1")).status_code == 200
    assert _count(parts.store, "SELECT count(*) FROM spans") == 2
    assert _count(parts.store, "SELECT count(*) FROM handoffs") == 0
    assert parts.judge.pending_commits == 1
    health = asyncio.run(_get(parts.app, "/healthz"))
    assert health["judge_pending_commits"] == 1
    assert "handoffscope_judge_pending_commits 1" in parts.metrics.render()
    # Stopped before judging (as a crash would): nothing acknowledged is lost...
    parts.writer.close()
    parts.store.close()

    parts = _open(db)
    assert (parts.judge.mark, parts.judge.committed) == (0, 1)
    parts.judge.catch_up()  # ...the judge resumes from its mark
    assert _count(parts.store, "SELECT count(*) FROM handoffs") == 1
    assert _count(parts.store, "SELECT sum(handoffs) FROM handoff_daily") == 1
    assert parts.judge.pending_commits == 0 and parts.judge.lag_seconds() == 0.0
    # The judge thread judges what comes next, once.
    parts.judge.start()
    assert _post(parts.app, _body("run-2")).status_code == 200
    _close(parts)  # the judge finishes what was committed before it stops

    parts = _open(db)
    assert parts.judge.pending_commits == 0
    assert _count(parts.store, "SELECT count(*) FROM handoffs") == 2
    # Re-judging from scratch gives the same rollup: nothing was counted twice.
    assert _count(parts.store, "SELECT sum(handoffs) FROM handoff_daily") == 2
    assert _count(parts.store, "SELECT max(commit_seq) FROM spans") == 2
    _close(parts)


async def _get(app, path: str) -> dict:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        return (await c.get(path)).json()


@pytest.mark.duckdb_only("the DuckDB file's Judge and its mark; PostgreSQL judges by lease")
def test_steps_are_sized_by_the_measured_rate(tmp_path: Path, monkeypatch) -> None:
    from handoffscope.collector.engine import judge as judge_mod

    parts = _open(tmp_path / "j.duckdb")
    try:
        judge = parts.judge
        assert judge.rate is None and judge.step_budget() == judge_mod.STEP_SPANS
        for k in range(5):  # five exports of 2 spans, each its own group commit
            assert _post(parts.app, _body(f"run-{k}")).status_code == 200
        assert judge.pending_commits == 5
        # A judge measured at 8 spans/s gets 4 spans (two commits) per half-second step.
        monkeypatch.setattr(judge_mod, "MIN_STEP_SPANS", 1)
        judge.rate = 4 / judge_mod.STEP_TARGET_S
        assert judge.step_budget() == 4
        marks = []
        while judge.mark < judge.committed:
            judge._step()
            marks.append(judge.mark)
        assert marks == [2, 4, 5]
        # Whatever the step sizes, every handoff is judged once.
        assert _count(parts.store, "SELECT count(*) FROM handoffs") == 5
        assert _count(parts.store, "SELECT sum(handoffs) FROM handoff_daily") == 5
        judge.rate = 1e12  # a fast judge is still bounded by STEP_SPANS
        assert judge.step_budget() == judge_mod.STEP_SPANS
    finally:
        _close(parts)


@pytest.mark.duckdb_only("the DuckDB file's Judge and its mark; PostgreSQL judges by lease")
def test_while_spans_flow_small_commits_gather_into_one_step(tmp_path: Path, monkeypatch) -> None:
    """Each step's statements cost about the same for a few spans as for thousands, so
    while spans are committed fast the judge lets small commits gather (GATHER_S) until
    a step is worth its cost (MIN_STEP_SPANS); a stop judges what gathered."""
    from handoffscope.collector.engine import judge as judge_mod

    # Every rate counts as fast (one span in the last hour: a judge thread at its lower
    # priority may first look over a second after a commit on a loaded machine), 6 spans
    # (three 2-span exports) make a step worth it, and the wait is long enough that only
    # the third commit can end it.
    monkeypatch.setattr(arrivals, "WINDOW_S", 3600.0)
    monkeypatch.setattr(judge_mod, "GATHER_MIN_SPANS_PER_S", 1)
    monkeypatch.setattr(judge_mod, "MIN_STEP_SPANS", 6)
    monkeypatch.setattr(judge_mod, "GATHER_S", 60.0)
    parts = _open(tmp_path / "j.duckdb")
    judge = parts.judge
    marks: list[int] = []
    step = judge._step

    def recorded() -> None:
        step()
        marks.append(judge.mark)

    monkeypatch.setattr(judge, "_step", recorded)
    judge.start()
    try:
        for k in range(2):
            assert _post(parts.app, _body(f"run-{k}")).status_code == 200
        time.sleep(0.5)  # the judge has woken for both commits by now, and waits
        assert marks == [] and judge.pending_commits == 2
        assert _post(parts.app, _body("run-2")).status_code == 200
        deadline = time.monotonic() + 30
        while not marks and time.monotonic() < deadline:
            time.sleep(0.02)
        assert marks == [3]  # one step for the three commits
        assert _count(parts.store, "SELECT count(*) FROM handoffs") == 3
        assert _post(parts.app, _body("run-3")).status_code == 200
    finally:
        _close(parts)
    # Closing stopped the gathering and judged the fourth commit.
    assert marks[-1] == 4
    store = DuckDBStore(tmp_path / "j.duckdb")
    try:
        assert _count(store, "SELECT count(*) FROM handoffs") == 4
    finally:
        store.close()


def _postgres_parts(postgres_dsn: str, *, judge: str):
    """A collector's parts (not started) on the PostgreSQL database `postgres_dsn`."""
    from handoffscope.collector.store.postgres_store import PostgresStore

    settings = CollectorConfig(store=postgres_dsn, retention_days=0, judge=judge)
    store = PostgresStore(settings.store_target)
    engine = HealthEngine()
    engine.install(store.con)
    return store, assemble(settings, store, engine)


@pytest.mark.duckdb_only("it makes its own PostgreSQL database (postgres_dsn) whatever --store is")
def test_on_postgresql_a_commit_during_a_read_of_the_work_list_is_not_lost(
    postgres_dsn: str, monkeypatch
) -> None:
    """A collector that does not judge (--judge off, or another holds the lease) shows the
    shared list as last read plus its own commits since. A commit noted while a read is in
    flight — the read's snapshot taken before it — must still be counted afterwards."""
    store, parts = _postgres_parts(postgres_dsn, judge="off")
    judge = parts.judge
    try:
        assert judge.pending_commits == 0
        read = statements.rows

        def read_then_commit(con, name, *args, **kwargs):
            rows = read(con, name, *args, **kwargs)
            if name == "judge_backlog":
                # The writer's commit lands (and is noted) after the read's snapshot.
                judge.committed_through(1, spans=2)
            return rows

        monkeypatch.setattr(statements, "rows", read_then_commit)
        judge._read_backlog()
        assert judge.pending_commits == 1
        assert judge._waiting() is not None and judge._waiting()[0] == 2  # its spans too
    finally:
        judge.close()
        store.close()


@pytest.mark.duckdb_only("it makes its own PostgreSQL database (postgres_dsn) whatever --store is")
def test_on_postgresql_the_lease_holder_lets_small_commits_gather_too(
    postgres_dsn: str, monkeypatch
) -> None:
    """The same gathering by the judge of a shared store (LeasedJudge), over the shared
    work list: the list's spans (judge_backlog.sql) decide whether a step is worth it."""
    from handoffscope.collector.engine import judge as judge_mod

    monkeypatch.setattr(arrivals, "WINDOW_S", 3600.0)  # as above: every rate is fast
    monkeypatch.setattr(judge_mod, "GATHER_MIN_SPANS_PER_S", 1)
    monkeypatch.setattr(judge_mod, "MIN_STEP_SPANS", 6)
    monkeypatch.setattr(judge_mod, "GATHER_S", 60.0)
    store, parts = _postgres_parts(postgres_dsn, judge="thread")
    judge = parts.judge
    judged: list[int] = []  # spans of each step
    step = judge._step

    def recorded() -> bool:
        before = judge.engine.stats["spans_applied"] if judge.engine is not None else 0
        busy = step()
        if busy:
            judged.append(judge.engine.stats["spans_applied"] - before)
        return busy

    monkeypatch.setattr(judge, "_step", recorded)
    parts.writer.start()
    judge.start()
    try:
        deadline = time.monotonic() + 30
        while not judge.holding and time.monotonic() < deadline:
            time.sleep(0.02)
        assert judge.holding
        for k in range(2):
            assert _post(parts.app, _body(f"run-{k}")).status_code == 200
        time.sleep(1.0)  # two polls: the holder has seen both commits by now, and waits
        assert judged == [] and judge.pending_commits == 2
        assert _post(parts.app, _body("run-2")).status_code == 200
        while not judged and time.monotonic() < deadline:
            time.sleep(0.02)
        assert judged == [6]  # one step for the three 2-span commits
        assert judge.pending_commits == 0
        assert _post(parts.app, _body("run-3")).status_code == 200
    finally:
        parts.writer.close()
        judge.close()
    # Closing stopped the gathering and judged the fourth commit.
    assert judged == [6, 2]
    cur = store.cursor()
    try:
        assert statements.rows(cur, "judge_backlog")[0][0] == 0
        assert cur.execute("SELECT count(*) FROM handoffs").fetchall()[0][0] == 4
    finally:
        cur.close()
        store.close()


@pytest.mark.duckdb_only("it makes its own PostgreSQL database (postgres_dsn) whatever --store is")
def test_on_postgresql_a_commit_between_a_step_and_the_wait_is_judged_without_the_poll(
    postgres_dsn: str, monkeypatch
) -> None:
    """The writer tells the lease holder of each commit; one told while the judge is not
    waiting yet — its step just found nothing — must not wait for the next poll. POLL_S
    is made a minute here: the commit is judged long before, or the test fails."""
    from handoffscope.collector.engine import leased_judge

    monkeypatch.setattr(leased_judge, "POLL_S", 60.0)
    store, parts = _postgres_parts(postgres_dsn, judge="thread")
    judge = parts.judge
    step = judge._step
    posted = threading.Event()

    def step_then_commit() -> bool:
        busy = step()
        if not busy and judge.holding and not posted.is_set():
            # Committed and noted before the judge waits.
            assert _post(parts.app, _body("run-late")).status_code == 200
            posted.set()
        return busy

    monkeypatch.setattr(judge, "_step", step_then_commit)
    parts.writer.start()
    judge.start()
    try:
        assert posted.wait(30)
        cur = store.cursor()
        try:
            eventually(
                lambda: cur.execute("SELECT count(*) FROM handoffs").fetchall()[0][0],
                lambda n: n == 1,
                timeout=30,
                every=0.05,
                what="the late commit judged",
            )
        finally:
            cur.close()
    finally:
        parts.writer.close()
        judge.close()
        store.close()


@pytest.mark.duckdb_only("the DuckDB file's Judge and its mark; PostgreSQL judges by lease")
def test_a_backlog_left_by_an_earlier_run_is_judged_in_steps_of_many_commits(
    tmp_path: Path, monkeypatch
) -> None:
    """The writer reports each commit's size as it makes it; a judge started on commits
    made before it (a restart, `--judge off` before) reads their sizes from the store.
    Counted as MAX_GROUP_SPANS each, they would be judged one commit per step once the
    budget is measured (three times slower on 512-span commits)."""
    from handoffscope.collector.engine import judge as judge_mod

    db = tmp_path / "j.duckdb"
    parts = _open(db)
    for k in range(12):  # twelve exports of 2 spans, each its own group commit
        assert _post(parts.app, _body(f"run-{k}")).status_code == 200
    parts.writer.close()
    parts.store.close()

    parts = _open(db)
    try:
        judge = parts.judge
        assert (judge.mark, judge.committed) == (0, 12)
        # A judge measured at 20 spans/s: 10 spans, five commits, per half-second step.
        monkeypatch.setattr(judge_mod, "MIN_STEP_SPANS", 1)
        judge.rate = 10 / judge_mod.STEP_TARGET_S
        marks = []
        while judge.mark < judge.committed:
            judge._step()
            marks.append(judge.mark)
        assert marks == [5, 10, 12]
        assert _count(parts.store, "SELECT count(*) FROM handoffs") == 12
    finally:
        _close(parts)


def test_judge_off_ingests_only_and_a_later_start_judges_the_backlog(collector_factory) -> None:
    # The real process: --judge off acknowledges and stores, derives nothing, says so.
    collector = collector_factory(args=["--judge", "off", "--log-level", "warning"])
    assert collector.post_traces(_body("run-off")).status_code == 200
    health = collector.healthz()
    assert health["status"] == "ingest only: judge off"
    assert health["spans_stored"] == 2 and health["judge_pending_commits"] == 1
    assert "judge=off" in collector.log()
    assert collector.stop() == 0
    assert read_db(collector.store, "SELECT count(*) FROM handoffs") == [(0,)]
    # Started again with the judge on (the default), it judges what was left behind.
    collector.restart(args=["--log-level", "warning"])
    collector.judged()
    assert collector.healthz()["status"] == "ok"
    run = collector.api("/api/v1/runs/run-off")
    assert run["run_id"] == "run-off" and run["handoff_count"] == 1


@pytest.mark.duckdb_only("the DuckDB file's Judge and its mark; PostgreSQL judges by lease")
def test_a_judge_far_behind_stops_within_its_budget_and_resumes_after(
    tmp_path: Path, monkeypatch, caplog
) -> None:
    """Stopping does not wait for a backlog of any size: the judge finishes its step, judges
    on for CLOSE_BUDGET_S at most, and leaves the rest to the next start (from its mark)."""
    monkeypatch.setattr(judge_module, "CLOSE_BUDGET_S", 0.0)
    db = tmp_path / "behind.duckdb"
    parts = _open(db)
    in_step, release = threading.Event(), threading.Event()
    apply = parts.engine.apply

    def slow_apply(con, spans, *args):
        in_step.set()
        release.wait(30)  # the first step is under way when the stop comes
        return apply(con, spans, *args)

    monkeypatch.setattr(parts.engine, "apply", slow_apply)
    assert _post(parts.app, _body("run-1")).status_code == 200
    parts.judge.start()
    assert in_step.wait(30)
    assert _post(parts.app, _body("run-2")).status_code == 200  # committed behind the step
    parts.writer.close()
    closing = threading.Thread(target=parts.judge.close)
    closing.start()
    release.set()
    closing.join(30)
    assert not closing.is_alive()
    assert (parts.judge.mark, parts.judge.committed) == (1, 2)  # the step done, no more
    assert "not judged yet" in caplog.text
    parts.store.close()

    monkeypatch.undo()
    parts = _open(db)
    parts.judge.catch_up()  # the rest, from the mark
    assert _count(parts.store, "SELECT count(*) FROM handoffs") == 2
    assert _count(parts.store, "SELECT sum(handoffs) FROM handoff_daily") == 2
    _close(parts)
