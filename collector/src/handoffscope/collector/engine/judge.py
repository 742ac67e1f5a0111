"""The judge: verdicts behind the acknowledgement, from a durable high-water mark.

The writer acknowledges an export once its spans are committed (a 200 means *durable*,
docs/architecture.md, Storage), stamping every group commit's spans with the next
`commit_seq`. The judge runs in its own thread on its own connection and brings the health
engine's derived tables up to the newest commit: it reads the spans of the commits after its
mark (a few group commits at a time, so one big step stays bounded in memory), merges and
judges them (`HealthEngine.apply`), writes the changed rows, and moves its mark — the mark
and the rows in ONE transaction, so a crash at any moment leaves the rows exactly as of the
mark. After a restart it resumes from the mark; spans it sees twice (a reloaded run's spans
replayed before their own commit comes up) change nothing, because the engine's merge is
idempotent and order-free.

Why behind, not inside, the writer's transaction: judging costs tens of microseconds a
span in Python and a dozen statements a batch; inside the ack it capped ingest at ~13k
spans/s (docs/storage.md). Behind it, ingest is bounded by decoding and the insert, and
the judge catches up in large batches; when it falls behind, nothing is held in memory —
the backlog is in the file — and its lag is reported (`/metrics`, `/healthz`, and the
query API's `judged_through`, which the dashboard shows as "verdicts N s behind").

The judge is the only user of the engine once the collector runs (the engine's own
retention pass runs here too), so the engine needs no lock. With `--judge on` on a DuckDB
file the engine is a `ProcessEngine` (engine/worker.py): the same calls, their Python work
done in a worker process, their statements run here on this connection, inside this
transaction — so nothing below changes with where the engine runs.
"""

from __future__ import annotations

import abc
import logging
import threading
import time
from collections import OrderedDict
from typing import Any

import duckdb

from .. import priority
from ..arrivals import RecentArrivals
from ..store import statements
from ..store.duckdb_store import DuckDBStore
from ..writer import MAX_GROUP_SPANS
from . import turns

log = logging.getLogger(__name__)

CLOSE_BUDGET_S = 30.0
"""At shutdown a judge goes on judging what is committed for this long at most, then stops;
what is left is judged after the next start (from the mark here; from the shared list on
PostgreSQL). Unbounded, a collector stopped while its judge was minutes behind took
minutes to exit, and a supervisor's stop timeout killed it before its checkpoint."""
MARK_KEY = "judge_mark"
"""`meta` key: the last commit_seq whose spans are judged."""
STEP_SPANS = 8 * MAX_GROUP_SPANS
"""Spans judged per transaction, at most: as many group commits as fit (a commit of unknown
size — from before a restart — counts as a full one). Bounding a step by spans rather than
by commits is what keeps a trickle cheap: one-span exports, each its own commit, are judged
thousands at a time once the judge is behind, so a big run is re-evaluated once per slice
of spans, not once per export."""
STEP_TARGET_S = 0.5
"""How long one step should take, at most: a step's verdicts become visible only when it
commits, so its duration is added to the freshness of every span in it. The judge keeps
the rate it measured (spans per second, wall clock: a loaded machine slows it) and sizes
each step to this many seconds of it — between MIN_STEP_SPANS and STEP_SPANS. With a fixed
STEP_SPANS, a judge catching up on a backlog at a few thousand spans/s (bench/
bench_judge_throughput.py on a loaded machine) made nothing visible for a minute; sized by
its rate, the backlog becomes visible oldest first, half a second at a time."""
MIN_STEP_SPANS = 8192
"""The smallest step the rate allows (below it, the per-step statements dominate)."""
GATHER_S = 0.5
"""While spans are committed at GATHER_MIN_SPANS_PER_S or more, how long the judge lets
commits gather before a step smaller than MIN_STEP_SPANS (counted from the oldest commit
not judged yet). A step's statements cost about the same for a few hundred spans as for
thousands (DuckDB binds and plans each one), so judging every small commit as it came
spent most of the judge's time on them: profiled with the real SDK sender at ~5k spans/s
(bench/bench_e2e.py), the judge's thread running the engine's statements was the
collector's busiest, ahead of the receiver, and the sender took 1.17x its time into a
null receiver. It adds at most this to a verdict's freshness (target p95 2 s), and
nothing to a trickle's: below the rate every commit is judged at once. On PostgreSQL the
lease holder gathers over the shared work list alike (engine/leased_judge.py), the rate
being its own collector's commits."""
GATHER_MIN_SPANS_PER_S = 1_000
MAX_COMMITS_PER_STEP = 65_536
"""Most commits one step takes (and sizes remembered): bounds the step's bookkeeping."""
RETRY_S = 1.0
RETENTION_INTERVAL_S = 3600.0
_NS_PER_DAY = 86_400 * 10**9


