"""The collector's own counters, served at GET /metrics in Prometheus text format 0.0.4.

Names (docs/api.md):

| metric | type | meaning |
|---|---|---|
| `handoffscope_spans_received_total` | counter | spans in exports that decoded (refused ones included) |
| `handoffscope_spans_stored_total` | counter | spans committed to the DuckDB file for the first time |
| `handoffscope_spans_rejected_total` | counter | spans refused through partial_success (not evidence, no run id, malformed) |
| `handoffscope_spans_duplicate_total` | counter | spans already stored (a retried export), not stored again |
| `handoffscope_spans_refused_total{reason}` | counter | the refused spans by reason: `not_evidence`, `no_run_id`, `malformed_ids`, `malformed_time`, `time_out_of_window`, `service_not_in_scope` |
| `handoffscope_attributes_dropped_total{service,attribute}` | counter | attribute values the allowlist removed, by attribute NAME; the `--metrics-max-services` services with most drops get their own series, the rest are summed under `service="(other)"` |
| `handoffscope_http_connections_closed_total{reason}` | counter | HTTP connections the collector closed or lost early: `client_disconnect` (mid-body), `idle_timeout`, `header_timeout`, `body_timeout`, `header_too_large`, `inflight_bytes` (429: header budget full), `evicted` (oldest idle one, to admit a new one at `--max-connections`), `over_limit` (no idle one to evict: 503) |
| `handoffscope_http_connections_open` | gauge | HTTP connections open now |
| `handoffscope_http_inflight_bytes` | gauge | request header and body bytes being read now (at most `--max-inflight-bytes` of each) |
| `handoffscope_log_lines_suppressed_total` | counter | log lines not written because the same message was logged too often (at most `LOG_BURST` per message per minute) |
| `handoffscope_export_requests_total{transport,result}` | counter | exports answered, by `http`/`grpc` and outcome |
| `handoffscope_otlp_discarded_total{transport,signal}` | counter | OTLP `logs` and `metrics` exports accepted and discarded (the collector judges traces only; an app that sends all three signals to one endpoint gets no export errors) |
| `handoffscope_commits_total` | counter | group commits (each may carry several exports) |
| `handoffscope_commit_failures_total` | counter | exports whose commit failed (answered 503 / UNAVAILABLE) |
| `handoffscope_queue_depth` | gauge | exports waiting for the writer |
| `handoffscope_spans_in_store` | gauge | rows in the spans table |
| `handoffscope_load_failures_total` | counter | loads of logged exports into the store that failed and were retried (`--ingest-log on`) |
| `handoffscope_ingest_log_pending_spans` | gauge | spans answered from the ingest log but not in the store yet (`--ingest-log on`) |
| `handoffscope_ingest_log_bytes` | gauge | bytes of the ingest log's segment files (`--ingest-log on`) |
| `handoffscope_judge_worker_starts_total` | counter | judge worker processes started (`--judge on`) |
| `handoffscope_judge_worker_resident_memory_bytes` | gauge | the judge worker processes' RSS (summed over `--judge-workers`) |
| `handoffscope_engine_<name>_total` | counter | the health engine's own counters (`HealthEngine.stats`) |
| `process_resident_memory_bytes` | gauge | the collector's RSS (its judge worker's apart) |

Other parts add their own families through `Metrics.families` (callables returning text
lines, rendered after these): the health gauges and counters (`health.py`) and the
notifier's (`notify/notifier.py`).

Rejected, duplicate, stored and dropped are counted when an export's commit succeeds, so an
export answered 429 and retried is not counted twice. The counters start at zero with the
process, as Prometheus counters do; the `drops` table keeps the all-time totals.

Per-service series are capped because `service.name` is the sender's to choose: 20k
services once made 21,001 series (3.7 MB per scrape). At most `MAX_TRACKED_SERVICES`
services are counted apart in memory; drops of services seen after that go straight to
`(other)`, so neither the scrape nor the process grows with the number of names.

No client library: the format is a few lines of text, and the collector should not pull in
a dependency (and its global registry) to print them.
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping

from handoffscope.collector import lograte
from handoffscope.collector.credentials import EVERY_SERVICE, Scope

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

HTTP = "http"
GRPC = "grpc"

# export outcomes (label `result`)
OK = "ok"
PARTIAL = "partial"
BAD_REQUEST = "bad_request"
TOO_LARGE = "too_large"
UNSUPPORTED = "unsupported_media_type"
UNAUTHORIZED = "unauthorized"
OVERLOADED = "overloaded"
UNAVAILABLE = "unavailable"

SIGNALS = ("logs", "metrics")
"""OTLP signals other than traces: accepted and discarded (`discarded`)."""

OTHER_SERVICES = "(other)"
"""`service` label summing the drops of services outside the top `max_services`."""
DEFAULT_MAX_SERVICES = 50
MAX_TRACKED_SERVICES = 10_000
"""Services whose drops are counted apart in memory (see the module docstring)."""

_COUNTERS = {
    "spans_received": "Spans in exports that decoded, refused ones included.",
    "spans_stored": "Spans committed to the DuckDB file for the first time.",
    "spans_rejected": "Spans refused through OTLP partial_success.",
    "spans_duplicate": "Spans already stored (a retried export), not stored again.",
    "commits": "Group commits (each may carry several exports).",
    "commit_failures": "Exports whose commit failed (answered 503 / UNAVAILABLE).",
    "load_failures": "Loads of logged exports into the store that failed and were retried (--ingest-log on).",
}


def escape(value: str) -> str:
    """A label value as the text format writes it."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


