"""Crash safety: SIGKILL at random moments during sustained ingest, then restart.

Acknowledge-after-commit means a 200 (gRPC OK) is a promise that the spans are in the
DuckDB file. Each trial keeps three senders busy (OTLP/HTTP protobuf, OTLP/HTTP JSON+gzip,
OTLP/gRPC; each export one run of several handoffs), kills the collector with SIGKILL at
a random moment — mid-request, mid-commit, wherever it is — and starts it again on the
same file. Then, like an OTLP exporter, the senders retry every export that got no
answer. At the end, read back from the file (after a clean stop):

- every span of an acknowledged export is there (nothing acknowledged was lost);
- every span is there once (neither the WAL replay nor the retries stored one twice);
- nothing is there that was never sent;
- the health engine's state survived too: every run has all its handoffs.

The random seed is printed on failure (`-s`), and each trial's kill time comes from it.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import grpc
import httpx
import pytest
from hardening_support import stored_keys
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from support.evidence import request_attributes
from support.otlp import JSON, PROTOBUF, export_request, gzipped, otlp_span, span_keys, to_otlp_json

from handoffscope.instrumentation import semconv as sc

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
HANDOFFS_PER_RUN = 40
"""Two spans each: 80-span exports, so a kill often lands inside a commit."""


class Ledger:
    """What the senders sent, what was acknowledged, what must be retried."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: set[tuple[str, str]] = set()
        self.acked: set[tuple[str, str]] = set()
        self.unanswered: list[ExportTraceServiceRequest] = []
        self.runs: dict[str, int] = {}
        self.counter = 0

    def next_run(self) -> tuple[str, ExportTraceServiceRequest]:
        with self.lock:
            self.counter += 1
            run_id = f"run-crash-{self.counter}"
        spans = []
        for h in range(HANDOFFS_PER_RUN):
            spans.append(otlp_span(sc.SPAN_REQUEST, request_attributes(run_id, f"h{h}")))
            spans.append(
                otlp_span(
                    sc.SPAN_ACCEPT,
                    {sc.RUN_ID: run_id, sc.HANDOFF_ID: f"h{h}", sc.DESTINATION_STARTED: True},
                )
            )
        request = export_request(spans, service="crash-app")
        with self.lock:
            self.sent.update(span_keys(request))
            self.runs[run_id] = HANDOFFS_PER_RUN
        return run_id, request

    def answered(self, request: ExportTraceServiceRequest, ok: bool) -> None:
        with self.lock:
            if ok:
                self.acked.update(span_keys(request))
            else:
                self.unanswered.append(request)


def send(transport: str, collector: Any, request: ExportTraceServiceRequest) -> bool:
    """One export; True only for a success answer. Any failure (refused, reset) is False."""
    try:
        if transport == "grpc":
            with grpc.insecure_channel(collector.grpc_endpoint) as channel:
                channel.unary_unary(EXPORT_METHOD)(request.SerializeToString(), timeout=10)
            return True
        if transport == "json":
            body, content_type = gzipped(to_otlp_json(request)), JSON
            headers = {"Content-Encoding": "gzip"}
        else:
            body, content_type, headers = request.SerializeToString(), PROTOBUF, {}
        response = httpx.post(
            collector.http_endpoint + "/v1/traces",
            content=body,
            headers={"Content-Type": content_type, **headers},
            timeout=10,
        )
        assert response.status_code not in (400, 413, 415, 500), response.text
        return response.status_code == 200
    except (httpx.TransportError, grpc.RpcError):
        return False


def send_until_stored(collector: Any, request: ExportTraceServiceRequest) -> bool:
    """Retry like an OTLP exporter (backoff, a bounded number of tries): a restarted
    collector on a loaded machine may still answer 503 or time out the first try."""
    for attempt in range(6):
        if send("protobuf", collector, request):
            return True
        time.sleep(min(8.0, 0.5 * 2**attempt))
    return False


def sender(transport: str, collector: Any, ledger: Ledger, stop: threading.Event) -> None:
    while not stop.is_set():
        _, request = ledger.next_run()
        ledger.answered(request, send(transport, collector, request))


def run_trials(collector: Any, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    print(f"crash-safety seed {seed}")
    ledger = Ledger()
    kills_in_flight = 0
    retried = 0
    for _ in range(trials):
        stop = threading.Event()
        threads = [
            threading.Thread(target=sender, args=(t, collector, ledger, stop), daemon=True)
            for t in ("protobuf", "json", "grpc")
        ]
        for thread in threads:
            thread.start()
        time.sleep(rng.uniform(0.3, 2.0))
        collector.kill()  # SIGKILL: no shutdown path runs
        stop.set()
        for thread in threads:
            thread.join(30)
        # An export left unanswered means the kill hit while spans were in flight.
        kills_in_flight += bool(ledger.unanswered)
        collector.restart()
        # Retry what got no answer, as an OTLP exporter would.
        with ledger.lock:
            retries, ledger.unanswered = ledger.unanswered, []
        for request in retries:
            assert send_until_stored(collector, request)
            ledger.answered(request, True)
        retried += len(retries)
    assert kills_in_flight, "no kill landed while spans were in flight"

    # The health engine reloaded its state from the file after every kill: spot-check runs.
    for run_id in rng.sample(sorted(ledger.runs), min(15, len(ledger.runs))):
        run = collector.api(f"/api/v1/runs/{run_id}")
        assert len(run["handoffs"]) == HANDOFFS_PER_RUN, run_id

    assert collector.stop() == 0
    stored = stored_keys(collector.store)
    assert ledger.acked == ledger.sent  # every export was answered in the end
    missing = ledger.acked - set(stored)
    assert not missing, f"{len(missing)} acknowledged spans lost"
    twice = {k: n for k, n in stored.items() if n > 1}
    assert not twice, f"{len(twice)} spans stored more than once"
    assert set(stored) == ledger.sent
    assert Counter(stored.values()) == Counter({1: len(ledger.sent)})
    print(
        f"{trials} SIGKILLs, {len(ledger.sent)} spans in {ledger.counter} exports, "
        f"{retried} exports unanswered at a kill and retried; none lost, none stored twice"
    )


def test_sigkill_during_ingest_loses_nothing_acknowledged(collector: Any) -> None:
    run_trials(collector, trials=3, seed=random.randrange(2**32))


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_sigkill_soak(collector: Any) -> None:
    run_trials(collector, trials=20, seed=random.randrange(2**32))
