"""`HandoffRecorder`: the framework-agnostic API any agent runtime can call.

Each method emits one short evidence span of docs/semconv.md, ended at once, carrying only
allowlisted attributes (`semconv.ATTRIBUTES`, type- and size-checked). Anything else a
caller passes is dropped and counted by name in `stats.attributes_dropped`; values are
never logged. No method raises into the caller: failures are logged at debug and
counted in `stats.errors`.

    rec = HandoffRecorder(provider)
    rec.run_started("run-1", agent="triage")
    rec.handoff_requested("run-1", "h1", from_agent="triage", to_agent="billing",
                          turn=1, fingerprint=fingerprint(task, state), state_version=3,
                          route_declared=True, tool_call_id="call_1")
    rec.handoff_transferred("run-1", "h1", goto="billing", control_before="triage",
                            control_after="billing", tool_call_closed=True)
    rec.handoff_accepted("run-1", "h1", agent="billing")
    rec.outcome_verified("run-1", "ticket_updated", True, receipt_id="rcpt-9")
    rec.run_ended("run-1", "completed", final_agent="billing", turns=4)

Usage (docs/semconv.md, "Usage"): a *leg* is the work one agent does while it holds
control. Report each model call as it happens and the recorder sums it into the run's
current leg; the leg's totals go on the span that ends it — the next `handoff_requested`
of kind `handoff` (a delegation's request does not end the caller's leg) or `run_ended`
— and the leg starts again from zero:

    rec.record_usage("run-1", input_tokens=812, output_tokens=64, model="gpt-4.1-mini")

A runtime that already knows a leg's totals passes them to the ending call instead, as
`usage=LegUsage(...)` or the keywords `input_tokens=`, `output_tokens=`, `model_calls=`,
`model=`; they win over what `record_usage` summed. Counts and a model name only; a leg
with no model call carries no usage attributes.

Evidence known at the same moment belongs on one span: every method also takes the
keyword of any other contract attribute (see `KEYWORDS`), so an adapter that learns the
request and the transfer together calls `handoff_requested(..., goto=..., control_after=...)`.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    TraceFlags,
    Tracer,
    TracerProvider,
    set_span_in_context,
)

from . import semconv as sc
from .lru import Lru
from .stats import stats, swallowed

_log = logging.getLogger(__name__)

try:  # the distribution's version, as its build wrote it (pyproject.toml), not a copy
    __version__ = metadata.version("handoffscope-instrumentation")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

KEYWORDS: dict[str, str] = {
    "status": sc.RUN_STATUS,
    "final_agent": sc.RUN_FINAL_AGENT,
    "turns": sc.RUN_TURNS,
    "from_agent": sc.FROM_AGENT,
    "to_agent": sc.TO_AGENT,
    "turn": sc.TURN,
    "fingerprint": sc.FINGERPRINT,
    "state_version": sc.STATE_VERSION,
    "history_items_forwarded": sc.HISTORY_ITEMS_FORWARDED,
    "history_items_total": sc.HISTORY_ITEMS_TOTAL,
    "route_declared": sc.ROUTE_DECLARED,
    "tool_call_id": sc.TOOL_CALL_ID,
    "required_keys": sc.CONTEXT_REQUIRED_KEYS,
    "contract_version": sc.CONTRACT_VERSION,
    "budget_remaining": sc.BUDGET_REMAINING,
    "reason": sc.REASON,
    "kind": sc.KIND,
    "unobserved": sc.UNOBSERVED,
    "outcome_required": sc.RUN_OUTCOME_REQUIRED,
    "goto": sc.ROUTE_GOTO,
    "control_before": sc.CONTROL_BEFORE,
    "control_after": sc.CONTROL_AFTER,
    "tool_call_closed": sc.TOOL_CALL_CLOSED,
    "destination_started": sc.DESTINATION_STARTED,
    "missing_keys": sc.CONTEXT_MISSING_KEYS,
    "verdict": sc.VERDICT,
    "rejection_reason": sc.REJECTION_REASON,
    "rejection_fields": sc.REJECTION_FIELDS,
    "claims_done": sc.DESTINATION_CLAIMS_DONE,
    "wait_owner": sc.WAIT_OWNER,
    "wait_reason": sc.WAIT_REASON,
    "wait_deadline": sc.WAIT_DEADLINE,
    "resume_token_id": sc.WAIT_RESUME_TOKEN_ID,
    "state_persisted": sc.WAIT_STATE_PERSISTED,
    "decision": sc.WAIT_DECISION,
    "verifier": sc.OUTCOME_VERIFIER,
    "result": sc.OUTCOME_RESULT,
    "receipt_id": sc.OUTCOME_RECEIPT_ID,
    "agent": sc.GEN_AI_AGENT_NAME,
    "conversation_id": sc.GEN_AI_CONVERSATION_ID,
    "input_tokens": sc.GEN_AI_USAGE_INPUT_TOKENS,
    "output_tokens": sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    "model_calls": sc.USAGE_MODEL_CALLS,
    "model": sc.GEN_AI_REQUEST_MODEL,
    "entry_agents": sc.RUN_ENTRY_AGENTS,
    "task_id": sc.A2A_TASK_ID,
    "task_state": sc.A2A_TASK_STATE,
}
"""Python keyword -> contract attribute, accepted by every recording method."""

_ATTRS = sc.ATTRIBUTES
_check = sc.check_value


def to_epoch_ns(value: Any) -> int | None:
    """A deadline as epoch nanoseconds: from datetime, epoch seconds (float) or ns (int)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1e9)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        # Heuristic with a wide margin: epoch seconds are ~1.7e9, epoch ns ~1.7e18.
        return value if value > 10**14 else value * 1_000_000_000
    if isinstance(value, float):
        return int(value * 1e9)
    return None


