"""handoffscope semantic conventions, v1: every span name, attribute name and verdict.

This is the one module of names. The instrumentation, the collector, the dashboard and
the tests import from here; nothing else spells a contract string. `docs/semconv.md`
documents each constant (a test checks that every one is there); what a "Contract
extension" adds is explained in its section "Extensions".

The contract is *content-free*: identifiers are opaque, codes come from bounded
vocabularies, lists carry key NAMES only. `ATTRIBUTES` below is the allowlist both the
shim and the collector enforce: a name not in it never leaves the app or reaches storage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, NamedTuple

SCHEMA_VERSION: Final = 1
"""Version of this contract; stamped on the instrumentation scope and the DuckDB schema."""

INSTRUMENTATION_SCOPE: Final = "handoffscope.instrumentation"

# --- span names (docs/semconv.md) ---------------------------------------------------------

SPAN_RUN: Final = "handoff.run"
SPAN_REQUEST: Final = "handoff.request"
SPAN_TRANSFER: Final = "handoff.transfer"
SPAN_ACCEPT: Final = "handoff.accept"
SPAN_WAIT: Final = "handoff.wait"
SPAN_OUTCOME: Final = "handoff.outcome"
SPAN_USAGE: Final = "handoff.usage"
"""One model call's usage, translated from another instrumentation's model span: it names
the calling agent (`gen_ai.agent.name`) and its time places it in that agent's leg."""

SPAN_NAMES: Final = (
    SPAN_RUN,
    SPAN_REQUEST,
    SPAN_TRANSFER,
    SPAN_ACCEPT,
    SPAN_WAIT,
    SPAN_OUTCOME,
    SPAN_USAGE,
)

# --- attribute names (docs/semconv.md) ----------------------------------------------------

RUN_ID: Final = "handoff.run_id"
RUN_STATUS: Final = "run.status"
RUN_FINAL_AGENT: Final = "run.final_agent"
RUN_TURNS: Final = "run.turns"
RUN_STARTED: Final = "run.started"
RUN_OUTCOME_REQUIRED: Final = "run.outcome_required"
"""Contract extension: the app declares that this run's completion must be verified
(`instrument(..., require_outcome=True)`), so "done" without a passing outcome is a false
completion even before the service has reported any outcome."""

HANDOFF_ID: Final = "handoff.id"
FROM_AGENT: Final = "handoff.from_agent"
TO_AGENT: Final = "handoff.to_agent"
TURN: Final = "handoff.turn"
FINGERPRINT: Final = "handoff.fingerprint"
STATE_VERSION: Final = "handoff.state_version"
HISTORY_ITEMS_FORWARDED: Final = "handoff.history_items_forwarded"
HISTORY_ITEMS_TOTAL: Final = "handoff.history_items_total"
ROUTE_DECLARED: Final = "handoff.route.declared"
TOOL_CALL_ID: Final = "handoff.tool_call.id"
CONTEXT_REQUIRED_KEYS: Final = "handoff.context.required_keys"
CONTRACT_VERSION: Final = "handoff.contract_version"
BUDGET_REMAINING: Final = "handoff.budget.remaining"
REASON: Final = "handoff.reason"
KIND: Final = "handoff.kind"
"""Contract extension: `handoff` (control moves) or `delegation` (an agent invoked as a
tool; its result returns to a caller that never gave up control). Absent means handoff."""
UNOBSERVED: Final = "handoff.unobserved"
"""Contract extension: NAMES of the boundaries this source cannot see for this handoff
(e.g. `context` for a runtime with no context contract): they read `not_observed`."""
SOURCE: Final = "handoff.source"
"""Contract extension: which instrumentation's spans the collector translated this
evidence from (`openinference`, `openllmetry`, `logfire`, ...; docs/foreign-spans.md).
Absent on the shim's own spans. A run takes the source of its evidence, so the API and
the dashboard can say what that source cannot show."""

