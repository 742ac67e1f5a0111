"""The run and handoff ids across the service boundary: W3C `traceparent` + `baggage`.

The sender puts two baggage entries in the request's headers (`sc.BAGGAGE_RUN_ID`,
`sc.BAGGAGE_HANDOFF_ID`) beside the trace context, and the receiver reads them back: the
standard OpenTelemetry way to carry a few ids with a request, so a proxy or an OpenTelemetry
Collector in between passes them on untouched.

Only those two entries are written: the baggage is built from an empty context, not from
the app's current one, so whatever else the app keeps in its baggage is not sent by us (its
own HTTP instrumentation decides that). The propagators are used directly rather than the
global one, which an app may have set to B3 or none: the receiver's shim must find the ids
whatever the app configured.

`traceparent`: the span current at the send, when there is one (the app's or a framework's
OpenTelemetry trace); else the run's own trace (`recorder.run_trace_id`), so the receiver's
evidence opens in the sender's run trace either way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, MutableMapping
from typing import Any

from opentelemetry import baggage, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from .. import semconv as sc
from ..recorder import run_trace_id

TRACEPARENT = "traceparent"
BAGGAGE = "baggage"
_TRACE_CONTEXT = TraceContextTextMapPropagator()
_BAGGAGE = W3CBaggagePropagator()


def inject(headers: MutableMapping[str, str], run_id: str, handoff_id: str) -> None:
    """Add `traceparent` (unless the app set one) and our two baggage entries to `headers`
    (merged into a `baggage` header the app already set)."""
    if not any(k.lower() == TRACEPARENT for k in headers):
        carrier: dict[str, str] = {}
        _TRACE_CONTEXT.inject(carrier, context=_trace_context(run_id, handoff_id))
        headers.update(carrier)
    ours: dict[str, str] = {}
    context = baggage.set_baggage(sc.BAGGAGE_RUN_ID, run_id, context=Context())
    context = baggage.set_baggage(sc.BAGGAGE_HANDOFF_ID, handoff_id, context=context)
    _BAGGAGE.inject(ours, context=context)
    if BAGGAGE not in ours:
        return
    existing = next((k for k in headers if k.lower() == BAGGAGE), None)
    if existing is None:
        headers[BAGGAGE] = ours[BAGGAGE]
    else:
        headers[existing] = f"{headers[existing]},{ours[BAGGAGE]}"


def _trace_context(run_id: str, handoff_id: str) -> Context | None:
    if trace.get_current_span().get_span_context().is_valid:
        return None  # the current context
    span_id = int.from_bytes(
        hashlib.blake2b(f"a2a:{run_id}:{handoff_id}".encode(), digest_size=8).digest(), "big"
    )
    parent = SpanContext(
        trace_id=run_trace_id(run_id),
        span_id=span_id or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def extract(headers: Mapping[str, Any]) -> tuple[str | None, str | None, Context]:
    """(run id, handoff id, the sender's trace context) from incoming headers; the ids are
    None when the request carries no handoffscope baggage."""
    carrier = {str(k).lower(): str(v) for k, v in headers.items()}
    context = _TRACE_CONTEXT.extract(carrier)
    context = _BAGGAGE.extract(carrier, context=context)
    run_id = baggage.get_baggage(sc.BAGGAGE_RUN_ID, context)
    handoff_id = baggage.get_baggage(sc.BAGGAGE_HANDOFF_ID, context)
    if not isinstance(run_id, str) or not isinstance(handoff_id, str):
        return None, None, context
    return run_id or None, handoff_id or None, context


def request_headers(call_context: Any) -> Mapping[str, Any]:
    """The incoming request's headers, from an a2a-sdk `ServerCallContext`: HTTP headers
    (JSON-RPC and REST: `state['headers']`, as `DefaultServerCallContextBuilder` keeps
    them) or gRPC invocation metadata (`state['grpc_context']`). Empty when neither."""
    state = getattr(call_context, "state", None) or {}
    headers = state.get("headers")
    if isinstance(headers, Mapping):
        return headers
    grpc_context = state.get("grpc_context")
    if grpc_context is not None:
        try:
            return {str(k): v for k, v in grpc_context.invocation_metadata() or ()}
        except Exception:
            return {}
    return {}
