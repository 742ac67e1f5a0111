"""The OpenAPI 3.1 document of the query API, served at /openapi.json.

Written by hand from docs/api.md rather than generated, so it says exactly what the
endpoints promise: every parameter with the constraints `params.py` enforces (a
value valid here is accepted there, and the other way round), every response shape
with its nullable fields. schemathesis runs against it.
"""

from __future__ import annotations

from typing import Any

from handoffscope.instrumentation import semconv as sc

from .params import (
    DEFAULT_LIMIT,
    EPOCH_PATTERN,
    MAX_LIMIT,
    MAX_SERVICE_LEN,
    MAX_TEXT_LEN,
    MAX_WEEKS,
    MAX_WINDOW_SECONDS,
    RUN_HANDOFFS_DEFAULT,
    RUN_OFFSET_MAX,
    RUN_PAGE_MAX,
    RUN_SPANS_DEFAULT,
    SERVICE_PATTERN,
)


def _n(t: str | list[str]) -> dict[str, Any]:
    """A nullable type."""
    return {"type": [t, "null"] if isinstance(t, str) else [*t, "null"]}


STR, INT, BOOL, NUM = (
    {"type": "string"},
    {"type": "integer"},
    {"type": "boolean"},
    {"type": "number"},
)
NSTR, NINT, NBOOL, NNUM = _n("string"), _n("integer"), _n("boolean"), _n("number")
STRS = {"type": "array", "items": STR}
TIME = {
    "type": ["string", "null"],
    "description": "ISO-8601 UTC, milliseconds (2026-11-30T12:00:00.123Z)",
}
VERDICT = {"type": "string", "enum": list(sc.PRECEDENCE)}
BOUNDARY_STATE = {"type": "string", "enum": list(sc.BOUNDARY_STATES)}
FAILED_BOUNDARY = {
    "type": ["string", "null"],
    "enum": [*sc.BOUNDARIES, sc.BOUNDARY_PROGRESS, sc.BOUNDARY_WAIT, sc.BOUNDARY_RUN, None],
}
KIND = {
    "type": "string",
    "enum": list(sc.KINDS),
    "description": "handoff (control moves) or delegation (an agent called as a tool)",
}


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or list(props)}


HANDOFF_PROPS: dict[str, Any] = {
    "handoff_id": STR,
    "kind": KIND,
    "from_agent": NSTR,
    "to_agent": NSTR,
    "turn": NINT,
    "seq": INT,
    "requested_at": TIME,
    "verdict": VERDICT,
    "verdict_label": STR,
    "failed_boundary": FAILED_BOUNDARY,
    "why": STR,
    "next_step": STR,
    "fingerprint": NSTR,
    "state_version": NINT,
    "history_items_forwarded": NINT,
    "history_items_total": NINT,
    "route_declared": NBOOL,
    "route_goto": NSTR,
    "control_before": NSTR,
    "control_after": NSTR,
    "tool_call_id": NSTR,
    "tool_call_closed": NBOOL,
    "required_keys": STRS,
    "missing_keys": STRS,
    "destination_started": NBOOL,
    "rejection_reason": NSTR,
    "rejection_fields": STRS,
    "reason": NSTR,
    "loop": BOOL,
    "claims_done": BOOL,
    "outcome_result": NSTR,
    "wait": BOOL,
    "wait_decision": NSTR,
    "unobserved": STRS,
}

NOTIFICATION = _obj(
    {
        "event": {"type": "string", "enum": list(sc.NOTIFY_EVENTS)},
        "handoff_id": NSTR,
        "destination": STR,
        "status": {"type": "string", "enum": ["pending", "sent", "failed"]},
        "attempts": INT,
        "created_at": TIME,
        "sent_at": TIME,
    }
)
NOTIFICATIONS = {"type": "array", "items": {"$ref": "#/components/schemas/Notification"}}

APPROVAL = _obj(
    {
        "run_id": STR,
        "handoff_id": NSTR,
        "service": NSTR,
        "from_agent": NSTR,
        "to_agent": NSTR,
        "owner": NSTR,
        "reason": NSTR,
        "deadline": TIME,
        "seconds_left": NNUM,
        "verdict": {
            "type": "string",
            "enum": [sc.APPROVAL_OVERDUE, sc.WAIT_UNCERTAIN, sc.WAITING_ON_APPROVAL],
        },
        "verdict_label": STR,
        "missing": STRS,
        "resume_token_id": NSTR,
        "state_persisted": NBOOL,
        "decision": NSTR,
        "checkpointed_at": TIME,
        "notifications": NOTIFICATIONS,
    }
)

