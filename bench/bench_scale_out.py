"""Scale-out on one PostgreSQL (issue 16, DESIGN §6 "shared store"): ingest with 1 and 2
collectors against the DuckDB single node measured in the same run, the judge's lag
under that load, and the dashboard queries' p95 over a large history on PostgreSQL.

Ingest: bench_receiver.py's load — pre-encoded 512-span OTLP/HTTP protobuf exports made
by the real SDK, made unique per export, posted from a separate process over 4 keep-alive
connections as fast as they are acknowledged (ack after commit) — into
  (a) one collector on a DuckDB file (the baseline),
  (b) one collector on PostgreSQL,
  (c) two collectors on one PostgreSQL database, the 4 connections split across them.
Printed: spans/s acknowledged in the measured seconds and the ratio to (a); (c)/(b)
against the target (≥ 1.5×); the judge lag (`judge_lag_seconds` of /healthz, every
0.25 s during the measured seconds, the worst collector's each time) as p95 and max,
and the time from the end of ingest until every collector reports no lag (on PostgreSQL
the collectors look at the shared work list every 0.5 s: read this to that grain).
Judged: the spans the collectors' judges applied (`handoffscope_engine_spans_applied_total`
of /metrics, summed over the collectors) from the end of the warm-up until they drained,
over that time — what the judges got through while the receivers took all they could —
and the same for 2 collectors against 1 on PostgreSQL: on a shared store each judges its
share of the partitions, so this is the figure that grows with collectors given the cores
(on two shared cores, two collectors' receivers, judges and the database compete for them).

Queries: a history of `--handoffs` handoffs (default 1M, a few minutes here; the 10M
figure of DESIGN §6 is `--handoffs 10000000`, ~20 min to generate here) written
set-based into a fresh PostgreSQL database (gen_history_pg.py), one real collector
started on it, and every query the dashboard makes (bench_queries.py's plan: the same
endpoints and parameters) asked `--requests` times idle, then again while a separate
process ingests into that collector; p50/p95 per query beside the 200 ms target.

PostgreSQL: a throwaway cluster of Debian's server binaries (tests/support/postgres.py,
durable: fsync on, as a production server runs), or `--dsn postgresql://...` of a
server of yours (its user needs CREATEDB; the bench's databases are dropped after).
Timings are never asserted; this machine is shared and noisy: compare within one run.
The figures are also written to `--json` (default bench/results/scale_out.json).

    .venv/bin/python bench/bench_scale_out.py [--seconds 10] [--handoffs 1000000]
    .venv/bin/python bench/bench_scale_out.py --skip-queries          # ingest only, ~2 min
    .venv/bin/python bench/bench_scale_out.py --handoffs 10000000     # the 10M figure
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import bench_queries  # bench/ is on sys.path: these scripts run as files
import bench_receiver
import gen_history_pg
import httpx
import launch

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "scale_out.json"
TARGET_TWO_OVER_ONE = 1.5
SAMPLE_EVERY_S = 0.25
DRAIN_TIMEOUT_S = 600.0
"""A bound on waiting for the judge after ingest, not a measurement."""


# --- PostgreSQL ---------------------------------------------------------------------------


class Databases:
    """Fresh databases on one server: a throwaway cluster, or the server of `--dsn`."""

    def __init__(self, dsn: str | None) -> None:
        self.server = None
        if dsn is None:
            sys.path.insert(0, str(HERE.parent / "tests"))
            from support.postgres import PostgresServer  # the test suite's real PostgreSQL

            self.server = PostgresServer(durable=True).start()
            dsn = self.server.dsn
        self.admin_dsn = dsn
        self.made: list[str] = []

    def fresh(self, label: str) -> str:
        import psycopg

        name = f"bench_{label}_{time.time_ns()}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        self.made.append(name)
        return self.admin_dsn.rsplit("/", 1)[0] + "/" + name

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            return
        import psycopg

        with psycopg.connect(self.admin_dsn, autocommit=True) as con:
            for name in self.made:
                con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- ingest ---------------------------------------------------------------------------------


def healthz(url: str) -> dict:
    return httpx.get(url + "/healthz", timeout=30).json()


class LagSampler(threading.Thread):
    """`judge_lag_seconds` of every collector each SAMPLE_EVERY_S; keeps the worst."""

    def __init__(self, urls: list[str], start_after_s: float) -> None:
        super().__init__(daemon=True)
        self.urls = urls
        self.start_at = time.monotonic() + start_after_s
        self.samples: list[float] = []
        self.done = threading.Event()

    def run(self) -> None:
        self.done.wait(max(0.0, self.start_at - time.monotonic()))
        while not self.done.is_set():
            # A /healthz that fails under load is a missing sample, not a lag figure.
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                self.samples.append(max(healthz(u)["judge_lag_seconds"] for u in self.urls))
            self.done.wait(SAMPLE_EVERY_S)


def spans_judged(urls: list[str]) -> int:
    """Spans applied by the judges of every collector so far (their /metrics counter)."""
    total = 0
    for u in urls:
        for line in httpx.get(u + "/metrics", timeout=30).text.splitlines():
            if line.startswith("handoffscope_engine_spans_applied_total "):
                total += int(float(line.split()[1]))
    return total


def drained(urls: list[str]) -> bool:
    states = [healthz(u) for u in urls]
    return all(s["judge_pending_commits"] == 0 and s["judge_lag_seconds"] == 0 for s in states)


def ingest(label: str, stores: list[str], payload: str, args, tmp: str) -> dict:
    """bench_receiver's load split across one collector per entry of `stores`."""
    procs, urls = [], []
    try:
        for i, store in enumerate(stores):
            if store.startswith("postgresql://"):
                proc, url = launch.start_collector(
                    Path(tmp) / f"{label}{i}.duckdb", "--store", store, "--judge", args.judge
                )
            else:
                proc, url = launch.start_collector(store, "--judge", args.judge)
            procs.append(proc)
            urls.append(url)
        sampler = LagSampler(urls, args.warmup)
        sampler.start()
        judged_from: list[tuple[float, int]] = []
        counter = threading.Timer(
            args.warmup, lambda: judged_from.append((time.monotonic(), spans_judged(urls)))
        )
        counter.start()
        measured = bench_receiver.load(
            ",".join(u.removeprefix("http://") for u in urls), payload, args
        )
        counter.join()
        ended = time.monotonic()
        sampler.done.set()
        sampler.join()
        drain: float | None = None
        while time.monotonic() - ended < DRAIN_TIMEOUT_S:
            if drained(urls):
                drain = time.monotonic() - ended
                break
            time.sleep(0.1)
        lags = sampler.samples
        judged_per_s = None
        if drain is not None and judged_from:
            t0, n0 = judged_from[0]
            judged_per_s = (spans_judged(urls) - n0) / (ended + drain - t0)
        return {
            "label": label,
            "collectors": len(stores),
            "spans_per_s": measured["acked_spans"] / args.seconds,
            "answers": measured["codes"],
            "lag_p95_s": bench_queries.p(lags, 95) if lags else None,
            "lag_max_s": max(lags) if lags else None,
            "lag_samples": len(lags),
            "drain_s": drain,
            "judged_spans_per_s": judged_per_s,
        }
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(120)


