"""Translators: other instrumentations' spans in, contract evidence out, content dropped.

Runs in the processor stage BEFORE the allowlist (docs/foreign-spans.md). For every
scope of an export whose instrumentation scope name a registered translator claims, each
span is replaced by the contract spans its translator derives (`base.Evidence`), and
everything of the foreign span — its name, every attribute, every event and its
attributes, every link and its attributes, its status description — is dropped. What was
dropped is counted per (service, `<source>:<attribute name>`), through the allowlist's
bounded drop counters (numeric path segments such as `llm.input_messages.3.message` are
folded to `N`, so a long conversation does not mint a label per message).

The contract spans then pass through the allowlist like any shim's: it is the one gate.
Scopes no translator claims are untouched (the shim's own spans; spans of sources not
supported yet, which the allowlist refuses by name as before).

A foreign span that is no evidence (an LLM call, a tool run) is *absorbed*: accepted, not
refused — a fan-out from an OpenTelemetry Collector sends every span, and refusing the
LLM spans would make every export a partial failure in the sender's logs.

Adding a source: one module beside this one with a `Translator` subclass, and its class
in `SOURCES` below. Nothing source-specific belongs in this file.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from handoffscope.collector.processor.translate.adk import AdkTranslator
from handoffscope.collector.processor.translate.autogen import AutoGenTranslator
from handoffscope.collector.processor.translate.base import Evidence, ForeignSpan, Translator
from handoffscope.collector.processor.translate.logfire import LogfireTranslator
from handoffscope.collector.processor.translate.openinference import OpenInferenceTranslator
from handoffscope.collector.processor.translate.openinference_langgraph import (
    OpenInferenceLangGraphTranslator,
)
from handoffscope.collector.processor.translate.openllmetry import OpenLLMetryTranslator
from handoffscope.collector.processor.translate.openllmetry_langgraph import (
    OpenLLMetryLangGraphTranslator,
)
from handoffscope.collector.processor.translate.strands import StrandsTranslator
from handoffscope.collector.receiver.lean_trace import merged
from handoffscope.instrumentation import semconv as sc

log = logging.getLogger(__name__)

SOURCES: tuple[type[Translator], ...] = (
    OpenInferenceTranslator,
    OpenInferenceLangGraphTranslator,
    OpenLLMetryTranslator,
    OpenLLMetryLangGraphTranslator,
    LogfireTranslator,
    AdkTranslator,
    StrandsTranslator,
    AutoGenTranslator,
)
"""Every source the collector translates (docs/foreign-spans.md has the table)."""

STATUS_DESCRIPTION = "status.description"
"""Drop label of a foreign span's status description (free text: exception reprs)."""
EVENT = "event"
LINK = "link"
_DIGITS = re.compile(r"(?<=\.)\d+(?=\.|$)")


def drop_label(source: str, name: str) -> str:
    """`<source>:<name>` with numeric path segments folded to `N` (bounded label set)."""
    return f"{source}:{_DIGITS.sub('N', name)}"


@dataclass
class Translation:
    """What translating one export did (the allowlist folds it into its SpanBatch)."""

    foreign: int = 0
    """Foreign spans read (and removed from the export)."""
    emitted: int = 0
    """Contract spans put in their place."""
    drops: Counter = field(default_factory=Counter)
    """(service, drop label) -> values dropped."""
    by_source: Counter = field(default_factory=Counter)
    """source -> foreign spans read."""


