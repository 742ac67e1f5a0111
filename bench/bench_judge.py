"""Judge cost per span for one big run of pending handoffs: 1k vs 10k (issue 13, item 1).

The finding: 10,000 pending handoffs (no destination admitted) in one run took the judge
minutes, because the run's verdict timeline compared every pending flip with every
handoff (O(n²)). Now it is one sweep (O(n log n)); this bench shows the cost per span is
(nearly) flat in the size of the run.

In-process with the real parts the judge uses — a DuckDB file, the store's insert, the
health engine's `apply` inside a transaction — fed:

- `one export`: the run's N request spans in one batch (the finding's shape);
- `512 a batch`: the same spans in batches of 512 (an OTel SDK exporter's default), each
  judged on its own, the worst case of a judge that keeps up with every commit (behind,
  it takes many commits a step: judge.STEP_SPANS);
- `baseline`: N pending handoffs in N runs of one handoff each, in one batch — the cost
  of a span when runs are small.

Reported as µs per span and the ratio 10k / 1k of each shape (≈1: linear), and each
shape against the baseline of the same size. Rounds alternate sizes so noise hits all.

    .venv/bin/python bench/bench_judge.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from handoffscope.collector.engine import HealthEngine
from handoffscope.collector.store.duckdb_store import DuckDBStore
from handoffscope.collector.store.spans import ATTRIBUTE_COLUMNS, SPAN_SCHEMA, build_spans_table
from handoffscope.instrumentation import semconv as sc

SIZES = (1_000, 10_000)
SHAPES = ("one export", "512 a batch", "baseline")


def _table(n: int, *, runs: int, first: int = 0, count: int | None = None):
    """Spans first..first+count of n pending handoffs spread over `runs` runs."""
    count = n - first if count is None else count
    cols: dict[str, list] = {f.name: [None] * count for f in SPAN_SCHEMA}
    now = time.time_ns()
    for j in range(count):
        i = first + j
        start = now - (n - i) * 1000
        cols["trace_id"][j] = "ab" * 16
        cols["span_id"][j] = secrets.token_hex(8)
        cols["name"][j] = sc.SPAN_REQUEST
        cols["service"][j] = "bench"
        cols["start_ns"][j] = start
        cols["end_ns"][j] = start + 10
        cols["received_ns"][j] = now
        attrs = {
            sc.RUN_ID: f"run-{i % runs}",
            sc.HANDOFF_ID: f"h{i:06d}",
            sc.FROM_AGENT: "triage" if i % 2 == 0 else "billing",
            sc.TO_AGENT: "billing" if i % 2 == 0 else "triage",
            sc.TURN: i,
            sc.STATE_VERSION: i,
            sc.ROUTE_DECLARED: True,
        }
        for k, v in attrs.items():
            cols[ATTRIBUTE_COLUMNS[k]][j] = v
    return build_spans_table(cols)


def _judge(store: DuckDBStore, engine: HealthEngine, table) -> float:
    """Seconds the engine spends on `table` (insert outside the clock, as the writer does)."""
    con = store.con
    con.begin()
    new = store.insert_new_spans(table)
    t0 = time.perf_counter()
    engine.apply(con, new)
    elapsed = time.perf_counter() - t0
    con.commit()
    return elapsed


def measure(shape: str, n: int) -> float:
    """µs of judging per span."""
    with tempfile.TemporaryDirectory() as d:
        store = DuckDBStore(str(Path(d) / "judge.duckdb"))
        engine = HealthEngine(grace_seconds=30)
        engine.install(store.con)
        engine.load(store.con)
        try:
            if shape == "baseline":
                spent = _judge(store, engine, _table(n, runs=n))
            elif shape == "one export":
                spent = _judge(store, engine, _table(n, runs=1))
            else:
                spent = sum(
                    _judge(store, engine, _table(n, runs=1, first=lo, count=min(512, n - lo)))
                    for lo in range(0, n, 512)
                )
        finally:
            store.close()
    return spent / n * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args(argv)
    measure("baseline", 200)  # warm-up: imports, first Arrow conversion
    results: dict[tuple[str, int], list[float]] = {}
    for r in range(args.rounds):
        for n in SIZES if r % 2 == 0 else reversed(SIZES):
            for shape in SHAPES:
                us = measure(shape, n)
                results.setdefault((shape, n), []).append(us)
                print(f"  round {r + 1} {shape:>11} n={n:>6}: {us:8.1f} µs/span", flush=True)
    small, big = SIZES
    print(
        f"\nshape          µs/span n={small:<6} µs/span n={big:<6} {big}/{small}   vs baseline at {big}"
    )
    base_big = statistics.median(results[("baseline", big)])
    for shape in SHAPES:
        a = statistics.median(results[(shape, small)])
        b = statistics.median(results[(shape, big)])
        print(f"{shape:>11}   {a:14.1f} {b:14.1f}   {b / a:6.2f}x   {b / base_big:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
