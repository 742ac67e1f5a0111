"""Two REAL collectors on one REAL PostgreSQL (issue 16): a run comes together in the
shared store, is judged once, and survives a collector's death.

- A run whose spans arrive under two trace ids (a LangGraph / Agents SDK resume), its
  exports alternating between the two collectors: one run in the API of both, one row
  per handoff and per run, rollups equal to a recount of the handoff rows, and every
  answer of the query API field for field what a single DuckDB collector fed the same
  spans answers (only the seconds-ago figures, which move with the clock, are left out).
- Both collectors judge: the runs' 16 partitions are shared out, 8 each. SIGKILL of one
  during sustained ingest from several real OTLP exporters into both: every acknowledged
  span is stored exactly once (a sender whose collector died re-sends its batch to the
  survivor, as a load balancer's retry would), and every run is judged exactly once
  because the survivor takes the dead one's partitions over from the shared work list.

Nothing here times anything: waits are bounded polls (`support.polling.eventually`).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from support.collector import CollectorProcess, Collectors, otlp_exporter
from support.polling import eventually

from handoffscope.instrumentation import semconv as sc

psycopg = pytest.importorskip("psycopg")

SERVICE = "scale-out-app"
S = 10**9
PARTITIONS = 16
"""The runs' partitions the judges share out (records.PARTITIONS)."""


def held(collector: CollectorProcess) -> int:
    return int(collector.raw_healthz()["judge_partitions_held"])


CLOCK_FIELDS = {"now", "seconds_since_last_activity", "seconds_left", "days"}
"""Answer fields that are, or count up to, the moment of the query: they differ between
any two requests, so the comparison leaves them out (every instant is compared). `days`
is the weekly review's days elapsed in the current week (to 0.001 day: it moves every
86 s; whole weeks say 7)."""


@pytest.fixture
def dsn(postgres_dsn: str) -> str:
    """A fresh database per test (the root conftest's, on this worker's server)."""
    return postgres_dsn


