"""`GET /api/v1/sources`: every instrumentation that sent spans, and what became of them.

The allowlist counts every span it sees per (service, instrumentation scope, outcome) —
kept as evidence, refused and why, or read by a translator — and the writer adds the
counts to the store's `sources` table with each commit (processor/allowlist.py). Here the
outcomes of one (service, scope) are folded into one `Source` with a status and one
sentence of advice, so a team that pointed an exporter at the collector and sees an empty
board is told why: which scope sent what, that no translator reads it, and where the list
of judged setups is (docs/foreign-spans.md, README "Already tracing?").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..processor.allowlist import (
    REFUSAL_SENTENCES,
    REFUSED_NOT_EVIDENCE,
    SOURCE_EVIDENCE,
    SOURCE_REFUSED,
    SOURCE_TRANSLATED,
)
from ..processor.translate import Translator
from . import models as m

JUDGED, READ, REFUSED = "judged", "read", "refused"


def translator_infos(translators: Iterable[type[Translator]]) -> list[m.TranslatorInfo]:
    return [
        m.TranslatorInfo(source=t.source, label=t.label or t.source, scopes=list(t.scopes))
        for t in translators
    ]


def fold(
    rows: Iterable[Mapping[str, Any]],
    labels: Mapping[str, str],
    iso: Callable[[int | None], str | None],
) -> list[m.Source]:
    """Rows of `query/sources.sql` (one per service, scope, outcome) as one Source per
    (service, scope), in the rows' order (most recently seen first)."""
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        entry = by_key.setdefault(
            (row["service"], row["scope"]),
            {"evidence": 0, "translated": 0, "translator": None, "refused": {}, "first": None},
        )
        outcome, count = row["outcome"], int(row["count"])
        if outcome == SOURCE_EVIDENCE:
            entry["evidence"] += count
        elif outcome.startswith(SOURCE_TRANSLATED):
            entry["translated"] += count
            entry["translator"] = outcome[len(SOURCE_TRANSLATED) :]
        elif outcome.startswith(SOURCE_REFUSED):
            reason = outcome[len(SOURCE_REFUSED) :]
            entry["refused"][reason] = entry["refused"].get(reason, 0) + count
        first, last = int(row["first_seen_ns"]), int(row["last_seen_ns"])
        entry["first"] = first if entry["first"] is None else min(entry["first"], first)
        entry["last"] = max(entry.get("last", last), last)
    return [_source(service, scope, e, labels, iso) for (service, scope), e in by_key.items()]


def _source(
    service: str,
    scope: str,
    e: dict[str, Any],
    labels: Mapping[str, str],
    iso: Callable[[int | None], str | None],
) -> m.Source:
    translator = e["translator"]
    label = labels.get(translator, translator) if translator else None
    refused = sum(e["refused"].values())
    # A translated scope's spans were replaced by the evidence derived from them: the
    # sender sent `translated` spans; evidence and refusals count the contract spans.
    received = e["translated"] if translator else e["evidence"] + refused
    status = JUDGED if e["evidence"] else READ if translator else REFUSED
    return m.Source(
        service=service,
        scope=scope,
        status=status,
        translator=translator,
        translator_label=label,
        spans_received=received,
        evidence_spans=e["evidence"],
        refused_spans=refused,
        refused_by_reason=dict(sorted(e["refused"].items())),
        first_seen_at=iso(e["first"]),
        last_seen_at=iso(e["last"]),
        advice=_advice(status, scope, label, e["refused"]),
    )


def _advice(status: str, scope: str, label: str | None, refused: Mapping[str, int]) -> str:
    if status == READ:
        return (
            f"Read as {label} spans, but none was handoff evidence yet (model and tool "
            "calls only): a run appears once an agent runs or hands work to another."
        )
    if status == REFUSED and set(refused) == {REFUSED_NOT_EVIDENCE}:
        return (
            f"Not judged: no translator reads the instrumentation scope '{scope}', and its "
            "spans are not handoff evidence. See docs/foreign-spans.md for the setups that "
            "are judged, or add handoffscope's instrumentor for your framework."
        )
    worst = max(refused, key=lambda r: refused[r], default=None)
    if worst is not None:
        prefix = "Judged in part" if status == JUDGED else "Not judged"
        return f"{prefix}: spans refused with {REFUSAL_SENTENCES.get(worst, worst)}."
    if label:
        return f"Judged from {label} spans."
    return "Judged: handoff evidence (the handoffscope instrumentation or a compatible shim)."
