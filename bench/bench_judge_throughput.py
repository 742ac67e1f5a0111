"""Judge throughput: spans judged per second, catching up and sustained (issue 14).

In-process with the real parts the collector runs — a DuckDB file, the store's insert
stamped with commit numbers as the writer does, the health engine and the `Judge` on its
own connection — fed realistic runs: `--spans-per-run` spans each (default 4, the shape of
bench_receiver's template: request, accept, outcome, run status; `--handoffs-per-run` > 1
repeats request/accept/outcome per handoff), in group commits of `--commit-spans`.

Each with the engine where the collector runs it by default — its worker process
(`--judge on`, engine/worker.py) — and, as the baseline in the same run, in the judge's
thread (`--judge thread`, the former default). Two measurements:

- **catch-up**: N spans stored first (the judge stopped), then `Judge.catch_up()` timed:
  µs per span and spans/s, wall clock and process CPU time (CPU time is the steadier
  figure on a shared machine: other processes stretch the wall clock, not our CPU). Baseline, in the same run: the store's plain insert of the
  same spans (what ingest pays per span), so the figure reads "the judge costs k× the
  insert". A second baseline is the judge over the same spans as runs of one span each
  (no run-level merge), to show what a run's structure costs.
- **sustained**: a writer thread commits spans at `--rate` spans/s for `--seconds` while
  the judge thread runs; reported: the rate the judge reached, its lag at the end, and the
  freshness of each commit — span end → the commit's verdict rows committed by the judge
  (the query API reads committed rows, so that is when the verdict is visible; p50/p95).
  `--spread S` sends every other span of each run S seconds later, as a live run's spans
  come over its life: the engine then judges each run twice, and reloads it from the store
  if it left the engine's memory in between (the figure to read for long-lived runs).
  Catching up, it adds the shape "spread runs": the same spans with each run's halves
  S × `--rate` spans apart in the commits (the issue's CPU a span for such runs).

`--against REV` measures the engine of another git revision in the same run, interleaved
with this one (a worktree of REV, each measurement a subprocess running this script under
REV's code; REV's own script is not used, so both are fed alike): the previous engine's
figure beside the new one, as the ratio to read.

Timings are never asserted; this machine is shared and noisy, compare within one run.

    .venv/bin/python bench/bench_judge_throughput.py [--spans 100000] [--seconds 20] [--rate 50000]
    # the issue's five minutes, the collector's default placement only:
    .venv/bin/python bench/bench_judge_throughput.py --no-catch-up --engines worker --seconds 300
    # runs whose spans come over 10 s:
    .venv/bin/python bench/bench_judge_throughput.py --no-catch-up --engines worker --spread 10
    # this engine against main's, catching up and sustained, in one worker:
    .venv/bin/python bench/bench_judge_throughput.py --engines worker --against main
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.compute as pc

from handoffscope.collector.engine import HealthEngine
from handoffscope.collector.engine.judge import Judge
from handoffscope.collector.engine.shards import ShardedEngine
from handoffscope.collector.engine.worker import ProcessEngine
from handoffscope.collector.store.duckdb_store import DuckDBStore
from handoffscope.collector.store.spans import ATTRIBUTE_COLUMNS, SPAN_SCHEMA, build_spans_table
from handoffscope.instrumentation import semconv as sc

TARGET_SPANS_PER_S = 50_000
TARGET_FRESHNESS_P95_S = 2.0
DRAIN_TIMEOUT_S = 900.0
"""A bound on waiting for the judge after the sustained load, not a measurement."""


class Generator:
    """Spans of realistic runs, fresh ids and times on every call."""

    def __init__(self, handoffs_per_run: int, one_span_runs: bool = False) -> None:
        self.hpr = handoffs_per_run
        self.one_span_runs = one_span_runs
        self.n_run = 0
        self.n_span = 0

    def _run_spans(self, run: str, now: int) -> list[tuple[str, int, dict]]:
        out = []
        agents = ["triage", "billing", "refunds", "audit"]
        for k in range(self.hpr):
            hid = f"h{k + 1}"
            frm, to = agents[k % 4], agents[(k + 1) % 4]
            common = {sc.RUN_ID: run, sc.HANDOFF_ID: hid}
            out.append(
                (
                    sc.SPAN_REQUEST,
                    now,
                    {
                        **common,
                        sc.FROM_AGENT: frm,
                        sc.TO_AGENT: to,
                        sc.TURN: k + 1,
                        sc.FINGERPRINT: f"9f86d081884c7d{k:02d}",
                        sc.STATE_VERSION: k + 1,
                        sc.HISTORY_ITEMS_FORWARDED: 4,
                        sc.HISTORY_ITEMS_TOTAL: 9,
                        sc.ROUTE_DECLARED: True,
                        sc.TOOL_CALL_ID: f"call_{k}",
                        sc.CONTEXT_REQUIRED_KEYS: ["account_id", "invoice_id"],
                        sc.GEN_AI_AGENT_NAME: frm,
                    },
                )
            )
            out.append(
                (
                    sc.SPAN_ACCEPT,
                    now + 10,
                    {
                        **common,
                        sc.ROUTE_GOTO: to,
                        sc.CONTROL_BEFORE: frm,
                        sc.CONTROL_AFTER: to,
                        sc.TOOL_CALL_CLOSED: True,
                        sc.DESTINATION_STARTED: True,
                        sc.CONTEXT_MISSING_KEYS: [],
                    },
                )
            )
            out.append(
                (
                    sc.SPAN_OUTCOME,
                    now + 20,
                    {**common, sc.OUTCOME_VERIFIER: "refund_check", sc.OUTCOME_RESULT: "pass"},
                )
            )
        out.append(
            (
                sc.SPAN_RUN,
                now + 30,
                {
                    sc.RUN_ID: run,
                    sc.RUN_STATUS: "completed",
                    sc.RUN_FINAL_AGENT: agents[self.hpr % 4],
                    sc.RUN_TURNS: self.hpr + 1,
                    **(
                        {sc.GEN_AI_CONVERSATION_ID: f"conv-{self.n_run % CONVERSATIONS['n']}"}
                        if CONVERSATIONS["n"]
                        else {}
                    ),
                },
            )
        )
        return out

    def table(self, n: int) -> pa.Table:
        cols: dict[str, list] = {f.name: [] for f in SPAN_SCHEMA}
        now = time.time_ns()
        trace = secrets.token_hex(16)
        while len(cols["span_id"]) < n:
            self.n_run += 1
            run = f"run-{self.n_run:09d}"
            for name, start, attrs in self._run_spans(run, now):
                if len(cols["span_id"]) >= n:
                    break
                self.n_span += 1
                if self.one_span_runs:
                    attrs = {**attrs, sc.RUN_ID: f"{run}-{self.n_span}"}
                cols["trace_id"].append(trace)
                cols["span_id"].append(f"{self.n_span:016x}")
                cols["name"].append(name)
                cols["service"].append("bench-app")
                cols["start_ns"].append(start)
                cols["end_ns"].append(start + 5)
                cols["received_ns"].append(now)
                for a, c in ATTRIBUTE_COLUMNS.items():
                    cols[c].append(attrs.get(a))
        return build_spans_table(cols)


class FastGenerator:
    """The same spans as `Generator`, made from one template per size by replacing the run
    ids, span ids and times column-wise (the sustained writer must outpace the judge)."""

    def __init__(self, handoffs_per_run: int) -> None:
        self.gen = Generator(handoffs_per_run)
        self.templates: dict[int, tuple[pa.Table, pa.Array, int, pa.Array]] = {}
        self.n_run = 0
        self.n_span = 0

    def table(self, n: int) -> pa.Table:
        if n not in self.templates:
            self.gen.n_run = 0
            t = self.gen.table(n)
            runs = t.column(ATTRIBUTE_COLUMNS[sc.RUN_ID]).to_pylist()
            index = {r: k for k, r in enumerate(dict.fromkeys(runs))}
            starts = t.column("start_ns")
            base = pc.min(starts).as_py()
            self.templates[n] = (
                t,
                pa.array([index[r] for r in runs], pa.int32()),
                len(index),
                pc.subtract(starts, base),
            )
        t, run_idx, n_runs, offsets = self.templates[n]
        now = time.time_ns()
        names = pa.array([f"run-{self.n_run + k:09d}" for k in range(n_runs)], pa.string())
        self.n_run += n_runs
        span_ids = pa.array([f"{self.n_span + k:016x}" for k in range(n)], pa.string())
        self.n_span += n
        starts = pc.add(offsets, now)
        cols = {
            ATTRIBUTE_COLUMNS[sc.RUN_ID]: names.take(run_idx),
            "span_id": span_ids,
            "start_ns": starts,
            "end_ns": pc.add(starts, 5),
            "received_ns": pa.array([now] * n, pa.int64()),
        }
        return pa.Table.from_arrays(
            [cols.get(f.name, t.column(f.name)) for f in SPAN_SCHEMA], schema=SPAN_SCHEMA
        )


WHERE = ("worker", "workers", "thread")
"""Where the engine runs: its worker process (`--judge on`, the collector's default on a
DuckDB file), `--workers` worker processes each judging its shard of the runs
(`--judge-workers`, engine/shards.py), or the judge's thread in this process
(`--judge thread`)."""
WORKERS = 2
"""Worker processes of the "workers" case (`--workers`)."""


HOT: dict = {}
"""The engine's in-memory bound, when `--max-hot-handoffs` sets it (else its default)."""
CONVERSATIONS = {"n": 0}
"""`--conversations`: each run a turn of one of this many conversations (0: none)."""


