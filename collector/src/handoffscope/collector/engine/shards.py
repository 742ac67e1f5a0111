"""The health engine in several worker processes at once (`--judge-workers N`, N > 1).

One worker judges on one core (engine/worker.py): about 40k spans/s of runs of four
spans on this machine's cores, so a collector ingesting more than that falls behind. The
runs are independent of each other but for one fact — whether a service has reported an
outcome yet (`VerificationPolicy`) — so they can be judged apart: the runs' partitions
(`engine.PARTITIONS`, by run key) are dealt out to the workers, and each holds and judges
the runs of its partitions.

Each judge step (`apply`) splits the batch by run, and sends every worker its part at
once, with the batch's earliest outcome per service (each worker learns what the whole
batch says about verification, not just its part). The workers judge side by side; the
statements they ask for run here, one at a time, on the judge's one connection inside its
one transaction (`worker.call_all`), so the rows of every shard and the judge's mark
still commit together, and a failure of any worker rolls the whole step back.

What the shards must not share, they do not: each numbers its rows in its own residue
class (its first partition's, `HealthEngine.shard`), holds the keys of its own runs only,
and gets 1/N of the memory bound. The rollups take +1/-1 deltas and the service list inserts are idempotent,
so the shards' writes add up to what one engine writes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from handoffscope.instrumentation import semconv as sc

from ..store.records import PARTITIONS, column_name, run_key
from . import ALL_PARTS, MAX_HOT_HANDOFFS
from .worker import ProcessEngine, call_all, load_all

_RUN_ID = column_name(sc.RUN_ID)
_OUTCOME_RESULT = column_name(sc.OUTCOME_RESULT)


class ShardedEngine:
    """N `ProcessEngine`s, each judging its shard of the runs; called like one."""

    def __init__(self, workers: int, *, nice: int = 0, parts: Any = None, **settings: Any) -> None:
        """`parts`: the partitions this collector judges (None: all), dealt out to at most
        `workers` workers (fewer when there are fewer partitions)."""
        if workers < 2:
            raise ValueError("a sharded engine has at least two workers")
        self.workers, self.nice, self.settings = workers, nice, settings
        self.hot = settings.pop("max_hot_handoffs", MAX_HOT_HANDOFFS)
        self._starts_before = 0
        """Workers started by the shards of an earlier share (`repart`), for /metrics."""
        self.shards: list[ProcessEngine] = []
        self._deal(ALL_PARTS if parts is None else parts)

    def _deal(self, parts: Any) -> None:
        held = sorted(parts)
        dealt = [held[i :: self.workers] for i in range(min(self.workers, len(held)))]
        self.parts = frozenset(held)
        if len(dealt) == len(self.shards):
            # The same workers, each with its new share (a restart after a release is not
            # counted as a death).
            for shard, mine in zip(self.shards, dealt, strict=True):
                shard.repart(mine)
        else:
            self._starts_before = self.worker_starts
            self.release()
            self.shards = [
                ProcessEngine(
                    **self.settings,
                    nice=self.nice,
                    parts=mine,
                    max_hot_handoffs=max(1, self.hot // len(dealt)),
                )
                for mine in dealt
            ]
        self._worker_of = [0] * PARTITIONS
        for i, mine in enumerate(dealt):
            for part in mine:
                self._worker_of[part] = i

    def repart(self, parts: Any) -> None:
        """Judge `parts` from now on, dealt out afresh: the workers stop, and the next call
        starts those of the new share (and loads their runs)."""
        self._deal(parts)

    # -- what /metrics reads (sums over the shards) -----------------------------------------

    @property
    def stats(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for shard in self.shards:
            total.update(shard.stats)
        return total

    @property
    def hot_size(self) -> int:
        return sum(shard.hot_size for shard in self.shards)

    @property
    def worker_starts(self) -> int:
        return self._starts_before + sum(shard.worker_starts for shard in self.shards)

    @property
    def worker_pids(self) -> list[int]:
        return [pid for pid in (shard.worker_pid for shard in self.shards) if pid is not None]

    # -- what the judge calls --------------------------------------------------------------

    def install(self, con: Any) -> tuple[int, int]:
        return self.shards[0].install(con)

    def start(self) -> None:
        for shard in self.shards:
            shard.start()

    def load(self, con: Any, *, now_ns: int | None = None) -> int:
        return load_all(con, self.shards, now_ns)

    def prepare(self, con: Any) -> None:
        self._ready(con)

    def apply(
        self, con: Any, new_spans: pa.Table, outcomes: dict[str, int] | None = None
    ) -> list[tuple]:
        """`outcomes`: the earliest outcome per service of a batch of which `new_spans`
        is this collector's partitions' part (a shared store's judge); else its own."""
        self._ready(con)
        outcomes = batch_outcomes(new_spans) if outcomes is None else outcomes
        parts = split(new_spans, self._worker_of, len(self.shards))
        # Every shard hears of the batch's outcomes, even one with no spans in it: its
        # policy must know them when its own runs of that service complete later.
        moved = call_all(
            con,
            [
                (shard, "apply", ProcessEngine.apply_args(part, outcomes))
                for shard, part in zip(self.shards, parts, strict=True)
                if part.num_rows or outcomes
            ],
        )
        return [turn for shard_moved in moved for turn in shard_moved or ()]

    def retention(self, con: Any, cutoff_ns: int) -> None:
        self._ready(con)
        call_all(con, [(s, "retention", (cutoff_ns,)) for s in self.shards])

    def rollback(self) -> None:
        for shard in self.shards:
            shard.rollback()

    def release(self) -> None:
        for shard in self.shards:
            shard.release()

    def close(self) -> None:
        for shard in self.shards:
            shard.close()

    def _ready(self, con: Any) -> None:
        """Every worker live with its memory loaded; a replaced one loads alone."""
        stale = [s for s in self.shards if not s.ready]
        if len(stale) == len(self.shards):
            self.load(con)
        else:
            for shard in stale:
                shard.load(con)


def split(spans: pa.Table, worker_of: list[int], n: int) -> list[pa.Table]:
    """The batch's spans by worker: those of run r go to the worker of its partition,
    `worker_of[run_key(r) % PARTITIONS]` (no run id: partition 0's)."""
    runs = spans.column(_RUN_ID)
    ids = pc.unique(runs).to_pylist()
    shard_of = pa.array(
        [worker_of[0 if r is None else run_key(r) % PARTITIONS] for r in ids], pa.int64()
    )
    shard = pc.take(shard_of, pc.index_in(runs, value_set=pa.array(ids, runs.type)))
    return [spans.filter(pc.equal(shard, i)) for i in range(n)]


def batch_outcomes(spans: pa.Table) -> dict[str, int]:
    """The earliest start of an outcome span per service in the batch (what
    `merge_spans` gathers as `outcomes_seen`, over the whole batch)."""
    if _OUTCOME_RESULT not in spans.column_names:
        return {}
    runs = spans.column(_RUN_ID)
    has = spans.filter(
        pc.and_(
            pc.is_valid(spans.column(_OUTCOME_RESULT)),
            pc.fill_null(pc.not_equal(runs, ""), False),  # a span with no run is skipped
        )
    )
    if not has.num_rows:
        return {}
    agg = has.group_by("service").aggregate([("start_ns", "min")])
    return {
        svc: int(t)
        for svc, t in zip(
            agg.column("service").to_pylist(), agg.column("start_ns_min").to_pylist(), strict=True
        )
        if svc is not None
    }