RUN_SUMMARY_PROPS: dict[str, Any] = {
    "run_id": STR,
    "service": NSTR,
    "verdict": VERDICT,
    "verdict_label": STR,
    "status": NSTR,
    "started_at": TIME,
    "last_seen_at": TIME,
    "current_agent": NSTR,
    "handoff_count": INT,
    "loop": BOOL,
    "false_complete": BOOL,
    "failed": BOOL,
    "unverified": BOOL,
    "pending_approvals": INT,
    "turns": NINT,
    "delegation_count": INT,
}

SCHEMAS: dict[str, Any] = {
    "Error": _obj({"error": STR}),
    "RunSummary": _obj(
        {
            **RUN_SUMMARY_PROPS,
            "final_agent": NSTR,
            "source": NSTR,
            "source_label": NSTR,
            "in_flight": BOOL,
            "stuck": BOOL,
            "seconds_since_last_activity": NNUM,
            "trace_ids": STRS,
            "conversation_ids": STRS,
        },
        required=[
            *RUN_SUMMARY_PROPS,
            "final_agent",
            "source",
            "source_label",
            "in_flight",
            "stuck",
            "seconds_since_last_activity",
        ],
    ),
    "HandoffDetail": _obj(
        {
            **HANDOFF_PROPS,
            "boundaries": _obj({b: BOUNDARY_STATE for b in sc.BOUNDARIES}),
        }
    ),
    "Handoff": _obj(HANDOFF_PROPS),
    "HandoffListItem": _obj({"run_id": STR, "service": NSTR, **HANDOFF_PROPS}),
    "Approval": APPROVAL,
    "Notification": NOTIFICATION,
    "Span": _obj(
        {
            "name": STR,
            "handoff_id": NSTR,
            "trace_id": STR,
            "span_id": STR,
            "start": TIME,
            "end": TIME,
            "attributes": {
                "type": "object",
                "description": "Contract attributes only (semconv names), as stored.",
            },
        }
    ),
    "RunDetail": _obj(
        {
            **RUN_SUMMARY_PROPS,
            "why": STR,
            "next_step": STR,
            "verification_expected": BOOL,
            "unobserved": STRS,
            "not_observed": NSTR,
            "source": NSTR,
            "source_label": NSTR,
            "final_agent": NSTR,
            "ended_at": TIME,
            "path": STRS,
            "path_total": INT,
            "path_summary": _obj(
                {
                    "segments": {
                        "type": "array",
                        "items": _obj({"agents": STRS, "repeat": INT}),
                    },
                    "segments_omitted": INT,
                    "text": STR,
                }
            ),
            "handoffs_capped": BOOL,
            "handoff_cap": NINT,
            "loop_cycle": STRS,
            "loop_repeats": INT,
            "trace_ids": STRS,
            "conversation_ids": STRS,
            "outcome_result": NSTR,
            "verifier": NSTR,
            "outcomes": {
                "type": "array",
                "items": _obj(
                    {
                        "handoff_id": NSTR,
                        "verifier": NSTR,
                        "result": STR,
                        "receipt_id": NSTR,
                        "at": TIME,
                    }
                ),
            },
            "waits": {"type": "array", "items": {"$ref": "#/components/schemas/Approval"}},
            "notifications": NOTIFICATIONS,
            "first_failure": {
                "anyOf": [{"$ref": "#/components/schemas/Handoff"}, {"type": "null"}],
                "description": "The handoff whose failure decides the run's verdict, on "
                "whichever page it is; null when no handoff failed.",
            },
            "handoffs": {"type": "array", "items": {"$ref": "#/components/schemas/HandoffDetail"}},
            "handoffs_total": INT,
            "handoffs_offset": INT,
            "handoffs_limit": INT,
            "spans": {"type": "array", "items": {"$ref": "#/components/schemas/Span"}},
            "spans_total": INT,
            "spans_offset": INT,
            "spans_limit": INT,
        }
    ),
    "Edge": _obj(
        {
            "kind": KIND,
            "from_agent": NSTR,
            "to_agent": NSTR,
            "count": INT,
            "unhealthy": INT,
            "unhealthy_share": NUM,
            "undeclared": INT,
            "verdicts": {"type": "object", "additionalProperties": INT},
            "runs": STRS,
        }
    ),
    "Loop": _obj(
        {
            "run_id": STR,
            "service": NSTR,
            "cycle": STRS,
            "repeats": INT,
            "turns": NINT,
            "status": NSTR,
            "last_seen_at": TIME,
        }
    ),
    "FalseCompletion": _obj(
        {
            "run_id": STR,
            "service": NSTR,
            "final_agent": NSTR,
            "ended_at": TIME,
            "last_seen_at": TIME,
            "outcome_result": {"type": ["string", "null"], "enum": [sc.OUTCOME_FAIL, None]},
            "verifier": NSTR,
        }
    ),
    "Live": _obj(
        {
            "now": STR,
            "window": INT,
            "board": _obj(
                {
                    "stuck": _obj({"count": INT, "new_in_window": INT}),
                    "looping": _obj({"count": INT, "new_in_window": INT}),
                    "approvals_overdue": _obj({"count": INT, "new_in_window": INT}),
                    "false_complete": _obj({"count": INT, "previous_window": INT}),
                }
            ),
            "runs_in_flight_total": INT,
            "wait_counts": {"type": "object", "additionalProperties": INT},
            "runs_in_flight": {
                "type": "array",
                "items": _obj(
                    {
                        "run_id": STR,
                        "service": NSTR,
                        "current_agent": NSTR,
                        "last_handoff_at": TIME,
                        "seconds_since_last_handoff": NNUM,
                        "verdict": VERDICT,
                        "verdict_label": STR,
                        "stuck": BOOL,
                        "loop": BOOL,
                        "pending_approvals": INT,
                    }
                ),
            },
            "verdict_counts": {"type": "object", "additionalProperties": INT},
            "timeline": {
                "type": "array",
                "items": _obj({"minute": STR, "verdict": VERDICT, "count": INT}),
            },
            "unhealthy": {
                "type": "array",
                "items": {"$ref": "#/components/schemas/HandoffListItem"},
            },
        }
    ),
    "Weekly": _obj(
        {
            "this_week": STR,
            "last_week": NSTR,
            "weeks": {
                "type": "array",
                "items": _obj(
                    {
                        "week": STR,
                        "handoffs": INT,
                        "rejections": INT,
                        "rate": NNUM,
                        "partial": BOOL,
                        "days": NUM,
                    }
                ),
            },
            "by_reason": {
                "type": "array",
                "items": _obj({"week": STR, "reason": STR, "count": INT, "rate": NNUM}),
            },
            "by_edge": {
                "type": "array",
                "items": _obj(
                    {
                        "week": STR,
                        "from_agent": NSTR,
                        "to_agent": NSTR,
                        "handoffs": INT,
                        "rejections": INT,
                        "rate": NNUM,
                    }
                ),
            },
            "by_agent": {
                "type": "array",
                "items": _obj(
                    {"week": STR, "agent": NSTR, "handoffs": INT, "rejections": INT, "rate": NNUM}
                ),
            },
            "by_edge_reason": {
                "type": "array",
                "items": _obj(
                    {
                        "week": STR,
                        "from_agent": NSTR,
                        "to_agent": NSTR,
                        "reason": STR,
                        "count": INT,
                        "rate": NNUM,
                    }
                ),
            },
        }
    ),
}

