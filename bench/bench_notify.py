"""Ingest throughput while the collector notifies a failing webhook (issue 15).

Notifications must never block ingest: the notifier is a background thread on its own
reader cursor, and each destination's sender retries with backoff in its own thread.
This bench measures, in one run, the spans/s a real collector acknowledges (ack after
commit) for pre-encoded OTLP/HTTP exports of evidence that makes notification events —
every run carries a handoff and a wait already past its deadline, so each run is an
`approval_overdue` event to post — under four conditions:

- `off`: no `--notify` (the baseline);
- `ok`: a webhook answering 200;
- `503`: a webhook answering 503 (Retry-After: 1) to everything: retries with backoff,
  forever pending;
- `hang`: a webhook that answers after 30 s (every post times out after 1 s).

Reported as each condition's throughput and its ratio against `off` of the same round;
conditions alternate within each round so machine noise hits all. The webhooks are
bench_faults.py's fault servers, in their own process.

    .venv/bin/python bench/bench_notify.py [--rounds 2] [--seconds 6] [--batch 512]
                                           [--poll-seconds 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
from bench_faults import _start_fault  # bench/ is on sys.path: these scripts run as files
from launch import start_collector
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import semconv as sc

CONDITIONS = ("off", "ok", "503", "hang")
FAULT_MODES = {"ok": ("healthy", 0.0), "503": ("503", 0.0), "hang": ("slow", 30.0)}
S = 10**9


def payloads(count: int, batch: int, tag: str) -> list[bytes]:
    """`count` OTLP/HTTP bodies of `batch` spans: runs with a handoff and an overdue wait."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-notify"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    now = time.time_ns()
    bodies = []
    run = 0
    for _ in range(count):
        memory.clear()
        while len(memory.get_finished_spans()) < batch:
            a = {sc.RUN_ID: f"{tag}-{run}", sc.HANDOFF_ID: "h1"}
            run += 1
            for name, extra in (
                (sc.SPAN_REQUEST, {sc.FROM_AGENT: "triage", sc.TO_AGENT: "refunds"}),
                (sc.SPAN_ACCEPT, {sc.DESTINATION_STARTED: True}),
                (
                    sc.SPAN_WAIT,
                    {
                        sc.WAIT_OWNER: "finance",
                        sc.WAIT_REASON: "refund_over_limit",
                        sc.WAIT_DEADLINE: now - S,
                        sc.WAIT_RESUME_TOKEN_ID: "tok",
                        sc.WAIT_STATE_PERSISTED: True,
                    },
                ),
            ):
                tracer.start_span(name, attributes={**a, **extra}).end()
        bodies.append(encode_spans(memory.get_finished_spans()).SerializeToString())
    provider.shutdown()
    return bodies


def ingest(
    url: str, bodies: list[bytes], spans_per_body: int, seconds: float, connections: int = 2
) -> float:
    """Spans/s acknowledged, posting `bodies` round-robin over `connections` for `seconds`."""
    done = [0] * connections
    stop = time.monotonic() + seconds

    def worker(i: int) -> None:
        with httpx.Client(timeout=60) as client:
            k = i
            while time.monotonic() < stop:
                r = client.post(
                    url + "/v1/traces",
                    content=bodies[k % len(bodies)],
                    headers={"Content-Type": "application/x-protobuf"},
                )
                if r.status_code == 200:
                    done[i] += 1
                k += connections

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    return sum(done) * spans_per_body / elapsed


def measure(
    condition: str,
    bodies: list[bytes],
    batch: int,
    seconds: float,
    workdir: Path,
    poll_seconds: float = 2.0,
) -> float:
    hook = None
    extra: list[str] = []
    if condition != "off":
        url, hook = _start_fault(*FAULT_MODES[condition])
        extra = [
            "--notify",
            f"{url}#rate=20&burst=20&timeout=1&backoff=0.5&backoff_max=5&max_attempts=1000",
            "--notify-poll-seconds",
            str(poll_seconds),
        ]
    proc, base = start_collector(workdir / f"{condition}-{time.monotonic_ns()}.duckdb", *extra)
    try:
        # One export first, untimed: the first commit pays for the engine's warm-up.
        httpx.post(
            base + "/v1/traces",
            content=bodies[-1],
            headers={"Content-Type": "application/x-protobuf"},
            timeout=120,
        ).raise_for_status()
        return ingest(base, bodies[:-1], batch, seconds)
    finally:
        proc.terminate()
        proc.wait(60)
        if hook is not None:
            hook.terminate()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--batch", type=int, default=512, help="spans per export")
    p.add_argument(
        "--poll-seconds",
        type=float,
        default=2.0,
        help="the notifier's --notify-poll-seconds (default: the collector's own default)",
    )
    args = p.parse_args(argv)
    batch = args.batch - args.batch % 3  # whole runs of three spans
    results: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for condition in CONDITIONS:
                bodies = payloads(40, batch, f"r{r}-{condition}")
                rate = measure(condition, bodies, batch, args.seconds, Path(tmp), args.poll_seconds)
                results[condition].append(rate)
                print(f"  round {r + 1} {condition:>4}: {rate:9.0f} spans/s", flush=True)
    base = statistics.median(results["off"])
    print("\ncondition   spans/s (median)   vs off")
    for condition in CONDITIONS:
        med = statistics.median(results[condition])
        print(f"{condition:>9}   {med:16.0f}   {med / base:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