ROUTE_GOTO: Final = "handoff.route.goto"
CONTROL_BEFORE: Final = "handoff.control.before"
CONTROL_AFTER: Final = "handoff.control.after"
TOOL_CALL_CLOSED: Final = "handoff.tool_call.closed"

DESTINATION_STARTED: Final = "handoff.destination.started"
CONTEXT_MISSING_KEYS: Final = "handoff.context.missing_keys"
VERDICT: Final = "handoff.verdict"
REJECTION_REASON: Final = "handoff.rejection.reason"
REJECTION_FIELDS: Final = "handoff.rejection.fields"
"""Contract extension: names (never values) of the contract fields a receiver refused."""
DESTINATION_CLAIMS_DONE: Final = "handoff.destination.claims_done"
"""Contract extension: the destination said "done" (e.g. while a wait is still open)."""

WAIT_OWNER: Final = "wait.owner"
WAIT_REASON: Final = "wait.reason"
WAIT_DEADLINE: Final = "wait.deadline"
WAIT_RESUME_TOKEN_ID: Final = "wait.resume_token_id"
WAIT_STATE_PERSISTED: Final = "wait.state_persisted"
WAIT_DECISION: Final = "wait.decision"

OUTCOME_VERIFIER: Final = "outcome.verifier"
OUTCOME_RESULT: Final = "outcome.result"
OUTCOME_RECEIPT_ID: Final = "outcome.receipt_id"

GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"

GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
"""Contract extension (OTel GenAI name): tokens the model read in the leg this span ends.
A *leg* is the work one agent does while it holds control, from the handoff that gave it
control (or the run's start) to the next transfer (or the run's end); a shim reports it
on the span that ends the leg (docs/semconv.md, "Usage")."""
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
"""Contract extension (OTel GenAI name): tokens the model wrote in the leg this span ends."""
USAGE_MODEL_CALLS: Final = "usage.model_calls"
"""Contract extension: model calls in the leg this span ends."""
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
"""Contract extension (OTel GenAI name): the model asked for in the leg this span ends (a
name, not content); when the leg used several, the one with the most calls."""

RUN_ENTRY_AGENTS: Final = "run.entry_agents"
"""Contract extension (turns): the agents a conversation's turn may legitimately start at
(a triage, a supervisor), declared by the shim on `handoff.run`; names, not codes. Without
it the collector learns them as the agents that start a conversation's first run."""

A2A_TASK_ID: Final = "a2a.task.id"
"""Contract extension (services): the A2A task a cross-service handoff became (opaque)."""
A2A_TASK_STATE: Final = "a2a.task.state"
"""Contract extension (services): the A2A task's state, in the A2A vocabulary
(`A2A_STATES`); a handoff's latest state is judged (docs/a2a.md)."""

BAGGAGE_RUN_ID: Final = "handoffscope.run_id"
"""W3C baggage key carrying `handoff.run_id` across a service boundary (beside traceparent)."""
BAGGAGE_HANDOFF_ID: Final = "handoffscope.handoff_id"
"""W3C baggage key carrying `handoff.id` across a service boundary."""

SERVICE_NAME: Final = "service.name"
"""Resource attribute (OTel standard); the collector keeps it to group runs by service."""

# --- bounded vocabularies ---------------------------------------------------------------

RUN_STATUS_STARTED: Final = "started"
RUN_STATUS_COMPLETED: Final = "completed"
RUN_STATUS_FAILED: Final = "failed"
RUN_STATUS_INTERRUPTED: Final = "interrupted"
RUN_STATUS_MAX_TURNS: Final = "max_turns"
RUN_STATUSES: Final = (
    RUN_STATUS_STARTED,
    RUN_STATUS_COMPLETED,
    RUN_STATUS_FAILED,
    RUN_STATUS_INTERRUPTED,
    RUN_STATUS_MAX_TURNS,
)

