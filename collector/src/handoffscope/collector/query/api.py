"""The query API: what every dashboard view reads (docs/api.md), as JSON (and CSV).

`api_routes(store, engine, settings)` returns the Starlette routes for `/api/v1/*`,
`/openapi.json` (the OpenAPI 3.1 document of these endpoints, `openapi.py`) and
`/docs` (a human page rendered from it). The server mounts them beside the OTLP
receiver; auth, when a token is set, is the server's middleware.

How a request is answered:

1. Parameters are parsed and checked in the event loop (`params.py`); a bad value
   is a 400 `{"error": ...}` before any database work.
2. The reads run in Starlette's thread pool on a fresh cursor of the collector's own
   DuckDB connection (`store.cursor()`): DuckDB calls block, and a cursor per request
   lets reads run beside the writer and each other (MVCC: each sees the last commit).
3. Every query is one `.sql` file in `store/sql/query/`, parameters bound.

Time-based verdicts are judged at the time of the request: one `now` is taken per
request and bound into every query (`hs_verdict_at`), and the Python side re-judges the
few rows it details (the *why* of a handoff) with `classify` at that same `now` and the
collector's `--grace-seconds`, so the verdict, its boundary and its explanation agree.
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import io
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.classify import Classification, HandoffEvidence, classify

from ..processor.translate import SOURCES
from ..store.duckdb_store import ATTRIBUTE_COLUMNS, SQL_DIR, load_sql
from ..store.records import handoff_evidence, run_key
from . import openapi as api_openapi
from .params import (
    INT64_MAX,
    INT64_MIN,
    MAX_WEEKS,
    MAX_WINDOW_SECONDS,
    NS,
    RUN_HANDOFFS_DEFAULT,
    RUN_SPANS_DEFAULT,
    BadParam,
    parse_bool,
    parse_choice,
    parse_int,
    parse_limit,
    parse_page,
    parse_service,
    parse_text,
    parse_time,
    parse_verdict,
)
from .path_summary import summarise

log = logging.getLogger(__name__)

QUERY_SQL = SQL_DIR / "query"
PREFIX = "/api/v1"
DEFAULT_WINDOW_S = 24 * 3600
LIVE_WINDOW_S = 3600
LIVE_UNHEALTHY = 20
LIVE_RUNS_LIMIT = 200
RUN_STATES = ("in_flight", "stuck", "looping")
RUN_SORTS = ("newest", "severity", "silent", "last_seen")
SEARCH_SKEW_NS = 3600 * 10**9
"""A search by trace or conversation id reads spans received since an hour before the
window: `since` is on the sender's clock, arrival on the collector's."""
RUN_PATH_LIMIT = 1000
"""Agents of a run's `path` listed in its detail (`path_summary` speaks for all of them)."""
RUN_OUTCOMES_LIMIT = 1000
"""Verifier outcomes listed in a run's detail."""
FAILURES = list(sc.FAILURE_VERDICTS)
NOTIFY_EVENTS = list(sc.NOTIFY_EVENTS)
NS_PER_HOUR = 3600 * NS
NS_PER_DAY = 24 * NS_PER_HOUR
EDGE_RUNS = 20
WEEK_FORMATS = ("json", "csv")
ROUTE_REASON = "route"


# --- small helpers ----------------------------------------------------------------------


def iso(ns: int | None) -> str | None:
    """Epoch ns as `2026-11-30T12:00:00.123Z` (UTC, milliseconds); None stays None."""
    if ns is None:
        return None
    try:
        secs, rem = divmod(ns, NS)
        t = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs)
    except OverflowError:
        return None
    return f"{t:%Y-%m-%dT%H:%M:%S}.{rem // 1_000_000:03d}Z"