class JudgeBase(abc.ABC):
    """What both judges share: their thread, failure state, step sizing and retention."""

    def __init__(self, store: Any, engine: Any, retention_days: float, nice: int = 0) -> None:
        self.store = store
        self.engine = engine
        self.retention_days = retention_days
        self.nice = nice
        """How much lower the judge thread's CPU priority is (`--judge-nice`, priority.py)."""
        self._failures = 0
        self._next_retention = 0.0
        self.rate: float | None = None
        """Spans judged per second of a step (wall clock), smoothed; None: not measured yet."""
        self._wake = threading.Condition()
        self.noting = threading.Lock()
        """Held by the writer from its commit's COMMIT until `committed_through` returns,
        and by a judge reading a shared work list: each of this collector's commits is then
        either in what the read saw and already noted, or neither (leased_judge.py)."""
        self._stopping = False
        self._stop_by = float("inf")
        self._arrivals = RecentArrivals()
        """Spans this collector committed over the last second: whether to let commits
        gather (`_gather`)."""
        self._thread = threading.Thread(target=self._main, name="handoffscope-judge", daemon=True)

    def _stop(self) -> None:
        """Ask the thread to stop: it judges on until CLOSE_BUDGET_S from now at most."""
        with self._wake:
            self._stop_by = time.monotonic() + CLOSE_BUDGET_S
            self._stopping = True
            self._wake.notify()

    def _main(self) -> None:
        priority.lower_this_thread(self.nice)
        self._run()

    @abc.abstractmethod
    def _run(self) -> None:
        """The judge's thread: its own loop."""

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def failing(self) -> bool:
        """The last step failed (it is retried); /healthz reports it."""
        return self._failures > 0

    def step_budget(self) -> int:
        """Spans the next step may take: STEP_TARGET_S of the measured rate, within bounds."""
        if self.rate is None:
            return STEP_SPANS
        return int(min(STEP_SPANS, max(MIN_STEP_SPANS, self.rate * STEP_TARGET_S)))

    def _gather(self) -> None:
        """Wait (holding `_wake`) while spans are committed fast and the next step would be
        small, up to GATHER_S from the oldest unjudged commit (see GATHER_S)."""
        if self._arrivals.per_second() < GATHER_MIN_SPANS_PER_S:
            return
        while not self._stopping:
            waiting = self._waiting()
            if waiting is None:
                return  # nothing to wait for, or a backlog of unknown size
            spans, oldest_ns = waiting
            if spans >= MIN_STEP_SPANS:
                return
            # At most GATHER_S whatever the clocks say (on PostgreSQL the oldest commit's
            # time is the committing collector's clock).
            left = min(GATHER_S, oldest_ns / 1e9 + GATHER_S - time.time())
            if left <= 0:
                return
            self._wake.wait(left)

    @abc.abstractmethod
    def _waiting(self) -> tuple[int, int] | None:
        """(spans, commit time of the oldest) of the commits not judged yet; None when
        there are none or their size is not known. Called holding `_wake`."""

    def _measured(self, spans: int, elapsed: float) -> None:
        if spans >= 1024 and elapsed > 0:  # small steps say little about the rate
            rate = spans / elapsed
            self.rate = rate if self.rate is None else 0.5 * self.rate + 0.5 * rate

    def _retention_due(self) -> int | None:
        """The cutoff of a derived-table retention pass, if one is due (hourly)."""
        if self.retention_days <= 0 or time.monotonic() < self._next_retention:
            return None
        self._next_retention = time.monotonic() + RETENTION_INTERVAL_S
        return time.time_ns() - int(self.retention_days * _NS_PER_DAY)

    def _retention(self, con: Any, cutoff_ns: int) -> None:
        con.begin()
        try:
            self.engine.retention(con, cutoff_ns)
            turns.expire(con)
            con.commit()
        except BaseException:
            con.rollback()
            self.engine.rollback()
            raise


