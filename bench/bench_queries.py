"""p95 of every dashboard query over HTTP, with a large history stored, idle and under ingest.

DESIGN §6 target: each dashboard query p95 ≤ 200 ms with 10M handoffs stored, while
ingesting; collector RSS ≤ 400 MB. This script:

1. makes sure a history file exists (`gen_history.py`, 1M handoffs by default; pass
   `--handoffs 10000000` for the full figure). It is generated set-based (derived rows
   and spans written by SQL: about half a minute per million handoffs here; reused
   after); `--through-engine` pushes every span through the store and the health engine
   instead — the engine's own verdicts, but 30-45 min at ten million;
2. starts the real collector process on it (`python -m handoffscope.collector`);
3. measures each query the dashboard makes, `--requests` times, idle (the baseline);
4. starts a separate process that exports new handoff spans as fast as the collector
   acknowledges them (pre-encoded OTLP/HTTP protobuf, 128 runs per export, 2
   connections) and measures every query again while it runs. Each run is two handoffs
   (a request and an accept each) and ends with its `handoff.run` span, status
   completed, as every adapter sends it (640 spans per export); `--open-runs` sends no
   run span, so every run stays open and the judge's memory holds as many as
   `--max-hot-handoffs` allows (512 spans per export);
5. prints p50/p95 per query beside the target and the idle baseline (as a ratio), the
   ingest rate achieved meanwhile, and the collector's memory (with its judge worker's:
   PSS and RSS, sampled while ingesting, and their peaks).

The collector writes into the history file (the ingested runs are added to it); pass
`--fresh` to regenerate it.

    .venv/bin/python bench/bench_queries.py                       # 1M handoffs, ~3 min
    .venv/bin/python bench/bench_queries.py --handoffs 10000000 --db bench/h10m.duckdb
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
from launch import start_collector  # bench/ is on sys.path: these scripts run as files

HERE = Path(__file__).resolve().parent
TARGET_MS = 200.0
RSS_TARGET_MB = 400.0
S = 10**9


def iso(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns // S))


def queries(api: httpx.Client) -> list[tuple[str, list[tuple[str, dict]]]]:
    """(label, [(path, params), ...]): what each dashboard page asks, with variants to rotate."""
    now = time.time_ns()
    day = iso(now - 86_400 * S)
    month = iso(now - 30 * 86_400 * S)
    recent = api.get("/api/v1/runs", params={"limit": 50, "since": day}).json()["runs"]
    older = api.get(
        "/api/v1/runs",
        params={
            "limit": 50,
            "since": iso(now - 20 * 86_400 * S),
            "until": iso(now - 19 * 86_400 * S),
        },
    ).json()["runs"]
    run_ids = [r["run_id"] for r in recent + older] or ["none"]
    services = api.get("/api/v1/services").json()["services"] or [""]
    # The conversations those runs are turns of (the history makes nearly every run one;
    # the newest few, still in flight, may not be yet: read on until 20 are found).
    conversations: list[str] = []
    for rid in run_ids:
        detail = api.get(f"/api/v1/runs/{rid}", params={"handoffs_limit": 1, "spans_limit": 1})
        found = detail.json().get("conversation_id") if detail.status_code == 200 else None
        if found and found not in conversations:
            conversations.append(found)
        if len(conversations) == 20:
            break
    plan = [
        ("live (1 h)", [("/api/v1/live", {"window": 3600})]),
        (
            "live (1 h, service)",
            [("/api/v1/live", {"window": 3600, "service": s}) for s in services],
        ),
        ("runs (24 h)", [("/api/v1/runs", {"since": day, "limit": 100})]),
        ("runs ?verdict=loop", [("/api/v1/runs", {"since": day, "verdict": "loop", "limit": 100})]),
        ("run detail", [(f"/api/v1/runs/{rid}", {}) for rid in run_ids]),
        # (none in a history without conversations: the query is left out)
        ("conversation", [(f"/api/v1/conversations/{c}", {}) for c in conversations]),
        (
            "handoffs ?unhealthy",
            [("/api/v1/handoffs", {"since": day, "unhealthy": "true", "limit": 100})],
        ),
        ("edges (24 h)", [("/api/v1/edges", {"since": day})]),
        ("edges (7 d)", [("/api/v1/edges", {"since": iso(now - 7 * 86_400 * S)})]),
        ("edges (30 d)", [("/api/v1/edges", {"since": month})]),
        ("runs (30 d)", [("/api/v1/runs", {"since": month, "limit": 100})]),
        ("handoffs ?unhealthy 30 d", [("/api/v1/handoffs", {"since": month, "unhealthy": "true"})]),
        ("loops (24 h)", [("/api/v1/loops", {"since": day})]),
        ("approvals", [("/api/v1/approvals", {})]),
        ("false completions", [("/api/v1/false_completions", {"since": day})]),
        ("weekly review (8 w)", [("/api/v1/review/weekly", {"weeks": 8})]),
        ("weekly review csv", [("/api/v1/review/weekly", {"weeks": 8, "format": "csv"})]),
        ("services", [("/api/v1/services", {})]),
    ]
    return [(label, variants) for label, variants in plan if variants]


def measure(api: httpx.Client, plan, n: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for label, variants in plan:
        times = []
        for i in range(n):
            path, params = variants[i % len(variants)]
            t = time.perf_counter()
            r = api.get(path, params=params)
            times.append((time.perf_counter() - t) * 1000)
            if r.status_code != 200:
                raise SystemExit(f"{label}: {path} answered {r.status_code}: {r.text[:200]}")
        out[label] = times
    return out


def p(values: list[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _memory_one(pid: int) -> tuple[float, float, float]:
    """(RSS, PSS, peak RSS) of one process, MB."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    mb = [int(fields[k].split()[0]) / 1024 for k in ("Rss", "Pss", "VmHWM")]
    return mb[0], mb[1], mb[2]


