"""A verdict in words, and the rejection it counts as: what the run detail, the runs list
and the weekly review say about a verdict, decided here once.

- `run_why` — a run's verdict as one sentence: its first failing handoff's why, or the
  run-level fact (the cycle, the claim, the crash or limit, the missing verifier).
- `not_observed_note` — what `healthy` cannot speak for on a run (checks its source
  cannot see).
- `rejection_bucket` — the reason a handoff counts under in the weekly rejection rate:
  `route` for `route_rejected`, the receiver's own reason for `contract_rejected`, none
  for anything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .. import semconv as sc

ROUTE_BUCKET = "route"
"""The weekly review's reason for `route_rejected` (contract rejections use their own)."""
REJECTION_BUCKETS = (ROUTE_BUCKET, *sc.REJECTION_REASONS)
"""Every reason a rejection is counted under, route first."""


class JudgedHandoff(Protocol):
    """What `run_why` reads of a run's handoffs (the query API's `Handoff` has it)."""

    @property
    def verdict(self) -> str: ...
    @property
    def why(self) -> str | None: ...
    @property
    def from_agent(self) -> str | None: ...
    @property
    def to_agent(self) -> str | None: ...
    @property
    def failed_boundary(self) -> str | None: ...


def rejection_bucket(verdict: str, rejection_reason: str | None) -> str:
    """The reason a handoff counts under in the weekly review ("" for none).

    Rejections never depend on time (they precede every time-based rule), so the verdict
    at any time decides it.
    """
    if verdict == sc.ROUTE_REJECTED:
        return ROUTE_BUCKET
    if verdict == sc.CONTRACT_REJECTED:
        return rejection_reason or ""
    return ""


def run_why(
    verdict: str,
    handoffs: Sequence[JudgedHandoff],
    *,
    status: str | None,
    service: str | None,
    loop_cycle: Sequence[str] = (),
    unobserved: Sequence[str] = (),
) -> str:
    """The run's verdict in words: its first failing handoff's why, or the run-level fact."""
    for h in handoffs:
        if h.verdict == verdict and h.why:
            edge = f"{h.from_agent or '?'} → {h.to_agent or '?'}"
            return f"{edge} ({h.failed_boundary or 'handoff'}): {h.why}"
    if verdict == sc.LOOP:
        cycle = " → ".join(loop_cycle)
        return f"the run cycles without new work{': ' + cycle if cycle else ''}"
    if verdict == sc.FALSE_COMPLETE:
        return "the run claimed completion without a passing verifier"
    if verdict == sc.RUN_FAILED:
        if status == sc.RUN_STATUS_MAX_TURNS:
            return "the run hit its turn or recursion limit"
        return "the run crashed (status failed)"
    if verdict == sc.UNVERIFIED:
        return f"completed, but no verifier is reported by {service or 'this service'}: add record_outcome"
    if verdict == sc.HEALTHY and unobserved:
        return "every observed boundary passed"
    return sc.VERDICT_LABELS.get(verdict, verdict)


def not_observed_note(unobserved: Sequence[str], source_label: str | None = None) -> str | None:
    """What `healthy` cannot speak for on this run (the source cannot see these checks).

    A run translated from another instrumentation's spans says which (`source_label`,
    e.g. "OpenInference"), and that waits and verifier outcomes are never in them.
    """
    if source_label is not None:
        seen = [*unobserved, sc.BOUNDARY_WAIT + "s", "outcomes"]
        return f"from {source_label} spans: " + ", ".join(seen) + " not observed"
    if not unobserved:
        return None
    return "not observed by this source: " + ", ".join(unobserved)
