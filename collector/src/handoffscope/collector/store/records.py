"""One record per derived table, and the naming rules of stored rows, whatever the backend.

`HandoffRecord`, `RunRecord` and `WaitRecord` are the rows of `handoffs`, `runs` and
`waits` (after `row_seq`, which the engine numbers), field for field in the order the
DDL steps leave the table (`sql/engine/ddl/`; `tests/collector/test_records.py` applies
the steps to a fresh file and compares). Each field's annotation names its Arrow type
(`Text`, `Int`, `Int32`, `Flag`, `Texts`) and whether it may be NULL (`| None`); from that
one definition come the Arrow schema the engine inserts with (`schema`), the Arrow table
of a batch of rows (`table`), stored rows read back as records (`read`), and the
evidence a stored handoff was judged from (`handoff_evidence`, for the engine and the
query API alike). A column is added by adding its step *and* its field, at the end.

Why a NamedTuple rather than a dataclass: the engine hashes every row it builds to tell
a changed row from an unchanged one, and compares it with stored rows read back; a
NamedTuple hashes and compares as the plain tuple it is, and costs a tuple's memory.

Also here, because engine and query API both need them and neither may reach into the
other: `column_name` (the spans table's rule, attribute -> column) and `run_key` (the
64-bit key stored beside every run id).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import operator
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, NamedTuple, TypeVar

import pyarrow as pa

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.classify import HandoffEvidence

Text = Annotated[str, pa.string()]
Int = Annotated[int, pa.int64()]
Int32 = Annotated[int, pa.int32()]
Flag = Annotated[bool, pa.bool_()]
Real = Annotated[float, pa.float64()]
Texts = Annotated[tuple[str, ...], pa.list_(pa.string())]
"""A VARCHAR[] column: built as a tuple (hashable), stored as a list, read back as a tuple."""

ROW_SEQ = ("row_seq", pa.int64())
"""The first column of every derived table: the engine's sequence number of the row version."""


def column_name(attribute: str) -> str:
    """The `spans` column of a contract attribute: handoff.from_agent -> handoff_from_agent."""
    return attribute.replace(".", "_")


def run_key(run_id: str) -> int:
    """A stable signed 64-bit key of a run id, stored beside it so lookups compare integers.

    md5 rather than Python's `hash` (salted per process) or DuckDB's `hash` (free to
    change between versions): the key is persisted and must mean the same thing forever.
    """
    return int.from_bytes(hashlib.md5(run_id.encode()).digest()[8:], "little", signed=True)


PARTITIONS = 16
"""Runs fall into this many partitions, by `run_key % PARTITIONS`: the unit a judge holds
(the collectors of a PostgreSQL store share them out, engine/leased_judge.py; the worker
processes of `--judge-workers` split a collector's, engine/shards.py). Fixed — a run's
partition must not depend on how many judges there are — and written into PostgreSQL
store step 12 (sql/postgresql/ddl/0012_judge_partitions.sql) as its last number, 15."""


def partition_of(run_id: str | None) -> int:
    """A run's partition (a span with no run id: partition 0's judge reads it)."""
    return 0 if run_id is None else run_key(run_id) % PARTITIONS


