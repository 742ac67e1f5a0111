"""Evidence merging: spans in, each handoff's, wait's and run's merged facts out.

Pure and in memory, no I/O — the health engine (`engine/__init__.py`) feeds it batches of
stored spans; `evaluate.py` judges the merged run; tests drive both directly.

Merging is order-free and idempotent, because evidence arrives in any order, minutes
apart, and a re-sent span must not change anything. Every attribute therefore merges
by a rule that is commutative and idempotent:

- FIRST: the value of the earliest span (by start, then end time; ties broken by the
  value) — for identity facts the sender states once (agents, turn, fingerprint, route).
- LAST: the value of the latest span (by end, then start time) — for facts restated as
  they evolve (a wait's deadline and decision; the run's status, where between equal
  times a terminal status beats `started`).
- ALL (sticky false): any `false` wins, so a later green flag never hides an earlier
  failure (`route.declared`, `tool_call.closed`, `destination.started`).
- ANY, UNION, MIN, MAX: the obvious set/extreme rules.
- STATUS: LAST, except that a terminal state beats a non-terminal one whatever the times
  (the run's status; an A2A task's state, reported by two services whose clocks differ).

Outcome spans merge per verifier: the latest result of each verifier counts, and a
run (or handoff) passes when some verifier passed and none's latest result is `fail`.
An outcome span without `handoff.id` belongs to the run only; with it, to both.

Some sources tie a handoff to nothing but the agent run that follows it: `pair_arrivals`
and `pair_senders` (at the end) pair requests with those runs, order-free like the merge.

Memory matters (the engine holds the recently active runs): a handoff's merged facts
are two flat lists indexed by field, the order keys of one span are one tuple shared by
every field that span set, and names from small vocabularies are interned.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow.compute as pc

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.verdicts import (
    HandoffEvidence,
    Timeline,
)

from ..store.records import column_name, evidence_from, evidence_picker, run_key
from .usage import Loose, Report, Usage

FIRST, LAST, ALL, ANY, UNION, MIN, MAX, STATUS = range(8)
SPAN_WAIT, SPAN_ACCEPT = sc.SPAN_WAIT, sc.SPAN_ACCEPT

HANDOFF_ATTRIBUTES: dict[str, tuple[str, int]] = {
    sc.FROM_AGENT: ("from_agent", FIRST),
    sc.TO_AGENT: ("to_agent", FIRST),
    sc.TURN: ("turn", FIRST),
    sc.FINGERPRINT: ("fingerprint", FIRST),
    sc.STATE_VERSION: ("state_version", FIRST),
    sc.HISTORY_ITEMS_FORWARDED: ("history_items_forwarded", FIRST),
    sc.HISTORY_ITEMS_TOTAL: ("history_items_total", FIRST),
    sc.ROUTE_DECLARED: ("route_declared", ALL),
    sc.TOOL_CALL_ID: ("tool_call_id", FIRST),
    sc.CONTEXT_REQUIRED_KEYS: ("required_keys", UNION),
    sc.CONTRACT_VERSION: ("contract_version", FIRST),
    sc.REASON: ("reason", FIRST),
    sc.KIND: ("kind", FIRST),
    sc.UNOBSERVED: ("unobserved", UNION),
    sc.ROUTE_GOTO: ("route_goto", FIRST),
    sc.CONTROL_BEFORE: ("control_before", FIRST),
    sc.CONTROL_AFTER: ("control_after", FIRST),
    sc.TOOL_CALL_CLOSED: ("tool_call_closed", ALL),
    sc.DESTINATION_STARTED: ("destination_started", ALL),
    sc.CONTEXT_MISSING_KEYS: ("missing_keys", UNION),
    sc.REJECTION_REASON: ("rejection_reason", FIRST),
    sc.REJECTION_FIELDS: ("rejection_fields", UNION),
    sc.DESTINATION_CLAIMS_DONE: ("destination_claims_done", ANY),
    sc.BUDGET_REMAINING: ("budget_remaining", FIRST),
    sc.A2A_TASK_ID: ("task_id", FIRST),
    sc.A2A_TASK_STATE: ("task_state", STATUS),
}
"""Span attribute -> (field, merge rule) for evidence that belongs to one handoff."""

WAIT_ATTRIBUTES: dict[str, tuple[str, int]] = {
    sc.WAIT_OWNER: ("wait_owner", LAST),
    sc.WAIT_REASON: ("wait_reason", LAST),
    sc.WAIT_DEADLINE: ("wait_deadline_ns", LAST),
    sc.WAIT_RESUME_TOKEN_ID: ("wait_resume_token_id", LAST),
    sc.WAIT_STATE_PERSISTED: ("wait_state_persisted", LAST),
    sc.WAIT_DECISION: ("wait_decision", LAST),
}
"""A wait belongs to its handoff, or to the run when the span has no `handoff.id`; waits are
told apart by their resume token, so a second wait never inherits the first one's decision."""

