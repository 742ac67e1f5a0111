"""Every shape of the query API, once: the parameters each endpoint takes, what it answers.

The handlers (`api.py`) build these models and serve their JSON; FastAPI derives the
OpenAPI document (`/openapi.json`, `openapi.py`) from the same classes, so a field
added, renamed or made nullable here is served and documented in one change, and
schemathesis (tests/hardening/test_api_schema.py) checks the answers against it.

Conventions, kept from the API as it was before it had models (docs/api.md):

- every field is always present, null where it has no value (`Optional` means
  nullable, never omitted) — except `trace_ids` / `conversation_ids` on a run of the
  `/runs` list, present only with `ids=true`;
- times are ISO-8601 UTC strings with milliseconds (`Time`), made by `timefmt.iso`;
- closed vocabularies (verdicts, boundaries, kinds, events) come from `semconv`, the
  one module of names, and a value outside them is a server error, not an answer;
- answers forbid extra keys: a typo in a handler is a failed request in the tests, not a
  silently undocumented field.

Parameter models ignore unknown parameters (docs/api.md) and check each known one with
the parsers of `params.py`, so a bad value is a 400 with that parser's sentence.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic_core import core_schema

from handoffscope.instrumentation import semconv as sc

from ..credentials import KINDS as CREDENTIAL_KINDS
from .params import (
    DEFAULT_LIMIT,
    MAX_WEEKS,
    MAX_WINDOW_SECONDS,
    RUN_HANDOFFS_DEFAULT,
    RUN_SPANS_DEFAULT,
    BadParam,
    Checked,
    Flag,
    Limit,
    PageLimit,
    PageOffset,
    Service,
    Text,
    Time,
    Verdict,
    choice,
    integer,
)

RUN_STATES = ("in_flight", "stuck", "looping")
RUN_SORTS = ("newest", "severity", "silent", "last_seen")
WEEK_FORMATS = ("json", "csv")
NOTIFICATION_STATUSES = ("pending", "sent", "failed")
"""notify/delivery.py's PENDING, SENT, FAILED (it imports the query API, so not the other
way round; tests/collector/test_api_models.py keeps them equal)."""
APPROVAL_VERDICTS = (sc.APPROVAL_OVERDUE, sc.WAIT_UNCERTAIN, sc.WAITING_ON_APPROVAL)
ACK_EVENTS = (sc.NOTIFY_RUN_STUCK, sc.NOTIFY_RUN_LOOPING, sc.NOTIFY_APPROVAL_OVERDUE)
"""What an operator can acknowledge (docs/api.md, Acknowledgements): the notification
events of a target that stays on fire until it ends."""
ACK_BY_PATTERN = r"^[A-Za-z0-9_.@+ -]+$"
"""`by`: a person's handle or e-mail — an identity, never content; no control character."""
ACK_BY_MAX = 64
ACK_MIN_SECONDS = 60
ACK_MAX_SECONDS = 30 * 86_400
"""An acknowledgement lasts from a minute to 30 days: it always ends, so a forgotten one
cannot silence a target for good."""
FAILED_BOUNDARIES = (*sc.BOUNDARIES, sc.BOUNDARY_PROGRESS, sc.BOUNDARY_WAIT, sc.BOUNDARY_RUN)


ID_PATTERN = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]+$"
"""An id on the wire (semconv.check_value): 1 to 128 characters, none of them a control."""
_ID_SCHEMA = {"type": "string", "minLength": 1, "maxLength": sc.MAX_ID_LEN, "pattern": ID_PATTERN}


def _required_id(name: str, raw: str) -> str:
    if sc.check_value(sc.ATTRIBUTES[sc.RUN_ID], raw) is None:
        raise BadParam(
            f"{name}: expected an id of 1 to {sc.MAX_ID_LEN} characters without control "
            f"characters, got {raw[:140]!r}"
        )
    return raw


def _optional_id(name: str, raw: str) -> str | None:
    # Empty is absent: HTTP clients write a None parameter as `handoff_id=`.
    return _required_id(name, raw) if raw else None


