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

Scopes no translator claims by name are read **by meaning**: one whose spans carry
`gen_ai.operation.name` (OpenTelemetry's GenAI conventions) goes to the GenAI translator
(`genai.py`: Pydantic AI, and any framework that follows the conventions), except for its
contract spans (`handoff.*`: a shim in another language, under its own scope name), which
pass untouched. Every other scope is untouched: the shim's own spans (its scope,
`semconv.INSTRUMENTATION_SCOPE`, is never scanned: its exports stay on the lean path) and
spans of sources not supported, which the allowlist refuses by name as before.

A foreign span that is no evidence (an LLM call, a tool run) is *absorbed*: accepted, not
refused — a fan-out from an OpenTelemetry Collector sends every span, and refusing the
LLM spans would make every export a partial failure in the sender's logs.

Adding a source: one module beside this one with a `Translator` subclass, and its class
in `SOURCES` below. Nothing source-specific belongs in this file.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from handoffscope.collector.otlp.lean_trace import merged
from handoffscope.collector.processor.translate.adk import AdkTranslator
from handoffscope.collector.processor.translate.agent_framework import AgentFrameworkTranslator
from handoffscope.collector.processor.translate.autogen import AutoGenTranslator
from handoffscope.collector.processor.translate.base import Evidence, ForeignSpan, Translator
from handoffscope.collector.processor.translate.genai import OPERATION, GenAiTranslator
from handoffscope.collector.processor.translate.logfire import LogfireTranslator
from handoffscope.collector.processor.translate.openinference import OpenInferenceTranslator
from handoffscope.collector.processor.translate.openinference_langgraph import (
    OpenInferenceLangGraphTranslator,
)
from handoffscope.collector.processor.translate.openllmetry import OpenLLMetryTranslator
from handoffscope.collector.processor.translate.openllmetry_langgraph import (
    OpenLLMetryLangGraphTranslator,
)
from handoffscope.collector.processor.translate.semantic_kernel import (
    SemanticKernelTranslator,
)
from handoffscope.collector.processor.translate.strands import StrandsTranslator
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
    AgentFrameworkTranslator,
    SemanticKernelTranslator,
    # Last, and claims no scope by name: reads the unclaimed scopes that carry GenAI spans.
    GenAiTranslator,
)
"""Every source the collector translates (docs/foreign-spans.md has the table)."""

STATUS_DESCRIPTION = "status.description"
"""Drop label of a foreign span's status description (free text: exception reprs)."""
EVENT = "event"
LINK = "link"
_OPERATION_KEY = b"\n" + bytes([len(OPERATION)]) + OPERATION.encode()
"""`gen_ai.operation.name` as the key of an encoded `KeyValue` (field 1, its length, its
bytes): what `claims_any` looks for in the lean read's attribute bytes, unparsed."""
_CONTRACT_SPANS = frozenset(sc.SPAN_NAMES)
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
    scopes_read: Counter = field(default_factory=Counter)
    """(service, scope name, source) -> foreign spans read: which translator read which
    scope of which service (the allowlist's per-source report, `GET /api/v1/sources`; for
    the by-meaning source `genai` the scope is the only name of the framework). Scope names
    are the sender's choice: the allowlist bounds them before they are kept anywhere."""


class Translators:
    """The registry: scope name -> translator. One per collector; stateless per export."""

    def __init__(
        self,
        sources: Iterable[type[Translator]] = SOURCES,
        by_meaning: type[Translator] | None = GenAiTranslator,
    ) -> None:
        """`by_meaning`: the translator of unclaimed scopes that carry GenAI spans (None:
        such scopes are untouched, as before)."""
        self._by_scope: dict[str, Translator] = {}
        self._by_meaning = by_meaning() if by_meaning is not None else None
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
        by_meaning = self._by_meaning is not None
        if not self._by_scope and not by_meaning:
            return False
        for rs in export.resource_spans:
            for ss in rs.scope_spans:
                name = merged(InstrumentationScope, ss.scope).name if ss.scope else ""
                if name in self._by_scope:
                    return True
                if by_meaning and name != sc.INSTRUMENTATION_SCOPE and _genai_lean(ss):
                    return True
        return False

    def translate(self, request: ExportTraceServiceRequest, service_of) -> Translation | None:
        """Replace, in place, the spans of every claimed scope (and of every unclaimed
        scope that carries GenAI spans, read by meaning) by their evidence.

        `service_of(resource_attributes)` names the service (the allowlist's rule).
        Returns None when no scope of the export is claimed (the common case for the
        shim's own exports: one dict lookup per scope).
        """
        result: Translation | None = None
        get = self._by_scope.get
        by_meaning = self._by_meaning
        for rs in request.resource_spans:
            service = None
            # A translator may read a span's parent (ForeignSpan.parent) when the source
            # names the agent only there. One that `joins_scopes` (a framework tracing each
            # layer under a scope of its own: Semantic Kernel) reads it across every scope
            # of the resource it claims: those spans by id, collected before any scope is
            # rewritten below (the messages stay readable after their scope is emptied).
            claimed: dict[int, dict[bytes, Span]] = {}
            for ss in rs.scope_spans:
                owner = get(ss.scope.name)
                if owner is not None and owner.joins_scopes:
                    claimed.setdefault(id(owner), {}).update((s.span_id, s) for s in ss.spans)
            for ss in rs.scope_spans:
                scope = ss.scope.name
                translator = get(scope)
                if translator is None:
                    if by_meaning is None or scope == sc.INSTRUMENTATION_SCOPE:
                        continue
                    if not _genai(ss.spans):
                        continue
                    translator = by_meaning
                if result is None:
                    result = Translation()
                if service is None:
                    service = service_of(rs.resource.attributes)
                out: list[Span] = []
                kept = 0
                # Else the spans of the scope by id.
                batch = claimed.get(id(translator)) or {span.span_id: span for span in ss.spans}
                for span in ss.spans:
                    if translator is by_meaning and span.name in _CONTRACT_SPANS:
                        out.append(span)  # a shim's own span under its own scope name
                        kept += 1
                        continue
                    _count_drops(translator.source, service, span, result.drops)
                    result.foreign += 1
                    result.by_source[translator.source] += 1
                    result.scopes_read[(service, scope, translator.source)] += 1
                    out.extend(_evidence_spans(translator, span, batch, scope))
                result.emitted += len(out) - kept
                del ss.spans[:]
                ss.spans.extend(out)
        return result


def _genai_lean(scope_spans) -> bool:
    """Whether a span of the lean read's scope may carry `gen_ai.operation.name`: its
    encoded key searched in the scope's attribute bytes joined (the search in C: 0.4–1.1
    ms per 512 spans measured, a per-attribute `startswith` loop half as much again;
    the shim's scope is never scanned). A false
    positive (the key's bytes inside a value) only sends the export through the full
    parse, where `translate` decides by the attribute's key."""
    joined = b"".join(itertools.chain.from_iterable(s.attributes for s in scope_spans.spans))
    return _OPERATION_KEY in joined


def _genai(spans: Iterable[Span]) -> bool:
    return any(kv.key == OPERATION for s in spans for kv in s.attributes)


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
    translator: Translator, span: Span, batch: Mapping[bytes, Span] | None = None, scope: str = ""
) -> list[Span]:
    view = ForeignSpan(span, batch, scope)
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