def sql(dsn: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as con:
        return con.execute(query).fetchall()


def backlog(dsn: str) -> int:
    """Commits listed on the shared work list and not judged yet (the ground truth the
    collectors' /healthz reports from their last look)."""
    return sql(dsn, "SELECT count(*) FROM judge_work")[0][0]


def wait_judged(dsn: str, timeout: float = 60.0) -> None:
    eventually(lambda: backlog(dsn), lambda n: n == 0, timeout=timeout, every=0.1, what="judged")


def start_together(collector_factory: Collectors, *args: list[str]) -> list[CollectorProcess]:
    """One collector per argument list, started at once (a start costs seconds here)."""
    started: dict[int, CollectorProcess] = {}
    errors: list[BaseException] = []

    def start(i: int) -> None:
        try:
            started[i] = collector_factory(args=args[i])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(len(args))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [started[i] for i in range(len(args))]


class Recorder:
    """Spans made by a real SDK tracer under a trace id of our choosing, kept, not sent."""

    def __init__(self) -> None:
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer(sc.INSTRUMENTATION_SCOPE)

    def emit(self, trace_id: int, name: str, at: int, attributes: dict[str, Any]) -> None:
        # A remote parent with the given trace id: every span of one half of a run shares
        # it, as the spans of one (resumed) framework invocation do.
        parent = NonRecordingSpan(
            SpanContext(trace_id, trace_id & 0xFFFF_FFFF_FFFF, True, TraceFlags(1))
        )
        span = self.tracer.start_span(
            name, context=trace.set_span_in_context(parent), attributes=attributes, start_time=at
        )
        span.end(end_time=at + 1_000_000)

    def take(self) -> list[ReadableSpan]:
        spans = list(self.memory.get_finished_spans())
        self.memory.clear()
        return spans


def resumed_runs(t0: int) -> list[ReadableSpan]:
    """Two runs, each in two halves under two trace ids, with failures at several
    boundaries so that the comparison covers more than `healthy`."""
    rec = Recorder()
    at = iter(range(t0, t0 + 10_000 * S, S // 10))

    def request(trace_id: int, run: str, hid: str, frm: str, to: str, turn: int, **extra: Any):
        rec.emit(trace_id, sc.SPAN_REQUEST, next(at), {
            sc.RUN_ID: run, sc.HANDOFF_ID: hid, sc.FROM_AGENT: frm, sc.TO_AGENT: to,
            sc.TURN: turn, sc.ROUTE_DECLARED: True, sc.TOOL_CALL_ID: f"call_{hid}",
            sc.CONTEXT_REQUIRED_KEYS: ["order_id"], sc.FINGERPRINT: f"fp-{run}-{turn}",
            sc.STATE_VERSION: turn, **extra,
        })  # fmt: skip

    def accept(trace_id: int, run: str, hid: str, frm: str, to: str, **extra: Any) -> None:
        rec.emit(trace_id, sc.SPAN_ACCEPT, next(at), {
            sc.RUN_ID: run, sc.HANDOFF_ID: hid, sc.ROUTE_GOTO: to, sc.CONTROL_BEFORE: frm,
            sc.CONTROL_AFTER: to, sc.TOOL_CALL_CLOSED: True, sc.DESTINATION_STARTED: True,
            sc.CONTEXT_MISSING_KEYS: [], **extra,
        })  # fmt: skip

    def run_span(trace_id: int, run: str, status: str, **extra: Any) -> None:
        rec.emit(trace_id, sc.SPAN_RUN, next(at), {sc.RUN_ID: run, sc.RUN_STATUS: status, **extra})

    first, resume = 0x1A << 64 | 1, 0x1B << 64 | 2
    # Run 1: a healthy handoff, then (after the resume) a contract rejection and an
    # undeclared route; completed with a passing verifier.
    run_span(first, "run-resumed", sc.RUN_STATUS_STARTED)
    request(first, "run-resumed", "h1", "triage", "billing", 1)
    accept(first, "run-resumed", "h1", "triage", "billing")
    request(first, "run-resumed", "h2", "billing", "refunds", 2)
    accept(
        resume, "run-resumed", "h2", "billing", "refunds",
        **{sc.DESTINATION_STARTED: False, sc.REJECTION_REASON: "stale"},
    )  # fmt: skip
    request(resume, "run-resumed", "h3", "billing", "fraud", 3, **{sc.ROUTE_DECLARED: False})
    accept(resume, "run-resumed", "h3", "billing", "fraud")
    rec.emit(resume, sc.SPAN_OUTCOME, next(at), {
        sc.RUN_ID: "run-resumed", sc.OUTCOME_VERIFIER: "refund_check",
        sc.OUTCOME_RESULT: sc.OUTCOME_PASS, sc.OUTCOME_RECEIPT_ID: "rcpt-1",
    })  # fmt: skip
    run_span(resume, "run-resumed", sc.RUN_STATUS_COMPLETED, **{sc.RUN_FINAL_AGENT: "fraud"})
    # Run 2: a loop (the same destination, fingerprint and state again) across the resume,
    # an open tool call, and a stop at the turn limit.
    first, resume = 0x2A << 64 | 3, 0x2B << 64 | 4
    run_span(first, "run-looping", sc.RUN_STATUS_STARTED)
    loop = {sc.FINGERPRINT: "fp-same", sc.STATE_VERSION: 7}
    request(first, "run-looping", "h1", "planner", "flights", 1, **loop)
    accept(first, "run-looping", "h1", "planner", "flights")
    request(first, "run-looping", "h2", "flights", "planner", 2)
    accept(resume, "run-looping", "h2", "flights", "planner", **{sc.TOOL_CALL_CLOSED: False})
    request(resume, "run-looping", "h3", "planner", "flights", 3, **loop)
    accept(resume, "run-looping", "h3", "planner", "flights")
    run_span(
        resume, "run-looping", sc.RUN_STATUS_MAX_TURNS,
        **{sc.RUN_FINAL_AGENT: "flights", sc.RUN_TURNS: 3},
    )  # fmt: skip
    spans = rec.take()
    rec.provider.shutdown()
    return spans


def without_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_clock(v) for k, v in value.items() if k not in CLOCK_FIELDS}
    if isinstance(value, list):
        return [without_clock(v) for v in value]
    return value


def answers(collector: CollectorProcess, run_ids: list[str]) -> dict[str, Any]:
    """Every query API answer a dashboard would ask about these runs."""
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 2 * 86_400))
    paths: dict[str, tuple[str, dict[str, Any]]] = {
        **{f"run {r}": (f"/api/v1/runs/{r}", {}) for r in run_ids},
        "runs": ("/api/v1/runs", {"since": since, "ids": "true"}),
        "runs loop": ("/api/v1/runs", {"since": since, "verdict": sc.LOOP}),
        **{
            f"runs by {sort}": ("/api/v1/runs", {"since": since, "sort": sort, "limit": 1})
            for sort in ("newest", "severity", "silent", "last_seen")
        },
        "runs agent": ("/api/v1/runs", {"since": since, "agent": "fraud"}),
        "runs q": ("/api/v1/runs", {"since": since, "q": "run-res"}),
        "runs in flight": ("/api/v1/runs", {"since": since, "state": "in_flight"}),
        "handoffs": ("/api/v1/handoffs", {"since": since}),
        "handoffs unhealthy": ("/api/v1/handoffs", {"since": since, "unhealthy": "true"}),
        "edges": ("/api/v1/edges", {"since": since}),
        "loops": ("/api/v1/loops", {"since": since}),
        "false completions": ("/api/v1/false_completions", {"since": since}),
        "approvals": ("/api/v1/approvals", {}),
        "live": ("/api/v1/live", {"window": 3600}),
        "weekly": ("/api/v1/review/weekly", {"weeks": 2}),
        "services": ("/api/v1/services", {}),
    }
    return {label: without_clock(collector.api(p, **q)) for label, (p, q) in paths.items()}