class OneOf:
    """Annotation: a string from a closed vocabulary (validated in pydantic-core, and
    documented as its `enum`)."""

    def __init__(self, values: tuple[str, ...]) -> None:
        self.values = values

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.literal_schema(list(self.values))


TIME_DESCRIPTION = "ISO-8601 UTC, milliseconds (2026-11-30T12:00:00.123Z)"
IsoTime = Annotated[str | None, Field(description=TIME_DESCRIPTION)]
AVerdict = Annotated[str, OneOf(sc.PRECEDENCE)]
"""A verdict (docs/architecture.md, Verdicts) in an answer."""
AContinuity = Annotated[str, OneOf(sc.CONTINUITIES)]
"""A run's continuity in its conversation (docs/semconv.md, Turns)."""
Kind = Annotated[
    str,
    OneOf(sc.KINDS),
    Field(description="handoff (control moves) or delegation (an agent called as a tool)"),
]
BoundaryState = Annotated[str, OneOf(sc.BOUNDARY_STATES)]
FailedBoundary = Annotated[str, OneOf(FAILED_BOUNDARIES)]
Counts = dict[str, int]


def _six_boundaries(value: dict[str, str]) -> dict[str, str]:
    if set(value) != set(sc.BOUNDARIES):
        raise ValueError(f"boundaries must be exactly {', '.join(sc.BOUNDARIES)}")
    return value


_STATE_SCHEMA = {"type": "string", "enum": list(sc.BOUNDARY_STATES)}
Boundaries = Annotated[
    dict[str, BoundaryState],
    AfterValidator(_six_boundaries),
    # An object with the six boundary names of semconv as its properties: a dict, so the
    # names are not spelled a second time as attribute names here.
    Field(
        json_schema_extra={
            "properties": {b: _STATE_SCHEMA for b in sc.BOUNDARIES},
            "required": list(sc.BOUNDARIES),
            "additionalProperties": False,
        },
        description="Each of the six boundaries: passed, failed, unknown (no evidence yet, "
        "or not reached after an earlier failure) or not_observed (the source cannot see it).",
    ),
]


class Answer(BaseModel):
    """A JSON object of an answer: every declared key, no other."""

    model_config = ConfigDict(extra="forbid")


class Query(BaseModel):
    """A set of query parameters: unknown ones are ignored, known ones parsed (params.py)."""

    model_config = ConfigDict(extra="ignore")


# --- parameters ----------------------------------------------------------------------------


class ServiceParams(Query):
    service: Service = Field(None, description="Only runs of this service.name (empty: all).")


class WindowParams(ServiceParams):
    since: Time = Field(
        None,
        description="First-seen time from (inclusive): ISO-8601 date-time or date, or epoch "
        "seconds. Default: 24 h ago.",
    )
    until: Time = Field(
        None,
        description="First-seen time until (exclusive); same forms as `since`. Default: no bound.",
    )


class ListParams(WindowParams):
    limit: Limit = Field(DEFAULT_LIMIT, description=f"Max rows (default {DEFAULT_LIMIT}).")


_VERDICT_DESCRIPTION = "Only this verdict (judged at the time of the query)."


class RunsParams(ListParams):
    verdict: Verdict = Field(None, description=_VERDICT_DESCRIPTION)
    q: Text = Field(
        None,
        description="A run id or its beginning, or a trace id or conversation (thread) id one "
        "of the run's evidence spans carried.",
    )
    agent: Text = Field(
        None, description="An agent on the run's path, holding its work or ending it."
    )
    state: Annotated[str, choice(("", *RUN_STATES))] = Field(
        "",
        description="in_flight, stuck (in flight, silent past the grace, no open wait) or "
        "looping (handoffs loop, in flight or last seen since `since`, whenever the run "
        "started: the Live board's looping tile); empty: any. A state other than looping "
        "is any age when `since` is 0.",
    )
    sort: Annotated[str, choice(RUN_SORTS)] = Field(
        RUN_SORTS[0], description="newest (default), severity, silent or last_seen."
    )
    ids: Flag = Field(False, description="true: add each run's trace_ids and conversation_ids.")
    offset: PageOffset = Field(
        0,
        description="Skip this many matching runs, in the asked order (the next page: "
        "offset + limit); `total` counts every match.",
    )


