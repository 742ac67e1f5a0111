"""`Witness`: what the foreign-spans apps (agents_app.py, langgraph_app.py) saw leave them."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor


class Witness(SpanProcessor):
    """Records root trace ids, in the order the runs ended, and whether `sentinel` was in
    any span (the scenarios run one after another, so the n-th root is the n-th run)."""

    def __init__(self, sentinel: str) -> None:
        self.sentinel = sentinel
        self.roots: list[str] = []
        self.sentinel_seen = False

    def on_end(self, span: ReadableSpan) -> None:
        scope = span.instrumentation_scope
        if scope is not None and scope.name.startswith("handoffscope"):
            return  # the shim's own spans (the mixed case)
        text = repr(dict(span.attributes or {})) + repr(span.status.description)
        text += "".join(repr(dict(e.attributes or {})) for e in span.events)
        self.sentinel_seen = self.sentinel_seen or self.sentinel in text
        if span.parent is None:
            self.roots.append(format(span.context.trace_id, "032x"))
