"""The allowlist processor: only the handoff contract reaches storage.

For each span of an export it keeps
- the span's identity: trace id, span id, name, start and end time;
- the resource's `service.name`;
- every attribute of `semconv.ATTRIBUTES` whose value passes `semconv.check_value`
  (type, length, code pattern, closed vocabulary) — the same check the shim applies.

Everything else is dropped before it is stored and counted per (service, attribute
NAME): other resource attributes, unknown span attributes (`gen_ai.prompt`,
`input.value`, `llm.input_messages.0.message.content`, ...), contract attributes whose
value has the wrong type or size, and span-event attributes. The counts go to
`/metrics` and the `drops` table; the values go nowhere. There is no switch that keeps
content.

Other instrumentations' spans reach it only as the contract spans their translators
derived (`processor/translate/`, which runs first and drops and counts the rest).
A span is refused whole — reported through OTLP `partial_success`, the rest of the export
kept — when its name is not one of `semconv.SPAN_NAMES` (a span of an instrumentation no
translator claims is not evidence and may well be all content), when it has no valid `handoff.run_id`
(evidence that belongs to no run cannot be judged), when its ids or timestamps are
malformed, or when it is dated outside the sane window: before 2000-01-01 or more than
`--max-clock-skew-seconds` (default a day) ahead of the collector's clock. Attributes of
spans refused for their name are not looked at, so not counted.

Why refuse out-of-window spans rather than clamp them: a clamped time is a time nobody
sent, and would still decide a verdict (a handoff "requested" in 2100 stays `in_flight`
until then and tops every newest-first list; one dated near the end of int64 time made
derived times overflow and failed its whole export, every retry). Refused, it is one
counted reason in `partial_success` and `handoffscope_spans_refused_total{reason}`, and
its neighbours in the export are stored.

Every span is also counted per (service, instrumentation scope, outcome) in
`SpanBatch.sources` — kept as evidence, or refused and why — so what a sender's
instrumentation sends and what became of it is listed (`GET /api/v1/sources`, the
dashboard's Sources page), and the first spans of a scope refused as not evidence are
named in the collector's log (once an hour per service and scope): a team that adds the
collector as one more OTLP destination learns why its board stays empty. Scope names are
the sender's: one that is not a plain identifier is counted as `(unreadable scope)`, and
at most `MAX_SOURCE_KEYS` (service, scope) pairs are told apart.

Output is column lists, one per `spans` column, ready for one Arrow table per export:
building rows as dicts and converting later would cost a second pass.

It reads the export through `otlp/lean_trace.py` (attributes as their encoded bytes)
and decides each distinct encoded attribute once: a kept contract value is remembered by
its bytes, so a span of values seen before costs a dict lookup per attribute instead of
a protobuf read and a check (≈5 µs a span instead of ≈30, docs/storage.md). The decision
is `compile_check`, which a property test holds equal to `semconv.check_value`.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from handoffscope.collector.otlp.lean_trace import merged, parse_lean
from handoffscope.collector.otlp.values import READERS
from handoffscope.collector.processor.translate import Translation
from handoffscope.collector.store.spans import ATTRIBUTE_COLUMNS, SPAN_SCHEMA
from handoffscope.instrumentation import semconv as sc

UNKNOWN_SERVICE = "unknown_service"
"""What OTel SDKs call a service without `service.name`; used for the same case here."""
UNREADABLE_NAME = "(unreadable name)"
"""Drop label for an attribute name that is not a plain identifier (could be free text)."""
OTHER_NAMES = "(other)"
"""Drop label once MAX_DROP_KEYS distinct (service, name) pairs have been seen."""
MAX_DROP_KEYS = 1000
"""Distinct (service, attribute) drop counters kept, so a sender inventing names cannot
grow /metrics or the drops table without bound (openinference bounds its maps likewise)."""

EARLIEST_NS = 946_684_800 * 1_000_000_000
"""2000-01-01T00:00:00Z: no evidence span of this product can be older."""
DEFAULT_MAX_CLOCK_SKEW_S = 86_400.0
"""How far ahead of the collector's clock a span may end (a sender's clock may be off)."""

SOURCE_EVIDENCE = "evidence"
"""`sources` outcome: contract spans kept (the shim's, or a translator's evidence)."""
SOURCE_REFUSED = "refused:"
"""`sources` outcome prefix of spans refused, followed by the reason (REFUSED_*)."""
SOURCE_TRANSLATED = "translated:"
"""`sources` outcome prefix of foreign spans a translator read, followed by its source code."""
NO_SCOPE = "(no scope name)"
UNREADABLE_SCOPE = "(unreadable scope)"
OTHER_SCOPES = "(other)"
MAX_SOURCE_KEYS = 1000
"""Distinct (service, scope) pairs counted apart; later ones are counted as `(other)`."""
SCOPE_PATTERN = re.compile(r"^[A-Za-z0-9_.:/@+-]{1,128}$")
"""What a scope name may look like to be shown: an instrumentation library's name."""
WARN_EVERY_S = 3600.0
"""A (service, scope) whose spans are refused as not evidence is named in the log at most
this often."""

