"""The query API: what every dashboard view reads (docs/api.md), as JSON (and CSV).

`query_app(store, engine, settings, routes=...)` returns the collector's one HTTP app: a
FastAPI app serving `/api/v1/*`, `/openapi.json` (generated from the routes and the
models, `openapi.py`) and `/docs` (a page rendered from it, no CDN), with the `routes`
the server adds beside them (the OTLP receiver, `/healthz`, `/metrics`) as plain
Starlette routes on the same port. Auth, when a token is set, is the server's
middleware around the whole app.

How a request is answered:

1. FastAPI fills the endpoint's parameter model (`models.py`) in the event loop; each
   field is checked by its parser (`params.py`), and a bad value is a 400
   `{"error": "<the parser's sentence>"}` before any database work (`bad_param`).
2. The endpoint is a plain `def`, so FastAPI runs it in its thread pool: it takes one
   `now`, reads on a fresh cursor of the collector's own DuckDB connection
   (`store.cursor()`; DuckDB calls block, and a cursor per request lets reads run beside
   the writer and each other — MVCC: each sees the last commit), and builds the answer
   model.
3. The model is serialised by pydantic in that same worker thread and returned as the
   response, so the event loop that also serves OTLP/HTTP never encodes a large answer.
   (Returning the model to FastAPI instead would validate it a second time and encode
   it in the event loop; the route still declares it as its `response_model`, which is
   what the OpenAPI document says.)
4. Every query is one `.sql` file in `store/sql/query/`, asked for by name through
   `store.statements`, parameters bound.

Time-based verdicts are judged at the time of the request: one `now` is taken per
request and bound into every query (`hs_verdict_at`), and the Python side re-judges the
few rows it details (the *why* of a handoff) with `classify` at that same `now` and the
collector's `--grace-seconds`, so the verdict, its boundary and its explanation agree.
"""

from __future__ import annotations

import datetime as dt
import inspect
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Path, Query
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.classify import Classification, classify
from handoffscope.instrumentation.verdicts import boundaries
from handoffscope.instrumentation.verdicts.evidence import silent_before
from handoffscope.instrumentation.verdicts.explain import not_observed_note, run_why

from ..config import CollectorConfig, QueryConfig
from ..credentials import EVERY_SERVICE, CredentialError, Credentials, Scope
from ..credentials import narrowing as narrowing_of
from ..engine.usage import NANO
from ..processor.translate import SOURCES
from ..store import statements
from ..store.records import handoff_evidence, run_key
from ..store.spans import ATTRIBUTE_COLUMNS
from ..timefmt import iso
from . import models as m
from . import openapi
from .params import INT64_MAX, INT64_MIN, NS, BadParam, parse_time
from .path_summary import summarise
from .routes import READS, Read
from .sources import fold, translator_infos
from .tokens import token_routes
from .weekly import rate, week_label, weekly_body, weekly_continuity, weekly_csv

log = logging.getLogger(__name__)

PREFIX = "/api/v1"
DEFAULT_WINDOW_S = 24 * 3600
LIVE_UNHEALTHY = 20
LIVE_RUNS_LIMIT = 200
SEARCH_SKEW_NS = 3600 * 10**9
"""A search by trace or conversation id reads spans received since an hour before the
window: `since` is on the sender's clock, arrival on the collector's."""
NEWEST_PROBE_S = 3600
"""The runs page, newest first, looks for its page in the window's last hour first: on a
busy store that hour holds it, and the rest of a 30-day window is skipped (runs.sql)."""
WIDE_PROBE_S = 24 * 3600
"""The handoffs page looks next in the window's last day, before the whole window: the
unhealthy handoffs of 30 days at ten million handoffs, when the last hour held fewer than
a page, took 45-60 ms over the window (1.4M matches ordered) and 10-13 over the last day
(handoffs.sql)."""
RUN_PATH_LIMIT = 1000
"""Agents of a run's `path` listed in its detail (`path_summary` speaks for all of them)."""
CONVERSATION_RUNS_LIMIT = 1000
"""Runs a conversation's answer lists (its `runs_total` and `counts` count them all)."""
RUN_OUTCOMES_LIMIT = 1000
"""Verifier outcomes listed in a run's detail."""
FAILURES = list(sc.FAILURE_VERDICTS)
NOTIFY_EVENTS = list(sc.NOTIFY_EVENTS)
NS_PER_HOUR = 3600 * NS
NS_PER_DAY = 24 * NS_PER_HOUR
EDGE_RUNS = 20
ACK_RECENT_LIMIT = 200
"""GET /api/v1/acknowledgements?active=false lists this many, newest first."""
ACK_READ_ONLY = "acknowledge through a collector: this process serves the query API read-only"
RUN_EVENTS = (sc.NOTIFY_RUN_STUCK, sc.NOTIFY_RUN_LOOPING)
KEYWORD = inspect.Parameter.KEYWORD_ONLY


# --- small helpers ----------------------------------------------------------------------