class HandoffsParams(ListParams):
    verdict: Verdict = Field(None, description=_VERDICT_DESCRIPTION)
    unhealthy: Flag = Field(
        False, description="Only failure verdicts (rules 1-11 of docs/architecture.md, Verdicts)."
    )


def _page_description(what: str, default: int) -> tuple[str, str]:
    return (
        f"{what.capitalize()} in this page (default {default}); `{what}_total` says how many "
        "the run has.",
        f"{what.capitalize()} skipped before this page (run order; default 0).",
    )


_H_LIMIT, _H_OFFSET = _page_description("handoffs", RUN_HANDOFFS_DEFAULT)
_S_LIMIT, _S_OFFSET = _page_description("spans", RUN_SPANS_DEFAULT)


class RunPageParams(Query):
    """One page of a run's handoffs and one of its spans (a run may hold 10,000 handoffs)."""

    handoffs_limit: PageLimit = Field(RUN_HANDOFFS_DEFAULT, description=_H_LIMIT)
    handoffs_offset: PageOffset = Field(0, description=_H_OFFSET)
    spans_limit: PageLimit = Field(RUN_SPANS_DEFAULT, description=_S_LIMIT)
    spans_offset: PageOffset = Field(0, description=_S_OFFSET)


class ApprovalsParams(ServiceParams):
    limit: Limit = Field(DEFAULT_LIMIT, description=f"Max rows (default {DEFAULT_LIMIT}).")
    offset: PageOffset = Field(
        0,
        description="Skip this many waits, in the answer's order (the next page: offset + "
        "limit); `total` counts every open wait.",
    )


LIVE_WINDOW_DEFAULT = 3600


class LiveParams(ServiceParams):
    window: Annotated[int, integer(1, MAX_WINDOW_SECONDS)] = Field(
        LIVE_WINDOW_DEFAULT, description=f"Seconds back from now (default {LIVE_WINDOW_DEFAULT})."
    )


class AcknowledgementsParams(Query):
    active: Flag = Field(
        True,
        description="true: the active acknowledgements; false: the last 200 made, "
        "expired and cleared too, newest first.",
    )


class ClearParams(Query):
    event: Annotated[str, choice(ACK_EVENTS)] = Field(description="The acknowledged event.")
    run_id: Annotated[str, Checked(_required_id, _ID_SCHEMA)] = Field(description="handoff.run_id")
    handoff_id: Annotated[str | None, Checked(_optional_id, _ID_SCHEMA)] = Field(
        None, description="The wait's handoff.id (approval_overdue only)."
    )


class WeeklyParams(ServiceParams):
    weeks: Annotated[int, integer(1, MAX_WEEKS)] = Field(
        8, description="ISO weeks back, this one included (default 8)."
    )
    format: Annotated[str, choice(WEEK_FORMATS)] = Field(
        WEEK_FORMATS[0], description="json (default) or csv."
    )


# --- shared pieces of answers ------------------------------------------------------------------


class Error(Answer):
    error: str = Field(description="What is wrong, in a sentence.")


class Notification(Answer):
    """One event the collector's notifier handled for one destination (`--notify`)."""

    event: Annotated[str, OneOf(sc.NOTIFY_EVENTS)]
    handoff_id: str | None
    destination: str
    status: Annotated[str, OneOf(NOTIFICATION_STATUSES)] = Field(
        description="pending, sent or failed (given up after its attempts)."
    )
    attempts: int
    created_at: IsoTime
    sent_at: IsoTime = Field(description="When the destination answered 2xx.")