log = logging.getLogger(__name__)

_SERVICE_SPEC = sc.AttributeSpec(sc.SERVICE_NAME, sc.STR, max_len=sc.MAX_NAME_LEN)
_SPAN_NAMES = frozenset(sc.SPAN_NAMES)
_MAX_I64 = 2**63 - 1
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)
_RUN_ID_COLUMN = ATTRIBUTE_COLUMNS[sc.RUN_ID]
_DATA_COLUMNS = [f.name for f in SPAN_SCHEMA if f.name != "received_ns"]
"""Columns the allowlist fills; the writer adds received_ns when the batch is queued."""


def compile_check(spec: sc.AttributeSpec) -> Callable[[object], object]:
    """`f(any_value)` == `check_value(spec, read_as(spec.type, any_value))`, faster.

    This is the hot loop of ingest (≈8 values per span): one call per value instead of a
    reader plus `check_value`'s dispatch on the type, with the bounds bound as locals. A
    property test (tests/collector/test_allowlist.py) holds it equal to `check_value`
    for every spec and every kind of value, so the contract keeps one definition.
    """
    read = READERS[spec.type]
    if spec.pattern is not None or spec.minimum is not None:
        # Rare bounds (model names, usage counts): check_value's own check, one definition.
        return lambda value: sc.check_value(spec, read(value))
    if spec.type == sc.STR:
        max_len = spec.max_len
        if spec.values is not None:
            values = frozenset(spec.values)
            if all(sc.check_value(spec, v) == v for v in values):  # else: generic below

                def check_vocabulary(value):
                    text = value.string_value
                    return text if text in values else None

                return check_vocabulary
        elif spec.code:
            match = sc.CODE_PATTERN.match

            def check_code(value):
                text = value.string_value
                return text if text and len(text) <= max_len and match(text) else None

            return check_code
        else:
            control = sc.CONTROL_CHARS.search

            def check_text(value):
                text = value.string_value
                return text if text and len(text) <= max_len and not control(text) else None

            return check_text
    if spec.type == sc.INT:

        def check_int(value):
            number = value.int_value
            if number == 0 and value.WhichOneof("value") != "int_value":
                return None
            return number

        return check_int
    if spec.type == sc.BOOL:

        def check_bool(value):
            if value.bool_value:
                return True
            return False if value.WhichOneof("value") == "bool_value" else None

        return check_bool

    def check_generic(value):
        return sc.check_value(spec, read(value))

    return check_generic


# attribute name -> (index of its column in ATTRIBUTE_COLUMNS, compiled check)
_PLAN = {
    name: (index, compile_check(sc.ATTRIBUTES[name]))
    for index, name in enumerate(ATTRIBUTE_COLUMNS)
}

MAX_DECIDED = 16_384
"""Encoded attributes whose outcome the allowlist remembers (then it starts afresh)."""


def _decide(raw: bytes) -> tuple[int, object]:
    """What to do with one encoded `KeyValue`: (column index, value) to keep it, or
    (-1, its name) to drop and count it."""
    kv = KeyValue.FromString(raw)
    key = kv.key
    entry = _PLAN.get(key)
    if entry is not None:
        value = entry[1](kv.value)
        if value is not None:
            return entry[0], value
    return -1, key


# Why a span is refused: a bounded code (label `reason` of handoffscope_spans_refused_total)
# and the sentence partial_success.error_message says for it.
REFUSED_NOT_EVIDENCE = "not_evidence"
REFUSED_NO_RUN_ID = "no_run_id"
REFUSED_MALFORMED_IDS = "malformed_ids"
REFUSED_MALFORMED_TIME = "malformed_time"
REFUSED_TIME_OUT_OF_WINDOW = "time_out_of_window"
REFUSED_SERVICE_NOT_IN_SCOPE = "service_not_in_scope"
REFUSAL_SENTENCES = {
    REFUSED_NOT_EVIDENCE: "name not in the handoff contract",
    REFUSED_NO_RUN_ID: f"no valid {sc.RUN_ID}",
    REFUSED_MALFORMED_IDS: "malformed trace_id/span_id (need 16 and 8 bytes, not all zero)",
    REFUSED_MALFORMED_TIME: "start/end time missing or beyond int64 nanoseconds",
    REFUSED_TIME_OUT_OF_WINDOW: (
        "time before 2000-01-01 or too far ahead of the collector's clock "
        "(--max-clock-skew-seconds)"
    ),
    REFUSED_SERVICE_NOT_IN_SCOPE: (
        "a resource service.name this ingest credential is not scoped to (docs/security.md)"
    ),
}


