"""The health engine in a worker process of its own (`--judge on`, the default).

Why a process: the judge's work is Python — merging evidence and judging runs, ≈50 µs a
span (bench/bench_judge_throughput.py) — and in the collector's process it held the GIL
the receiver, the writer and the query API need, so on two cores the receiver took ≈10k
spans/s with the judge on against ≈24k with it off (docs/storage.md, "Where ingest time
goes"). In a process of its own it runs on the other core.

What stays in the collector: the store. A DuckDB file has one writer process, so the
worker never opens it (nor PostgreSQL: the judge's transaction is the collector's).
`ProcessEngine` stands where a `HealthEngine` stands (the judges — `Judge` on a DuckDB
file, `LeasedJudge` on PostgreSQL — call `apply`, `rollback`, `retention` and `load` on
it alike, on their own connection and inside their own transaction); each call is sent
to the worker, whose `HealthEngine` runs it against a `RemoteConnection`: every statement
the engine asks of `store/statements.py` comes back over the pipe by name, runs through
the same helper on the judge's connection inside the judge's transaction, and its result
goes back. So the rows and the mark still commit together (a crash of
either process at any moment leaves the file as of the mark), and the engine's code is
the same code in either place.

If the worker dies (killed, out of memory), the call fails like any failed step: the
judge rolls its transaction back and retries; the next call starts a new worker, which
rebuilds its memory from the file (`load`) before it applies anything.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from multiprocessing.connection import Connection, wait
from typing import Any

from .. import priority
from ..store import statements
from .evidence import SpanColumns

log = logging.getLogger(__name__)

# The worker is a fresh interpreter (`python -m handoffscope.collector.engine.worker FD`),
# not a fork — the collector runs DuckDB's and gRPC's threads, which a fork would copy in
# whatever state they were in — and not multiprocessing's "spawn" either, which re-runs the
# parent's main script in the child (a bench script or an app embedding the collector
# without a `__main__` guard would start itself again). It talks over one socket pair.
START_TIMEOUT_S = 60.0
"""How long a new worker may take to import and answer (a loaded machine is slow)."""
GC_THRESHOLD = (50_000, 20, 100)
"""The worker's collector thresholds: the engine allocates many small objects that live
as long as their run is hot (no cycles to find among them), and at Python's default of
700 the collections cost a quarter of the judge's time (measured: 71 → 52 µs a span)."""


_COLUMNS_READ = SpanColumns.columns_read()


class WorkerError(RuntimeError):
    """The worker failed a call (its traceback is the message) or is gone."""


# --- the worker's side ---------------------------------------------------------------------


class RemoteConnection(statements.Forwarded):
    """The worker's connection: each statement the engine asks of `statements` is sent
    by name to the collector, which runs it on the judge's connection."""

    def __init__(self, pipe: Any) -> None:
        super().__init__()
        self._pipe = pipe

    def statement(self, how: str, name: str, params: object) -> Any:
        # Statements run for their effect (`run`) are sent, not waited for: the collector
        # runs the statements in the order sent; if one fails, the next that returns rows
        # fails with it, and so does the call.
        self._pipe.send_bytes(pickle.dumps(("sql", how, name, params, self.tables), protocol=5))
        if how == "run":
            return None
        status, value = pickle.loads(self._pipe.recv_bytes())
        if status != "ok":
            raise WorkerError(f"statement {name!r} failed in the collector: {value}")
        return value


