"""Counters the shim keeps about itself, readable from the app (`from ... import stats`).

The shim never raises into the app, so what it could not do must be visible somewhere:
spans dropped because the export queue was full, attributes dropped by the allowlist
(by name, never by value), and internal errors swallowed. Plain ints under a lock:
an OTel metric would need a MeterProvider the user may not have.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter


class ShimStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.spans_emitted = 0
        self.spans_dropped = 0
        """Spans the bounded export queue refused (it was full); the app was not blocked."""
        self.attributes_dropped: Counter[str] = Counter()
        """Attribute names the allowlist removed: unknown names, wrong types, oversize values."""
        self.errors = 0
        """Internal failures swallowed so the app never sees them (logged at debug)."""

    def drop_attribute(self, name: str) -> None:
        with self._lock:
            # Bounded: a hostile caller inventing names must not grow this without limit.
            if name in self.attributes_dropped or len(self.attributes_dropped) < 1024:
                self.attributes_dropped[name] += 1
            else:
                self.attributes_dropped["(other)"] += 1

    def drop_span(self, count: int = 1) -> None:
        with self._lock:
            self.spans_dropped += count

    def error(self) -> None:
        with self._lock:
            self.errors += 1

    def snapshot(self) -> dict[str, object]:
        with self._lock:
            return {
                "spans_emitted": self.spans_emitted,
                "spans_dropped": self.spans_dropped,
                "attributes_dropped": dict(self.attributes_dropped),
                "errors": self.errors,
            }

    def reset(self) -> None:
        with self._lock:
            self.spans_emitted = 0
            self.spans_dropped = 0
            self.attributes_dropped.clear()
            self.errors = 0


stats = ShimStats()


def swallowed(log: logging.Logger, what: str) -> None:
    """Call in an `except` block: count an instrumentation failure the app must never see,
    and log it at debug with its traceback (contrib: instrumentation never raises)."""
    stats.error()
    log.debug("handoffscope: %s failed", what, exc_info=True)