def _open(d: str, where: str) -> tuple[DuckDBStore, HealthEngine | ProcessEngine]:
    store = DuckDBStore(str(Path(d) / "judge.duckdb"))
    engine = {
        "worker": lambda: ProcessEngine(grace_seconds=30, **HOT),
        "workers": lambda: ShardedEngine(WORKERS, grace_seconds=30, **HOT),
        "thread": lambda: HealthEngine(grace_seconds=30, **HOT),
    }[where]()
    engine.install(store.con)
    engine.load(store.con)
    return store, engine


def _close(store: DuckDBStore, engine) -> None:
    if isinstance(engine, ProcessEngine | ShardedEngine):
        engine.close()
    store.close()


def _cpu(engine) -> float:
    """CPU seconds of this process and, for the workers, of the worker processes too."""
    cpu = time.process_time()
    pids = getattr(engine, "worker_pids", None) or [getattr(engine, "worker_pid", None)]
    for pid in pids:
        if pid is not None:
            t = psutil.Process(pid).cpu_times()
            cpu += t.user + t.system
    return cpu


def _peak_rss_mb(pids: list[int]) -> float | None:
    """The worker processes' peak RSS (VmHWM), summed, in MB; None: no worker."""
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/status") as f:
            total += next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024
    return total if pids else None