REJECTION_INVALID: Final = "invalid"
REJECTION_STALE: Final = "stale"
REJECTION_UNAUTHORIZED: Final = "unauthorized"
REJECTION_NO_BUDGET: Final = "no_budget"
REJECTION_VAGUE_GOAL: Final = "vague_goal"
REJECTION_REASONS: Final = (
    REJECTION_INVALID,
    REJECTION_STALE,
    REJECTION_UNAUTHORIZED,
    REJECTION_NO_BUDGET,
    REJECTION_VAGUE_GOAL,
)

WAIT_DECISION_APPROVED: Final = "approved"
WAIT_DECISION_REJECTED: Final = "rejected"
WAIT_DECISION_EXPIRED: Final = "expired"
WAIT_DECISIONS: Final = (WAIT_DECISION_APPROVED, WAIT_DECISION_REJECTED, WAIT_DECISION_EXPIRED)

KIND_HANDOFF: Final = "handoff"
KIND_DELEGATION: Final = "delegation"
KINDS: Final = (KIND_HANDOFF, KIND_DELEGATION)

REASON_IGNORED_SAME_TURN: Final = "ignored_same_turn"
"""`handoff.reason` of a handoff the runtime ignored because it takes one per turn (the
Agents SDK takes the first of several handoffs the model asked for in one turn; LangGraph
carries out one of several handoff tools called in parallel, e.g. langgraph-supervisor
with `parallel_tool_calls=True`)."""
REASON_TOOL_MISSING: Final = "handoff_tool_missing"
"""`handoff.reason` of a call to a handoff tool the sending agent does not have."""
REASON_EDGE: Final = "edge"
"""`handoff.reason` of a transfer carried by a static or conditional graph edge."""
REASON_COMMAND: Final = "command"
"""`handoff.reason` of a transfer carried by a `Command(goto=...)`."""
REASON_SEND: Final = "send"
"""`handoff.reason` of one of several parallel `Send`s."""
REASONS: Final = (
    REASON_IGNORED_SAME_TURN,
    REASON_TOOL_MISSING,
    REASON_EDGE,
    REASON_COMMAND,
    REASON_SEND,
)
"""The `handoff.reason` codes the adapters set (apps may send other bounded codes)."""

A2A_SUBMITTED: Final = "submitted"
A2A_WORKING: Final = "working"
A2A_INPUT_REQUIRED: Final = "input-required"
A2A_AUTH_REQUIRED: Final = "auth-required"
A2A_COMPLETED: Final = "completed"
A2A_CANCELED: Final = "canceled"
A2A_FAILED: Final = "failed"
A2A_REJECTED: Final = "rejected"
A2A_UNKNOWN: Final = "unknown"
A2A_STATES: Final = (
    A2A_SUBMITTED,
    A2A_WORKING,
    A2A_INPUT_REQUIRED,
    A2A_AUTH_REQUIRED,
    A2A_COMPLETED,
    A2A_CANCELED,
    A2A_FAILED,
    A2A_REJECTED,
    A2A_UNKNOWN,
)
"""`a2a.task.state`: the A2A protocol's task states, spelled as its JSON binding does."""
A2A_FAILED_STATES: Final = (A2A_FAILED, A2A_CANCELED)
"""Task states that end the remote leg without a result: the handoff is `run_failed`."""

CONTINUITY_FIRST: Final = "first"
"""The conversation's first run (of those kept)."""
CONTINUITY_CONTINUED: Final = "continued"
"""The run started where the previous run ended, or at an entry agent that then went on
to an agent other than the previous run's final one."""
CONTINUITY_REROUTED: Final = "rerouted"
"""The run started at an entry agent whose first handoff went straight to the previous
run's final agent: the turn went back through the supervisor to reach the agent that
already held the work (an extra model call and handoff, and local context lost)."""
CONTINUITY_DIVERTED: Final = "diverted"
"""The run started at an agent that is neither the previous run's final agent nor an
entry agent."""
CONTINUITIES: Final = (
    CONTINUITY_FIRST,
    CONTINUITY_CONTINUED,
    CONTINUITY_REROUTED,
    CONTINUITY_DIVERTED,
)
"""A run's `continuity` within its conversation (a fact, not a failure verdict)."""