TIME_PARAM_SCHEMA = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "string", "format": "date"},
        {"type": "string", "pattern": EPOCH_PATTERN},
    ]
}

PARAMETERS: dict[str, Any] = {
    "service": {
        "name": "service",
        "in": "query",
        "description": "Only runs of this service.name (empty: all).",
        "schema": {"type": "string", "maxLength": MAX_SERVICE_LEN, "pattern": SERVICE_PATTERN},
    },
    "since": {
        "name": "since",
        "in": "query",
        "description": "First-seen time from (inclusive): ISO-8601 date-time or date, or epoch seconds. Default: 24 h ago.",
        "schema": TIME_PARAM_SCHEMA,
    },
    "until": {
        "name": "until",
        "in": "query",
        "description": "First-seen time until (exclusive); same forms as `since`. Default: no bound.",
        "schema": TIME_PARAM_SCHEMA,
    },
    "limit": {
        "name": "limit",
        "in": "query",
        "description": f"Max rows (default {DEFAULT_LIMIT}).",
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    },
    "verdict": {
        "name": "verdict",
        "in": "query",
        "description": "Only this verdict (judged at the time of the query).",
        "schema": VERDICT,
    },
}


def _page_params(what: str, default: int) -> list[dict[str, Any]]:
    """`<what>_limit` and `<what>_offset`: one page of a run's handoffs or spans."""
    return [
        {
            "name": f"{what}_limit",
            "in": "query",
            "description": f"{what.capitalize()} in this page (default {default}); "
            f"`{what}_total` says how many the run has.",
            "schema": {
                "type": "integer",
                "minimum": 1,
                "maximum": RUN_PAGE_MAX,
                "default": default,
            },
        },
        {
            "name": f"{what}_offset",
            "in": "query",
            "description": f"{what.capitalize()} skipped before this page (run order; default 0).",
            "schema": {"type": "integer", "minimum": 0, "maximum": RUN_OFFSET_MAX, "default": 0},
        },
    ]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/parameters/{name}"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _list_of(key: str, item: str, **extra: Any) -> dict[str, Any]:
    """`{key: [item]}`, plus `extra` properties (a list's `total`, its `counts`)."""
    return _json(
        _obj({**extra, key: {"type": "array", "items": {"$ref": f"#/components/schemas/{item}"}}})
    )