class Acknowledgement(Answer):
    """An operator's acknowledgement of a stuck run, a loop or an overdue wait."""

    event: Annotated[str, OneOf(ACK_EVENTS)]
    run_id: str
    handoff_id: str | None = Field(description="The wait's handoff (approval_overdue only).")
    service: str | None
    by: str = Field(description="Who acknowledged: a handle or e-mail.")
    note: Annotated[str, OneOf(sc.ACK_NOTES)]
    created: IsoTime
    until: IsoTime
    cleared: IsoTime = Field(description="When it was cleared (or replaced) before `until`.")
    active: bool = Field(description="`until` is ahead and it was not cleared.")


AckOrNone = Annotated[
    Acknowledgement | None,
    Field(description="The target's active acknowledgement (GET /api/v1/acknowledgements)."),
]


class Approval(Answer):
    """An open or expired wait, run-level (`handoff_id` null) or handoff-level."""

    run_id: str
    handoff_id: str | None
    service: str | None
    from_agent: str | None
    to_agent: str | None
    owner: str | None
    reason: str | None
    deadline: IsoTime
    seconds_left: float | None = Field(
        description="Negative when overdue, null without a deadline."
    )
    verdict: Annotated[str, OneOf(APPROVAL_VERDICTS)]
    verdict_label: str
    missing: list[str] = Field(
        description="Absent facts among owner, reason, deadline, resume_token_id, state_persisted."
    )
    resume_token_id: str | None
    state_persisted: bool | None
    decision: str | None
    checkpointed_at: IsoTime
    notifications: list[Notification]
    acknowledgement: AckOrNone = None


class Usage(Answer):
    """What work cost (docs/semconv.md, "Usage"): tokens, model calls and USD. A figure no
    source reported is null, never 0."""

    input_tokens: int | None
    output_tokens: int | None
    model_calls: int | None
    cost_usd: float | None = Field(
        description="Priced when judged, from the collector's price table (and --prices). "
        "A leg or run: null when any of its usage could not be priced (unpriced_models says "
        "which). A sum over many (an edge, a week): what could be priced; `unpriced` counts "
        "the parts left out."
    )
    model: str | None = Field(default=None, description="The model with the most calls.")
    unpriced_models: list[str] = Field(
        default_factory=list,
        description="Models without a price ('' for usage that named no model).",
    )
    unpriced: int = Field(default=0, description="Parts with usage but no price (sums only).")


UsageOrNone = Annotated[Usage | None, Field(description="Null: no usage reported.")]


class Handoff(Answer):
    """One handoff (or delegation) of a run, judged at the time of the query."""

    handoff_id: str
    kind: Kind
    from_agent: str | None
    to_agent: str | None
    turn: int | None
    seq: int = Field(description="1-based position in the run.")
    requested_at: IsoTime
    verdict: AVerdict
    verdict_label: str
    failed_boundary: FailedBoundary | None
    why: str
    next_step: str
    fingerprint: str | None
    state_version: int | None
    history_items_forwarded: int | None
    history_items_total: int | None
    route_declared: bool | None
    route_goto: str | None
    control_before: str | None
    control_after: str | None
    tool_call_id: str | None
    tool_call_closed: bool | None
    required_keys: list[str]
    missing_keys: list[str]
    destination_started: bool | None
    rejection_reason: str | None
    rejection_fields: list[str]
    reason: str | None = Field(
        description="The sender's code, or what became of the handoff (ignored_same_turn, "
        "handoff_tool_missing, edge, command, send)."
    )
    loop: bool
    claims_done: bool = Field(
        description="The run completed at this handoff, or its destination claimed done "
        "while its wait was open."
    )
    outcome_result: str | None
    wait: bool = Field(description="A wait was checkpointed for it.")
    wait_decision: str | None
    unobserved: list[str]
    usage: UsageOrNone = Field(
        default=None,
        description="The leg this handoff gave its destination: the work that agent did while "
        "it held control.",
    )
    task_id: str | None = Field(
        default=None, description="a2a.task.id: the A2A task a handoff to another service became."
    )
    task_state: str | None = Field(
        default=None, description="a2a.task.state, latest (docs/a2a.md)."
    )