def _rows(cur, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    cur.execute(load_sql(name, QUERY_SQL), params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _label(verdict: str | None) -> str | None:
    return sc.VERDICT_LABELS.get(verdict) if verdict else None


def _seconds(a: int | None, b: int | None) -> float | None:
    return None if a is None or b is None else round((a - b) / NS, 3)


def _clamp(ns: int) -> int:
    return max(INT64_MIN, min(ns, INT64_MAX))


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


# --- handoffs: evidence back from a row, boundaries, JSON ----------------------------------


PASSED, FAILED, UNKNOWN, NOT_OBSERVED = sc.PASSED, sc.FAILED, sc.UNKNOWN, sc.NOT_OBSERVED


def boundaries(
    ev: HandoffEvidence, c: Classification, unobserved: tuple[str, ...] | list[str] = ()
) -> dict[str, str]:
    """Each of the six boundaries: passed (evidence says so), failed, unknown or not_observed.

    Unknown means no evidence yet, or not reached because an earlier check failed;
    not_observed that the source cannot see this boundary (`handoff.unobserved`), so a
    healthy verdict says nothing about it. The checks run in DESIGN §4 order, where the
    progress check (loops) sits between the destination and the result, and the wait
    checks come last.
    """
    evidence = {
        sc.BOUNDARY_ROUTE: ev.route_declared is True
        or (ev.route_goto is not None and ev.to_agent is not None),
        sc.BOUNDARY_CONTROL: ev.control_before is not None or ev.control_after is not None,
        sc.BOUNDARY_TOOL_PROTOCOL: ev.tool_call_closed is True,
        sc.BOUNDARY_CONTEXT: ev.destination_started is not None or ev.rejection_reason is not None,
        sc.BOUNDARY_DESTINATION: ev.destination_started is True,
        sc.BOUNDARY_RESULT: ev.outcome_result == sc.OUTCOME_PASS,
    }
    order = list(sc.BOUNDARIES)
    failed = c.failed_boundary
    if failed in order:
        stop = order.index(failed)
    elif failed == sc.BOUNDARY_PROGRESS:
        stop = order.index(sc.BOUNDARY_RESULT)  # a loop is judged before the result
    else:
        stop = len(order)
    if failed == sc.BOUNDARY_RUN:
        stop = order.index(sc.BOUNDARY_DESTINATION)  # the run failed before admission
    out = {}
    for i, b in enumerate(order):
        if i < stop:
            out[b] = PASSED if evidence[b] else UNKNOWN
        elif i == stop and b == failed:
            out[b] = FAILED
        else:
            out[b] = UNKNOWN
        if b in unobserved and out[b] != FAILED:
            out[b] = NOT_OBSERVED
    return out


def handoff_json(
    row: dict[str, Any], now: int, grace: float, *, with_run: bool, with_boundaries: bool
) -> dict[str, Any]:
    ev = handoff_evidence(row)
    c = classify(ev, now_ns=now, grace_seconds=grace)
    verdict = row["verdict_now"]
    if c.verdict != verdict:  # cannot happen unless the stored timeline is stale
        log.warning(
            "handoff %s/%s: stored %s, judged %s", ev.run_id, ev.handoff_id, verdict, c.verdict
        )
        c = Classification(verdict, sc.VERDICT_BOUNDARY.get(verdict), c.why)
    unobserved = list(row["unobserved"] or [])
    out: dict[str, Any] = {}
    if with_run:
        out["run_id"] = row["run_id"]
        out["service"] = row["service"]
    out.update(
        handoff_id=row["handoff_id"],
        kind=row["kind"] or sc.KIND_HANDOFF,
        from_agent=row["from_agent"],
        to_agent=row["to_agent"],
        turn=row["turn"],
        seq=row["seq"],
        requested_at=iso(row["first_seen_ns"]),
        verdict=verdict,
        verdict_label=_label(verdict),
        failed_boundary=c.failed_boundary,
        why=c.why,
        next_step=c.next_step or sc.NEXT_STEPS[verdict],
        fingerprint=row["fingerprint"],
        state_version=row["state_version"],
        history_items_forwarded=row["history_items_forwarded"],
        history_items_total=row["history_items_total"],
        route_declared=row["route_declared"],
        route_goto=row["route_goto"],
        control_before=row["control_before"],
        control_after=row["control_after"],
        tool_call_id=row["tool_call_id"],
        tool_call_closed=row["tool_call_closed"],
        required_keys=list(row["required_keys"] or []),
        missing_keys=list(row["missing_keys"] or []),
        destination_started=row["destination_started"],
        rejection_reason=row["rejection_reason"],
        rejection_fields=list(row["rejection_fields"] or []),
        reason=row["reason"],
        loop=row["loop"],
        claims_done=row["claims_done"],
        outcome_result=row["outcome_result"],
        wait=row["wait_seen"],
        wait_decision=row["wait_decision"],
        unobserved=unobserved,
    )
    if with_boundaries:
        out["boundaries"] = boundaries(ev, c, unobserved)
    return out


def notification_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "event": row["event"],
        "handoff_id": row["handoff_id"],
        "destination": row["destination"],
        "status": row["status"],
        "attempts": row["attempts"],
        "created_at": iso(row["created_ns"]),
        "sent_at": iso(row["sent_ns"]),
    }


def notifications_by_run(cur, run_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """What the notifier recorded for these runs (notifications.sql), per run, oldest first."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if run_ids:
        for r in _rows(cur, "notifications", {"run_ids": run_ids, "events": NOTIFY_EVENTS}):
            out[r["run_id"]].append(notification_json(r))
    return out


def approval_json(
    row: dict[str, Any], now: int, notified: dict[str, list[dict[str, Any]]] | None = None
) -> dict[str, Any]:
    verdict = row["verdict_now"]
    notifications = [
        n for n in (notified or {}).get(row["run_id"], []) if n["handoff_id"] == row["handoff_id"]
    ]
    return {
        "run_id": row["run_id"],
        "handoff_id": row["handoff_id"],
        "service": row["service"],
        "from_agent": row["from_agent"],
        "to_agent": row["to_agent"],
        "owner": row["owner"],
        "reason": row["reason"],
        "deadline": iso(row["deadline_ns"]),
        "seconds_left": _seconds(row["deadline_ns"], now),
        "verdict": verdict,
        "verdict_label": _label(verdict),
        "missing": list(row["missing"]),
        "resume_token_id": row["resume_token_id"],
        "state_persisted": row["state_persisted"],
        "decision": row["decision"],
        "checkpointed_at": iso(row["checkpointed_ns"]),
        "notifications": notifications,
    }


def run_summary_json(row: dict[str, Any], verdict: str) -> dict[str, Any]:
    return {
        "run_id": row["run_id"],
        "service": row["service"],
        "verdict": verdict,
        "verdict_label": _label(verdict),
        "status": row["status"],
        "started_at": iso(row["started_ns"]),
        "last_seen_at": iso(row["last_seen_ns"]),
        "current_agent": row["current_agent"],
        "handoff_count": row["handoff_count"],
        "loop": row["loop"],
        "false_complete": row["false_complete"],
        "failed": row["failed"],
        "unverified": bool(row["unverified"]),
        "pending_approvals": row["pending_approvals"],
        "turns": row["turns"],
        "delegation_count": row["delegation_count"] or 0,
    }


def run_why(row: dict[str, Any], verdict: str, handoffs: list[dict[str, Any]]) -> str:
    """The run's verdict in words: its first failing handoff's why, or the run-level fact."""
    for h in handoffs:
        if h["verdict"] == verdict and h["why"]:
            edge = f"{h['from_agent'] or '?'} → {h['to_agent'] or '?'}"
            return f"{edge} ({h['failed_boundary'] or 'handoff'}): {h['why']}"
    if verdict == sc.LOOP:
        cycle = " → ".join(row["loop_cycle"] or [])
        return f"the run cycles without new work{': ' + cycle if cycle else ''}"
    if verdict == sc.FALSE_COMPLETE:
        return "the run claimed completion without a passing verifier"
    if verdict == sc.RUN_FAILED:
        if row["status"] == sc.RUN_STATUS_MAX_TURNS:
            return "the run hit its turn or recursion limit"
        return "the run crashed (status failed)"
    if verdict == sc.UNVERIFIED:
        svc = row["service"] or "this service"
        return f"completed, but no verifier is reported by {svc}: add record_outcome"
    if verdict == sc.HEALTHY and row["unobserved"]:
        return "every observed boundary passed"
    return sc.VERDICT_LABELS.get(verdict, verdict)


def source_label(source: str | None) -> str | None:
    """How people call the instrumentation a run was translated from ("OpenInference")."""
    if source is None:
        return None
    return SOURCE_LABELS.get(source, source)


def not_observed_note(unobserved: list[str], source: str | None = None) -> str | None:
    """What `healthy` cannot speak for on this run (the source cannot see these checks).

    A run translated from another instrumentation's spans says which, and that waits and
    verifier outcomes are never in them ("from OpenInference spans: ... not observed").
    """
    if source is not None:
        seen = [*unobserved, sc.BOUNDARY_WAIT + "s", "outcomes"]
        return f"from {source_label(source)} spans: " + ", ".join(seen) + " not observed"
    if not unobserved:
        return None
    return "not observed by this source: " + ", ".join(unobserved)


SPAN_ATTRIBUTE_COLUMNS = tuple(ATTRIBUTE_COLUMNS.items())
SOURCE_LABELS = {t.source: t.label for t in SOURCES}


def span_json(row: dict[str, Any]) -> dict[str, Any]:
    attrs = {}
    for attr, col in SPAN_ATTRIBUTE_COLUMNS:
        v = row.get(col)
        if v is not None:
            attrs[attr] = list(v) if isinstance(v, tuple) else v
    return {
        "name": row["name"],
        "handoff_id": row["handoff_id"],
        "trace_id": row["trace_id"],
        "span_id": row["span_id"],
        "start": iso(row["start_ns"]),
        "end": iso(row["end_ns"]),
        "attributes": attrs,
    }


# --- counts: the one query behind each figure -----------------------------------------------


def run_counts(cur, now: int, since: int, grace: float, service: str | None) -> dict[str, int]:
    """Runs in flight, stuck and looping now, and how many of them became so since `since`
    (health_runs.sql): what /metrics, the Live tiles and the runs list's states count."""
    stuck_before = now - int(grace * NS)
    out = dict.fromkeys(("in_flight", "stuck", "looping", "stuck_new", "looping_new"), 0)
    params = {
        "since": since,
        "stuck_before": stuck_before,
        "stuck_since": since - int(grace * NS),
        "started": sc.RUN_STATUS_STARTED,
        "service": service,
    }
    for r in _rows(cur, "health_runs", params):
        for k in out:
            out[k] += int(r[k])
    return out


def wait_counts(
    cur, now: int, since: int, service: str | None
) -> tuple[dict[str, int], dict[str, int]]:
    """Open and expired waits per verdict (run- and handoff-level, any age), and per verdict
    how many deadlines passed since `since` (health_waits.sql)."""
    counts: dict[str, int] = {}
    new: dict[str, int] = {}
    for r in _rows(cur, "health_waits", {"now": now, "since": since}):
        if service is not None and r["service"] != service:
            continue
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + int(r["n"])
        new[r["verdict"]] = new.get(r["verdict"], 0) + int(r["n_new"])
    order = sorted(counts, key=lambda v: sc.RANK.get(v, 99))
    return {v: counts[v] for v in order}, {v: new[v] for v in order}


def false_completion_count(cur, params: dict[str, Any]) -> int:
    """Runs first seen in [since, until) that claimed done without proof."""
    keys = ("since", "until", "service")
    return int(_rows(cur, "false_completions_count", {k: params[k] for k in keys})[0]["n"])


# --- the API ------------------------------------------------------------------------------


class QueryAPI:
    """The handlers; one instance per collector, sharing the store and settings."""

    def __init__(self, store, engine, settings) -> None:
        self.store = store
        self.engine = engine
        self.grace = float(getattr(settings, "grace_seconds", 30.0))
        self.handoff_cap = int(getattr(settings, "max_handoffs_per_run", 0) or 0)
        self.auth = bool(getattr(settings, "token", ""))
        self.spec = api_openapi.build(auth=self.auth)

    def routes(self) -> list[Route]:
        endpoints: list[tuple[str, Callable]] = [
            ("/services", self.services),
            ("/runs", self.runs),
            ("/runs/{run_id:path}", self.run),
            ("/handoffs", self.handoffs),
            ("/edges", self.edges),
            ("/loops", self.loops),
            ("/approvals", self.approvals),
            ("/false_completions", self.false_completions),
            ("/live", self.live),
            ("/review/weekly", self.weekly),
            ("/drops", self.drops),
        ]
        routes = [
            Route(PREFIX + path, self._endpoint(fn), methods=["GET"]) for path, fn in endpoints
        ]
        routes.append(Route("/openapi.json", self.openapi, methods=["GET"]))
        routes.append(Route("/docs", self.docs, methods=["GET"]))
        return routes

    def _endpoint(self, work: Callable[[Request, int], Callable[[Any], Response | dict]]):
        """Wrap `work(request, now) -> read(cursor)`: parse in the loop, read in a thread."""

        async def handle(request: Request) -> Response:
            now = time.time_ns()
            try:
                read = work(request, now)
            except BadParam as exc:
                return _error(400, str(exc))
            result = await run_in_threadpool(self._read, read)
            return result if isinstance(result, Response) else JSONResponse(result)

        handle.__name__ = work.__name__
        return handle

    def _read(self, read: Callable[[Any], Response | dict]) -> Response | dict:
        cur = self.store.cursor()
        try:
            return read(cur)
        finally:
            cur.close()

    # --- common parameters -------------------------------------------------------------

    @staticmethod
    def _window(request: Request, now: int) -> tuple[int, int]:
        """[since, until) in epoch ns: the last 24 h unless the request says otherwise."""
        q = request.query_params
        since = parse_time("since", q.get("since"))
        until = parse_time("until", q.get("until"))
        return (
            now - DEFAULT_WINDOW_S * NS if since is None else since,
            INT64_MAX if until is None else until,
        )

    # --- endpoints -----------------------------------------------------------------------

    def _list_params(self, request: Request, now: int) -> dict:
        """since / until / service / limit: the parameters every list endpoint shares."""
        q = request.query_params
        since, until = self._window(request, now)
        return {
            "since": since,
            "until": until,
            "service": parse_service(q.get("service")),
            "limit": parse_limit(q.get("limit")),
        }

    def services(self, request: Request, now: int):
        def read(cur):
            return {"services": [r["service"] for r in _rows(cur, "services", {})]}

        return read

    def runs(self, request: Request, now: int):
        q = request.query_params
        since, until = self._window(request, now)
        params = {
            "now": now,
            "since": since,
            "until": until,
            "service": parse_service(q.get("service")),
            "verdict": parse_verdict(q.get("verdict")),
            "limit": parse_limit(q.get("limit")),
            "q": parse_text("q", q.get("q")),
            "agent": parse_text("agent", q.get("agent")),
            "state": parse_choice("state", q.get("state"), ("", *RUN_STATES)) or None,
            "sort": parse_choice("sort", q.get("sort"), RUN_SORTS),
            "ranked": list(sc.PRECEDENCE),
            "started": sc.RUN_STATUS_STARTED,
            "stuck_before": now - int(self.grace * NS),
            "spans_since": _clamp(since - SEARCH_SKEW_NS),
        }
        with_ids = parse_bool("ids", q.get("ids"))

        def read(cur):
            rows = _rows(cur, "runs", params)
            ids: dict[str, dict[str, Any]] = {}
            if with_ids and rows:
                lows = [r["min_received_ns"] for r in rows if r["min_received_ns"] is not None]
                if lows:
                    ids = {
                        r["run_id"]: r
                        for r in _rows(
                            cur,
                            "run_ids",
                            {"lo": min(lows), "run_ids": [r["run_id"] for r in rows]},
                        )
                    }
            out = []
            for r in rows:
                body = run_summary_json(r, r["verdict"])
                body.update(
                    final_agent=r["final_agent"],
                    source=r["source"],
                    source_label=source_label(r["source"]),
                    in_flight=bool(r["in_flight"]),
                    stuck=bool(r["stuck"]),
                    seconds_since_last_activity=_seconds(now, r["last_activity_ns"]),
                )
                if with_ids:
                    found = ids.get(r["run_id"]) or {}
                    body["trace_ids"] = list(found.get("trace_ids") or [])
                    body["conversation_ids"] = list(found.get("conversation_ids") or [])
                out.append(body)
            return {"total": rows[0]["total"] if rows else 0, "runs": out}

        return read

    def run(self, request: Request, now: int):
        run_id = request.path_params["run_id"]
        grace = self.grace
        q = request.query_params
        # A run may hold --max-handoffs-per-run handoffs and many more spans: the detail
        # answers one page of each (with totals), so its size is bounded whatever the run.
        h_limit, h_offset = parse_page(
            "handoffs", q.get("handoffs_limit"), q.get("handoffs_offset"), RUN_HANDOFFS_DEFAULT
        )
        s_limit, s_offset = parse_page(
            "spans", q.get("spans_limit"), q.get("spans_offset"), RUN_SPANS_DEFAULT
        )

        def read(cur):
            if sc.check_value(sc.ATTRIBUTES[sc.RUN_ID], run_id) is None:
                return _error(404, f"no run {run_id[:140]!r}")  # no such id can be stored
            key = {"run_id": run_id, "run_key": run_key(run_id)}
            found = _rows(cur, "run", {**key, "now": now})
            if not found:
                return _error(404, f"no run {run_id!r}")
            r = found[0]
            verdict = r["verdict_now"]
            window = {**key, "now": now, "lo": r["first_seen_ns"], "hi": r["last_seen_ns"]}
            handoffs = _rows(cur, "run_handoffs", {**window, "limit": h_limit, "offset": h_offset})
            handoffs_total = _rows(
                cur, "run_handoff_count", {k: v for k, v in window.items() if k != "now"}
            )[0]["n"]
            first_failure = _rows(cur, "run_first_failure", {**window, "verdict": verdict})
            waits = _rows(cur, "run_waits", {**key, "now": now})
            notified = notifications_by_run(cur, [run_id])
            spans: list[dict[str, Any]] = []
            outcome_spans: list[dict[str, Any]] = []
            spans_total = 0
            identities: dict[str, Any] = {}
            if r["min_received_ns"] is not None:
                received = {
                    "run_id": run_id,
                    "lo": r["min_received_ns"],
                    "hi": r["max_received_ns"],
                }
                spans = _rows(cur, "run_spans", {**received, "limit": s_limit, "offset": s_offset})
                identities = _rows(cur, "run_span_count", received)[0]
                spans_total = identities["n"]
                outcome_spans = _rows(
                    cur, "run_outcomes", {**received, "limit": RUN_OUTCOMES_LIMIT}
                )
            body = run_summary_json(r, verdict)
            handoff_list = [
                handoff_json(h, now, grace, with_run=False, with_boundaries=True) for h in handoffs
            ]
            first = [
                handoff_json(h, now, grace, with_run=False, with_boundaries=False)
                for h in first_failure
            ]
            unobserved = list(r["unobserved"] or [])
            path = list(r["path"])
            body.update(
                why=run_why(r, verdict, first),
                # Whichever page of handoffs is asked for, the one that decides the verdict.
                first_failure=first[0] if first else None,
                next_step=sc.NEXT_STEPS[verdict],
                verification_expected=bool(r["verification_expected"]),
                unobserved=unobserved,
                not_observed=not_observed_note(unobserved, r["source"]),
                source=r["source"],
                source_label=source_label(r["source"]),
                final_agent=r["final_agent"],
                ended_at=iso(r["ended_ns"]),
                path=path[:RUN_PATH_LIMIT],
                path_total=len(path),
                path_summary=summarise(path),
                handoffs_capped=bool(r["handoffs_capped"]),
                handoff_cap=self.handoff_cap or None,
                loop_cycle=list(r["loop_cycle"]),
                loop_repeats=r["loop_repeats"],
                trace_ids=list(identities.get("trace_ids") or []),
                conversation_ids=list(identities.get("conversation_ids") or []),
                outcome_result=r["outcome_result"],
                verifier=r["verifier"],
                outcomes=[
                    {
                        "handoff_id": s["handoff_id"],
                        "verifier": s["outcome_verifier"],
                        "result": s["outcome_result"],
                        "receipt_id": s["outcome_receipt_id"],
                        "at": iso(s["end_ns"]),
                    }
                    for s in outcome_spans
                ],
                waits=[approval_json(w, now, notified) for w in waits],
                notifications=notified.get(run_id, []),
                handoffs=handoff_list,
                handoffs_total=handoffs_total,
                handoffs_offset=h_offset,
                handoffs_limit=h_limit,
                spans=[span_json(s) for s in spans],
                spans_total=spans_total,
                spans_offset=s_offset,
                spans_limit=s_limit,
            )
            return body

        return read

    def _handoff_params(self, request: Request, now: int) -> dict[str, Any]:
        q = request.query_params
        since, until = self._window(request, now)
        return {
            "now": now,
            "since": since,
            "until": until,
            "service": parse_service(q.get("service")),
            "verdict": parse_verdict(q.get("verdict")),
            "unhealthy": parse_bool("unhealthy", q.get("unhealthy")),
            "limit": parse_limit(q.get("limit")),
        }

    def handoffs(self, request: Request, now: int):
        params = self._handoff_params(request, now)
        grace = self.grace

        def read(cur):
            rows = _rows(cur, "handoffs", params)
            return {
                "handoffs": [
                    handoff_json(r, now, grace, with_run=True, with_boundaries=False) for r in rows
                ]
            }

        return read

    def edges(self, request: Request, now: int):
        q = request.query_params
        since, until = self._window(request, now)
        service = parse_service(q.get("service"))
        # Whole days inside the window come from the daily rollup, other whole hours from
        # the hourly one, the rest live (edges.sql).
        h0, h1 = -(-since // NS_PER_HOUR), until // NS_PER_HOUR - 1
        d0, d1 = -(-since // NS_PER_DAY), until // NS_PER_DAY - 1
        dh0, dh1 = (d0 * 24, (d1 + 1) * 24 - 1) if d0 <= d1 else (1, 0)
        buckets = {"service": service, "d0": d0, "d1": d1, "dh0": dh0, "dh1": dh1}
        params = {
            **buckets,
            "now": now,
            "since": since,
            "until": until,
            "failures": FAILURES,
            "h0": h0,
            "h1": h1,
            "full_lo": _clamp(h0 * NS_PER_HOUR) if h0 <= h1 else until,
            "full_hi": _clamp((h1 + 1) * NS_PER_HOUR) if h0 <= h1 else until,
        }
        runs_params = {
            **buckets,
            "r0": since // NS_PER_HOUR,
            "r1": (until - 1) // NS_PER_HOUR,
        }

        def read(cur):
            newest = {
                (r["from_agent"], r["to_agent"]): list(dict.fromkeys(r["runs"]))[:EDGE_RUNS]
                for r in _rows(cur, "edge_runs", runs_params)
            }
            edges = []
            for r in _rows(cur, "edges", params):
                verdicts = dict(sorted(r["verdicts"].items(), key=lambda kv: sc.RANK[kv[0]]))
                edges.append(
                    {
                        "kind": r["kind"],
                        "from_agent": r["from_agent"],
                        "to_agent": r["to_agent"],
                        "count": r["count"],
                        "unhealthy": r["unhealthy"],
                        "unhealthy_share": _rate(r["unhealthy"], r["count"]) or 0.0,
                        "undeclared": r["undeclared"],
                        "verdicts": verdicts,
                        "runs": newest.get((r["from_agent"], r["to_agent"]), []),
                    }
                )
            return {"edges": edges}

        return read

    def loops(self, request: Request, now: int):
        params = self._list_params(request, now)

        def read(cur):
            return {
                "loops": [
                    {
                        "run_id": r["run_id"],
                        "service": r["service"],
                        "cycle": list(r["cycle"]),
                        "repeats": r["repeats"],
                        "turns": r["turns"],
                        "status": r["status"],
                        "last_seen_at": iso(r["last_seen_ns"]),
                    }
                    for r in _rows(cur, "loops", params)
                ]
            }

        return read

    def approvals(self, request: Request, now: int):
        q = request.query_params
        service = parse_service(q.get("service"))
        params = {
            "now": now,
            "service": service,
            "limit": parse_limit(q.get("limit")),
            "overdue": sc.APPROVAL_OVERDUE,
            "uncertain": sc.WAIT_UNCERTAIN,
        }

        def read(cur):
            rows = _rows(cur, "approvals", params)
            notified = notifications_by_run(cur, list({r["run_id"] for r in rows}))
            counts, _new = wait_counts(cur, now, now, service)
            return {
                "total": sum(counts.values()),
                "counts": counts,
                "approvals": [approval_json(r, now, notified) for r in rows],
            }

        return read

    def false_completions(self, request: Request, now: int):
        params = self._list_params(request, now)

        def read(cur):
            return {
                "runs": [
                    {
                        "run_id": r["run_id"],
                        "service": r["service"],
                        "final_agent": r["final_agent"],
                        "ended_at": iso(r["ended_ns"]),
                        "last_seen_at": iso(r["last_seen_ns"]),
                        "outcome_result": r["outcome_result"],
                        "verifier": r["verifier"],
                    }
                    for r in _rows(cur, "false_completions", params)
                ],
                "total": false_completion_count(cur, params),
            }

        return read

    def live(self, request: Request, now: int):
        q = request.query_params
        service = parse_service(q.get("service"))
        window = parse_int("window", q.get("window"), LIVE_WINDOW_S, 1, MAX_WINDOW_SECONDS)
        since = now - window * NS
        grace = self.grace

        def read(cur):
            runs = []
            total = 0
            for r in _rows(
                cur,
                "live_runs",
                {
                    "now": now,
                    "service": service,
                    "started": sc.RUN_STATUS_STARTED,
                    "stuck_before": now - int(grace * NS),
                    "limit": LIVE_RUNS_LIMIT,
                },
            ):
                total = r["total"]
                runs.append(
                    {
                        "run_id": r["run_id"],
                        "service": r["service"],
                        "current_agent": r["current_agent"],
                        "last_handoff_at": iso(r["last_handoff_ns"]),
                        "seconds_since_last_handoff": _seconds(now, r["last_activity_ns"]),
                        "verdict": r["verdict"],
                        "verdict_label": _label(r["verdict"]),
                        "stuck": bool(r["stuck"]),
                        "loop": bool(r["loop"]),
                        "pending_approvals": r["pending_approvals"],
                    }
                )
            counts: dict[str, int] = defaultdict(int)
            timeline = []
            for r in _rows(cur, "live_verdicts", {"now": now, "since": since, "service": service}):
                counts[r["verdict"]] += r["count"]
                timeline.append(
                    {
                        "minute": iso(r["minute"] * 60 * NS),
                        "verdict": r["verdict"],
                        "count": r["count"],
                    }
                )
            unhealthy = _rows(
                cur,
                "handoffs",
                {
                    "now": now,
                    "since": since,
                    "until": INT64_MAX,
                    "service": service,
                    "verdict": None,
                    "unhealthy": True,
                    "limit": LIVE_UNHEALTHY,
                },
            )
            rc = run_counts(cur, now, since, grace, service)
            waits, waits_new = wait_counts(cur, now, since, service)
            window_params = {"since": since, "until": INT64_MAX, "service": service}
            before = {"since": since - window * NS, "until": since, "service": service}
            done_now = false_completion_count(cur, window_params)
            done_before = false_completion_count(cur, before)
            board = {
                "stuck": {"count": rc["stuck"], "new_in_window": rc["stuck_new"]},
                "looping": {"count": rc["looping"], "new_in_window": rc["looping_new"]},
                "approvals_overdue": {
                    "count": waits.get(sc.APPROVAL_OVERDUE, 0),
                    "new_in_window": waits_new.get(sc.APPROVAL_OVERDUE, 0),
                },
                "false_complete": {"count": done_now, "previous_window": done_before},
            }
            return {
                "now": iso(now),
                "window": window,
                "board": board,
                "runs_in_flight_total": total if runs else rc["in_flight"],
                "runs_in_flight": runs,
                "wait_counts": waits,
                "verdict_counts": dict(sorted(counts.items(), key=lambda kv: sc.RANK[kv[0]])),
                "timeline": timeline,
                "unhealthy": [
                    handoff_json(r, now, grace, with_run=True, with_boundaries=False)
                    for r in unhealthy
                ],
            }

        return read

    def weekly(self, request: Request, now: int):
        q = request.query_params
        service = parse_service(q.get("service"))
        weeks = parse_int("weeks", q.get("weeks"), 8, 1, MAX_WEEKS)
        fmt = parse_choice("format", q.get("format"), WEEK_FORMATS)
        today = (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=now // NS)).date()
        monday = today - dt.timedelta(days=today.weekday())
        starts = [monday - dt.timedelta(weeks=i) for i in range(weeks - 1, -1, -1)]
        labels = [_week_label(d) for d in starts]
        # This week is partial: its rates rest on the days since Monday 00:00 UTC only.
        elapsed = (now / NS - (monday - dt.date(1970, 1, 1)).days * 86400) / 86400

        def read(cur):
            rows = _rows(cur, "weekly", {"start": starts[0], "service": service})
            body = weekly_body(rows, labels, this_week_days=elapsed)
            if fmt == "csv":
                return Response(weekly_csv(body), media_type="text/csv; charset=utf-8")
            return body

        return read

    def drops(self, request: Request, now: int):
        def read(cur):
            return {"drops": _rows(cur, "drops", {})}

        return read

    # --- documentation -----------------------------------------------------------------

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(self.spec)

    async def docs(self, request: Request) -> Response:
        return HTMLResponse(render_docs(self.spec))


def _week_label(d: dt.date) -> str:
    year, week, _ = d.isocalendar()
    return f"{year}-W{week:02d}"


def weekly_body(
    rows: list[dict[str, Any]], labels: list[str], *, this_week_days: float = 7.0
) -> dict[str, Any]:
    """The weekly review from rollup rows (week, from_agent, to_agent, reason, handoffs).

    The last label is the current week, `partial` with `days` = `this_week_days` (the
    days elapsed since its Monday): a reader must not weigh its rate like a whole week's.
    Every other week is whole (`days` 7)."""
    total: dict[str, int] = dict.fromkeys(labels, 0)
    rejected: dict[str, int] = dict.fromkeys(labels, 0)
    by_reason: dict[tuple, int] = defaultdict(int)
    by_edge: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    by_agent: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    by_edge_reason: dict[tuple, int] = defaultdict(int)
    for r in rows:
        week = r["week"]
        if week not in total:
            continue
        n = int(r["handoffs"])
        rej = n if r["reason"] else 0
        total[week] += n
        rejected[week] += rej
        if r["reason"]:
            by_reason[(week, r["reason"])] += n
            by_edge_reason[(week, r["from_agent"] or None, r["to_agent"] or None, r["reason"])] += n
        edge = by_edge[(week, r["from_agent"] or None, r["to_agent"] or None)]
        edge[0] += n
        edge[1] += rej
        agent = by_agent[(week, r["to_agent"] or None)]
        agent[0] += n
        agent[1] += rej
    order = {w: i for i, w in enumerate(labels)}

    def key(item):
        return (
            order[item[0][0]],
            -item[1][1] if isinstance(item[1], list) else -item[1],
            str(item[0][1:]),
        )

    return {
        "this_week": labels[-1],
        "last_week": labels[-2] if len(labels) > 1 else None,
        "weeks": [
            {
                "week": w,
                "handoffs": total[w],
                "rejections": rejected[w],
                "rate": _rate(rejected[w], total[w]),
                "partial": w == labels[-1],
                "days": round(min(max(this_week_days, 0.0), 7.0), 3) if w == labels[-1] else 7.0,
            }
            for w in labels
        ],
        "by_reason": [
            {"week": w, "reason": reason, "count": n, "rate": _rate(n, total[w])}
            for (w, reason), n in sorted(by_reason.items(), key=key)
        ],
        "by_edge": [
            {
                "week": w,
                "from_agent": f,
                "to_agent": t,
                "handoffs": n,
                "rejections": rej,
                "rate": _rate(rej, n),
            }
            for (w, f, t), (n, rej) in sorted(by_edge.items(), key=key)
        ],
        "by_agent": [
            {"week": w, "agent": a, "handoffs": n, "rejections": rej, "rate": _rate(rej, n)}
            for (w, a), (n, rej) in sorted(by_agent.items(), key=key)
        ],
        # Edge × reason: of an edge's handoffs that week, the share refused for each reason.
        "by_edge_reason": [
            {
                "week": w,
                "from_agent": f,
                "to_agent": t,
                "reason": reason,
                "count": n,
                "rate": _rate(n, by_edge[(w, f, t)][0]),
            }
            for (w, f, t, reason), n in sorted(
                by_edge_reason.items(), key=lambda kv: (order[kv[0][0]], -kv[1], str(kv[0][1:]))
            )
        ],
    }


CSV_COLUMNS = ("week", "dimension", "key", "handoffs", "rejections", "rate")


CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""A spreadsheet reads a cell beginning with one of these as a formula (OWASP, "CSV
Injection"): an agent named `=HYPERLINK("http://…")` would become a live link, `@SUM(…)`
a computation, in the reviewer's spreadsheet."""


def csv_cell(value: object) -> object:
    """`value`, with a leading `'` when it is text a spreadsheet would run as a formula.

    The quote is what spreadsheets themselves use to mark a cell as text; it is visible,
    which is right: the name really does begin with `=`. Numbers are written as numbers
    (this file's counts and rates are never negative)."""
    if isinstance(value, str) and value.startswith(CSV_FORMULA_START):
        return "'" + value
    return value


def weekly_csv(body: dict[str, Any]) -> str:
    """One row per (week, dimension, key): dimension is total, reason, edge or agent.

    Every text cell goes through `csv_cell`; an edge with an unknown agent writes it as
    `?` (as the dashboard does), so `?->billing`, not a cell starting with `-`."""
    out = io.StringIO()
    # CRLF, as RFC 4180 has it; it also makes the writer quote a cell holding a bare CR.
    writer = csv.writer(out, lineterminator="\r\n")

    def write(row: tuple) -> None:
        writer.writerow([csv_cell(v) for v in row])

    write(CSV_COLUMNS)
    totals = {r["week"]: r["handoffs"] for r in body["weeks"]}

    def rate(v):
        return "" if v is None else f"{v:.6f}"

    for r in body["weeks"]:
        write((r["week"], "total", "", r["handoffs"], r["rejections"], rate(r["rate"])))
    for r in body["by_reason"]:
        write((r["week"], "reason", r["reason"], totals[r["week"]], r["count"], rate(r["rate"])))
    for r in body["by_edge"]:
        edge = f"{r['from_agent'] or '?'}->{r['to_agent'] or '?'}"
        write((r["week"], "edge", edge, r["handoffs"], r["rejections"], rate(r["rate"])))
    for r in body["by_agent"]:
        write(
            (r["week"], "agent", r["agent"] or "", r["handoffs"], r["rejections"], rate(r["rate"]))
        )
    return out.getvalue()


def render_docs(spec: dict[str, Any]) -> str:
    """A plain HTML page of the OpenAPI document: endpoints, parameters, what they return."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(spec['info']['title'])}</title>",
        "<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
        "code{background:#f1f5f9;padding:0 .25rem}table{border-collapse:collapse}"
        "td,th{border-bottom:1px solid #e2e8f0;padding:.2rem .6rem;text-align:left;vertical-align:top}"
        "h2{margin-top:2rem;font-size:1.1rem}</style></head><body>",
        f"<h1>{e(spec['info']['title'])} <small>{e(spec['info']['version'])}</small></h1>",
        f"<p>{e(spec['info']['description'])}</p>",
        "<p>Machine-readable: <a href='/openapi.json'>/openapi.json</a> (OpenAPI 3.1).</p>",
    ]
    params = spec["components"]["parameters"]
    for path, item in spec["paths"].items():
        op = item["get"]
        parts.append(
            f"<h2><code>GET {e(path)}</code></h2><p>{e(op.get('description', op['summary']))}</p>"
        )
        rows = []
        for p in op.get("parameters", []):
            if "$ref" in p:
                p = params[p["$ref"].rsplit("/", 1)[1]]
            rows.append(
                f"<tr><td><code>{e(p['name'])}</code></td><td>{e(p['in'])}</td>"
                f"<td>{e(p.get('description', ''))}</td></tr>"
            )
        if rows:
            parts.append(
                "<table><tr><th>parameter</th><th>in</th><th>meaning</th></tr>"
                + "".join(rows)
                + "</table>"
            )
        codes = ", ".join(f"{c} {e(r['description'])}" for c, r in op["responses"].items())
        parts.append(f"<p><small>Answers: {codes}</small></p>")
    parts.append("</body></html>")
    return "".join(parts)


def api_routes(store, engine, settings) -> list[Route]:
    """The query API's routes, to mount in the collector's Starlette app."""
    return QueryAPI(store, engine, settings).routes()
