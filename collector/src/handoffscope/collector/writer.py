"""The single writer: one thread owns the DuckDB read-write connection.

Receivers hand it `SpanBatch`es through `submit()`, which never blocks: the queue is
bounded (`--queue-batches`) and a full queue raises `QueueFull`, which the receivers turn
into 429 / RESOURCE_EXHAUSTED with Retry-After — exporters retry, memory stays bounded.

Group commit: the thread takes every batch waiting (up to MAX_GROUP_SPANS), joins their
Arrow tables (built by the submitting threads) into ONE table, removes spans sent twice
(within the group here, against the table in `store.insert_new_spans`), inserts the new
ones stamped with the group's `commit_seq`, adds the drop counts, and commits. Only then
is each batch's future resolved: an HTTP 200 / gRPC OK means the spans are durable. The
verdicts come behind: the writer tells the judge (`engine/judge.py`) which commit is the newest,
and the judge derives the engine's tables from the spans of each commit after its mark.
One commit per group instead of per export is what makes ack-after-commit affordable:
the commit's fixed cost is shared by every export that waited for it.

If a group fails, each of its batches is retried alone, so one bad batch fails only its
own export (answered 503, which exporters retry) and not its neighbours.

Retention of spans runs in this thread too (it writes): at start and every
RETENTION_INTERVAL_S, spans that ended more than `--retention-days` ago are deleted (the
judge expires the derived rows on its own schedule).

`close()` stops intake, lets the thread commit everything already queued, and returns;
the caller then closes the store (which checkpoints the file).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from handoffscope.collector.metrics import Metrics
from handoffscope.collector.processor.allowlist import SpanBatch
from handoffscope.collector.store.duckdb_store import build_spans_table, span_keys
from handoffscope.collector.store.interface import Store

log = logging.getLogger(__name__)

MAX_GROUP_SPANS = 32_768
"""Spans per group commit at most; bounds the transaction's memory and latency."""
RETENTION_INTERVAL_S = 3600.0
IDLE_WAKEUP_S = 1.0
"""How often an idle writer wakes to see whether retention is due."""
_NS_PER_DAY = 86_400 * 10**9


class QueueFull(Exception):
    """The writer is behind; answer 429 / RESOURCE_EXHAUSTED with Retry-After."""


class WriterClosed(Exception):
    """The collector is shutting down (or the writer died); answer 503 / UNAVAILABLE."""


@dataclass
class _Job:
    table: pa.Table
    """The batch's spans as Arrow, built by the submitting thread."""
    batch: SpanBatch
    future: Future


_STOP = object()