RUN_ATTRIBUTES: dict[str, tuple[str, int]] = {
    sc.RUN_STATUS: ("status", STATUS),
    sc.RUN_FINAL_AGENT: ("final_agent", LAST),
    sc.RUN_TURNS: ("turns", MAX),
    sc.RUN_STARTED: ("started", MIN),
    sc.RUN_OUTCOME_REQUIRED: ("outcome_required", MAX),
    sc.SOURCE: ("source", MIN),
    sc.GEN_AI_CONVERSATION_ID: ("conversation_id", MIN),
    sc.RUN_ENTRY_AGENTS: ("entry_agents", UNION),
}
"""Run facts, taken from any span of the run. Also one read by span name: the run's
`start_agent` is the `gen_ai.agent.name` of its earliest `handoff.run` span that says
`started` (`merge_spans`)."""

INTERNED = frozenset(
    {
        sc.FROM_AGENT,
        sc.TO_AGENT,
        sc.CONTRACT_VERSION,
        sc.REASON,
        sc.KIND,
        sc.ROUTE_GOTO,
        sc.CONTROL_BEFORE,
        sc.CONTROL_AFTER,
        sc.REJECTION_REASON,
        sc.WAIT_OWNER,
        sc.WAIT_REASON,
        sc.WAIT_DECISION,
        sc.RUN_STATUS,
        sc.RUN_FINAL_AGENT,
        sc.GEN_AI_AGENT_NAME,
        sc.SOURCE,
        sc.GEN_AI_REQUEST_MODEL,
    }
)
"""Attributes whose values repeat across many handoffs (agent names, codes)."""

FIELDS: tuple[str, ...] = tuple(
    f for f, _ in (*HANDOFF_ATTRIBUTES.values(), *WAIT_ATTRIBUTES.values())
)
F: dict[str, int] = {name: i for i, name in enumerate(FIELDS)}
"""Field name -> index into HandoffState.vals / .keys."""

USAGE_ATTRIBUTES = (
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.USAGE_MODEL_CALLS,
    sc.GEN_AI_REQUEST_MODEL,
)
"""A usage report, in `usage.Report`'s order: on a request, the sender's leg; on a span
naming no handoff, a report the run places by its agent and time (engine/usage.py)."""

TERMINAL_STATUSES = frozenset(sc.RUN_STATUSES) - {sc.RUN_STATUS_STARTED}
TERMINAL_TASK_STATES = frozenset(
    (sc.A2A_COMPLETED, sc.A2A_REJECTED, sc.A2A_FAILED, sc.A2A_CANCELED)
)
FAILED_STATUSES = frozenset({sc.RUN_STATUS_FAILED, sc.RUN_STATUS_MAX_TURNS})


def _merge(
    vals: list, keys: list, j: int, rule: int, value, span_key: tuple, last_key: tuple
) -> bool:
    """Merge one value into slot j; return True when the slot changed.

    `span_key` is (start, end) of the span and `last_key` (end, start), each one tuple
    shared by every slot the span sets.
    """
    old = vals[j]
    if rule == STATUS:
        k = keys[j]
        cand = (value in TERMINAL_TASK_STATES, *last_key)
        if old is None or cand > k or (cand == k and value > old):
            vals[j], keys[j] = value, cand
            return value != old
        return False
    if rule == FIRST:
        k = keys[j]
        if old is None or span_key < k or (span_key == k and value < old):
            vals[j], keys[j] = value, span_key
            return value != old
        return False
    if rule == LAST:
        k = keys[j]
        if old is None or last_key > k or (last_key == k and value > old):
            vals[j], keys[j] = value, last_key
            return value != old
        return False
    if rule == ALL:
        new = value if old is None else (old and value)
    elif rule == ANY:
        new = bool(old) or value
    elif rule == UNION:
        new = tuple(sorted(set(old or ()) | set(value)))
    elif rule == MIN:
        new = value if old is None else min(old, value)
    else:
        new = value if old is None else max(old, value)
    if new != old or (old is None and new is not None):
        vals[j] = new
        return True
    return False


