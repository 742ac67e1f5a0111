"""Every option of `handoffscope demo`, declared once (`handoffscope.instrumentation.options`).

docs/configuration.md carries the table `render_markdown_table()` prints
(`python -m handoffscope.demo.config`), tested equal; `make demo DEMO_ARGS="..."` passes
flags through.
"""

from __future__ import annotations

from dataclasses import dataclass

from handoffscope.collector.config import CollectorConfig
from handoffscope.instrumentation import options
from handoffscope.instrumentation.options import (
    non_negative_float,
    non_negative_int,
    option,
    port,
)


@dataclass(frozen=True)
class DemoConfig:
    """What `handoffscope demo` runs with."""

    db: str = option("handoffscope-demo.duckdb", "DuckDB file for the collector.", metavar="PATH")
    host: str = option(
        "127.0.0.1", "Address the collector and dashboard bind to.", metavar="ADDRESS"
    )
    http_port: int = option(
        4318, "Collector OTLP/HTTP + query API port.", type=port, metavar="PORT"
    )
    grpc_port: int = option(4317, "Collector OTLP/gRPC port.", type=port, metavar="PORT")
    dashboard_port: int = option(8501, "Dashboard port.", type=port, metavar="PORT")
    rate: float = option(2.0, "Live runs per second.", type=non_negative_float, metavar="N")
    duration: float = option(
        0.0,
        "Seconds of live traffic; 0 = until Ctrl-C.",
        type=non_negative_float,
        metavar="SECONDS",
    )
    backfill_weeks: int = option(
        6, "Weeks of history to backfill; 0 = none.", type=non_negative_int, metavar="N"
    )
    backfill_runs: int = option(250, "History runs per week.", type=non_negative_int, metavar="N")
    # The collector's own default, so the demo judges as a fresh install does and the
    # docs' "30 s" holds here too.
    grace_seconds: float = option(
        CollectorConfig.grace_seconds,
        "Collector grace before a handoff counts as destination_not_started.",
        type=non_negative_float,
        metavar="SECONDS",
    )
    seed: int = option(
        0,
        "Random seed for a repeatable mix; 0 = a new mix each time.",
        type=non_negative_int,
        metavar="N",
    )
    no_dashboard: bool = option(False, "Do not start the dashboard.")
    traffic_only: bool = option(
        False, "Only send traffic (to --otlp-endpoint); start no collector or dashboard."
    )
    otlp_endpoint: str = option(
        "",
        "OTLP/HTTP endpoint to send to (default: the demo's own collector).",
        metavar="URL",
    )
    api: str = option(
        "", "Query API to wait for with --traffic-only (default: none).", metavar="URL"
    )


SETTINGS = options.options_of(DemoConfig)


def render_markdown_table() -> str:
    """The options table of docs/configuration.md's demo section."""
    return options.markdown_table(DemoConfig)


if __name__ == "__main__":
    print(render_markdown_table(), end="")
