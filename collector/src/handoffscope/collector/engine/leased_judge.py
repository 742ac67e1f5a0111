"""The judges of a shared store: the collectors share the runs' partitions out between them.

Several collectors write one PostgreSQL database (`store/postgres_store.py`); each group
commit, whichever collector made it, lists its number on `judge_work` in its own
transaction — once for each of the runs' partitions (`records.PARTITIONS`, by run key).
Judgment over a run must happen exactly once however many collectors there are, and with
every span of the run in view — a run's spans may arrive at different collectors (one
trace id per resume). A run belongs to one partition, and one collector at a time judges
a partition:

- **membership**: every judging collector holds the judge lease's key *shared* for as
  long as its session lives (`join_judges.sql`); `judge_members.sql` counts them. (A
  collector of an older version takes that key exclusively, to judge alone: the two never
  judge at once.)
- **partitions** are session advisory locks (`try_partition.sql`). Every `BALANCE_S`
  each judge aims at its fair share — the partitions over the judges, rounded up — taking
  free ones while it holds fewer, giving its last ones back while it holds more, so a
  collector that joins gets partitions within seconds and they spread evenly. When a
  process dies, PostgreSQL ends its session, rolls its open step back (verdicts and
  work-list deletes together) and frees its locks: the others see one judge fewer and take
  its partitions over within about `BALANCE_S` plus the time PostgreSQL takes to notice the
  closed socket (immediate on a kill; TCP keepalive on a vanished host).
- **when its share changes** the judge starts from a fresh engine for the partitions it
  now holds, loaded from the derived tables (`HealthEngine.load`): what another collector
  judged for them is in the tables, not in this process's memory.
- **a step** takes the oldest commits still listed for a held partition (up to a step's
  worth of spans), judges the spans of their runs in those partitions — with the whole
  commits' outcomes, which every partition's policy needs (`shards.batch_outcomes`) —
  writes the changed rows and deletes the commits' rows of those partitions, all in ONE
  transaction, so a commit is judged once per partition: by the step that deletes its
  row. A commit that lands after a later-numbered one is simply listed later; a mark
  would skip it.

The lag (`/healthz`, `/metrics`, the dashboard's "verdicts N s behind") is the shared
list's: every collector reports the same backlog — the commits some partition has not
judged yet — measured from the committing collector's clock (keep the collectors' clocks
in NTP sync).

Same surface as `judge.Judge`, which the writer and the health endpoints call.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from handoffscope.instrumentation import semconv as sc

from ..store import statements
from ..store.postgres_store import PostgresStore
from ..store.records import PARTITIONS, column_name, run_key
from ..writer import MAX_GROUP_SPANS
from . import turns
from .judge import RETRY_S, JudgeBase
from .shards import batch_outcomes

log = logging.getLogger(__name__)

LEASE = {"name": "handoffscope.judge"}
"""The judges' shared lock's name (hashed to its key by join_judges.sql)."""
PARTITION_KEY = 0x48534A50
"""The first half of each partition lock's key ("HSJP"; the second is the partition)."""
BALANCE_S = 1.0
"""How often a judge counts the judges and moves towards its fair share."""
POLL_S = 0.5
"""How often a judge without work, or without the lease, looks again. A local commit
wakes the holder at once; another collector's commit waits for this poll."""