OUTCOME_PASS: Final = "pass"
OUTCOME_FAIL: Final = "fail"
OUTCOME_RESULTS: Final = (OUTCOME_PASS, OUTCOME_FAIL)

# --- the six boundaries of a handoff (article 004), plus run-level checks ---------------

BOUNDARY_ROUTE: Final = "route"
BOUNDARY_CONTROL: Final = "control"
BOUNDARY_TOOL_PROTOCOL: Final = "tool_protocol"
BOUNDARY_CONTEXT: Final = "context"
BOUNDARY_DESTINATION: Final = "destination"
BOUNDARY_RESULT: Final = "result"
BOUNDARIES: Final = (
    BOUNDARY_ROUTE,
    BOUNDARY_CONTROL,
    BOUNDARY_TOOL_PROTOCOL,
    BOUNDARY_CONTEXT,
    BOUNDARY_DESTINATION,
    BOUNDARY_RESULT,
)
BOUNDARY_PROGRESS: Final = "progress"
"""Not one of the six: a loop is a failure of progress across handoffs."""
BOUNDARY_WAIT: Final = "wait"
"""Not one of the six: a human wait's checkpoint."""
BOUNDARY_RUN: Final = "run"
"""Not one of the six: the run itself (it crashed or hit its turn / recursion limit)."""

PASSED: Final = "passed"
FAILED: Final = "failed"
UNKNOWN: Final = "unknown"
NOT_OBSERVED: Final = "not_observed"
BOUNDARY_STATES: Final = (PASSED, FAILED, UNKNOWN, NOT_OBSERVED)
"""A boundary's state: evidence says it passed or failed; `unknown` (no evidence yet, or
not reached after an earlier failure); `not_observed` (the source cannot see it)."""

# --- verdicts, in precedence order (docs/architecture.md, Verdicts) -----------------------

ROUTE_REJECTED: Final = "route_rejected"
STALE_CONTROL: Final = "stale_control"
OPEN_TOOL_PROTOCOL: Final = "open_tool_protocol"
CONTEXT_INCOMPLETE: Final = "context_incomplete"
CONTRACT_REJECTED: Final = "contract_rejected"
DESTINATION_NOT_STARTED: Final = "destination_not_started"
LOOP: Final = "loop"
FALSE_COMPLETE: Final = "false_complete"
APPROVAL_OVERDUE: Final = "approval_overdue"
WAIT_UNCERTAIN: Final = "wait_uncertain"
RUN_FAILED: Final = "run_failed"
UNVERIFIED: Final = "unverified"
WAITING_ON_APPROVAL: Final = "waiting_on_approval"
IN_FLIGHT: Final = "in_flight"
HEALTHY: Final = "healthy"


class Verdict(NamedTuple):
    """One verdict: its code, the words a person reads, the safe next step, where it fails."""

    name: str
    label: str
    next_step: str
    boundary: str | None
    """The boundary a failure belongs to (`failed_boundary` in the query API); None when
    the verdict is not a failure."""
    rule: int | None
    """Its number in the ladder (docs/architecture.md, Verdicts); None: not a failure."""
    fails_when: str
    """When it is given, in a sentence (the docs' tables are rendered from this)."""