class HandoffDetail(Handoff):
    """A handoff on a run's detail page, with its six boundaries."""

    boundaries: Boundaries


class RunRef(Answer):
    run_id: str
    service: str | None


class HandoffListItem(Handoff, RunRef):
    """A handoff listed across runs: which run, no boundaries."""


class RunFacts(Answer):
    """What every view of a run says about it (its summary in a list, its detail)."""

    run_id: str
    service: str | None
    verdict: AVerdict
    verdict_label: str
    status: str | None = Field(
        description="The latest run.status (started while running; null before any run span)."
    )
    started_at: IsoTime
    last_seen_at: IsoTime
    current_agent: str | None
    handoff_count: int = Field(description="Handoffs only (delegations: delegation_count).")
    loop: bool
    false_complete: bool
    failed: bool = Field(description="run.status is failed or max_turns.")
    unverified: bool
    pending_approvals: int = Field(description="The run's open or expired waits.")
    turns: int | None
    delegation_count: int
    usage: UsageOrNone = Field(default=None, description="Every leg of the run, summed.")
    start_agent: str | None = Field(
        default=None,
        description="The first agent that ran (its run start's agent, else its first sender).",
    )


class RunSummary(RunFacts):
    """A run in the `/runs` list."""

    final_agent: str | None
    source: str | None
    source_label: str | None
    in_flight: bool
    stuck: bool
    seconds_since_last_activity: float | None
    acknowledgement: AckOrNone = None
    trace_ids: list[str] = Field(default_factory=list, description="With ids=true only.")
    conversation_ids: list[str] = Field(default_factory=list, description="With ids=true only.")


class Span(Answer):
    name: str
    handoff_id: str | None
    trace_id: str
    span_id: str
    start: IsoTime
    end: IsoTime
    attributes: dict[str, Any] = Field(
        description="Contract attributes only (semconv names), as stored."
    )


class Outcome(Answer):
    handoff_id: str | None
    verifier: str | None
    result: str
    receipt_id: str | None
    at: IsoTime


class PathSegment(Answer):
    agents: list[str]
    repeat: int


class PathSummary(Answer):
    segments: list[PathSegment]
    segments_omitted: int = Field(description="Segments past the first 200, not listed.")
    text: str


class RunDetail(RunFacts):
    """One run, with one page of its handoffs and one of its spans."""

    why: str
    first_failure: Handoff | None = Field(
        description="The handoff whose failure decides the run's verdict, on whichever page "
        "it is; null when no handoff failed."
    )
    next_step: str
    verification_expected: bool
    unobserved: list[str] = Field(description="Boundaries this source cannot see.")
    not_observed: str | None
    source: str | None
    source_label: str | None
    final_agent: str | None
    ended_at: IsoTime
    path: list[str] = Field(description="Agents that ran, in handoff order (the first 1000).")
    path_total: int
    path_summary: PathSummary
    handoffs_capped: bool
    handoff_cap: int | None
    loop_cycle: list[str]
    loop_repeats: int
    loop_usage: UsageOrNone = Field(
        default=None, description="What the loop burned: the legs from its first repeat on."
    )
    trace_ids: list[str]
    conversation_ids: list[str]
    outcome_result: str | None
    verifier: str | None
    outcomes: list[Outcome]
    waits: list[Approval]
    notifications: list[Notification]
    acknowledgements: list[Acknowledgement] = Field(
        default_factory=list,
        description="The run's active acknowledgements (its loop, its being stuck, its waits).",
    )
    conversation_id: str | None = Field(
        description="gen_ai.conversation.id of its spans: the conversation it is a turn of."
    )
    continuity: AContinuity | None = Field(
        description="How this turn follows the conversation's previous run (docs/semconv.md, "
        "Turns): first, continued, rerouted, diverted; null: no conversation, or it cannot "
        "be told."
    )
    conversation_position: int | None = Field(description="1 for the conversation's first run.")
    previous_run_id: str | None
    previous_final_agent: str | None = Field(
        description="Where the previous run ended (its final agent, else who held its work)."
    )
    first_to_agent: str | None = Field(description="Where the run's first handoff went.")
    entry_agents: list[str] = Field(description="The entry agents its shim declared.")
    handoffs: list[HandoffDetail]
    handoffs_total: int
    handoffs_offset: int
    handoffs_limit: int
    spans: list[Span]
    spans_total: int
    spans_offset: int
    spans_limit: int