def memory_mb(pid: int) -> tuple[float, float, float]:
    """The collector's memory, MB, with its judge worker's (`--judge on`: the engine runs
    in a child process, engine/worker.py) added: the two processes are the collector.

    (RSS, PSS, peak RSS). The RSS sum counts twice the pages both map (≈ 30 MB of shared
    libraries); PSS shares them out, so the PSS sum is what the two hold together. The
    peak is the sum of both peaks, an upper bound of their peak together."""
    rss, pss, peak = _memory_one(pid)
    for child in psutil.Process(pid).children():
        try:
            c_rss, c_pss, c_peak = _memory_one(child.pid)
        except (OSError, KeyError):
            continue
        rss, pss, peak = rss + c_rss, pss + c_pss, peak + c_peak
    return rss, pss, peak


class MemorySampler:
    """`memory_mb` every `every` seconds while running: a single reading after ingest
    catches the judge between steps or in one, and the two differ by tens of MB."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        self.rss: list[float] = []
        self.pss: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(pid, every), daemon=True)

    def _run(self, pid: int, every: float) -> None:
        while not self._stop.wait(every):
            try:
                rss, pss, _ = memory_mb(pid)
            except (OSError, KeyError, psutil.Error):
                continue
            self.rss.append(rss)
            self.pss.append(pss)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> str:
        if not self.rss:
            return "no samples"
        return (
            f"PSS p50 {p(self.pss, 50):.0f} / max {max(self.pss):.0f} MB, "
            f"RSS p50 {p(self.rss, 50):.0f} / max {max(self.rss):.0f} MB "
            f"({len(self.rss)} samples)"
        )


# --- the ingest load (a separate process) -----------------------------------------------


def _ingest(url: str, stop, stats, connections: int = 2, open_runs: bool = False) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

    from handoffscope.instrumentation import semconv as sc

    def kv(k, v):
        if isinstance(v, bool):
            return KeyValue(key=k, value=AnyValue(bool_value=v))
        if isinstance(v, int):
            return KeyValue(key=k, value=AnyValue(int_value=v))
        return KeyValue(key=k, value=AnyValue(string_value=v))

    agents = ("triage", "billing", "refunds", "fraud", "ledger")

    def payload(seq: list[int]) -> bytes:
        spans = []
        now = time.time_ns()
        for _ in range(RUNS_PER_EXPORT):  # each (request, accept) x 2 [+ its run span]
            seq[0] += 1
            run = f"bench-{seq[0]:x}"
            trace = seq[0].to_bytes(16, "big")
            for turn in (1, 2):
                hid = f"h{turn}"
                frm, to = agents[turn - 1], agents[turn]
                for k, attrs in enumerate(
                    (
                        {
                            sc.RUN_ID: run,
                            sc.HANDOFF_ID: hid,
                            sc.FROM_AGENT: frm,
                            sc.TO_AGENT: to,
                            sc.TURN: turn,
                            sc.FINGERPRINT: "f00d",
                            sc.STATE_VERSION: turn,
                            sc.ROUTE_DECLARED: True,
                        },
                        {
                            sc.RUN_ID: run,
                            sc.HANDOFF_ID: hid,
                            sc.DESTINATION_STARTED: True,
                            sc.CONTROL_BEFORE: frm,
                            sc.CONTROL_AFTER: to,
                            sc.TOOL_CALL_CLOSED: True,
                        },
                    )
                ):
                    sid = (seq[0] * 8 + turn * 2 + k).to_bytes(8, "big")
                    name = sc.SPAN_REQUEST if k == 0 else sc.SPAN_ACCEPT
                    spans.append(
                        Span(
                            trace_id=trace,
                            span_id=sid,
                            name=name,
                            start_time_unix_nano=now,
                            end_time_unix_nano=now + 1000,
                            attributes=[kv(a, v) for a, v in attrs.items()],
                        )
                    )
            if not open_runs:
                run_attrs = {
                    sc.RUN_ID: run,
                    sc.RUN_STATUS: sc.RUN_STATUS_COMPLETED,
                    sc.RUN_FINAL_AGENT: agents[2],
                    sc.RUN_TURNS: 3,
                }
                spans.append(
                    Span(
                        trace_id=trace,
                        span_id=(seq[0] * 8 + 1).to_bytes(8, "big"),
                        name=sc.SPAN_RUN,
                        start_time_unix_nano=now,
                        end_time_unix_nano=now + 2000,
                        attributes=[kv(a, v) for a, v in run_attrs.items()],
                    )
                )
        req = ExportTraceServiceRequest(
            resource_spans=[
                ResourceSpans(
                    resource=Resource(attributes=[kv("service.name", "bench-ingest")]),
                    scope_spans=[ScopeSpans(spans=spans)],
                )
            ]
        )
        return req.SerializeToString()

    def worker():
        seq = [random.getrandbits(40) << 20]  # per connection: run ids never collide
        with httpx.Client(timeout=30) as client:
            while not stop.is_set():
                body = payload(seq)
                r = client.post(
                    url, content=body, headers={"Content-Type": "application/x-protobuf"}
                )
                if r.status_code == 200:
                    with stats.get_lock():
                        stats.value += spans_per_export(open_runs)
                elif r.status_code in (429, 503):
                    time.sleep(0.05)

    threads = [threading.Thread(target=worker) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


RUNS_PER_EXPORT = 128


def spans_per_export(open_runs: bool) -> int:
    return RUNS_PER_EXPORT * (4 if open_runs else 5)


# --- main ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default=str(HERE / "history.duckdb"))
    ap.add_argument(
        "--handoffs", type=int, default=1_000_000, help="history size if it must be generated"
    )
    ap.add_argument("--fresh", action="store_true", help="regenerate the history file")
    ap.add_argument(
        "--through-engine",
        action="store_true",
        help="generate the history through store + engine (gen_history.py --through-engine)",
    )
    ap.add_argument("--requests", type=int, default=20, help="requests per query and phase")
    ap.add_argument(
        "--memory-limit", help="collector --memory-limit (default: the collector's default)"
    )
    ap.add_argument(
        "--judge",
        default="on",
        choices=("on", "thread"),
        help="collector --judge: the engine in its worker process (default) or in-process",
    )
    ap.add_argument(
        "--open-runs",
        action="store_true",
        help="ingest runs that never end (no run span): the judge's memory full of open runs",
    )
    args = ap.parse_args(argv)

    db = Path(args.db)
    if args.fresh or not db.exists():
        print(f"generating {args.handoffs:,} handoffs into {db} ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_history.py"),
                "--db",
                str(db),
                "--handoffs",
                str(args.handoffs),
                "--force",
                *(["--through-engine"] if args.through_engine else []),
            ],
            check=True,
        )
    limit = ["--memory-limit", args.memory_limit] if args.memory_limit else []
    proc, base = start_collector(db, *limit, "--retention-days", "0", "--judge", args.judge)
    try:
        run(base, proc.pid, args)
    finally:
        proc.terminate()
        proc.wait(120)


def run(base: str, pid: int, args: argparse.Namespace) -> None:
    api = httpx.Client(base_url=base, timeout=60)
    health = api.get("/healthz").json()
    handoffs_total = sum(
        w["handoffs"]
        for w in api.get("/api/v1/review/weekly", params={"weeks": 104}).json()["weeks"]
    )
    print(
        f"collector {base} (pid {pid}): {health['spans_stored']:,} spans, ~{handoffs_total:,} handoffs stored"
    )
    plan = queries(api)
    measure(api, plan, 2)  # warm the caches as a dashboard that has been open would have
    idle = measure(api, plan, args.requests)
    rss_idle, pss_idle, _ = memory_mb(pid)

    stop = mp.Event()
    acked = mp.Value("q", 0)
    loader = mp.Process(
        target=_ingest, args=(base + "/v1/traces", stop, acked, 2, args.open_runs), daemon=True
    )
    loader.start()
    time.sleep(3)
    t0, n0 = time.perf_counter(), acked.value
    with MemorySampler(pid) as during:
        busy = measure(api, plan, args.requests)
    rate = (acked.value - n0) / (time.perf_counter() - t0)
    stop.set()
    loader.join(60)
    rss_busy, pss_busy, rss_peak = memory_mb(pid)

    print()
    print(
        f"{'query':<24}{'idle p50':>10}{'idle p95':>10}{'busy p50':>10}{'busy p95':>10}"
        f"{'target':>9}{'busy/idle':>11}  ok"
    )
    worst = 0.0
    for label, _ in plan:
        i50, i95 = p(idle[label], 50), p(idle[label], 95)
        b50, b95 = p(busy[label], 50), p(busy[label], 95)
        worst = max(worst, b95)
        ok = "yes" if b95 <= TARGET_MS else "NO"
        print(
            f"{label:<24}{i50:>8.1f}ms{i95:>8.1f}ms{b50:>8.1f}ms{b95:>8.1f}ms"
            f"{TARGET_MS:>7.0f}ms{b95 / max(i95, 1e-9):>10.1f}x  {ok}"
        )
    print()
    print(
        f"ingest while measuring: {rate:,.0f} spans/s acknowledged (after commit), 2 connections, "
        f"{spans_per_export(args.open_runs)}-span exports "
        f"({'runs left open' if args.open_runs else 'each run ends with its run span'})"
    )
    print(f"worst busy p95: {worst:.1f} ms (target ≤ {TARGET_MS:.0f} ms)")
    print(
        f"collector memory (with its judge worker, --judge {args.judge}; target ≤ "
        f"{RSS_TARGET_MB:.0f} MB):\n"
        f"  while ingesting: {during.summary()}\n"
        f"  idle PSS {pss_idle:.0f} MB (RSS {rss_idle:.0f}); after ingest PSS {pss_busy:.0f} MB"
        f" (RSS {rss_busy:.0f}); sum of both processes' peak RSS {rss_peak:.0f} MB"
    )
    stats = api.get("/metrics").text
    for line in stats.splitlines():
        if line.startswith(("handoffscope_engine_", "handoffscope_judge_worker_", "process_res")):
            print("  " + line)


if __name__ == "__main__":
    main()
