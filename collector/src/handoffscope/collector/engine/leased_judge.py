"""The judge of a shared store: one collector at a time judges, from the shared work list.

Several collectors write one PostgreSQL database (`store/postgres_store.py`); each group
commit, whichever collector made it, lists its number on `judge_work` in its own
transaction. Judgment over a run must happen exactly once however many collectors there
are, and with every span of the run in view — a run's spans may arrive at different
collectors (one trace id per resume). So one collector at a time judges everything:

- **the lease** is a session advisory lock (`try_lease.sql`) held by the judge's
  own connection. Every collector's judge thread tries for it every `POLL_S`; the one that
  gets it judges until it stops. When its process dies, PostgreSQL ends the session,
  rolls its open step back (verdicts and work-list deletes together) and frees the lock:
  another collector takes over within about `POLL_S` plus the time PostgreSQL takes to
  notice the closed socket (immediate on a kill; TCP keepalive on a vanished host);
- **on taking the lease** the judge starts from a fresh health engine loaded from the
  derived tables (`HealthEngine.load`): what another collector judged since it last held
  the lease is in the tables, not in this process's memory;
- **a step** takes the oldest listed commits (up to a step's worth of spans), merges and
  judges their spans, writes the changed rows and deletes the commits from the list — all
  in ONE transaction, so a commit is judged once: by the step that deletes it. A commit
  that lands after a later-numbered one is simply listed later; a mark would skip it.

The lag (`/healthz`, `/metrics`, the dashboard's "verdicts N s behind") is the shared
list's: every collector reports the same backlog, measured from the committing
collector's clock (keep the collectors' clocks in NTP sync).

Same surface as `judge.Judge`, which the writer and the health endpoints call.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from ..store import statements
from ..store.postgres_store import PostgresStore
from ..writer import MAX_GROUP_SPANS
from .judge import RETRY_S, JudgeBase

log = logging.getLogger(__name__)

LEASE = {"name": "handoffscope.judge"}
"""The advisory lock's name (hashed to its key by try_lease.sql)."""
POLL_S = 0.5
"""How often a judge without work, or without the lease, looks again. A local commit
wakes the holder at once; another collector's commit waits for this poll."""
CLOSE_BUDGET_S = 30.0
"""At shutdown the holder judges what is listed for this long at most, then hands over."""


class LeasedJudge(JudgeBase):
    def __init__(
        self,
        store: PostgresStore,
        make_engine: Callable[[], Any],
        *,
        retention_days: float = 0.0,
        nice: int = 0,
    ) -> None:
        # `engine` is the current lease's (None while another collector holds it).
        super().__init__(store, None, retention_days, nice)
        self.make_engine = make_engine
        self.con = store.session()
        self.holding = False
        """Whether this collector holds the judge lease."""
        self.leases_taken = 0
        self.steps = 0
        self._backlog: tuple[int, int | None, int] = (0, None, 0)
        """The shared list as last read (and this collector's commits since): commits,
        commit time of the oldest, spans."""
        self._noted = (0, 0)
        """This collector's commits and their spans, counted since it started: a read of
        the list adds those noted while it ran (`_read_backlog`)."""
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

    def close(self, timeout: float | None = None) -> None:
        """Judge what is listed (if holding, within CLOSE_BUDGET_S), hand the lease back, stop."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)
        try:
            if self.holding:
                self.con.rollback()
                statements.rows(self.con, "release_lease", LEASE)
                self.con.commit()
        except Exception:  # the connection may be gone; closing it frees the lock anyway
            log.debug("releasing the judge lease failed", exc_info=True)
        self.holding = False
        self.con.close()

    def catch_up(self) -> None:
        """Take the lease and judge everything listed, in the calling thread (tests)."""
        if not self.holding and not self._take_lease():
            raise RuntimeError("another collector holds the judge lease")
        while self._step():
            pass

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        deadline: float | None = None
        while True:
            if self._stopping and deadline is None:
                deadline = time.monotonic() + CLOSE_BUDGET_S
            busy = False
            try:
                if self._judging and (self.holding or (not self._stopping and self._take_lease())):
                    self._retention_if_due()
                    with self._wake:
                        self._gather()
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
            if deadline is not None and (not busy or time.monotonic() > deadline):
                return
            if not busy:
                with self._wake:
                    if not self._stopping:
                        self._wake.wait(timeout=POLL_S)

    def _take_lease(self) -> bool:
        con = self.con
        got = bool(statements.rows(con, "try_lease", LEASE)[0][0])
        con.commit()
        if not got:
            return False
        # What other collectors judged while they held the lease is in the tables, not
        # here: a fresh engine, loaded, in a transaction of its own.
        engine = self.make_engine()
        try:
            con.begin()
            engine.load(con)
            con.commit()
        except BaseException:
            self._drop_lease()
            engine.release()
            raise
        self.engine = engine
        self.holding = True
        self.leases_taken += 1
        log.info("this collector holds the judge lease (taken %d times)", self.leases_taken)
        return True

    def _drop_lease(self) -> None:
        """After a failure: give the lease back (or lose it with the connection) and forget
        the engine, whose memory may be ahead of the rolled-back tables (a worker engine
        stops its processes: their memory is of no use until the lease is taken again)."""
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.release()
        was = self.holding
        self.holding = False
        try:
            self.con.rollback()
            if was:
                statements.rows(self.con, "release_lease", LEASE)
                self.con.commit()
        except Exception:
            log.debug("giving the judge lease back failed", exc_info=True)
        if not self.con.closed:
            return
        # The connection is broken: PostgreSQL freed the lock with the session.
        self.con.close()
        try:
            self.con = self.store.session()
        except Exception:
            # PostgreSQL is away (restarting, failing over): keep the closed session. The
            # next attempt fails on it and comes back here, every RETRY_S, until the server
            # answers. (Raising here used to end the judge thread for good.)
            log.debug("reconnecting the judge failed; retrying", exc_info=True)

    def _step(self) -> bool:
        """Judge the oldest listed commits; return whether there were any."""
        con = self.con
        t0 = time.perf_counter()
        con.begin()
        try:
            work = statements.rows(con, "judge_work", {"spans": self.step_budget()})
            seqs = [int(seq) for seq, _ in work]
            n = 0
            if seqs:
                spans = statements.arrow(con, "select_work_spans", {"seqs": seqs})
                n = spans.num_rows
                if n:
                    self.engine.apply(con, spans)
                statements.run(con, "done_judge_work", {"seqs": seqs})
            count, oldest, pending = statements.rows(con, "judge_backlog")[0]
            con.commit()
        except BaseException:
            con.rollback()
            if self.engine is not None:
                self.engine.rollback()
            raise
        self._measured(n, time.perf_counter() - t0)
        with self._wake:
            self._backlog = (int(count), None if oldest is None else int(oldest), int(pending))
        if seqs:
            self.steps += 1
        return bool(seqs)

    def _read_backlog(self) -> None:
        with self._wake:
            noted = self._noted
        count, oldest, pending = statements.rows(self.con, "judge_backlog")[0]
        self.con.commit()
        with self._wake:
            # A commit of this collector noted while the list was being read may be missing
            # from what the read saw: counted on top, or it would vanish from /healthz until
            # the next poll (seen: `judge_pending_commits` 0 right after an answered export).
            # One that the read did see is then counted twice, until the next read.
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