VERDICT_TABLE: Final = (
    Verdict(
        ROUTE_REJECTED,
        "Route rejected",
        "Block; restore a declared route.",
        BOUNDARY_ROUTE,
        1,
        "the destination is not a declared edge, or `goto` points elsewhere",
    ),
    Verdict(
        STALE_CONTROL,
        "Stale control",
        "Reconcile persisted state before retry.",
        BOUNDARY_CONTROL,
        2,
        "the active agent before the step is not the sender, or after it not the receiver",
    ),
    Verdict(
        OPEN_TOOL_PROTOCOL,
        "Tool call left open",
        "Repair history before another model call.",
        BOUNDARY_TOOL_PROTOCOL,
        3,
        "the handoff's tool call is not closed by its own tool call id",
    ),
    Verdict(
        CONTEXT_INCOMPLETE,
        "Context incomplete",
        "Rebuild the minimal contract.",
        BOUNDARY_CONTEXT,
        4,
        "a required context key is missing at the destination",
    ),
    Verdict(
        CONTRACT_REJECTED,
        "Contract rejected",
        "Repair (invalid), reload and regenerate (stale), stop and escalate (unauthorized).",
        BOUNDARY_DESTINATION,
        5,
        "the receiver refused: `invalid` / `stale` / `unauthorized` / `no_budget` / `vague_goal`",
    ),
    Verdict(
        DESTINATION_NOT_STARTED,
        "Destination never started",
        "Inspect routing and admission.",
        BOUNDARY_DESTINATION,
        6,
        "no admission within the grace window (`--grace-seconds`, default 30 s), the "
        "destination reported it did not start, or the run completed and it never ran",
    ),
    Verdict(
        LOOP,
        "Loop",
        "Break the back-edge; fall back.",
        BOUNDARY_PROGRESS,
        7,
        "the same destination, task and no new work seen again in the run, a cycle of any "
        "length without progress, or a run cut by its turn / recursion limit while cycling",
    ),
    Verdict(
        FALSE_COMPLETE,
        "False completion",
        "Reopen; run the verifier.",
        BOUNDARY_RESULT,
        8,
        "the run claims `completed` (or a destination claims done while a wait is open) "
        "without a passing outcome where verification is expected, or its verifier's latest "
        "result is `fail`",
    ),
    Verdict(
        APPROVAL_OVERDUE,
        "Approval overdue",
        "Escalate to the owner.",
        BOUNDARY_WAIT,
        9,
        "a wait's deadline passed with no decision (or it was decided `expired`)",
    ),
    Verdict(
        WAIT_UNCERTAIN,
        "Wait uncertain",
        "Fix the checkpoint.",
        BOUNDARY_WAIT,
        10,
        "a wait lacks an owner, reason, future deadline, resume token or persisted state",
    ),
    Verdict(
        RUN_FAILED,
        "Run failed",
        "Inspect the failure; rerun from the last checkpoint.",
        BOUNDARY_RUN,
        11,
        "the run crashed or hit `max_turns` / its recursion limit, and no rule above explains it",
    ),
    Verdict(
        WAITING_ON_APPROVAL,
        "Waiting on approval",
        "Leave it alone; notify the owner.",
        None,
        None,
        "all five wait facts present, deadline ahead",
    ),
    Verdict(
        IN_FLIGHT,
        "In flight",
        "—",
        None,
        None,
        "the request was seen and the grace window has not passed",
    ),
    Verdict(
        UNVERIFIED,
        "Unverified",
        "Add a verifier (record_outcome).",
        None,
        None,
        "(runs only) completed, no verifier expected for this service, none reported",
    ),
    Verdict(HEALTHY, "Healthy", "Nothing.", None, None, "every observed boundary passed"),
)
"""Every verdict, worst first: the first rule that fails wins; a run takes its worst. The
sets and dicts below derive from it; so do the verdict tables in the docs (a test renders
them: `handoffscope.instrumentation.verdicts.docs`)."""

PRECEDENCE: Final = tuple(v.name for v in VERDICT_TABLE)
"""All verdicts, worst first."""
VERDICTS: Final = PRECEDENCE
FAILURE_VERDICTS: Final = tuple(v.name for v in VERDICT_TABLE if v.rule is not None)
"""Verdicts 1–11 of docs/architecture.md, Verdicts: the unhealthy ones."""
RUN_ONLY_VERDICTS: Final = (UNVERIFIED,)
"""Verdicts a run can have but no single handoff (a handoff cut off by its run's failure
is `run_failed` too)."""
REJECTION_VERDICTS: Final = (ROUTE_REJECTED, CONTRACT_REJECTED)
"""What the weekly review counts as a rejection."""

