"""The health engine in its worker process (`--judge on` on a DuckDB file: engine/worker.py).

The real collector process and its real worker process: the worker is found among the
collector's children and SIGKILLed — between steps and in the middle of judging a
backlog — and the collector must replace it, judge every acknowledged span once, and
count each handoff once in every rollup (checked against the stored rows themselves).
The worker's verdicts equal `classify()` in test_engine_differential.py; here, what its
death must not change.
"""

from __future__ import annotations

import os
import signal

import psutil
import pytest
from ingest_support import encode, handoff, read_db
from support.polling import eventually
from test_engine import accept, request, to_table

from handoffscope.collector.engine.judge import Judge
from handoffscope.collector.engine.worker import ProcessEngine, WorkerError
from handoffscope.collector.store.duckdb_store import DuckDBStore

pytestmark = pytest.mark.duckdb_only("the judge's worker process serves a DuckDB file")

WORKER_MODULE = "handoffscope.collector.engine.worker"


def _body(
    run_ids: list[str], handoff_id: str = "h1", frm: str = "triage", to: str = "billing"
) -> bytes:
    """One export of one healthy handoff per run, recorded with the real SDK."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "worker-app"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("handoffscope.tests")

    class Recorder:
        def emit(self, name: str, attributes) -> None:
            tracer.start_span(name, attributes=attributes).end()

    for run_id in run_ids:
        handoff(Recorder(), run_id, handoff_id, frm, to)
    return encode(memory.get_finished_spans())


def _workers(collector) -> list[psutil.Process]:
    """The collector's judge worker processes."""
    found = []
    for child in psutil.Process(collector.proc.pid).children():
        try:
            if WORKER_MODULE in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def _worker(collector) -> psutil.Process | None:
    return next(iter(_workers(collector)), None)


def _gone(proc: psutil.Process) -> bool:
    """Exited (a zombie until the collector reaps it: it is the collector's child)."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _counts(db) -> dict[str, int]:
    q = lambda sql: read_db(db, sql)[0][0] or 0  # noqa: E731
    return {
        "runs": q("SELECT count(*) FROM runs"),
        "handoffs": q("SELECT count(*) FROM handoffs"),
        "distinct handoffs": q("SELECT count(DISTINCT (run_id, handoff_id)) FROM handoffs"),
        "edge_hourly": q("SELECT sum(handoffs) FROM edge_hourly"),
        "edge_daily": q("SELECT sum(handoffs) FROM edge_daily"),
        "handoff_daily": q("SELECT sum(handoffs) FROM handoff_daily"),
    }


def test_a_killed_worker_is_replaced_and_nothing_is_lost_or_counted_twice(collector_factory):
    collector = collector_factory(args=["--log-level", "warning"])
    assert "judge=on" in collector.log()
    first = _worker(collector)
    assert first is not None, "no judge worker among the collector's children"
    assert collector.metric("handoffscope_judge_worker_starts_total") == 1
    assert collector.metric("handoffscope_judge_worker_resident_memory_bytes") > 0

    runs = [f"wk-{i:04d}" for i in range(41)]
    assert collector.post_traces(_body(runs[:10])).status_code == 200
    collector.judged()
    assert collector.api("/api/v1/runs/wk-0000")["handoff_count"] == 1

    # Between steps: the next step finds it gone, fails, and is retried on a new worker.
    first.send_signal(signal.SIGKILL)
    assert eventually(lambda: _gone(first), timeout=10)
    assert collector.post_traces(_body(runs[10:20])).status_code == 200
    collector.judged()
    second = _worker(collector)
    assert second is not None and second.pid != first.pid
    assert collector.metric("handoffscope_judge_worker_starts_total") == 2

    # In the middle of a backlog: exports acknowledged one after another, the worker
    # killed while the judge works through them.
    for k in range(20, 40, 2):
        assert collector.post_traces(_body(runs[k : k + 2])).status_code == 200
    os.kill(second.pid, signal.SIGKILL)
    # One more after it, so a step runs after the kill whenever the kill landed.
    assert collector.post_traces(_body(runs[40:])).status_code == 200
    assert collector.post_traces(_body(runs[38:40])).status_code == 200  # again: duplicates
    collector.judged()
    assert collector.healthz()["status"] == "ok"
    assert collector.metric("handoffscope_judge_worker_starts_total") == 3
    assert collector.log().count("judge worker process restarted") == 2

    for rid in (runs[0], runs[15], runs[39], runs[40]):
        run = collector.api(f"/api/v1/runs/{rid}")
        assert run["handoff_count"] == 1, run
    assert collector.stop() == 0
    counts = _counts(collector.store)
    assert counts == {name: len(runs) for name in counts}, counts


def test_the_judges_memory_bound_is_a_setting_and_evicted_runs_come_back(collector_factory):
    """`--max-hot-handoffs` reaches the worker: it holds no more than that between steps
    (each export here is one step of two runs, four units), says so in /metrics, and
    evidence for a run it let go brings the run back from the store, judged as one."""
    collector = collector_factory(args=["--max-hot-handoffs", "6", "--log-level", "warning"])
    assert collector.metric("handoffscope_engine_hot_handoffs_limit") == 6
    runs = [f"hot-{i:02d}" for i in range(12)]
    for k in range(0, len(runs), 2):
        assert collector.post_traces(_body(runs[k : k + 2])).status_code == 200
        collector.judged()
        assert 0 < collector.metric("handoffscope_engine_hot_handoffs") <= 6
    assert collector.metric("handoffscope_engine_runs_evicted_total") >= 8
    assert collector.metric("handoffscope_engine_runs_reloaded_total") == 0

    late = _body([runs[0]], handoff_id="h2", frm="billing", to="refunds")
    assert collector.post_traces(late).status_code == 200
    collector.judged()
    assert collector.metric("handoffscope_engine_runs_reloaded_total") == 1
    run = collector.api(f"/api/v1/runs/{runs[0]}")
    assert run["handoff_count"] == 2, run
    assert run["path"] == ["triage", "billing", "refunds"], run
    assert collector.stop() == 0
    assert read_db(collector.store, f"SELECT count(*) FROM runs WHERE run_id = '{runs[0]}'") == [
        (1,)
    ]
    counts = _counts(collector.store)
    assert counts["distinct handoffs"] == counts["handoffs"] == len(runs) + 1, counts


def test_the_memory_bound_default_is_the_engines() -> None:
    from handoffscope.collector.config import CollectorConfig
    from handoffscope.collector.engine import MAX_HOT_HANDOFFS

    assert CollectorConfig().max_hot_handoffs == MAX_HOT_HANDOFFS


def _nice(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


@pytest.mark.parametrize("increment", [None, 0, 7])
def test_the_judge_runs_at_a_lower_cpu_priority(collector_factory, increment):
    """`--judge-nice` (default 10): the judge's thread and every thread of its worker run
    that much below the collector's priority; the receiver and the query API do not."""
    args = ["--log-level", "warning"]
    if increment is not None:
        args += ["--judge-nice", str(increment)]
    collector = collector_factory(args=args)
    base = _nice(collector.proc.pid)
    lowered = min(19, base + (10 if increment is None else increment))
    worker = _worker(collector)
    assert worker is not None
    # The judge thread lowers itself as it starts; a judged export shows it has started.
    assert collector.post_traces(_body(["nice-1"])).status_code == 200
    collector.judged()
    assert collector.api("/api/v1/runs/nice-1")["handoff_count"] == 1
    threads = [_nice(t.id) for t in psutil.Process(collector.proc.pid).threads()]
    assert threads.count(lowered) == (len(threads) if lowered == base else 1), threads
    assert threads.count(base) == (len(threads) if lowered == base else len(threads) - 1)
    assert {_nice(t.id) for t in worker.threads()} == {lowered}
    assert collector.stop() == 0