# --- queries --------------------------------------------------------------------------------


def query_p95(dsn: str, args, tmp: str) -> dict:
    t0 = time.perf_counter()
    if args.history:
        rows = gen_history_pg.counts(dsn)
        generated_s = None
        print(f"  history: {rows['handoffs']:,} handoffs, {rows['runs']:,} runs, as found")
    else:
        rows = gen_history_pg.generate(dsn, args.handoffs)
        generated_s = time.perf_counter() - t0
        print(
            f"  history: {rows['handoffs']:,} handoffs, {rows['runs']:,} runs written "
            f"set-based in {generated_s:.0f} s",
            flush=True,
        )
    proc, base = launch.start_collector(
        Path(tmp) / "queries.duckdb", "--store", dsn, "--retention-days", "0", "--judge", args.judge
    )
    try:
        api = httpx.Client(base_url=base, timeout=60)
        plan = bench_queries.queries(api)
        bench_queries.measure(api, plan, 2)  # warm, as a dashboard that has been open
        idle = bench_queries.measure(api, plan, args.requests)
        stop = mp.Event()
        acked = mp.Value("q", 0)
        loader = mp.Process(
            target=bench_queries._ingest, args=(base + "/v1/traces", stop, acked), daemon=True
        )
        loader.start()
        time.sleep(3)
        t1, n1 = time.perf_counter(), acked.value
        busy = bench_queries.measure(api, plan, args.requests)
        rate = (acked.value - n1) / (time.perf_counter() - t1)
        stop.set()
        loader.join(60)
    finally:
        proc.terminate()
        proc.wait(120)
    per_query = {
        label: {
            "idle_p50_ms": bench_queries.p(idle[label], 50),
            "idle_p95_ms": bench_queries.p(idle[label], 95),
            "busy_p50_ms": bench_queries.p(busy[label], 50),
            "busy_p95_ms": bench_queries.p(busy[label], 95),
        }
        for label, _ in plan
    }
    return {
        "handoffs": rows["handoffs"],
        "runs": rows["runs"],
        "generated_s": generated_s,
        "ingest_while_busy_spans_per_s": rate,
        "queries": per_query,
    }


