"""The query API's read operations, as a table: `READS`, in the order the OpenAPI document
and `/docs` list them. Each row names its path, the answer model, the words of its
documentation, the `QueryAPI` method that answers it and the model of its query
parameters; `QueryAPI.router()` registers them in one loop (GET and an undocumented HEAD
each). The one write, acknowledging, is registered beside them (`QueryAPI._ack_writes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from . import models as m


@dataclass(frozen=True)
class Read:
    path: str
    answer: type[BaseModel]
    summary: str
    """Also the operation id, lower-cased with underscores."""
    description: str
    reader: str
    """The `QueryAPI` method that answers it."""
    params: type[BaseModel] | None = None
    """The model of its query parameters (None: it takes none)."""
    path_param: str | None = None
    """The name of its one path parameter (a run id), described by `path_doc`."""
    path_doc: str = ""
    responses: dict[int, Any] | None = None
    """Its documented answers besides 200; None: a 400 for a bad parameter."""
    exclude_unset: bool = False
    """Leave out of the answer the fields the reader did not set (optional extras)."""


READS: tuple[Read, ...] = (
    Read(
        "/services",
        m.Services,
        "Services",
        "Every service.name that sent a run.",
        "services",
        responses={},
    ),
    Read(
        "/runs",
        m.RunsPage,
        "Runs",
        "Runs first seen in the window that match the search, in the asked order; "
        "`total` counts every match.",
        "runs",
        m.RunsParams,
        exclude_unset=True,
    ),
    Read(
        "/runs/{run_id:path}",
        m.RunDetail,
        "Run detail",
        "One run: facts, path (and its summary), loop, waits, outcomes, one page of its "
        "handoffs with their six boundaries and one page of its spans, with totals.",
        "run",
        m.RunPageParams,
        path_param="run_id",
        path_doc="handoff.run_id",
        responses={404: {"model": m.Error, "description": "No run with this id."}},
    ),
    Read(
        "/conversations/{conversation_id:path}",
        m.Conversation,
        "Conversation",
        "The runs of one conversation (gen_ai.conversation.id: the Agents SDK's group_id, "
        "LangGraph's thread_id, a session id) in order: where each started and ended, and "
        "how it follows the run before it (continuity: first, continued, rerouted, diverted).",
        "conversation",
        path_param="conversation_id",
        path_doc="gen_ai.conversation.id",
        responses={404: {"model": m.Error, "description": "No run of this conversation."}},
    ),
    Read(
        "/handoffs",
        m.Handoffs,
        "Handoffs",
        "Handoffs first seen in the window, newest first.",
        "handoffs",
        m.HandoffsParams,
    ),
    Read(
        "/edges",
        m.Edges,
        "Edges",
        "Agent-to-agent edges of handoffs in the window, busiest first.",
        "edges",
        m.WindowParams,
    ),
    Read(
        "/loops",
        m.Loops,
        "Loops",
        "Runs first seen in the window with a loop, most recently active first.",
        "loops",
        m.ListParams,
    ),
    Read(
        "/approvals",
        m.Approvals,
        "Approvals",
        "Open and expired waits: overdue first, then uncertain, then by deadline.",
        "approvals",
        m.ApprovalsParams,
    ),
    Read(
        "/false_completions",
        m.FalseCompletions,
        "False completions",
        "Runs first seen in the window that claimed done without a passing verifier.",
        "false_completions",
        m.ListParams,
    ),
    Read(
        "/live",
        m.Live,
        "Live board",
        "Runs in flight, verdict counts and per-minute timeline, newest unhealthy handoffs.",
        "live",
        m.LiveParams,
    ),
    Read(
        "/review/weekly",
        m.Weekly,
        "Weekly review",
        "Rejection rate (route_rejected + contract_rejected) per ISO week, by reason, "
        "edge and receiving agent.",
        "weekly",
        m.WeeklyParams,
        # format=csv answers the same figures as text/csv (weekly.weekly_csv).
        responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}}},
    ),
    Read(
        "/drops",
        m.Drops,
        "Dropped attributes",
        "Attribute NAMES the allowlist removed, per service (values are never kept).",
        "drops",
        responses={},
    ),
    Read(
        "/sources",
        m.Sources,
        "Sources",
        "Every instrumentation scope that sent spans, per service: spans received, "
        "how many became handoff evidence, how many were refused and why, and what to "
        "do about it; and the instrumentations this collector translates.",
        "sources",
        responses={},
    ),
    Read(
        "/acknowledgements",
        m.Acknowledgements,
        "Acknowledgements",
        "Operators' acknowledgements of stuck runs, loops and overdue waits: the active "
        "ones, or (active=false) the last 200 made, newest first.",
        "acknowledgements",
        m.AcknowledgementsParams,
    ),
)
