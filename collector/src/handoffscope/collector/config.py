"""Every option of `handoffscope collector`, declared once (`handoffscope.instrumentation.options`).

Each field of `CollectorConfig` is one option: its name, type, default, help, flag
(`--<name>`) and environment variable (`HANDOFFSCOPE_<NAME>`). The flag wins over the
variable, the variable over the default. `docs/configuration.md` and the README carry the
table `render_markdown_table()` prints, and a test keeps them equal — so adding a field here
is the whole job of documenting it (regenerate with `python -m handoffscope.collector.config`).

`HANDOFFSCOPE_TOKEN`, `HANDOFFSCOPE_NOTIFY_SECRET` and `HANDOFFSCOPE_NOTIFY_TOKEN` have
no flag on purpose: a secret on the command line is visible to every user of the machine
through `ps`.

A repeatable option (`--notify URL`) is given once per value on the command line; its
environment variable holds the values separated by whitespace (URLs cannot contain any).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from handoffscope.instrumentation import options
from handoffscope.instrumentation.options import (
    hosts,
    non_negative_float,
    option,
    optional_url,
    port,
    positive_float,
    positive_int,
    url,
)
from handoffscope.instrumentation.verdicts import DEFAULT_GRACE_SECONDS

MIB = 1024 * 1024


def _log_level(text: str) -> str:
    level = text.strip().lower()
    if level not in ("debug", "info", "warning", "error"):
        raise ValueError(f"must be debug, info, warning or error, got {text!r}")
    return level


def _judge_mode(text: str) -> str:
    value = text.strip().lower()
    if value not in JUDGE_MODES:
        raise ValueError(f"must be on, thread or off, got {text!r}")
    return value


JUDGE_MODES = ("on", "thread", "off")


def _ingest_log_mode(text: str) -> str:
    value = text.strip().lower()
    if value not in ("auto", "on", "off"):
        raise ValueError(f"must be auto, on or off, got {text!r}")
    return value


def _nice_increment(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 19:
        raise ValueError(f"must be a nice increment 0-19, got {value}")
    return value


def _store_target(text: str) -> str:
    value = text.strip()
    if value.startswith(("postgresql:", "postgres:")) and not value.startswith(
        ("postgresql://", "postgres://")
    ):
        raise ValueError(f"a PostgreSQL store is postgresql://user@host:port/db, got {text!r}")
    if "://" in value and not value.startswith(("postgresql://", "postgres://")):
        raise ValueError(
            f"the store is a DuckDB file path or postgresql://..., got {value.split('://')[0]}://"
        )
    return value


def _service_list(text: str) -> tuple[str, ...]:
    names = tuple(sorted({n.strip() for n in text.split(",") if n.strip()}))
    for n in names:
        if len(n) > 128:
            raise ValueError(f"service names are at most 128 characters, got {n[:40]!r}...")
    return names


def _store_option(who: str) -> Any:
    return option(
        "",
        f"Shared store instead of the DuckDB file: `postgresql://user@host:5432/db` ({who}; "
        "docs/scale-out.md). The password is best given in `PGPASSWORD` or `~/.pgpass`, not "
        "here. A path here means a DuckDB file, as `--db`.",
        type=_store_target,
        metavar="DSN",
    )


def _grace_option() -> Any:
    return option(
        DEFAULT_GRACE_SECONDS,
        "How long a handoff may wait for admission before it counts as destination_not_started.",
        type=non_negative_float,
        metavar="SECONDS",
    )


def _handoff_cap_option() -> Any:
    return option(
        10_000,
        "Handoffs (and delegations) judged per run. Evidence of further handoffs of that run is refused by the judge (spans stay stored), counted in handoffscope_engine_handoff_spans_over_cap_total, and the run is marked `handoffs_capped` in the query API.",
        type=positive_int,
        metavar="N",
    )


def _allowed_hosts_option() -> Any:
    return option(
        "localhost,127.0.0.1,::1",
        "Comma-separated Host header names the HTTP port answers (port ignored; `*.example.com` matches subdomains, `*` any); others get 400 — protection against DNS rebinding. A specific --host address is allowed as well.",
        type=hosts,
        metavar="HOSTS",
    )


def _log_level_option() -> Any:
    return option("info", "debug, info, warning or error.", type=_log_level, metavar="LEVEL")


def _host_names(allowed_hosts: str, host: str) -> list[str]:
    names = [h.strip().lower() for h in allowed_hosts.split(",") if h.strip()]
    if host not in ("0.0.0.0", "::", "") and host.lower() not in names:
        names.append(host.lower())
    return names


def _is_shared(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


class _Served:
    """What a config that opens a store and serves HTTP derives from its fields."""

    store: str
    db: str
    token: str
    allowed_hosts: str
    host: str

    @property
    def store_target(self) -> str:
        """What the process opens: `--store` when given, else the `--db` file."""
        return self.store or self.db

    @property
    def shared_store(self) -> bool:
        """Whether the store is PostgreSQL (shared by collectors) rather than a DuckDB file."""
        return _is_shared(self.store_target)

    @property
    def auth(self) -> bool:
        return bool(self.token)

    @property
    def host_names(self) -> list[str]:
        """`--allowed-hosts` as a list, plus the bound address when it names one host."""
        return _host_names(self.allowed_hosts, self.host)


@dataclass(frozen=True)
class CollectorConfig(_Served):
    """What the collector runs with; built by `parse_args`, passed to every part."""

    db: str = option(
        "./handoffscope.duckdb",
        "DuckDB file the collector owns (created if absent); ignored with `--store`.",
        metavar="PATH",
    )
    store: str = _store_option("several collectors may share it")
    host: str = option(
        "127.0.0.1",
        "Address both receivers and the query API bind to.",
        metavar="ADDRESS",
    )
    http_port: int = option(
        4318,
        "OTLP/HTTP receiver, query API, /healthz and /metrics (0 picks a free port).",
        type=port,
        metavar="PORT",
    )
    grpc_port: int = option(
        4317,
        "OTLP/gRPC receiver (0 picks a free port).",
        type=port,
        metavar="PORT",
    )
    grace_seconds: float = _grace_option()
    require_outcome: tuple[str, ...] = option(
        (),
        "Services whose completed runs must be proven by a verifier, comma-separated (`*`: all). Any other service is expected to verify once it has reported an outcome; until then its completed runs are `unverified`, not `false_complete`.",
        type=_service_list,
        metavar="SERVICES",
    )
    max_handoffs_per_run: int = _handoff_cap_option()
    prices: str = option(
        "",
        'TOML file of model prices in USD per million tokens, consulted before the shipped genai-prices table: negotiated prices, private models (docs/configuration.md, "Prices"). A model neither knows is left unpriced (cost null), never guessed.',
        metavar="PATH",
    )
    judge: str = option(
        "on",
        "Where verdicts are derived. `on`: the health engine runs in a worker process of its own beside the collector's (the judge's Python work takes the second core instead of the receiver's lock; a worker that dies is replaced and reloads from the store; on PostgreSQL it starts when this collector first takes its share of the runs' partitions). `thread`: in the collector's process (one process, less memory, about half the ingest rate on two cores). `off`: ingest only. Exports are stored and acknowledged as usual, but no verdicts are derived: the judge does not run, /healthz says `ingest only: judge off` and the backlog waits in the file; a later start with the judge on catches up from its mark. For a process that only ingests, and for measuring ingest alone (bench/bench_receiver.py).",
        type=_judge_mode,
        metavar="on|thread|off",
    )
    judge_workers: int = option(
        1,
        "Worker processes of the judge with `--judge on`: each holds and judges its share of the runs (by run id), side by side, and their rows commit in the judge's one transaction. One worker judges on one core (about 40k spans/s of 4-span runs here); give more where the collector ingests more than that and has the cores. On two cores, 2 caught up 1.3x faster than 1 (bench/bench_judge_throughput.py). Each worker adds about 90 MB and splits the in-memory bound.",
        type=positive_int,
        metavar="N",
    )
    judge_nice: int = option(
        10,
        "How far the judge yields the CPU to answering exports and queries: a Unix nice increment (0-19) for the judge's thread (on Linux) and its worker processes. When every core is busy the judge runs on what ingest and the query API leave and its verdicts fall behind (the lag is reported: /healthz, /metrics, the dashboard) instead of the answers slowing; with a core to spare it runs at full speed. 0: the collector's own priority. On two cores the receiver took 23.0k spans/s with the judge on at 10 against 19.8k at 0 (docs/storage.md).",
        type=_nice_increment,
        metavar="N",
    )
    max_hot_handoffs: int = option(
        20_000,
        "Handoffs (with their waits and runs) the judge keeps in memory: finished runs leave first and hold at most a fifth of it, then the least recently touched; ≈ 2.3 KB each. Evidence for a run that has left memory brings it back from the store, which costs the judge about as much again (handoffscope_engine_runs_reloaded_total counts them; handoffscope_engine_hot_handoffs is the gauge). Raise it when runs live long at a high rate: it should hold every open run still sending spans — at 10k spans/s of runs whose spans came over 10 s, the default reloaded 124,928 runs a minute (freshness p95 1.9 s) and 60,000 none (p95 1.4 s), for 60 MB more of the worker's RSS (bench/bench_judge_throughput.py --spread). With --judge-workers, split between the workers.",
        type=positive_int,
        metavar="N",
    )
    retention_days: float = option(
        30.0,
        "Delete spans that ended longer ago than this (checked at start and hourly; 0 keeps everything).",
        type=non_negative_float,
        metavar="DAYS",
    )
    max_body_bytes: int = option(
        16 * MIB,
        "Largest export accepted, before and after decompression (413 above; gRPC: RESOURCE_EXHAUSTED).",
        type=positive_int,
        metavar="BYTES",
    )
    queue_batches: int = option(
        64,
        "Exports waiting for the writer; beyond this the receivers answer 429 / RESOURCE_EXHAUSTED with Retry-After.",
        type=positive_int,
        metavar="N",
    )
    ingest_log: str = option(
        "auto",
        "`on`: answer an export once its spans are fsynced to an ingest log beside the DuckDB file (`<db>.ingest-log/`), and load them into the file in large groups behind the answer; after a crash the logged spans are loaded before anything is answered. `off`: answer after each group commit to the store. `auto`: `on` for a DuckDB file, `off` with `--store postgresql://...` (whose exports are answered after PostgreSQL's commit: a log on one machine would hide acknowledged spans from the other collectors). On two cores `on` took 1.3-1.5x the spans and answers each export in about a millisecond instead of a DuckDB commit; spans reach queries a load later, at most about 0.2 s (docs/storage.md).",
        type=_ingest_log_mode,
        metavar="auto|on|off",
    )
    memory_limit: str = option(
        "112MB",
        "DuckDB buffer memory limit (DuckDB syntax, e.g. 256MB, 1GB): its block cache and the data appended since the last checkpoint; larger work spills to disk. With the default, at ten million handoffs stored, every dashboard query kept p95 ≤ 200 ms while ingesting, and the collector with its judge worker held ≈ 420-440 MB (PSS) — 50 MB less than with 160MB, with the same query figures (bench/bench_queries.py; docs/storage.md). More makes big queries faster; less saves memory at their expense (96MB: 3 of the 17 over target in the same measurement).",
        metavar="SIZE",
    )
    max_inflight_bytes: int = option(
        64 * MIB,
        "Request body bytes read at once over all HTTP connections (header bytes get a budget of the same size of their own); a request beyond it gets 429 with Retry-After (at least --max-body-bytes).",
        type=positive_int,
        metavar="BYTES",
    )
    max_header_bytes: int = option(
        32 * 1024,
        "Largest HTTP request line plus headers (431 above).",
        type=positive_int,
        metavar="BYTES",
    )
    max_connections: int = option(
        10_000,
        "HTTP connections open at once (lowered to the file-descriptor limit minus 512, or to half of it). At the cap the oldest connection with no request in progress is closed to admit a new one; with none, 503 with Retry-After.",
        type=positive_int,
        metavar="N",
    )
    max_grpc_connections: int = option(
        1024,
        "OTLP/gRPC connections open at once (lowered to a quarter of the file-descriptor budget it shares with HTTP); beyond it a new connection is closed at once and the exporter retries. A connection that has not finished its HTTP/2 setup within --header-timeout-seconds is closed, and one with no call for 5 minutes is sent GOAWAY.",
        type=positive_int,
        metavar="N",
    )
    idle_timeout_seconds: float = option(
        5.0,
        "An HTTP connection (new or kept alive) that starts no request for this long is closed.",
        type=positive_float,
        metavar="SECONDS",
    )
    header_timeout_seconds: float = option(
        10.0,
        "Request line and headers must be complete this long after their first byte (408 and close).",
        type=positive_float,
        metavar="SECONDS",
    )
    body_timeout_seconds: float = option(
        30.0,
        "A request body must be complete this long after its headers (408 and close).",
        type=positive_float,
        metavar="SECONDS",
    )
    allowed_hosts: str = _allowed_hosts_option()
    max_clock_skew_seconds: float = option(
        86_400.0,
        "Spans dated more than this ahead of the collector's clock (or before 2000-01-01) are refused through partial_success, the rest of the export kept.",
        type=non_negative_float,
        metavar="SECONDS",
    )
    metrics_max_services: int = option(
        50,
        'Services with their own handoffscope_attributes_dropped_total series on /metrics (those with most drops); the others are summed under service="(other)".',
        type=positive_int,
        metavar="N",
    )
    log_level: str = _log_level_option()
    metrics_top: int = option(
        20,
        "Health metrics on /metrics label at most this many services and this many edges (the busiest); the rest are summed under `other`.",
        type=positive_int,
        metavar="N",
    )
    notify: tuple[str, ...] = option(
        (),
        "Webhook that receives every notification event as JSON (repeatable). Add `#format=slack` for a Slack-compatible body; docs/alerts.md lists the other options.",
        type=url,
        metavar="URL",
        repeatable=True,
    )
    notify_config: str = option(
        "",
        "JSON file of notification destinations and routes by owner, service and event (docs/alerts.md).",
        metavar="PATH",
    )
    notify_poll_seconds: float = option(
        2.0,
        "How often the notifier reads the derived tables for new events.",
        type=non_negative_float,
        metavar="SECONDS",
    )
    notify_stuck_factor: float = option(
        3.0,
        "A run in flight silent for longer than this many grace windows is notified as `run_stuck`.",
        type=non_negative_float,
        metavar="N",
    )
    notify_max_age_seconds: float = option(
        900.0,
        "Only events that happened within this many seconds are sent: a loop, stuck run or wait the notifier first sees later (history, backfill, an outage) pages nobody. 0: no bound.",
        type=non_negative_float,
        metavar="SECONDS",
    )
    dashboard_url: str = option(
        "",
        "Base URL of the dashboard; notifications link to `<URL>/run_detail?run_id=<id>` (no link when unset).",
        type=optional_url,
        metavar="URL",
    )
    token: str = option(
        "",
        "Bearer token; when set, /v1/traces, gRPC Export, /metrics and /api/v1/* require `Authorization: Bearer <token>` (/healthz stays open).",
        flag=None,
    )
    notify_secret: str = option(
        "",
        "Key for the `X-Handoffscope-Signature-256` header (HMAC-SHA256 of the body) on `--notify` posts.",
        flag=None,
    )
    notify_token: str = option(
        "",
        "Bearer token sent as `Authorization: Bearer <token>` on `--notify` posts.",
        flag=None,
    )

    @property
    def logging_ingest(self) -> bool:
        """Whether exports are answered from the ingest log (`--ingest-log`, resolved)."""
        return self.ingest_log == "on" or (self.ingest_log == "auto" and not self.shared_store)

    @property
    def notifying(self) -> bool:
        return bool(self.notify or self.notify_config)


SETTINGS = options.options_of(CollectorConfig)
"""The options, in field order (docs tables, `--help`, the compose file's test)."""

DESCRIPTION = (
    "Receive OTLP evidence spans (HTTP protobuf/JSON and gRPC), keep only the "
    "handoff contract's attributes, store them (one DuckDB file, or a PostgreSQL database "
    "several collectors share), judge every "
    "handoff and run, and serve the query API. Every flag also reads the "
    "environment variable shown beside it."
)


def build_parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The `handoffscope collector` parser; defaults come from `environ` when set there."""
    return options.build_parser(
        CollectorConfig, prog="handoffscope collector", description=DESCRIPTION, environ=environ
    )


def parse_args(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> CollectorConfig:
    parser = build_parser(environ)
    config = options.parse(CollectorConfig, parser, argv, environ)
    if config.max_inflight_bytes < config.max_body_bytes:
        parser.error(
            f"--max-inflight-bytes ({config.max_inflight_bytes}) must be at least "
            f"--max-body-bytes ({config.max_body_bytes}), or no export of the largest "
            "accepted size could ever be read"
        )
    if config.ingest_log == "on" and config.shared_store:
        parser.error(
            "--ingest-log on is for a DuckDB file; with --store postgresql://... exports are "
            "answered after PostgreSQL's commit (a log on one machine would hide acknowledged "
            "spans from the other collectors): leave it auto or off"
        )
    if config.judge_workers > 1 and config.judge != "on":
        parser.error(
            f"--judge-workers {config.judge_workers} needs --judge on (with --judge "
            f"{config.judge} the engine runs in no worker process)"
        )
    return config


def render_markdown_table() -> str:
    """The options table of docs/configuration.md and the README."""
    return options.markdown_table(CollectorConfig)


# --- `handoffscope api`: the query API alone ------------------------------------------------


@dataclass(frozen=True)
class QueryConfig(_Served):
    """What `handoffscope api` runs with: the query API over a store, nothing else."""

    store: str = _store_option("what the collectors write")
    db: str = option(
        "./handoffscope.duckdb",
        "DuckDB file to read (opened read-only; only while no collector holds it); ignored with `--store`.",
        metavar="PATH",
    )
    host: str = option("127.0.0.1", "Address the query API binds to.", metavar="ADDRESS")
    http_port: int = option(
        4320,
        "Query API, /docs and /healthz (0 picks a free port).",
        type=port,
        metavar="PORT",
    )
    grace_seconds: float = _grace_option()
    max_handoffs_per_run: int = _handoff_cap_option()
    allowed_hosts: str = _allowed_hosts_option()
    log_level: str = _log_level_option()
    token: str = option(
        "",
        "Bearer token; when set, /api/v1/* require `Authorization: Bearer <token>` (/healthz stays open).",
        flag=None,
    )


QUERY_SETTINGS = options.options_of(QueryConfig)
QUERY_DESCRIPTION = (
    "Serve the query API (and /docs, /healthz) over a store the collectors write, without "
    "receiving or judging anything: one more place to point dashboards at. Give it the "
    "collectors' --grace-seconds and --max-handoffs-per-run, so its verdicts at query "
    "time agree with theirs. Every flag also reads the environment variable shown beside it."
)


def parse_query_args(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> QueryConfig:
    parser = options.build_parser(
        QueryConfig, prog="handoffscope api", description=QUERY_DESCRIPTION, environ=environ
    )
    return options.parse(QueryConfig, parser, argv, environ)


def render_query_table() -> str:
    """The options table of `handoffscope api` in docs/configuration.md."""
    return options.markdown_table(QueryConfig)


if __name__ == "__main__":
    import sys

    print(render_query_table() if sys.argv[1:] == ["api"] else render_markdown_table(), end="")
