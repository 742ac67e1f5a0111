"""What both receivers do with an export: translate, allowlist, queue it, answer.

`ExportHandler.accept_protobuf()` takes protobuf bytes (every gRPC export, and OTLP/HTTP
protobuf); `accept()` a decoded message (OTLP/JSON). Either runs the allowlist and hands
the result to the writer, returning
the batch and a future that resolves once the batch is committed (the receivers wait on
it before answering, so a success means durable). `response()` builds the OTLP
`ExportTraceServiceResponse`, with `partial_success` when spans were refused.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from concurrent.futures import Future

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from handoffscope.collector.metrics import Metrics
from handoffscope.collector.otlp import decode
from handoffscope.collector.otlp.lean_trace import parse_lean
from handoffscope.collector.processor.allowlist import (
    Allowlist,
    SpanBatch,
    restrict,
    service_of,
)
from handoffscope.collector.processor.translate import Translators
from handoffscope.collector.writer import Writer

COMMIT_TIMEOUT_S = 30.0
"""How long a receiver waits for the commit before answering 503 / UNAVAILABLE."""
RETRY_AFTER_FULL_S = 1
"""Shortest Retry-After when the writer queue is full: a commit or two frees it."""
RETRY_AFTER_FULL_MAX_S = 4
"""Longest. OTLP exporters wait exactly the delay they are given, without jitter of their
own, and give up after six attempts: with one fixed delay, every exporter refused in the
same instant comes back in the same instant, one wins the freed slot and the rest are
refused again until they give up (measured: 23 of 480 exports lost by 8 senders against
--queue-batches 1). Spreading the delay spreads the retries."""
RETRY_AFTER_CLOSED_S = 5
"""Retry-After while shutting down or after a failed commit."""


def retry_after_full() -> int:
    """Retry-After (seconds) for an export refused because the queue is full."""
    return random.randint(RETRY_AFTER_FULL_S, RETRY_AFTER_FULL_MAX_S)


class ExportHandler:
    def __init__(
        self,
        allowlist: Allowlist,
        writer: Writer,
        metrics: Metrics,
        translators: Translators | None = None,
    ) -> None:
        self.allowlist = allowlist
        self.translators = Translators() if translators is None else translators
        self.writer = writer
        self.metrics = metrics

    def accept_protobuf(
        self,
        body: bytes | bytearray,
        received_ns: int,
        services: Sequence[str] = (),
    ) -> tuple[SpanBatch, Future | None]:
        """`accept` for an export's protobuf bytes; raises decode.DecodeError if they are
        not an ExportTraceServiceRequest (and writer.QueueFull / WriterClosed)."""
        return self._queue(self._scoped(self.read_protobuf(body), services), received_ns)

    def accept(
        self,
        request: ExportTraceServiceRequest,
        received_ns: int,
        body: bytes | bytearray | None = None,
        services: Sequence[str] = (),
    ) -> tuple[SpanBatch, Future | None]:
        """Translate foreign spans, allowlist, queue; raises writer.QueueFull / WriterClosed.

        `body`: the protobuf bytes `request` was parsed from, if the receiver has them
        (the allowlist reads them again its own way, `otlp/lean_trace.py`). `services`:
        the sender's credential's scope (empty: any service)."""
        return self._queue(self._scoped(self.read(request, body), services), received_ns)

    @staticmethod
    def _scoped(batch: SpanBatch, services: Sequence[str]) -> SpanBatch:
        """An ingest credential scoped to services sends only theirs (`restrict`)."""
        return restrict(batch, services) if services else batch

    def read_protobuf(self, body: bytes | bytearray) -> SpanBatch:
        """What the allowlist keeps of an export's protobuf bytes (decode.DecodeError if
        they are not an ExportTraceServiceRequest).

        An export no translator claims — every export of the shim — is read once, the
        allowlist's lean way (`otlp/lean_trace.py`), not parsed whole first: ≈ 1 µs a
        span. It is still refused exactly when the whole message would not parse: the
        lean read checks every part of every span it keeps, and when a span was refused
        before its parts were read, the export is parsed whole once to check them. A
        malformed part anywhere sends it through the full parse, whose error is the 400.
        A property test holds this equal to `read` over the full parse, broken bodies
        included (tests/collector/test_lean_read.py).
        """
        try:
            export = parse_lean(body)
            if not self.translators.claims_any(export):
                batch, unread = self.allowlist.process_lean(export)
                if unread:
                    decode.parse_protobuf(body)  # decode.DecodeError: the 400
                return batch
        except ProtobufDecodeError:
            pass  # the full parse below raises with the message the sender gets
        return self.read(decode.parse_protobuf(body), body)

    def read(
        self, request: ExportTraceServiceRequest, body: bytes | bytearray | None = None
    ) -> SpanBatch:
        """What the allowlist keeps of a decoded export, its foreign spans translated."""
        translation = self.translators.translate(request, service_of)
        return self.allowlist.process(request, translation, body=body)

    def _queue(self, batch: SpanBatch, received_ns: int) -> tuple[SpanBatch, Future | None]:
        self.metrics.inc("spans_received", batch.received)
        if not batch.received and not batch.drops:
            return batch, None  # an empty export: nothing to commit
        return batch, self.writer.submit(batch, received_ns)

    @staticmethod
    def response(batch: SpanBatch) -> ExportTraceServiceResponse:
        response = ExportTraceServiceResponse()
        if batch.rejected:
            response.partial_success.rejected_spans = batch.rejected
            response.partial_success.error_message = batch.error_message
        return response