def test_a_resumed_run_split_across_two_collectors_is_one_run_judged_once(
    dsn: str, collector_factory: Collectors
) -> None:
    # Two on the shared store, and the DuckDB default whose answers are the reference.
    *pg, single = start_together(collector_factory, ["--store", dsn], ["--store", dsn], [])
    spans = resumed_runs(time.time_ns() - 600 * S)
    assert len({s.context.trace_id for s in spans}) == 4  # two halves of each of two runs
    exporters = [otlp_exporter(c) for c in (*pg, single)]
    try:
        # One span an export, alternating between the collectors: each half of each run
        # reaches both, and the DuckDB collector gets the same spans in the same order.
        for i, span in enumerate(spans):
            assert exporters[i % 2].export([span]) == SpanExportResult.SUCCESS
            assert exporters[2].export([span]) == SpanExportResult.SUCCESS
    finally:
        for e in exporters:
            e.shutdown()
    wait_judged(dsn)
    single.judged()
    run_ids = ["run-resumed", "run-looping"]

    reference = answers(single, run_ids)
    for collector in pg:
        got = answers(collector, run_ids)
        for label in reference:
            assert got[label] == reference[label], label
    resumed = reference["run run-resumed"]
    assert len(resumed["trace_ids"]) == 2 and resumed["handoff_count"] == 3
    assert [h["verdict"] for h in resumed["handoffs"]] == [
        sc.HEALTHY, sc.CONTRACT_REJECTED, sc.ROUTE_REJECTED,
    ]  # fmt: skip
    assert reference["run run-looping"]["loop"] is True
    # A page smaller than its matches: the total still counts them all.
    page = reference["runs by newest"]
    assert (len(page["runs"]), page["total"]) == (1, 2)

    # Judged once: one row per run and per handoff, whichever collector judged what.
    assert sql(dsn, "SELECT run_id, count(*) FROM runs GROUP BY 1 ORDER BY 1") == [
        ("run-looping", 1),
        ("run-resumed", 1),
    ]
    twice = "SELECT run_id, handoff_id FROM handoffs GROUP BY 1, 2 HAVING count(*) <> 1"
    assert sql(dsn, twice) == []
    assert sql(dsn, "SELECT count(*) FROM handoffs")[0][0] == 6
    # The rollups, kept with +1/-1 deltas, equal a recount of the handoff rows
    # (engine/__init__.py: daily_key, edge_key).
    assert sql(
        dsn,
        """SELECT day, service, from_agent, to_agent, reason, handoffs FROM handoff_daily
           WHERE handoffs <> 0 ORDER BY 1, 2, 3, 4, 5""",
    ) == sql(
        dsn,
        """SELECT DATE '1970-01-01' + (first_seen_ns / 86400000000000)::int, coalesce(service, ''),
                  coalesce(from_agent, ''), coalesce(to_agent, ''),
                  CASE verdict WHEN 'route_rejected' THEN 'route'
                               WHEN 'contract_rejected' THEN coalesce(rejection_reason, '')
                               ELSE '' END AS reason,
                  count(*)
           FROM handoffs GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5""",
    )
    edge_recount = """
        SELECT first_seen_ns / 3600000000000, coalesce(service, ''), coalesce(from_agent, ''),
               coalesce(to_agent, ''),
               CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict
                    WHEN flip1_ns IS NOT NULL THEN flip1_verdict ELSE verdict END,
               route_declared IS FALSE, count(*)
        FROM handoffs WHERE kind IS DISTINCT FROM 'delegation'
        GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6"""
    assert sql(
        dsn,
        """SELECT hour, service, from_agent, to_agent, verdict, undeclared, handoffs
           FROM edge_hourly WHERE handoffs <> 0 ORDER BY 1, 2, 3, 4, 5, 6""",
    ) == sql(dsn, edge_recount)