class Edge(Answer):
    kind: Kind
    from_agent: str | None
    to_agent: str | None
    count: int
    unhealthy: int
    unhealthy_share: float
    undeclared: int
    verdicts: Counts
    runs: list[str]
    usage: UsageOrNone = Field(
        default=None, description="The legs its handoffs gave their destinations, summed."
    )
    unhealthy_usage: UsageOrNone = Field(
        default=None, description="Of `usage`, the legs of handoffs judged unhealthy."
    )


class Loop(Answer):
    run_id: str
    service: str | None
    cycle: list[str]
    repeats: int
    turns: int | None
    status: str | None
    last_seen_at: IsoTime
    acknowledgement: AckOrNone = None
    usage: UsageOrNone = Field(default=None, description="The whole run's.")
    tokens_burned: int | None = Field(
        default=None, description="Tokens spent after the loop's first repeat."
    )
    burned: UsageOrNone = Field(
        default=None, description="What was spent after the first repeat (tokens_burned's detail)."
    )


class FalseCompletion(Answer):
    run_id: str
    service: str | None
    final_agent: str | None
    ended_at: IsoTime
    last_seen_at: IsoTime
    outcome_result: Annotated[str, OneOf((sc.OUTCOME_FAIL,))] | None
    verifier: str | None


class Tile(Answer):
    count: int
    new_in_window: int


class LoopTile(Answer):
    count: int = Field(
        description="Runs whose handoffs loop, in flight or last seen in the window "
        "(a loop usually ends within seconds at its turn limit)."
    )
    new_in_window: int
    in_flight: int = Field(description="Of `count`, the runs still in flight.")


class FalseCompleteTile(Answer):
    count: int
    previous_window: int


class Board(Answer):
    stuck: Tile
    looping: LoopTile
    approvals_overdue: Tile
    false_complete: FalseCompleteTile
    stuck_acknowledged: int = Field(0, description="Of `stuck.count`, the acknowledged runs.")
    looping_acknowledged: int = Field(0, description="Of `looping.count`, the acknowledged runs.")
    overdue_acknowledged: int = Field(
        0, description="Of `approvals_overdue.count`, the acknowledged waits."
    )


class InFlightRun(Answer):
    run_id: str
    service: str | None
    current_agent: str | None
    last_handoff_at: IsoTime
    seconds_since_last_handoff: float | None
    verdict: AVerdict
    verdict_label: str
    stuck: bool
    loop: bool
    pending_approvals: int
    acknowledgement: AckOrNone = None
    model_calls: int | None = Field(None, description="Model calls so far (null: none reported).")
    budget_remaining: int | None = Field(
        None,
        description="handoff.budget.remaining of its latest request (null: no budget declared).",
    )
    budget_used: float | None = Field(
        None,
        description="Budget burn: model calls so far over the budget the latest request implied "
        "(the calls before it plus handoff.budget.remaining); null without a stated budget or "
        "reported calls.",
    )


class Minute(Answer):
    minute: str
    verdict: AVerdict
    count: int


class Week(Answer):
    week: str
    handoffs: int
    rejections: int
    rate: float | None
    partial: bool
    days: float


class ReasonCount(Answer):
    week: str
    reason: str
    count: int
    rate: float | None


class EdgeRejections(Answer):
    week: str
    from_agent: str | None
    to_agent: str | None
    handoffs: int
    rejections: int
    rate: float | None


