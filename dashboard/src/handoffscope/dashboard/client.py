"""The dashboard's only way to data: the collector's query API (docs/api.md).

DuckDB is single-writer, so the dashboard never opens the collector's file; it asks the
collector over HTTP. Where to ask comes from the environment the `handoffscope dashboard`
command sets up:

- `HANDOFFSCOPE_API` — the collector's base URL (default `http://127.0.0.1:4318`);
- `HANDOFFSCOPE_TOKEN` — when set, sent as `Authorization: Bearer <token>`;
- with sign-in on (`signin`), the services the signed-in person may see, sent on every
  request as `X-Handoffscope-Services`.

One `httpx.Client` per (URL, token) lives in `st.cache_resource`, so every session shares
its connection pool. Answers are turned into pandas frames and kept in `st.cache_data` for
a few seconds: long enough that the seven pages and a dozen operators do not each hit
the collector on every rerun, short enough that the board stays live (the live board's
TTL is below its refresh period). Every session shares that cache, so each answer is
keyed on the whole `Connection`: URL, token and the session's services. A time window
is part of the cache key as a length, not as a start time, and is turned into `since`
inside the cached call; keying on the start time would miss the cache on every rerun.

Every failure becomes a `CollectorError` with a sentence for the operator and a hint
(unreachable, token refused, unknown run, an answer of the wrong shape); pages show it
with `layout.guard()` instead of a traceback. Errors are never cached.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar
from urllib.parse import quote

import httpx
import pandas as pd
import streamlit as st

from handoffscope.dashboard import signin
from handoffscope.dashboard.config import DEFAULT_API, ENV_API, ENV_TOKEN
from handoffscope.instrumentation.semconv import SCOPE_HEADER

LIVE_TTL_SECONDS = 2
"""Below the live board's refresh period, so each refresh shows new data."""
LIST_TTL_SECONDS = 10
REVIEW_TTL_SECONDS = 60
"""Weekly numbers move slowly; a minute of cache spares the heaviest query."""

CONNECT_TIMEOUT_SECONDS = 2.0
READ_TIMEOUT_SECONDS = 10.0

API_PREFIX = "/api/v1"


# --- errors ----------------------------------------------------------------------------


class CollectorError(Exception):
    """Something the operator must be told in words: what is wrong and what to do."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class CollectorUnreachable(CollectorError):
    """Nothing answers at the configured URL (refused, timed out, bad host)."""


class TokenRefused(CollectorError):
    """The collector answered 401/403: no token, or the wrong one."""


class RunNotFound(CollectorError):
    """`/runs/{run_id}` answered 404."""


class ConversationNotFound(CollectorError):
    """`/conversations/{conversation_id}` answered 404."""


class BadResponse(CollectorError):
    """The collector answered, but not with what docs/api.md promises."""


# --- connection ------------------------------------------------------------------------


@dataclass(frozen=True)
class Connection:
    """Where to ask, with which credential, for which services: everything an answer
    depends on besides its arguments, so every cached answer is keyed on all of it."""

    api: str
    token: str | None
    services: tuple[str, ...] | None = None
    """The services the signed-in person may see (`signin.scope()`), sent in the
    `X-Handoffscope-Services` header; None: no header, whatever the token may read."""

    @classmethod
    def from_env(cls) -> Connection:
        api = (os.environ.get(ENV_API) or DEFAULT_API).rstrip("/")
        token = os.environ.get(ENV_TOKEN) or None
        return cls(api, token)

    @property
    def headers(self) -> dict[str, str]:
        """This connection's own request headers (the shared HTTP client has the rest)."""
        if self.services is None:
            return {}
        return {SCOPE_HEADER: ",".join(quote(s, safe="") for s in self.services)}