class LeasedJudge(JudgeBase):
    def __init__(
        self,
        store: PostgresStore,
        make_engine: Callable[[], Any],
        *,
        retention_days: float = 0.0,
        nice: int = 0,
    ) -> None:
        # `engine` judges the partitions held (None while this collector holds none).
        super().__init__(store, None, retention_days, nice)
        self.make_engine = make_engine
        self.con = store.session()
        self.joined = False
        """Whether this collector is counted among the store's judges."""
        self.parts: frozenset[int] = frozenset()
        """The partitions this collector judges now."""
        self._balanced_at = 0.0
        self.leases_taken = 0
        self.steps = 0
        self._backlog: tuple[int, int | None, int] = (0, None, 0)
        """The shared list as last read (and this collector's commits since): commits,
        commit time of the oldest, spans."""
        self._gathered_at: tuple[int, int] | None = None
        """`_noted` when `_gather` found nothing waiting (else None)."""
        self._noted = (0, 0)
        """This collector's commits and their spans, counted since it started: a read of
        the list adds those noted after it (`_set_backlog`)."""
        self._judging = True
        # The shared list as it is now, before the thread first looks: /healthz and
        # /metrics must not say "nothing pending" for the first poll after a start.
        try:
            self._read_backlog()
        except Exception:  # PostgreSQL away: the thread's first look retries
            log.debug("reading the judge's work list failed", exc_info=True)
            with contextlib.suppress(Exception):
                self.con.rollback()

    # -- called by the writer and the health endpoints (any thread) -----------------------

    def committed_through(
        self, seq: int, at_ns: int | None = None, spans: int | None = None
    ) -> None:
        """The writer committed a group here: look at the list now rather than at the poll."""
        n = MAX_GROUP_SPANS if spans is None else spans
        with self._wake:
            count, oldest, pending = self._backlog
            self._backlog = (
                count + 1,
                oldest if oldest is not None else at_ns or time.time_ns(),
                pending + n,
            )
            self._arrivals.add(n)
            self._noted = (self._noted[0] + 1, self._noted[1] + n)
            self._wake.notify()

    @property
    def pending_commits(self) -> int:
        return self._backlog[0]

    def lag_seconds(self, now_ns: int | None = None) -> float:
        """How long the oldest commit on the shared list has waited (0 when it is empty)."""
        count, oldest, _ = self._backlog
        if not count or oldest is None:
            return 0.0
        return max(0.0, ((now_ns or time.time_ns()) - oldest) / 1e9)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, judging: bool = True) -> None:
        """Start the thread; with `judging` False it only watches the backlog (--judge off)."""
        self._judging = judging
        self._thread.start()

    @property
    def holding(self) -> bool:
        """Whether this collector judges any partition now."""
        return bool(self.parts)

    def close(self, timeout: float | None = None) -> None:
        """Judge what is listed for the partitions held (within CLOSE_BUDGET_S), hand them
        back, stop."""
        self._stop()
        if self._thread.is_alive():
            self._thread.join(timeout)
        try:
            self.con.rollback()
            self._release(self.parts)
            if self.joined:
                statements.rows(self.con, "leave_judges", LEASE)
            self.con.commit()
        except Exception:  # the connection may be gone; closing it frees the locks anyway
            log.debug("handing the judge partitions back failed", exc_info=True)
        self.parts = frozenset()
        self.joined = False
        self.con.close()

    def catch_up(self) -> None:
        """Take every free partition and judge everything listed for them, in the calling
        thread (tests)."""
        self._balance(want=PARTITIONS)
        if not self.parts:
            raise RuntimeError("other collectors hold every judge partition")
        while self._step():
            pass

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            # Only a step begun after the stop was asked may end the thread by finding
            # nothing: one begun before may have read the list before the last commits
            # (seen: the fourth commit of test_judge's gathering test left unjudged).
            stopping = self._stopping
            seen = self._noted
            busy = False
            try:
                due = time.monotonic() - self._balanced_at >= BALANCE_S
                if self._judging and not self._stopping and due:
                    self._balance()
                if self._judging and self.parts:
                    self._retention_if_due()
                    with self._wake:
                        # Nothing waiting: a commit of this collector noted before the
                        # step reads its work makes the step choose again (`_step`).
                        self._gather()
                        if self._waiting() is None:
                            self._gathered_at = self._noted
                    busy = self._step()
                else:
                    self._read_backlog()
                self._failures = 0
            except Exception:
                self._failures += 1
                if self._failures == 1 or self._failures % 60 == 0:
                    log.error("judging the shared work list failed; retrying", exc_info=True)
                self._drop_lease()
                if self._stopping and self._failures > 3:
                    return
                time.sleep(RETRY_S)
                continue
            if stopping and (not busy or time.monotonic() > self._stop_by):
                return
            if not busy:
                with self._wake:
                    # A commit noted since this round began was notified while no one
                    # waited (during the step, or a step that chose again): another round
                    # at once, not POLL_S later. One round a commit at most: the next
                    # round looks from here.
                    if not self._stopping and self._noted == seen:
                        self._wake.wait(timeout=POLL_S)

    def _balance(self, want: int | None = None) -> None:
        """Move towards this collector's fair share of the partitions (`want` of them,
        by default the partitions over the judges, rounded up); a fresh engine for the
        new share when it changed."""
        con = self.con
        self._balanced_at = time.monotonic()
        if not self.joined:
            self.joined = bool(statements.rows(con, "join_judges", LEASE)[0][0])
            con.commit()
            if not self.joined:  # an older collector judges alone
                return
        judges = max(1, int(statements.rows(con, "judge_members", LEASE)[0][0]))
        share = math.ceil(PARTITIONS / judges) if want is None else want
        held = set(self.parts)
        if len(held) > share:
            extra = sorted(held)[share:]
            self._release(extra)
            held -= set(extra)
        else:
            # Start the search where this process's share would start, so that judges
            # joining together do not all race for partition 0 first.
            start = (id(self) // 16) % PARTITIONS
            for i in range(PARTITIONS):
                if len(held) >= share:
                    break
                part = (start + i) % PARTITIONS
                if (
                    part not in held
                    and statements.rows(
                        con, "try_partition", {"lock": PARTITION_KEY, "part": part}
                    )[0][0]
                ):
                    held.add(part)
        con.commit()
        if held != self.parts:
            self._judge(frozenset(held))

    def _judge(self, parts: frozenset[int]) -> None:
        """Judge `parts` from now on: what other collectors judged of them is in the
        tables, not here — a fresh engine, loaded, in a transaction of its own."""
        old, self.engine = self.engine, None
        if old is not None:
            old.release()
        self.parts = parts
        if not parts:
            log.info("this collector judges no partition now")
            return
        engine = self.make_engine()
        engine.repart(parts)
        try:
            self.con.begin()
            engine.load(self.con)
            self.con.commit()
        except BaseException:
            self._drop_lease()
            engine.release()
            raise
        self.engine = engine
        self.leases_taken += 1
        log.info(
            "this collector judges %d of %d partitions (share taken %d times)",
            len(parts),
            PARTITIONS,
            self.leases_taken,
        )

    def _release(self, parts: Any) -> None:
        for part in parts:
            statements.rows(self.con, "release_partition", {"lock": PARTITION_KEY, "part": part})

    def _drop_lease(self) -> None:
        """After a failure: give the partitions back (or lose them with the connection)
        and forget the engine, whose memory may be ahead of the rolled-back tables (a
        worker engine stops its processes: their memory is of no use until the next share
        is taken)."""
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.release()
        held, self.parts = self.parts, frozenset()
        try:
            self.con.rollback()
            self._release(held)
            self.con.commit()
        except Exception:
            log.debug("giving the judge partitions back failed", exc_info=True)
        if not self.con.closed:
            return
        # The connection is broken: PostgreSQL freed the locks with the session.
        self.joined = False
        self.con.close()
        try:
            self.con = self.store.session()
        except Exception:
            # PostgreSQL is away (restarting, failing over): keep the closed session. The
            # next attempt fails on it and comes back here, every RETRY_S, until the server
            # answers. (Raising here used to end the judge thread for good.)
            log.debug("reconnecting the judge failed; retrying", exc_info=True)

    def _step(self) -> bool:
        """Judge the oldest commits listed for the partitions held; return whether there
        were any."""
        con = self.con
        t0 = time.perf_counter()
        held = sorted(self.parts)
        con.begin()
        try:
            work = statements.rows(con, "judge_work", {"spans": self.step_budget(), "parts": held})
            seqs = [int(seq) for seq, _, _ in work]
            gathered_at, self._gathered_at = self._gathered_at, None
            changed = gathered_at is not None and gathered_at != self._noted
            if seqs and changed and not self._stopping:
                # Seen: the first of three small commits judged alone, having landed
                # between the choice not to wait and this read. Nothing done: the next
                # round chooses again with it counted (the list is not empty now, so
                # this cannot repeat without a wait between).
                con.rollback()
                return False
            n = 0
            if seqs:
                spans = statements.arrow(con, "select_work_spans", {"seqs": seqs})
                listed = {int(seq) * PARTITIONS + int(p) for seq, _, parts in work for p in parts}
                mine = _listed(spans, listed)
                n = mine.num_rows
                outcomes = batch_outcomes(spans)
                if n or outcomes:
                    turns.refresh(con, self.engine.apply(con, mine, outcomes))
                statements.run(con, "done_judge_work", {"seqs": seqs, "parts": held})
            backlog, noted = self._backlog_now(con)
            con.commit()
        except BaseException:
            con.rollback()
            if self.engine is not None:
                self.engine.rollback()
            raise
        self._measured(n, time.perf_counter() - t0)
        self._set_backlog(backlog, noted)
        if seqs:
            self.steps += 1
        return bool(seqs)

    def _read_backlog(self) -> None:
        backlog, noted = self._backlog_now(self.con)
        self.con.commit()
        self._set_backlog(backlog, noted)

    def _backlog_now(self, con: Any) -> tuple[tuple[Any, Any, Any], tuple[int, int]]:
        """The shared list's (commits, oldest, spans) and this collector's commits noted
        so far, read together: the writer holds `noting` from its COMMIT until it has told
        this judge, so each of its commits is in both or in neither."""
        with self.noting:
            noted = self._noted
            return statements.rows(con, "judge_backlog")[0], noted

    def _set_backlog(self, backlog: tuple[Any, Any, Any], noted: tuple[int, int]) -> None:
        """The list as read, plus this collector's commits noted since (committed after the
        read, so not in it: counted once; seen as `judge_pending_commits` 0 right after an
        answered export, and as commits vanishing while a judge let them gather, when a
        read overwrote the commits noted during it)."""
        count, oldest, pending = backlog
        with self._wake:
            commits, spans = self._noted[0] - noted[0], self._noted[1] - noted[1]
            if commits and oldest is None:
                oldest = self._backlog[1]
            self._backlog = (
                int(count) + commits,
                None if oldest is None else int(oldest),
                int(pending) + spans,
            )

    def _waiting(self) -> tuple[int, int] | None:
        # The shared list as last read, plus this collector's commits since: what other
        # collectors committed meanwhile is not counted, so the wait may run its full
        # GATHER_S, and the step then takes everything listed.
        count, oldest, pending = self._backlog
        return None if not count or oldest is None else (pending, oldest)

    def _retention_if_due(self) -> None:
        cutoff_ns = self._retention_due()
        if cutoff_ns is not None:
            self._retention(self.con, cutoff_ns)


_RUN_ID = column_name(sc.RUN_ID)


def _listed(spans: pa.Table, listed: set[int]) -> pa.Table:
    """The spans whose (commit, partition of their run) is in `listed`
    (`commit_seq * PARTITIONS + partition`): this step's share of the commits, less the
    partitions another collector judged them for already."""
    runs = spans.column(_RUN_ID)
    ids = pc.unique(runs).to_pylist()
    part_of = pa.array([0 if r is None else run_key(r) % PARTITIONS for r in ids], pa.int64())
    parts = pc.take(part_of, pc.index_in(runs, value_set=pa.array(ids, runs.type)))
    keys = pc.add(pc.multiply(spans.column("commit_seq"), PARTITIONS), parts)
    return spans.filter(pc.is_in(keys, value_set=pa.array(sorted(listed), pa.int64())))