class HandoffRecord(NamedTuple):
    """A row of `handoffs`: one version of one handoff's merged evidence and verdict timeline."""

    run_id: Text
    run_key: Int
    handoff_id: Text
    service: Text | None
    seq: Int32
    from_agent: Text | None
    to_agent: Text | None
    turn: Int | None
    first_seen_ns: Int
    last_seen_ns: Int
    fingerprint: Text | None
    state_version: Int | None
    history_items_forwarded: Int | None
    history_items_total: Int | None
    route_declared: Flag | None
    route_goto: Text | None
    control_before: Text | None
    control_after: Text | None
    tool_call_id: Text | None
    tool_call_closed: Flag | None
    required_keys: Texts
    missing_keys: Texts
    destination_started: Flag | None
    rejection_reason: Text | None
    rejection_fields: Texts
    reason: Text | None
    contract_version: Text | None
    loop: Flag
    run_stopped: Flag
    claims_done: Flag
    outcome_result: Text | None
    wait_seen: Flag
    wait_owner: Text | None
    wait_reason: Text | None
    wait_deadline_ns: Int | None
    wait_resume_token_id: Text | None
    wait_state_persisted: Flag | None
    wait_decision: Text | None
    verdict: Text
    flip1_ns: Int | None
    flip1_verdict: Text | None
    flip2_ns: Int | None
    flip2_verdict: Text | None
    unhealthy_from_ns: Int | None
    kind: Text | None
    unobserved: Texts
    run_status: Text | None
    input_tokens: Int | None
    """Usage of the leg it gave its destination (engine/usage.py; engine step 23)."""
    output_tokens: Int | None
    model_calls: Int | None
    cost_usd: Real | None
    model: Text | None
    task_id: Text | None
    """`a2a.task.id`: the A2A task a cross-service handoff became (engine step 24)."""
    task_state: Text | None
    """`a2a.task.state`, latest (a terminal state beats others)."""


class RunRecord(NamedTuple):
    """A row of `runs`: one version of a run's facts and verdict timeline."""

    run_id: Text
    run_key: Int
    service: Text | None
    first_seen_ns: Int
    last_seen_ns: Int
    min_received_ns: Int | None
    max_received_ns: Int | None
    started_ns: Int | None
    ended_ns: Int | None
    last_handoff_ns: Int | None
    status: Text | None
    final_agent: Text | None
    turns: Int | None
    current_agent: Text | None
    handoff_count: Int32
    path: Texts
    loop: Flag
    loop_cycle: Texts
    loop_repeats: Int32
    false_complete: Flag
    failed: Flag
    outcome_result: Text | None
    verifier: Text | None
    pending_approvals: Int32
    verdict: Text
    flip1_ns: Int | None
    flip1_verdict: Text | None
    flip2_ns: Int | None
    flip2_verdict: Text | None
    delegation_count: Int32
    unverified: Flag
    verification_expected: Flag
    unobserved: Texts
    handoffs_capped: Flag
    source: Text | None
    input_tokens: Int | None
    """Every leg's usage summed (engine step 23)."""
    output_tokens: Int | None
    model_calls: Int | None
    cost_usd: Real | None
    model: Text | None
    unpriced_models: Texts
    burned_input_tokens: Int | None
    """What its loop burned: the legs from the first repeat on."""
    burned_output_tokens: Int | None
    burned_model_calls: Int | None
    burned_cost_usd: Real | None
    budget_remaining: Int | None
    """Model calls left in the run's budget, as its latest request stated."""
    budget_total: Int | None
    """The budget that implies: calls up to that request plus what was left."""
    conversation_id: Text | None
    """`gen_ai.conversation.id` of the run's spans (engine step 24; docs/semconv.md "Turns")."""
    start_agent: Text | None
    """The first agent that ran: its `handoff.run` start span's, else its first sender."""
    first_to_agent: Text | None
    """Where its first handoff went (a turn re-routed to the previous final agent)."""
    entry_agents: Texts
    """`run.entry_agents` its shim declared."""


class WaitRecord(NamedTuple):
    """A row of `waits`: one version of an open or expired wait (the approvals view)."""

    run_id: Text
    run_key: Int
    handoff_id: Text | None
    service: Text | None
    from_agent: Text | None
    to_agent: Text | None
    owner: Text | None
    reason: Text | None
    deadline_ns: Int | None
    resume_token_id: Text | None
    state_persisted: Flag | None
    decision: Text | None
    checkpointed_ns: Int
    missing: Texts
    verdict: Text
    flip1_ns: Int | None
    flip1_verdict: Text | None


RECORDS: dict[str, type] = {"handoffs": HandoffRecord, "runs": RunRecord, "waits": WaitRecord}
"""Derived table -> its record."""


class Column(NamedTuple):
    name: str
    type: pa.DataType
    nullable: bool


