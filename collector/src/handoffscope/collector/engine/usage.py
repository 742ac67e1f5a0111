"""What the work cost: a run's usage reports placed in legs, summed, and priced.

A **leg** is the work one agent does while it holds control: from the handoff that gave
it control (or the run's start) to the next transfer (or the run's end). Usage arrives
three ways (docs/semconv.md, "Usage"), and each says which leg it belongs to:

- on a `handoff.request` (a shim): the sender's leg, which that request ends — the leg
  the sender got from the latest earlier handoff *to* it, else the run's first leg;
- on `handoff.run` (a shim, at the run's end): the last leg — the leg of the agent that
  held control when the run ended;
- on `handoff.usage` (one model call, translated from another instrumentation): the leg
  its agent (`gen_ai.agent.name`) held when the call started — the latest earlier
  handoff to that agent; an agent no handoff named (one called as a tool) works inside
  the leg that held control then, and a call without an agent counts in the last leg.

Leg 0 is the run's first leg (before any handoff); leg i+1 is the leg handoff i (in run
order) gave its destination: that leg is "the handoff's usage". A loop's usage is the
sum of the legs from its first repeat on: what the cycling burned.

Money: each report is priced on its own (its model, its token counts, its time) by the
collector's price book when the run is judged, and stored with the row; a report that
cannot be priced (an unknown or unnamed model, no token counts) makes every sum that
contains it `cost_usd = None`, and its model is named in `unpriced` — never a guess.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

Price = Callable[[str | None, int | None, int | None, int | None], float | None]
"""(model, input tokens, output tokens, at ns) -> USD, or None when it cannot be priced."""


class Report(NamedTuple):
    """One usage report as the spans state it (absent attributes are None)."""

    input_tokens: int | None
    output_tokens: int | None
    model_calls: int | None
    model: str | None


class Usage(NamedTuple):
    """Usage summed over one or more reports: a leg, a run, a loop, an edge."""

    input_tokens: int | None
    """None when no report stated it ("not reported" is not 0)."""
    output_tokens: int | None
    model_calls: int | None
    cost_usd: float | None
    """None when any report in the sum could not be priced (see `unpriced`), or none reported tokens."""
    model: str | None
    """The model with the most calls (ties: the first reported)."""
    unpriced: tuple[str, ...]
    """Models of the reports that could not be priced ('' for a report naming none)."""

    @property
    def tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else a + b


def total(priced: Iterable[tuple[Report, float | None]]) -> Usage | None:
    """The sum of priced reports; None when there are none."""
    tin = tout = calls = None
    cost: float | None = 0.0
    any_cost = False
    unpriced: set[str] = set()
    by_model: Counter[str] = Counter()
    n = 0
    for r, usd in priced:
        n += 1
        tin, tout = _add(tin, r.input_tokens), _add(tout, r.output_tokens)
        calls = _add(calls, r.model_calls)
        if r.model:
            by_model[r.model] += r.model_calls or 1
        if usd is None:
            unpriced.add(r.model or "")
        else:
            any_cost = True
            cost = (cost or 0.0) + usd
    if n == 0:
        return None
    if unpriced or not any_cost:
        cost = None
    model = by_model.most_common(1)[0][0] if by_model else None
    return Usage(tin, tout, calls, cost, model, tuple(sorted(unpriced)))


def combine(parts: Iterable[Usage | None]) -> Usage | None:
    """The sum of already summed usages (a run's legs, a loop's legs)."""
    tin = tout = calls = None
    cost: float | None = 0.0
    unpriced: set[str] = set()
    by_model: Counter[str] = Counter()
    n = 0
    for u in parts:
        if u is None:
            continue
        n += 1
        tin, tout, calls = (
            _add(tin, u.input_tokens),
            _add(tout, u.output_tokens),
            _add(calls, u.model_calls),
        )
        if u.model:
            by_model[u.model] += u.model_calls or 1
        unpriced.update(u.unpriced)
        cost = None if cost is None or u.cost_usd is None else cost + u.cost_usd
    if n == 0:
        return None
    model = by_model.most_common(1)[0][0] if by_model else None
    return Usage(tin, tout, calls, cost, model, tuple(sorted(unpriced)))


class Transfer(NamedTuple):
    """What leg placement needs of one handoff (in run order)."""

    from_agent: str | None
    to_agent: str | None
    first_seen_ns: int
    sent: tuple[Report, int] | None
    """The usage its request reported (the sender's leg) and that span's start."""


class Loose(NamedTuple):
    """A usage report that names no handoff: on `handoff.run` or `handoff.usage`."""

    start_ns: int
    agent: str | None
    """The calling agent (`handoff.usage`); None: the run's last leg."""
    report: Report


def legs(
    transfers: Sequence[Transfer], loose: Iterable[Loose], holder: str | None, price: Price
) -> list[Usage | None]:
    """Each leg's usage: [leg 0 (the run's first), the leg each transfer gave its destination...]."""
    n = len(transfers)
    placed: list[list[tuple[Report, float | None]]] = [[] for _ in range(n + 1)]
    # Run order (by turn) may disagree with clocks: the latest start so far, so bisect works.
    starts = list(itertools.accumulate((t.first_seen_ns for t in transfers), max))
    named = {t.from_agent for t in transfers if t.from_agent}
    to_agent: dict[str, list[int]] = {}
    for i, t in enumerate(transfers):
        if t.to_agent:
            to_agent.setdefault(t.to_agent, []).append(i)

    def leg_of(agent: str | None, before: int) -> int:
        """The leg `agent` held before transfer index `before` (exclusive)."""
        for i in reversed(to_agent.get(agent or "", ())):
            if i < before:
                return i + 1
        return 0

    for j, t in enumerate(transfers):
        if t.sent is not None:
            report, at = t.sent
            placed[leg_of(t.from_agent, j)].append((report, _price(price, report, at)))
    last = leg_of(holder, n) if holder else n
    for u in loose:
        if u.agent is None:
            leg = last
        else:
            # Transfers seen up to the call's start: the agent's latest leg among them, or
            # — an agent no handoff named — whichever leg held control at that time.
            seen = bisect.bisect_right(starts, u.start_ns)
            leg = leg_of(u.agent, seen) if u.agent in to_agent or u.agent in named else seen
        placed[leg].append((u.report, _price(price, u.report, u.start_ns)))
    return [total(p) if p else None for p in placed]


def _price(price: Price, r: Report, at: int | None) -> float | None:
    if r.input_tokens is None and r.output_tokens is None:
        return None
    return price(r.model, r.input_tokens, r.output_tokens, at)


def no_price(model, input_tokens, output_tokens, at_ns) -> None:
    """The price when the collector has no price book: nothing is priced."""
    return None


NANO = 10**9


def nano_usd(usd: float | None) -> int:
    """USD as integer nano-dollars, for rollups kept exact by +/- deltas (floats drift)."""
    return 0 if usd is None else round(usd * NANO)