_SERVICE_LABEL = re.compile(r'[{,]service="((?:[^"\\]|\\.)*)"')
_UNESCAPE = re.compile(r"\\(.)")


def scoped(text: str, scope: Scope) -> str:
    """The exposition `text` as a reader of `scope` may see it: every series labelled with
    a service it does not see is left out (the summed `other` ones too, as they add up
    other services); series without a service label — the collector's own counters, which
    name no service, agent or run — stay, as do the HELP and TYPE lines."""
    if scope.services is None:
        return text
    kept = []
    for line in text.splitlines():
        found = None if line.startswith("#") else _SERVICE_LABEL.search(line)
        if found is not None:
            service = _UNESCAPE.sub(lambda m: "\n" if m[1] == "n" else m[1], found[1])
            if not scope.sees(service):
                continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def _top_services(drops: Counter, n: int) -> list[tuple[tuple[str, str], int]]:
    """Drop series of the `n` services with most drops; the rest summed per attribute
    under OTHER_SERVICES."""
    per_service: Counter = Counter()
    for (service, _), count in drops.items():
        if service != OTHER_SERVICES:
            per_service[service] += count
    top = {service for service, _ in per_service.most_common(n)}
    out: Counter = Counter()
    for (service, attribute), count in drops.items():
        out[(service if service in top else OTHER_SERVICES, attribute)] += count
    return sorted(out.items())


def _resident_bytes(pid: int | str = "self") -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