@st.cache_resource(show_spinner=False)
def _http(api: str, token: str | None) -> httpx.Client:
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(
        base_url=api,
        headers=headers,
        timeout=httpx.Timeout(READ_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
    )


def _get(conn: Connection, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
    """GET and map every failure to a `CollectorError`; returns only 2xx responses."""
    resp = _send(conn, "GET", path, params)
    if resp.status_code >= 400:
        detail = _error_text(resp)
        if resp.status_code == 404 and path.startswith(f"{API_PREFIX}/conversations/"):
            raise ConversationNotFound(
                "The collector has no run of this conversation.",
                "Check the id (the Agents SDK's group_id, LangGraph's thread_id, a session "
                "id): its runs may have passed the retention, or not have sent a span yet.",
            )
        if resp.status_code == 404 and path.startswith(f"{API_PREFIX}/runs/"):
            raise RunNotFound(
                "The collector has no run with this id.",
                "Check the id, or widen the time window: the run may not have sent any span yet.",
            )
        raise BadResponse(
            f"The collector answered {resp.status_code} to {path}: {detail}",
            "The dashboard and the collector may be different versions.",
        )
    return resp


def _send(
    conn: Connection,
    method: str,
    path: str,
    params: dict[str, Any] | None = None,
    body: dict[str, Any] | None = None,
) -> httpx.Response:
    """One request; an unreachable collector and a refused token become `CollectorError`s,
    every other answer is returned for the caller to read."""
    clean = {k: v for k, v in (params or {}).items() if v is not None and v != ""}
    api, token = conn.api, conn.token
    try:
        resp = _http(api, token).request(
            method, path, params=clean, json=body, headers=conn.headers
        )
    except httpx.TransportError as exc:
        raise CollectorUnreachable(
            f"Cannot reach the collector at {api} ({type(exc).__name__}).",
            "Start it with `handoffscope collector`, or point the dashboard at the right "
            "address with `handoffscope dashboard --api URL` (or HANDOFFSCOPE_API).",
        ) from exc
    if resp.status_code in (401, 403):
        if token:
            raise TokenRefused(
                f"The collector at {api} refused the dashboard's token.",
                "Set HANDOFFSCOPE_TOKEN to the token the collector was started with.",
            )
        raise TokenRefused(
            f"The collector at {api} requires a token and the dashboard has none.",
            "Set HANDOFFSCOPE_TOKEN before `handoffscope dashboard`.",
        )
    return resp


def _error_text(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.reason_phrase or "no detail"
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"]
    return resp.reason_phrase or "no detail"


def _json(conn: Connection, path: str, params: dict[str, Any] | None = None) -> dict:
    resp = _get(conn, path, params)
    try:
        body = resp.json()
    except ValueError as exc:
        raise BadResponse(f"The collector's answer to {path} is not JSON.") from exc
    if not isinstance(body, dict):
        raise BadResponse(f"The collector's answer to {path} is not a JSON object.")
    return body


def _list(body: dict, key: str, path: str) -> list[dict]:
    rows = body.get(key, [])
    if not isinstance(rows, list):
        raise BadResponse(f"The collector's answer to {path} has no list '{key}'.")
    return [r for r in rows if isinstance(r, dict)]


def _since(window_seconds: int | None) -> str | None:
    if not window_seconds:
        return None
    start = datetime.now(UTC) - timedelta(seconds=window_seconds)
    return start.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# --- frames ----------------------------------------------------------------------------

# The columns each frame has even when the answer is empty: names of the collector's
# answer models. The dashboard talks HTTP and does not install the collector, so it
# cannot import them; tests/dashboard/test_client_columns.py checks every name below
# against the answer's schema in the /openapi.json a real collector serves.

RUN_COLUMNS = [
    "run_id", "service", "verdict", "verdict_label", "status", "started_at", "last_seen_at",
    "current_agent", "handoff_count", "loop", "false_complete", "pending_approvals", "turns",
]  # fmt: skip
HANDOFF_COLUMNS = [
    "handoff_id", "from_agent", "to_agent", "turn", "requested_at", "verdict",
    "verdict_label", "failed_boundary", "why", "next_step", "fingerprint", "state_version",
    "history_items_forwarded", "history_items_total", "route_declared", "rejection_reason",
    "missing_keys", "seq",
]  # fmt: skip
UNHEALTHY_COLUMNS = ["run_id", "service", *HANDOFF_COLUMNS]
"""A handoff listed across runs (the live board's newest unhealthy ones)."""
RUN_HANDOFF_COLUMNS = [*HANDOFF_COLUMNS, "boundaries"]
"""A handoff on its run's detail page, with its six boundaries."""
IN_FLIGHT_COLUMNS = [
    "run_id", "service", "current_agent", "last_handoff_at", "seconds_since_last_handoff",
    "verdict", "verdict_label", "stuck", "loop", "pending_approvals", "acknowledgement",
    "model_calls", "budget_remaining", "budget_used",
]  # fmt: skip
RUN_LIST_COLUMNS = [
    *RUN_COLUMNS, "final_agent", "source_label", "in_flight", "stuck",
    "seconds_since_last_activity", "trace_ids", "conversation_ids", "acknowledgement",
]  # fmt: skip
EDGE_COLUMNS = [
    "kind", "from_agent", "to_agent", "count", "unhealthy", "unhealthy_share", "undeclared",
    "verdicts", "runs", "usage", "unhealthy_usage",
]  # fmt: skip
LOOP_COLUMNS = [
    "run_id", "service", "cycle", "repeats", "turns", "status", "last_seen_at", "acknowledgement",
    "usage", "tokens_burned", "burned",
]  # fmt: skip
APPROVAL_COLUMNS = [
    "run_id", "handoff_id", "service", "owner", "reason", "deadline", "seconds_left",
    "verdict", "verdict_label", "missing", "resume_token_id", "state_persisted",
    "checkpointed_at", "notifications", "acknowledgement",
]  # fmt: skip
FALSE_COMPLETION_COLUMNS = [
    "run_id", "service", "final_agent", "ended_at", "outcome_result", "verifier",
]  # fmt: skip
OUTCOME_COLUMNS = ["handoff_id", "verifier", "result", "receipt_id", "at"]
SPAN_COLUMNS = ["name", "handoff_id", "start", "end", "attributes"]
TIMELINE_COLUMNS = ["minute", "verdict", "count"]
WEEK_COLUMNS = ["week", "handoffs", "rejections", "rate", "partial", "days"]
BY_REASON_COLUMNS = ["week", "reason", "count", "rate"]
BY_EDGE_COLUMNS = ["week", "from_agent", "to_agent", "handoffs", "rejections", "rate"]
BY_AGENT_COLUMNS = ["week", "agent", "handoffs", "rejections", "rate"]
BY_EDGE_REASON_COLUMNS = ["week", "from_agent", "to_agent", "reason", "count", "rate"]
SPEND_COLUMNS = [
    "week", "verdict", "verdict_label", "runs", "usage", "share", "tokens_share",
    "burned_tokens", "burned_cost_usd",
]  # fmt: skip
CONTINUITY_COLUMNS = [
    "week", "service", "turns", "continued", "rerouted", "diverted", "unknown",
    "rerouted_rate", "diverted_rate",
]  # fmt: skip
CONVERSATION_RUN_COLUMNS = [
    "run_id", "service", "position", "started_at", "ended_at", "status", "start_agent",
    "final_agent", "first_to_agent", "continuity", "previous_run_id", "previous_final_agent",
    "verdict", "verdict_label", "handoff_count", "loop", "cost_usd",
]  # fmt: skip
DROP_COLUMNS = ["service", "attribute", "count"]
SOURCE_COLUMNS = [
    "service", "scope", "status", "translator", "translator_label", "spans_received",
    "evidence_spans", "refused_spans", "refused_by_reason", "first_seen_at", "last_seen_at",
    "advice",
]  # fmt: skip
TRANSLATOR_COLUMNS = ["source", "label", "scopes"]

TIME_COLUMNS = {
    "started_at", "last_seen_at", "ended_at", "requested_at", "last_handoff_at", "deadline",
    "checkpointed_at", "minute", "at", "start", "end", "first_seen_at",
}  # fmt: skip


def frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    """Rows as a frame with at least `columns` (so an empty answer still has its shape),
    times parsed to UTC timestamps."""
    df = pd.DataFrame(rows)
    for col in columns:
        if col not in df.columns:
            df[col] = None
    df = df[columns + [c for c in df.columns if c not in columns]]
    for col in df.columns:
        if col in TIME_COLUMNS:
            df[col] = pd.to_datetime(df[col], utc=True, format="ISO8601", errors="coerce")
    return df


# --- endpoints -------------------------------------------------------------------------


@dataclass
class Live:
    now: pd.Timestamp | None
    in_flight: pd.DataFrame
    verdict_counts: dict[str, int]
    timeline: pd.DataFrame
    unhealthy: pd.DataFrame
    board: dict[str, dict[str, int]] = field(default_factory=dict)
    """The four tiles: stuck, looping, approvals_overdue, false_complete (docs/api.md)."""
    in_flight_total: int = 0
    wait_counts: dict[str, int] = field(default_factory=dict)
    acknowledged: dict[str, int] = field(default_factory=dict)
    """Of the tiles' counts, the acknowledged ones: `stuck`, `looping`, `overdue` (the
    board's `*_acknowledged`)."""


@dataclass
class Listed:
    """A capped list and how many there are in all (the page says "N of M")."""

    rows: pd.DataFrame
    total: int
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class RunDetail:
    summary: dict[str, Any]
    """Scalar facts of the run (verdict, status, times, agents, loop, counts)."""
    path: list[str]
    loop_cycle: list[str]
    handoffs: pd.DataFrame
    outcomes: pd.DataFrame
    waits: pd.DataFrame
    spans: pd.DataFrame
    notifications: list[dict[str, Any]]
    """What the collector's notifier sent about this run (docs/api.md, Notification)."""
    path_summary: dict[str, Any] = field(default_factory=dict)
    """The whole path folded (`{segments: [{agents, repeat}], segments_omitted, text}`)."""
    handoffs_total: int = 0
    """Handoffs of the run; `handoffs` holds one page of them, from `handoffs_offset`."""
    handoffs_offset: int = 0
    spans_total: int = 0
    """Evidence spans of the run; `spans` holds the oldest page of them."""


@dataclass
class Weekly:
    this_week: str | None
    last_week: str | None
    weeks: pd.DataFrame
    by_reason: pd.DataFrame
    by_edge: pd.DataFrame
    by_agent: pd.DataFrame
    by_edge_reason: pd.DataFrame
    """(week, edge, reason) rejections and their share of the edge's handoffs."""
    spend: pd.DataFrame = field(default_factory=lambda: frame([], SPEND_COLUMNS))
    """(week, verdict runs ended in) what those runs cost and their share of the week's."""
    continuity: pd.DataFrame = field(default_factory=lambda: frame([], CONTINUITY_COLUMNS))
    """(week, service) conversations' later turns: continued, rerouted, diverted."""


@dataclass
class Conversation:
    conversation_id: str
    runs: pd.DataFrame
    """Its runs in order (`CONVERSATION_RUN_COLUMNS`)."""
    runs_total: int
    counts: dict[str, int]


@dataclass
class Health:
    ok: bool
    spans_stored: int | None = None
    judge_lag_seconds: float | None = None
    """How long the oldest stored but not yet judged export has waited (0: caught up)."""


def connection() -> Connection:
    """The dashboard's settings and this session's services (`signin.scope()`)."""
    return replace(Connection.from_env(), services=signin.scope())


P = ParamSpec("P")
R = TypeVar("R")
_READERS: list[Any] = []
"""Every cached reader, for `clear_cache`."""


def reader(ttl: float) -> Callable[[Callable[Concatenate[Connection, P], R]], Callable[P, R]]:
    """A read of the query API, cached for `ttl` seconds per (connection, arguments).

    The decorated function takes the `Connection` first, so the cache keeps one answer
    per collector, credential and set of services: `st.cache_data` is shared by every
    session, and keyed on anything less, one person's answers would be shown to another.
    What it becomes takes only the rest, with the connection of this session
    (`connection()`).
    """

    def wrap(fn: Callable[Concatenate[Connection, P], R]) -> Callable[P, R]:
        cached = st.cache_data(ttl=ttl, show_spinner=False)(fn)
        _READERS.append(cached)

        def read(*args: P.args, **kwargs: P.kwargs) -> R:
            return cached(connection(), *args, **kwargs)

        read.__name__, read.__qualname__, read.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
        return read

    return wrap


@reader(LIVE_TTL_SECONDS)
def health(conn: Connection) -> Health:
    """`/healthz` (no auth): the connection in the sidebar, and whether verdicts trail."""
    body = _json(conn, "/healthz")
    stored = body.get("spans_stored")
    lag = body.get("judge_lag_seconds")
    return Health(
        body.get("status") == "ok",
        stored if isinstance(stored, int) else None,
        float(lag) if isinstance(lag, int | float) and not isinstance(lag, bool) else None,
    )


@reader(REVIEW_TTL_SECONDS)
def services(conn: Connection) -> list[str]:
    path = f"{API_PREFIX}/services"
    body = _json(conn, path)
    names = body.get("services", [])
    if not isinstance(names, list):
        raise BadResponse(f"The collector's answer to {path} has no list 'services'.")
    return sorted(str(n) for n in names if n)


@reader(LIVE_TTL_SECONDS)
def live(conn: Connection, service: str | None, window_seconds: int) -> Live:
    path = f"{API_PREFIX}/live"
    body = _json(conn, path, {"service": service, "window": window_seconds})
    counts = body.get("verdict_counts") or {}
    now = pd.to_datetime(body.get("now"), utc=True, format="ISO8601", errors="coerce")
    raw_board = body.get("board")
    board = raw_board if isinstance(raw_board, dict) else {}
    return Live(
        now=None if pd.isna(now) else now,
        in_flight=frame(_list(body, "runs_in_flight", path), IN_FLIGHT_COLUMNS),
        verdict_counts=_counts(counts),
        timeline=frame(_list(body, "timeline", path), TIMELINE_COLUMNS),
        unhealthy=frame(_list(body, "unhealthy", path), UNHEALTHY_COLUMNS),
        board={str(k): _counts(v) for k, v in board.items() if isinstance(v, dict)},
        in_flight_total=_int(body.get("runs_in_flight_total")),
        wait_counts=_counts(body.get("wait_counts")),
        acknowledged={
            k.removesuffix(ACKNOWLEDGED): _int(v)
            for k, v in board.items()
            if k.endswith(ACKNOWLEDGED)
        },
    )


ACKNOWLEDGED = "_acknowledged"
"""Suffix of the board's counts of acknowledged items (`stuck_acknowledged`, …)."""


def _counts(raw: object) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): int(v) for k, v in raw.items() if isinstance(v, int | float)}


@reader(LIST_TTL_SECONDS)
def runs(
    conn: Connection, service: str | None, window_seconds: int | None,
    verdict: str | None = None, limit: int = 100,
) -> pd.DataFrame:  # fmt: skip
    path = f"{API_PREFIX}/runs"
    params = {
        "service": service,
        "since": _since(window_seconds),
        "verdict": verdict,
        "limit": limit,
    }
    return frame(_list(_json(conn, path, params), "runs", path), RUN_COLUMNS)


RUN_HANDOFFS_PAGE = 200
"""Handoffs fetched (and listed) per page of Run detail: a run may hold 10,000."""
RUN_SPANS_PAGE = 500
"""Evidence spans fetched for the timeline (the oldest; the API says how many there are)."""
_RUN_LISTS = (
    "path", "loop_cycle", "handoffs", "outcomes", "waits", "spans", "notifications",
    "path_summary",
)  # fmt: skip


@reader(LIVE_TTL_SECONDS)
def run_list(
    conn: Connection, service: str | None, window_seconds: int | None, *,
    q: str | None = None, agent: str | None = None, state: str | None = None,
    verdict: str | None = None, sort: str = "newest", limit: int = 100, offset: int = 0,
) -> Listed:  # fmt: skip
    """The Runs page's search (docs/api.md, `/runs`): at most `limit` rows from `offset`
    on, and the total."""
    path = f"{API_PREFIX}/runs"
    params = {
        "service": service,
        # A run in flight or stuck is listed whatever its age; a looping run when it looped
        # (the API applies the window to that, not to when the run started).
        "since": "0" if state in ("in_flight", "stuck") else _since(window_seconds),
        "q": q,
        "agent": agent,
        "state": state,
        "verdict": verdict,
        "sort": sort,
        "ids": "true",
        "limit": limit,
        "offset": offset,
    }
    body = _json(conn, path, params)
    rows = frame(_list(body, "runs", path), RUN_LIST_COLUMNS)
    return Listed(rows, _int(body.get("total")))


@reader(LIVE_TTL_SECONDS)
def run(
    conn: Connection, run_id: str, handoffs_offset: int = 0,
    handoffs_limit: int = RUN_HANDOFFS_PAGE, spans_limit: int = RUN_SPANS_PAGE,
) -> RunDetail:  # fmt: skip
    """One run, with one page of its handoffs (from `handoffs_offset`) and its oldest spans."""
    path = f"{API_PREFIX}/runs/{quote(run_id, safe='')}"
    params = {
        "handoffs_offset": handoffs_offset,
        "handoffs_limit": handoffs_limit,
        "spans_limit": spans_limit,
    }
    body = _json(conn, path, params)
    summary = {k: v for k, v in body.items() if k not in _RUN_LISTS}
    for key in ("started_at", "ended_at", "last_seen_at"):
        ts = pd.to_datetime(summary.get(key), utc=True, format="ISO8601", errors="coerce")
        summary[key] = None if pd.isna(ts) else ts
    path_summary = body.get("path_summary")
    return RunDetail(
        summary=summary,
        path=[str(a) for a in body.get("path") or []],
        loop_cycle=[str(a) for a in body.get("loop_cycle") or []],
        handoffs=frame(_list(body, "handoffs", path), RUN_HANDOFF_COLUMNS),
        outcomes=frame(_list(body, "outcomes", path), OUTCOME_COLUMNS),
        waits=frame(_list(body, "waits", path), APPROVAL_COLUMNS),
        spans=frame(_list(body, "spans", path), SPAN_COLUMNS),
        notifications=_list(body, "notifications", path),
        path_summary=path_summary if isinstance(path_summary, dict) else {},
        handoffs_total=_int(body.get("handoffs_total")),
        handoffs_offset=_int(body.get("handoffs_offset")),
        spans_total=_int(body.get("spans_total")),
    )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


@reader(LIST_TTL_SECONDS)
def edges(conn: Connection, service: str | None, window_seconds: int | None) -> pd.DataFrame:
    path = f"{API_PREFIX}/edges"
    params = {"service": service, "since": _since(window_seconds)}
    df = frame(_list(_json(conn, path, params), "edges", path), EDGE_COLUMNS)
    for col in ("count", "unhealthy", "undeclared"):
        df[col] = pd.to_numeric(df[col], errors="coerce").fillna(0).astype(int)
    df["unhealthy_share"] = pd.to_numeric(df["unhealthy_share"], errors="coerce").fillna(0.0)
    return df


@reader(LIST_TTL_SECONDS)
def loops(
    conn: Connection, service: str | None, window_seconds: int | None, limit: int = 100
) -> pd.DataFrame:
    path = f"{API_PREFIX}/loops"
    params = {"service": service, "since": _since(window_seconds), "limit": limit}
    return frame(_list(_json(conn, path, params), "loops", path), LOOP_COLUMNS)


@reader(LIVE_TTL_SECONDS)
def approvals(conn: Connection, service: str | None, limit: int = 10_000) -> Listed:
    """Open waits in the collector's order (overdue, then uncertain, then by deadline), at
    most `limit` (fetched a page at a time), with the total and the count per verdict of
    every open wait."""
    path = f"{API_PREFIX}/approvals"
    # Page through the collector's order (`offset`) up to `limit` waits: the page groups
    # them by owner, so it needs every one, not the first API page.
    rows: list[dict[str, Any]] = []
    body: dict[str, Any] = {}
    while len(rows) < limit:
        ask = min(APPROVALS_PAGE, limit - len(rows))
        params = {"service": service, "limit": ask, "offset": len(rows)}
        body = _json(conn, path, params)
        page = _list(body, "approvals", path)
        rows += page
        if len(page) < ask or len(rows) >= _int(body.get("total")):
            break
    df = frame(rows, APPROVAL_COLUMNS)
    df["seconds_left"] = pd.to_numeric(df["seconds_left"], errors="coerce")
    return Listed(df, _int(body.get("total")), _counts(body.get("counts")))


APPROVALS_PAGE = 1000
"""The query API's largest page (`limit`)."""


@reader(LIST_TTL_SECONDS)
def _drops(conn: Connection) -> pd.DataFrame:
    path = f"{API_PREFIX}/drops"
    return frame(_list(_json(conn, path), "drops", path), DROP_COLUMNS)


def drops(service: str | None) -> pd.DataFrame:
    """Attribute names the collector's allowlist removed, per service (names, never values)."""
    df = _drops()
    return df if service is None else df[df["service"] == service]


@reader(LIST_TTL_SECONDS)
def _sources(conn: Connection) -> tuple[pd.DataFrame, pd.DataFrame]:
    path = f"{API_PREFIX}/sources"
    body = _json(conn, path)
    return (
        frame(_list(body, "sources", path), SOURCE_COLUMNS),
        frame(_list(body, "translators", path), TRANSLATOR_COLUMNS),
    )


def sources(service: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every instrumentation scope that sent spans, per service, and what became of them;
    and the instrumentations the collector translates (docs/api.md, /sources)."""
    df, translators = _sources()
    return (df if service is None else df[df["service"] == service]), translators


@reader(LIST_TTL_SECONDS)
def false_completions(
    conn: Connection, service: str | None, window_seconds: int | None, limit: int = 100
) -> Listed:
    path = f"{API_PREFIX}/false_completions"
    params = {"service": service, "since": _since(window_seconds), "limit": limit}
    body = _json(conn, path, params)
    return Listed(
        frame(_list(body, "runs", path), FALSE_COMPLETION_COLUMNS), _int(body.get("total"))
    )


@reader(REVIEW_TTL_SECONDS)
def weekly(conn: Connection, service: str | None, weeks: int) -> Weekly:
    path = f"{API_PREFIX}/review/weekly"
    body = _json(conn, path, {"service": service, "weeks": weeks, "format": "json"})
    return Weekly(
        this_week=body.get("this_week"),
        last_week=body.get("last_week"),
        weeks=frame(_list(body, "weeks", path), WEEK_COLUMNS),
        by_reason=frame(_list(body, "by_reason", path), BY_REASON_COLUMNS),
        by_edge=frame(_list(body, "by_edge", path), BY_EDGE_COLUMNS),
        by_agent=frame(_list(body, "by_agent", path), BY_AGENT_COLUMNS),
        # An older collector has no edge × reason rows: an empty frame, not an error.
        by_edge_reason=frame(body.get("by_edge_reason") or [], BY_EDGE_REASON_COLUMNS),
        # Likewise spend (a collector before usage): no rows, and the page says so.
        spend=frame(body.get("spend") or [], SPEND_COLUMNS),
        continuity=frame(body.get("continuity") or [], CONTINUITY_COLUMNS),
    )


@reader(LIST_TTL_SECONDS)
def conversation(conn: Connection, conversation_id: str) -> Conversation:
    """A conversation's runs in order (`ConversationNotFound`: the collector holds none)."""
    path = f"{API_PREFIX}/conversations/{quote(conversation_id, safe='')}"
    body = _json(conn, path)
    return Conversation(
        conversation_id=str(body.get("conversation_id") or conversation_id),
        runs=frame(_list(body, "runs", path), CONVERSATION_RUN_COLUMNS),
        runs_total=_int(body.get("runs_total")),
        counts=_counts(body.get("counts")),
    )


@reader(REVIEW_TTL_SECONDS)
def weekly_csv(conn: Connection, service: str | None, weeks: int) -> bytes:
    """The collector's own CSV export, byte for byte (one row per week, dimension, key)."""
    path = f"{API_PREFIX}/review/weekly"
    return _get(conn, path, {"service": service, "weeks": weeks, "format": "csv"}).content


# --- acknowledgements (docs/api.md, Acknowledgements) ------------------------------------
# The dashboard's only writes. Each one forgets every cached answer, so the page that
# reruns after it shows the acknowledgement on its banner, tables, tiles and sidebar at
# once instead of after a TTL (which would read as "it did not work" and invite a second
# click).

ACK_PATH = f"{API_PREFIX}/acknowledgements"

ACK_WRITABLE = "writable"
ACK_READ_ONLY = "read_only"
"""The API answered 405: a `handoffscope api` process serving the store read-only."""
ACK_UNSUPPORTED = "unsupported"
"""The API has no acknowledgements at all (404): a collector older than the dashboard."""
ACK_PROBE_TTL_SECONDS = 60


class ReadOnlyApi(CollectorError):
    """The API refused a write with 405: acknowledge through a collector instead."""


class NothingToClear(CollectorError):
    """DELETE answered 404: no acknowledgement of that target is active (expired, or
    cleared from another page or by `handoffscope ack clear`)."""


@reader(LIVE_TTL_SECONDS)
def acknowledgements(conn: Connection, active: bool = True) -> list[dict[str, Any]]:
    """Active acknowledgements (`active=False`: the last 200, expired and cleared too), as
    the API's `Acknowledgement` objects."""
    body = _json(conn, ACK_PATH, {"active": "true" if active else "false"})
    return _list(body, "acknowledgements", ACK_PATH)


@reader(ACK_PROBE_TTL_SECONDS)
def ack_support(conn: Connection) -> str:
    """Whether this dashboard's API takes acknowledgements: `ACK_WRITABLE`,
    `ACK_READ_ONLY` or `ACK_UNSUPPORTED`."""
    # An empty body: a collector refuses it (400/422) without writing anything, a
    # read-only API answers 405 before reading it. Asking the API beats guessing from
    # its version or from /openapi.json, which documents the route on both.
    resp = _send(conn, "POST", ACK_PATH, body={})
    if resp.status_code == 405:
        return ACK_READ_ONLY
    if resp.status_code == 404:
        return ACK_UNSUPPORTED
    return ACK_WRITABLE


def _write_error(resp: httpx.Response, what: str) -> CollectorError:
    detail = _error_text(resp)
    if resp.status_code == 405:
        return ReadOnlyApi(detail, "Acknowledge through a collector's API or `handoffscope ack`.")
    return BadResponse(f"The collector refused to {what}: {detail}")


def acknowledge(
    event: str,
    run_id: str,
    handoff_id: str | None,
    *,
    by: str,
    for_seconds: int,
    note: str,
) -> dict[str, Any]:
    """`POST /acknowledgements`; returns the `Acknowledgement` the collector stored (it
    replaces an active one of the same target)."""
    c = connection()
    body = {
        "event": event,
        "run_id": run_id,
        "handoff_id": handoff_id,
        "by": by,
        "until": None,
        "for_seconds": for_seconds,
        "note": note,
    }
    resp = _send(c, "POST", ACK_PATH, body=body)
    clear_cache()
    if resp.status_code not in (200, 201):
        raise _write_error(resp, "acknowledge")
    try:
        stored = resp.json()
    except ValueError as exc:
        raise BadResponse(f"The collector's answer to POST {ACK_PATH} is not JSON.") from exc
    return stored if isinstance(stored, dict) else {}


def clear_acknowledgement(event: str, run_id: str, handoff_id: str | None) -> None:
    """`DELETE /acknowledgements`: the target alerts again at once."""
    c = connection()
    params = {"event": event, "run_id": run_id, "handoff_id": handoff_id}
    resp = _send(c, "DELETE", ACK_PATH, params)
    clear_cache()
    if resp.status_code == 404:
        raise NothingToClear(
            "Nothing to clear: this acknowledgement has expired or was cleared already."
        )
    if resp.status_code >= 400:
        raise _write_error(resp, "clear the acknowledgement")


def clear_cache() -> None:
    """Forget cached answers (the sidebar's "Refresh now", and after every write)."""
    for cached in _READERS:
        cached.clear()
