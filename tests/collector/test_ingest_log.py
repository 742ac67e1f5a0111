"""The ingest log (`--ingest-log`, collector/ingest_log.py): a 200 means the export is
fsynced to the log; the loader moves logged exports into the DuckDB file behind the
answer, and a collector killed before it did loads them at its next start — once.

The segment files are read and written here through the real `IngestLog`; the collector
tests run the real collector process and SIGKILL it.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from concurrent.futures import Future
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from ingest_support import read_db
from support.evidence import request_attributes
from support.otlp import PROTOBUF, export_request, kv, otlp_span, span_keys
from support.polling import eventually

from handoffscope.collector import ingest_log as ingest_log_mod
from handoffscope.collector import writer as writer_mod
from handoffscope.collector.config import parse_args
from handoffscope.collector.ingest_log import (
    MARK_KEY,
    IngestLog,
    Position,
    directory_for,
)
from handoffscope.collector.metrics import Metrics
from handoffscope.collector.processor.allowlist import SpanBatch
from handoffscope.collector.store.duckdb_store import DuckDBStore
from handoffscope.collector.store.spans import SPAN_SCHEMA
from handoffscope.collector.writer import QueueFull, Writer
from handoffscope.instrumentation import semconv as sc

# --- the segment files ---------------------------------------------------------------------


NOW = time.time_ns()


def spans_table(n: int, tag: str, now: int = NOW) -> pa.Table:
    """`n` rows of SPAN_SCHEMA (ids made from `tag`), as the allowlist would leave them."""
    columns = {f.name: [None] * n for f in SPAN_SCHEMA}
    columns.update(
        trace_id=[f"{tag:0>24}{i:08x}" for i in range(n)],
        span_id=[f"{i:016x}" for i in range(n)],
        name=[sc.SPAN_REQUEST] * n,
        service=["log-app"] * n,
        start_ns=[now] * n,
        end_ns=[now] * n,
        received_ns=[now] * n,
        handoff_run_id=[f"run-{tag}"] * n,
    )
    return pa.Table.from_pydict(columns, schema=SPAN_SCHEMA)


def ids(records) -> list[str]:
    return [r.table.column("trace_id")[0].as_py()[:24].lstrip("0") for r in records]


def test_logged_exports_come_back_after_the_mark_in_order_with_their_drops(
    tmp_path: Path,
) -> None:
    log = IngestLog(tmp_path)
    first = log.append(
        [
            (
                spans_table(2, "a"),
                {("log-app", "gen_ai.prompt"): 3},
                {("log-app", "acme", "refused:not_evidence"): 2},
            )
        ]
    )
    last = log.append([(spans_table(1, "b"), {}, {}), (spans_table(0, "c"), {("x", "y"): 1}, {})])
    log.close()
    assert (first, last) == (Position(1, 1), Position(1, 3))

    records = list(IngestLog(tmp_path).unloaded())
    assert ids(records[:2]) == ["a", "b"] and records[2].table.num_rows == 0
    assert [r.position for r in records] == [Position(1, 1), Position(1, 2), Position(1, 3)]
    assert records[0].drops == Counter({("log-app", "gen_ai.prompt"): 3})
    assert records[2].drops == Counter({("x", "y"): 1})
    assert records[0].sources == Counter({("log-app", "acme", "refused:not_evidence"): 2})
    assert records[1].sources == Counter()
    assert records[0].table.schema == SPAN_SCHEMA
    assert records[0].table.to_pylist() == spans_table(2, "a").to_pylist()

    after = list(IngestLog(tmp_path, Position(1, 2)).unloaded())
    assert [r.position for r in after] == [Position(1, 3)]


def test_a_torn_last_export_is_skipped_and_the_next_start_writes_a_new_segment(
    tmp_path: Path,
) -> None:
    log = IngestLog(tmp_path)
    log.append([(spans_table(3, "a"), {}, {})])
    log.append([(spans_table(3, "b"), {}, {})])
    log.close()
    (segment,) = tmp_path.glob("*.arrows")
    segment.write_bytes(segment.read_bytes()[:-40])  # a crash before the second fsync

    reopened = IngestLog(tmp_path)
    assert ids(reopened.unloaded()) == ["a"]
    assert reopened.append([(spans_table(1, "c"), {}, {})]) == Position(2, 1)
    assert sorted(p.name for p in tmp_path.glob("*.arrows")) == [
        "0000000001.arrows",
        "0000000002.arrows",
    ]


def test_after_a_failed_append_the_next_goes_to_a_new_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A disk that refuses mid-append (the fsync stands in for it: a real disk cannot be
    # made to fail on cue) may leave a torn message, and a reader stops at the first one:
    # an export answered after it must not be written behind it.
    log = IngestLog(tmp_path)
    log.append([(spans_table(1, "a"), {}, {})])

    def refuse(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ingest_log_mod.os, "fsync", refuse)
    with pytest.raises(OSError):
        log.append([(spans_table(1, "b"), {}, {})])  # answered 503: its sender retries it
    monkeypatch.undo()
    assert log.append([(spans_table(1, "c"), {}, {})]) == Position(2, 1)
    log.close()
    loaded = ids(IngestLog(tmp_path).unloaded())
    assert loaded[0] == "a" and loaded[-1] == "c"


def test_segments_are_numbered_past_the_mark_even_when_all_were_deleted(tmp_path: Path) -> None:
    # Every segment loaded and deleted, the store's mark at 57:3: numbering from 1 again
    # would put new exports "before" the mark, and a crash would skip them.
    log = IngestLog(tmp_path, Position(57, 3))
    assert list(log.unloaded()) == []
    assert log.append([(spans_table(1, "a"), {}, {})]) == Position(58, 1)


def test_wholly_loaded_segments_are_deleted(tmp_path: Path) -> None:
    log = IngestLog(tmp_path, segment_bytes=1)  # every append starts a segment
    positions = [log.append([(spans_table(1, tag), {}, {})]) for tag in "abc"]
    assert [p.segment for p in positions] == [1, 2, 3]
    log.loaded_through(Position(2, 1))
    assert sorted(p.stem for p in tmp_path.glob("*.arrows")) == ["0000000002", "0000000003"]
    log.loaded_through(Position(3, 1))  # the current segment stays until it is closed
    assert sorted(p.stem for p in tmp_path.glob("*.arrows")) == ["0000000003"]
    assert log.size_bytes() == (tmp_path / "0000000003.arrows").stat().st_size


# --- the writer with a log, in this process ------------------------------------------------


class FlakyStore(DuckDBStore):
    """The real DuckDB store, refusing its first `fail` inserts (a full disk, say)."""

    fail = 1

    def insert_new_spans(self, incoming: pa.Table, commit_seq: int | None = None) -> pa.Table:
        if self.fail:
            self.fail -= 1
            raise OSError("No space left on device (injected)")
        return super().insert_new_spans(incoming, commit_seq)


def logging_writer(store: DuckDBStore, metrics: Metrics, queue_batches: int = 8) -> Writer:
    """The collector's writer with an ingest log beside `store`'s file, at its mark."""
    mark = Position.parse(store.get_meta(MARK_KEY))
    log = IngestLog(directory_for(store.path), mark)
    return Writer(
        store, None, metrics, queue_batches=queue_batches, retention_days=0, ingest_log=log
    )


def submit(writer: Writer, table: pa.Table, drops: Counter | None = None) -> Future:
    columns = {f.name: table.column(f.name).to_pylist() for f in SPAN_SCHEMA}
    del columns["received_ns"]
    batch = SpanBatch(columns=columns, count=table.num_rows, received=table.num_rows)
    batch.drops = drops or Counter()
    return writer.submit(batch)


def test_a_failed_load_is_retried_from_the_log_and_the_export_was_answered(
    tmp_path: Path,
) -> None:
    db = tmp_path / "h.duckdb"
    store = FlakyStore(db)
    metrics = Metrics()
    writer = logging_writer(store, metrics)
    writer.start()
    try:
        future = submit(writer, spans_table(5, "a"), Counter({("log-app", "input.value"): 2}))
        assert future.result(30) is None  # answered: it is in the log, not in the file yet
        eventually(lambda: writer.spans_stored, lambda n: n == 5, timeout=60)
        assert metrics.value("load_failures") == 1
        assert metrics.value("spans_stored") == 5
    finally:
        writer.close(60)
    assert store.get_meta(MARK_KEY) == "1:1"
    assert read_drops(store) == [("log-app", "input.value", 2)]
    store.close()


def test_an_answered_export_is_pending_or_stored_from_the_moment_it_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What /healthz says right after an answer (`ingest_pending_spans`) must count the
    answered spans until they are stored: a client that waits for 0 pending before reading
    verdicts (the tests' `judged`, an operator's script) must not find it 0 too early. Seen:
    answered, then 0 pending and 0 commits to judge, then the spans queued for loading."""
    store = DuckDBStore(tmp_path / "h.duckdb")
    writer = logging_writer(store, Metrics())
    seen: list[int] = []
    answer = writer_mod._settle

    def answer_and_look(future: Future, error: BaseException | None) -> None:
        answer(future, error)
        # In the writer thread, at the instant the client may read /healthz.
        seen.append(writer.load_pending_spans + writer.spans_stored)

    monkeypatch.setattr(writer_mod, "_settle", answer_and_look)
    writer.start()
    try:
        assert submit(writer, spans_table(5, "a")).result(30) is None
        eventually(lambda: writer.spans_stored, lambda n: n == 5, timeout=60)
        assert writer.load_pending_spans == 0
    finally:
        writer.close(60)
    store.close()
    assert seen == [5]