class Writer:
    def __init__(
        self,
        store: Store,
        judge,
        metrics: Metrics,
        *,
        queue_batches: int,
        retention_days: float,
    ) -> None:
        self.store = store
        self.judge = judge
        """Told of every commit (`committed_through`); None: nothing derives verdicts."""
        self.commit_seq = store.max_commit_seq()
        self.metrics = metrics
        self.retention_days = retention_days
        self._queue: queue.Queue = queue.Queue(maxsize=queue_batches)
        self._accepting = True
        self._intake_lock = threading.Lock()
        self._next_retention = 0.0
        self.spans_stored = store.count_spans()
        """Rows in `spans`, kept current by this thread (served by /healthz)."""
        self._thread = threading.Thread(target=self._run, name="handoffscope-writer", daemon=True)
        metrics.queue_depth = self._queue.qsize
        metrics.spans_in_store = lambda: self.spans_stored

    @property
    def alive(self) -> bool:
        """Whether exports can still be committed."""
        return self._accepting and self._thread.is_alive()

    def start(self) -> None:
        # The first retention pass runs here, before any receiver is up, so a restarted
        # collector never serves spans already past retention.
        self._retention_if_due()
        self._thread.start()

    # intake (any thread) -----------------------------------------------------------------

    def submit(self, batch: SpanBatch, received_ns: int | None = None) -> Future:
        """Queue a batch; the future resolves once it is committed. Never blocks."""
        future: Future = Future()
        # The Arrow table is built here, in the receiver's thread: it is Python work that
        # holds the GIL, and the writer thread should spend its time inside DuckDB (which
        # releases the GIL) so that receiving and committing overlap.
        batch.columns["received_ns"] = [received_ns or time.time_ns()] * batch.count
        job = _Job(build_spans_table(batch.columns), batch, future)
        batch.columns = {}  # the table has them now; do not hold both while queued
        with self._intake_lock:
            if not self._accepting or not self._thread.is_alive():
                raise WriterClosed("the collector is shutting down")
            try:
                self._queue.put_nowait(job)
            except queue.Full:
                raise QueueFull(
                    f"{self._queue.maxsize} exports are already waiting for the writer"
                ) from None
        return future

    def close(self, timeout: float | None = None) -> None:
        """Refuse new batches, commit every queued one, stop the thread."""
        with self._intake_lock:
            if not self._accepting:
                return
            self._accepting = False
        if self._thread.is_alive():
            self._queue.put(_STOP)  # blocks only while the (draining) queue is full
            self._thread.join(timeout)

    # the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:
            # A bug here must not leave exporters waiting forever on futures nobody
            # resolves: fail what is queued (receivers answer 503) and refuse new work.
            log.critical("writer thread died; refusing further exports", exc_info=True)
            with self._intake_lock:
                self._accepting = False
            while True:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is not _STOP:
                    _settle(job.future, WriterClosed(f"writer failed: {exc}"))

    def _loop(self) -> None:
        stopping = False
        while not stopping:
            try:
                first = self._queue.get(timeout=IDLE_WAKEUP_S)
            except queue.Empty:
                self._retention_if_due()
                continue
            if first is _STOP:
                break
            jobs = [first]
            spans = first.batch.count
            while spans < MAX_GROUP_SPANS:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is _STOP:
                    stopping = True
                    break
                jobs.append(job)
                spans += job.batch.count
            self._commit_group(jobs)
            self._retention_if_due()
        # Anything submitted before close() flipped _accepting and after _STOP was queued
        # cannot exist (intake is locked), so the queue is empty here.

    def _commit_group(self, jobs: list[_Job]) -> None:
        try:
            stored, duplicates, drops = self._write(jobs)
        except Exception as exc:
            if len(jobs) == 1:
                log.error("commit failed; export answered 503: %s", exc, exc_info=True)
                self.metrics.inc("commit_failures")
                _settle(jobs[0].future, exc)
                return
            log.warning(
                "group commit of %d exports failed (%s); retrying each alone", len(jobs), exc
            )
            for job in jobs:
                self._commit_group([job])
            return
        self.spans_stored += stored
        if stored and self.judge is not None:
            self.judge.committed_through(self.commit_seq, spans=stored)
        self.metrics.add_committed(
            stored=stored,
            duplicates=duplicates,
            rejected=sum(job.batch.rejected for job in jobs),
            drops=drops,
            refused=sum((job.batch.refused for job in jobs), Counter()),
        )
        for job in jobs:
            _settle(job.future, None)

    def _write(self, jobs: list[_Job]) -> tuple[int, int, Counter]:
        table = _group_table(jobs)
        con = self.store.con
        con.begin()
        seq = self.store.next_commit_seq(self.commit_seq)
        try:
            new_spans = self.store.insert_new_spans(table, commit_seq=seq)
            drops = _fresh_drops(jobs, new_spans, table.num_rows)
            self.store.add_drops(drops)
            con.commit()
        except BaseException:
            con.rollback()
            raise
        if new_spans.num_rows:
            self.commit_seq = seq
        offered = sum(job.batch.count for job in jobs)
        return new_spans.num_rows, offered - new_spans.num_rows, drops

    def _retention_if_due(self) -> None:
        if self.retention_days <= 0 or time.monotonic() < self._next_retention:
            return
        self._next_retention = time.monotonic() + RETENTION_INTERVAL_S
        cutoff_ns = time.time_ns() - int(self.retention_days * _NS_PER_DAY)
        con = self.store.con
        try:
            con.begin()
            try:
                deleted = self.store.delete_expired(cutoff_ns)
                con.commit()
            except BaseException:
                con.rollback()
                raise
        except Exception:
            log.error("retention failed; will retry in %.0f s", RETENTION_INTERVAL_S, exc_info=True)
            return
        self.spans_stored -= deleted
        if deleted:
            log.info(
                "retention: deleted %d spans that ended over %s days ago",
                deleted,
                self.retention_days,
            )


def _settle(future: Future, error: BaseException | None) -> None:
    # A receiver may have given up on the future (client gone, timeout) and cancelled it;
    # the batch is committed all the same, and that must not break the writer.
    if future.set_running_or_notify_cancel():
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


def _fresh_drops(jobs: list[_Job], new_spans: pa.Table, offered: int) -> Counter:
    """Drops of the exports that brought at least one new span.

    An exporter retrying an export that was already committed (its first answer was lost)
    re-sends the same content attributes; counting them again would inflate the drops an
    operator reads. A retried export is all duplicates, so it is recognised as one.
    """
    drops: Counter = Counter()
    if new_spans.num_rows == offered:  # the usual case: nothing was a copy
        for job in jobs:
            drops.update(job.batch.drops)
        return drops
    new_keys = span_keys(new_spans)
    for job in jobs:
        t = job.table
        if t.num_rows == 0 or pc.any(pc.is_in(span_keys(t), value_set=new_keys)).as_py():
            drops.update(job.batch.drops)
    return drops


def _group_table(jobs: list[_Job]) -> pa.Table:
    """One Arrow table for a group; a span sent twice within the group is kept once."""
    tables = [job.table for job in jobs if job.table.num_rows]
    if not tables:
        return jobs[0].table
    table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    keys = span_keys(table)
    if pc.count_distinct(keys).as_py() == table.num_rows:
        return table  # the usual case
    # The first row of each key, found by Arrow's hash aggregation rather than a Python
    # loop over the rows (a group can hold 32k spans; a retry storm makes many copies).
    first = (
        pa.table({"key": keys, "row": pa.array(range(table.num_rows), pa.int64())})
        .group_by("key", use_threads=False)
        .aggregate([("row", "min")])
        .column("row_min")
    )
    return table.take(first.take(pc.sort_indices(first)))  # in arrival order