def outcome_summary(outcomes: dict[str, tuple] | None) -> tuple[str | None, str | None]:
    """(result, verifier) of merged outcomes: fail if any verifier's latest is fail."""
    if not outcomes:
        return None, None
    if len(outcomes) == 1:  # the common case, without the sort
        ((name, (_end, _start, res)),) = outcomes.items()
        if res == sc.OUTCOME_FAIL or res == sc.OUTCOME_PASS:
            return res, name or None
        return None, None
    result = verifier = None
    for name, (_end, _start, res) in sorted(outcomes.items()):
        if res == sc.OUTCOME_FAIL:
            return sc.OUTCOME_FAIL, name or None
        if res == sc.OUTCOME_PASS and result is None:
            result, verifier = res, name or None
    return result, verifier


class HandoffState:
    """Merged evidence of one handoff (or of a run-level wait, with handoff_id None)."""

    __slots__ = (
        "handoff_id",
        "first_seen_ns",
        "last_seen_ns",
        "vals",
        "keys",
        "outcomes",
        "wait_first_ns",
        "dirty",
        "ctx",
        "timeline",
        "wait_timeline",
        "row_hash",
        "row_seq",
        "wait_hash",
        "wait_row_seq",
        "daily_key",
        "edge_key",
        "token",
        "wait_keys",
        "usage",
        "leg",
        "edge_usage",
    )

    def __init__(self, handoff_id: str | None, token: str | None = None) -> None:
        self.handoff_id = handoff_id
        self.token = token
        """A wait's resume token (its identity within the run and handoff)."""
        self.wait_keys: list[tuple[str | None, str | None]] | None = None
        """A handoff's waits (keys into RunState.waits)."""
        self.first_seen_ns: int | None = None
        self.last_seen_ns: int | None = None
        self.vals: list = [None] * len(FIELDS)
        self.keys: list = [None] * len(FIELDS)
        self.outcomes: dict[str, tuple] | None = None
        self.wait_first_ns: int | None = None
        # Evaluation cache: the context the last verdict was judged in and its result,
        # so a run touched again re-judges only the handoffs whose inputs changed.
        self.dirty = True
        self.ctx: tuple | None = None
        self.timeline: Timeline | None = None
        self.wait_timeline: Timeline | None = None
        # What is persisted (a hash of the row and its row_seq), so the engine rewrites
        # a row only when it changed and deletes the old one by its sequence number.
        self.row_hash: int | None = None
        self.row_seq: int | None = None
        self.wait_hash: int | None = None
        self.wait_row_seq: int | None = None
        self.daily_key: tuple | None = None
        self.edge_key: tuple | None = None
        self.usage: tuple[tuple, Report] | None = None
        """What its request reported of the sender's leg (FIRST: (span key, report))."""
        self.leg: Usage | None = None
        """Its destination's leg (engine/usage.py), set when the run is evaluated."""
        self.edge_usage: tuple[int, ...] | None = None
        """The leg's sums counted in its edge rollup (beside `edge_key`)."""

    def get(self, field: str):
        return self.vals[F[field]]

    @property
    def wait_open(self) -> bool:
        return self.wait_first_ns is not None and self.vals[_WAIT_DECISION] is None

    def evidence(
        self,
        run_id: str,
        wait: HandoffState | None = None,
        fallback: HandoffState | None = None,
    ) -> HandoffEvidence:
        """The merged evidence; a handoff's wait facts come from `wait` (its latest wait),
        a wait's own from itself; facts it lacks come from `fallback`, the token-less wait
        spans of the same handoff (see RunState.loose)."""
        v = self.vals
        w = (wait or self).vals
        if fallback is not None:
            fb = fallback.vals
            w = [x if x is not None or j not in _WAIT_SLOTS else fb[j] for j, x in enumerate(w)]
        # The same builder that rebuilds a stored row's evidence (store/records.py), fed
        # the merged facts picked by name: the slots are named as the handoffs columns.
        # A wait's facts are the slots after the handoff's own (see _WAIT_FROM).
        facts = v if w is v else [*v[:_WAIT_FROM], *w[_WAIT_FROM:]]
        return evidence_from(
            _PICK_EVIDENCE(
                (
                    *facts,
                    run_id,
                    self.handoff_id or "",
                    self.first_seen_ns,
                    outcome_summary(self.outcomes)[0],
                    (wait or self).wait_first_ns is not None,
                    *_JUDGED_IN_CONTEXT,
                )
            )
        )