RANK: Final = {v: i for i, v in enumerate(PRECEDENCE)}
VERDICT_LABELS: Final = {v.name: v.label for v in VERDICT_TABLE}
"""Words a person reads, for each verdict."""
NEXT_STEPS: Final = {v.name: v.next_step for v in VERDICT_TABLE}
"""The safe next step shown to the operator (docs/architecture.md, Verdicts)."""
VERDICT_BOUNDARY: Final = {v.name: v.boundary for v in VERDICT_TABLE if v.boundary}
"""Which boundary a failure verdict belongs to (`failed_boundary` in the query API)."""

REASON_NEXT_STEPS: Final = {
    REASON_IGNORED_SAME_TURN: "The runtime takes one handoff per turn: ask for one at a time "
    "(or turn parallel tool calls off); re-send the ignored one if it is still needed.",
    REASON_TOOL_MISSING: "Block; give the agent that handoff, or stop the model asking for it.",
}
"""Next steps that depend on what happened, not only on the verdict (`handoff.reason`)."""

REJECTION_NEXT_STEPS: Final = {
    REJECTION_INVALID: "repair",
    REJECTION_STALE: "reload and regenerate",
    REJECTION_UNAUTHORIZED: "stop and escalate",
    REJECTION_NO_BUDGET: "stop and escalate",
    REJECTION_VAGUE_GOAL: "repair",
}

# --- the allowlist: name -> (type, bound) -----------------------------------------------

STR: Final = "str"
INT: Final = "int"
BOOL: Final = "bool"
STR_ARRAY: Final = "str[]"

MAX_ID_LEN: Final = 128
MAX_NAME_LEN: Final = 128
MAX_CODE_LEN: Final = 64
MAX_ARRAY_ITEMS: Final = 64

CODE_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
"""Bounded codes and key names: no spaces, so free text cannot pass for a code."""

MODEL_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.:/@+-]{1,128}$")
"""Model names (`gpt-4.1-mini`, `openai/gpt-4o`, `claude-sonnet-4@20250514`): no spaces,
so a sentence cannot pass for a model name."""

