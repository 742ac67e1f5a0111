"""The health engine in several worker processes (`--judge-workers N`: engine/shards.py).

Runs are split between the workers by run id; what must still hold is that the stored
state is the one a single engine stores — the verdicts (the differential test in
test_engine_differential.py runs with two workers too), row numbers that never collide,
rollups that add up, the one cross-run fact (has this service reported an outcome yet?)
known to every shard — and that a worker killed in the middle of a backlog loses nothing
and counts nothing twice (the real collector process here, its real worker processes).
"""

from __future__ import annotations

import os
import signal

import pytest
from ingest_support import read_db
from support.polling import eventually
from test_engine import Collector, accept, outcome, request, run_span
from test_judge_worker import _body, _counts, _gone, _workers

from handoffscope.collector.engine import PARTITIONS
from handoffscope.collector.engine.shards import ShardedEngine, batch_outcomes, split
from handoffscope.collector.store.records import column_name, run_key
from handoffscope.instrumentation import semconv as sc

RUN_ID = column_name(sc.RUN_ID)


def _in_shard(shard: int, n: int, prefix: str, count: int = 1) -> list[str]:
    """`count` run ids that `run_key % n` puts in `shard`."""
    found, k = [], 0
    while len(found) < count:
        rid = f"{prefix}{k}"
        if run_key(rid) % n == shard:
            found.append(rid)
        k += 1
    return found


def test_a_batch_splits_by_run_and_its_outcomes_are_the_whole_batchs():
    from test_engine import to_table

    a, b = _in_shard(0, 2, "a")[0], _in_shard(1, 2, "b")[0]
    table = to_table(
        [
            request(a, "h", "A", "B"),
            outcome(a, sc.OUTCOME_PASS, at=3.0),
            request(b, "h", "A", "B"),
            run_span(b, "completed", at=4.0),
        ]
    )
    # Two workers deal the partitions out alternately: worker i has those ≡ i mod 2.
    zero, one = split(table, [p % 2 for p in range(PARTITIONS)], 2)
    assert set(zero.column(RUN_ID).to_pylist()) == {a}
    assert set(one.column(RUN_ID).to_pylist()) == {b}
    assert zero.num_rows + one.num_rows == table.num_rows
    (svc,) = set(table.column("service").to_pylist())
    outcome_start = min(
        s
        for s, res in zip(
            table.column("start_ns").to_pylist(),
            table.column(column_name(sc.OUTCOME_RESULT)).to_pylist(),
            strict=True,
        )
        if res is not None
    )
    assert batch_outcomes(table) == {svc: outcome_start}
    assert batch_outcomes(one) == {}  # the part without the outcome knows none of its own


def test_every_shard_learns_that_the_service_verifies(tmp_path, store_target):
    # The verifier's run and the runs judged after it are in different shards: the one
    # cross-run fact must reach the shard that did not see the outcome span.
    v1 = _in_shard(0, 2, "v")[0]
    u1, f1, f2 = _in_shard(1, 2, "r", 3)
    c = Collector(store_target(tmp_path / "policy.duckdb"), workers=2, require_outcome=())
    try:
        c.send(request(u1, "h", "A", "B"), accept(u1, "h"), run_span(u1, "completed", at=2))
        assert c.run_verdict(u1) == sc.UNVERIFIED
        c.send(run_span(v1, "completed", at=10), outcome(v1, sc.OUTCOME_PASS, at=11))
        assert c.run_verdict(v1) == sc.HEALTHY
        c.send(run_span(f1, "completed", at=20))
        assert c.run_verdict(f1) == sc.FALSE_COMPLETE
        c.restart()  # each new worker loads the service's first outcome from the store
        assert c.run_verdict(u1) == sc.UNVERIFIED
        c.send(run_span(f2, "completed", at=30))
        assert c.run_verdict(f2) == sc.FALSE_COMPLETE
    finally:
        c.close()