_JUDGED_IN_CONTEXT = (False, False, None, False)
"""loop, run_stopped, run_status, claims_done: the run decides them (`_judge` sets them
from the run's context)."""
_PICK_EVIDENCE = evidence_picker(
    (
        *FIELDS,
        "run_id",
        "handoff_id",
        "first_seen_ns",
        "outcome_result",
        "wait_seen",
        "loop",
        "run_stopped",
        "run_status",
        "claims_done",
    )
)

_FROM, _TO, _STARTED = F["from_agent"], F["to_agent"], F["destination_started"]
_WAIT_DECISION = F["wait_decision"]
_WAIT_SLOTS = frozenset(F[f] for f, _ in WAIT_ATTRIBUTES.values())
_WAIT_FROM = len(HANDOFF_ATTRIBUTES)
"""FIELDS lists the handoff's own facts, then a wait's: the wait slots are the tail."""


class RunState:
    """Everything merged for one run: run facts, run-level outcomes and wait, handoffs."""

    __slots__ = (
        "run_id",
        "key",
        "service",
        "first_seen_ns",
        "last_seen_ns",
        "min_received_ns",
        "max_received_ns",
        "vals",
        "outcomes",
        "waits",
        "handoffs",
        "arrivals",
        "row_hash",
        "row_seq",
        "tokened",
        "capped",
        "refused_spans",
        "usage",
        "has_usage",
        "daily_key",
        "daily_usage",
        "turn",
    )

    def __init__(self, run_id: str, key: int | None = None) -> None:
        self.run_id = run_id
        self.key = run_key(run_id) if key is None else key
        self.service: tuple | None = None
        self.first_seen_ns: int | None = None
        self.last_seen_ns: int | None = None
        self.min_received_ns: int | None = None
        self.max_received_ns: int | None = None
        self.vals: dict = {}
        self.outcomes: dict[str, tuple] | None = None
        self.waits: dict[tuple[str | None, str | None], HandoffState] = {}
        """Every wait of the run by (handoff id or None, resume token or None)."""
        self.handoffs: dict[str, HandoffState] = {}
        self.arrivals: set[tuple[int, int, str]] | None = None
        """Arrivals (start, end, agent): admissions that name no handoff (see `pair_arrivals`)."""
        self.row_hash: int | None = None
        self.row_seq: int | None = None
        self.tokened: dict[str | None, list[tuple[str | None, str | None]]] = {}
        """Keys of the token-bearing waits per handoff id (None: the run's own), so
        `loose` asks one handoff's waits, not every wait of the run."""
        self.capped = False
        """Evidence of handoffs beyond `max_handoffs` reached this run and was not merged."""
        self.refused_spans = 0
        """Spans refused for that reason since the last time the engine counted them."""
        self.usage: dict[tuple, Loose] | None = None
        """Usage reports naming no handoff (`handoff.run`, `handoff.usage`), by span
        (start, end, name, agent): a replayed span lands on its own key, counted once."""
        self.has_usage = False
        """Some span of the run reported usage (else evaluation skips the legs)."""
        self.daily_key: tuple | None = None
        self.daily_usage: tuple[int, ...] | None = None
        """The run's bucket and figures counted in the `run_daily` rollup."""
        self.turn: tuple | None = None
        """What the run's turn is told from, as last written (engine/turns.py, `facts`)."""

    def get(self, field: str):
        v = self.vals.get(field)
        return v[-1] if isinstance(v, tuple) else v

    @property
    def finished(self) -> bool:
        """Its latest run status is terminal (completed, failed, ...): evicted first."""
        status = self.vals.get("status")
        return status is not None and status[-1] in TERMINAL_STATUSES

    @property
    def size(self) -> int:
        """Weight for the memory bound: one per handoff and wait, plus the run itself."""
        return 1 + len(self.handoffs) + len(self.waits)

    def latest_wait(self, h: HandoffState) -> HandoffState | None:
        """The handoff's most recently checkpointed wait (its verdict speaks for it)."""
        if not h.wait_keys:
            return None
        waits = [w for w in (self.waits[k] for k in h.wait_keys) if not self.loose(w)]
        if not waits:
            return None
        return max(waits, key=lambda w: (w.wait_first_ns or 0, w.token or ""))

    def loose(self, w: HandoffState) -> bool:
        """Wait spans without a resume token, beside waits that have one: no wait of their
        own — their facts (a decision, a deadline restated) fill in what the token-bearing
        waits checkpointed before them lack."""
        if w.token is not None:
            return False
        return bool(self.tokened.get(w.handoff_id))

    def fallback(self, w: HandoffState) -> HandoffState | None:
        """The loose facts that apply to wait `w` (None: none)."""
        if w.token is None:
            return None
        loose = self.waits.get((w.handoff_id, None))
        if loose is None or (loose.wait_first_ns or 0) < (w.wait_first_ns or 0):
            return None  # stated before this wait was checkpointed: not about this one
        return loose