def read_drops(store: DuckDBStore) -> list[tuple]:
    return store.con.execute("SELECT service, attribute, count FROM drops").fetchall()


def test_a_start_loads_what_the_last_one_logged_but_did_not_load(tmp_path: Path) -> None:
    # What a SIGKILL between the answer and the load leaves: exports in the log past the
    # file's mark (written here with the log alone; the collector test below kills one).
    db = tmp_path / "h.duckdb"
    log = IngestLog(directory_for(db))
    log.append([(spans_table(3, "a"), {("log-app", "input.value"): 1}, {})])
    log.append([(spans_table(2, "b"), {}, {}), (spans_table(3, "a"), {}, {})])  # "a" re-sent
    log.close()

    store = DuckDBStore(db)
    metrics = Metrics()
    writer = logging_writer(store, metrics)
    writer.start()  # loads before it returns: before any receiver is up
    assert writer.spans_stored == 5
    assert metrics.value("spans_duplicate") == 3
    assert read_drops(store) == [("log-app", "input.value", 1)]
    assert store.get_meta(MARK_KEY) == "1:3"
    assert list(directory_for(db).glob("*.arrows")) == []  # replayed: deleted
    writer.close(60)
    store.close()


# --- the real collector --------------------------------------------------------------------


def one_run(run_id: str, handoffs: int = 20):
    spans = [
        otlp_span(sc.SPAN_REQUEST, request_attributes(run_id, f"h{h}")) for h in range(handoffs)
    ]
    # Content a hostile sender adds: dropped, counted once per attribute value.
    spans[0].attributes.append(kv("gen_ai.prompt", "LOG-SENTINEL"))
    return export_request(spans, service="log-app")


