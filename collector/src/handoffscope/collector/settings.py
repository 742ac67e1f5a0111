"""Every setting of `handoffscope collector`, as data.

Each setting has a name (the attribute on `CollectorSettings`), a command-line flag, an
environment variable `HANDOFFSCOPE_<FLAG>`, a default and a line of help. The flag wins
over the variable, the variable over the default. `docs/configuration.md` carries the table
`render_markdown_table()` prints, and a test keeps the two equal — so adding a setting here
is the whole job of documenting it (regenerate with `python -m handoffscope.collector.settings`).

`HANDOFFSCOPE_TOKEN`, `HANDOFFSCOPE_NOTIFY_SECRET` and `HANDOFFSCOPE_NOTIFY_TOKEN` have
no flag on purpose: a secret on the command line is visible to every user of the machine
through `ps`.

A repeatable setting (`--notify URL`) is given once per value on the command line; its
environment variable holds the values separated by whitespace (URLs cannot contain any).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields

ENV_PREFIX = "HANDOFFSCOPE_"
MIB = 1024 * 1024


@dataclass(frozen=True)
class Setting:
    name: str
    """Attribute name on `CollectorSettings`."""
    flag: str | None
    """Command-line flag; None for environment-only settings (secrets)."""
    type: Callable[[str], object]
    default: object
    help: str
    metavar: str = "VALUE"
    env: str = ""
    """Environment variable; derived from the flag when empty."""
    repeatable: bool = False
    """Given once per value (`action="append"`); the value is a tuple, default `()`."""

    @property
    def env_var(self) -> str:
        if self.env:
            return self.env
        assert self.flag is not None
        return ENV_PREFIX + self.flag.lstrip("-").upper().replace("-", "_")


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError(f"must be a TCP port 0-65535, got {value}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"must be >= 1, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:  # also refuses NaN
        raise ValueError(f"must be >= 0, got {text}")
    return value


def _url(text: str) -> str:
    value = text.strip()
    if not re.match(r"^https?://[^\s/]+", value):
        raise ValueError(f"must be an http:// or https:// URL, got {text!r}")
    return value


def _optional_url(text: str) -> str:
    return _url(text) if text.strip() else ""


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:  # also refuses NaN
        raise ValueError(f"must be > 0, got {text}")
    return value


def _hosts(text: str) -> str:
    names = [h.strip() for h in text.split(",") if h.strip()]
    if not names:
        raise ValueError("must name at least one host (or `*` for any)")
    return ",".join(names)


def _log_level(text: str) -> str:
    level = text.strip().lower()
    if level not in ("debug", "info", "warning", "error"):
        raise ValueError(f"must be debug, info, warning or error, got {text!r}")
    return level


def _service_list(text: str) -> tuple[str, ...]:
    names = tuple(sorted({n.strip() for n in text.split(",") if n.strip()}))
    for n in names:
        if len(n) > 128:
            raise ValueError(f"service names are at most 128 characters, got {n[:40]!r}...")
    return names


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "db",
        "--db",
        str,
        "./handoffscope.duckdb",
        "DuckDB file the collector owns (created if absent).",
        metavar="PATH",
    ),
    Setting(
        "host",
        "--host",
        str,
        "127.0.0.1",
        "Address both receivers and the query API bind to.",
        metavar="ADDRESS",
    ),
    Setting(
        "http_port",
        "--http-port",
        _port,
        4318,
        "OTLP/HTTP receiver, query API, /healthz and /metrics (0 picks a free port).",
        metavar="PORT",
    ),
    Setting(
        "grpc_port",
        "--grpc-port",
        _port,
        4317,
        "OTLP/gRPC receiver (0 picks a free port).",
        metavar="PORT",
    ),
    Setting(
        "grace_seconds",
        "--grace-seconds",
        _non_negative_float,
        30.0,
        "How long a handoff may wait for admission before it counts as destination_not_started.",
        metavar="SECONDS",
    ),
    Setting(
        "require_outcome",
        "--require-outcome",
        _service_list,
        (),
        "Services whose completed runs must be proven by a verifier, comma-separated (`*`: all). "
        "Any other service is expected to verify once it has reported an outcome; until then its "
        "completed runs are `unverified`, not `false_complete`.",
        metavar="SERVICES",
    ),
    Setting(
        "max_handoffs_per_run",
        "--max-handoffs-per-run",
        _positive_int,
        10_000,
        "Handoffs (and delegations) judged per run. Evidence of further handoffs of that run is "
        "refused by the judge (spans stay stored), counted in "
        "handoffscope_engine_handoff_spans_over_cap_total, and the run is marked "
        "`handoffs_capped` in the query API.",
        metavar="N",
    ),
    Setting(
        "retention_days",
        "--retention-days",
        _non_negative_float,
        30.0,
        "Delete spans that ended longer ago than this (checked at start and hourly; 0 keeps everything).",
        metavar="DAYS",
    ),
    Setting(
        "max_body_bytes",
        "--max-body-bytes",
        _positive_int,
        16 * MIB,
        "Largest export accepted, before and after decompression (413 above; gRPC: RESOURCE_EXHAUSTED).",
        metavar="BYTES",
    ),
    Setting(
        "queue_batches",
        "--queue-batches",
        _positive_int,
        64,
        "Exports waiting for the writer; beyond this the receivers answer 429 / RESOURCE_EXHAUSTED with Retry-After.",
        metavar="N",
    ),
    Setting(
        "memory_limit",
        "--memory-limit",
        str,
        "160MB",
        "DuckDB buffer memory limit (DuckDB syntax, e.g. 256MB, 1GB); larger work spills to disk. "
        "The default keeps the whole process under ~400 MB RSS (DESIGN §6).",
        metavar="SIZE",
    ),
    Setting(
        "max_inflight_bytes",
        "--max-inflight-bytes",
        _positive_int,
        64 * MIB,
        "Request body bytes read at once over all HTTP connections (header bytes get a budget "
        "of the same size of their own); a request beyond it gets 429 with Retry-After "
        "(at least --max-body-bytes).",
        metavar="BYTES",
    ),
    Setting(
        "max_header_bytes",
        "--max-header-bytes",
        _positive_int,
        32 * 1024,
        "Largest HTTP request line plus headers (431 above).",
        metavar="BYTES",
    ),
    Setting(
        "max_connections",
        "--max-connections",
        _positive_int,
        10_000,
        "HTTP connections open at once (lowered to the file-descriptor limit minus 512, or to "
        "half of it). "
        "At the cap the oldest connection with no request in progress is closed to admit a "
        "new one; with none, 503 with Retry-After.",
        metavar="N",
    ),
    Setting(
        "max_grpc_connections",
        "--max-grpc-connections",
        _positive_int,
        1024,
        "OTLP/gRPC connections open at once (lowered to a quarter of the file-descriptor budget "
        "it shares with HTTP); beyond it a new connection is closed at once and the exporter "
        "retries. A connection that has not finished its HTTP/2 setup within "
        "--header-timeout-seconds is closed, and one with no call for 5 minutes is sent GOAWAY.",
        metavar="N",
    ),
    Setting(
        "idle_timeout_seconds",
        "--idle-timeout-seconds",
        _positive_float,
        5.0,
        "An HTTP connection (new or kept alive) that starts no request for this long is closed.",
        metavar="SECONDS",
    ),
    Setting(
        "header_timeout_seconds",
        "--header-timeout-seconds",
        _positive_float,
        10.0,
        "Request line and headers must be complete this long after their first byte (408 and close).",
        metavar="SECONDS",
    ),
    Setting(
        "body_timeout_seconds",
        "--body-timeout-seconds",
        _positive_float,
        30.0,
        "A request body must be complete this long after its headers (408 and close).",
        metavar="SECONDS",
    ),
    Setting(
        "allowed_hosts",
        "--allowed-hosts",
        _hosts,
        "localhost,127.0.0.1,::1",
        "Comma-separated Host header names the HTTP port answers (port ignored; `*.example.com` "
        "matches subdomains, `*` any); others get 400 — protection against DNS rebinding. "
        "A specific --host address is allowed as well.",
        metavar="HOSTS",
    ),
    Setting(
        "max_clock_skew_seconds",
        "--max-clock-skew-seconds",
        _non_negative_float,
        86_400.0,
        "Spans dated more than this ahead of the collector's clock (or before 2000-01-01) are "
        "refused through partial_success, the rest of the export kept.",
        metavar="SECONDS",
    ),
    Setting(
        "metrics_max_services",
        "--metrics-max-services",
        _positive_int,
        50,
        "Services with their own handoffscope_attributes_dropped_total series on /metrics "
        '(those with most drops); the others are summed under service="(other)".',
        metavar="N",
    ),
    Setting(
        "log_level",
        "--log-level",
        _log_level,
        "info",
        "debug, info, warning or error.",
        metavar="LEVEL",
    ),
    Setting(
        "metrics_top",
        "--metrics-top",
        _positive_int,
        20,
        "Health metrics on /metrics label at most this many services and this many edges "
        "(the busiest); the rest are summed under `other`.",
        metavar="N",
    ),
    Setting(
        "notify",
        "--notify",
        _url,
        (),
        "Webhook that receives every notification event as JSON (repeatable). Add "
        "`#format=slack` for a Slack-compatible body; docs/alerts.md lists the other options.",
        metavar="URL",
        repeatable=True,
    ),
    Setting(
        "notify_config",
        "--notify-config",
        str,
        "",
        "JSON file of notification destinations and routes by owner, service and event "
        "(docs/alerts.md).",
        metavar="PATH",
    ),
    Setting(
        "notify_poll_seconds",
        "--notify-poll-seconds",
        _non_negative_float,
        2.0,
        "How often the notifier reads the derived tables for new events.",
        metavar="SECONDS",
    ),
    Setting(
        "notify_stuck_factor",
        "--notify-stuck-factor",
        _non_negative_float,
        3.0,
        "A run in flight silent for longer than this many grace windows is notified as `run_stuck`.",
        metavar="N",
    ),
    Setting(
        "dashboard_url",
        "--dashboard-url",
        _optional_url,
        "",
        "Base URL of the dashboard; notifications link to `<URL>/run_detail?run_id=<id>` (no link when unset).",
        metavar="URL",
    ),
    Setting(
        "token",
        None,
        str,
        "",
        "Bearer token; when set, /v1/traces, gRPC Export, /metrics and /api/v1/* require `Authorization: Bearer <token>` (/healthz stays open).",
        env="HANDOFFSCOPE_TOKEN",
    ),
    Setting(
        "notify_secret",
        None,
        str,
        "",
        "Key for the `X-Handoffscope-Signature-256` header (HMAC-SHA256 of the body) on `--notify` posts.",
        env="HANDOFFSCOPE_NOTIFY_SECRET",
    ),
    Setting(
        "notify_token",
        None,
        str,
        "",
        "Bearer token sent as `Authorization: Bearer <token>` on `--notify` posts.",
        env="HANDOFFSCOPE_NOTIFY_TOKEN",
    ),
)


@dataclass(frozen=True)
class CollectorSettings:
    """What the collector runs with; built by `parse_args`, passed to every part."""

    db: str = "./handoffscope.duckdb"
    host: str = "127.0.0.1"
    http_port: int = 4318
    grpc_port: int = 4317
    grace_seconds: float = 30.0
    require_outcome: tuple[str, ...] = ()
    max_handoffs_per_run: int = 10_000
    retention_days: float = 30.0
    max_body_bytes: int = 16 * MIB
    queue_batches: int = 64
    memory_limit: str = "160MB"
    max_inflight_bytes: int = 64 * MIB
    max_header_bytes: int = 32 * 1024
    max_connections: int = 10_000
    max_grpc_connections: int = 1024
    idle_timeout_seconds: float = 5.0
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 30.0
    allowed_hosts: str = "localhost,127.0.0.1,::1"
    max_clock_skew_seconds: float = 86_400.0
    metrics_max_services: int = 50
    log_level: str = "info"
    metrics_top: int = 20
    notify: tuple[str, ...] = ()
    notify_config: str = ""
    notify_poll_seconds: float = 2.0
    notify_stuck_factor: float = 3.0
    dashboard_url: str = ""
    token: str = ""
    notify_secret: str = ""
    notify_token: str = ""

    @property
    def notifying(self) -> bool:
        return bool(self.notify or self.notify_config)

    @property
    def auth(self) -> bool:
        return bool(self.token)

    @property
    def host_names(self) -> list[str]:
        """`--allowed-hosts` as a list, plus the bound address when it names one host."""
        names = [h.strip().lower() for h in self.allowed_hosts.split(",") if h.strip()]
        if self.host not in ("0.0.0.0", "::", "") and self.host.lower() not in names:
            names.append(self.host.lower())
        return names


def _check_settings_match_dataclass() -> None:
    # The table and the dataclass must list the same names with the same defaults;
    # checked at import so a mismatch fails every test, not only the docs test.
    declared = {f.name: f.default for f in fields(CollectorSettings)}
    table = {s.name: s.default for s in SETTINGS}
    if declared != table:
        raise RuntimeError(f"SETTINGS and CollectorSettings disagree: {declared} != {table}")


_check_settings_match_dataclass()


def build_parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The `handoffscope collector` parser; defaults come from `environ` when set there."""
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(
        prog="handoffscope collector",
        description=(
            "Receive OTLP evidence spans (HTTP protobuf/JSON and gRPC), keep only the "
            "handoff contract's attributes, store them in one DuckDB file, judge every "
            "handoff and run, and serve the query API. Every flag also reads the "
            "environment variable shown beside it."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Environment only: "
        + "; ".join(f"{s.env_var} - {s.help}" for s in SETTINGS if s.flag is None),
    )
    for s in SETTINGS:
        if s.flag is None:
            continue
        default = s.default
        if s.env_var in env:
            try:
                default = _from_env(s, env[s.env_var])
            except ValueError as exc:
                parser.error(f"{s.env_var}={env[s.env_var]!r}: {exc}")
        if s.repeatable:
            parser.add_argument(
                s.flag,
                dest=s.name,
                type=_argparse_type(s),
                action="append",
                default=None,
                metavar=s.metavar,
                help=f"{s.help} [env {s.env_var}, whitespace-separated; default none]",
            )
            parser.set_defaults(**{f"_{s.name}_env": default})
            continue
        parser.add_argument(
            s.flag,
            dest=s.name,
            type=_argparse_type(s),
            default=default,
            metavar=s.metavar,
            help=f"{s.help} [env {s.env_var}; default {_shown(s.default)}]",
        )
    return parser


def _from_env(s: Setting, text: str) -> object:
    if s.repeatable:
        return tuple(s.type(part) for part in text.split())
    return s.type(text)


def _argparse_type(s: Setting) -> Callable[[str], object]:
    # argparse reports ValueError as "invalid <name> value" and hides our message;
    # ArgumentTypeError keeps it.
    def convert(text: str) -> object:
        try:
            return s.type(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{s.flag}: {exc}") from None

    convert.__name__ = s.name
    return convert


def _shown(value: object) -> str:
    # 30.0 reads as "30" in help and docs, as the flag is usually written.
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def parse_args(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> CollectorSettings:
    env = os.environ if environ is None else environ
    ns = build_parser(env).parse_args(argv)
    values = vars(ns)
    for s in SETTINGS:
        if s.repeatable:
            # The flag, when given, replaces the variable's values (the flag wins).
            from_env = values.pop(f"_{s.name}_env")
            given = values[s.name]
            values[s.name] = tuple(given) if given is not None else from_env
        elif s.flag is None:
            values[s.name] = env.get(s.env_var, s.default)
    settings = CollectorSettings(**values)
    if settings.max_inflight_bytes < settings.max_body_bytes:
        build_parser(env).error(
            f"--max-inflight-bytes ({settings.max_inflight_bytes}) must be at least "
            f"--max-body-bytes ({settings.max_body_bytes}), or no export of the largest "
            "accepted size could ever be read"
        )
    return settings


def render_markdown_table() -> str:
    """The settings table of docs/configuration.md."""
    lines = [
        "| flag | environment variable | default | meaning |",
        "|---|---|---|---|",
    ]
    for s in SETTINGS:
        flag = f"`{s.flag}`" if s.flag else "(none: environment only)"
        default = f"`{_shown(s.default)}`" if s.default not in ("", ()) else "(unset)"
        lines.append(f"| {flag} | `{s.env_var}` | {default} | {s.help} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown_table(), end="")