def _rows(cur, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of `store/sql/query/<name>.sql` as dicts (`statements.dicts`)."""
    return statements.dicts(cur, f"query/{name}", params)


def page_since(now: int, since: int, until: int, probe_s: int = NEWEST_PROBE_S) -> int:
    """Where a newest-first page is looked for first (runs.sql, handoffs.sql): the
    window's last `probe_s` seconds."""
    return max(since, min(until, now) - probe_s * NS)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(m.Error(error=message).model_dump(), status_code=status)


def _label(verdict: str) -> str:
    return sc.VERDICT_LABELS.get(verdict, verdict)


def _budget_used(calls: int | None, total: int | None) -> float | None:
    """The share of a stated call budget spent: calls so far over the budget the run's
    latest request implied (engine: calls before it plus what it said was left)."""
    if calls is None or not total or total < 0:
        return None
    return round(calls / total, 6)


def _tokens(u: m.Usage | None) -> int | None:
    if u is None or (u.input_tokens is None and u.output_tokens is None):
        return None
    return (u.input_tokens or 0) + (u.output_tokens or 0)


def _seconds(a: int | None, b: int | None) -> float | None:
    return None if a is None or b is None else round((a - b) / NS, 3)


def _clamp(ns: int) -> int:
    return max(INT64_MIN, min(ns, INT64_MAX))


# --- handoffs: evidence back from a row, boundaries, JSON ----------------------------------


def handoff_fields(row: dict[str, Any], now: int, grace: float) -> tuple[dict[str, Any], Any]:
    """A handoffs row as the fields of `models.Handoff`, and what `boundaries` needs."""
    ev = handoff_evidence(row)
    c = classify(ev, now_ns=now, grace_seconds=grace)
    verdict = row["verdict_now"]
    if c.verdict != verdict:  # cannot happen unless the stored timeline is stale
        log.warning(
            "handoff %s/%s: stored %s, judged %s", ev.run_id, ev.handoff_id, verdict, c.verdict
        )
        c = Classification(verdict, sc.VERDICT_BOUNDARY.get(verdict), c.why)
    unobserved = list(row["unobserved"] or [])
    fields = dict(
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
        usage=usage(row) if row["kind"] != sc.KIND_DELEGATION else None,
        task_id=row.get("task_id"),
        task_state=row.get("task_state"),
    )
    return fields, (ev, c, unobserved)


def usage(row: dict[str, Any], prefix: str = "") -> m.Usage | None:
    """A row's usage columns (engine step 23: `input_tokens`, ... or `burned_input_tokens`,
    ...) as the API's model; None when it reported none."""
    tin, tout, calls = (
        row.get(f"{prefix}input_tokens"),
        row.get(f"{prefix}output_tokens"),
        row.get(f"{prefix}model_calls"),
    )
    if tin is None and tout is None and calls is None:
        return None
    return m.Usage(
        input_tokens=tin,
        output_tokens=tout,
        model_calls=calls,
        cost_usd=row.get(f"{prefix}cost_usd"),
        model=row.get(f"{prefix}model"),
        unpriced_models=list(row.get(f"{prefix}unpriced_models") or ()),
    )


def usage_sums(row: dict[str, Any], prefix: str = "") -> m.Usage | None:
    """Summed rollup columns (tokens, calls, `cost_nusd`, `unpriced`) as the API's model."""
    tin, tout, calls = (
        row.get(f"{prefix}{c}") for c in ("input_tokens", "output_tokens", "model_calls")
    )
    unpriced = int(row.get(f"{prefix}unpriced") or 0)
    if not (tin or tout or calls or unpriced):
        return None
    return m.Usage(
        input_tokens=int(tin or 0),
        output_tokens=int(tout or 0),
        model_calls=int(calls or 0),
        cost_usd=int(row.get(f"{prefix}cost_nusd") or 0) / NANO,
        unpriced=unpriced,
    )


def weekly_spend(rows: list[dict[str, Any]], labels: list[str]) -> list[m.WeekSpend]:
    """weekly_spend.sql's rows as the review's `spend`, each with its share of the week."""
    weeks = set(labels)
    rows = [r for r in rows if r["week"] in weeks]
    cost: dict[str, int] = defaultdict(int)
    tokens: dict[str, int] = defaultdict(int)
    for r in rows:
        cost[r["week"]] += int(r["cost_nusd"] or 0)
        tokens[r["week"]] += int(r["input_tokens"] or 0) + int(r["output_tokens"] or 0)
    return [
        m.WeekSpend(
            week=r["week"],
            verdict=r["verdict"],
            verdict_label=_label(r["verdict"]),
            runs=int(r["runs"]),
            usage=usage_sums(r),
            share=rate(int(r["cost_nusd"] or 0), cost[r["week"]]),
            tokens_share=rate(
                int(r["input_tokens"] or 0) + int(r["output_tokens"] or 0), tokens[r["week"]]
            ),
            burned_tokens=int(r["burned_tokens"] or 0),
            burned_cost_usd=int(r["burned_cost_nusd"] or 0) / NANO,
        )
        for r in sorted(rows, key=lambda r: (r["week"], sc.RANK.get(r["verdict"], 99)))
    ]


def handoff(row: dict[str, Any], now: int, grace: float) -> m.Handoff:
    """A run's handoff, without boundaries (its `first_failure`)."""
    return m.Handoff.model_validate(handoff_fields(row, now, grace)[0])


def handoff_detail(row: dict[str, Any], now: int, grace: float) -> m.HandoffDetail:
    """A handoff on its run's detail: with its six boundaries."""
    fields, (ev, c, unobserved) = handoff_fields(row, now, grace)
    return m.HandoffDetail.model_validate({**fields, "boundaries": boundaries(ev, c, unobserved)})


def handoff_list_item(row: dict[str, Any], now: int, grace: float) -> m.HandoffListItem:
    """A handoff listed across runs: with its run and service."""
    fields, _ = handoff_fields(row, now, grace)
    return m.HandoffListItem.model_validate(
        {"run_id": row["run_id"], "service": row["service"], **fields}
    )


def notification(row: dict[str, Any]) -> m.Notification:
    return m.Notification(
        event=row["event"],
        handoff_id=row["handoff_id"],
        destination=row["destination"],
        status=row["status"],
        attempts=row["attempts"],
        created_at=iso(row["created_ns"]),
        sent_at=iso(row["sent_ns"]),
    )


def notifications_by_run(cur, run_ids: list[str]) -> dict[str, list[m.Notification]]:
    """What the notifier recorded for these runs (notifications.sql), per run, oldest first."""
    out: dict[str, list[m.Notification]] = defaultdict(list)
    if run_ids:
        for r in _rows(cur, "notifications", {"run_ids": run_ids, "events": NOTIFY_EVENTS}):
            out[r["run_id"]].append(notification(r))
    return out


# --- acknowledgements ----------------------------------------------------------------------


def acknowledgement(row: dict[str, Any], now: int) -> m.Acknowledgement:
    """An acknowledgements row (ack/*.sql) as the API's model, `active` judged at `now`."""
    return m.Acknowledgement(
        event=row["event"],
        run_id=row["run_id"],
        handoff_id=row["handoff_id"],
        service=row["service"],
        by=row["by_name"],
        note=row["note"],
        created=iso(row["created_ns"]),
        until=iso(row["until_ns"]),
        cleared=iso(row["cleared_ns"]),
        active=row["cleared_ns"] is None and row["until_ns"] > now,
    )


class ActiveAcks:
    """Every acknowledgement active at `now`, by target: what the answers attach to their
    runs, loops and waits. One small read per request (`ack/active_acknowledgements.sql`:
    a handful of hand-made rows), instead of a join in every list query."""

    def __init__(self, cur: Any, now: int) -> None:
        self.by_target: dict[tuple[str, str, str | None], m.Acknowledgement] = {}
        self.by_run: dict[str, list[m.Acknowledgement]] = defaultdict(list)
        for r in statements.dicts(cur, "ack/active_acknowledgements", {"now": now}):
            target = (r["event"], r["run_id"], r["handoff_id"])
            if target in self.by_target:
                continue  # newest first: a replaced one racing its replacement
            ack = acknowledgement(r, now)
            self.by_target[target] = ack
            self.by_run[r["run_id"]].append(ack)

    def of(
        self, event: str, run_id: str, handoff_id: str | None = None
    ) -> m.Acknowledgement | None:
        return self.by_target.get((event, run_id, handoff_id))

    def of_run(self, run_id: str, *, loop: bool, stuck: bool) -> m.Acknowledgement | None:
        """A run's one `acknowledgement` in a list: of what it is on fire for (its loop
        first, then its being stuck), else whichever run-level one it has."""
        if loop and (ack := self.of(sc.NOTIFY_RUN_LOOPING, run_id)):
            return ack
        if stuck and (ack := self.of(sc.NOTIFY_RUN_STUCK, run_id)):
            return ack
        return self.of(sc.NOTIFY_RUN_LOOPING, run_id) or self.of(sc.NOTIFY_RUN_STUCK, run_id)

    def of_wait(self, run_id: str, handoff_id: str | None) -> m.Acknowledgement | None:
        return self.of(sc.NOTIFY_APPROVAL_OVERDUE, run_id, handoff_id) if handoff_id else None


def acknowledged_counts(
    cur: Any,
    now: int,
    *,
    looped_since: int,
    stuck_before: int,
    service: str | None = None,
    scope: Scope = EVERY_SERVICE,
    active: bool = True,
) -> dict[tuple[str | None, str], int]:
    """Of the stuck runs, looping runs, overdue and uncertain waits the gauges and tiles
    count, how many have an active acknowledgement, per (service, event)
    (`ack/acknowledged_counts.sql`; an uncertain wait's event is `wait_uncertain`, silenced
    by its `approval_overdue` acknowledgement). `active` False: the caller knows none is
    active, and nothing is read (the statement reads the in-flight and looping runs
    before it joins them to the acknowledgements: 90 ms of the live board's 150 at 3M
    runs, with none to find)."""
    out: dict[tuple[str | None, str], int] = defaultdict(int)
    if not active:
        return out
    params = {
        "now": now,
        "looped_since": looped_since,
        "stuck_before": stuck_before,
        "started": sc.RUN_STATUS_STARTED,
        "service": service,
        "scope": scope.param,
        "stuck": sc.NOTIFY_RUN_STUCK,
        "looping": sc.NOTIFY_RUN_LOOPING,
        "overdue": sc.NOTIFY_APPROVAL_OVERDUE,
        "overdue_verdict": sc.APPROVAL_OVERDUE,
        "uncertain": sc.NOTIFY_WAIT_UNCERTAIN,
        "uncertain_verdict": sc.WAIT_UNCERTAIN,
    }
    for r in statements.dicts(cur, "ack/acknowledged_counts", params):
        out[(r["service"], r["event"])] += int(r["n"])
    return out


def approval(
    row: dict[str, Any],
    now: int,
    notified: dict[str, list[m.Notification]] | None = None,
    acks: ActiveAcks | None = None,
) -> m.Approval:
    verdict = row["verdict_now"]
    notifications = [
        n for n in (notified or {}).get(row["run_id"], []) if n.handoff_id == row["handoff_id"]
    ]
    return m.Approval(
        run_id=row["run_id"],
        handoff_id=row["handoff_id"],
        service=row["service"],
        from_agent=row["from_agent"],
        to_agent=row["to_agent"],
        owner=row["owner"],
        reason=row["reason"],
        deadline=iso(row["deadline_ns"]),
        seconds_left=_seconds(row["deadline_ns"], now),
        verdict=verdict,
        verdict_label=_label(verdict),
        missing=list(row["missing"]),
        resume_token_id=row["resume_token_id"],
        state_persisted=row["state_persisted"],
        decision=row["decision"],
        checkpointed_at=iso(row["checkpointed_ns"]),
        notifications=notifications,
        acknowledgement=acks.of_wait(row["run_id"], row["handoff_id"]) if acks else None,
    )


def _continuity_params(now: int, conversation: str) -> dict[str, Any]:
    """continuity.sql's parameters for one conversation, its runs of any age."""
    return {"now": now, "conversation": conversation, "since": INT64_MIN, "until": INT64_MAX}


def seen_turn(r: dict[str, Any], scope: Scope) -> dict[str, Any]:
    """A continuity.sql row as `scope` may see it: the run before it, when another
    service's (a conversation may cross services), is not named — nor its final agent."""
    if scope.sees(r["previous_service"]):
        return r
    return {**r, "previous_run_id": None, "previous_final_agent": None}


def conversation_run(r: dict[str, Any]) -> m.ConversationRun:
    """A continuity.sql row as one turn of a conversation."""
    return m.ConversationRun(
        run_id=r["run_id"],
        service=r["service"],
        position=r["position"],
        started_at=iso(r["started_ns"] or r["first_seen_ns"]),
        ended_at=iso(r["ended_ns"]),
        status=r["status"],
        start_agent=r["start_agent"],
        final_agent=r["final_agent"] or r["current_agent"],
        first_to_agent=r["first_to_agent"],
        continuity=r["continuity"],
        previous_run_id=r["previous_run_id"],
        previous_final_agent=r["previous_final_agent"],
        verdict=r["verdict"],
        verdict_label=_label(r["verdict"]),
        handoff_count=r["handoff_count"],
        loop=bool(r["loop"]),
        cost_usd=r["cost_usd"],
    )


def run_facts(row: dict[str, Any], verdict: str) -> dict[str, Any]:
    """The fields of `models.RunFacts` from a runs row: what a run's summary and its
    detail both say."""
    return dict(
        run_id=row["run_id"],
        service=row["service"],
        verdict=verdict,
        verdict_label=_label(verdict),
        status=row["status"],
        started_at=iso(row["started_ns"]),
        last_seen_at=iso(row["last_seen_ns"]),
        current_agent=row["current_agent"],
        handoff_count=row["handoff_count"],
        loop=row["loop"],
        false_complete=row["false_complete"],
        failed=row["failed"],
        unverified=bool(row["unverified"]),
        pending_approvals=row["pending_approvals"],
        turns=row["turns"],
        delegation_count=row["delegation_count"] or 0,
        usage=usage(row),
        start_agent=row.get("start_agent"),
    )


def source_label(source: str | None) -> str | None:
    """How people call the instrumentation a run was translated from ("OpenInference")."""
    if source is None:
        return None
    return SOURCE_LABELS.get(source, source)


SPAN_ATTRIBUTE_COLUMNS = tuple(ATTRIBUTE_COLUMNS.items())
SOURCE_LABELS = {t.source: t.label for t in SOURCES}


def span(row: dict[str, Any]) -> m.Span:
    attrs = {}
    for attr, col in SPAN_ATTRIBUTE_COLUMNS:
        v = row.get(col)
        if v is not None:
            attrs[attr] = list(v) if isinstance(v, tuple) else v
    return m.Span(
        name=row["name"],
        handoff_id=row["handoff_id"],
        trace_id=row["trace_id"],
        span_id=row["span_id"],
        start=iso(row["start_ns"]),
        end=iso(row["end_ns"]),
        attributes=attrs,
    )


# --- counts: the one query behind each figure -----------------------------------------------


RUN_COUNTS = ("in_flight", "stuck", "looping", "stuck_new", "looping_new", "looping_in_flight")


def run_counts(
    cur, now: int, since: int, grace: float, service: str | None, scope: Scope = EVERY_SERVICE
) -> dict[str, int]:
    """Runs in flight and stuck now, runs that looped since `since` (ended or not) and how
    many of those are in flight, and how many of each became so since `since`
    (health_runs.sql): what /metrics, the Live tiles and the runs list's states count."""
    stuck_before = silent_before(now, grace)
    out = dict.fromkeys(RUN_COUNTS, 0)
    params = {
        "since": since,
        "looped_since": since,
        "stuck_before": stuck_before,
        "stuck_since": silent_before(since, grace),
        "started": sc.RUN_STATUS_STARTED,
        "service": service,
        "scope": scope.param,
    }
    for r in _rows(cur, "health_runs", params):
        for k in out:
            out[k] += int(r[k])
    return out


def wait_counts(
    cur, now: int, since: int, service: str | None, scope: Scope = EVERY_SERVICE
) -> tuple[dict[str, int], dict[str, int]]:
    """Open and expired waits per verdict (run- and handoff-level, any age), and per verdict
    how many deadlines passed since `since` (health_waits.sql)."""
    counts: dict[str, int] = {}
    new: dict[str, int] = {}
    for r in _rows(cur, "health_waits", {"now": now, "since": since}):
        if (service is not None and r["service"] != service) or not scope.sees(r["service"]):
            continue
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + int(r["n"])
        new[r["verdict"]] = new.get(r["verdict"], 0) + int(r["n_new"])
    order = sorted(counts, key=lambda v: sc.RANK.get(v, 99))
    return {v: counts[v] for v in order}, {v: new[v] for v in order}


def false_completion_count(cur, params: dict[str, Any]) -> int:
    """Runs first seen in [since, until) that claimed done without proof."""
    keys = ("since", "until", "service", "scope")
    return int(_rows(cur, "false_completions_count", {k: params[k] for k in keys})[0]["n"])


# --- the API ------------------------------------------------------------------------------


class QueryAPI:
    """The readers, one per endpoint; one instance per collector, sharing the store and
    settings. Each reader takes a cursor, the request's `now` and its parameters, and
    returns the answer model (or, for a 404 or the CSV export, a response)."""

    def __init__(
        self,
        store,
        engine,
        settings: CollectorConfig | QueryConfig,
        credentials: Credentials | None = None,
    ) -> None:
        self.store = store
        self.credentials = credentials
        """This process's credentials: reloaded after one is made or revoked here."""
        self.engine = engine
        # Defaults live once, in the options declarations of config.py; read them typed.
        self.grace = float(settings.grace_seconds)
        self.handoff_cap = int(settings.max_handoffs_per_run or 0)
        self.auth = settings.auth
        # `handoffscope api` has no retention option: it is read-only (acknowledging
        # answers 405), so it never expires acknowledgements itself.
        self.retention_days = (
            float(settings.retention_days or 0) if isinstance(settings, CollectorConfig) else 0.0
        )
        # Acknowledgements are the API's only write: served by a collector, which owns
        # the store; `handoffscope api` (no engine, a read-only store) answers 405.
        self.writable = engine is not None and not getattr(store, "read_only", False)

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        cur = self.store.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def answer(
        self,
        read: Callable[..., BaseModel | Response],
        *args: Any,
        exclude_unset: bool = False,
        scope: Scope = EVERY_SERVICE,
    ) -> Response:
        """Run `read(cursor, now, *args, scope=scope)` and serialise what it returns (in
        this thread). `scope`: the services the request may see (credentials.py)."""
        now = time.time_ns()
        with self.cursor() as cur:
            result = read(cur, now, *args, scope=scope)
        if isinstance(result, Response):
            return result
        return Response(
            result.model_dump_json(exclude_unset=exclude_unset), media_type="application/json"
        )

    def scope(self, request: Request) -> Scope:
        """The services `request` may see: its credential's, narrowed by its
        `X-Handoffscope-Services` header (a `CredentialError` for a header too long)."""
        headers = request.headers
        authorization, narrowing = headers.get("authorization"), headers.get(sc.SCOPE_HEADER)
        if self.credentials is None:
            return Scope(narrowing_of(narrowing))
        return self.credentials.scope(authorization, narrowing)

    # --- common parameters -------------------------------------------------------------

    @staticmethod
    def _window(p: m.WindowParams, now: int) -> tuple[int, int]:
        """[since, until) in epoch ns: the last 24 h unless the request says otherwise."""
        return (
            now - DEFAULT_WINDOW_S * NS if p.since is None else p.since,
            INT64_MAX if p.until is None else p.until,
        )

    def _list_params(self, p: m.ListParams, now: int, scope: Scope) -> dict[str, Any]:
        """since / until / service / scope / limit: the parameters every list shares."""
        since, until = self._window(p, now)
        return {
            "since": since,
            "until": until,
            "service": p.service,
            "scope": scope.param,
            "limit": p.limit,
        }

    # --- readers -------------------------------------------------------------------------

    def services(self, cur, now: int, scope: Scope = EVERY_SERVICE) -> m.Services:
        return m.Services(
            services=[r["service"] for r in _rows(cur, "services", {}) if scope.sees(r["service"])]
        )

    def runs(self, cur, now: int, p: m.RunsParams, scope: Scope = EVERY_SERVICE) -> m.RunsPage:
        since, until = self._window(p, now)
        looped_since = since
        if p.state == "looping":
            # Runs that looped in the window, whenever they started (health_runs.sql).
            since = INT64_MIN
        params = {
            "now": now,
            "since": since,
            "looped_since": looped_since,
            "until": until,
            "service": p.service,
            "scope": scope.param,
            "verdict": p.verdict,
            "limit": p.limit,
            "q": p.q,
            "agent": p.agent,
            "offset": p.offset,
            # The rows the page ends at, for the newest-first probe (runs.sql).
            "reach": p.offset + p.limit,
            "state": p.state or None,
            "sort": p.sort,
            "ranked": list(sc.PRECEDENCE),
            "started": sc.RUN_STATUS_STARTED,
            "stuck_before": silent_before(now, self.grace),
            "spans_since": _clamp(since - SEARCH_SKEW_NS),
            # The newest runs of the window are first looked for in its last hour (runs.sql).
            "page_since": page_since(now, since, until),
        }
        rows = _rows(cur, "runs", params)
        total = rows[0]["total"] if rows else 0
        if not rows and p.offset:
            # A page past the end: the total still says how many there are.
            first = _rows(cur, "runs", {**params, "offset": 0, "limit": 1, "reach": 1})
            total = first[0]["total"] if first else 0
        ids: dict[str, dict[str, Any]] = {}
        if p.ids and rows:
            lows = [r["min_received_ns"] for r in rows if r["min_received_ns"] is not None]
            if lows:
                ids = {
                    r["run_id"]: r
                    for r in _rows(
                        cur, "run_ids", {"lo": min(lows), "run_ids": [r["run_id"] for r in rows]}
                    )
                }
        acks = ActiveAcks(cur, now)
        out = []
        for r in rows:
            extra: dict[str, Any] = {}
            if p.ids:  # otherwise left unset: the answer omits them (exclude_unset)
                found = ids.get(r["run_id"]) or {}
                extra["trace_ids"] = list(found.get("trace_ids") or [])
                extra["conversation_ids"] = list(found.get("conversation_ids") or [])
            out.append(
                m.RunSummary(
                    **run_facts(r, r["verdict"]),
                    final_agent=r["final_agent"],
                    source=r["source"],
                    source_label=source_label(r["source"]),
                    in_flight=bool(r["in_flight"]),
                    stuck=bool(r["stuck"]),
                    seconds_since_last_activity=_seconds(now, r["last_activity_ns"]),
                    acknowledgement=acks.of_run(
                        r["run_id"], loop=bool(r["loop"]), stuck=bool(r["stuck"])
                    ),
                    **extra,
                )
            )
        return m.RunsPage(total=total, runs=out)

    def run(
        self, cur, now: int, run_id: str, p: m.RunPageParams, scope: Scope = EVERY_SERVICE
    ) -> m.RunDetail | Response:
        # A run may hold --max-handoffs-per-run handoffs and many more spans: the detail
        # answers one page of each (with totals), so its size is bounded whatever the run.
        grace = self.grace
        if sc.check_value(sc.ATTRIBUTES[sc.RUN_ID], run_id) is None:
            return _error(404, f"no run {run_id[:140]!r}")  # no such id can be stored
        key = {"run_id": run_id, "run_key": run_key(run_id)}
        found = _rows(cur, "run", {**key, "now": now})
        # Another service's run reads as no run at all: a 403 would say that it exists.
        if not found or not scope.sees(found[0]["service"]):
            return _error(404, f"no run {run_id!r}")
        r = found[0]
        verdict = r["verdict_now"]
        window = {**key, "now": now, "lo": r["first_seen_ns"], "hi": r["last_seen_ns"]}
        handoffs = _rows(
            cur, "run_handoffs", {**window, "limit": p.handoffs_limit, "offset": p.handoffs_offset}
        )
        handoffs_total = _rows(
            cur, "run_handoff_count", {k: v for k, v in window.items() if k != "now"}
        )[0]["n"]
        first_failure = _rows(cur, "run_first_failure", {**window, "verdict": verdict})
        waits = _rows(cur, "run_waits", {**key, "now": now})
        notified = notifications_by_run(cur, [run_id])
        acks = ActiveAcks(cur, now)
        spans: list[dict[str, Any]] = []
        outcome_spans: list[dict[str, Any]] = []
        spans_total = 0
        identities: dict[str, Any] = {}
        if r["min_received_ns"] is not None:
            received = {"run_id": run_id, "lo": r["min_received_ns"], "hi": r["max_received_ns"]}
            spans = _rows(
                cur, "run_spans", {**received, "limit": p.spans_limit, "offset": p.spans_offset}
            )
            identities = _rows(cur, "run_span_count", received)[0]
            spans_total = identities["n"]
            outcome_spans = _rows(cur, "run_outcomes", {**received, "limit": RUN_OUTCOMES_LIMIT})
        first = [handoff(h, now, grace) for h in first_failure]
        unobserved = list(r["unobserved"] or [])
        path = list(r["path"])
        turn: dict[str, Any] = {}
        if r["conversation_id"] is not None:
            # From the judge's turns (run_turn.sql), as continuity.sql tells them from the
            # runs: one conversation's rows instead of every run joined to its conversation.
            found_turn = _rows(
                cur, "run_turn", {"conversation": r["conversation_id"], "run": run_id}
            )
            turn = seen_turn(found_turn[0], scope) if found_turn else {}
        return m.RunDetail(
            **run_facts(r, verdict),
            why=run_why(
                verdict,
                first,
                status=r["status"],
                service=r["service"],
                loop_cycle=r["loop_cycle"] or (),
                unobserved=r["unobserved"] or (),
            ),
            # Whichever page of handoffs is asked for, the one that decides the verdict.
            first_failure=first[0] if first else None,
            next_step=sc.NEXT_STEPS[verdict],
            verification_expected=bool(r["verification_expected"]),
            unobserved=unobserved,
            not_observed=not_observed_note(unobserved, source_label(r["source"])),
            source=r["source"],
            source_label=source_label(r["source"]),
            final_agent=r["final_agent"],
            ended_at=iso(r["ended_ns"]),
            path=path[:RUN_PATH_LIMIT],
            path_total=len(path),
            path_summary=m.PathSummary.model_validate(summarise(path)),
            handoffs_capped=bool(r["handoffs_capped"]),
            handoff_cap=self.handoff_cap or None,
            loop_cycle=list(r["loop_cycle"]),
            loop_repeats=r["loop_repeats"],
            loop_usage=usage(r, "burned_"),
            trace_ids=list(identities.get("trace_ids") or []),
            conversation_ids=list(identities.get("conversation_ids") or []),
            outcome_result=r["outcome_result"],
            verifier=r["verifier"],
            outcomes=[
                m.Outcome(
                    handoff_id=s["handoff_id"],
                    verifier=s["outcome_verifier"],
                    result=s["outcome_result"],
                    receipt_id=s["outcome_receipt_id"],
                    at=iso(s["end_ns"]),
                )
                for s in outcome_spans
            ],
            waits=[approval(w, now, notified, acks) for w in waits],
            notifications=notified.get(run_id, []),
            acknowledgements=acks.by_run.get(run_id, []),
            conversation_id=r["conversation_id"],
            continuity=turn.get("continuity"),
            conversation_position=turn.get("position"),
            previous_run_id=turn.get("previous_run_id"),
            previous_final_agent=turn.get("previous_final_agent"),
            first_to_agent=r["first_to_agent"],
            entry_agents=list(r["entry_agents"] or []),
            handoffs=[handoff_detail(h, now, grace) for h in handoffs],
            handoffs_total=handoffs_total,
            handoffs_offset=p.handoffs_offset,
            handoffs_limit=p.handoffs_limit,
            spans=[span(s) for s in spans],
            spans_total=spans_total,
            spans_offset=p.spans_offset,
            spans_limit=p.spans_limit,
        )

    def conversation(
        self, cur, now: int, conversation_id: str, scope: Scope = EVERY_SERVICE
    ) -> m.Conversation | Response:
        spec = sc.ATTRIBUTES[sc.GEN_AI_CONVERSATION_ID]
        if sc.check_value(spec, conversation_id) is None:
            return _error(404, f"no conversation {conversation_id[:140]!r}")
        rows = [
            seen_turn(r, scope)
            for r in _rows(cur, "continuity", _continuity_params(now, conversation_id))
            if scope.sees(r["service"])
        ]
        if not rows:
            return _error(404, f"no conversation {conversation_id!r}")
        counts: dict[str, int] = {}
        for r in rows:
            key = r["continuity"] or "unknown"
            counts[key] = counts.get(key, 0) + 1
        return m.Conversation(
            conversation_id=conversation_id,
            services=sorted({r["service"] for r in rows}, key=lambda v: (v is None, v or "")),
            runs=[conversation_run(r) for r in rows[:CONVERSATION_RUNS_LIMIT]],
            runs_total=len(rows),
            counts=counts,
        )

    def handoffs(
        self, cur, now: int, p: m.HandoffsParams, scope: Scope = EVERY_SERVICE
    ) -> m.Handoffs:
        since, until = self._window(p, now)
        params = {
            "now": now,
            "since": since,
            "until": until,
            "service": p.service,
            "scope": scope.param,
            "verdict": p.verdict,
            "unhealthy": p.unhealthy,
            "limit": p.limit,
            "page_since": page_since(now, since, until),
            "wide_since": page_since(now, since, until, WIDE_PROBE_S),
        }
        return m.Handoffs(
            handoffs=[handoff_list_item(r, now, self.grace) for r in _rows(cur, "handoffs", params)]
        )

    def edges(self, cur, now: int, p: m.WindowParams, scope: Scope = EVERY_SERVICE) -> m.Edges:
        since, until = self._window(p, now)
        # Whole days inside the window come from the daily rollup, other whole hours from
        # the hourly one, the rest live (edges.sql).
        h0, h1 = -(-since // NS_PER_HOUR), until // NS_PER_HOUR - 1
        d0, d1 = -(-since // NS_PER_DAY), until // NS_PER_DAY - 1
        dh0, dh1 = (d0 * 24, (d1 + 1) * 24 - 1) if d0 <= d1 else (1, 0)
        buckets = {
            "service": p.service,
            "scope": scope.param,
            "d0": d0,
            "d1": d1,
            "dh0": dh0,
            "dh1": dh1,
        }
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
        runs_params = {**buckets, "r0": since // NS_PER_HOUR, "r1": (until - 1) // NS_PER_HOUR}
        newest = {
            (r["from_agent"], r["to_agent"]): list(dict.fromkeys(r["runs"]))[:EDGE_RUNS]
            for r in _rows(cur, "edge_runs", runs_params)
        }
        edges = []
        for r in _rows(cur, "edges", params):
            verdicts = dict(sorted(r["verdicts"].items(), key=lambda kv: sc.RANK[kv[0]]))
            edges.append(
                m.Edge(
                    kind=r["kind"],
                    from_agent=r["from_agent"],
                    to_agent=r["to_agent"],
                    count=r["count"],
                    unhealthy=r["unhealthy"],
                    unhealthy_share=rate(r["unhealthy"], r["count"]) or 0.0,
                    undeclared=r["undeclared"],
                    verdicts=verdicts,
                    runs=newest.get((r["from_agent"], r["to_agent"]), []),
                    usage=usage_sums(r),
                    unhealthy_usage=usage_sums(r, "unhealthy_"),
                )
            )
        return m.Edges(edges=edges)

    def loops(self, cur, now: int, p: m.ListParams, scope: Scope = EVERY_SERVICE) -> m.Loops:
        acks = ActiveAcks(cur, now)
        return m.Loops(
            loops=[
                m.Loop(
                    run_id=r["run_id"],
                    service=r["service"],
                    cycle=list(r["cycle"]),
                    repeats=r["repeats"],
                    turns=r["turns"],
                    status=r["status"],
                    last_seen_at=iso(r["last_seen_ns"]),
                    acknowledgement=acks.of(sc.NOTIFY_RUN_LOOPING, r["run_id"]),
                    usage=usage(r),
                    burned=usage(r, "burned_"),
                    tokens_burned=_tokens(usage(r, "burned_")),
                )
                for r in _rows(cur, "loops", self._list_params(p, now, scope))
            ]
        )

    def approvals(
        self, cur, now: int, p: m.ApprovalsParams, scope: Scope = EVERY_SERVICE
    ) -> m.Approvals:
        params = {
            "now": now,
            "service": p.service,
            "scope": scope.param,
            "limit": p.limit,
            "offset": p.offset,
            "overdue": sc.APPROVAL_OVERDUE,
            "uncertain": sc.WAIT_UNCERTAIN,
        }
        rows = _rows(cur, "approvals", params)
        notified = notifications_by_run(cur, list({r["run_id"] for r in rows}))
        acks = ActiveAcks(cur, now)
        counts, _new = wait_counts(cur, now, now, p.service, scope)
        return m.Approvals(
            total=sum(counts.values()),
            counts=counts,
            approvals=[approval(r, now, notified, acks) for r in rows],
        )

    def false_completions(
        self, cur, now: int, p: m.ListParams, scope: Scope = EVERY_SERVICE
    ) -> m.FalseCompletions:
        params = self._list_params(p, now, scope)
        return m.FalseCompletions(
            runs=[
                m.FalseCompletion(
                    run_id=r["run_id"],
                    service=r["service"],
                    final_agent=r["final_agent"],
                    ended_at=iso(r["ended_ns"]),
                    last_seen_at=iso(r["last_seen_ns"]),
                    outcome_result=r["outcome_result"],
                    verifier=r["verifier"],
                )
                for r in _rows(cur, "false_completions", params)
            ],
            total=false_completion_count(cur, params),
        )

    def live(self, cur, now: int, p: m.LiveParams, scope: Scope = EVERY_SERVICE) -> m.Live:
        service, window, grace = p.service, p.window, self.grace
        since = now - window * NS
        acks = ActiveAcks(cur, now)
        runs = []
        for r in _rows(
            cur,
            "live_runs",
            {
                "now": now,
                "service": service,
                "scope": scope.param,
                "started": sc.RUN_STATUS_STARTED,
                "stuck_before": silent_before(now, grace),
                "limit": LIVE_RUNS_LIMIT,
            },
        ):
            runs.append(
                m.InFlightRun(
                    run_id=r["run_id"],
                    service=r["service"],
                    current_agent=r["current_agent"],
                    last_handoff_at=iso(r["last_handoff_ns"]),
                    seconds_since_last_handoff=_seconds(now, r["last_activity_ns"]),
                    verdict=r["verdict"],
                    verdict_label=_label(r["verdict"]),
                    stuck=bool(r["stuck"]),
                    loop=bool(r["loop"]),
                    pending_approvals=r["pending_approvals"],
                    acknowledgement=acks.of_run(
                        r["run_id"], loop=bool(r["loop"]), stuck=bool(r["stuck"])
                    ),
                    model_calls=r["model_calls"],
                    budget_remaining=r["budget_remaining"],
                    budget_used=_budget_used(r["model_calls"], r["budget_total"]),
                )
            )
        counts: dict[str, int] = defaultdict(int)
        timeline = []
        shown = {"service": service, "scope": scope.param}
        for r in _rows(cur, "live_verdicts", {"now": now, "since": since, **shown}):
            counts[r["verdict"]] += r["count"]
            timeline.append(
                m.Minute(
                    minute=iso(r["minute"] * 60 * NS) or "", verdict=r["verdict"], count=r["count"]
                )
            )
        unhealthy = _rows(
            cur,
            "handoffs",
            {
                "now": now,
                "since": since,
                "until": INT64_MAX,
                **shown,
                "verdict": None,
                "unhealthy": True,
                "limit": LIVE_UNHEALTHY,
                "page_since": page_since(now, since, INT64_MAX),
                "wide_since": page_since(now, since, INT64_MAX, WIDE_PROBE_S),
            },
        )
        rc = run_counts(cur, now, since, grace, service, scope)
        waits, waits_new = wait_counts(cur, now, since, service, scope)
        window_params = {"since": since, "until": INT64_MAX, **shown}
        before = {"since": since - window * NS, "until": since, **shown}
        # Of each tile's count, the acknowledged ones (the tile still counts them all, so
        # the board and the lists agree: "3 looping · 1 acknowledged").
        acked: dict[str, int] = defaultdict(int)
        for (_service, event), n in acknowledged_counts(
            cur,
            now,
            looped_since=since,
            stuck_before=silent_before(now, grace),
            service=service,
            scope=scope,
            active=bool(acks.by_target),
        ).items():
            acked[event] += n
        board = m.Board(
            stuck=m.Tile(count=rc["stuck"], new_in_window=rc["stuck_new"]),
            looping=m.LoopTile(
                count=rc["looping"],
                new_in_window=rc["looping_new"],
                in_flight=rc["looping_in_flight"],
            ),
            approvals_overdue=m.Tile(
                count=waits.get(sc.APPROVAL_OVERDUE, 0),
                new_in_window=waits_new.get(sc.APPROVAL_OVERDUE, 0),
            ),
            false_complete=m.FalseCompleteTile(
                count=false_completion_count(cur, window_params),
                previous_window=false_completion_count(cur, before),
            ),
            stuck_acknowledged=acked[sc.NOTIFY_RUN_STUCK],
            looping_acknowledged=acked[sc.NOTIFY_RUN_LOOPING],
            overdue_acknowledged=acked[sc.NOTIFY_APPROVAL_OVERDUE],
        )
        return m.Live(
            now=iso(now) or "",
            window=window,
            board=board,
            runs_in_flight_total=rc["in_flight"],
            runs_in_flight=runs,
            wait_counts=waits,
            verdict_counts=dict(sorted(counts.items(), key=lambda kv: sc.RANK[kv[0]])),
            timeline=timeline,
            unhealthy=[handoff_list_item(r, now, grace) for r in unhealthy],
        )

    def weekly(
        self, cur, now: int, p: m.WeeklyParams, scope: Scope = EVERY_SERVICE
    ) -> m.Weekly | Response:
        today = (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=now // NS)).date()
        monday = today - dt.timedelta(days=today.weekday())
        starts = [monday - dt.timedelta(weeks=i) for i in range(p.weeks - 1, -1, -1)]
        labels = [week_label(d) for d in starts]
        # This week is partial: its rates rest on the days since Monday 00:00 UTC only.
        elapsed = (now / NS - (monday - dt.date(1970, 1, 1)).days * 86400) / 86400
        shown = {"service": p.service, "scope": scope.param}
        rows = _rows(cur, "weekly", {"start": starts[0], **shown})
        body = m.Weekly.model_validate(weekly_body(rows, labels, this_week_days=elapsed))
        start_day = (starts[0] - dt.date(1970, 1, 1)).days
        body.spend = weekly_spend(
            _rows(cur, "weekly_spend", {"start_day": start_day, **shown}), labels
        )
        since = (starts[0] - dt.date(1970, 1, 1)).days * NS_PER_DAY
        turns = _rows(cur, "continuity_weekly", {"since": since, **shown})
        body.continuity = [
            m.WeekContinuity.model_validate(w) for w in weekly_continuity(turns, labels)
        ]
        if p.format == "csv":
            return Response(weekly_csv(body.model_dump()), media_type="text/csv; charset=utf-8")
        return body

    def drops(self, cur, now: int, scope: Scope = EVERY_SERVICE) -> m.Drops:
        rows = [r for r in _rows(cur, "drops", {}) if scope.sees(r["service"])]
        return m.Drops.model_validate({"drops": rows})

    def sources(self, cur, now: int, scope: Scope = EVERY_SERVICE) -> m.Sources:
        rows = [r for r in _rows(cur, "sources", {}) if scope.sees(r["service"])]
        return m.Sources(
            sources=fold(rows, SOURCE_LABELS, iso),
            translators=translator_infos(SOURCES),
        )

    # --- acknowledgements ----------------------------------------------------------------

    def acknowledgements(
        self, cur, now: int, p: m.AcknowledgementsParams, scope: Scope = EVERY_SERVICE
    ) -> m.Acknowledgements:
        if p.active:
            rows = statements.dicts(cur, "ack/active_acknowledgements", {"now": now})
        else:
            rows = statements.dicts(cur, "ack/recent_acknowledgements", {"limit": ACK_RECENT_LIMIT})
        return m.Acknowledgements(
            acknowledgements=[acknowledgement(r, now) for r in rows if scope.sees(r["service"])]
        )

    def acknowledge(
        self, cur, now: int, body: m.AcknowledgementRequest, scope: Scope = EVERY_SERVICE
    ) -> Response:
        """Store one acknowledgement (replacing the target's active one); 201 with it, or
        400 naming the field that is wrong, or 404 for a run the store does not hold."""
        handoff_id = body.handoff_id
        if body.event == sc.NOTIFY_APPROVAL_OVERDUE and handoff_id is None:
            return _error(400, "handoff_id: required for approval_overdue (the wait's handoff.id)")
        if body.event in RUN_EVENTS and handoff_id is not None:
            return _error(400, f"handoff_id: not accepted for {body.event} (a run-level event)")
        if (body.until is None) == (body.for_seconds is None):
            return _error(400, "until / for_seconds: give exactly one of them")
        if body.until is not None:
            try:
                until = parse_time("until", body.until)
            except BadParam as exc:
                return _error(400, str(exc))
            assert until is not None
            if until <= now:
                return _error(400, f"until: {body.until!r} is not in the future")
            if until - now > m.ACK_MAX_SECONDS * NS:
                return _error(400, f"until: {body.until!r} is more than 30 days ahead")
        else:
            assert body.for_seconds is not None
            until = now + body.for_seconds * NS
        found = statements.dicts(
            cur, "ack/run_service", {"run_id": body.run_id, "run_key": run_key(body.run_id)}
        )
        if not found or not scope.sees(found[0]["service"]):
            return _error(404, f"run_id: no run {body.run_id[:140]!r}")
        target = {"event": body.event, "run_id": body.run_id, "handoff_id": handoff_id}
        row = {
            **target,
            "service": found[0]["service"],
            "by_name": body.by,
            "note": body.note,
            "now": now,
            "until": until,
        }
        # One active per target: the one it replaces ends now and stays as history.
        statements.rows(cur, "ack/clear_acknowledgement", {**target, "now": now})
        statements.run(cur, "ack/insert_acknowledgement", row)
        if self.retention_days:
            cutoff = now - int(self.retention_days * 86400 * NS)
            statements.run(cur, "ack/expire_acknowledgements", {"cutoff": cutoff})
        log.info("acknowledged %s of run %r until %s", body.event, body.run_id[:140], iso(until))
        stored = acknowledgement(
            {**row, "created_ns": now, "until_ns": until, "cleared_ns": None}, now
        )
        return Response(stored.model_dump_json(), status_code=201, media_type="application/json")

    def clear(self, cur, now: int, p: m.ClearParams, scope: Scope = EVERY_SERVICE) -> Response:
        if p.event == sc.NOTIFY_APPROVAL_OVERDUE and p.handoff_id is None:
            return _error(400, "handoff_id: required for approval_overdue (the wait's handoff.id)")
        if p.event in RUN_EVENTS and p.handoff_id is not None:
            return _error(400, f"handoff_id: not accepted for {p.event} (a run-level event)")
        target = {"event": p.event, "run_id": p.run_id, "handoff_id": p.handoff_id}
        found = statements.dicts(
            cur, "ack/run_service", {"run_id": p.run_id, "run_key": run_key(p.run_id)}
        )
        visible = scope.services is None or (found and scope.sees(found[0]["service"]))
        if not visible or not statements.rows(
            cur, "ack/clear_acknowledgement", {**target, "now": now}
        ):
            return _error(404, f"no active {p.event} acknowledgement of run {p.run_id[:140]!r}")
        log.info("acknowledgement of %s of run %r cleared", p.event, p.run_id[:140])
        return Response(status_code=204)

    # --- the routes ------------------------------------------------------------------------

    def router(self) -> APIRouter:
        """`/api/v1/*`: one GET operation per reader (`routes.READS`), declared with its
        parameter and answer models (what the OpenAPI document is generated from), and the
        acknowledgement writes."""
        router = APIRouter(prefix=PREFIX)
        bad = {400: {"model": m.Error, "description": openapi.BAD_PARAM}}
        for read in READS:
            endpoint = self._endpoint(read)
            if read.responses is None:
                responses: dict[Any, Any] = bad
            else:
                responses = {**bad, **read.responses} if read.responses else {}
            router.add_api_route(
                read.path,
                endpoint,
                methods=["GET"],
                response_model=read.answer,
                summary=read.summary,
                description=read.description,
                operation_id=read.summary.lower().replace(" ", "_"),
                name=read.reader,
                responses=responses,
            )
            # HEAD too, as Starlette's GET routes always answered it; not documented.
            router.add_api_route(read.path, endpoint, methods=["HEAD"], include_in_schema=False)
        self._ack_writes(router, bad)
        token_routes(router, self.cursor, writable=self.writable, guard=self.credentials, bad=bad)
        return router

    def _endpoint(self, read: Read) -> Callable[..., Response]:
        """The endpoint of one row of `READS`: its path and query parameters as FastAPI
        reads them (the signature is built, since the models vary by row), answering
        through `self.answer` with the row's reader."""
        reader = getattr(self, read.reader)
        params: list[inspect.Parameter] = []
        if read.path_param:
            doc = Path(description=read.path_doc)
            params.append(
                inspect.Parameter(read.path_param, KEYWORD, annotation=Annotated[str, doc])
            )
        if read.params is not None:
            params.append(
                inspect.Parameter("p", KEYWORD, annotation=Annotated[read.params, Query()])
            )
        extra = {"exclude_unset": True} if read.exclude_unset else {}

        def endpoint(request: Request, **kw: Any) -> Response:
            try:
                scope = self.scope(request)
            except CredentialError as exc:
                return _error(400, str(exc))
            args = [kw[p.name] for p in params]
            return self.answer(reader, *args, scope=scope, **extra)

        asked = inspect.Parameter("request", KEYWORD, annotation=Request)
        endpoint.__signature__ = inspect.Signature([asked, *params], return_annotation=Response)  # type: ignore[attr-defined]
        endpoint.__name__ = read.reader
        return endpoint

    def _ack_writes(self, router: APIRouter, bad: dict[Any, Any]) -> None:
        """POST and DELETE /acknowledgements: the API's only writes. A process that serves
        the store read-only (`handoffscope api`) answers both 405 with where to go instead,
        before reading the body, so a client can probe with an empty one."""
        path = "/acknowledgements"
        missing = {"model": m.Error, "description": "No such run / no active acknowledgement."}
        read_only = {"model": m.Error, "description": ACK_READ_ONLY}
        post: dict[str, Any] = dict(
            methods=["POST"],
            summary="Acknowledge",
            operation_id="acknowledge",
            description="Silence a stuck run, a loop or an overdue wait until a time: the "
            "notifier does not send its event and /metrics' gauges leave it out while the "
            "acknowledgement is active. Replaces the target's active one.",
        )
        delete: dict[str, Any] = dict(
            methods=["DELETE"],
            summary="Clear acknowledgement",
            operation_id="clear_acknowledgement",
            description="End the target's active acknowledgement now (kept as history).",
        )
        if not self.writable:

            def refuse() -> Response:
                return _error(405, ACK_READ_ONLY)

            for kw in (post, delete):
                router.add_api_route(
                    path, refuse, status_code=405, responses={405: read_only}, **kw
                )
            return

        def acknowledge(request: Request, body: m.AcknowledgementRequest) -> Response:
            try:
                return self.answer(self.acknowledge, body, scope=self.scope(request))
            except CredentialError as exc:
                return _error(400, str(exc))

        def clear(request: Request, p: Annotated[m.ClearParams, Query()]) -> Response:
            try:
                return self.answer(self.clear, p, scope=self.scope(request))
            except CredentialError as exc:
                return _error(400, str(exc))

        router.add_api_route(
            path,
            acknowledge,
            response_model=m.Acknowledgement,
            status_code=201,
            responses={**bad, 404: missing},
            **post,
        )
        router.add_api_route(
            path,
            clear,
            status_code=204,
            response_class=Response,
            responses={**bad, 204: {"description": "Cleared."}, 404: missing},
            **delete,
        )


async def bad_param(request: Request, exc: Exception) -> Response:
    """400 `{"error": ...}` for a parameter its parser refused: the parser's own sentence.

    FastAPI's default would be a 422 listing pydantic's errors; docs/api.md promises a
    400 with one sentence, the same as before the API had models."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    for e in errors:
        cause = (e.get("ctx") or {}).get("error")
        if isinstance(cause, BadParam):
            return _error(400, str(cause))
    first = errors[0] if errors else {}
    where = str((first.get("loc") or ("parameter",))[-1])
    return _error(400, f"{where}: {first.get('msg', 'not accepted')}")


async def http_error(request: Request, exc: Exception) -> Response:
    """FastAPI's own refusals (a body that is not JSON: 400 "There was an error parsing
    the body") in the API's one error shape, `{"error": ...}`, as docs/api.md promises."""
    if isinstance(exc, StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail))
    return _error(400, "not accepted")


def query_app(
    store,
    engine,
    settings: CollectorConfig | QueryConfig,
    *,
    routes: Sequence[BaseRoute] = (),
    exception_handlers: dict[Any, Callable] | None = None,
    credentials: Credentials | None = None,
) -> FastAPI:
    """The collector's HTTP app: the query API, its document and page, and `routes`."""
    api = QueryAPI(store, engine, settings, credentials)
    app = FastAPI(
        title=openapi.TITLE,
        version=openapi.VERSION,
        description=openapi.DESCRIPTION,
        routes=list(routes),
        # FastAPI's own /docs and /redoc load Swagger UI / ReDoc from a CDN: an offline
        # machine, or a dashboard behind a strict CSP, would get a blank page. Ours is
        # rendered here from the same document.
        docs_url=None,
        redoc_url=None,
        # FastAPI would report its requests through a global OpenTelemetry provider if
        # the process had one: the collector is the receiver of telemetry, and its
        # error records would carry the caller's parameters (run ids, search text).
        telemetry={
            "tracing": False,
            "metrics": False,
            "logs": False,
            "operation_spans": False,
            "auto_configure": False,
        },
        exception_handlers={
            StarletteHTTPException: http_error,
            **(exception_handlers or {}),
            RequestValidationError: bad_param,
        },
    )
    app.include_router(api.router())
    # Generating the document takes about half a second (every model's schema): off the
    # start-up path, in a thread of its own; the first request that needs it waits for it.
    lock = threading.Lock()
    made: list[dict[str, Any]] = []

    def spec() -> dict[str, Any]:
        with lock:
            if not made:
                made.append(openapi.document(app, auth=api.auth))
            return made[0]

    app.openapi = spec  # type: ignore[method-assign]
    threading.Thread(target=spec, name="handoffscope-openapi", daemon=True).start()

    async def docs(request: Request) -> Response:
        return HTMLResponse(openapi.render_docs(spec()))

    app.add_route("/docs", docs, methods=["GET"], include_in_schema=False)
    return app
