"""What pricing a model call costs the judge: the collector's price book against
genai-prices' own calculation, measured in the same run.

The judge prices every model call of a run each time it judges the run (a run is judged
again as its spans arrive). Calls have their own token counts, so a cache of answers helps
little; the book reads a linear price once per model and day and applies it itself, and
leaves tiered prices (a rate that changes past a prompt size) to the table (prices.py).

Workload: N calls with distinct token counts over a mix of models — list-priced (gpt-4o,
gpt-4.1-mini, gemini-2.0-flash), tiered (claude-sonnet-4-5) and one no table knows —
priced cold (a fresh book: first sight of each model) and warm. Baseline:
`genai_prices.calc_price` on the same calls. Reported: µs per call and the ratio.

    .venv/bin/python bench/bench_prices.py [--calls N]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time

from genai_prices import Usage, calc_price

from handoffscope.collector import prices
from handoffscope.collector.prices import PriceBook

MODELS = ("gpt-4o", "gpt-4.1-mini", "gemini-2.0-flash", "claude-sonnet-4-5", "acme-private-9")


def workload(n: int) -> list[tuple[str, int, int]]:
    rng = random.Random(7)
    return [(rng.choice(MODELS), rng.randint(200, 9_000), rng.randint(10, 900)) for _ in range(n)]


def baseline(calls: list[tuple[str, int, int]]) -> float:
    t0 = time.perf_counter()
    for model, tin, tout in calls:
        with contextlib.suppress(LookupError):  # the model no table knows
            calc_price(Usage(input_tokens=tin, output_tokens=tout), model_ref=model)
    return (time.perf_counter() - t0) / len(calls)


def book(calls: list[tuple[str, int, int]]) -> float:
    cost = PriceBook().cost
    t0 = time.perf_counter()
    for model, tin, tout in calls:
        cost(model, tin, tout)
    return (time.perf_counter() - t0) / len(calls)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--calls", type=int, default=20_000, help="model calls priced (default 20,000)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = p.parse_args(argv)
    calls = workload(args.calls)
    calc_price(Usage(input_tokens=1, output_tokens=1), model_ref="gpt-4o")  # load the table
    base, cold, warm = [], [], []
    for _ in range(args.rounds):
        base.append(baseline(calls))
        prices._rates.cache_clear()  # first sight of each model, as a fresh collector
        cold.append(book(calls))
        warm.append(book(calls))
    b, c, w = (sorted(x)[len(x) // 2] for x in (base, cold, warm))
    print(f"calls priced                      {args.calls:,} over {len(MODELS)} models")
    print(f"genai-prices calc_price (baseline) {b * 1e6:8.2f} µs/call")
    print(f"price book, first sight of models  {c * 1e6:8.2f} µs/call  ratio {c / b:.3f}")
    print(f"price book, models seen            {w * 1e6:8.2f} µs/call  ratio {w / b:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