class Metrics:
    def __init__(self, *, max_services: int = DEFAULT_MAX_SERVICES) -> None:
        self._lock = threading.Lock()
        self._counters: Counter = Counter()
        self._drops: Counter = Counter()
        self._drop_services: set[str] = set()
        self._max_services = max_services
        self._refused: Counter = Counter()
        self._closed: Counter = Counter()
        self._requests: Counter = Counter()
        self._discarded: Counter = Counter()
        self.refusal_reasons: tuple[str, ...] = ()
        self.close_reasons: tuple[str, ...] = ()
        """Label values served at 0 before their first count (set by the server), so a
        rate over them starts from the process start, not from the first event."""
        self.connections_open: Callable[[], int] = lambda: 0
        self.inflight_bytes: Callable[[], int] = lambda: 0
        self.queue_depth: Callable[[], int] = lambda: 0
        self.spans_in_store: Callable[[], int] = lambda: 0
        self.ingest_log: Callable[[], tuple[int, int]] | None = None
        """(spans answered but not loaded yet, bytes of the log on disk) with --ingest-log on."""
        self.engine_stats: Callable[[], Mapping[str, int]] = dict
        """The health engine's own counters, rendered as handoffscope_engine_<name>_total."""
        self.engine_memory: Callable[[], tuple[int, int]] | None = None
        """(handoffs, waits and runs the engine holds in memory, its bound: --max-hot-handoffs)."""
        self.judge_lag: Callable[[], tuple[float, int]] = lambda: (0.0, 0)
        self.judge_lease: Callable[[], bool] = lambda: True
        self.judge_partitions: Callable[[], int] = lambda: 0
        self.judge_worker: Callable[[], tuple[int, list[int]] | None] = lambda: None
        """(workers started, the live ones' pids) of `--judge on`; None: the engine runs in
        this process."""
        """Whether this collector's judge is the one judging (always, on a DuckDB file)."""
        """(seconds the oldest unjudged commit has waited, commits not judged yet)."""
        self.families: list[Callable[[Scope], list[str]]] = []
        """More families, each a callable returning Prometheus text lines (HELP, TYPE,
        samples) as readers of a scope see them."""

    def inc(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counters[name] += n

    def connection_closed(self, reason: str) -> None:
        with self._lock:
            self._closed[reason] += 1

    def export_answered(self, transport: str, result: str) -> None:
        with self._lock:
            self._requests[(transport, result)] += 1

    def discarded(self, transport: str, signal: str) -> None:
        """One OTLP logs or metrics export accepted and thrown away."""
        with self._lock:
            self._discarded[(transport, signal)] += 1

    def add_committed(
        self,
        *,
        stored: int,
        duplicates: int,
        rejected: int,
        drops: Mapping[tuple[str, str], int],
        refused: Mapping[str, int] | None = None,
    ) -> None:
        with self._lock:
            self._counters["commits"] += 1
            self._counters["spans_stored"] += stored
            self._counters["spans_duplicate"] += duplicates
            self._count_refused(rejected, refused or {})
            for (service, attribute), n in drops.items():
                if service not in self._drop_services:
                    if len(self._drop_services) >= MAX_TRACKED_SERVICES:
                        service = OTHER_SERVICES
                    else:
                        self._drop_services.add(service)
                self._drops[(service, attribute)] += n

    def add_refused(self, rejected: int, refused: Mapping[str, int]) -> None:
        """Spans refused by exports answered before their commit (the ingest log's)."""
        with self._lock:
            self._count_refused(rejected, refused)

    def _count_refused(self, rejected: int, refused: Mapping[str, int]) -> None:
        self._counters["spans_rejected"] += rejected
        self._refused.update(refused)

    def value(self, name: str) -> int:
        with self._lock:
            return self._counters[name]

    def render(self, scope: Scope = EVERY_SERVICE) -> str:
        """The exposition text, for readers of `scope`: the services it sees are the ones
        ranked for the per-service labels (a scoped reader's services are not summed into
        `other` because busier services it cannot see took the labels)."""
        with self._lock:
            counters = dict(self._counters)
            seen = Counter({k: n for k, n in self._drops.items() if scope.sees(k[0])})
            drops = _top_services(seen, self._max_services)
            refused = sorted({**dict.fromkeys(self.refusal_reasons, 0), **self._refused}.items())
            closed = sorted({**dict.fromkeys(self.close_reasons, 0), **self._closed}.items())
            requests = sorted(self._requests.items())
            zero = {(t, s): 0 for t in (HTTP, GRPC) for s in SIGNALS}
            discarded = sorted({**zero, **self._discarded}.items())
        out: list[str] = []
        for name, help_ in _COUNTERS.items():
            full = f"handoffscope_{name}_total"
            out += [
                f"# HELP {full} {help_}",
                f"# TYPE {full} counter",
                f"{full} {counters.get(name, 0)}",
            ]
        full = "handoffscope_spans_refused_total"
        out += [
            f"# HELP {full} Spans refused through OTLP partial_success, by reason.",
            f"# TYPE {full} counter",
        ]
        out += [f'{full}{{reason="{r}"}} {n}' for r, n in refused]
        full = "handoffscope_attributes_dropped_total"
        out += [
            f"# HELP {full} Attribute values the allowlist removed, by service and attribute name.",
            f"# TYPE {full} counter",
        ]
        out += [
            f'{full}{{service="{escape(s)}",attribute="{escape(a)}"}} {n}' for (s, a), n in drops
        ]
        full = "handoffscope_export_requests_total"
        out += [
            f"# HELP {full} Exports answered, by transport and outcome.",
            f"# TYPE {full} counter",
        ]
        out += [f'{full}{{transport="{t}",result="{r}"}} {n}' for (t, r), n in requests]
        full = "handoffscope_otlp_discarded_total"
        out += [
            f"# HELP {full} OTLP logs and metrics exports accepted and discarded (traces only).",
            f"# TYPE {full} counter",
        ]
        out += [f'{full}{{transport="{t}",signal="{s}"}} {n}' for (t, s), n in discarded]
        full = "handoffscope_http_connections_closed_total"
        out += [
            f"# HELP {full} HTTP connections closed or lost early, by reason.",
            f"# TYPE {full} counter",
        ]
        out += [f'{full}{{reason="{r}"}} {n}' for r, n in closed]
        out += [
            "# HELP handoffscope_http_connections_open HTTP connections open now.",
            "# TYPE handoffscope_http_connections_open gauge",
            f"handoffscope_http_connections_open {self.connections_open()}",
            "# HELP handoffscope_http_inflight_bytes Request bytes being read now.",
            "# TYPE handoffscope_http_inflight_bytes gauge",
            f"handoffscope_http_inflight_bytes {self.inflight_bytes()}",
            "# HELP handoffscope_log_lines_suppressed_total Log lines dropped by the rate limit.",
            "# TYPE handoffscope_log_lines_suppressed_total counter",
            f"handoffscope_log_lines_suppressed_total {lograte.suppressed()}",
            "# HELP handoffscope_queue_depth Exports waiting for the writer.",
            "# TYPE handoffscope_queue_depth gauge",
            f"handoffscope_queue_depth {self.queue_depth()}",
            "# HELP handoffscope_spans_in_store Rows in the spans table.",
            "# TYPE handoffscope_spans_in_store gauge",
            f"handoffscope_spans_in_store {self.spans_in_store()}",
        ]
        if self.ingest_log is not None:
            pending, size = self.ingest_log()
            out += [
                "# HELP handoffscope_ingest_log_pending_spans Spans answered from the ingest "
                "log but not in the store yet.",
                "# TYPE handoffscope_ingest_log_pending_spans gauge",
                f"handoffscope_ingest_log_pending_spans {pending}",
                "# HELP handoffscope_ingest_log_bytes Bytes of the ingest log's segment files.",
                "# TYPE handoffscope_ingest_log_bytes gauge",
                f"handoffscope_ingest_log_bytes {size}",
            ]
        lag_s, behind = self.judge_lag()
        out += [
            "# HELP handoffscope_judge_lag_seconds How long the oldest committed but not yet "
            "judged export has waited for its verdicts (0: caught up).",
            "# TYPE handoffscope_judge_lag_seconds gauge",
            f"handoffscope_judge_lag_seconds {lag_s:.3f}",
            "# HELP handoffscope_judge_pending_commits Group commits stored but not yet judged.",
            "# TYPE handoffscope_judge_pending_commits gauge",
            f"handoffscope_judge_pending_commits {behind}",
            "# HELP handoffscope_judge_lease_held 1 if this collector's judge is the one "
            "judging its store (collectors sharing PostgreSQL take turns; a DuckDB file's "
            "one collector always is, unless --judge off).",
            "# TYPE handoffscope_judge_lease_held gauge",
            f"handoffscope_judge_lease_held {int(self.judge_lease())}",
            "# HELP handoffscope_judge_partitions_held Of the runs' 16 partitions, those this "
            "collector judges (collectors sharing PostgreSQL share them out; a DuckDB file's "
            "one collector judges all, unless --judge off).",
            "# TYPE handoffscope_judge_partitions_held gauge",
            f"handoffscope_judge_partitions_held {self.judge_partitions()}",
        ]
        worker = self.judge_worker()
        if worker is not None:
            starts, pids = worker
            out += [
                "# HELP handoffscope_judge_worker_starts_total Judge worker processes started "
                "(more than 1: a worker died and was replaced).",
                "# TYPE handoffscope_judge_worker_starts_total counter",
                f"handoffscope_judge_worker_starts_total {starts}",
            ]
            sizes = [_resident_bytes(pid) for pid in pids]
            worker_rss = sum(n for n in sizes if n is not None) if pids else None
            if worker_rss is not None:
                out += [
                    "# HELP handoffscope_judge_worker_resident_memory_bytes The judge worker "
                    "processes' RSS, summed (add it to process_resident_memory_bytes for the "
                    "collector's).",
                    "# TYPE handoffscope_judge_worker_resident_memory_bytes gauge",
                    f"handoffscope_judge_worker_resident_memory_bytes {worker_rss}",
                ]
        for name, value in sorted(self.engine_stats().items()):
            full = f"handoffscope_engine_{name}_total"
            out += [f"# TYPE {full} counter", f"{full} {value}"]
        if self.engine_memory is not None:
            held, bound = self.engine_memory()
            out += [
                "# HELP handoffscope_engine_hot_handoffs Handoffs, waits and runs the judge "
                "holds in memory (evidence for one that left comes back from the store: "
                "handoffscope_engine_runs_reloaded_total).",
                "# TYPE handoffscope_engine_hot_handoffs gauge",
                f"handoffscope_engine_hot_handoffs {held}",
                "# HELP handoffscope_engine_hot_handoffs_limit Their bound (--max-hot-handoffs).",
                "# TYPE handoffscope_engine_hot_handoffs_limit gauge",
                f"handoffscope_engine_hot_handoffs_limit {bound}",
            ]
        for family in self.families:
            out += family(scope)
        rss = _resident_bytes()
        if rss is not None:
            out += [
                "# HELP process_resident_memory_bytes Resident memory size in bytes.",
                "# TYPE process_resident_memory_bytes gauge",
                f"process_resident_memory_bytes {rss}",
            ]
        return "\n".join(out) + "\n"