# --- a collector killed during sustained ingest --------------------------------------------

RUNS_PER_EXPORT = 16
SENDERS_EACH = 2
EXPORTS_AFTER_KILL = 8
"""Acknowledged exports into the survivor after the kill before the senders stop."""


class Sender(threading.Thread):
    """A real OTLP/HTTP exporter sending complete runs as fast as they are acknowledged;
    when its collector dies it re-sends the failed batch to the survivor and stays there."""

    def __init__(self, index: int, target: CollectorProcess, survivor: CollectorProcess) -> None:
        super().__init__(name=f"sender-{index}", daemon=True)
        self.index = index
        self.target, self.survivor = target, survivor
        self.rec = Recorder()
        self.stop = threading.Event()
        self.acked: list[tuple[str, str]] = []  # (trace_id, span_id), hex as stored
        self.runs: list[str] = []
        self.acked_by: Counter[int] = Counter()  # http port -> acknowledged exports
        self.failed = 0
        self.error: BaseException | None = None

    def batch(self, n: int) -> tuple[list[ReadableSpan], list[str]]:
        runs = []
        for k in range(RUNS_PER_EXPORT):
            run = f"load-{self.index}-{n}-{k}"
            runs.append(run)
            tid = (self.index + 1) << 96 | n << 32 | k
            at = time.time_ns()
            common = {sc.RUN_ID: run, sc.HANDOFF_ID: "h1"}
            self.rec.emit(tid, sc.SPAN_REQUEST, at, {
                **common, sc.FROM_AGENT: "triage", sc.TO_AGENT: "billing", sc.TURN: 1,
                sc.ROUTE_DECLARED: True,
            })  # fmt: skip
            self.rec.emit(tid, sc.SPAN_ACCEPT, at + 1, {
                **common, sc.CONTROL_BEFORE: "triage", sc.CONTROL_AFTER: "billing",
                sc.DESTINATION_STARTED: True,
            })  # fmt: skip
            self.rec.emit(tid, sc.SPAN_OUTCOME, at + 2, {
                **common, sc.OUTCOME_VERIFIER: "check", sc.OUTCOME_RESULT: sc.OUTCOME_PASS,
            })  # fmt: skip
            self.rec.emit(tid, sc.SPAN_RUN, at + 3, {
                sc.RUN_ID: run, sc.RUN_STATUS: sc.RUN_STATUS_COMPLETED, sc.RUN_FINAL_AGENT: "billing",
            })  # fmt: skip
        return self.rec.take(), runs

    def run(self) -> None:
        try:
            # A short export timeout: a dead collector should cost seconds, not the default 10.
            exporter = otlp_exporter(self.target, timeout=5.0)
            n = 0
            while not self.stop.is_set():
                spans, runs = self.batch(n)
                n += 1
                while exporter.export(spans) != SpanExportResult.SUCCESS:
                    self.failed += 1
                    if self.target is self.survivor:
                        raise AssertionError("the survivor refused an export")
                    exporter.shutdown()
                    self.target = self.survivor
                    exporter = otlp_exporter(self.target, timeout=5.0)
                self.acked_by[self.target.http_port] += 1
                self.acked += [
                    (f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans
                ]
                self.runs += runs
            exporter.shutdown()
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.rec.provider.shutdown()


def test_both_collectors_judge_and_a_sigkill_loses_nothing_and_judges_every_run_once(
    dsn: str, collector_factory: Collectors
) -> None:
    # One judges in one worker process, the other splits its partitions over two
    # (`--judge-workers 2`): each judges its share, and takes the other's over from its rows.
    both = start_together(
        collector_factory, ["--store", dsn], ["--store", dsn, "--judge-workers", "2"]
    )
    shares = eventually(
        lambda: [held(c) for c in both],
        lambda n: n == [PARTITIONS // 2] * 2,
        what="the two collectors share the partitions out evenly",
    )
    assert sum(shares) == PARTITIONS
    holder, survivor = both
    senders = [
        Sender(i, target, survivor) for i, target in enumerate([holder, survivor] * SENDERS_EACH)
    ]
    for s in senders:
        s.start()
    try:

        def acked_into(port: int) -> int:
            return sum(s.acked_by[port] for s in senders)

        # Load on both, then the kill while every sender is mid-stream.
        eventually(
            lambda: min(acked_into(holder.http_port), acked_into(survivor.http_port)),
            lambda n: n >= 4 * SENDERS_EACH,
            what="exports acknowledged by both collectors",
        )
        holder.kill()
        after = acked_into(survivor.http_port)
        eventually(
            lambda: acked_into(survivor.http_port),
            lambda n: n >= after + EXPORTS_AFTER_KILL,
            what="exports acknowledged by the survivor after the kill",
        )
    finally:
        for s in senders:
            s.stop.set()
        for s in senders:
            s.join(60)
    assert [s.error for s in senders] == [None] * len(senders)
    assert sum(s.failed for s in senders) >= 1  # the kill did cut senders off

    # Every acknowledged span exactly once; nothing else counted twice either.
    stored = Counter(sql(dsn, "SELECT trace_id, span_id FROM spans"))
    acked = [key for s in senders for key in s.acked]
    assert len(acked) == len(set(acked))
    assert [k for k in acked if stored[k] != 1] == []
    assert [k for k, n in stored.items() if n != 1] == []

    # Every run judged, once: the survivor took the dead one's partitions over.
    eventually(lambda: held(survivor), lambda n: n == PARTITIONS, what="all partitions taken")
    wait_judged(dsn)
    runs = {s_run for s in senders for s_run in s.runs}
    judged = dict(sql(dsn, "SELECT run_id, count(*) FROM runs GROUP BY 1"))
    assert [r for r in runs if judged.get(r) != 1] == []
    assert (
        sql(dsn, "SELECT count(*) FROM handoffs GROUP BY run_id, handoff_id HAVING count(*) > 1")
        == []
    )
    # And through the survivor's API, the last run acknowledged before the senders stopped.
    last = max((s for s in senders if s.runs), key=lambda s: len(s.runs)).runs[-1]
    run = survivor.run(last, until=lambda r: r["verdict"] == sc.HEALTHY)
    assert (run["verdict"], run["handoff_count"], run["status"]) == (
        sc.HEALTHY,
        1,
        sc.RUN_STATUS_COMPLETED,
    )