class AgentRejections(Answer):
    week: str
    agent: str | None
    handoffs: int
    rejections: int
    rate: float | None


class EdgeReasonCount(Answer):
    week: str
    from_agent: str | None
    to_agent: str | None
    reason: str
    count: int
    rate: float | None


class Drop(Answer):
    service: str
    attribute: str
    count: int


class Source(Answer):
    """One instrumentation scope of one service, and what became of its spans."""

    service: str
    scope: str = Field(
        description="The OTLP instrumentation scope name (`(no scope name)`, `(unreadable "
        "scope)` for one that is not a plain identifier, `(other)` past the collector's bound)."
    )
    status: Annotated[str, OneOf(("judged", "read", "refused"))] = Field(
        description="`judged`: some of its spans became handoff evidence; `read`: a "
        "translator reads them, none was evidence yet; `refused`: nothing of it is judged."
    )
    translator: str | None = Field(description="`handoff.source` of the translator that reads it.")
    translator_label: str | None
    spans_received: int
    evidence_spans: int = Field(description="Contract spans kept (translated evidence included).")
    refused_spans: int
    refused_by_reason: dict[str, int]
    first_seen_at: IsoTime
    last_seen_at: IsoTime
    advice: str = Field(description="What this means and what to do, in one sentence.")


class TranslatorInfo(Answer):
    source: str
    label: str
    scopes: list[str] = Field(description="Instrumentation scopes it claims by name.")


# --- answers, one per endpoint ------------------------------------------------------------------


class Services(Answer):
    services: list[str]


class RunsPage(Answer):
    total: int = Field(description="Every run that matches, beyond `limit`.")
    runs: list[RunSummary]


class Handoffs(Answer):
    handoffs: list[HandoffListItem]


class Edges(Answer):
    edges: list[Edge]


class Loops(Answer):
    loops: list[Loop]


class Approvals(Answer):
    total: int
    counts: Counts
    approvals: list[Approval]


class FalseCompletions(Answer):
    runs: list[FalseCompletion]
    total: int


class Live(Answer):
    now: str
    window: int
    board: Board
    runs_in_flight_total: int
    runs_in_flight: list[InFlightRun]
    wait_counts: Counts
    verdict_counts: Counts
    timeline: list[Minute]
    unhealthy: list[HandoffListItem]


class WeekSpend(Answer):
    """What the runs of one week that ended in one verdict cost."""

    week: str
    verdict: AVerdict
    verdict_label: str
    runs: int
    usage: UsageOrNone = Field(
        default=None,
        description="Their usage summed (cost_usd: what could be priced; `unpriced` runs left out).",
    )
    share: float | None = Field(
        description="Of the week's priced spend (cost_usd), this verdict's; null when nothing "
        "that week was priced."
    )
    tokens_share: float | None = Field(description="Of the week's tokens, this verdict's.")
    burned_tokens: int = Field(description="Of theirs, spent after a loop's first repeat.")
    burned_cost_usd: float


class ConversationRun(Answer):
    """One turn of a conversation: a run, where it started and ended, and how it follows the
    run before it."""

    run_id: str
    service: str | None
    position: int = Field(description="1 for the first run.")
    started_at: IsoTime
    ended_at: IsoTime
    status: str | None
    start_agent: str | None
    final_agent: str | None = Field(description="Its final agent, else who holds its work.")
    first_to_agent: str | None
    continuity: AContinuity | None
    previous_run_id: str | None
    previous_final_agent: str | None
    verdict: AVerdict
    verdict_label: str
    handoff_count: int
    loop: bool
    cost_usd: float | None


class Conversation(Answer):
    """GET /api/v1/conversations/{conversation_id}: its runs in order (first 1000)."""

    conversation_id: str
    services: list[str | None]
    runs: list[ConversationRun]
    runs_total: int
    counts: Counts = Field(description="Runs per continuity (first, continued, rerouted, ...).")