def spread_commits(tables: list[pa.Table], gap: int, seconds: float) -> list[pa.Table]:
    """The same spans with each run's spans in two commits `gap` commits apart: commit i
    holds the even spans of table i and the odd spans of table i - gap, moved `seconds`
    later (they happened later in the run); the odd spans of the last `gap` tables follow
    in commits of their own. So the engine judges every run twice, as `Spread` makes the
    sustained writer do, and reloads it if it left memory in between."""
    shift = int(seconds * 1e9)

    def late(t: pa.Table) -> pa.Table:
        t = t.take(pa.array(range(1, t.num_rows, 2)))
        for c in ("start_ns", "end_ns", "received_ns"):
            i = t.schema.get_field_index(c)
            t = t.set_column(i, t.schema.field(i), pc.add(t.column(c), shift))
        return t

    out = []
    for i in range(len(tables) + gap):
        parts = []
        if i < len(tables):
            parts.append(tables[i].take(pa.array(range(0, tables[i].num_rows, 2))))
        if i >= gap:
            parts.append(late(tables[i - gap]))
        if parts:  # none when the gap is longer than the spans
            out.append(pa.concat_tables(parts).combine_chunks())
    return out


def catch_up(
    n: int,
    commit_spans: int,
    hpr: int,
    one_span_runs: bool = False,
    where: str = "worker",
    spread: tuple[int, float] | None = None,
) -> dict:
    """`spread`: (commits apart, seconds) — each run's spans in two commits that far apart
    (`spread_commits`); None: every run whole in one commit."""
    gen = Generator(hpr, one_span_runs)
    tables = [gen.table(min(commit_spans, n - lo)) for lo in range(0, n, commit_spans)]
    if spread is not None:
        tables = spread_commits(tables, *spread)
    with tempfile.TemporaryDirectory() as d:
        store, engine = _open(d, where)
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            for seq, t in enumerate(tables, start=1):
                store.con.begin()
                store.insert_new_spans(t, commit_seq=seq)
                store.con.commit()
            insert_s, insert_cpu = time.perf_counter() - t0, time.process_time() - c0
            judge = Judge(store, engine)
            t0, c0, m0 = time.perf_counter(), _cpu(engine), time.process_time()
            judge.catch_up()
            judge_s, judge_cpu = time.perf_counter() - t0, _cpu(engine) - c0
            main_cpu = time.process_time() - m0
            judge.close()
            runs = store.con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
            reloaded = int(engine.stats["runs_reloaded"])
        finally:
            _close(store, engine)
    return {
        "insert_s": insert_s,
        "judge_s": judge_s,
        "insert_cpu": insert_cpu,
        "judge_cpu": judge_cpu,
        "main_cpu": main_cpu,
        "runs": runs,
        "reloaded": reloaded,
        "n": n,
    }