def _malloc_trim() -> Any:
    """glibc's malloc_trim, which returns freed heap to the system (None: not glibc)."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def _serve(pipe: Any) -> None:
    """The worker process: one HealthEngine, driven by the calls of `ProcessEngine`."""
    # The collector gone (stopped, or stopped before we were ready): so are we, quietly.
    with contextlib.suppress(EOFError, OSError):
        _serve_calls(pipe)


def _serve_calls(pipe: Any) -> None:
    import traceback

    settings, log_level, nice = pickle.loads(pipe.recv_bytes())

    from ..no_pandas import without_pandas

    priority.lower_this_process(nice)  # first, so every thread started below inherits it

    without_pandas()  # as in the collector's process (no_pandas.py says why)
    logging.basicConfig(
        level=log_level, format="%(asctime)s %(levelname)s %(name)s[judge worker]: %(message)s"
    )
    import pyarrow as pa

    from . import HealthEngine

    pool = pa.default_memory_pool()
    trim = _malloc_trim()

    # Ctrl-C reaches the whole process group: the collector stops us when it closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.set_threshold(*GC_THRESHOLD)
    engine = HealthEngine(**settings)
    con = RemoteConnection(pipe)
    pipe.send_bytes(pickle.dumps(("ready", os.getpid())))
    while True:
        op, args = pickle.loads(pipe.recv_bytes())
        if op == "stop":
            return
        result: Any = None
        reply: tuple
        try:
            if op == "apply":
                result = engine.apply(con, *args)
            elif op == "load":
                result = engine.load(con, **args[0])
            elif op == "retention":
                engine.retention(con, args[0])
            elif op == "rollback":
                engine.rollback()
            else:
                raise ValueError(f"unknown call {op!r}")
            reply = ("done", result, dict(engine.stats), engine.hot_size)
        except Exception:
            reply = ("failed", traceback.format_exc(), dict(engine.stats), engine.hot_size)
        del args, result
        # The step's Arrow buffers and Python objects are free now: hand them back to the
        # system rather than keep the largest step's worth resident between steps (after
        # `load` at ten million handoffs that was ≈ 100 MB).
        pool.release_unused()
        if trim is not None:
            trim(0)
        pipe.send_bytes(pickle.dumps(reply, protocol=5))


# --- the collector's side ------------------------------------------------------------------


def _answer(con: Any, how: str, name: str, params: Any, tables: dict[str, Any]) -> Any:
    # The registration lasts for this statement only, as in the worker's `registered`.
    with statements.registered(con, tables):
        return statements.HELPERS[how](con, name, params)


class ProcessEngine:
    """A `HealthEngine` in a worker process, called like one (the module's docstring).

    Calls are made by one thread at a time (the judge's); `stats` and `hot_size` are the
    worker's as of its last answer, for /metrics."""

    def __init__(self, *, nice: int = 0, **settings: Any) -> None:
        """`settings`: the worker's HealthEngine's; `nice`: how much lower the worker's CPU
        priority is than the collector's (`--judge-nice`, priority.py)."""
        from . import HealthEngine

        self.settings = settings
        self.nice = nice
        # Every counter from the start, at 0, as a HealthEngine's: /metrics serves them
        # before the worker's first answer.
        self.stats: Counter[str] = Counter(dict.fromkeys(HealthEngine.STATS, 0))
        self.hot_size = 0
        self.worker_starts = 0
        """Workers started (more than one: a worker died and was replaced). A start after
        `release` is not counted: nothing died."""
        self._released = False
        self._proc: Any = None
        self._pipe: Any = None
        self._loaded = False
        self._greeted = False
        """The worker has said it is ready (its first message)."""
        self._lock = threading.Lock()

    @property
    def worker_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def worker_pids(self) -> list[int]:
        """The live worker's pid, as a list (a `ShardedEngine` has several)."""
        pid = self.worker_pid
        return [] if pid is None else [pid]

    # -- what the judge calls ----------------------------------------------------------------

    def install(self, con: Any) -> tuple[int, int]:
        """The engine's tables: DDL, run here (it needs no engine state)."""
        from . import HealthEngine

        return HealthEngine().install(con)

    def load(self, con: Any, *, now_ns: int | None = None) -> int:
        return load_all(con, [self], now_ns)

    def prepare(self, con: Any) -> None:
        """The worker started and its memory loaded, if not yet (the judge's first act)."""
        self._ready(con)

    def apply(
        self, con: Any, new_spans: Any, outcomes: dict[str, int] | None = None
    ) -> list[tuple]:
        self._ready(con)
        return self._call(con, "apply", *self.apply_args(new_spans, outcomes)) or []

    @staticmethod
    def apply_args(new_spans: Any, outcomes: dict[str, int] | None) -> tuple:
        # Only the columns the merge reads travel (ids and the rest stay here): a third of
        # the bytes, and of the worker's copy of the step.
        keep = [c for c in new_spans.column_names if c in _COLUMNS_READ]
        return (new_spans.select(keep), outcomes)

    def retention(self, con: Any, cutoff_ns: int) -> None:
        self._ready(con)
        self._call(con, "retention", cutoff_ns)

    def rollback(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._discard()
            return
        try:
            self._call(None, "rollback")
        except WorkerError:
            self._discard()  # a worker that cannot roll back is replaced

    def repart(self, parts: Any) -> None:
        """Judge `parts` from now on: the worker stops, and the next call starts one that
        judges them (and loads their runs)."""
        self.release()
        self.settings["parts"] = tuple(sorted(parts))

    def release(self) -> None:
        """Stop the worker until a call needs one again (then it starts and loads): its
        memory is of no use meanwhile — the collector lost the judge lease on PostgreSQL."""
        alive = self.worker_pid is not None  # a dead one's replacement is still counted
        self.close()
        self._released = alive or self._released

    def close(self) -> None:
        with self._lock:
            if self._pipe is not None:
                with contextlib.suppress(OSError):
                    self._pipe.send_bytes(pickle.dumps(("stop", ())))
            self._discard(wait=True)

    # -- the worker --------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The worker is live and its memory loaded from the store."""
        return self._proc is not None and self._proc.poll() is None and self._loaded

    def _ready(self, con: Any) -> None:
        """A live worker with its memory loaded from the file (after a restart: `load`)."""
        if not self.ready:
            self.load(con)

    def start(self) -> None:
        """Start the worker without waiting for it: the judge's first call waits (and loads
        the engine's memory from the file inside its own transaction), so a collector is
        ready while the worker still imports."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._spawn()

    def _spawn(self) -> None:
        self._discard()
        ours, theirs = socket.socketpair()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                close_fds=True,
            )
        finally:
            theirs.close()
        pipe = Connection(ours.detach())
        try:
            level = logging.getLogger().getEffectiveLevel()
            nice = priority.lowered(self.nice)
            pipe.send_bytes(pickle.dumps((self.settings, level, nice), protocol=5))
        except OSError:
            pass  # it died already: the handshake says so
        self._proc, self._pipe = proc, pipe
        self._loaded = self._greeted = False
        if self._released:
            self._released = False  # started again after `release`: not a replacement
            return
        self.worker_starts += 1
        if self.worker_starts > 1:
            log.warning("judge worker process restarted (pid %d)", proc.pid)

    def _ensure_worker(self) -> None:
        """A started worker that has said it is ready (started now if there is none)."""
        if self._proc is None or self._proc.poll() is not None:
            self._spawn()
        if self._greeted:
            return
        proc, pipe = self._proc, self._pipe
        assert proc is not None and pipe is not None
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while not pipe.poll(0.2):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise WorkerError(
                        f"the judge's worker process did not start (exit {proc.poll()})"
                    )
            pickle.loads(pipe.recv_bytes())  # ("ready", pid)
        except (EOFError, OSError) as exc:
            self._discard()
            raise WorkerError(f"the judge's worker process did not start ({exc!r})") from exc
        except BaseException:
            self._discard()
            raise
        self._greeted = True

    def _discard(self, wait: bool = False) -> None:
        proc, pipe = self._proc, self._pipe
        self._proc = self._pipe = None
        self._loaded = self._greeted = False
        if pipe is not None:
            pipe.close()  # the worker reads EOF and exits
        if proc is not None:
            try:
                proc.wait(5.0 if wait else 0.05)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5.0)

    def _call(self, con: Any, op: str, *args: Any) -> Any:
        """Send one call; run the statements it asks for on `con` until it answers."""
        return call_all(con, [(self, op, args)])[0]


def load_all(con: Any, engines: list[ProcessEngine], now_ns: int | None = None) -> int:
    """Start the engines' workers (where none runs) and load their memory from the store,
    side by side; how many runs they reloaded in all."""
    for engine in engines:
        engine._ensure_worker()
    loaded = call_all(con, [(e, "load", ({"now_ns": now_ns},)) for e in engines])
    for engine in engines:
        engine._loaded = True
    return sum(int(n) for n in loaded)


def call_all(con: Any, calls: list[tuple[ProcessEngine, str, tuple]]) -> list[Any]:
    """Send each engine its call at once, and run the statements they ask for on `con`, in
    the order they arrive, until every one has answered; their results, in order.

    The workers judge side by side (engine/shards.py); their statements are serialized
    here, on the judge's one connection, inside its one transaction. If one fails, the
    others are still served to the end (each pipe stays in step), then the first failure
    is raised.
    """
    engines = [engine for engine, _, _ in calls]
    with contextlib.ExitStack() as locks:
        for engine in engines:
            locks.enter_context(engine._lock)
        pending: dict[Any, int] = {}
        """Pipe -> index of the call whose answer it still owes."""
        results: list[Any] = [None] * len(calls)
        errors: list[WorkerError | None] = [None] * len(calls)
        failed: list[str | None] = [None] * len(calls)
        """Per call: the first deferred statement that failed (its transaction is lost)."""
        for k, (engine, op, args) in enumerate(calls):
            pipe = engine._pipe
            if pipe is None:
                errors[k] = WorkerError("the judge's worker process is not running")
                continue
            try:
                pipe.send_bytes(pickle.dumps((op, args), protocol=5))
            except OSError as exc:
                engine._discard()
                errors[k] = WorkerError(f"the judge's worker process is gone ({exc!r})")
                continue
            pending[pipe] = k
        while pending:
            for pipe in wait(list(pending)):
                assert isinstance(pipe, Connection)  # what `pending` holds
                k = pending[pipe]
                engine, op, _ = calls[k]
                try:
                    message = pickle.loads(pipe.recv_bytes())
                    if message[0] == "sql":
                        _serve_statement(con, pipe, message, failed, k)
                        continue
                except (EOFError, OSError, pickle.UnpicklingError) as exc:
                    del pending[pipe]
                    engine._discard()
                    errors[k] = WorkerError(f"the judge's worker process is gone ({exc!r})")
                    continue
                del pending[pipe]
                status, result, stats, hot_size = message
                engine.stats, engine.hot_size = Counter(stats), hot_size
                if status == "failed":
                    errors[k] = WorkerError(f"the judge's worker failed {op}:\n{result}")
                elif failed[k] is not None:
                    errors[k] = WorkerError(f"a statement of {op} failed: {failed[k]}")
                else:
                    results[k] = result
    for error in errors:
        if error is not None:
            raise error
    return results


def _serve_statement(con: Any, pipe: Any, message: tuple, failed: list, k: int) -> None:
    """Run one statement a worker asked for; answer it unless it was run for its effect."""
    _, how, name, params, tables = message
    try:
        if con is None:
            raise WorkerError("no connection for a statement")
        if failed[k] is not None:
            raise WorkerError(f"an earlier statement failed: {failed[k]}")
        reply: tuple = ("ok", _answer(con, how, name, params, tables))
    except Exception as exc:  # the worker's engine raises it
        reply = ("error", f"{name}: {type(exc).__name__}: {exc}")
        if how == "run" and failed[k] is None:
            failed[k] = reply[1]
    if how != "run":  # a statement run for its effect is not answered
        pipe.send_bytes(pickle.dumps(reply, protocol=5))


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])))