class WeekContinuity(Answer):
    """One service's turns of one week (runs first seen that week that follow another run
    of their conversation), by continuity."""

    week: str
    service: str | None
    turns: int = Field(description="Runs with a previous run in their conversation.")
    continued: int
    rerouted: int
    diverted: int
    unknown: int = Field(description="Turns whose continuity cannot be told.")
    rerouted_rate: float | None = Field(description="rerouted / turns.")
    diverted_rate: float | None = Field(description="diverted / turns.")


class Weekly(Answer):
    this_week: str
    last_week: str | None
    weeks: list[Week]
    by_reason: list[ReasonCount]
    by_edge: list[EdgeRejections]
    by_agent: list[AgentRejections]
    by_edge_reason: list[EdgeReasonCount]
    spend: list[WeekSpend] = Field(
        default_factory=list,
        description="Per week and the verdict runs ended in (their first-seen week): what "
        "they cost. Runs, not handoffs: a loop's or a rejection's whole run.",
    )
    continuity: list[WeekContinuity] = Field(
        default_factory=list,
        description="Per week and service: how conversations' later turns started — "
        "continued, rerouted (back through an entry agent to the agent that held the work) "
        "or diverted (docs/semconv.md, Turns).",
    )


class TokenRequest(BaseModel):
    """The body of POST /api/v1/tokens (docs/security.md): a credential to make."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")] = Field(
        description="Its name (in listings and logs); never reused, even once revoked."
    )
    kind: Annotated[str, OneOf(CREDENTIAL_KINDS)] = Field(
        description="ingest: send spans; read: query; admin: both, acknowledge, manage tokens."
    )
    services: list[str] = Field(
        default_factory=list, description="service.name values it is scoped to (empty: all)."
    )


class Credential(Answer):
    """A credential as listed: never its token, nor the token's hash."""

    name: str
    kind: str
    services: list[str]
    created_at: IsoTime
    revoked_at: IsoTime


class NewCredential(Credential):
    token: str = Field(description="The bearer token, shown this once: only its hash is kept.")


class Credentials(Answer):
    tokens: list[Credential]


class Drops(Answer):
    drops: list[Drop]


class Acknowledgements(Answer):
    acknowledgements: list[Acknowledgement]


class AcknowledgementRequest(BaseModel):
    """The body of POST /api/v1/acknowledgements (docs/api.md, Acknowledgements). The
    field rules are here; the rules across fields (exactly one of `until` / `for_seconds`,
    `until` ahead, `handoff_id` with approval_overdue only) are `api.QueryAPI.acknowledge`'s."""

    model_config = ConfigDict(extra="ignore")

    event: Annotated[str, OneOf(ACK_EVENTS)]
    run_id: Annotated[str, Field(min_length=1, max_length=sc.MAX_ID_LEN, pattern=ID_PATTERN)]
    handoff_id: Annotated[
        str | None, Field(min_length=1, max_length=sc.MAX_ID_LEN, pattern=ID_PATTERN)
    ] = Field(None, description="Required for approval_overdue, refused for the run events.")
    by: Annotated[str, Field(min_length=1, max_length=ACK_BY_MAX, pattern=ACK_BY_PATTERN)] = Field(
        description="Who acknowledges: a handle or e-mail (an identity, not content)."
    )
    until: Annotated[str | None, Field(max_length=64)] = Field(
        None,
        description="ISO-8601 UTC time it ends, ahead and at most 30 days away "
        "(exactly one of `until` / `for_seconds`).",
    )
    for_seconds: Annotated[
        int | None, Field(ge=ACK_MIN_SECONDS, le=ACK_MAX_SECONDS, strict=True)
    ] = Field(None, description="How long it lasts, 60 s to 30 days.")
    note: Annotated[str, OneOf(sc.ACK_NOTES)] = Field(
        sc.ACK_NOTES[0], description="Why, as a code (default investigating)."
    )


class Sources(Answer):
    sources: list[Source]
    translators: list[TranslatorInfo] = Field(
        description="The other instrumentations this collector translates."
    )
