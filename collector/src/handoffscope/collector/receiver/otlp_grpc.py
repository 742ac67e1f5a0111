"""OTLP/gRPC receiver: `opentelemetry.proto.collector.trace.v1.TraceService/Export`.

The same semantics as OTLP/HTTP, in gRPC status codes:

| situation | answer |
|---|---|
| committed | OK, `ExportTraceServiceResponse` with `partial_success` when spans were refused |
| payload not decodable | INVALID_ARGUMENT |
| missing / wrong `authorization: Bearer <token>` metadata (when HANDOFFSCOPE_TOKEN is set) | UNAUTHENTICATED |
| message over `--max-body-bytes` | RESOURCE_EXHAUSTED (gRPC's own receive limit) |
| writer queue full | RESOURCE_EXHAUSTED with `google.rpc.RetryInfo` (exporters retry) |
| shutting down, or the commit failed | UNAVAILABLE with `google.rpc.RetryInfo` |

The method is registered with raw-bytes (de)serializers and decoded here, so an
undecodable payload gets INVALID_ARGUMENT with a clear message instead of gRPC's generic
INTERNAL "Exception deserializing request". Compressed requests (gzip) are inflated by
gRPC itself.

The logs and metrics services' `Export` are answered OK with an empty response and their
payload thrown away, undecoded (`DISCARDED_SERVICES`; see receiver/otlp_http.py for why):
an app whose documented setup exports every signal to this endpoint would otherwise log
UNIMPLEMENTED on each export.
"""

from __future__ import annotations

import time
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo

from handoffscope.collector import metrics as m
from handoffscope.collector.credentials import INGEST, Credentials, refusal
from handoffscope.collector.otlp import decode
from handoffscope.collector.pipeline import (
    COMMIT_TIMEOUT_S,
    RETRY_AFTER_CLOSED_S,
    ExportHandler,
    retry_after_full,
)
from handoffscope.collector.receiver.otlp_http import note_discarded
from handoffscope.collector.writer import QueueFull, WriterClosed

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
DISCARDED_SERVICES = {
    "opentelemetry.proto.collector.logs.v1.LogsService": "logs",
    "opentelemetry.proto.collector.metrics.v1.MetricsService": "metrics",
}
WORKERS = 8
"""Concurrent Export calls; each mostly waits for its commit."""
MAX_CONCURRENT_RPCS = 2 * WORKERS
"""Calls admitted at once (running or queued for a worker); beyond, RESOURCE_EXHAUSTED
from gRPC itself. Each holds its whole message in memory, so this bounds the bytes of
requests in flight at MAX_CONCURRENT_RPCS × --max-body-bytes (the gRPC counterpart of
HTTP's --max-inflight-bytes)."""
IDLE_S = 300
"""A connection with no call this long gets GOAWAY (exporters reconnect on their next
export). Long, because an SDK's batch processor exports every few seconds and a reconnect
per export would cost both sides; the connection cap bounds what idle ones can hold."""
_RETRY_INFO_KEY = "google.rpc.retryinfo-bin"


def _retry_info(seconds: int) -> tuple[tuple[str, bytes]]:
    info = RetryInfo(retry_delay=Duration(seconds=seconds))
    return ((_RETRY_INFO_KEY, info.SerializeToString()),)


