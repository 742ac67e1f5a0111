"""`make bench`: every benchmark, one after another, each printing its figures beside the
baseline it was measured against in the same run (DESIGN §6). Nothing here asserts a
time: this machine is shared and noisy, so compare ratios within one run.

    .venv/bin/python bench/run_all.py                 # all (~27 min; 10M queries ~6 of it)
    .venv/bin/python bench/run_all.py shim e2e        # some
    .venv/bin/python bench/run_all.py --list
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHES: dict[str, tuple[str, list[str], str]] = {
    "shim": (
        "bench_shim.py",
        [],
        "shim cost per evidence span vs bare OTel SDK span; 10k handoffs/s burst",
    ),
    "receiver": (
        "bench_receiver.py",
        [],
        "receiver capacity, ack once durable (ingest log on and off), judge on (one and two"
        " workers), in-thread and --judge off, vs a null receiver",
    ),
    "stages": (
        "bench_ingest_stages.py",
        [],
        "each ingest stage alone in µs per span (parse, allowlist, Arrow, insert, commit)",
    ),
    "e2e": (
        "bench_e2e.py",
        [],
        "real Python SDK sender into the collector vs a null receiver; freshness",
    ),
    "queries": (
        "bench_queries.py",
        [],
        "p95 of each dashboard query at 1M handoffs, idle and while ingesting; RSS",
    ),
    "queries-10m": (
        "bench_queries.py",
        ["--handoffs", "10000000", "--db", str(HERE / "history-10m.duckdb")],
        "the same at 10M handoffs (history generated set-based the first time, ~2.5 min, 1.7 GiB;"
        " reused after)",
    ),
    "adapter-openai": (
        "bench_adapter_openai.py",
        [],
        "OpenAI Agents SDK run with vs without the instrumentor",
    ),
    "adapter-langgraph": (
        "bench_adapter_langgraph.py",
        [],
        "LangGraph invocation with vs without the instrumentor",
    ),
    "faults": (
        "bench_faults.py",
        [],
        "app-thread cost with the collector down / slow / 503 vs healthy",
    ),
    "judge": (
        "bench_judge.py",
        [],
        "judge cost per span for one run of 1k vs 10k pending handoffs (one export, 512 a batch)",
    ),
    "judge-throughput": (
        "bench_judge_throughput.py",
        [],
        "judge catching up (µs/span, CPU and wall) vs the store's insert, one worker, two"
        " (--judge-workers 2) and in-thread; sustained 50k spans/s: rate judged, lag, freshness",
    ),
    "judge-spread": (
        "bench_judge_throughput.py",
        [
            "--no-catch-up",
            "--engines",
            "worker",
            "--seconds",
            "60",
            "--rate",
            "10000",
            "--spread",
            "10",
        ],
        "the judge sustained on runs whose spans come over 10 s (judged at each of their"
        " commits; reloaded when they outlive --max-hot-handoffs): rate, reloads, freshness",
    ),
    "prices": (
        "bench_prices.py",
        [],
        "pricing a model call (the judge's price book) vs genai-prices' own calculation",
    ),
    "run-detail": (
        "bench_run_detail.py",
        [],
        "Run detail page render time, a 10k-handoff run vs a 100-handoff run (AppTest)",
    ),
    "scale-out": (
        "bench_scale_out.py",
        [],
        "ingest with 1 and 2 collectors on one PostgreSQL vs the DuckDB single node; judge lag;"
        " query p95 on PostgreSQL at 1M handoffs",
    ),
    "notify": (
        "bench_notify.py",
        [],
        "ingest throughput while notifying a webhook that answers 500 / hangs vs no --notify",
    ),
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("names", nargs="*", help=f"which to run (default all): {', '.join(BENCHES)}")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = p.parse_args(argv)
    if args.list:
        for name, (_, _, what) in BENCHES.items():
            print(f"{name:18} {what}")
        return 0
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHES)}")
    failed = []
    for name in args.names or list(BENCHES):
        script, extra, what = BENCHES[name]
        if not (HERE / script).exists():
            print(f"\n### {name}: {script} missing — skipped", flush=True)
            continue
        print(f"\n### {name}: {what}", flush=True)
        t0 = time.monotonic()
        code = subprocess.call([sys.executable, str(HERE / script), *extra])
        print(
            f"### {name}: {'done' if code == 0 else f'FAILED (exit {code})'} in {time.monotonic() - t0:.0f} s",
            flush=True,
        )
        if code:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