def _merge_run(vals: dict, field: str, rule: int, value, start: int, end: int) -> None:
    old = vals.get(field)
    if rule in (LAST, STATUS):
        # Between run spans ending at the same instant, a terminal status beats `started`.
        cand = (end, start, rule == STATUS and value in TERMINAL_STATUSES, value)
        if old is None or cand > old:
            vals[field] = cand
    elif rule == MIN:
        vals[field] = value if old is None else min(old, value)
    elif rule == UNION:
        vals[field] = tuple(sorted(set(old or ()) | set(value)))
    else:
        vals[field] = value if old is None else max(old, value)


_MERGED_ATTRIBUTES = (
    *HANDOFF_ATTRIBUTES,
    *WAIT_ATTRIBUTES,
    *RUN_ATTRIBUTES,
    sc.OUTCOME_RESULT,
    sc.OUTCOME_VERIFIER,
    sc.GEN_AI_AGENT_NAME,
    *USAGE_ATTRIBUTES,
)
"""The attributes the merge reads (each a column of the spans table)."""


@dataclass
class SpanColumns:
    """A batch of spans as Python lists, one per spans-table column the engine reads."""

    n: int
    run_id: list
    handoff_id: list
    name: list
    service: list
    start_ns: list
    end_ns: list
    received_ns: list
    attrs: dict[str, tuple[list[int], list]]
    """attribute name -> (row indices, values) of the rows that carry it (sparse: most
    attributes are on few spans, so merging visits only those)."""

    @staticmethod
    def columns_read() -> frozenset[str]:
        """The spans-table columns `from_arrow` reads: all a judge's worker is sent."""
        return frozenset(
            (
                column_name(sc.RUN_ID),
                column_name(sc.HANDOFF_ID),
                "name",
                "service",
                "start_ns",
                "end_ns",
                "received_ns",
                *(column_name(a) for a in _MERGED_ATTRIBUTES),
            )
        )

    @classmethod
    def from_arrow(cls, table) -> SpanColumns:
        names = set(table.column_names)

        def col(name: str) -> list:
            if name not in names:
                return [None] * table.num_rows
            return table.column(name).to_pylist()

        attrs = {}
        for attr in _MERGED_ATTRIBUTES:
            c = column_name(attr)
            if c not in names:
                continue
            arr = table.column(c)
            if arr.null_count == len(arr):
                continue
            if arr.null_count:
                idx = pc.indices_nonzero(pc.is_valid(arr))
                values = arr.take(idx).to_pylist()
                rows = idx.to_pylist()
            else:
                values = arr.to_pylist()
                rows = list(range(len(values)))
            if attr in INTERNED:
                values = [sys.intern(v) for v in values]
            attrs[attr] = (rows, values)
        return cls(
            n=table.num_rows,
            run_id=col(column_name(sc.RUN_ID)),
            handoff_id=col(column_name(sc.HANDOFF_ID)),
            name=col("name"),
            service=[v if v is None else sys.intern(v) for v in col("service")],
            start_ns=col("start_ns"),
            end_ns=col("end_ns"),
            received_ns=col("received_ns"),
            attrs=attrs,
        )


