"""The ingest log: exports made durable before DuckDB has them (`--ingest-log on`).

Why. With the log off, an export is answered once its spans are committed to DuckDB, and
each group commit carries the exports that waited for the one before it — one or two per
connection, a few hundred to a few thousand spans. On the spans table's 50 columns a
DuckDB INSERT costs ≈ 6 ms before its first row (binding, planning, the table's local
storage) and ≈ 4.5 µs a row after (bench/bench_ingest_stages.py: 31 µs a span for groups
of 512, 6 for groups of 8,192), and an automatic checkpoint inside a commit holds every
waiting export for its duration. Measured with bench/bench_receiver.py, answering exports
before DuckDB has them and loading them in large groups took 1.3–1.6x the spans of the
same collector answering after each small commit, and the real Python SDK sender's
pipeline went from 1.26–1.29x to 1.11–1.16x the time into a null receiver (same runs;
docs/storage.md).

How. The writer appends each group of exports to the current segment file — an Arrow IPC
stream (`NNNNNNNNNN.arrows`), one record batch per export with its dropped-attribute counts
in the batch's metadata — flushes and fsyncs it, and only then answers them: a 200 still
means durable, on this machine's disk rather than in the DuckDB file yet. A loader thread
moves the logged exports into DuckDB in large groups, removing re-sent spans as before,
and stamps the log position it reached in `meta` (`ingest_log_mark`) in the same
transaction. So after a crash the collector knows exactly which logged exports DuckDB
has: it loads the rest before it answers anything (`IngestLog.unloaded`), and a segment is
deleted once every export in it is loaded. A crash mid-append leaves a torn last message,
which was never answered and is skipped (the reader stops at a segment's first unreadable
message). Each start writes to a new segment, so a torn tail is never appended to.

Only for the DuckDB file: with PostgreSQL the store is shared, and spans acknowledged into
one machine's log would be invisible to the other collectors until that machine came
back; there an export is answered after PostgreSQL's commit, as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.ipc as ipc

log = logging.getLogger(__name__)

MARK_KEY = "ingest_log_mark"
"""`meta` key of the newest log position loaded into the store (committed with the rows)."""
SEGMENT_BYTES = 64 * 1024 * 1024
"""A segment is closed and a new one started once it is this large."""
SUFFIX = ".arrows"
_DROPS = b"drops"
_SOURCES = b"sources"


@dataclass(frozen=True, order=True)
class Position:
    """An export's place in the log: its segment, and its number within that segment."""

    segment: int
    index: int

    def __str__(self) -> str:
        return f"{self.segment}:{self.index}"

    @classmethod
    def parse(cls, text: str | None) -> Position | None:
        if not text:
            return None
        segment, _, index = text.partition(":")
        return cls(int(segment), int(index))


@dataclass
class Record:
    """One logged export: its spans (SPAN_SCHEMA rows), its dropped-attribute counts and
    its spans per source (SpanBatch.sources; absent from exports logged before it was)."""

    position: Position
    table: pa.Table
    drops: Counter
    sources: Counter = field(default_factory=Counter)


def directory_for(db: str | Path) -> Path:
    """Where the log of a DuckDB file lives: beside it, `<file>.ingest-log/`."""
    path = Path(db)
    return path.with_name(path.name + ".ingest-log")