class Judge(JudgeBase):
    """The judge of one DuckDB file, from its durable mark (the module's docstring)."""

    def __init__(
        self, store: DuckDBStore, engine, *, retention_days: float = 0.0, nice: int = 0
    ) -> None:
        super().__init__(store, engine, retention_days, nice)
        # Its own connection, made here in the opening thread (DuckDB connections are
        # cheap; one per thread keeps the writer's transaction apart from ours).
        self.con: duckdb.DuckDBPyConnection = store.session()
        rows = statements.rows(self.con, "get_meta", {"key": MARK_KEY})
        self.mark = int(rows[0][0]) if rows else 0
        """Every commit up to this one is judged (0: none, or a file from before the judge)."""
        self.committed = max(self.mark, store.max_commit_seq())
        """The newest commit the writer reported; the judge works towards it."""
        self._commit_times: OrderedDict[int, int] = OrderedDict()
        self._commit_spans: dict[int, int] = {}
        """Spans of each commit not judged yet, as the writer reported them (or, for a
        backlog from before this start, as the store counts them)."""
        self._sized_after = -1
        """The mark the sizes of unreported commits were last read from the store at."""
        self._size_backlog()

    # -- called by the writer and the health endpoints (any thread) -----------------------

    def committed_through(
        self, seq: int, at_ns: int | None = None, spans: int | None = None
    ) -> None:
        """The writer committed group `seq` (at wall-clock `at_ns`, `spans` spans)."""
        with self._wake:
            if seq > self.committed:
                self.committed = seq
                self._commit_times[seq] = at_ns or time.time_ns()
                while len(self._commit_times) > 4096:
                    self._commit_times.popitem(last=False)
                if spans is not None and len(self._commit_spans) < MAX_COMMITS_PER_STEP:
                    self._commit_spans[seq] = spans
                self._arrivals.add(MAX_GROUP_SPANS if spans is None else spans)
            self._wake.notify()

    @property
    def pending_commits(self) -> int:
        return max(0, self.committed - self.mark)

    def lag_seconds(self, now_ns: int | None = None) -> float:
        """How long the oldest unjudged commit has waited (0 when caught up)."""
        with self._wake:
            if self.committed <= self.mark:
                return 0.0
            oldest = next((t for s, t in self._commit_times.items() if s > self.mark), None)
        if oldest is None:
            return 0.0
        return max(0.0, ((now_ns or time.time_ns()) - oldest) / 1e9)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, judging: bool = True) -> None:
        """Start judging (with `judging` False — `--judge off` — nothing starts: the lag is
        the writer's reports, counted without a thread)."""
        if judging:
            self._thread.start()

    def close(self, timeout: float | None = None) -> None:
        """Judge what is committed so far (within CLOSE_BUDGET_S), then stop (call after the
        writer closed)."""
        self._stop()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.con.close()

    def catch_up(self) -> None:
        """Judge every committed span now, in the calling thread (start-up, tests)."""
        while self.mark < self.committed:
            self._step()

    # -- the thread ------------------------------------------------------------------------

    def _prepare(self) -> None:
        """An engine that loads its memory lazily (the worker's: engine/worker.py) loads it
        now, first thing in this thread, in a transaction of its own — as the collector's
        start loads an engine in its process — rather than in the first step."""
        con = self.con
        try:
            con.begin()
            self.engine.prepare(con)
            con.commit()
        except Exception:
            con.rollback()
            self.engine.rollback()
            log.error("loading the judge's engine failed; the first step retries", exc_info=True)

    def _run(self) -> None:
        self._prepare()
        while True:
            with self._wake:
                while self.mark >= self.committed and not self._stopping:
                    self._wake.wait(timeout=1.0)
                    if self.mark >= self.committed:
                        break  # idle wake-up: retention may be due
                self._gather()
                caught_up = self.mark >= self.committed
                stopping = self._stopping and (caught_up or time.monotonic() >= self._stop_by)
            if stopping:
                if not caught_up:
                    log.warning(
                        "judge stopping after %.0f s with commits %d..%d not judged yet: "
                        "they are judged after the next start",
                        CLOSE_BUDGET_S,
                        self.mark + 1,
                        self.committed,
                    )
                return
            self._retention_if_due()
            if self.mark >= self.committed:
                continue
            try:
                self._step()
                self._failures = 0
            except Exception:
                self._failures += 1
                if self._failures == 1 or self._failures % 60 == 0:
                    log.error("judging commits after %d failed; retrying", self.mark, exc_info=True)
                time.sleep(RETRY_S)
                if self._stopping and self._failures > 3:
                    log.error(
                        "judge stopping with commits %d..%d unjudged", self.mark + 1, self.committed
                    )
                    return

    def _waiting(self) -> tuple[int, int] | None:
        pending = self.committed - self.mark
        sizes = [n for s, n in self._commit_spans.items() if s > self.mark]
        if pending <= 0 or len(sizes) < pending:
            return None
        oldest = next((t for s, t in self._commit_times.items() if s > self.mark), None)
        return None if oldest is None else (sum(sizes), oldest)

    def _size_backlog(self) -> None:
        """Read the sizes of the unjudged commits the writer did not report (a backlog left
        by an earlier run, or beyond MAX_COMMITS_PER_STEP remembered): without them each
        counts as MAX_GROUP_SPANS, and a judge catching up on 512-span commits took one
        per step, its fixed cost per step three times its work (bench_judge_throughput.py).
        At most once per mark."""
        if self.mark >= self.committed or self.mark + 1 in self._commit_spans:
            return
        if self._sized_after == self.mark:
            return
        self._sized_after = self.mark
        sizes = self.store.commit_sizes(self.mark, MAX_COMMITS_PER_STEP, con=self.con)
        with self._wake:
            for seq, n in sizes.items():
                self._commit_spans.setdefault(seq, n)

    def _step_end(self) -> int:
        """The last commit of the next step: as many commits as the budget holds (one at least)."""
        self._size_backlog()
        budget = self.step_budget()
        with self._wake:
            upto, total = self.mark + 1, self._commit_spans.get(self.mark + 1, MAX_GROUP_SPANS)
            while upto < self.committed and upto - self.mark < MAX_COMMITS_PER_STEP:
                nxt = self._commit_spans.get(upto + 1, MAX_GROUP_SPANS)
                if total + nxt > budget:
                    break
                upto, total = upto + 1, total + nxt
            return min(upto, self.committed)

    def _step(self) -> None:
        upto = self._step_end()
        con = self.con
        t0 = time.perf_counter()
        con.begin()
        try:
            spans = statements.arrow(con, "select_commits", {"lo": self.mark, "hi": upto})
            if spans.num_rows:
                turns.refresh(con, self.engine.apply(con, spans))
            statements.run(con, "set_meta", {"key": MARK_KEY, "value": str(upto)})
            con.commit()
        except BaseException:
            con.rollback()
            self.engine.rollback()
            raise
        self._measured(spans.num_rows, time.perf_counter() - t0)
        with self._wake:
            self.mark = upto
            for s in [s for s in self._commit_times if s <= upto]:
                del self._commit_times[s]
            for s in [s for s in self._commit_spans if s <= upto]:
                del self._commit_spans[s]

    def _retention_if_due(self) -> None:
        cutoff_ns = self._retention_due()
        if cutoff_ns is None:
            return
        try:
            self._retention(self.con, cutoff_ns)
        except Exception:
            log.error("derived-table retention failed; retrying in an hour", exc_info=True)
