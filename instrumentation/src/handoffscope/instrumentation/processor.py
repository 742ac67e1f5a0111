"""A BatchSpanProcessor that drops the *newest* span when full, counts it, and stays quiet.

Why not the SDK's as is: its default queue (2048) drops most of a 10k handoffs/s burst
(62–66 % measured: docs/performance.md), and when full it evicts the oldest queued span and logs a
warning per span — thousands of log lines a second inside the user's app. We size the
queue for the burst, refuse (rather than evict) once it is full, and count the refusal in
`stats.spans_dropped`. It never blocks the caller.
"""

from __future__ import annotations

import logging

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from .stats import stats, swallowed

_log = logging.getLogger(__name__)

DEFAULT_MAX_QUEUE_SIZE = 65_536
"""10k handoffs/s × 2 s × ~2.5 spans per handoff = 50k, plus headroom."""
DEFAULT_SCHEDULE_DELAY_MS = 200
"""≤ 500 ms keeps the live view fresh; the SDK default is 5 s."""
DEFAULT_MAX_EXPORT_BATCH_SIZE = 512
DEFAULT_SHUTDOWN_TIMEOUT_MS = 2_000
"""How long the app's exit may wait to flush. The SDK waits up to 30 s, retrying a
collector that is down or answering 503 — an exit that hangs is the app blocked on the
network. What is still queued after this is dropped and counted."""


class BoundedBatchSpanProcessor(BatchSpanProcessor):
    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE,
        schedule_delay_millis: float = DEFAULT_SCHEDULE_DELAY_MS,
        max_export_batch_size: int = DEFAULT_MAX_EXPORT_BATCH_SIZE,
        shutdown_timeout_millis: int = DEFAULT_SHUTDOWN_TIMEOUT_MS,
    ) -> None:
        self.shutdown_timeout_millis = shutdown_timeout_millis
        super().__init__(
            exporter,
            max_queue_size=max_queue_size,
            schedule_delay_millis=schedule_delay_millis,
            max_export_batch_size=max_export_batch_size,
        )
        self.max_queue_size = max_queue_size
        # The SDK keeps its queue on an internal object; if a future SDK moves it we fall
        # back to the SDK's own behaviour (evict oldest) rather than fail.
        self._queue = getattr(getattr(self, "_batch_processor", None), "_queue", None)

    def on_end(self, span: ReadableSpan) -> None:
        queue = self._queue
        if queue is not None and len(queue) >= self.max_queue_size:
            stats.drop_span()
            return
        try:
            super().on_end(span)
        except Exception:  # never into the app
            swallowed(_log, "span processor")

    def shutdown(self) -> None:
        try:
            self._batch_processor.shutdown(timeout_millis=self.shutdown_timeout_millis)
        except Exception:  # never into the app, least of all at exit
            swallowed(_log, "span processor shutdown")
        # The worker stops at the timeout; spans it never sent are lost: count them.
        stats.drop_span(self.queue_depth)

    @property
    def queue_depth(self) -> int:
        return len(self._queue) if self._queue is not None else 0
