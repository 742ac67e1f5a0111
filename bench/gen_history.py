"""Generate a handoff history straight into a DuckDB file: set-based by default, or
through the collector's own path (`--through-engine`).

Either way the schema is the collector's own: the file is opened with `DuckDBStore` and
`HealthEngine().install` applies the engine's numbered steps, as a collector starting on
it would, so the tables are exactly a collector's.

Set-based (the default, gen_history_duckdb.sql): DuckDB writes the derived rows with
`INSERT ... SELECT` over `range()`, a chunk of ~250k handoffs (whole runs) at a time —
the chunk's handoffs, runs and waits, then the evidence spans behind them, made from
those rows and sorted into arrival order, one group commit a chunk — and last the
rollups, a UTC day at a time, from the handoff rows (so they agree with them exactly).
Each transaction moves the judge's mark to its last commit, so a collector opening the
file has nothing to judge. Run detail and search by trace id work (one trace per run).
The verdicts are the SQL's, close to the engine's (the SQL file's header says how
close). About 35 s per million handoffs on this shared 2-core machine, linear in the
size (ten million: ~7 min, 1.8 GB, 1.2 GB peak RSS at the 1 GB memory limit).

`--through-engine` (faithful but slow, ~9k spans/s: 10M handoffs take half an hour or
more): runs are synthesised in time order and written the way the collector's writer
writes them — batches of spans as Arrow tables, inserted by
`DuckDBStore.insert_new_spans` and handed to `HealthEngine.apply` inside the same
transaction — so every derived row is the engine's own verdict on its spans.

The mix is mostly healthy, with every verdict represented: undeclared routes, contract
rejections (every reason), stale control, open tool calls, missing context, loops (a
repeat and a three-agent cycle), false completions, waits (pending, overdue, uncertain,
decided), runs that failed or hit max turns, and, in the last minutes, runs still in
flight and destinations that never started.

    .venv/bin/python bench/gen_history.py --db /tmp/history.duckdb               # 1M handoffs
    .venv/bin/python bench/gen_history.py --db /tmp/h10m.duckdb --handoffs 10000000
    .venv/bin/python bench/gen_history.py --db /tmp/h.duckdb --through-engine   # the engine's

Prints handoffs, runs and spans written, the time taken (spans/s through store + engine
with `--through-engine`), the file size and this process's peak RSS.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

from handoffscope.collector.engine import HealthEngine, turns
from handoffscope.collector.engine.judge import MARK_KEY
from handoffscope.collector.store import statements
from handoffscope.collector.store.duckdb_store import DuckDBStore
from handoffscope.collector.store.spans import ATTRIBUTE_COLUMNS, SPAN_SCHEMA, build_spans_table
from handoffscope.instrumentation import semconv as sc

HERE = Path(__file__).resolve().parent
SQL = HERE / "gen_history_duckdb.sql"
S = 10**9
NS_PER_DAY = 86_400 * S
SERVICES = ("billing-app", "support-desk", "travel-planner")
AGENTS = {
    "billing-app": ("triage", "billing", "refunds", "fraud", "escalation", "ledger"),
    "support-desk": ("frontdesk", "tech", "accounts", "returns", "supervisor"),
    "travel-planner": ("planner", "flights", "hotels", "payments", "concierge", "visa", "cars"),
}
HANDOFFS_PER_RUN = (1, 2, 2, 3, 3, 3, 4, 4, 5, 6)
COLUMNS = [f.name for f in SPAN_SCHEMA]
C = ATTRIBUTE_COLUMNS


class Batcher:
    """Column lists of one batch, filled by index; flushed through store + engine."""

    def __init__(self, store: DuckDBStore, engine: HealthEngine, size: int) -> None:
        self.store, self.engine, self.size = store, engine, size
        self.n = 0
        self.cols = {c: [None] * size for c in COLUMNS}
        self.spans = 0
        self.flush_seconds = 0.0
        self.phase = {"insert": 0.0, "engine": 0.0, "commit": 0.0}
        self._span_seq = 0

    def span(self, name: str, service: str, run: str, start: int, end: int, attrs: dict) -> None:
        i = self.n
        cols = self.cols
        self._span_seq += 1
        cols["trace_id"][i] = f"{self._span_seq:032x}"
        cols["span_id"][i] = f"{self._span_seq:016x}"
        cols["name"][i] = name
        cols["service"][i] = service
        cols["start_ns"][i] = start
        cols["end_ns"][i] = end
        cols["received_ns"][i] = end + 200_000_000  # exported ~0.2 s after it ended
        cols[C[sc.RUN_ID]][i] = run
        for k, v in attrs.items():
            cols[C[k]][i] = v
        self.n += 1
        if self.n == self.size:
            self.flush()

    def flush(self) -> None:
        if not self.n:
            return
        t = time.perf_counter()
        n = self.n
        # Arrival order: a real collector stamps received_ns as exports arrive.
        order = sorted(range(n), key=self.cols["received_ns"].__getitem__)
        table = build_spans_table({c: [v[i] for i in order] for c, v in self.cols.items()})
        con = self.store.con
        t1 = time.perf_counter()
        con.begin()
        new = self.store.insert_new_spans(table)
        t2 = time.perf_counter()
        turns.refresh(con, self.engine.apply(con, new))  # as the judge does
        t3 = time.perf_counter()
        con.commit()
        t4 = time.perf_counter()
        self.phase["insert"] += t2 - t1
        self.phase["engine"] += t3 - t2
        self.phase["commit"] += t4 - t3
        self.spans += n
        self.n = 0
        self.cols = {c: [None] * self.size for c in COLUMNS}
        self.flush_seconds += time.perf_counter() - t


TABLES = (
    "handoffs", "runs", "waits", "handoff_daily", "edge_hourly", "edge_daily",
    "edge_runs", "edge_runs_daily", "run_daily", "services", "turns", "turn_daily",
    "turn_entries", "spans",
)  # fmt: skip
CHUNK_HANDOFFS = 33 * 7_500
"""Handoffs per chunk of the set-based path (whole runs: a multiple of the 33-handoff size
cycle): each chunk's rows and spans are one step, its spans one group commit; about 250k
handoffs keep a step's sort well inside the memory limit."""


