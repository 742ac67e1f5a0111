"""A full writer queue answers 429 / RESOURCE_EXHAUSTED with Retry-After; a closed one 503.

In-process, with the collector's real parts (DuckDB store, writer, allowlist, Starlette
app, gRPC server) and one stand-in: the store's insert holds the writer inside its
transaction until the test releases it. The real store cannot be made slow on cue, and
without holding the writer the only way to fill the queue is to race load against it,
which would make this test flaky rather than honest.
"""

from __future__ import annotations

import asyncio
import threading
import time

import grpc
import httpx
import pytest
from google.rpc import code_pb2, status_pb2
from google.rpc.error_details_pb2 import RetryInfo
from ingest_support import handoff_body

from handoffscope.collector.config import CollectorConfig
from handoffscope.collector.engine import HealthEngine
from handoffscope.collector.pipeline import RETRY_AFTER_FULL_MAX_S, RETRY_AFTER_FULL_S
from handoffscope.collector.receiver.otlp_grpc import OTLPGRPCReceiver, start_grpc_server
from handoffscope.collector.server import assemble
from handoffscope.collector.store.duckdb_store import DuckDBStore

PB = "application/x-protobuf"
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class HeldStore(DuckDBStore):
    """The real store; its insert waits until the test releases it (the writer's commit)."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.entered = threading.Event()
        self.release = threading.Event()

    def insert_new_spans(self, incoming, commit_seq=None):
        self.entered.set()
        assert self.release.wait(30), "test never released the writer"
        return super().insert_new_spans(incoming, commit_seq=commit_seq)


@pytest.fixture
def parts(tmp_path):
    # Answered after each commit (no ingest log): the held insert then holds the writer and
    # its queue. With the log the writer answers without the store, and what pushes back
    # is the loader's bound (tests/collector/test_ingest_log.py).
    settings = CollectorConfig(
        db=str(tmp_path / "bp.duckdb"), queue_batches=1, retention_days=0, ingest_log="off"
    )
    store = HeldStore(settings.db)
    engine = HealthEngine()
    engine.install(store.con)
    collector = assemble(settings, store, engine)
    collector.writer.start()
    server, port = start_grpc_server(
        OTLPGRPCReceiver(collector.handler, credentials=collector.credentials),
        "127.0.0.1",
        0,
        max_message_bytes=1 << 20,
    )
    yield collector.app, collector.writer, store, store, f"127.0.0.1:{port}"
    store.release.set()
    server.stop(0)
    collector.writer.close()
    collector.judge.close()
    store.close()


def _bodies(n: int) -> list[bytes]:
    """`n` protobuf export bodies of one handoff each, recorded with the real SDK."""
    return [handoff_body(f"run-bp-{i}", "bp-app") for i in range(n)]


def _grpc_export(endpoint: str, body: bytes) -> grpc.RpcError | bytes:
    with grpc.insecure_channel(endpoint) as channel:
        call = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        try:
            return call(body, timeout=30)
        except grpc.RpcError as exc:
            return exc


def test_full_queue_answers_429_and_resource_exhausted_with_retry_after(parts) -> None:
    app, writer, engine, store, grpc_endpoint = parts
    first, second, third, fourth = _bodies(4)

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:

            def post(body: bytes):
                return client.post("/v1/traces", content=body, headers={"Content-Type": PB})

            held = asyncio.create_task(post(first))  # the writer takes it and is held
            while not engine.entered.is_set():
                await asyncio.sleep(0.01)
            queued = asyncio.create_task(post(second))  # fills the one queue slot
            deadline = time.monotonic() + 30
            while writer.metrics.queue_depth() < 1:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.01)

            refused = await post(third)
            assert refused.status_code == 429
            # jittered so refused exporters do not all come back in the same second
            assert (
                RETRY_AFTER_FULL_S <= int(refused.headers["retry-after"]) <= RETRY_AFTER_FULL_MAX_S
            )
            status = status_pb2.Status.FromString(refused.content)
            assert status.code == code_pb2.RESOURCE_EXHAUSTED

            error = await asyncio.to_thread(_grpc_export, grpc_endpoint, fourth)
            assert isinstance(error, grpc.RpcError)
            assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            trailers = dict(error.trailing_metadata())
            assert (
                RETRY_AFTER_FULL_S
                <= RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]).retry_delay.seconds
                <= RETRY_AFTER_FULL_MAX_S
            )

            engine.release.set()
            assert (await held).status_code == 200
            assert (await queued).status_code == 200
            assert writer.spans_stored == 4  # the two accepted exports, two spans each

            writer.close()
            closed = await post(third)
            assert closed.status_code == 503
            assert closed.headers["retry-after"] == "5"
            error = await asyncio.to_thread(_grpc_export, grpc_endpoint, fourth)
            assert isinstance(error, grpc.RpcError)
            assert error.code() is grpc.StatusCode.UNAVAILABLE

    asyncio.run(scenario())
    metrics = writer.metrics.render()
    assert 'handoffscope_export_requests_total{transport="http",result="overloaded"} 1' in metrics
    assert 'handoffscope_export_requests_total{transport="grpc",result="overloaded"} 1' in metrics