def unloaded_after_kill(db: Path) -> int:
    """Exports in the log past the file's mark, read as the next start will."""
    with duckdb.connect(str(db)) as con:  # replays DuckDB's own WAL, as the collector's open
        rows = con.execute("SELECT value FROM meta WHERE key = ?", [MARK_KEY]).fetchall()
    mark = Position.parse(rows[0][0]) if rows else None
    return len(list(IngestLog(directory_for(db), mark).unloaded()))


def test_sigkill_after_the_answer_loses_nothing_and_counts_nothing_twice(collector_factory) -> None:
    collector = collector_factory(args=["--ingest-log", "on", "--judge", "off"])
    acked: list[tuple[str, str]] = []
    bodies: list[bytes] = []
    trial = replayed = 0
    while not replayed and trial < 5:
        trial += 1
        # A stream of exports, killed mid-stream: the last ones answered wait in the log
        # for the loader (which lets exports gather for up to 0.2 s).
        for i in range(15):
            request = one_run(f"run-log-{trial}-{i}")
            bodies.append(request.SerializeToString())
            assert collector.post_traces(bodies[-1], PROTOBUF).status_code == 200
            acked += span_keys(request)
        collector.stop(signal.SIGKILL)
        replayed = unloaded_after_kill(collector.db_path)
        collector.start()
        if replayed:
            assert "ingest log: loaded" in collector.log()
    assert replayed, "every trial's exports were loaded before the kill: replay not exercised"
    assert collector.healthz()["spans_stored"] == len(acked)  # loaded before the answer

    # A retry of an export the collector answered before the kill: stored once.
    assert collector.post_traces(bodies[-1], PROTOBUF).status_code == 200
    assert collector.stop() == 0
    rows = read_db(collector.store, "SELECT trace_id, span_id FROM spans")
    assert Counter(rows) == Counter(acked)
    (dropped,) = read_db(
        collector.store, "SELECT sum(count) FROM drops WHERE attribute = 'gen_ai.prompt'"
    )[0]
    assert dropped == 15 * trial  # once per export, replayed or not, retried or not
    assert list(directory_for(collector.db_path).glob("*.arrows")) == []