# --- the run --------------------------------------------------------------------------------


def fmt_s(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per setup")
    ap.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first")
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--handoffs", type=int, default=1_000_000, help="query history size")
    ap.add_argument("--requests", type=int, default=20, help="requests per query and phase")
    ap.add_argument("--dsn", help="a PostgreSQL server to use (default: a throwaway cluster)")
    ap.add_argument("--skip-queries", action="store_true", help="ingest and judge lag only")
    ap.add_argument("--skip-ingest", action="store_true", help="queries only")
    ap.add_argument(
        "--history",
        metavar="DSN",
        help="measure the queries on this database, which already holds a history "
        "(gen_history_pg.py), instead of generating one (minutes at 10M handoffs)",
    )
    ap.add_argument(
        "--judge",
        choices=("on", "thread"),
        default="on",
        help="every collector's --judge: the engine in its worker process (the default) or "
        "in the judge's thread",
    )
    ap.add_argument("--json", default=str(RESULTS), help="where to write the figures")
    args = ap.parse_args()

    load_before = os.getloadavg()
    dbs = Databases(args.dsn)
    result: dict = {"load_average_before": load_before}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-scale-out-") as tmp:
            body, layout = bench_receiver.make_template()
            payload = os.path.join(tmp, "payload.pb")
            Path(payload).write_bytes(body)
            Path(payload + ".json").write_text(json.dumps(layout))
            print(
                f"ingest, ack after commit: {bench_receiver.SPANS_PER_EXPORT}-span OTLP/HTTP "
                f"exports, {args.connections} keep-alive connections from a separate process "
                f"(split across the collectors), {args.seconds:g} s measured after "
                f"{args.warmup:g} s warm-up; load average {load_before[0]:.1f}",
                flush=True,
            )
            if not args.skip_ingest:
                runs = [
                    ingest("a", [os.path.join(tmp, "a.duckdb")], payload, args, tmp),
                    ingest("b", [dbs.fresh("b")], payload, args, tmp),
                ]
                shared = dbs.fresh("c")
                runs.append(ingest("c", [shared, shared], payload, args, tmp))
                result["ingest"] = runs
                print_ingest(runs)
            if not args.skip_queries:
                size = "the given history" if args.history else f"{args.handoffs:,} handoffs"
                print(f"\nqueries on PostgreSQL at {size}:", flush=True)
                result["queries"] = query_p95(args.history or dbs.fresh("q"), args, tmp)
                print_queries(result["queries"])
    finally:
        dbs.close()
    result["load_average_after"] = os.getloadavg()
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2))
    print(
        f"\nload average before {load_before[0]:.1f}, after {result['load_average_after'][0]:.1f}"
        f" (1 min); figures written to {args.json}"
    )