def merge_spans(
    runs: dict[str, RunState],
    spans: SpanColumns,
    outcomes_seen: dict[str, int] | None = None,
    *,
    max_handoffs: int = 0,
    admitted: dict[str, set[str]] | None = None,
) -> set[str]:
    """Merge a batch into `runs` (which must already hold every run of the batch).

    Returns the ids of the runs touched. Spans without a run id cannot be attributed
    and are skipped (the allowlist keeps them out in the first place). `outcomes_seen`,
    when given, gets the earliest outcome start per service of this batch.

    `max_handoffs` (0: no cap) bounds the handoffs (and delegations) of one run: a span
    that names a handoff id the run does not hold once it holds that many is refused —
    its handoff and wait evidence are not merged (its run facts still are), the run is
    marked `capped` and the span counted in `refused_spans`. Every cost of judging a run
    grows with its handoffs, so the cap is what bounds a run that grows without end.
    `admitted` (replaying a capped run's spans after a reload): the handoff ids its stored
    rows hold — a capped run admits exactly those, whatever order the replay brings.
    """
    n = spans.n
    targets: list[HandoffState | None] = [None] * n
    owners: list[RunState | None] = [None] * n
    span_keys: list = [None] * n
    last_keys: list = [None] * n
    touched: set[str] = set()
    starts, ends = spans.start_ns, spans.end_ns
    tokens: list = [None] * n
    for i, v in zip(*spans.attrs.get(sc.WAIT_RESUME_TOKEN_ID, ((), ())), strict=True):
        tokens[i] = v
    waits: list[HandoffState | None] = [None] * n
    refused = [False] * n
    arrivals: list[RunState | None] = [None] * n
    run_ids, services, received, hids, names = (
        spans.run_id,
        spans.service,
        spans.received_ns,
        spans.handoff_id,
        spans.name,
    )
    for i in range(n):
        rid = run_ids[i]
        if not rid:
            continue
        run = runs[rid]
        owners[i] = run
        touched.add(rid)
        start = starts[i] or 0
        end = ends[i] or start
        span_keys[i] = (start, end)
        last_keys[i] = (end, start)
        svc = services[i]
        if svc is not None:
            cur = run.service
            if cur is None or (start, end, svc) < cur:
                run.service = (start, end, svc)
        # Inline min/max (this loop runs once per span: calls here are its cost).
        if run.first_seen_ns is None or start < run.first_seen_ns:
            run.first_seen_ns = start
        if run.last_seen_ns is None or end > run.last_seen_ns:
            run.last_seen_ns = end
        rec = received[i]
        if rec is not None:
            if run.min_received_ns is None or rec < run.min_received_ns:
                run.min_received_ns = rec
            if run.max_received_ns is None or rec > run.max_received_ns:
                run.max_received_ns = rec
        hid = hids[i]
        if hid:
            h = run.handoffs.get(hid)
            if h is None and max_handoffs and _refused(run, hid, max_handoffs, admitted):
                run.capped = True
                run.refused_spans += 1
                refused[i] = True
                continue
            if h is None:
                h = run.handoffs[hid] = HandoffState(hid)
            if h.first_seen_ns is None or start < h.first_seen_ns:
                h.first_seen_ns, h.dirty = start, True
            if h.last_seen_ns is None or end > h.last_seen_ns:
                h.last_seen_ns, h.dirty = end, True
            targets[i] = h
        name = names[i]
        if name == SPAN_WAIT:
            waits[i] = _wait_target(run, hid or None, tokens[i], start)
        elif not hid and name == SPAN_ACCEPT:
            arrivals[i] = run

    for i, agent in zip(*spans.attrs.get(sc.GEN_AI_AGENT_NAME, ((), ())), strict=True):
        run = arrivals[i]
        if run is not None:
            if run.arrivals is None:
                run.arrivals = set()
            run.arrivals.add((span_keys[i][0], span_keys[i][1], agent))

    attrs = spans.attrs
    for attr, (field, rule) in HANDOFF_ATTRIBUTES.items():
        if attr not in attrs:
            continue
        j = F[field]
        order_keys = span_keys if rule == FIRST else last_keys  # decided once per attribute
        union = rule == UNION
        for i, v in zip(*attrs[attr], strict=True):
            h = targets[i]
            if h is None:
                continue
            vals = h.vals
            if vals[j] is None and rule != STATUS:  # the common case: first evidence
                vals[j] = tuple(sorted(set(v))) if union else v
                h.keys[j] = order_keys[i]
                h.dirty = True
            elif _merge(vals, h.keys, j, rule, v, span_keys[i], last_keys[i]):
                h.dirty = True
    for attr, (field, rule) in WAIT_ATTRIBUTES.items():
        if attr not in attrs:
            continue
        j = F[field]
        for i, v in zip(*attrs[attr], strict=True):
            owner = owners[i]
            if owner is not None and not refused[i]:
                w = waits[i]
                if w is None:  # wait facts on a span of another name
                    w = waits[i] = _wait_target(
                        owner, spans.handoff_id[i] or None, tokens[i], span_keys[i][0]
                    )
                if _merge(w.vals, w.keys, j, rule, v, span_keys[i], last_keys[i]):
                    w.dirty = True
                    h = targets[i]
                    if h is not None:
                        h.dirty = True
    for attr, (field, rule) in RUN_ATTRIBUTES.items():
        if attr not in attrs:
            continue
        for i, v in zip(*attrs[attr], strict=True):
            owner = owners[i]
            if owner is not None:
                _merge_run(owner.vals, field, rule, v, *span_keys[i])
    if sc.GEN_AI_AGENT_NAME in attrs and sc.RUN_STATUS in attrs:
        starts_at = {
            i
            for i, v in zip(*attrs[sc.RUN_STATUS], strict=True)
            if v == sc.RUN_STATUS_STARTED and names[i] == sc.SPAN_RUN
        }
        for i, agent in zip(*attrs[sc.GEN_AI_AGENT_NAME], strict=True):
            owner = owners[i]
            if i in starts_at and owner is not None:
                # MIN of (start, end, agent): the earliest start span's agent, order-free.
                _merge_run(owner.vals, "start_agent", MIN, (*span_keys[i], agent), 0, 0)
    if any(a in attrs for a in USAGE_ATTRIBUTES):
        _merge_usage(spans, owners, targets, refused, span_keys)
    if sc.OUTCOME_RESULT in attrs:
        verifiers: list = [None] * n
        for i, v in zip(*attrs.get(sc.OUTCOME_VERIFIER, ((), ())), strict=True):
            verifiers[i] = v
        for i, res in zip(*attrs[sc.OUTCOME_RESULT], strict=True):
            owner = owners[i]
            if owner is None:
                continue
            start, end = span_keys[i]
            svc = spans.service[i]
            if outcomes_seen is not None and svc is not None:
                prev = outcomes_seen.get(svc)
                outcomes_seen[svc] = start if prev is None else min(prev, start)
            cand = (end, start, res)
            name = verifiers[i] or ""
            for holder in (owner, targets[i]):
                if holder is None:
                    continue
                if holder.outcomes is None:
                    holder.outcomes = {}
                old = holder.outcomes.get(name)
                if old is None or cand > old:
                    holder.outcomes[name] = cand
                    if holder is not owner:
                        holder.dirty = True  # type: ignore[union-attr]
    return touched