def test_ingest_log_on_is_refused_with_a_shared_store(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_args(["--store", "postgresql://h@db/x", "--ingest-log", "on"], environ={})
    assert stopped.value.code == 2
    assert "--ingest-log on is for a DuckDB file" in capsys.readouterr().err
    assert parse_args([], environ={}).logging_ingest
    assert not parse_args(["--store", "postgresql://h@db/x"], environ={}).logging_ingest
    assert not parse_args(["--ingest-log", "off"], environ={}).logging_ingest


class HeldStore(DuckDBStore):
    """The real store; its insert waits until the test releases it (a stalled disk)."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.entered = threading.Event()
        self.release = threading.Event()

    def insert_new_spans(self, incoming: pa.Table, commit_seq: int | None = None) -> pa.Table:
        self.entered.set()
        assert self.release.wait(60), "test never released the loader"
        return super().insert_new_spans(incoming, commit_seq)


def test_a_stalled_loader_pushes_back_once_its_bound_is_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The loader holds at most LOAD_QUEUE_SPANS answered spans; past it the writer waits,
    # its queue fills, and the next export is refused (429 at the receivers).
    monkeypatch.setattr(writer_mod, "LOAD_QUEUE_SPANS", 4)
    db = tmp_path / "h.duckdb"
    store = HeldStore(db)
    writer = logging_writer(store, Metrics(), queue_batches=1)
    writer.start()
    try:
        # One at a time: the queue has one slot, and the writer may not have taken "a"
        # from it yet when "b" comes (that would be this test's QueueFull, too early).
        answered = []
        for tag in "ab":
            answered.append(submit(writer, spans_table(2, tag)))
            assert answered[-1].result(30) is None
        assert store.entered.wait(30)  # the loader holds "a" (and maybe "b") in its insert
        answered.append(submit(writer, spans_table(2, "c")))  # answered; the writer now waits
        assert answered[-1].result(30) is None
        assert writer.load_pending_spans == 6  # a, b and c: answered, none stored
        waiting = submit(writer, spans_table(2, "d"))  # the one queue slot
        with pytest.raises(QueueFull):
            submit(writer, spans_table(2, "e"))
        assert not waiting.done()
        store.release.set()
        assert waiting.result(30) is None
        eventually(lambda: writer.spans_stored, lambda n: n == 8, timeout=60)
    finally:
        store.release.set()
        writer.close(60)
        store.close()
