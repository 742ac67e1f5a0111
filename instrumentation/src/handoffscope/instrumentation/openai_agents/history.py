"""How much history a handoff forwarded, counted without reading it.

The SDK lets an app trim what the next agent sees with a handoff input filter: the
per-handoff `Handoff.input_filter`, else `RunConfig.handoff_input_filter` (the first
overrides the second, so both must be observed). While instrumented, reading either
attribute returns the app's filter wrapped in `CountingFilter`, which calls it unchanged
and records `len()` of the history before and after — `handoff.history_items_total` and
`handoff.history_items_forwarded` on the handoff's request span. Items are never read.

Why a class-level descriptor rather than wrapping filters where they are created: filters
are set on objects the app builds before or after `instrument()` (`handoff(...,
input_filter=...)`, `RunConfig(...)`), and the SDK reads the attribute at handoff time, so
the attribute read is the one place that sees them all. `uninstrument()` restores the
plain class attribute; values stay in each instance's `__dict__` untouched, so objects
built while instrumented keep the app's own filter.

Without any filter the SDK forwards the whole history and builds no `HandoffInputData`;
we do not inject an identity filter to count it, since a filter's presence changes the
SDK's behaviour (it skips history nesting). The counts are then simply absent.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from agents.tracing import get_current_span

from ..stats import swallowed

_log = logging.getLogger(__name__)

Sink = Callable[[str, int, int], None]
"""(handoff span id, items forwarded, items total) -> None"""


def count_items(data: Any) -> int:
    """Items a `HandoffInputData` hands to the next agent: history + earlier + this turn's."""
    history = data.input_history
    n_history = 1 if isinstance(history, str) else len(history)
    # `input_items`, when a filter sets it, is what the next model call gets instead of
    # `new_items` (which is then kept for the session only).
    turn_items = (
        data.input_items if getattr(data, "input_items", None) is not None else data.new_items
    )
    return n_history + len(data.pre_handoff_items) + len(turn_items)


class CountingFilter:
    """Calls the app's input filter unchanged; records how many items went in and out."""

    __slots__ = ("inner", "_sink")

    def __init__(self, inner: Callable[..., Any], sink: Sink) -> None:
        self.inner = inner
        self._sink = sink

    def __call__(self, data: Any) -> Any:
        total = _safe_count(data)
        result = self.inner(data)
        if inspect.isawaitable(result):
            return self._awaiting(result, total)
        self._record(total, result)
        return result

    async def _awaiting(self, pending: Any, total: int | None) -> Any:
        result = await pending
        self._record(total, result)
        return result

    def _record(self, total: int | None, result: Any) -> None:
        try:
            forwarded = _safe_count(result)
            span = get_current_span()
            # Called inside the SDK's `with handoff_span(...)`; anywhere else (an app
            # calling its own filter in a test) there is no handoff to attach the count to.
            if span is None or total is None or forwarded is None:
                return
            if getattr(span.span_data, "type", None) != "handoff":
                return
            self._sink(span.span_id, forwarded, total)
        except Exception:
            swallowed(_log, "counting handoff history")

    # The SDK logs `getattr(filter, "__qualname__", repr(filter))` and dataclass
    # __eq__/__repr__ read the field: look like the app's filter in all of those.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, CountingFilter):
            other = other.inner
        return bool(self.inner == other)

    def __hash__(self) -> int:
        return hash(self.inner)

    def __repr__(self) -> str:
        return repr(self.inner)


def _safe_count(data: Any) -> int | None:
    try:
        return count_items(data)
    except Exception:
        # Not a HandoffInputData (the SDK will raise its own UserError about it): no count.
        return None


class FilterAttribute:
    """Data descriptor standing in for a dataclass field holding an input filter."""

    def __init__(self, name: str, default: Any, sink: Sink) -> None:
        self.name = name
        self.default = default
        self.sink = sink

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self.default
        raw = obj.__dict__.get(self.name, self.default)
        if raw is None or not callable(raw):
            # Not callable: let the SDK raise its own "Invalid input filter" error.
            return raw
        return CountingFilter(raw, self.sink)

    def __set__(self, obj: Any, value: Any) -> None:
        # dataclasses.replace() reads the wrapped filter and sets it on the copy: unwrap.
        if isinstance(value, CountingFilter):
            value = value.inner
        obj.__dict__[self.name] = value


_MISSING = object()


class FilterPatch:
    """Install / remove `FilterAttribute` on the SDK classes that hold input filters."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._saved: list[tuple[type, str, Any]] = []

    def install(self) -> None:
        from agents.handoffs import Handoff
        from agents.run_config import RunConfig

        for cls, name in ((Handoff, "input_filter"), (RunConfig, "handoff_input_filter")):
            original = cls.__dict__.get(name, _MISSING)
            if isinstance(original, FilterAttribute):
                continue  # already patched (a second instrumentor): leave it
            default = None if original is _MISSING else original
            setattr(cls, name, FilterAttribute(name, default, self.sink))
            self._saved.append((cls, name, original))

    def uninstall(self) -> None:
        for cls, name, original in reversed(self._saved):
            if original is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, original)
        self._saved.clear()