class OTLPGRPCReceiver:
    def __init__(self, handler: ExportHandler, *, credentials: Credentials) -> None:
        self.handler = handler
        self.metrics = handler.metrics
        self.credentials = credentials

    def _refusal(
        self, context: grpc.ServicerContext
    ) -> tuple[tuple[Any, str] | None, tuple[str, ...]]:
        """(gRPC code, message) when the call's token may not send spans, None when it may;
        and the services it may send spans for (empty: any)."""
        metadata = dict(context.invocation_metadata())
        status, services = self.credentials.admit(metadata.get("authorization"), INGEST)
        if not status:
            return None, services
        code = (
            grpc.StatusCode.UNAUTHENTICATED if status == 401 else grpc.StatusCode.PERMISSION_DENIED
        )
        message = refusal(status, INGEST).replace("Authorization:", "metadata authorization:")
        return (code, message), services

    def _abort(self, context: grpc.ServicerContext, result: str, code, message: str, retry_s=None):
        self.metrics.export_answered(m.GRPC, result)
        if retry_s is not None:
            context.set_trailing_metadata(_retry_info(retry_s))
        context.abort(code, message)

    def discarder(self, signal: str):
        """The `Export` of a signal the collector does not keep: OK, empty, nothing read."""

        def export(request: bytes, context: grpc.ServicerContext) -> bytes:
            refused, _ = self._refusal(context)
            if refused is not None:
                context.abort(*refused)
            self.metrics.discarded(m.GRPC, signal)
            note_discarded(signal, m.GRPC)
            return b""

        return export

    def export(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        received_ns = time.time_ns()
        refused, services = self._refusal(context)
        if refused is not None:
            self._abort(context, m.UNAUTHORIZED, *refused)
        try:
            batch, committed = self.handler.accept_protobuf(request, received_ns, services)
        except decode.DecodeError as exc:
            self._abort(context, m.BAD_REQUEST, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except QueueFull as exc:
            self._abort(
                context,
                m.OVERLOADED,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"collector busy: {exc}; retry later",
                retry_after_full(),
            )
        except WriterClosed as exc:
            self._abort(
                context, m.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE, str(exc), RETRY_AFTER_CLOSED_S
            )
        if committed is not None:
            try:
                committed.result(timeout=COMMIT_TIMEOUT_S)
            except Exception as exc:
                self._abort(
                    context,
                    m.UNAVAILABLE,
                    grpc.StatusCode.UNAVAILABLE,
                    f"spans not stored: {str(exc) or 'commit timed out'}",
                    RETRY_AFTER_CLOSED_S,
                )
        self.metrics.export_answered(m.GRPC, m.PARTIAL if batch.rejected else m.OK)
        return self.handler.response(batch).SerializeToString()


def start_grpc_server(
    receiver: OTLPGRPCReceiver,
    host: str,
    port: int,
    *,
    max_message_bytes: int,
    max_connections: int = 1024,
    handshake_timeout_s: float = 10.0,
    max_metadata_bytes: int = 32 * 1024,
) -> tuple[grpc.Server, int]:
    """Start the gRPC server; return it and the port it bound (useful with port 0).

    Connection hygiene, the gRPC side of `connections.py` (issue 13), all enforced by gRPC
    core itself: a connection cap (beyond it a new connection is closed before its
    handshake), a handshake deadline (a client that opens a socket and sends nothing, or
    trickles the HTTP/2 preface, is closed after `handshake_timeout_s` — without it gRPC
    waits 120 s), an idle GOAWAY, a metadata size limit and a cap on calls in flight.
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="handoffscope-grpc"),
        maximum_concurrent_rpcs=MAX_CONCURRENT_RPCS,
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_allowed_incoming_connections", max_connections),
            ("grpc.server_handshake_timeout_ms", max(1, int(handshake_timeout_s * 1000))),
            ("grpc.max_connection_idle_ms", IDLE_S * 1000),
            ("grpc.max_metadata_size", max_metadata_bytes),
            ("grpc.absolute_max_metadata_size", max_metadata_bytes),
            # Without this, a second collector on the same port would share it silently.
            ("grpc.so_reuseport", 0),
        ],
    )
    handler = grpc.unary_unary_rpc_method_handler(
        receiver.export, request_deserializer=None, response_serializer=None
    )
    discarders = [
        grpc.method_handlers_generic_handler(
            service,
            {
                "Export": grpc.unary_unary_rpc_method_handler(
                    receiver.discarder(signal), request_deserializer=None, response_serializer=None
                )
            },
        )
        for service, signal in DISCARDED_SERVICES.items()
    ]
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Export": handler}), *discarders)
    )
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError as exc:  # grpc raises here on recent versions, returns 0 on older
        raise OSError(f"cannot bind OTLP/gRPC on {address}: {exc}") from None
    if bound == 0:
        raise OSError(f"cannot bind OTLP/gRPC on {address}")
    server.start()
    return server, bound
