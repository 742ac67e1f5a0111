"""Overload: more than the collector can take — bounded memory, 429/503 + Retry-After, no loss.

The collector runs with `--queue-batches 1` (one export may wait for the writer), so a
handful of concurrent senders is already more than it can take. Then:

1. A flood of raw OTLP/HTTP and OTLP/gRPC exports, as fast as several threads can send
   them: every answer is 200, 429 or 503 (never a 5xx of another kind, never a hang),
   every 429/503 carries `Retry-After` (gRPC: `google.rpc.RetryInfo`), the writer queue
   reported at /metrics never exceeds its bound, and the collector's RSS (psutil, sampled
   throughout) stays under a fixed ceiling however much the flood sends.
2. Senders using the standard OTel `OTLPSpanExporter` (HTTP and gRPC), which retry on
   429/503 / RESOURCE_EXHAUSTED waiting the delay the collector asks for, push batches
   concurrently through the same bottleneck: the collector refused some attempts (so the
   retries were exercised), every span of an acknowledged export is in the file exactly
   once, nothing else is — and in a burst every export ends in SUCCESS. (Under minutes
   of siege an exporter can exhaust its six attempts; the soak bounds how often.)
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import grpc
import httpx
import psutil
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from hardening_support import stored_keys
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.evidence import request_attributes
from support.otlp import PROTOBUF, export_request, otlp_span

from handoffscope.instrumentation import semconv as sc

QUEUE_BATCHES = 1
EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
RSS_CEILING = 400 * 1024 * 1024
"""DESIGN §6's memory target for 10M stored handoffs. The fast flood sends ~50 MB in a few
seconds, the soak flood over a gigabyte: both must stay under it — with the queue bounded,
memory follows the in-flight requests, not the volume sent."""


@pytest.fixture
def narrow(collector_factory: Any) -> Any:
    return collector_factory(args=["--queue-batches", str(QUEUE_BATCHES)])


@pytest.fixture
def narrow_commit(collector_factory: Any) -> Any:
    """`narrow`, answering after each DuckDB commit (`--ingest-log off`): the bottleneck the
    retrying exporters must meet. With the ingest log the writer answers once an fsync is
    done (≈ 1 ms), and a few senders cannot keep its one slot full; what pushes back there
    is the loader's bound (tests/collector/test_ingest_log.py)."""
    return collector_factory(args=["--queue-batches", str(QUEUE_BATCHES), "--ingest-log", "off"])