@dataclass
class SpanBatch:
    """What one export left after the allowlist: columns ready for the writer."""

    columns: dict[str, list]
    """SPAN_SCHEMA column -> values, one per kept span (received_ns excluded)."""
    count: int
    """Spans kept."""
    received: int
    """Spans in the export."""
    rejected: int = 0
    error_message: str = ""
    """For partial_success; empty when nothing was refused."""
    drops: Counter = field(default_factory=Counter)
    """(service, attribute name) -> values dropped."""
    refused: Counter = field(default_factory=Counter)
    """Refusal reason code (REFUSED_*) -> spans refused for it."""
    sources: Counter = field(default_factory=Counter)
    """(service, scope, outcome) -> spans: SOURCE_EVIDENCE, SOURCE_REFUSED + reason,
    SOURCE_TRANSLATED + source code."""


class Allowlist:
    """Turns decoded exports into `SpanBatch`es. One per collector (it bounds drop labels)."""

    def __init__(
        self,
        max_drop_keys: int = MAX_DROP_KEYS,
        *,
        max_clock_skew_s: float = DEFAULT_MAX_CLOCK_SKEW_S,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self._max_drop_keys = max_drop_keys
        self._max_skew_ns = int(max_clock_skew_s * 1e9)
        self._clock = clock
        self._drop_keys: set[tuple[str, str]] = set()
        self._source_keys: set[tuple[str, str]] = set()
        self._warned: dict[tuple[str, str], float] = {}
        # Encoded attribute -> outcome, for attributes KEPT: a contract value recurs
        # (agent names, statuses, flags) and is decided once, not once per span. Only
        # kept ones are remembered, so what stays in memory is checked contract values,
        # never content, and at most MAX_DECIDED of them (each bounded by its max_len).
        # Shared by the receivers' threads: a lost race costs a second decision, no more.
        self._decided: dict[bytes, tuple[int, object]] = {}
        self._lock = threading.Lock()

    def _drop_key(self, service: str, name: str) -> tuple[str, str]:
        if not sc.CODE_PATTERN.match(name):
            name = UNREADABLE_NAME
        key = (service, name)
        if key in self._drop_keys:
            return key
        with self._lock:
            if len(self._drop_keys) >= self._max_drop_keys:
                return (service, OTHER_NAMES)
            self._drop_keys.add(key)
        return key

    def source_key(self, service: str, scope: str) -> tuple[str, str]:
        """(service, scope label) as counted: the scope name if it reads as one (else
        UNREADABLE_SCOPE), OTHER_SCOPES past MAX_SOURCE_KEYS pairs."""
        if not scope:
            scope = NO_SCOPE
        elif not SCOPE_PATTERN.match(scope):
            scope = UNREADABLE_SCOPE
        key = (service, scope)
        if key in self._source_keys:
            return key
        with self._lock:
            if len(self._source_keys) >= self._max_drop_keys:
                return (service, OTHER_SCOPES)
            self._source_keys.add(key)
        return key

    def _warn_not_judged(self, sources: Counter) -> None:
        """Name, in the log, the scopes whose spans were refused as not evidence (at most
        once per WARN_EVERY_S per service and scope)."""
        now = time.monotonic()
        for (service, scope, outcome), n in sources.items():
            if outcome != SOURCE_REFUSED + REFUSED_NOT_EVIDENCE:
                continue
            last = self._warned.get((service, scope))
            if last is not None and now - last < WARN_EVERY_S:
                continue
            self._warned[(service, scope)] = now
            log.warning(
                "refused %d spans of instrumentation scope %r from service %r: they are not "
                "handoff evidence and no translator reads that scope, so nothing of them is "
                "judged. GET /api/v1/sources (or the dashboard's Sources page) lists every "
                "source and what became of its spans; docs/foreign-spans.md lists the "
                "instrumentations that are judged.",
                n,
                scope,
                service,
            )

    def process(
        self,
        request: ExportTraceServiceRequest,
        translation: Translation | None = None,
        *,
        body: bytes | bytearray | None = None,
    ) -> SpanBatch:
        """`translation`: what the translators did to `request` beforehand (its foreign
        spans count as received, their dropped content as drops). `body`: the protobuf
        bytes `request` was parsed from, when the receiver has them (saves encoding it
        again; ignored once translators changed the request)."""
        if body is None or translation is not None:
            body = request.SerializeToString()
        return self.process_lean(parse_lean(body), translation)[0]

    def process_lean(
        self, export, translation: Translation | None = None
    ) -> tuple[SpanBatch, bool]:
        """`process` over an export already read by `parse_lean`; also says whether a span
        was refused before its encoded parts were read (then only a full parse of the
        export tells whether they were well-formed: `ExportHandler.read_protobuf`).

        Raises protobuf's DecodeError when a part it reads is malformed."""
        unread = False
        total = sum(len(ss.spans) for rs in export.resource_spans for ss in rs.scope_spans)
        columns: dict[str, list] = {c: [None] * total for c in _DATA_COLUMNS}
        c_trace = columns["trace_id"]
        c_span = columns["span_id"]
        c_name = columns["name"]
        c_service = columns["service"]
        c_start = columns["start_ns"]
        c_end = columns["end_ns"]
        c_run_id = columns[_RUN_ID_COLUMN]
        attribute_columns = [columns[c] for c in ATTRIBUTE_COLUMNS.values()]
        decided = self._decided
        decided_get = decided.get
        # (service, raw name); folded through _drop_key below
        raw_drops: Counter = Counter(translation.drops) if translation else Counter()
        refused: Counter = Counter()
        sources: Counter = Counter()
        if translation is not None:
            for (service, scope, source), n in translation.scopes_read.items():
                sources[(*self.source_key(service, scope), SOURCE_TRANSLATED + source)] += n
        refused_names: list[str] = []
        kept = 0
        # One reading of the clock per export: the window is the same for all its spans.
        latest = min(self._clock() + self._max_skew_ns, _MAX_I64)

        for rs in export.resource_spans:
            resource = merged(Resource, rs.resource)
            service = service_of(resource.attributes)
            for kv in resource.attributes:
                if kv.key.startswith(_SDK_IDENTITY):
                    continue  # every OTel SDK sends these; not content, not worth a count
                if kv.key != sc.SERVICE_NAME or service == UNKNOWN_SERVICE:
                    raw_drops[(service, kv.key)] += 1
            for ss in rs.scope_spans:
                scope_name = ""
                if ss.scope:
                    scope = merged(InstrumentationScope, ss.scope)
                    scope_name = scope.name
                    for kv in scope.attributes:
                        raw_drops[(service, kv.key)] += 1
                if not ss.spans:
                    continue
                kept_before = kept
                refused_before = dict(refused)
                for span in ss.spans:
                    name = span.name
                    if name not in _SPAN_NAMES:
                        refused[REFUSED_NOT_EVIDENCE] += 1
                        unread = True
                        if len(refused_names) < 3:
                            refused_names.append(name[:64])
                        continue
                    trace_id = span.trace_id
                    span_id = span.span_id
                    if (
                        len(trace_id) != 16
                        or len(span_id) != 8
                        or trace_id == _ZERO_TRACE
                        or span_id == _ZERO_SPAN
                    ):
                        refused[REFUSED_MALFORMED_IDS] += 1
                        unread = True
                        continue
                    start = span.start_time_unix_nano
                    end = span.end_time_unix_nano
                    if not (0 < start <= _MAX_I64 and 0 < end <= _MAX_I64):
                        refused[REFUSED_MALFORMED_TIME] += 1
                        unread = True
                        continue
                    if not (EARLIEST_NS <= start <= latest and EARLIEST_NS <= end <= latest):
                        refused[REFUSED_TIME_OUT_OF_WINDOW] += 1
                        unread = True
                        continue
                    # Values go straight into row `kept`; a refused span's row is
                    # cleared below and reused (refusals are rare, so this is cheaper
                    # than collecting each span's values first).
                    for raw in span.attributes:
                        outcome = decided_get(raw)
                        if outcome is None:
                            outcome = _decide(raw)
                            if outcome[0] >= 0:
                                if len(decided) >= MAX_DECIDED:
                                    decided.clear()
                                decided[raw] = outcome
                        index, value = outcome
                        if index < 0:
                            raw_drops[(service, value)] += 1
                        else:
                            attribute_columns[index][kept] = value
                    if span.events:
                        for event in span.events:
                            for kv in Span.Event.FromString(event).attributes:
                                raw_drops[(service, kv.key)] += 1
                    # Not kept, only checked: parsed as the full message would parse them.
                    if span.links:
                        for link in span.links:
                            Span.Link.FromString(link)
                    if span.status:
                        merged(Status, span.status)
                    if c_run_id[kept] is None:
                        refused[REFUSED_NO_RUN_ID] += 1
                        for column in attribute_columns:
                            column[kept] = None
                        continue
                    c_trace[kept] = trace_id.hex()
                    c_span[kept] = span_id.hex()
                    c_name[kept] = name
                    c_service[kept] = service
                    c_start[kept] = start
                    c_end[kept] = end
                    kept += 1
                service_scope = self.source_key(service, scope_name)
                if kept > kept_before:
                    sources[(*service_scope, SOURCE_EVIDENCE)] += kept - kept_before
                for reason, n in refused.items():
                    n -= refused_before.get(reason, 0)
                    if n:
                        sources[(*service_scope, SOURCE_REFUSED + reason)] += n

        if kept < total:
            for values in columns.values():
                del values[kept:]
        drops: Counter = Counter()
        for (service, name), n in raw_drops.items():
            drops[self._drop_key(service, name)] += n
        rejected = total - kept
        received = total
        if translation is not None:
            # Foreign spans were replaced by the evidence derived from them: the sender
            # sent `foreign` spans where the allowlist saw `emitted`.
            received += translation.foreign - translation.emitted
        batch = SpanBatch(
            columns=columns,
            count=kept,
            received=received,
            rejected=rejected,
            error_message=_refusal_message(refused, refused_names, total) if rejected else "",
            drops=drops,
            refused=refused,
            sources=sources,
        )
        if refused.get(REFUSED_NOT_EVIDENCE):
            self._warn_not_judged(sources)
        return batch, unread


_SDK_IDENTITY = ("telemetry.sdk.", "service.instance.", "service.version", "service.namespace")
"""Resource attributes naming the sender's SDK and instance (the SDK sets several itself):
dropped like all others, but not counted — they are on every export and would bury the
drops that matter (content from other instrumentations)."""


def service_of(resource_attributes) -> str:
    """The resource's `service.name`, checked like a contract value, else UNKNOWN_SERVICE."""
    for kv in resource_attributes:
        if kv.key == sc.SERVICE_NAME:
            value = sc.check_value(_SERVICE_SPEC, kv.value.string_value)
            if isinstance(value, str):
                return value
    return UNKNOWN_SERVICE


def _refusal_message(refused: Counter, names: list[str], total: int) -> str:
    parts = []
    for reason, n in refused.most_common():
        text = f"{n} with {REFUSAL_SENTENCES[reason]}"
        if reason == REFUSED_NOT_EVIDENCE:
            text += f" (got {', '.join(repr(x) for x in names)}; expected one of {', '.join(sc.SPAN_NAMES)})"
        parts.append(text)
    return f"refused {sum(refused.values())} of {total} spans: " + "; ".join(parts)


def restrict(batch: SpanBatch, services: Sequence[str]) -> SpanBatch:
    """`batch` less the spans of services outside `services` (an ingest credential's
    scope): each refused as `service_not_in_scope`, the rest kept. Nothing of the refused
    services is counted — neither their attribute drops nor their sources — since those
    figures are the other team's to read."""
    allowed = set(services)
    column = batch.columns["service"]
    keep = [i for i, service in enumerate(column) if service in allowed]
    out_drops = any(service not in allowed for service, _ in batch.drops)
    out_sources = any(key[0] not in allowed for key in batch.sources)
    if len(keep) == len(column) and not out_drops and not out_sources:
        return batch
    columns = {name: [values[i] for i in keep] for name, values in batch.columns.items()}
    out = len(column) - len(keep)
    refused = Counter(batch.refused)
    if out:
        refused[REFUSED_SERVICE_NOT_IN_SCOPE] += out
    rejected = batch.rejected + out
    seen = batch.count + batch.rejected
    message = batch.error_message
    if out:
        text = f"{out} with {REFUSAL_SENTENCES[REFUSED_SERVICE_NOT_IN_SCOPE]}"
        _, _, before = message.partition(": ")
        message = f"refused {rejected} of {seen} spans: {text}" + (f"; {before}" if before else "")
    return SpanBatch(
        columns=columns,
        count=len(keep),
        received=batch.received,
        rejected=rejected,
        error_message=message,
        drops=Counter({k: n for k, n in batch.drops.items() if k[0] in allowed}),
        refused=refused,
        sources=Counter({k: n for k, n in batch.sources.items() if k[0] in allowed}),
    )
