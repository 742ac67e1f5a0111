"""What the shim and adapter benchmarks share: a null exporter (so the network is not what
is measured) and the adapter benchmarks' comparison — warm-up both ways, then rounds that
alternate the bare workload and the instrumented one (drift on a shared machine hits both),
medians compared — with its report."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from handoffscope.instrumentation import stats

WARM_UP = 20


class NullExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def compare(
    one_round: Callable[[int], float],
    instrument: Callable[[], object],
    uninstrument: Callable[[], object],
    *,
    n: int,
    rounds: int,
) -> tuple[float, float]:
    """Median seconds per unit of work (`one_round(n)` returns it), bare and instrumented;
    the shim's counters (`stats`) cover the measured rounds only."""
    one_round(WARM_UP)  # imports and caches, both ways
    instrument()
    one_round(WARM_UP)
    uninstrument()
    bare, instrumented = [], []
    stats.reset()
    for _ in range(rounds):
        bare.append(one_round(n))
        instrument()
        instrumented.append(one_round(n))
        uninstrument()
    return statistics.median(bare), statistics.median(instrumented)


def report(
    title: str,
    *,
    labels: tuple[str, str],
    unit: str,
    bare: float,
    instrumented: float,
    units: int,
) -> None:
    """Print the comparison: `labels` name the bare and instrumented workload
    ("bare Runner.run"), `unit` one unit of work ("run"), `units` how many the measured
    rounds did (for evidence spans per unit)."""
    b, i = bare, instrumented
    print(f"== {title}")
    print(f"{labels[0]:<40}: {b * 1e6:9.1f} µs  (baseline)")
    print(f"{labels[1]:<40}: {i * 1e6:9.1f} µs")
    print(f"{'ratio':<40}: {i / b:9.3f}x")
    print(f"{f'added per {unit} (one handoff)':<40}: {(i - b) * 1e6:9.1f} µs")
    print(f"{f'evidence spans per {unit}':<40}: {stats.spans_emitted / units:9.1f}")
    print(f"{'spans dropped / internal errors':<40}: {stats.spans_dropped} / {stats.errors}")