CONTROL_CHARS: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Characters no string value may hold (C0/C1 controls, DEL, line/paragraph separators).
A run id with a newline could be stored and listed but never looked up again (a URL path
cannot carry it); an agent name with one could forge a line in a log or a CSV."""


@dataclass(frozen=True)
class AttributeSpec:
    name: str
    type: str
    max_len: int = MAX_ID_LEN
    code: bool = False
    """Values must match CODE_PATTERN (identifiers-as-codes, no free text)."""
    values: tuple[str, ...] | None = None
    """Closed vocabulary, when there is one."""
    pattern: re.Pattern[str] | None = None
    """Strings must match this pattern too (model names: `MODEL_PATTERN`)."""
    minimum: int | None = None
    """Ints must be at least this (counts: 0)."""


def _spec(name: str, type_: str, **kw: object) -> tuple[str, AttributeSpec]:
    return name, AttributeSpec(name, type_, **kw)  # type: ignore[arg-type]


ATTRIBUTES: Final[dict[str, AttributeSpec]] = dict(
    [
        _spec(RUN_ID, STR),
        _spec(RUN_STATUS, STR, values=RUN_STATUSES),
        _spec(RUN_FINAL_AGENT, STR, max_len=MAX_NAME_LEN),
        _spec(RUN_TURNS, INT),
        _spec(RUN_STARTED, INT),
        _spec(HANDOFF_ID, STR),
        _spec(FROM_AGENT, STR, max_len=MAX_NAME_LEN),
        _spec(TO_AGENT, STR, max_len=MAX_NAME_LEN),
        _spec(TURN, INT),
        _spec(FINGERPRINT, STR, max_len=64, code=True),
        _spec(STATE_VERSION, INT),
        _spec(HISTORY_ITEMS_FORWARDED, INT),
        _spec(HISTORY_ITEMS_TOTAL, INT),
        _spec(ROUTE_DECLARED, BOOL),
        _spec(TOOL_CALL_ID, STR, code=True),
        _spec(CONTEXT_REQUIRED_KEYS, STR_ARRAY, max_len=MAX_CODE_LEN, code=True),
        _spec(CONTRACT_VERSION, STR, max_len=MAX_CODE_LEN, code=True),
        _spec(BUDGET_REMAINING, INT),
        _spec(REASON, STR, max_len=MAX_CODE_LEN, code=True),
        _spec(ROUTE_GOTO, STR, max_len=MAX_NAME_LEN),
        _spec(CONTROL_BEFORE, STR, max_len=MAX_NAME_LEN),
        _spec(CONTROL_AFTER, STR, max_len=MAX_NAME_LEN),
        _spec(TOOL_CALL_CLOSED, BOOL),
        _spec(DESTINATION_STARTED, BOOL),
        _spec(CONTEXT_MISSING_KEYS, STR_ARRAY, max_len=MAX_CODE_LEN, code=True),
        _spec(VERDICT, STR, values=PRECEDENCE),
        _spec(REJECTION_REASON, STR, values=REJECTION_REASONS),
        _spec(REJECTION_FIELDS, STR_ARRAY, max_len=MAX_CODE_LEN, code=True),
        _spec(DESTINATION_CLAIMS_DONE, BOOL),
        _spec(WAIT_OWNER, STR, max_len=MAX_NAME_LEN, code=True),
        _spec(WAIT_REASON, STR, max_len=MAX_CODE_LEN, code=True),
        _spec(WAIT_DEADLINE, INT),
        _spec(WAIT_RESUME_TOKEN_ID, STR, code=True),
        _spec(WAIT_STATE_PERSISTED, BOOL),
        _spec(WAIT_DECISION, STR, values=WAIT_DECISIONS),
        _spec(OUTCOME_VERIFIER, STR, max_len=MAX_CODE_LEN, code=True),
        _spec(OUTCOME_RESULT, STR, values=OUTCOME_RESULTS),
        _spec(OUTCOME_RECEIPT_ID, STR, code=True),
        _spec(GEN_AI_AGENT_NAME, STR, max_len=MAX_NAME_LEN),
        _spec(GEN_AI_CONVERSATION_ID, STR, code=True),
        # Added in store steps 4-6 (new columns go last, as ALTER TABLE appends them).
        _spec(RUN_OUTCOME_REQUIRED, BOOL),
        _spec(KIND, STR, values=KINDS),
        _spec(UNOBSERVED, STR_ARRAY, max_len=MAX_CODE_LEN, code=True),
        # Added in store step 9 (foreign spans, docs/foreign-spans.md).
        _spec(SOURCE, STR, max_len=MAX_CODE_LEN, code=True),
        # Added in store step 12 (usage, docs/semconv.md "Usage").
        _spec(GEN_AI_USAGE_INPUT_TOKENS, INT, minimum=0),
        _spec(GEN_AI_USAGE_OUTPUT_TOKENS, INT, minimum=0),
        _spec(USAGE_MODEL_CALLS, INT, minimum=0),
        _spec(GEN_AI_REQUEST_MODEL, STR, max_len=MAX_NAME_LEN, pattern=MODEL_PATTERN),
        # Added in store step 13 (turns and services, docs/semconv.md "Turns", docs/a2a.md).
        _spec(RUN_ENTRY_AGENTS, STR_ARRAY, max_len=MAX_NAME_LEN),
        _spec(A2A_TASK_ID, STR, code=True),
        _spec(A2A_TASK_STATE, STR, values=A2A_STATES),
    ]
)
"""Every span attribute allowed on the wire. Anything else is dropped and counted."""

RESOURCE_ATTRIBUTES: Final = (SERVICE_NAME,)
"""Resource attributes the collector keeps; all others are dropped and counted."""


def check_value(spec: AttributeSpec, value: object) -> object | None:
    """Return `value` if it fits `spec` (type, bound, vocabulary), else None.

    Agent names may hold spaces ("Billing agent") but are bounded in length; codes,
    ids and key names may not, which keeps a sentence from passing for an identifier.
    No string may hold a control character (`CONTROL_CHARS`).
    """
    t = spec.type
    if t == STR:
        if type(value) is not str or not value or len(value) > spec.max_len:
            return None
        if spec.values is not None and value not in spec.values:
            return None
        if spec.code and not CODE_PATTERN.match(value):
            return None
        if spec.pattern is not None and not spec.pattern.match(value):
            return None
        if CONTROL_CHARS.search(value):
            return None
        return value
    if t == INT:
        # bool is an int subclass; a flag is not a count.
        if type(value) is not int or not (-(2**63) <= value < 2**63):
            return None
        if spec.minimum is not None and value < spec.minimum:
            return None
        return value
    if t == BOOL:
        return value if type(value) is bool else None
    if t == STR_ARRAY:
        if not isinstance(value, (list, tuple)) or len(value) > MAX_ARRAY_ITEMS:
            return None
        for item in value:
            if type(item) is not str or not item or len(item) > spec.max_len:
                return None
            # Key names are codes; agent names (`run.entry_agents`) may hold spaces.
            if spec.code and not CODE_PATTERN.match(item):
                return None
            if CONTROL_CHARS.search(item):
                return None
        return tuple(value)
    return None


# --- notification events (collector → webhooks; docs/alerts.md) --------------------------
# Not span names: what the collector's notifier posts when a verdict asks a person to act.
# Each names the moment, not the verdict, because one verdict can start several (a wait is
# checkpointed, then goes overdue).

NOTIFY_WAIT_CHECKPOINTED: Final = "wait_checkpointed"
"""A wait was checkpointed with all five facts: tell its owner (routed by `wait.owner`)."""
NOTIFY_APPROVAL_OVERDUE: Final = "approval_overdue"
"""The wait's deadline passed without a decision: escalate to the owner."""
NOTIFY_WAIT_UNCERTAIN: Final = "wait_uncertain"
"""A wait lacks an owner, reason, future deadline, resume token or persisted state."""
NOTIFY_RUN_LOOPING: Final = "run_looping"
"""A run repeats work without progress."""
NOTIFY_RUN_STUCK: Final = "run_stuck"
"""A run in flight has been silent for longer than N × the grace window."""
NOTIFY_EVENTS: Final = (
    NOTIFY_WAIT_CHECKPOINTED,
    NOTIFY_APPROVAL_OVERDUE,
    NOTIFY_WAIT_UNCERTAIN,
    NOTIFY_RUN_LOOPING,
    NOTIFY_RUN_STUCK,
)

ACK_NOTES: Final = ("investigating", "known_issue", "expected", "mitigated", "false_alarm")
"""Why an operator acknowledged (silenced) a stuck run, a loop or an overdue wait: the
`note` of an acknowledgement (docs/alerts.md, "Acknowledge and silence"). A closed set of
codes, never free text, so an acknowledgement holds no content."""


# --- who may see what (docs/security.md) --------------------------------------------------

SCOPE_HEADER: Final = "X-Handoffscope-Services"
"""Request header narrowing one query API request to some services: a comma-separated list
of `service.name` values, each percent-encoded (so a comma in a name survives). Intersected
with the credential's own services; an empty value means none. The dashboard sends it for a
person signed in through OpenID Connect; any client may, as it can only see less."""