COUNTS = {"type": "object", "additionalProperties": INT}


ERROR = {"$ref": "#/components/schemas/Error"}


def _op(
    summary: str,
    description: str,
    params: list,
    ok: dict[str, Any],
    *,
    not_found: bool = False,
    auth: bool,
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": ok}
    if params:
        responses["400"] = _json(ERROR, "A parameter has a value the API does not accept.")
    if auth:
        responses["401"] = _json(ERROR, "Missing or wrong bearer token.")
    if not_found:
        responses["404"] = _json(ERROR, "No run with this id.")
    return {
        "get": {
            "summary": summary,
            "description": description,
            "parameters": params,
            "responses": responses,
        }
    }


def build(*, auth: bool) -> dict[str, Any]:
    """The document; with `auth`, every operation declares the bearer token."""
    window = [_ref("service"), _ref("since"), _ref("until")]
    paths = {
        "/api/v1/services": _op(
            "Services",
            "Every service.name that sent a run.",
            [],
            _json(_obj({"services": STRS})),
            auth=auth,
        ),
        "/api/v1/runs": _op(
            "Runs",
            "Runs first seen in the window that match the search, in the asked order; "
            "`total` counts every match.",
            [
                *window,
                _ref("verdict"),
                {
                    "name": "q",
                    "in": "query",
                    "description": "A run id or its beginning, or a trace id or conversation "
                    "(thread) id one of the run's evidence spans carried.",
                    "schema": {
                        "type": "string",
                        "maxLength": MAX_TEXT_LEN,
                        "pattern": SERVICE_PATTERN,
                    },
                },
                {
                    "name": "agent",
                    "in": "query",
                    "description": "An agent on the run's path, holding its work or ending it.",
                    "schema": {
                        "type": "string",
                        "maxLength": MAX_TEXT_LEN,
                        "pattern": SERVICE_PATTERN,
                    },
                },
                {
                    "name": "state",
                    "in": "query",
                    "description": "in_flight, stuck (in flight, silent past the grace, no open "
                    "wait) or looping (in flight, handoffs loop); empty: any.",
                    "schema": {"type": "string", "enum": ["", "in_flight", "stuck", "looping"]},
                },
                {
                    "name": "sort",
                    "in": "query",
                    "description": "newest (default), severity, silent or last_seen.",
                    "schema": {
                        "type": "string",
                        "enum": ["newest", "severity", "silent", "last_seen"],
                        "default": "newest",
                    },
                },
                {
                    "name": "ids",
                    "in": "query",
                    "description": "true: add each run's trace_ids and conversation_ids.",
                    "schema": {"type": "boolean"},
                },
                _ref("limit"),
            ],
            _list_of("runs", "RunSummary", total=INT),
            auth=auth,
        ),
        "/api/v1/runs/{run_id}": _op(
            "Run detail",
            "One run: facts, path (and its summary), loop, waits, outcomes, one page of its handoffs with their six boundaries and one page of its spans, with totals.",
            [
                {
                    "name": "run_id",
                    "in": "path",
                    "required": True,
                    "description": "handoff.run_id",
                    "schema": {"type": "string", "minLength": 1},
                },
                *_page_params("handoffs", RUN_HANDOFFS_DEFAULT),
                *_page_params("spans", RUN_SPANS_DEFAULT),
            ],
            _json({"$ref": "#/components/schemas/RunDetail"}),
            not_found=True,
            auth=auth,
        ),
        "/api/v1/handoffs": _op(
            "Handoffs",
            "Handoffs first seen in the window, newest first.",
            [
                *window,
                _ref("verdict"),
                {
                    "name": "unhealthy",
                    "in": "query",
                    "description": "Only failure verdicts (1-10 of DESIGN §4).",
                    "schema": {"type": "boolean"},
                },
                _ref("limit"),
            ],
            _list_of("handoffs", "HandoffListItem"),
            auth=auth,
        ),
        "/api/v1/edges": _op(
            "Edges",
            "Agent-to-agent edges of handoffs in the window, busiest first.",
            window,
            _list_of("edges", "Edge"),
            auth=auth,
        ),
        "/api/v1/loops": _op(
            "Loops",
            "Runs first seen in the window with a loop, most recently active first.",
            [*window, _ref("limit")],
            _list_of("loops", "Loop"),
            auth=auth,
        ),
        "/api/v1/approvals": _op(
            "Approvals",
            "Open and expired waits: overdue first, then uncertain, then by deadline.",
            [_ref("service"), _ref("limit")],
            _list_of("approvals", "Approval", total=INT, counts=COUNTS),
            auth=auth,
        ),
        "/api/v1/false_completions": _op(
            "False completions",
            "Runs first seen in the window that claimed done without a passing verifier.",
            [*window, _ref("limit")],
            _list_of("runs", "FalseCompletion", total=INT),
            auth=auth,
        ),
        "/api/v1/live": _op(
            "Live board",
            "Runs in flight, verdict counts and per-minute timeline, newest unhealthy handoffs.",
            [
                _ref("service"),
                {
                    "name": "window",
                    "in": "query",
                    "description": "Seconds back from now (default 3600).",
                    "schema": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_WINDOW_SECONDS,
                        "default": 3600,
                    },
                },
            ],
            _json({"$ref": "#/components/schemas/Live"}),
            auth=auth,
        ),
        "/api/v1/review/weekly": _op(
            "Weekly review",
            "Rejection rate (route_rejected + contract_rejected) per ISO week, by reason, edge and receiving agent.",
            [
                _ref("service"),
                {
                    "name": "weeks",
                    "in": "query",
                    "description": "ISO weeks back, this one included (default 8).",
                    "schema": {"type": "integer", "minimum": 1, "maximum": MAX_WEEKS, "default": 8},
                },
                {
                    "name": "format",
                    "in": "query",
                    "description": "json (default) or csv.",
                    "schema": {"type": "string", "enum": ["json", "csv"], "default": "json"},
                },
            ],
            {
                "description": "OK",
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Weekly"}},
                    "text/csv": {"schema": {"type": "string"}},
                },
            },
            auth=auth,
        ),
        "/api/v1/drops": _op(
            "Dropped attributes",
            "Attribute NAMES the allowlist removed, per service (values are never kept).",
            [],
            _json(
                _obj(
                    {
                        "drops": {
                            "type": "array",
                            "items": _obj({"service": STR, "attribute": STR, "count": INT}),
                        }
                    }
                )
            ),
            auth=auth,
        ),
    }
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "handoffscope query API",
            "version": "1",
            "description": (
                "Live health of agent-to-agent handoffs, without prompt content. Verdicts are "
                "the lower-snake names of DESIGN §4; time-based ones are judged at the time "
                "of the query. Times are ISO-8601 UTC."
            ),
        },
        "paths": paths,
        "components": {"schemas": SCHEMAS, "parameters": PARAMETERS},
    }
    if auth:
        doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearer": []}]
    return doc
