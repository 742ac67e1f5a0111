"""What a model call cost, in USD: the price book the judge prices usage with.

Two sources, the first that knows a model wins:

1. the operator's prices file (`--prices`, `HANDOFFSCOPE_PRICES`): negotiated prices, a
   private or fine-tuned model, a name the table does not know. TOML, one table per model,
   the name exactly as the spans state it (`gen_ai.request.model`)::

       [models."gpt-4o"]
       input_per_mtok = 2.00     # USD per million input tokens
       output_per_mtok = 8.00    # USD per million output tokens

       [models."acme-support-ft"]
       input_per_mtok = 0.30
       output_per_mtok = 1.20

2. `genai-prices` (the Pydantic team's maintained table of providers' list prices, with
   their dates), from the snapshot shipped in its package: offline, never fetched at run
   time, so a collector prices the same way on every machine until it is upgraded. A name
   with a provider prefix (`openai/gpt-4o`, as LiteLLM writes them) is looked up under
   that provider. Prices that changed over time are taken at the call's own time.

A model neither knows — or a call with no model name, or no token counts — has no price:
`cost()` returns None, the judge stores `cost_usd` null and names the model in
`unpriced_models`. Never a guess. The judge prices a call once, when its run is judged,
and stores the figure: a later price change does not rewrite what was spent.

The file is read once per process (the judge's worker processes read it again by path:
a `PriceBook` pickles as its path). A file that cannot be read, is not TOML, or states
anything but two non-negative numbers per model is an error at start-up, naming the
line's model and key — the collector does not start half-priced.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

PER_MTOK = ("input_per_mtok", "output_per_mtok")
"""The two keys of a model's table in the prices file: USD per million tokens."""
MTOK = 1_000_000
CACHE = 4096
"""Distinct (model, tokens, day) prices remembered: a run is judged again as its spans
arrive, and its calls are priced again each time (a tiered price is the table's own
calculation, ~60 µs; a linear one is read once per model and day, `_rates`)."""


class PriceFileError(ValueError):
    """The prices file cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Rate:
    """An override: USD per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float:
        return (
            (input_tokens or 0) * self.input_per_mtok + (output_tokens or 0) * self.output_per_mtok
        ) / MTOK


def parse(text: str, where: str = "prices file") -> dict[str, Rate]:
    """The overrides a prices file states (module doc); PriceFileError says what is wrong."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceFileError(f"{where}: not TOML: {exc}") from None
    unknown = sorted(set(doc) - {"models"})
    if unknown:
        raise PriceFileError(f'{where}: unknown top-level keys {unknown} (want [models."name"])')
    models = doc.get("models", {})
    if not isinstance(models, dict):
        raise PriceFileError(f'{where}: `models` must be a table of [models."name"] tables')
    rates: dict[str, Rate] = {}
    for name, table in models.items():
        here = f'{where}: [models."{name}"]'
        if not name.strip():
            raise PriceFileError(f"{here}: a model name cannot be empty")
        if not isinstance(table, dict):
            raise PriceFileError(f"{here}: must be a table with {' and '.join(PER_MTOK)}")
        extra = sorted(set(table) - set(PER_MTOK))
        if extra:
            raise PriceFileError(f"{here}: unknown keys {extra} (known: {list(PER_MTOK)})")
        values = []
        for key in PER_MTOK:
            if key not in table:
                raise PriceFileError(f"{here}: {key} is missing (USD per million tokens)")
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise PriceFileError(f"{here}: {key} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise PriceFileError(f"{here}: {key} must be a finite number >= 0, got {value!r}")
            values.append(float(value))
        rates[name] = Rate(*values)
    return rates


class PriceBook:
    """Prices usage: the operator's overrides first, then genai-prices' table (module doc)."""

    def __init__(self, overrides: Mapping[str, Rate] | None = None, path: str = "") -> None:
        self.overrides = dict(overrides or {})
        self.path = path
        self.source = f"genai-prices {version('genai-prices')}" + (
            f" and {len(self.overrides)} model(s) from {path}" if path else ""
        )
        """Where prices come from, for the collector's start-up log."""
        # One cache per book: the bound method is what the judge calls.
        self._table = functools.lru_cache(maxsize=CACHE)(_table_cost)

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceBook:
        """The book for a prices file (None or "": the table alone); read once per path."""
        return _load(str(path or ""))

    def __reduce__(self) -> tuple[Any, ...]:
        # A judge worker process reads the file again by path (and caches it there).
        return (_load, (self.path,))

    def known(self, model: str) -> bool:
        """Whether `model` has a price (in the file or the table), at today's prices."""
        return self.cost(model, 1, 1) is not None

    def cost(
        self,
        model: str | None,
        input_tokens: int | None,
        output_tokens: int | None,
        at_ns: int | None = None,
    ) -> float | None:
        """USD for one call's tokens, at the call's time (`at_ns`; None: now); None when the
        call cannot be priced — no model name, no token counts, or a model neither source
        knows."""
        if not model or (input_tokens is None and output_tokens is None):
            return None
        rate = self.overrides.get(model)
        if rate is not None:
            return rate.cost(input_tokens, output_tokens)
        day = None if at_ns is None else at_ns // (86_400 * 10**9)
        return self._table(model, input_tokens or 0, output_tokens or 0, day)


