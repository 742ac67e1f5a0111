"""What work cost, in words: tokens, model calls and dollars from the API's `Usage`.

The collector answers `usage` as `{input_tokens, output_tokens, model_calls, cost_usd, model,
unpriced_models, unpriced}` (docs/api.md, Usage). A null figure means no source reported it
and a null `cost_usd` means it could not be priced (an unknown model, or a call without
token counts): neither is ever shown as 0 or $0. No usage at all reads "—"; usage without a
price reads "not priced" and names the models that could not be priced where there is room.
"""

from __future__ import annotations

import math
from typing import Any

from handoffscope.dashboard import style

NOT_REPORTED = "—"
NOT_PRICED = "not priced"


def _number(value: object) -> float | None:
    """A figure from the wire, or None when it is missing (null, NaN, not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def usage_of(value: object) -> dict[str, Any] | None:
    """The `Usage` object, or None when the answer carries none (null, NaN in a frame)."""
    return value if isinstance(value, dict) else None


def money(usd: object) -> str:
    """Dollars with a precision that keeps fractions of a cent: "$12.34", "$0.50", "$0.0123",
    "$0.0000450"; None (not priced) is "not priced", never "$0"."""
    amount = _number(usd)
    if amount is None:
        return NOT_PRICED
    if amount == 0:
        return "$0.00"
    if abs(amount) >= 0.1:
        return f"${amount:,.2f}"
    # Three significant figures below a dime: an LLM call costs fractions of a cent.
    digits = 2 - math.floor(math.log10(abs(amount)))
    return f"${amount:.{min(digits, 8)}f}"


def tokens(n: object) -> str:
    """A token count with thousands separators; a missing count is "—" (not reported)."""
    amount = _number(n)
    return NOT_REPORTED if amount is None else f"{int(amount):,}"


def total_tokens(usage: object) -> int | None:
    """Input plus output tokens, or None when neither was reported."""
    u = usage_of(usage)
    if u is None:
        return None
    parts = [_number(u.get("input_tokens")), _number(u.get("output_tokens"))]
    known = [p for p in parts if p is not None]
    return int(sum(known)) if known else None


def unpriced_models(usage: object) -> list[str]:
    """The models the collector could not price ('' is a call that named none)."""
    u = usage_of(usage) or {}
    models = u.get("unpriced_models")
    if not isinstance(models, list):
        return []
    return [str(m) if m else "(no model named)" for m in models]


def price(usage: object) -> str:
    """The dollar figure of a usage: "$0.0123", "not priced", or "—" with no usage. A sum
    over many (an edge, a week) prices what it can and counts the rest in `unpriced`: "$0.0123
    + 2 not priced", and "not priced" when nothing in it could be (its 0 is no price)."""
    u = usage_of(usage)
    if u is None:
        return NOT_REPORTED
    usd = _number(u.get("cost_usd"))
    left_out = int(_number(u.get("unpriced")) or 0)
    if left_out and not usd:
        return NOT_PRICED
    return money(usd) + (f" + {left_out:,} {NOT_PRICED}" if left_out else "")


def cell(usage: object) -> str:
    """One table cell: "1,234 tokens · $0.0123", "1,234 tokens · not priced", "—"."""
    u = usage_of(usage)
    n = total_tokens(u)
    if u is None or (n is None and _number(u.get("model_calls")) is None):
        return NOT_REPORTED
    amount = price(u)
    return f"{tokens(n)} tokens · {amount}" if n is not None else amount


def inert(words: str) -> str:
    """Our own figures for Markdown: Streamlit reads `$…$` as a formula, so two amounts in
    one line would turn into maths; escaped, each dollar sign is shown as typed."""
    return words.replace("$", "\\$")


def line(usage: object, *, markdown: bool = False) -> str:
    """A sentence for a run's facts: "1,200 tokens in, 300 out, 4 model calls, $0.0123";
    unpriced usage names the models the price table lacks. With `markdown`, model names (wire
    values) are inert code spans (style.md) and dollar signs escaped (`inert`)."""
    u = usage_of(usage)
    if u is None:
        return "not reported"
    calls = _number(u.get("model_calls"))
    parts = [
        f"{tokens(u.get('input_tokens'))} tokens in",
        f"{tokens(u.get('output_tokens'))} out",
    ]
    if calls is not None:
        parts.append(f"{int(calls):,} model call{'s' if calls != 1 else ''}")
    quote = style.md if markdown else str
    if _number(u.get("cost_usd")) is not None and not unpriced_models(u):
        parts.append(inert(price(u)) if markdown else price(u))
    else:
        models = unpriced_models(u)
        parts.append(NOT_PRICED + (f": {', '.join(quote(m) for m in models)}" if models else ""))
    return ", ".join(parts)


def sort_key(burned: object, tokens_burned: object) -> tuple[int, float, float]:
    """Most expensive first: priced loops by burned cost, then burned tokens; loops whose
    burn could not be priced after every priced one (by tokens); nothing reported last."""
    u = usage_of(burned) or {}
    usd = _number(u.get("cost_usd"))
    n = _number(tokens_burned)
    if usd is not None:
        return (0, -usd, -(n or 0))
    if n is not None:
        return (1, 0.0, -n)
    return (2, 0.0, 0.0)


def wasted(usage: object, unhealthy: object) -> str:
    """The share of an edge's spend that went to handoffs judged unhealthy: by dollars when
    both sums are priced, else by tokens (said so); "—" when the edge reported no usage.
    An edge sum's `cost_usd` is what could be priced (docs/api.md, Usage)."""
    u, bad = usage_of(usage), usage_of(unhealthy)
    if u is None:
        return NOT_REPORTED
    spent = _number(u.get("cost_usd"))
    if spent and not _number(u.get("unpriced")):
        lost = _number((bad or {}).get("cost_usd")) or 0.0
        return _share(lost / spent)
    n = total_tokens(u)
    if not n:
        return NOT_REPORTED
    return _share((total_tokens(bad) or 0) / n) + " of tokens"


def _share(share: float) -> str:
    return f"{share * 100:.0f} %" if share == 0 or share >= 0.01 else f"{share * 100:.1f} %"