class Spread:
    """Each run's spans in two commits `seconds` apart: every other span of a run is held
    back and sent later, its times moved by as much (it happened later in the run).

    The generators put a whole run in one commit, so every run is judged once, in memory;
    a live run's spans come over its life, in the exports of several seconds, and the
    engine judges the run again at each (its verdict may have changed), reloading it from
    the store when it has left the engine's memory meanwhile (`max_hot_handoffs`)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.held: deque[tuple[float, pa.Table]] = deque()

    def __call__(self, t: pa.Table) -> pa.Table:
        if self.seconds <= 0:
            return t
        now = time.perf_counter()
        self.held.append((now + self.seconds, t.take(pa.array(range(1, t.num_rows, 2)))))
        out = [t.take(pa.array(range(0, t.num_rows, 2)))]
        while self.held and self.held[0][0] <= now:
            _, late = self.held.popleft()
            shift = int(self.seconds * 1e9)
            for c in ("start_ns", "end_ns", "received_ns"):
                i = late.schema.get_field_index(c)
                late = late.set_column(i, late.schema.field(i), pc.add(late.column(c), shift))
            out.append(late)
        return pa.concat_tables(out).combine_chunks()


def sustained(
    seconds: float, rate: int, commit_spans: int, hpr: int, where: str, spread: float = 0.0
) -> dict:
    gen = FastGenerator(hpr)
    split = Spread(spread)
    fresh: list[float] = []
    commit_end: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as d:
        store, engine = _open(d, where)
        judge = Judge(store, engine)
        done = {}

        def observe(orig=judge._step):
            # Freshness, measured where the API would first see it: right after the
            # judge's transaction committed the rows of commits up to its new mark.
            before = judge.mark
            orig()
            now = time.time_ns()
            for seq in range(before + 1, judge.mark + 1):
                end = commit_end.pop(seq, None)
                if end is not None:
                    fresh.append((now - end) / 1e9)

        judge._step = observe  # type: ignore[method-assign]
        judge.start()
        wcon = store.con
        per_s = rate / commit_spans
        t_start = time.perf_counter()
        seq = 0
        lag_end = 0.0
        try:
            while (elapsed := time.perf_counter() - t_start) < seconds:
                due = int(elapsed * per_s) + 1
                if seq >= due:
                    time.sleep(min(0.005, (due / per_s) - elapsed + 1e-4))
                    continue
                t = split(gen.table(commit_spans))
                seq += 1
                commit_end[seq] = max(t.column("end_ns").to_pylist())
                wcon.begin()
                store.insert_new_spans(t, commit_seq=seq)
                wcon.commit()
                judge.committed_through(seq, spans=t.num_rows)
            sent_s = time.perf_counter() - t_start
            lag_end = judge.lag_seconds()
            pending = judge.pending_commits
            mark_at_end = judge.mark
            t0 = time.perf_counter()
            # Drained: every commit judged (a stopping judge would give up after
            # CLOSE_BUDGET_S and leave the rest to its next start, engine/judge.py).
            while judge.pending_commits and time.perf_counter() - t0 < DRAIN_TIMEOUT_S:
                time.sleep(0.05)
            drain_s = time.perf_counter() - t0
            judge.close()
            done = {
                "sent": seq * commit_spans,
                "sent_s": sent_s,
                "judged_at_end": mark_at_end * commit_spans,
                "pending": pending,
                "lag_end": lag_end,
                "drain_s": drain_s,
                "reloaded": int(engine.stats["runs_reloaded"]),
                "worker_peak_mb": _peak_rss_mb(getattr(engine, "worker_pids", [])),
            }
        finally:
            _close(store, engine)
    fresh.sort()
    done["fresh_p50"] = fresh[len(fresh) // 2] if fresh else float("nan")
    done["fresh_p95"] = fresh[int(len(fresh) * 0.95)] if fresh else float("nan")
    return done


ROOT = Path(__file__).resolve().parent.parent


class Against:
    """The engine of another git revision, measured by this script in a subprocess whose
    imports come from a worktree of that revision (`--against`)."""

    def __init__(self, rev: str, argv: list[str]) -> None:
        self.rev = rev
        self.argv = argv
        self.dir = tempfile.mkdtemp(prefix="bench-against-")
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", self.dir, rev],
            check=True,
            capture_output=True,
        )
        src = [
            Path(self.dir) / d / "src" for d in ("instrumentation", "collector", "dashboard", "")
        ]
        # PYTHONPATH comes before the editable installs' paths: REV's packages win.
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, src))}

    def measure(self, one: str) -> dict:
        out = subprocess.run(
            [sys.executable, __file__, *self.argv, "--one", one],
            env=self.env,
            capture_output=True,
            text=True,
        )
        if out.returncode:
            raise SystemExit(f"--against {self.rev}: {one} failed:\n{out.stderr[-2000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    def close(self) -> None:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", self.dir], capture_output=True
        )


def _one(spec: str, args) -> int:
    """`--one catch-up:SHAPE:WHERE` or `--one sustained:WHERE`: one measurement, as JSON."""
    kind, *rest = spec.split(":")
    if kind == "catch-up":
        shape, where = rest
        one, spread = dict((s, (o, sp)) for s, o, sp in _shapes(args))[shape]
        m = catch_up(args.spans, args.commit_spans, args.handoffs_per_run, one, where, spread)
    else:
        (where,) = rest
        m = sustained(
            args.seconds, args.rate, args.commit_spans, args.handoffs_per_run, where, args.spread
        )
    print(json.dumps(m))
    return 0


def main(argv: list[str] | None = None) -> int:
    global WORKERS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spans", type=int, default=100_000)
    p.add_argument("--commit-spans", type=int, default=4096)
    p.add_argument("--handoffs-per-run", type=int, default=1)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--rate", type=int, default=TARGET_SPANS_PER_S)
    p.add_argument("--no-sustained", action="store_true")
    p.add_argument(
        "--spread",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="send every other span of each run SECONDS later, as a live run's spans come "
        "over its life: in the sustained measurement, and as a third catch-up shape whose "
        "halves are SECONDS x --rate spans apart (default 0: a whole run in one commit)",
    )
    p.add_argument(
        "--max-hot-handoffs",
        type=int,
        default=0,
        metavar="N",
        help="the engine's in-memory bound (the collector's --max-hot-handoffs; "
        "default: its default)",
    )
    p.add_argument("--workers", type=int, default=2, help="worker processes of the 'workers' case")
    p.add_argument(
        "--conversations",
        type=int,
        default=0,
        metavar="N",
        help="make each run a turn of one of N conversations (the judge then keeps their "
        "turns: engine/turns.py); default 0, runs outside conversations",
    )
    p.add_argument(
        "--engines",
        default=",".join(WHERE),
        help=f"where the engine runs, comma-separated, of {','.join(WHERE)} (default: all)",
    )
    p.add_argument(
        "--no-catch-up",
        action="store_true",
        help="only the sustained measurement (e.g. the issue's 5 minutes: --seconds 300)",
    )
    p.add_argument(
        "--against",
        metavar="REV",
        help="also measure the engine of git revision REV (a worktree of it), interleaved in "
        "the same run: its figures beside these",
    )
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    WORKERS = args.workers
    if args.max_hot_handoffs:
        HOT["max_hot_handoffs"] = args.max_hot_handoffs
    CONVERSATIONS["n"] = args.conversations
    engines = tuple(e for e in args.engines.split(",") if e)
    if not engines or set(engines) - set(WHERE):
        p.error(f"--engines: a comma-separated list of {', '.join(WHERE)}")
    if args.one:
        return _one(args.one, args)
    against = None
    if args.against:
        passed = list(argv if argv is not None else sys.argv[1:])
        keep = [
            a
            for i, a in enumerate(passed)
            if a != "--against"
            and not a.startswith("--against=")
            and (i == 0 or passed[i - 1] != "--against")
        ]
        against = Against(args.against, keep)
    try:
        return _main(args, engines, against)
    finally:
        if against is not None:
            against.close()


def _per_span(measured: list[dict], key: str) -> float:
    """The median over rounds of a catch-up figure (seconds), in µs a span."""
    return statistics.median(m[key] / m["n"] * 1e6 for m in measured)


def _shapes(args) -> list[tuple[str, bool, tuple[int, float] | None]]:
    """The catch-up's shapes of runs: (name, one span a run, spread). With `--spread S`,
    also runs whose spans come S seconds apart at `--rate`: that many commits apart."""
    shapes: list[tuple[str, bool, tuple[int, float] | None]] = [
        ("runs", False, None),
        ("one-span runs", True, None),
    ]
    if args.spread > 0:
        gap = max(1, round(args.spread * args.rate / args.commit_spans))
        shapes.append(("spread runs", False, (gap, args.spread)))
    return shapes


def _main(args, engines: tuple[str, ...], against: Against | None) -> int:
    catch_up(2000, 512, 1, where="thread")  # warm-up: imports, first Arrow conversions
    shapes = _shapes(args)
    cases = [(shape, one, spread, where) for where in engines for shape, one, spread in shapes]
    res: dict[tuple[str, str], list[dict]] = {(s, w): [] for s, _, _, w in cases}
    base: dict[tuple[str, str], list[dict]] = {(s, w): [] for s, _, _, w in cases}
    for r in range(0 if args.no_catch_up else args.rounds):
        for shape, one, spread, where in cases if r % 2 == 0 else reversed(cases):
            if against is not None and r % 2 == 1:  # which engine goes first alternates
                base[(shape, where)].append(against.measure(f"catch-up:{shape}:{where}"))
            m = catch_up(args.spans, args.commit_spans, args.handoffs_per_run, one, where, spread)
            res[(shape, where)].append(m)
            if against is not None and r % 2 == 0:
                base[(shape, where)].append(against.measure(f"catch-up:{shape}:{where}"))
            if against is not None:
                b = base[(shape, where)][-1]
                print(
                    f"  round {r + 1} {shape:>13} ({where}) of {against.rev}: judge "
                    f"{b['judge_s'] / b['n'] * 1e6:6.1f} µs/span"
                    f" (CPU {b['judge_cpu'] / b['n'] * 1e6:6.1f})",
                    flush=True,
                )
            print(
                f"  round {r + 1} {shape:>13} ({where}): insert "
                f"{m['insert_s'] / m['n'] * 1e6:6.1f} µs/span"
                f" (CPU {m['insert_cpu'] / m['n'] * 1e6:6.1f})"
                f"  judge {m['judge_s'] / m['n'] * 1e6:6.1f} µs/span"
                f" (CPU {m['judge_cpu'] / m['n'] * 1e6:6.1f}, of it in this process"
                f" {m['main_cpu'] / m['n'] * 1e6:5.1f})  ({m['runs']} runs"
                + (f", {m['reloaded']:,} reloaded" if m.get("reloaded") else "")
                + ")",
                flush=True,
            )
    if not args.no_catch_up:
        print(
            f"\ncatch-up, {args.spans} spans, {args.handoffs_per_run} handoff(s) a run, "
            f"commits of {args.commit_spans}; engine in its worker process (the collector's "
            f"default) or in the judge's thread:"
        )
        print(
            "shape          engine  insert µs/span  judge µs/span  judge spans/s  judge/insert"
            "   (CPU µs/span: insert  judge  in the collector's process)"
        )
        for shape, _, _, where in cases:
            ms = res[(shape, where)]
            ins, jud, ins_c, jud_c, main_c = (
                _per_span(ms, k)
                for k in ("insert_s", "judge_s", "insert_cpu", "judge_cpu", "main_cpu")
            )
            print(
                f"{shape:>13} {where:>7}  {ins:14.1f} {jud:14.1f} {1e6 / jud:14,.0f}"
                f" {jud / ins:12.2f}x   {ins_c:19.1f} {jud_c:6.1f} {main_c:6.1f}"
            )
        if against is not None:
            print(
                f"\nthe engine of {against.rev}, the same spans in the same run (judge µs/span,"
                f" median of {args.rounds}; the ratio is this engine's over {against.rev}'s):"
            )
            print("shape          engine   wall  (this)   CPU  (this)   CPU ratio")
            for shape, _, _, where in cases:
                ms, bs = res[(shape, where)], base[(shape, where)]
                bw, bc = _per_span(bs, "judge_s"), _per_span(bs, "judge_cpu")
                tw, tc = _per_span(ms, "judge_s"), _per_span(ms, "judge_cpu")
                print(
                    f"{shape:>13} {where:>7} {bw:6.1f} ({tw:5.1f}) {bc:6.1f} ({tc:5.1f})"
                    f" {tc / bc:10.2f}x"
                )
    if not args.no_sustained:
        print(
            f"\nsustained {args.rate:,} spans/s offered for {args.seconds:.0f} s by a writer "
            f"thread, the judge in this process and its engine where said"
            + (
                f"; each run's spans in two commits {args.spread:g} s apart (--spread):"
                if args.spread > 0
                else ":"
            )
        )
        for where in engines:
            s = sustained(
                args.seconds,
                args.rate,
                args.commit_spans,
                args.handoffs_per_run,
                where,
                spread=args.spread,
            )
            print(
                f"  {where:>6}: offered {s['sent']:,} spans in {s['sent_s']:.1f} s "
                f"({s['sent'] / s['sent_s']:,.0f} spans/s); judged by then {s['judged_at_end']:,}"
                f" ({s['judged_at_end'] / s['sent_s']:,.0f} spans/s); "
                f"lag at end {s['lag_end']:.2f} s, {s['pending']} commits pending, "
                f"drained in {s['drain_s']:.1f} s; {s['reloaded']:,} runs reloaded"
                + (
                    f"; worker peak RSS {s['worker_peak_mb']:.0f} MB"
                    if s["worker_peak_mb"] is not None
                    else ""
                )
            )
            print(
                f"          freshness (span end -> verdict committed): p50 {s['fresh_p50']:.2f} s,"
                f" p95 {s['fresh_p95']:.2f} s (target p95 <= {TARGET_FRESHNESS_P95_S} s)",
                flush=True,
            )
            if against is not None:
                b = against.measure(f"sustained:{where}")
                print(
                    f"  {where:>6} of {against.rev}: judged by then "
                    f"{b['judged_at_end'] / b['sent_s']:,.0f} spans/s of "
                    f"{b['sent'] / b['sent_s']:,.0f} offered; lag at end {b['lag_end']:.2f} s; "
                    f"freshness p50 {b['fresh_p50']:.2f} s, p95 {b['fresh_p95']:.2f} s",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