def print_ingest(runs: list[dict]) -> None:
    names = {
        "a": "(a) 1 collector, DuckDB file",
        "b": "(b) 1 collector, PostgreSQL",
        "c": "(c) 2 collectors, one PostgreSQL",
    }
    base = runs[0]["spans_per_s"] or 1e-9
    print(
        f"\n  {'':<34}{'spans/s':>10}{'vs (a)':>9}{'lag p95':>10}{'lag max':>10}"
        f"{'drain':>10}{'judged/s':>10}  answers"
    )
    for r in runs:
        judged = r["judged_spans_per_s"]
        print(
            f"  {names[r['label']]:<34}{r['spans_per_s']:>10,.0f}{r['spans_per_s'] / base:>8.2f}x"
            f"{fmt_s(r['lag_p95_s']):>10}{fmt_s(r['lag_max_s']):>10}{fmt_s(r['drain_s']):>10}"
            f"{'—' if judged is None else f'{judged:,.0f}':>10}  {r['answers']}"
        )
    one, two = runs[1]["spans_per_s"], runs[2]["spans_per_s"]
    ratio = two / max(one, 1e-9)
    verdict = "MET" if ratio >= TARGET_TWO_OVER_ONE else "NOT MET"
    print(
        f"  2 collectors / 1 on the same PostgreSQL: {ratio:.2f}x "
        f"(target >= {TARGET_TWO_OVER_ONE}x: {verdict})"
    )
    j1, j2 = runs[1]["judged_spans_per_s"], runs[2]["judged_spans_per_s"]
    if j1 and j2:
        print(
            f"  judged by 2 collectors / 1 on the same PostgreSQL: {j2 / j1:.2f}x "
            f"({j2:,.0f} vs {j1:,.0f} spans/s)"
        )
    print(
        "  lag: judge_lag_seconds of /healthz during the measured seconds (worst collector);"
        " drain: end of ingest until every collector reports none; judged/s: spans the"
        " judges applied (/metrics, summed) from the end of the warm-up until drained,"
        " over that time"
    )


def print_queries(q: dict) -> None:
    target = bench_queries.TARGET_MS
    print(
        f"\n  {'query':<26}{'idle p50':>10}{'idle p95':>10}{'busy p50':>10}{'busy p95':>10}"
        f"{'target':>9}  ok"
    )
    worst = 0.0
    for label, f in q["queries"].items():
        worst = max(worst, f["busy_p95_ms"])
        ok = "yes" if f["busy_p95_ms"] <= target else "NO"
        print(
            f"  {label:<26}{f['idle_p50_ms']:>8.1f}ms{f['idle_p95_ms']:>8.1f}ms"
            f"{f['busy_p50_ms']:>8.1f}ms{f['busy_p95_ms']:>8.1f}ms{target:>7.0f}ms  {ok}"
        )
    print(
        f"  worst busy p95 {worst:.1f} ms (target <= {target:.0f} ms) at {q['handoffs']:,} "
        f"handoffs; ingest meanwhile {q['ingest_while_busy_spans_per_s']:,.0f} spans/s; "
        f"idle p95 median {statistics.median(f['idle_p95_ms'] for f in q['queries'].values()):.1f} ms"
    )
    if q["handoffs"] < 10_000_000:
        print("  (the 10M figure: --handoffs 10000000)")


if __name__ == "__main__":
    main()