class IngestLog:
    """The segment files of one collector's log. `append` is called from one thread (the
    writer's), `loaded_through` from another (the loader's)."""

    def __init__(
        self,
        directory: str | Path,
        mark: Position | None = None,
        *,
        segment_bytes: int = SEGMENT_BYTES,
    ) -> None:
        """`mark`: the newest position the store has loaded (its `ingest_log_mark`)."""
        self.directory = Path(directory)
        self.mark = mark
        self.directory.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()
        self._segments: list[int] = sorted(
            int(p.stem) for p in self.directory.glob("*" + SUFFIX) if p.stem.isdigit()
        )
        """Segment numbers on disk, oldest first (the current one last, once it exists)."""
        # New segments are numbered past the mark too: with every segment loaded and
        # deleted, numbering again from 1 would put new exports "before" the mark, and a
        # crash would then skip them.
        self._next = max(self._segments + [mark.segment if mark else 0]) + 1
        self._current: int | None = None
        self._file: BinaryIO | None = None
        self._writer: ipc.RecordBatchStreamWriter | None = None
        self._schema: pa.Schema | None = None
        self._count = 0
        """Exports in the current segment."""

    def _path(self, segment: int) -> Path:
        return self.directory / f"{segment:010d}{SUFFIX}"

    # -- reading: at start, before the first append ------------------------------------

    def unloaded(self) -> Iterator[Record]:
        """Every logged export after the mark, oldest first (before the first append)."""
        mark = self.mark
        for segment in list(self._segments):
            if mark is not None and segment < mark.segment:
                continue
            skip = mark.index if mark is not None and segment == mark.segment else 0
            yield from self._read(segment, skip)

    def _read(self, segment: int, skip: int) -> Iterator[Record]:
        path = self._path(segment)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return
        try:
            reader = ipc.open_stream(pa.BufferReader(data))
        except (pa.ArrowInvalid, OSError):
            return  # torn before its first export was written: nothing was answered
        index = 0
        while True:
            try:
                batch, metadata = reader.read_next_batch_with_custom_metadata()
            except StopIteration:
                return
            except (pa.ArrowInvalid, OSError) as exc:
                # A torn last message: the crash came before its fsync, so its export was
                # never answered 200 and its sender still has it.
                log.warning("ingest log %s: stopped at an unreadable message (%s)", path, exc)
                return
            index += 1
            if index <= skip:
                continue
            drops: Counter = Counter()
            if metadata is not None and _DROPS in metadata:
                for service, attribute, n in json.loads(metadata[_DROPS]):
                    drops[(service, attribute)] += n
            sources: Counter = Counter()
            if metadata is not None and _SOURCES in metadata:
                for service, scope, outcome, n in json.loads(metadata[_SOURCES]):
                    sources[(service, scope, outcome)] += n
            yield Record(Position(segment, index), pa.Table.from_batches([batch]), drops, sources)

    # -- writing: the writer thread ----------------------------------------------------

    def append(
        self,
        exports: Sequence[
            tuple[pa.Table, Mapping[tuple[str, str], int], Mapping[tuple[str, str, str], int]]
        ],
    ) -> Position:
        """Write exports (spans, dropped-attribute counts, spans per source) and fsync;
        return the last one's position. Raises OSError if the disk refuses; then nothing
        is answered."""
        schema = exports[0][0].schema
        if (
            self._writer is None
            or self._file is None
            or self._file.tell() >= self.segment_bytes
            or schema != self._schema
        ):
            self._start_segment(schema)
        assert self._writer is not None and self._file is not None
        try:
            for table, drops, sources in exports:
                metadata = {
                    _DROPS: json.dumps([[s, a, n] for (s, a), n in drops.items()]),
                    _SOURCES: json.dumps([[*key, n] for key, n in sources.items()]),
                }
                self._writer.write_batch(_one_batch(table), custom_metadata=metadata)
                self._count += 1
            self._file.flush()
            os.fsync(self._file.fileno())
        except BaseException:
            # The segment may now end in a torn message (a full disk mid-write), and a
            # reader stops at the first unreadable one: what follows must go to a new
            # segment, or exports answered after this would be unreadable at replay.
            with contextlib.suppress(Exception):
                self._close_segment()
            self._writer = self._file = None
            raise
        assert self._current is not None
        return Position(self._current, self._count)

    def _start_segment(self, schema: pa.Schema) -> None:
        self._close_segment()
        with self._lock:
            number = self._next
            self._next += 1
            self._segments.append(number)
        # Held open across appends (closed by _close_segment), so not a `with` block.
        file = open(self._path(number), "wb")  # noqa: SIM115
        self._file = file
        self._writer = ipc.new_stream(file, schema)
        file.flush()
        os.fsync(file.fileno())
        _fsync_directory(self.directory)  # the new file's name is durable too
        self._current, self._schema, self._count = number, schema, 0

    def _close_segment(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._file is not None:
            self._file.close()
        self._writer = self._file = None

    # -- after a load: the loader thread -----------------------------------------------

    def loaded_through(self, position: Position) -> None:
        """The store has every export up to `position`: delete the segments wholly loaded
        (every one before its segment; the current one stays until it is closed)."""
        with self._lock:
            done = [s for s in self._segments if s < position.segment and s != self._current]
            self._segments = [s for s in self._segments if s not in done]
        for segment in done:
            with contextlib.suppress(FileNotFoundError):
                self._path(segment).unlink()

    def all_loaded(self) -> None:
        """The store has every export logged so far: delete every segment (with none
        open: before the first append, or after `close`)."""
        assert self._file is None, "a segment is open"
        self.loaded_through(Position(self._next, 0))

    def size_bytes(self) -> int:
        """Bytes of the segments on disk."""
        total = 0
        for segment in list(self._segments):
            with contextlib.suppress(FileNotFoundError):
                total += self._path(segment).stat().st_size
        return total

    def close(self) -> None:
        self._close_segment()
        self._current = None


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    """The table as one record batch (one export, one message; even of no span, which
    still carries its drops)."""
    batches = table.combine_chunks().to_batches()
    if batches:
        return batches[0]
    return pa.RecordBatch.from_arrays(
        [pa.array([], f.type) for f in table.schema], schema=table.schema
    )


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