class Translators:
    """The registry: scope name -> translator. One per collector; stateless per export."""

    def __init__(self, sources: Iterable[type[Translator]] = SOURCES) -> None:
        self._by_scope: dict[str, Translator] = {}
        for cls in sources:
            t = cls()
            if not sc.CODE_PATTERN.match(t.source):
                raise ValueError(f"translator source {t.source!r} is not a code")
            for scope in t.scopes:
                if scope in self._by_scope:
                    raise ValueError(f"scope {scope!r} claimed twice")
                self._by_scope[scope] = t

    @property
    def scopes(self) -> Sequence[str]:
        return tuple(self._by_scope)

    def claims_any(self, export) -> bool:
        """Whether a translator claims a scope of `export`, read by `parse_lean` (its
        scopes are encoded bytes). Raises protobuf's DecodeError on a malformed scope."""
        if not self._by_scope:
            return False
        for rs in export.resource_spans:
            for ss in rs.scope_spans:
                if ss.scope:
                    name = merged(InstrumentationScope, ss.scope).name
                    if name in self._by_scope:
                        return True
                elif "" in self._by_scope:
                    return True
        return False

    def translate(self, request: ExportTraceServiceRequest, service_of) -> Translation | None:
        """Replace, in place, the spans of every claimed scope by their evidence.

        `service_of(resource_attributes)` names the service (the allowlist's rule).
        Returns None when no scope of the export is claimed (the common case for the
        shim's own exports: one dict lookup per scope).
        """
        result: Translation | None = None
        get = self._by_scope.get
        for rs in request.resource_spans:
            service = None
            for ss in rs.scope_spans:
                translator = get(ss.scope.name)
                if translator is None:
                    continue
                if result is None:
                    result = Translation()
                if service is None:
                    service = service_of(rs.resource.attributes)
                out: list[Span] = []
                # Spans of the scope by id: a translator may read a span's parent
                # (ForeignSpan.parent) when the source names the agent only there.
                batch = {span.span_id: span for span in ss.spans}
                for span in ss.spans:
                    _count_drops(translator.source, service, span, result.drops)
                    result.foreign += 1
                    result.by_source[translator.source] += 1
                    out.extend(_evidence_spans(translator, span, batch))
                result.emitted += len(out)
                del ss.spans[:]
                ss.spans.extend(out)
        return result


def _count_drops(source: str, service: str, span: Span, drops: Counter) -> None:
    for kv in span.attributes:
        drops[(service, drop_label(source, kv.key))] += 1
    for event in span.events:
        for kv in event.attributes:
            drops[(service, drop_label(source, f"{EVENT}.{kv.key}"))] += 1
    for link in span.links:
        for kv in link.attributes:
            drops[(service, drop_label(source, f"{LINK}.{kv.key}"))] += 1
    if span.status.message:
        drops[(service, drop_label(source, STATUS_DESCRIPTION))] += 1


def _evidence_spans(
    translator: Translator, span: Span, batch: Mapping[bytes, Span] | None = None
) -> list[Span]:
    view = ForeignSpan(span, batch)
    try:
        evidence = translator.translate(view)
        run_id = translator.run_id(view) if evidence else ""
        conversation = translator.conversation_id(view) if evidence else None
    except Exception:  # the sender's data, whatever its shape: absorb, never fail the export
        log.debug("translator %s failed on a span", translator.source, exc_info=True)
        return []
    out = []
    for k, ev in enumerate(evidence):
        attrs = dict(ev.attributes)
        attrs.setdefault(sc.RUN_ID, run_id)
        if conversation:
            attrs.setdefault(sc.GEN_AI_CONVERSATION_ID, conversation)
        attrs[sc.SOURCE] = translator.source
        if sc.HANDOFF_ID in attrs and translator.unobserved:
            attrs.setdefault(sc.UNOBSERVED, list(translator.unobserved))
        out.append(
            Span(
                trace_id=span.trace_id,
                span_id=span.span_id if k == 0 else _derived_span_id(span.span_id, k),
                name=ev.name,
                start_time_unix_nano=ev.start_ns
                if ev.start_ns is not None
                else span.start_time_unix_nano,
                end_time_unix_nano=ev.end_ns if ev.end_ns is not None else span.end_time_unix_nano,
                attributes=[_key_value(key, value) for key, value in attrs.items()],
            )
        )
    return out


def _derived_span_id(span_id: bytes, k: int) -> bytes:
    """A second (third...) piece of evidence of one span needs its own span id: the writer
    de-duplicates re-sent spans by (trace id, span id). Derived, so a re-send derives the
    same id and is still recognised as one."""
    return hashlib.blake2b(span_id + bytes([k]), digest_size=8).digest()


def _key_value(key: str, value: object) -> KeyValue:
    any_value = AnyValue()
    if isinstance(value, bool):
        any_value.bool_value = value
    elif isinstance(value, int):
        any_value.int_value = value
    elif isinstance(value, str):
        any_value.string_value = value
    elif isinstance(value, (list, tuple)):
        for item in value:
            any_value.array_value.values.add(string_value=str(item))
    return KeyValue(key=key, value=any_value)


__all__ = ["Evidence", "ForeignSpan", "SOURCES", "Translation", "Translator", "Translators"]
