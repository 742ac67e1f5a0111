"""Health as metrics: what the Live board and the Approvals page show, for Prometheus.

`HealthMetrics(store, grace_seconds=..., top=...)` renders these families on `/metrics`
(docs/api.md lists them; a test keeps that list equal to what is served):

| metric | type | meaning |
|---|---|---|
| `handoffscope_runs_in_flight{service}` | gauge | runs with no terminal status, however old their last evidence |
| `handoffscope_runs_stuck{service}` | gauge | of those, silent for longer than the grace window, with no open wait, not acknowledged |
| `handoffscope_runs_looping{service}` | gauge | runs whose handoffs loop, in flight or last seen in the last `LOOPING_WINDOW_S` (an hour, the Live board's default window): a loop usually ends at its turn limit within seconds; not acknowledged |
| `handoffscope_approvals_overdue{service}` | gauge | open waits past their deadline, not acknowledged |
| `handoffscope_approvals_uncertain{service}` | gauge | open waits missing one of the five wait facts, not acknowledged |
| `handoffscope_approvals_waiting{service}` | gauge | open waits with every fact and a deadline ahead |
| `handoffscope_handoffs_total{service,from_agent,to_agent,verdict}` | counter | settled handoffs by verdict |
| `handoffscope_rejections_total{service,reason}` | counter | rejected handoffs by reason (`route` or the contract's rejection reason) |
| `handoffscope_tokens_total{service,verdict,direction}` | counter | tokens the runs' models read (`direction="input"`) and wrote (`"output"`), by the verdict each run ended in |
| `handoffscope_model_calls_total{service,verdict}` | counter | model calls of those runs |
| `handoffscope_cost_usd_total{service,verdict}` | counter | what those runs cost, where it could be priced (docs/api.md, Usage) |
| `handoffscope_acknowledged{service,event}` | gauge | active acknowledgements (`run_stuck`, `run_looping`, `approval_overdue`) |
| `handoffscope_health_age_seconds` | gauge | how old the figures above are (they are cached) |

The alert gauges (stuck, looping, overdue, uncertain) leave out what an operator acknowledged
(docs/alerts.md, "Acknowledge and silence"), so a Prometheus rule stops firing for it
while someone has it in hand; the Live board's tiles still count everything and say how
many are acknowledged. `handoffscope_acknowledged` has a sample for every labelled service
and event, zeros included.

Every figure comes from the derived tables through the same SQL shape as the query API
(`health_runs.sql` is `live_runs.sql` counted, `health_waits.sql` is `approvals.sql`
counted), so `/metrics` and `/api/v1/live` or `/api/v1/approvals` agree; the counters
come from the rollups the control-flow and weekly-review views read, never from a scan
of `handoffs`. One computation serves every scrape for `ttl` seconds: a scrape runs a
few small queries on a reader cursor (MVCC, beside the writer), and a burst of scrapes
runs them once.

Cardinality is bounded: the `top` busiest services get their own `service` label and
the rest are summed under `other`; likewise the `top` busiest edges keep their agents,
every other edge of a service is `from_agent="other",to_agent="other"`. The chosen
services and edges stay chosen for the life of the process (a label never moves to
`other` and back), and the counters only go up: a rollup row that shrinks (retention
deleting old days) is not subtracted, as Prometheus expects of a counter. `verdict` and
`reason` take their values from semconv (`PRECEDENCE`, `REJECTION_REASONS`): every
verdict has a sample for each edge that has handoffs, and every reason one for each
labelled service, zeros included, so a rule's `rate()` has a series from the first
scrape. Gauges have a sample for every labelled service and `other`.

A reader scoped to services (docs/security.md) gets a view of its own (`_View`): the
busiest of its services and edges take the labels, and its counters are its own, so a
team's service is never summed into `other` because other teams' busier ones took the
labels. The figures are read once for every view.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.verdicts.evidence import grace_ns
from handoffscope.instrumentation.verdicts.explain import REJECTION_BUCKETS

from .credentials import EVERY_SERVICE, Scope
from .metrics import escape
from .query.api import acknowledged_counts
from .store import statements

log = logging.getLogger(__name__)

NS = 1_000_000_000
WINDOW_S = 24 * 3600
"""The window of the trend figures health_runs.sql also computes (unused here)."""
LOOPING_WINDOW_S = 3600
"""How far back `handoffscope_runs_looping` counts runs that looped and ended (the Live
board's default window, so its tile and the gauge agree)."""
OTHER = "other"
UNKNOWN = "unknown"
"""Label value for a service or agent the evidence did not name."""
REJECTION_REASONS = REJECTION_BUCKETS
NANO = 10**9
USAGE_FIGURES = ("input_tokens", "output_tokens", "model_calls", "cost_nusd")
"""health_usage.sql's sums, in order."""
USAGE_FAMILIES: tuple[tuple[str, str, tuple[tuple[str, dict[str, str]], ...]], ...] = (
    (
        "tokens",
        "Tokens the runs' models read and wrote, by service and the verdict each run ended in.",
        (("input_tokens", {"direction": "input"}), ("output_tokens", {"direction": "output"})),
    ),
    ("model_calls", "Model calls of those runs.", (("model_calls", {}),)),
    ("cost_usd", "What those runs cost in USD, where it could be priced.", (("cost_nusd", {}),)),
)

GAUGES = {
    "runs_in_flight": "Runs with no terminal status, however old their last evidence.",
    "runs_stuck": "Runs in flight silent for longer than the grace window, with no open wait, "
    "not acknowledged.",
    "runs_looping": "Runs whose handoffs loop, in flight or last seen in the last hour, "
    "not acknowledged.",
    "approvals_overdue": "Open waits past their deadline, not acknowledged.",
    "approvals_uncertain": "Open waits missing an owner, reason, future deadline, resume token "
    "or persisted state, not acknowledged.",
    "approvals_waiting": "Open waits with every fact present and a deadline ahead.",
}
WAIT_GAUGES = {
    sc.APPROVAL_OVERDUE: "approvals_overdue",
    sc.WAIT_UNCERTAIN: "approvals_uncertain",
    sc.WAITING_ON_APPROVAL: "approvals_waiting",
}
ACKNOWLEDGED_GAUGES = {
    sc.NOTIFY_RUN_STUCK: "runs_stuck",
    sc.NOTIFY_RUN_LOOPING: "runs_looping",
    sc.NOTIFY_APPROVAL_OVERDUE: "approvals_overdue",
    sc.NOTIFY_WAIT_UNCERTAIN: "approvals_uncertain",
}
"""The gauges that leave acknowledged items out, by the event silenced (an uncertain
wait's `wait_uncertain` is silenced by its `approval_overdue` acknowledgement)."""
ACK_EVENTS = (sc.NOTIFY_RUN_STUCK, sc.NOTIFY_RUN_LOOPING, sc.NOTIFY_APPROVAL_OVERDUE)
"""The `event` label of `handoffscope_acknowledged`: what an acknowledgement names."""
FAMILIES = (
    *(f"handoffscope_{g}" for g in GAUGES),
    "handoffscope_acknowledged",
    "handoffscope_handoffs_total",
    "handoffscope_rejections_total",
    *(f"handoffscope_{name}_total" for name in ("tokens", "model_calls", "cost_usd")),
    "handoffscope_health_age_seconds",
)
"""Every family this module renders (docs/api.md lists them)."""


def _labels(**labels: str) -> str:
    return ",".join(f'{k}="{escape(v)}"' for k, v in labels.items())


def _name(value: str | None) -> str:
    return value if value else UNKNOWN


class _TopSet:
    """The first `limit` keys offered, busiest first; once in, a key stays in."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.members: set[Any] = set()

    def admit(self, counts: dict[Any, int]) -> None:
        for key, _ in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            if len(self.members) >= self.limit:
                return
            self.members.add(key)

    def __contains__(self, key: object) -> bool:
        return key in self.members


class _Monotone:
    """Counters fed with totals read from a rollup; only increases are added.

    Starts at the stored total (so a restarted collector reports what the file knows,
    and Prometheus' reset handling sees a rise, not a fall).
    """

    def __init__(self) -> None:
        self._last: dict[Any, int] = {}
        self._value: dict[Any, int] = {}

    def update(self, totals: dict[Any, int]) -> None:
        for key, total in totals.items():
            last = self._last.get(key)
            if last is None:
                self._value[key] = max(total, 0)
            elif total > last:
                self._value[key] += total - last
            self._last[key] = total

    def get(self, key: Any) -> int:
        return self._value.get(key, 0)

    def keys(self) -> Iterable[Any]:
        return self._value.keys()


class _Figures(NamedTuple):
    """What one computation read (each row's service first, but `active`'s, 4th)."""

    runs: list[tuple]
    waits: list[tuple]
    active: list[tuple]
    acked: dict[tuple[str | None, str], int]
    handoffs: list[tuple]
    rejections: list[tuple]
    usage: list[tuple]


class _View:
    """The health families as one set of readers sees them: its own busiest services and
    edges, its own counters. Every reader of one scope shares one view, so its labels stay
    put and its counters only go up, as for the unscoped reader."""

    def __init__(self, top: int) -> None:
        self._services = _TopSet(top)
        self._edges = _TopSet(top)
        self._handoffs = _Monotone()
        self._rejections = _Monotone()
        self._usage = _Monotone()
        """(service, verdict, figure) -> total: input_tokens, output_tokens, model_calls, cost_nusd."""

    def _service(self, service: str | None) -> str:
        s = _name(service)
        return s if s in self._services else OTHER

    def lines(self, got: _Figures, sees: Callable[[str | None], bool]) -> list[str]:
        """The families' lines over the rows of services `sees` admits."""
        runs, waits, handoffs, rejections, usage = (
            [r for r in rows if sees(r[0])]
            for rows in (
                got.runs,
                got.waits,
                got.handoffs,
                got.rejections,
                got.usage,
            )
        )
        active = [r for r in got.active if sees(r[3])]
        acked = {k: n for k, n in got.acked.items() if sees(k[0])}
        per_service: dict[str, int] = defaultdict(int)
        for service, _f, _t, _v, n in handoffs:
            per_service[_name(service)] += n
        for service, *_rest in runs:
            per_service.setdefault(_name(service), 0)
        for service, _v, _n, _new in waits:
            per_service.setdefault(_name(service), 0)
        self._services.admit(dict(per_service))
        edges: dict[tuple[str, str, str], int] = defaultdict(int)
        for service, f, t, _v, n in handoffs:
            edges[(_name(service), _name(f), _name(t))] += n
        self._edges.admit(dict(edges))

        gauges: dict[str, dict[str, int]] = {g: defaultdict(int) for g in GAUGES}
        for service, in_flight, stuck, looping, _stuck_new, _looping_new, _ in runs:
            s = self._service(service)
            gauges["runs_in_flight"][s] += in_flight
            gauges["runs_stuck"][s] += stuck
            gauges["runs_looping"][s] += looping
        for service, verdict, n, _new in waits:
            gauge = WAIT_GAUGES.get(verdict)
            if gauge is not None:
                gauges[gauge][self._service(service)] += n
        for (service, event), n in acked.items():
            gauges[ACKNOWLEDGED_GAUGES[event]][self._service(service)] -= n
        acknowledged: dict[tuple[str, str], int] = defaultdict(int)
        for _event, _run, _handoff, service, *_rest in active:
            acknowledged[(self._service(service), _event)] += 1

        handoff_totals: dict[tuple[str, str, str, str], int] = defaultdict(int)
        for service, f, t, verdict, n in handoffs:
            edge = (_name(service), _name(f), _name(t))
            s = self._service(service)
            f, t = (edge[1], edge[2]) if edge in self._edges else (OTHER, OTHER)
            handoff_totals[(s, f, t, verdict)] += n
        self._handoffs.update(dict(handoff_totals))
        rejection_totals: dict[tuple[str, str], int] = defaultdict(int)
        for service, reason, n in rejections:
            rejection_totals[(self._service(service), reason)] += n
        self._rejections.update(dict(rejection_totals))
        usage_totals: dict[tuple[str, str, str], int] = defaultdict(int)
        for service, verdict, *sums in usage:
            for figure, n in zip(USAGE_FIGURES, sums, strict=True):
                usage_totals[(self._service(service), verdict, figure)] += int(n or 0)
        self._usage.update(dict(usage_totals))

        services = sorted(self._services.members) + [OTHER]
        out: list[str] = []
        for gauge, help_ in GAUGES.items():
            full = f"handoffscope_{gauge}"
            out += [f"# HELP {full} {help_}", f"# TYPE {full} gauge"]
            out += [f"{full}{{{_labels(service=s)}}} {gauges[gauge].get(s, 0)}" for s in services]
        full = "handoffscope_acknowledged"
        out += [
            f"# HELP {full} Active acknowledgements (silences) by service and event.",
            f"# TYPE {full} gauge",
        ]
        out += [
            f"{full}{{{_labels(service=s, event=e)}}} {acknowledged.get((s, e), 0)}"
            for s in services
            for e in ACK_EVENTS
        ]
        full = "handoffscope_handoffs_total"
        out += [
            f"# HELP {full} Settled handoffs by service, edge (busiest; others summed) and verdict.",
            f"# TYPE {full} counter",
        ]
        edge_keys = sorted({k[:3] for k in self._handoffs.keys()})  # noqa: SIM118 (not a dict)
        for s, f, t in edge_keys:
            for verdict in sc.PRECEDENCE:
                n = self._handoffs.get((s, f, t, verdict))
                labels = _labels(service=s, from_agent=f, to_agent=t, verdict=verdict)
                out.append(f"{full}{{{labels}}} {n}")
        full = "handoffscope_rejections_total"
        out += [
            f"# HELP {full} Rejected handoffs (route_rejected, contract_rejected) by service and reason.",
            f"# TYPE {full} counter",
        ]
        for s in services:
            for reason in REJECTION_REASONS:
                n = self._rejections.get((s, reason))
                out.append(f"{full}{{{_labels(service=s, reason=reason)}}} {n}")
        spent = sorted({k[:2] for k in self._usage.keys()})  # noqa: SIM118 (not a dict)
        for name, help_, figures in USAGE_FAMILIES:
            full = f"handoffscope_{name}_total"
            out += [f"# HELP {full} {help_}", f"# TYPE {full} counter"]
            for s, verdict in spent:
                for figure, extra in figures:
                    n = self._usage.get((s, verdict, figure))
                    value = n / NANO if figure == "cost_nusd" else n
                    labels = _labels(service=s, verdict=verdict, **extra)
                    out.append(
                        f"{full}{{{labels}}} {value:g}"
                        if figure == "cost_nusd"
                        else f"{full}{{{labels}}} {value}"
                    )
        return out


MAX_VIEWS = 256
"""Scopes whose views are kept (their labels sticky, their counters monotone); a reader of
a scope beyond these gets a view made for its scrape (counters from the stored totals)."""


class HealthMetrics:
    """The health families of `/metrics`, read at most once per `ttl` seconds and shown to
    each scope of readers over its own services (docs/security.md)."""

    def __init__(
        self,
        store: Any,
        *,
        grace_seconds: float,
        top: int,
        ttl: float = 5.0,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.store = store
        self.grace_ns = grace_ns(grace_seconds)
        self.ttl_ns = int(ttl * NS)
        self.clock = clock
        self.top = top
        self._views: dict[tuple[str, ...] | None, _View] = {}
        self._lock = threading.Lock()
        self._figures: _Figures | None = None
        self._computed_ns: int | None = None

    # --- reading ---------------------------------------------------------------------

    def read(self, now: int) -> _Figures:
        cur = self.store.cursor()
        try:
            runs = statements.rows(
                cur,
                "query/health_runs",
                {
                    "since": now - WINDOW_S * NS,
                    "looped_since": now - LOOPING_WINDOW_S * NS,
                    "stuck_before": now - self.grace_ns,
                    "stuck_since": now - WINDOW_S * NS - self.grace_ns,
                    "started": sc.RUN_STATUS_STARTED,
                    "service": None,
                    "scope": None,
                },
            )
            waits = statements.rows(cur, "query/health_waits", {"now": now, "since": now})
            active = statements.rows(cur, "ack/active_acknowledgements", {"now": now})
            acked = acknowledged_counts(
                cur,
                now,
                looped_since=now - LOOPING_WINDOW_S * NS,
                stuck_before=now - self.grace_ns,
                active=bool(active),
            )
            handoffs = statements.rows(cur, "query/health_handoffs", {"now": now})
            rejections = statements.rows(cur, "query/health_rejections")
            usage = statements.rows(cur, "query/health_usage")
        finally:
            cur.close()
        return _Figures(runs, waits, active, dict(acked), handoffs, rejections, usage)

    def render(self, scope: Scope = EVERY_SERVICE) -> list[str]:
        """The families as Prometheus text lines for readers of `scope`; the figures are
        read again when older than `ttl`."""
        with self._lock:
            now = self.clock()
            if self._computed_ns is None or now - self._computed_ns >= self.ttl_ns:
                try:
                    self._figures = self.read(now)
                    self._computed_ns = now
                except Exception:
                    # The rest of /metrics still answers (a failed scrape would page as
                    # "collector down"); the age gauge shows the figures going stale.
                    log.warning("health metrics: computing failed", exc_info=True)
            if self._figures is None or self._computed_ns is None:
                return []
            key = scope.services
            view = self._views.get(key)
            if view is None:
                view = _View(self.top)
                if len(self._views) < MAX_VIEWS:
                    self._views[key] = view
            lines = view.lines(self._figures, scope.sees)
            age = (now - self._computed_ns) / NS
            return [
                *lines,
                "# HELP handoffscope_health_age_seconds Age of the cached health figures.",
                "# TYPE handoffscope_health_age_seconds gauge",
                f"handoffscope_health_age_seconds {age:.3f}",
            ]