@functools.cache
def _load(path: str) -> PriceBook:
    if not path:
        return PriceBook()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceFileError(f"--prices {path}: cannot read it: {exc.strerror or exc}") from None
    return PriceBook(parse(text, f"--prices {path}"), path)


TIERED = "tiered"
"""`_rates` of a model whose price changes with the prompt's size (genai-prices'
`TieredPrices`: past a threshold of input tokens every token costs the tier's rate)."""


@functools.lru_cache(maxsize=1024)
def _rates(model: str, day: int | None) -> tuple[float, float, float] | str | None:
    """(USD per call, per input token, per output token) of `model` on `day`, read from
    genai-prices once; `TIERED` when its price depends on the prompt's size; None when the
    table does not know it. The table's own calculation costs ~60 µs a call (its unit
    registry), and every call has its own token counts: a linear price is read once per
    model and day, from three probes, and applied in well under a microsecond."""
    from genai_prices.types import TieredPrices

    found = _calc(model, 1, 1, day)
    if found is None:
        return None
    if any(isinstance(p, TieredPrices) for p in found.model_price.__dict__.values()):
        return TIERED
    base = _calc(model, 0, 0, day)
    per_input = _calc(model, MTOK, 0, day)
    per_output = _calc(model, 0, MTOK, day)
    if base is None or per_input is None or per_output is None:
        return None
    fixed = base.total_price
    return (
        float(fixed),
        float((per_input.total_price - fixed) / MTOK),
        float((per_output.total_price - fixed) / MTOK),
    )


def _table_cost(model: str, input_tokens: int, output_tokens: int, day: int | None) -> float | None:
    """genai-prices' price of one call on `day` (days since the epoch; None: today)."""
    rates = _rates(model, day)
    if rates is None:
        return None
    if isinstance(rates, str):  # TIERED
        found = _calc(model, input_tokens, output_tokens, day)
        return None if found is None else float(found.total_price)
    fixed, per_input, per_output = rates
    return fixed + input_tokens * per_input + output_tokens * per_output


def _calc(model: str, input_tokens: int, output_tokens: int, day: int | None) -> Any:
    """genai-prices' `PriceCalculation` for one call, or None when it knows no such model."""
    # Imported here: the table (its snapshot of every provider) loads on the first price,
    # not with every process that imports the collector.
    from genai_prices import Usage, calc_price

    when = None if day is None else dt.datetime.fromtimestamp(day * 86_400, dt.UTC)
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    attempts: list[dict[str, Any]] = [{"model_ref": model}]
    provider, slash, rest = model.partition("/")
    if slash and provider and rest:
        attempts.insert(0, {"model_ref": rest, "provider_id": provider})
    for kw in attempts:
        try:
            return calc_price(usage, genai_request_timestamp=when, **kw)
        except (LookupError, ValueError):
            continue
    return None