def statements_of(text: str) -> list[str]:
    """The statements of `text`: separated by lines holding only ';' (comments dropped)."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    return [part.strip() for part in body.split("\n;\n") if part.strip()]


def sections_of(text: str) -> dict[str, list[str]]:
    """{name: statements} of a file in sections, each begun by a line `-- @section NAME`."""
    parts = re.split(r"^-- @section (\w+)$", text, flags=re.MULTILINE)
    return {name: statements_of(body) for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def _replace(db: Path, force: bool) -> None:
    if db.exists():
        if not force:
            sys.exit(f"{db} exists; pass --force to replace it")
        db.unlink()
    Path(str(db) + ".wal").unlink(missing_ok=True)


def generate_set_based(
    db: str | Path,
    handoffs: int,
    *,
    days: float = 28.0,
    grace_seconds: float = 30.0,
    memory_limit: str | None = "1GB",
    now_ns: int | None = None,
    chunk_handoffs: int = CHUNK_HANDOFFS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, int]:
    """Write a history of `handoffs` handoffs ending at `now_ns` (default: now) into the
    new file `db` with gen_history_duckdb.sql; return rows per table. `progress` is told
    of each step done."""
    if chunk_handoffs <= 0 or chunk_handoffs % 33:
        raise ValueError("chunk_handoffs must be a positive multiple of 33 (whole runs)")
    store = DuckDBStore(db, memory_limit=memory_limit)
    try:
        con = store.con
        HealthEngine(grace_seconds=grace_seconds).install(con)
        if con.execute("SELECT count(*) FROM handoffs").fetchone()[0]:  # type: ignore[index]
            raise SystemExit(f"{db} already holds handoffs: generate into a new file")
        now = time.time_ns() if now_ns is None else now_ns
        span_ns = int(days * 86_400 * S)
        params = {
            "handoffs": handoffs,
            "now_ns": now,
            "span_ns": span_ns,
            "grace_ns": int(grace_seconds * S),
        }
        sql = sections_of(SQL.read_text())
        _run(con, sql["setup"], params)
        # A transaction per chunk, its judge mark with it: a transaction of ten million
        # handoffs grew slower with every chunk, and this way the file is consistent at
        # every commit (the rollups come last; an interrupted file is to be regenerated).
        commits = 0
        for lo in range(0, handoffs, chunk_handoffs):
            commits += 1
            chunk = {"lo": lo, "hi": lo + chunk_handoffs, "commit_seq": commits}
            _transaction(con, sql["chunk"], {**params, **chunk}, commits)
            if progress:
                progress(f"{min(lo + chunk_handoffs, handoffs):>11,} handoffs")
        first, last = con.execute(
            "SELECT min(first_seen_ns), max(first_seen_ns) FROM handoffs"
        ).fetchone()  # type: ignore[misc]
        for day in range(first // NS_PER_DAY, last // NS_PER_DAY + 1):
            window = {"lo": day * NS_PER_DAY, "hi": (day + 1) * NS_PER_DAY}
            _transaction(con, sql["day"], {**params, **window}, commits)
        _transaction(con, sql["finish"], params, commits)
        # Each run's turn and the weekly review's turn rollups, as a collector upgrading a
        # store tells them (engine/turns.py): the same statements, over every run.
        con.begin()
        turns.rebuild(con)
        con.commit()
        if progress:
            progress("rollups written")
        return {t: _count(con, t) for t in TABLES}
    finally:
        store.close()


def _transaction(con, sqls: list[str], params: dict[str, int], mark: int) -> None:
    """Run `sqls` and set the judge's mark to `mark` in one transaction. Every commit up
    to `mark` is judged already (its rows are the ones just written): a collector opening
    the file must not judge the whole history again."""
    con.begin()
    try:
        _run(con, sqls, params)
        statements.run(con, "set_meta", {"key": MARK_KEY, "value": str(mark)})
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _run(con, sqls: list[str], params: dict[str, int]) -> None:
    """Each statement with the parameters it names (DuckDB refuses unused ones)."""
    for sql in sqls:
        con.execute(sql, {k: v for k, v in params.items() if re.search(rf"\${k}\b", sql)})


def _count(con, table: str) -> int:
    return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def generate_through_engine(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    db = Path(args.db)
    store = DuckDBStore(db, memory_limit=args.memory_limit or "256MB")
    engine = HealthEngine(grace_seconds=args.grace_seconds)
    engine.install(store.con)
    engine.load(store.con)
    out = Batcher(store, engine, args.batch_spans)

    now = time.time_ns()
    span_ns = int(args.days * 86_400 * S)
    mean_handoffs = sum(HANDOFFS_PER_RUN) / len(HANDOFFS_PER_RUN)
    runs_total = max(1, int(args.handoffs / mean_handoffs))
    step = span_ns // runs_total
    handoffs = runs = 0
    started = time.perf_counter()
    last_report = started
    while handoffs < args.handoffs:
        runs += 1
        # Anchored to progress, so the history ends now whatever the random run sizes.
        t = now - span_ns + int(span_ns * handoffs / args.handoffs) + rng.randint(0, step)
        t = min(t, now - 1 * S)
        recent = now - t < 15 * 60 * S
        service = rng.choice(SERVICES)
        agents = AGENTS[service]
        run = f"run-{runs:09d}-{rng.getrandbits(32):08x}"
        k = min(rng.choice(HANDOFFS_PER_RUN), args.handoffs - handoffs)
        loop_kind = rng.random()
        path = [rng.choice(agents)]
        for _ in range(k):
            path.append(rng.choice([a for a in agents if a != path[-1]]))
        if loop_kind < 0.02 and k >= 3:
            path[3] = path[0]  # a three-agent cycle A -> B -> C -> A without progress
            if k > 3:
                path[4:] = [rng.choice([a for a in agents if a != path[3]])] + path[5:]
        cursor = t
        fp = f"{rng.getrandbits(48):012x}"
        state = 1
        for turn in range(1, k + 1):
            handoffs += 1
            frm, to = path[turn - 1], path[turn]
            if not (loop_kind < 0.02 or (loop_kind < 0.03 and turn == 2)):
                state += 1  # progress; loops keep the same (fingerprint, state)
            hid = f"h{turn}"
            req = cursor + rng.randint(1, 4) * S
            attrs = {
                sc.HANDOFF_ID: hid,
                sc.FROM_AGENT: frm,
                sc.TO_AGENT: to,
                sc.TURN: turn,
                sc.FINGERPRINT: fp,
                sc.STATE_VERSION: state,
                sc.HISTORY_ITEMS_FORWARDED: rng.randint(1, 8),
                sc.HISTORY_ITEMS_TOTAL: rng.randint(8, 20),
                sc.ROUTE_DECLARED: rng.random() > 0.03,
                sc.TOOL_CALL_ID: f"call_{runs}_{turn}",
                sc.CONTEXT_REQUIRED_KEYS: ["order_id", "customer_tier"],
                sc.REASON: "specialist_needed",
            }
            out.span(sc.SPAN_REQUEST, service, run, req, req + 2_000_000, attrs)
            fate = rng.random()
            if recent and fate < 0.05:
                cursor = req  # never admitted: in flight, then destination_not_started
                continue
            acc = req + rng.randint(50, 900) * 1_000_000
            attrs = {
                sc.HANDOFF_ID: hid,
                sc.CONTROL_BEFORE: frm if fate > 0.01 else to,
                sc.CONTROL_AFTER: to,
                sc.TOOL_CALL_CLOSED: fate > 0.02 or fate < 0.01,
                sc.DESTINATION_STARTED: True,
            }
            if 0.02 <= fate < 0.03:
                attrs[sc.CONTEXT_MISSING_KEYS] = ["customer_tier"]
            elif 0.03 <= fate < 0.06:
                attrs[sc.DESTINATION_STARTED] = False
                attrs[sc.REJECTION_REASON] = rng.choice(sc.REJECTION_REASONS)
            out.span(sc.SPAN_ACCEPT, service, run, acc, acc + 1_000_000, attrs)
            cursor = acc
            if 0.06 <= fate < 0.08:
                w = cursor + S
                wattrs = {
                    sc.HANDOFF_ID: hid,
                    sc.WAIT_OWNER: "finance-oncall",
                    sc.WAIT_REASON: "refund_over_limit",
                    sc.WAIT_DEADLINE: w + rng.choice((600, 3600, 86_400)) * S,
                    sc.WAIT_RESUME_TOKEN_ID: f"tok{runs}",
                    sc.WAIT_STATE_PERSISTED: fate < 0.075,
                }
                if fate < 0.065:
                    wattrs.pop(sc.WAIT_OWNER)
                out.span(sc.SPAN_WAIT, service, run, w, w + 1_000_000, wattrs)
                if rng.random() < 0.8 and not recent:
                    d = w + rng.randint(60, 1800) * S
                    decision = {sc.HANDOFF_ID: hid, sc.WAIT_DECISION: sc.WAIT_DECISION_APPROVED}
                    out.span(sc.SPAN_WAIT, service, run, d, d + 1_000_000, decision)
                    cursor = d
        end = cursor + rng.randint(1, 5) * S
        if recent and rng.random() < 0.5:
            status = sc.RUN_STATUS_STARTED
        else:
            r = rng.random()
            status = (
                sc.RUN_STATUS_FAILED
                if r < 0.04
                else sc.RUN_STATUS_MAX_TURNS
                if r < 0.06 or loop_kind < 0.02
                else sc.RUN_STATUS_COMPLETED
            )
        if status == sc.RUN_STATUS_COMPLETED and rng.random() < 0.9:
            result = sc.OUTCOME_PASS if rng.random() < 0.93 else sc.OUTCOME_FAIL
            oattrs = {
                sc.OUTCOME_VERIFIER: "task_check",
                sc.OUTCOME_RESULT: result,
                sc.OUTCOME_RECEIPT_ID: f"rcpt{runs}",
            }
            out.span(sc.SPAN_OUTCOME, service, run, end - S // 2, end - S // 4, oattrs)
        rattrs = {sc.RUN_STATUS: status, sc.RUN_STARTED: t, sc.RUN_TURNS: k}
        if status != sc.RUN_STATUS_STARTED:
            rattrs[sc.RUN_FINAL_AGENT] = path[-1]
        out.span(sc.SPAN_RUN, service, run, t, end, rattrs)
        if time.perf_counter() - last_report > 10:
            last_report = time.perf_counter()
            rate = out.spans / max(out.flush_seconds, 1e-9)
            split = ", ".join(f"{k} {v:.0f} s" for k, v in out.phase.items())
            print(
                f"  {handoffs:>11,} handoffs  {runs:>10,} runs  {out.spans:>11,} spans "
                f"({rate:,.0f} spans/s through store+engine; {split})",
                flush=True,
            )
    out.flush()
    store.close()
    elapsed = time.perf_counter() - started
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"wrote {handoffs:,} handoffs in {runs:,} runs, {out.spans:,} spans to {db}")
    print(
        f"  {elapsed:.0f} s total; store+engine {out.flush_seconds:.0f} s = "
        f"{out.spans / max(out.flush_seconds, 1e-9):,.0f} spans/s "
        f"({1e6 * out.flush_seconds / max(out.spans, 1):.1f} µs/span; "
        + ", ".join(f"{k} {1e6 * v / max(out.spans, 1):.1f}" for k, v in out.phase.items())
        + " µs/span)"
    )
    print(
        f"  file {os.path.getsize(db) / 2**20:,.0f} MiB; peak RSS of this process {rss_mb:,.0f} MiB"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Set-based unless --through-engine (see the module docstring).",
    )
    p.add_argument("--db", default="bench/history.duckdb", help="DuckDB file to create")
    p.add_argument("--handoffs", type=int, default=1_000_000, help="handoffs to generate")
    p.add_argument("--days", type=float, default=28.0, help="history spread over this many days")
    p.add_argument("--grace-seconds", type=float, default=30.0)
    p.add_argument(
        "--memory-limit",
        help="DuckDB memory limit (default 1GB set-based, 256MB through the engine)",
    )
    p.add_argument("--force", action="store_true", help="replace an existing file")
    p.add_argument(
        "--through-engine",
        action="store_true",
        help="push every span through DuckDBStore.insert_new_spans + HealthEngine.apply: "
        "the engine's own verdicts, but ~9k spans/s (10M handoffs: 30-45 min)",
    )
    p.add_argument(
        "--batch-spans", type=int, default=32_768, help="--through-engine: spans per transaction"
    )
    p.add_argument("--seed", type=int, default=1, help="--through-engine: random seed")
    args = p.parse_args(argv)
    db = Path(args.db)
    _replace(db, args.force)
    if args.through_engine:
        generate_through_engine(args)
        return
    started = time.perf_counter()
    rows = generate_set_based(
        db,
        args.handoffs,
        days=args.days,
        grace_seconds=args.grace_seconds,
        memory_limit=args.memory_limit or "1GB",
        progress=lambda step: print(f"  {time.perf_counter() - started:6.0f} s {step}", flush=True),
    )
    elapsed = time.perf_counter() - started
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"wrote {rows['handoffs']:,} handoffs in {rows['runs']:,} runs, set-based, to {db}:")
    for table, n in rows.items():
        print(f"  {table:<16} {n:>11,} rows")
    print(
        f"  {elapsed:.0f} s total; file {os.path.getsize(db) / 2**20:,.0f} MiB; "
        f"peak RSS of this process {rss_mb:,.0f} MiB"
    )


if __name__ == "__main__":
    main()