def _merge_usage(
    spans: SpanColumns,
    owners: list[RunState | None],
    targets: list[HandoffState | None],
    refused: list[bool],
    span_keys: list,
) -> None:
    """The batch's usage reports: a handoff's (its request's, FIRST) or the run's (keyed by span)."""
    reports: dict[int, list] = {}
    for k, attr in enumerate(USAGE_ATTRIBUTES):
        for i, v in zip(*spans.attrs.get(attr, ((), ())), strict=True):
            slot = reports.get(i)
            if slot is None:
                slot = reports[i] = [None, None, None, None]
            slot[k] = v
    agents: dict[int, str] = {}
    if reports:
        agents = dict(zip(*spans.attrs.get(sc.GEN_AI_AGENT_NAME, ((), ())), strict=True))
    for i, vals in reports.items():
        run = owners[i]
        if run is None or refused[i]:
            continue
        report = Report(*vals)
        run.has_usage = True
        h = targets[i]
        key = span_keys[i]
        if h is not None:
            # FIRST by span; equal keys are the same span re-sent (same report).
            if h.usage is None or key < h.usage[0]:
                h.usage, h.dirty = (key, report), True
            continue
        name = spans.name[i]
        agent = agents.get(i) if name == sc.SPAN_USAGE else None
        if run.usage is None:
            run.usage = {}
        run.usage[(key[0], key[1], name, agent)] = Loose(key[0], agent, report)