def test_shards_number_their_rows_apart_and_their_rollups_add_up(tmp_path, store_target):
    runs = _in_shard(0, 2, "s", 5) + _in_shard(1, 2, "t", 5)
    c = Collector(store_target(tmp_path / "rows.duckdb"), workers=2)
    try:
        for round_ in range(3):  # every run's rows rewritten: old versions deleted by row_seq
            c.send(
                *(request(r, "h", "A", "B", at=float(round_)) for r in runs),
                *(accept(r, "h", at=1.0 + round_) for r in runs),
            )
            c.send(*(run_span(r, "started", at=2.0 + round_) for r in runs))
        c.send(*(run_span(r, "completed", at=9.0) for r in runs))
        for table in ("handoffs", "runs"):
            (n, distinct), *_ = c.q(f"SELECT count(*), count(DISTINCT row_seq) FROM {table}")
            assert n == distinct == len(runs), table
        seqs = [s for (s,) in c.q("SELECT row_seq FROM handoffs")]
        assert {run_key(r) % 2 for r in runs} == {0, 1}
        assert {s % 2 for s in seqs} == {0, 1}  # each shard's residue
        assert c.q("SELECT sum(handoffs) FROM edge_hourly") == [(len(runs),)]
        assert c.q("SELECT sum(handoffs) FROM handoff_daily") == [(len(runs),)]
        assert all(c.run(r)["handoff_count"] == 1 for r in runs)
    finally:
        c.close()


def test_fewer_than_two_workers_is_not_a_sharded_engine():
    with pytest.raises(ValueError, match="at least two"):
        ShardedEngine(1)


@pytest.mark.duckdb_only("the workers' deaths are the same on either store; one is enough")
def test_a_killed_shard_worker_is_replaced_and_nothing_is_lost_or_counted_twice(
    collector_factory,
):
    collector = collector_factory(args=["--log-level", "warning", "--judge-workers", "2"])
    workers = eventually(lambda: _workers(collector), lambda w: len(w) == 2, timeout=30)
    assert len(workers) == 2
    assert collector.metric("handoffscope_judge_worker_starts_total") == 2
    runs = [f"sh-{i:04d}" for i in range(41)]
    assert collector.post_traces(_body(runs[:10])).status_code == 200
    collector.judged()
    # A backlog, one worker killed while the judge works through it.
    for k in range(10, 40, 2):
        assert collector.post_traces(_body(runs[k : k + 2])).status_code == 200
    os.kill(workers[0].pid, signal.SIGKILL)
    assert collector.post_traces(_body(runs[40:])).status_code == 200
    assert collector.post_traces(_body(runs[38:40])).status_code == 200  # again: duplicates
    collector.judged()
    assert eventually(lambda: _gone(workers[0]), timeout=10)
    assert collector.healthz()["status"] == "ok"
    assert collector.metric("handoffscope_judge_worker_starts_total") == 3
    assert collector.metric("handoffscope_judge_worker_resident_memory_bytes") > 0
    for rid in (runs[0], runs[15], runs[39], runs[40]):
        assert collector.api(f"/api/v1/runs/{rid}")["handoff_count"] == 1
    assert collector.stop() == 0
    counts = _counts(collector.store)
    assert counts == {name: len(runs) for name in counts}, counts
    (distinct,) = read_db(collector.store, "SELECT count(DISTINCT row_seq) FROM handoffs")[0]
    assert distinct == len(runs)


@pytest.mark.duckdb_only("it makes its own PostgreSQL database (postgres_dsn) whatever --store is")
def test_a_collector_that_drops_the_judge_lease_stops_its_workers_until_it_takes_it_again(
    postgres_dsn, caplog
):
    import psutil

    from handoffscope.collector.engine.leased_judge import LeasedJudge
    from handoffscope.collector.store.postgres_store import PostgresStore

    store = PostgresStore(postgres_dsn)
    engine = ShardedEngine(2, grace_seconds=30)
    engine.install(store.con)
    judge = LeasedJudge(store, lambda: engine)
    try:
        judge.catch_up()  # takes the lease: both workers start and load
        first = [psutil.Process(pid) for pid in engine.worker_pids]
        assert len(first) == 2 and engine.worker_starts == 2
        # What the judge does after a failed step: the lease goes back, and with it the
        # workers, whose memory is of no use to a collector that does not judge.
        judge._drop_lease()
        assert not judge.holding
        assert eventually(lambda: all(_gone(p) for p in first), timeout=10)
        assert engine.worker_pids == []
        judge.catch_up()  # the lease again: new workers, loaded from the tables
        assert len(engine.worker_pids) == 2
        assert not set(engine.worker_pids) & {p.pid for p in first}
        assert engine.worker_starts == 2  # a release is not a death
        assert "restarted" not in caplog.text
    finally:
        judge.close()
        engine.close()
        store.close()