class RSSWatch:
    """Samples a process's resident memory every 20 ms until stopped; keeps the peak."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.baseline = self.process.memory_info().rss
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> RSSWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def flood(narrow: Any, seconds: float, threads: int = 6) -> tuple[Counter, int, int]:
    """Send 1000-span exports from `threads` threads for `seconds`.

    Returns the answers (status or gRPC code), the largest queue depth seen at /metrics,
    and the bytes sent.
    """
    body = export_request(
        [otlp_span(sc.SPAN_REQUEST, request_attributes("run-flood", f"h{i}")) for i in range(1000)]
    ).SerializeToString()
    answers: Counter = Counter()
    lock = threading.Lock()
    sent = [0]
    stop = threading.Event()
    problems: list[str] = []

    def http_sender() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                r = client.post(
                    narrow.http_endpoint + "/v1/traces",
                    content=body,
                    headers={"Content-Type": PROTOBUF},
                )
                if r.status_code in (429, 503) and not r.headers.get("retry-after", "").isdigit():
                    problems.append(f"{r.status_code} without Retry-After")
                with lock:
                    answers[r.status_code] += 1
                    sent[0] += len(body)

    def grpc_sender() -> None:
        with grpc.insecure_channel(narrow.grpc_endpoint) as channel:
            export = channel.unary_unary(EXPORT_METHOD)
            while not stop.is_set():
                try:
                    export(body, timeout=60)
                    code = grpc.StatusCode.OK
                except grpc.RpcError as exc:
                    code = exc.code()
                    if code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE):
                        info = dict(exc.trailing_metadata() or ()).get("google.rpc.retryinfo-bin")
                        if info is None or not RetryInfo.FromString(info).retry_delay.seconds:
                            problems.append(f"{code} without RetryInfo")
                with lock:
                    answers[code] += 1
                    sent[0] += len(body)

    workers = [
        threading.Thread(target=grpc_sender if i % 3 == 2 else http_sender, daemon=True)
        for i in range(threads)
    ]
    depth = 0
    for w in workers:
        w.start()
    deadline = time.monotonic() + seconds
    with httpx.Client(timeout=60) as probe:
        while time.monotonic() < deadline:
            text = probe.get(narrow.http_endpoint + "/metrics").text
            for line in text.splitlines():
                if line.startswith("handoffscope_queue_depth "):
                    depth = max(depth, int(float(line.split()[1])))
            time.sleep(0.05)
    stop.set()
    for w in workers:
        w.join(120)
    assert not problems, problems[:5]
    return answers, depth, sent[0]


def check_flood(narrow: Any, seconds: float) -> None:
    with RSSWatch(narrow.proc.pid) as rss:
        answers, depth, volume = flood(narrow, seconds)
    print(
        f"flood answers {dict(answers)}, max queue {depth}, sent {volume / 1e6:.0f} MB, "
        f"RSS {rss.baseline / 2**20:.0f} -> peak {rss.peak / 2**20:.0f} MiB"
    )
    allowed = {
        200,
        429,
        503,
        grpc.StatusCode.OK,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.UNAVAILABLE,
    }
    assert set(answers) <= allowed, answers
    assert answers[429] + answers[grpc.StatusCode.RESOURCE_EXHAUSTED] > 0, "never overloaded"
    assert answers[200] + answers[grpc.StatusCode.OK] > 0, "never accepted anything"
    assert depth <= QUEUE_BATCHES
    assert rss.peak < RSS_CEILING
    assert narrow.healthz()["status"] == "ok"


def test_flood_gets_retry_after_and_memory_stays_bounded(narrow: Any) -> None:
    check_flood(narrow, seconds=4)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_flood_soak(narrow: Any) -> None:
    check_flood(narrow, seconds=120)


# --- the standard exporter, retrying ------------------------------------------------------


def sdk_batches(service: str, batches: int, size: int) -> list[list[ReadableSpan]]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("handoffscope.tests.overload")
    out = []
    for b in range(batches):
        for i in range(size):
            tracer.start_span(
                sc.SPAN_REQUEST, attributes=request_attributes(f"run-{service}-{b}", f"h{i}")
            ).end()
        out.append(list(memory.get_finished_spans()))
        memory.clear()
    provider.shutdown()
    return out


def key_of(span: ReadableSpan) -> tuple[str, str]:
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def exporters_under_overload(
    narrow: Any,
    otlp_exporter: Callable[..., Any],
    senders: int,
    batches: int,
    think_s: float = 0.0,
) -> tuple[Counter, Counter]:
    """`senders` standard exporters (HTTP and gRPC alternately) push `batches` 512-span
    batches each, pausing up to `think_s` between batches (0: back to back).

    Checks what must hold whatever the exporters' fate — the collector pushed back, every
    span of a successful export is stored exactly once, a span of a failed one at most
    once, nothing else — and returns (export results, stored rows per span).
    """
    results: Counter = Counter()
    succeeded: set[tuple[str, str]] = set()
    failed: set[tuple[str, str]] = set()
    lock = threading.Lock()

    def run(n: int) -> None:
        protocol = "grpc" if n % 2 else "http"
        # A long timeout: the exporter gives up once its next wait would pass it.
        exporter = otlp_exporter(narrow, protocol, timeout=120)
        for batch in sdk_batches(f"sender{n}", batches, 512):
            time.sleep(random.uniform(0, think_s))
            result = exporter.export(batch)
            with lock:
                results[result.name] += 1
                (succeeded if result.name == "SUCCESS" else failed).update(map(key_of, batch))
        exporter.shutdown()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    metrics = narrow.metrics_text()
    refused = sum(
        float(line.rpartition(" ")[2])
        for line in metrics.splitlines()
        if line.startswith("handoffscope_export_requests_total") and 'result="overloaded"' in line
    )
    print(f"exports {dict(results)}, attempts refused as overloaded: {refused:.0f}")
    assert sum(results.values()) == senders * batches
    assert refused > 0, "the collector never pushed back: the retries were not exercised"
    assert narrow.stop() == 0
    stored = stored_keys(narrow.store)
    assert succeeded <= set(stored), "a span acknowledged to its exporter is missing"
    assert set(stored) <= succeeded | failed, "a span that was never sent is stored"
    assert set(stored.values()) <= {1}, "a span is stored twice"
    return results, stored


def test_standard_exporters_retry_until_every_span_is_stored_once(
    narrow_commit: Any, otlp_exporter: Any
) -> None:
    results, stored = exporters_under_overload(narrow_commit, otlp_exporter, senders=6, batches=6)
    # A short burst: the exporters' six attempts are enough for every batch.
    assert results == Counter({"SUCCESS": 36})
    assert len(stored) == 36 * 512


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_standard_exporters_soak(narrow_commit: Any, otlp_exporter: Any) -> None:
    # Minutes of overload. An exporter gives up after six attempts, so under a long siege
    # a batch can be lost at the sender however the collector answers (measured: about
    # 1 in 500 exports with 8 senders against --queue-batches 1 and a randomised
    # Retry-After; 1 in 20 with a fixed one). Never one acknowledged and lost, or stored twice.
    results, _ = exporters_under_overload(
        narrow_commit, otlp_exporter, senders=8, batches=60, think_s=0.4
    )
    assert results["SUCCESS"] >= 0.99 * (8 * 60)