def _refused(run: RunState, hid: str, cap: int, admitted: dict[str, set[str]] | None) -> bool:
    """A new handoff id for `run`: is it beyond the cap?"""
    if admitted is not None and run.run_id in admitted:
        return hid not in admitted[run.run_id]
    return len(run.handoffs) >= cap


def _wait_target(run: RunState, hid: str | None, token: str | None, start: int) -> HandoffState:
    key = (hid, token)
    w = run.waits.get(key)
    if w is None:
        w = run.waits[key] = HandoffState(hid, token)
        if token is not None:
            run.tokened.setdefault(hid, []).append(key)
        if hid is not None:
            h = run.handoffs[hid]
            h.wait_keys = [*(h.wait_keys or ()), key]
    if w.wait_first_ns is None or start < w.wait_first_ns:
        w.wait_first_ns, w.dirty = start, True
        if hid is not None:
            run.handoffs[hid].dirty = True
    return w


# --- pairing requests with the agent runs that follow them --------------------------------


def pair_arrivals(
    transfers: Sequence[HandoffState], arrivals: Iterable[tuple[int, int, str]] | None
) -> dict[str, str]:
    """Admit requests by the arrivals of their run: handoff id -> arriving agent.

    Some sources cannot put the admission on the request's handoff id: their spans tie
    a handoff to nothing but the agent run that follows it, which may arrive in another
    export (Traceloop names no destination at all; Logfire names it, but the destination's
    agent span names no handoff). Their translators emit each agent run as an *arrival*
    — a `handoff.accept` with `gen_ai.agent.name` and no `handoff.id` — and here every
    request that has no admission of its own, in run order, is admitted by the earliest
    unused arrival that started at or after it and is of its destination (any agent, when
    the request names none). Arrivals before the first request are the run's first agent.
    Order-free like the merge: the result depends only on the set of spans merged.
    """
    if not arrivals:
        return {}
    pending = sorted(arrivals)
    used = [False] * len(pending)
    out: dict[str, str] = {}
    for h in transfers:
        if h.vals[_STARTED] is not None or h.first_seen_ns is None:
            continue
        to = h.vals[_TO]
        for k, (start, _end, agent) in enumerate(pending):
            if not used[k] and start >= h.first_seen_ns and (to is None or agent == to):
                used[k] = True
                out[h.handoff_id or ""] = agent
                break
    return out


def pair_senders(
    transfers: Sequence[HandoffState], arrivals: Iterable[tuple[int, int, str]] | None
) -> dict[str, str]:
    """Name the sender of requests that name none: handoff id -> the agent before them.

    The mirror of `pair_arrivals`, for sources whose spans show a graph's agent runs in
    order but no span of the sender's side of a handoff (OpenInference's LangGraph node
    spans): their translators emit each agent run as an arrival, and every run after the
    first also as a request naming only its destination. Such a request was sent by the
    agent of the latest arrival that started strictly before it (its own arrival starts
    with it). None found (the first agent of a resumed trace): the sender stays unknown.
    Order-free like the merge: the result depends only on the set of spans merged.
    """
    if not arrivals:
        return {}
    pending: list[tuple[int, int, str]] | None = None
    out: dict[str, str] = {}
    for h in transfers:
        if h.vals[_FROM] is not None or h.first_seen_ns is None:
            continue
        if pending is None:
            pending = sorted(arrivals)
        k = bisect.bisect_left(pending, (h.first_seen_ns,))  # arrivals started before it
        if k:
            out[h.handoff_id or ""] = pending[k - 1][2]
    return out