@dataclass
class LegUsage:
    """What the model did in one leg: tokens read and written, calls, calls per model.

    Only counts and model names: `add` takes nothing else, so no content can ride along.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    models: Counter[str] = field(default_factory=Counter)
    tokens_reported: bool = False
    """Some call of the leg reported its tokens; if none did, the leg carries calls and
    model only — unknown tokens are not sent as 0."""

    def add(
        self,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        *,
        calls: int = 1,
        model: str | None = None,
    ) -> None:
        """Add `calls` model calls and the tokens they reported (None: not reported);
        negative or non-int counts are read as 0."""
        if type(input_tokens) is int or type(output_tokens) is int:
            self.tokens_reported = True
        self.input_tokens += _count(input_tokens)
        self.output_tokens += _count(output_tokens)
        calls = _count(calls)
        self.model_calls += calls
        if isinstance(model, str) and model and calls:
            self.models[model] += calls

    @property
    def model(self) -> str | None:
        """The model with the most calls in the leg (the first one seen on a tie)."""
        return self.models.most_common(1)[0][0] if self.models else None

    def evidence(self) -> dict[str, Any]:
        """The leg's usage attributes; empty when the leg made no model call."""
        if not self.model_calls:
            return {}
        out: dict[str, Any] = {
            sc.USAGE_MODEL_CALLS: self.model_calls,
            sc.GEN_AI_REQUEST_MODEL: self.model,
        }
        if self.tokens_reported:
            out[sc.GEN_AI_USAGE_INPUT_TOKENS] = self.input_tokens
            out[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = self.output_tokens
        return out


def _count(value: object) -> int:
    return value if type(value) is int and value > 0 else 0


MAX_LEGS = 4096
"""Runs whose current leg's usage the recorder keeps (LRU): a run that never ends or hands
off must not grow the process."""
_USAGE_NAMES = frozenset(
    (
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.USAGE_MODEL_CALLS,
        sc.GEN_AI_REQUEST_MODEL,
    )
)

MAX_RUN_TRACES = 4096
"""Runs whose trace context the recorder keeps (LRU); a forgotten one is derived again,
identically, so forgetting costs a hash, never a second trace."""
_HEX_TRACE = re.compile(r"^(?:trace_)?([0-9a-f]{32})$")
"""A run id that already is a trace id: 32 hex digits, or the Agents SDK's `trace_<hex>`."""


def run_trace_id(run_id: str) -> int:
    """The OpenTelemetry trace id of a run's evidence: the run id itself when it is one (the
    Agents SDK's trace, so the run opens as that trace in any trace viewer), else a stable
    hash of it — every process that reports the run derives the same trace."""
    found = _HEX_TRACE.match(run_id)
    if found and int(found.group(1), 16):
        return int(found.group(1), 16)
    return int.from_bytes(hashlib.blake2b(run_id.encode(), digest_size=16).digest(), "big") or 1


def _run_context(run_id: str) -> Context:
    trace_id = run_trace_id(run_id)
    span_id = int.from_bytes(
        hashlib.blake2b(b"run:" + run_id.encode(), digest_size=8).digest(), "big"
    )
    parent = SpanContext(
        trace_id=trace_id,
        span_id=span_id or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return set_span_in_context(NonRecordingSpan(parent))


class HandoffRecorder:
    """Emit handoffscope evidence spans. Thread-safe; cheap; never raises.

    One run, one trace: a run's evidence spans are children of the span that is current
    when they are emitted (the framework's or the app's own trace), and when none is, of
    a remote parent whose trace id is derived from the run id (`run_trace_id`), so a run's
    evidence opens as one trace in Jaeger, Tempo or Langfuse — not one trace per span —
    and its trace id is what Run detail shows.
    """

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        provider = tracer_provider or trace.get_tracer_provider()
        self._tracer: Tracer = provider.get_tracer(sc.INSTRUMENTATION_SCOPE, __version__)
        self._contexts: Lru[str, Context] = Lru(MAX_RUN_TRACES)
        self._legs: Lru[str, LegUsage] = Lru(MAX_LEGS)
        """Run id -> the usage of its current leg, summed by `record_usage`."""
        self._lock = threading.Lock()

    def _parent(self, run_id: str) -> Context | None:
        if trace.get_current_span().get_span_context().is_valid:
            return None  # the current context: the framework's or the app's own trace
        context = self._contexts.get(run_id)
        if context is None:
            context = _run_context(run_id)
            with self._lock:
                self._contexts.put(run_id, context)
        return context

    # -- the low-level door --------------------------------------------------------------

    def emit(
        self,
        span_name: str,
        attributes: Mapping[str, Any],
        *,
        start_time_ns: int | None = None,
    ) -> bool:
        """Emit one evidence span with the allowlisted subset of `attributes`, at
        `start_time_ns` (start and end; default: now).

        `attributes` are keyed by contract names (`semconv`). Returns False (and counts)
        when nothing could be emitted: unknown span name, no run id, or an internal error.
        """
        try:
            if span_name not in sc.SPAN_NAMES:
                stats.drop_attribute(f"(span name) {span_name[:64]}")
                return False
            clean: dict[str, Any] = {}
            for name, value in attributes.items():
                if value is None:
                    continue
                spec = _ATTRS.get(name)
                checked = _check(spec, value) if spec is not None else None
                if checked is None:
                    stats.drop_attribute(name if spec is not None else _bounded(name))
                    continue
                clean[name] = checked
            if sc.RUN_ID not in clean:
                stats.drop_attribute(sc.RUN_ID)
                return False
            span = self._tracer.start_span(
                span_name,
                context=self._parent(clean[sc.RUN_ID]),
                attributes=clean,
                start_time=start_time_ns,
            )
            # Evidence is a moment: a span given its time (history, a backfill, a moment
            # the app learned late) ends then too. Ended "now", a weeks-old run read as
            # last seen now, and its loop paged people as if it were happening.
            span.end(end_time=start_time_ns)
            stats.spans_emitted += 1  # a lost increment under a race is acceptable here
            return True
        except Exception:
            swallowed(_log, "emit")
            return False

    def _record(
        self,
        span_name: str,
        base: dict[str, Any],
        extra: Mapping[str, Any],
        *,
        ends_leg: bool = False,
    ) -> bool:
        try:
            leg = self._take_leg(base[sc.RUN_ID]) if ends_leg else None
            for kw, value in extra.items():
                if kw == "usage":
                    # A leg's totals the caller knows: they replace what was summed.
                    if isinstance(value, LegUsage):
                        base.update(value.evidence())
                    elif value is not None:
                        stats.drop_attribute("usage")
                    continue
                name = KEYWORDS.get(kw)
                if name is None:
                    stats.drop_attribute(_bounded(kw))
                elif value is not None:
                    base.setdefault(name, value)
            if leg is not None and not _USAGE_NAMES.intersection(base):
                base.update(leg.evidence())
            return self.emit(span_name, base)
        except Exception:
            swallowed(_log, "record")
            return False

    # -- usage -----------------------------------------------------------------------------

    def record_usage(
        self,
        run_id: str,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        model: str | None = None,
        calls: int = 1,
    ) -> None:
        """Sum `calls` model calls (default one) into the run's current leg; see the module
        docstring. Emits nothing: the leg's totals ride on the span that ends it."""
        try:
            if not isinstance(run_id, str) or not run_id:
                return
            with self._lock:
                leg = self._legs.get(run_id)
                if leg is None:
                    leg = LegUsage()
                    self._legs.put(run_id, leg)
                leg.add(input_tokens, output_tokens, calls=calls, model=model)
        except Exception:
            swallowed(_log, "record_usage")

    def leg_usage(self, run_id: str) -> LegUsage | None:
        """The usage summed so far in the run's current leg (None: no model call yet)."""
        return self._legs.get(run_id)

    def _take_leg(self, run_id: object) -> LegUsage | None:
        if not isinstance(run_id, str):
            return None
        with self._lock:
            return self._legs.pop(run_id, None)

    # -- runs ------------------------------------------------------------------------------

    def run_started(self, run_id: str, *, agent: str | None = None, **evidence: Any) -> bool:
        return self._record(
            sc.SPAN_RUN,
            {
                sc.RUN_ID: run_id,
                sc.RUN_STATUS: sc.RUN_STATUS_STARTED,
                sc.RUN_STARTED: time.time_ns(),
                sc.GEN_AI_AGENT_NAME: agent,
            },
            evidence,
        )

    def run_ended(
        self,
        run_id: str,
        status: str,
        *,
        final_agent: str | None = None,
        turns: int | None = None,
        **evidence: Any,
    ) -> bool:
        """`status`: completed / failed / interrupted / max_turns (semconv.RUN_STATUSES)."""
        return self._record(
            sc.SPAN_RUN,
            {
                sc.RUN_ID: run_id,
                sc.RUN_STATUS: status,
                sc.RUN_FINAL_AGENT: final_agent,
                sc.RUN_TURNS: turns,
            },
            evidence,
            ends_leg=True,  # the last leg (or the one a pause cut) ends with the run
        )

    # -- handoffs --------------------------------------------------------------------------

    def handoff_requested(
        self,
        run_id: str,
        handoff_id: str,
        *,
        from_agent: str | None,
        to_agent: str | None,
        required_keys: Iterable[str] | None = None,
        **evidence: Any,
    ) -> bool:
        """The sender created the transfer (turn, fingerprint, state_version, ... as keywords)."""
        return self._record(
            sc.SPAN_REQUEST,
            {
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: handoff_id,
                sc.FROM_AGENT: from_agent,
                sc.TO_AGENT: to_agent,
                sc.CONTEXT_REQUIRED_KEYS: names(required_keys),
            },
            evidence,
            # A handoff ends the sender's leg; a delegation's callee works inside it.
            ends_leg=evidence.get("kind") != sc.KIND_DELEGATION,
        )

    def handoff_transferred(
        self,
        run_id: str,
        handoff_id: str,
        *,
        goto: str | None = None,
        control_before: str | None = None,
        control_after: str | None = None,
        tool_call_closed: bool | None = None,
        **evidence: Any,
    ) -> bool:
        """The runtime's state has moved: where `goto` points and who holds control."""
        return self._record(
            sc.SPAN_TRANSFER,
            {
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: handoff_id,
                sc.ROUTE_GOTO: goto,
                sc.CONTROL_BEFORE: control_before,
                sc.CONTROL_AFTER: control_after,
                sc.TOOL_CALL_CLOSED: tool_call_closed,
            },
            evidence,
        )

    def handoff_accepted(
        self,
        run_id: str,
        handoff_id: str,
        *,
        agent: str | None = None,
        missing_keys: Iterable[str] | None = None,
        **evidence: Any,
    ) -> bool:
        """The destination was admitted (it started); `missing_keys` names absent context."""
        missing = names(missing_keys)
        return self._record(
            sc.SPAN_ACCEPT,
            {
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: handoff_id,
                sc.DESTINATION_STARTED: True,
                sc.CONTEXT_MISSING_KEYS: missing,
                sc.VERDICT: sc.CONTEXT_INCOMPLETE if missing else sc.HEALTHY,
                sc.GEN_AI_AGENT_NAME: agent,
            },
            evidence,
        )

    def handoff_rejected(
        self,
        run_id: str,
        handoff_id: str,
        reason: str,
        *,
        agent: str | None = None,
        fields: Iterable[str] | None = None,
        **evidence: Any,
    ) -> bool:
        """The destination refused the contract: invalid / stale / unauthorized / no_budget / vague_goal."""
        return self._record(
            sc.SPAN_ACCEPT,
            {
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: handoff_id,
                sc.REJECTION_REASON: reason,
                sc.REJECTION_FIELDS: names(fields),
                sc.VERDICT: sc.CONTRACT_REJECTED,
                sc.GEN_AI_AGENT_NAME: agent,
            },
            evidence,
        )

    def destination_not_started(self, run_id: str, handoff_id: str, **evidence: Any) -> bool:
        """The runtime knows the destination will not start (crashed, not admitted)."""
        return self._record(
            sc.SPAN_ACCEPT,
            {sc.RUN_ID: run_id, sc.HANDOFF_ID: handoff_id, sc.DESTINATION_STARTED: False},
            evidence,
        )

    # -- waits -----------------------------------------------------------------------------

    def wait_checkpointed(
        self,
        run_id: str,
        *,
        handoff_id: str | None = None,
        owner: str | None = None,
        reason: str | None = None,
        deadline: datetime | float | int | None = None,
        resume_token_id: str | None = None,
        state_persisted: bool | None = None,
        **evidence: Any,
    ) -> bool:
        """A legitimate wait (e.g. human approval): who owns it, why, until when, how to resume."""
        return self._record(
            sc.SPAN_WAIT,
            {
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: handoff_id,
                sc.WAIT_OWNER: owner,
                sc.WAIT_REASON: reason,
                sc.WAIT_DEADLINE: to_epoch_ns(deadline),
                sc.WAIT_RESUME_TOKEN_ID: resume_token_id,
                sc.WAIT_STATE_PERSISTED: state_persisted,
            },
            evidence,
        )

    def wait_decided(
        self,
        run_id: str,
        decision: str,
        *,
        handoff_id: str | None = None,
        resume_token_id: str | None = None,
        **evidence: Any,
    ) -> bool:
        """The wait ended: approved / rejected / expired."""
        return self._record(
            sc.SPAN_WAIT,
            {
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: handoff_id,
                sc.WAIT_DECISION: decision,
                sc.WAIT_RESUME_TOKEN_ID: resume_token_id,
            },
            evidence,
        )

    # -- outcomes --------------------------------------------------------------------------

    def outcome_verified(
        self,
        run_id: str,
        verifier: str,
        result: bool | str,
        *,
        handoff_id: str | None = None,
        receipt_id: str | None = None,
        **evidence: Any,
    ) -> bool:
        """A task verifier ran. `result`: True/"pass" or False/"fail"."""
        if isinstance(result, bool):
            result = sc.OUTCOME_PASS if result else sc.OUTCOME_FAIL
        return self._record(
            sc.SPAN_OUTCOME,
            {
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: handoff_id,
                sc.OUTCOME_VERIFIER: verifier,
                sc.OUTCOME_RESULT: result,
                sc.OUTCOME_RECEIPT_ID: receipt_id,
            },
            evidence,
        )


def names(keys: Iterable[str] | None) -> tuple[str, ...] | None:
    """Names as a tuple: one name given as a string is one name, not its letters."""
    if keys is None:
        return None
    if isinstance(keys, str):
        return (keys,)
    return tuple(keys)


def _bounded(name: object) -> str:
    # An unknown attribute's NAME is counted; bound it so a sentence used as a key is cut.
    return str(name)[:64]