def test_stopping_the_collector_stops_its_worker(collector_factory):
    collector = collector_factory(args=["--log-level", "warning"])
    worker = _worker(collector)
    assert worker is not None
    assert collector.stop() == 0
    assert eventually(lambda: _gone(worker), timeout=10)


def test_a_worker_that_cannot_start_is_a_clear_error():
    # An engine setting the worker's HealthEngine refuses: the worker exits before it is
    # ready, and the call says so rather than waiting on a pipe no one will write to.
    engine = ProcessEngine(no_such_setting=1)
    with pytest.raises(WorkerError, match="did not start"):
        engine.load(None)
    engine.close()


def test_a_failed_write_fails_the_step_and_the_retry_counts_once(tmp_path):
    # The worker's writes are sent without waiting for them (statements.run): a failure
    # must still fail the step, roll it back whole, and leave a worker that judges the
    # same commits again, counting each handoff once.
    store = DuckDBStore(str(tmp_path / "w.duckdb"))
    engine = ProcessEngine(grace_seconds=30)
    try:
        engine.install(store.con)
        engine.load(store.con)
        for seq, run in enumerate(("fw-1", "fw-2"), start=1):
            store.con.begin()
            store.insert_new_spans(
                to_table([request(run, "h1", "a", "b"), accept(run, "h1")]), commit_seq=seq
            )
            store.con.commit()
        judge = Judge(store, engine)
        # The hourly rollup's upsert is among the last writes of a step: it fails here.
        store.con.execute("ALTER TABLE edge_hourly RENAME TO edge_hourly_away")
        with pytest.raises(WorkerError, match="edge_hourly"):
            judge.catch_up()
        assert judge.mark == 0
        assert store.con.execute("SELECT count(*) FROM handoffs").fetchall() == [(0,)]
        store.con.execute("ALTER TABLE edge_hourly_away RENAME TO edge_hourly")
        judge.catch_up()
        assert judge.mark == 2
        assert store.con.execute("SELECT count(*) FROM handoffs").fetchall() == [(2,)]
        assert store.con.execute("SELECT sum(handoffs) FROM edge_hourly").fetchall() == [(2,)]
        assert engine.worker_starts == 1  # the same worker judged it again
        judge.close()
    finally:
        engine.close()
        store.close()