@functools.cache
def columns(record: type) -> tuple[Column, ...]:
    """The record's columns (after row_seq), in order, read off its annotations."""
    hints = typing.get_type_hints(record, include_extras=True)
    out = []
    for name in record._fields:  # type: ignore[attr-defined]
        hint, nullable = hints[name], False
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            (hint,) = (a for a in typing.get_args(hint) if a is not type(None))
            nullable = True
        arrow_type = getattr(hint, "__metadata__", (None,))[0]
        if not isinstance(arrow_type, pa.DataType):
            raise TypeError(f"{record.__name__}.{name}: annotate with Text, Int, ... not {hint}")
        out.append(Column(name, arrow_type, nullable))
    return tuple(out)


@functools.cache
def schema(record: type) -> pa.Schema:
    """The Arrow schema of the table's rows, row_seq first (what the engine inserts BY NAME)."""
    return pa.schema([ROW_SEQ, *((c.name, c.type) for c in columns(record))])


R = TypeVar("R", bound=tuple)


def table(record: type[R], row_seqs: Sequence[int], rows: Sequence[R]) -> pa.Table:
    """One Arrow table of `rows` (records of `record`), each with its row_seq."""
    cols: list[Sequence[Any]] = (
        list(zip(*rows, strict=True)) if rows else [()] * len(columns(record))
    )
    return pa.Table.from_arrays(
        [
            pa.array(row_seqs, ROW_SEQ[1]),
            *(pa.array(c, type=col.type) for c, col in zip(cols, columns(record), strict=True)),
        ],
        schema=schema(record),
    )


def read(record: type[R], stored: pa.Table) -> list[R]:
    """Stored rows as records, lists as tuples: the shape the engine builds, to hash and compare."""
    if stored.num_rows == 0:
        return []
    cols = []
    for col in columns(record):
        values = stored.column(col.name).to_pylist()
        if pa.types.is_list(col.type):
            values = [v if v is None else tuple(v) for v in values]
        cols.append(values)
    make = record._make  # type: ignore[attr-defined]
    return [make(row) for row in zip(*cols, strict=True)]


# --- a stored handoff's evidence ------------------------------------------------------------

_EVIDENCE_FIELDS = tuple(f.name for f in dataclasses.fields(HandoffEvidence))
EVIDENCE_COLUMNS: tuple[str, ...] = tuple(n for n in _EVIDENCE_FIELDS if n != "requested")
"""Every `HandoffEvidence` field but `requested` (which follows from `to_agent`) is a
`handoffs` column of the same name: the row stores everything it was judged from."""
_REQUESTED = _EVIDENCE_FIELDS.index("requested")
_TO_AGENT = EVIDENCE_COLUMNS.index("to_agent")
_FROM_ROW = operator.itemgetter(*EVIDENCE_COLUMNS)


def handoff_evidence(row: Mapping[str, Any]) -> HandoffEvidence:
    """The evidence a stored `handoffs` row (a mapping by column name) was judged from."""
    return evidence_from(_FROM_ROW(row))


def evidence_picker(names: Sequence[str]) -> Callable[[Sequence[Any]], tuple]:
    """Picks the `EVIDENCE_COLUMNS`, in order, out of a sequence whose items are `names`
    (for `evidence_from`; a name missing from `names` is a ValueError here, at import)."""
    return operator.itemgetter(*(list(names).index(n) for n in EVIDENCE_COLUMNS))


def evidence_from(values: Sequence[Any]) -> HandoffEvidence:
    """`HandoffEvidence` of the values of `EVIDENCE_COLUMNS`, in that order: what a stored
    row (`handoff_evidence`) and the engine's merged facts (`evidence_picker`) both
    become. Positional, because the engine builds one per judged handoff (by keyword it
    cost twice as much)."""
    # mypy cannot count a starred sequence; EVIDENCE_COLUMNS is the dataclass's field order
    # without `requested`, inserted here (test_records checks the fields one by one).
    ev = HandoffEvidence(
        *values[:_REQUESTED],
        values[_TO_AGENT] is not None,
        *values[_REQUESTED:],  # type: ignore[call-arg]
    )
    ev.kind = ev.kind or sc.KIND_HANDOFF
    ev.required_keys = tuple(ev.required_keys or ())
    ev.missing_keys = tuple(ev.missing_keys or ())
    return ev
