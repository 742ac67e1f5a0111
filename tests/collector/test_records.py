"""The records of the derived tables (store/records.py) against the DDL and the engine.

The DDL is applied the way the collector applies it — every numbered step of the store
and of the engine, into a fresh DuckDB file — and each table's columns are compared with
its record, name, type and order. Rows the engine builds must survive the trip through
Arrow and DuckDB unchanged (the engine tells changed rows by their hash), and a stored
handoff row must hold everything its verdict was judged from (the query API rebuilds
the evidence from it). The engine builds rows and evidence positionally (the judge's hot
path); inputs tagged with their own names show each value lands in the field of its name.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import pyarrow as pa
import pytest
from test_engine import (
    Collector,
    accept,
    outcome,
    request,
    run_span,
    wait,
)

from handoffscope.collector import engine as E
from handoffscope.collector.engine import HealthEngine
from handoffscope.collector.engine.evidence import (
    WAIT_ATTRIBUTES,
    F,
    HandoffState,
    RunState,
)
from handoffscope.collector.engine.usage import Usage
from handoffscope.collector.store import records
from handoffscope.collector.store.duckdb_store import DuckDBStore
from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.classify import HandoffEvidence
from handoffscope.instrumentation.verdicts import Timeline, handoff_timeline

DUCKDB_TYPES = {
    pa.string(): "VARCHAR",
    pa.int64(): "BIGINT",
    pa.int32(): "INTEGER",
    pa.bool_(): "BOOLEAN",
    pa.float64(): "DOUBLE",
    pa.list_(pa.string()): "VARCHAR[]",
}


@pytest.fixture(scope="module")
def described(tmp_path_factory) -> dict[str, list[tuple[str, str, bool]]]:
    """(name, type, nullable) of every derived table's columns, from a fresh file."""
    store = DuckDBStore(tmp_path_factory.mktemp("ddl") / "fresh.duckdb")
    try:
        HealthEngine().install(store.con)
        return {
            table: [
                (name, type_, null == "YES")
                for name, type_, null, *_ in store.con.execute(f"DESCRIBE {table}").fetchall()
            ]
            for table in records.RECORDS
        }
    finally:
        store.close()


@pytest.mark.parametrize("table", sorted(records.RECORDS))
def test_the_ddl_has_exactly_the_records_columns_in_order(described, table: str) -> None:
    record = records.RECORDS[table]
    got = [(name, type_) for name, type_, _ in described[table]]
    want = [("row_seq", "BIGINT")] + [
        (c.name, DUCKDB_TYPES[c.type]) for c in records.columns(record)
    ]
    assert got == want
    assert records.schema(record).names == [name for name, _ in got]
    assert [str(f.type) for f in records.schema(record)][1:] == [
        str(c.type) for c in records.columns(record)
    ]


@pytest.mark.parametrize("table", sorted(records.RECORDS))
def test_a_not_null_column_is_never_optional_in_its_record(described, table: str) -> None:
    # The other way round need not hold: columns added by a later ALTER step are nullable
    # in the DDL (older rows lack them) although the engine always fills them.
    nullable = {c.name: c.nullable for c in records.columns(records.RECORDS[table])}
    not_null = [name for name, _, null in described[table] if not null and name != "row_seq"]
    assert not_null, "the DDL declares NOT NULL columns"
    assert [n for n in not_null if nullable[n]] == []


def test_every_evidence_field_is_a_handoffs_column() -> None:
    fields = {f.name for f in dataclasses.fields(HandoffEvidence)}
    assert set(records.EVIDENCE_COLUMNS) == fields - {"requested"}
    assert set(records.EVIDENCE_COLUMNS) <= set(records.HandoffRecord._fields)


def test_a_record_annotated_without_an_arrow_type_is_refused() -> None:
    class Bad(NamedTuple):
        name: str

    with pytest.raises(TypeError, match=r"Bad\.name"):
        records.columns(Bad)


def test_run_key_is_stable_forever() -> None:
    # Persisted beside every run id: a new key for an old id would orphan its rows.
    assert records.run_key("run-1") == -1789351133534394980
    assert records.run_key("") == 9098107892288553193


def _judged_run(tmp_path):
    c = Collector(tmp_path / "r.duckdb", grace_seconds=30)
    c.send(
        run_span("r1", sc.RUN_STATUS_STARTED),
        request("r1", "h1", "triage", "billing", turn=1, a={sc.CONTEXT_REQUIRED_KEYS: ["k"]}),
        accept("r1", "h1", a={sc.CONTEXT_MISSING_KEYS: ["k"]}),
        request("r1", "h2", "billing", "refunds", turn=2, at=3.0),
        wait("r1", "h2", at=4.0),
        request("r1", "h3", "refunds", "ghost", turn=3, at=6.0, declared=False),
        outcome("r1", sc.OUTCOME_PASS),
    )
    return c


def test_rows_read_back_are_the_rows_the_engine_built(tmp_path) -> None:
    c = _judged_run(tmp_path)
    try:
        for table, record in records.RECORDS.items():
            stored = c.store.con.sql(f"SELECT * FROM {table} ORDER BY row_seq").to_arrow_table()
            rows = records.read(record, stored)
            assert rows and all(isinstance(r, record) for r in rows)
            assert all(isinstance(v, tuple) for r in rows for v in r if isinstance(v, list | tuple))
            again = records.table(record, stored.column("row_seq").to_pylist(), rows)
            assert again.schema == records.schema(record)
            assert again.to_pylist() == stored.to_pylist()
        # The engine hashed the rows it built; a restart reloads the run, re-judges it and
        # compares the hashes of the rows read back: equal, so nothing is rewritten.
        c.restart()
        assert c.engine.stats["runs_reloaded"] == 1
        assert c.engine.stats["handoff_rows_written"] == 0
        assert c.engine.stats["run_rows_written"] == 0
    finally:
        c.store.close()


def test_a_stored_handoff_row_holds_what_its_verdict_was_judged_from(tmp_path) -> None:
    c = _judged_run(tmp_path)
    try:
        cur = c.store.con.execute("SELECT * FROM handoffs ORDER BY seq")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        c.store.close()
    verdicts = []
    for row in rows:
        ev = records.handoff_evidence(row)
        assert ev.requested is (row["to_agent"] is not None)
        assert isinstance(ev.required_keys, tuple) and isinstance(ev.missing_keys, tuple)
        tl = handoff_timeline(ev, 30)
        assert tuple(tl) == tuple(row[f] for f in tl._fields)
        verdicts.append(row["verdict"])
    # Three shapes, not one judged three times: missing context, an open wait, a route
    # that is not declared.
    assert verdicts == [sc.CONTEXT_INCOMPLETE, sc.WAITING_ON_APPROVAL, sc.ROUTE_REJECTED]


def _tag(name: str):
    return f"tag:{name}"


def _named(value, field: str) -> bool:
    """Does `value` carry the tag of `field` (or of the evidence fact it is stored from)?"""
    if isinstance(value, tuple):
        value = value[0] if value else None
    return value in (_tag(field), _tag(f"wait_{field}"))


def test_the_engines_positional_rows_put_each_value_in_its_field() -> None:
    # The engine builds rows positionally (by keyword cost the judge 5-10 %). Every input
    # here carries the name of the fact it holds, and inputs are named as the columns, so
    # a value in the wrong position shows up under a foreign name.
    run = RunState(_tag("run_id"), key=_tag("run_key"))  # type: ignore[arg-type]
    for name in ("first_seen_ns", "last_seen_ns", "min_received_ns", "max_received_ns"):
        setattr(run, name, _tag(name))
    run.capped = _tag("handoffs_capped")  # type: ignore[assignment]
    run.vals["conversation_id"] = _tag("conversation_id")
    run.vals["entry_agents"] = (_tag("entry_agents"),)
    h = HandoffState(_tag("handoff_id"))
    h.first_seen_ns, h.last_seen_ns = _tag("first_seen_ns"), _tag("last_seen_ns")  # type: ignore[assignment]
    h.wait_first_ns = _tag("checkpointed_ns")  # type: ignore[assignment]
    for name, j in F.items():
        h.vals[j] = (_tag(name),) if name in ("rejection_fields", "unobserved") else _tag(name)
    tl = Timeline(*(_tag(n) for n in Timeline._fields))
    h.timeline = tl
    ev = HandoffEvidence(**{f: _tag(f) for f in records.EVIDENCE_COLUMNS})
    ev.required_keys, ev.missing_keys = (_tag("required_keys"),), (_tag("missing_keys"),)
    usage_fields = ("input_tokens", "output_tokens", "model_calls", "cost_usd", "model")
    h.leg = Usage(*(_tag(n) for n in usage_fields), unpriced=())  # type: ignore[arg-type]

    row = E._handoff_row(run, _tag("service"), h, _tag("seq"), ev)  # type: ignore[arg-type]
    assert [f for f, v in row._asdict().items() if not _named(v, f)] == ["unhealthy_from_ns"]
    assert row.unhealthy_from_ns is None  # derived from the timeline: none of its verdicts fails

    view = E.RunView(
        **{
            f.name: [_tag(f.name)]
            if f.name in ("path", "loop_cycle", "unobserved")
            else _tag(f.name)
            for f in dataclasses.fields(E.RunView)
            if f.name not in ("handoffs", "waits", "timeline", "usage", "burned")
        },
        handoffs=[],
        waits=[],
        timeline=tl,
        usage=Usage(*(_tag(n) for n in usage_fields), unpriced=(_tag("unpriced_models"),)),  # type: ignore[arg-type]
        burned=Usage(*(_tag(f"burned_{n}") for n in usage_fields), unpriced=()),  # type: ignore[arg-type]
    )
    run_row = E._run_row(run, _tag("service"), view)  # type: ignore[arg-type]
    assert [f for f, v in run_row._asdict().items() if not _named(v, f)] == []

    wait_row = E._wait_row(run, _tag("service"), h, ev, tl)  # type: ignore[arg-type]
    assert [f for f, v in wait_row._asdict().items() if not _named(v, f)] == ["missing"]
    assert wait_row.missing == ("state_persisted",)  # a tag is not True: the one fact missing


def test_evidence_takes_each_field_from_the_column_or_fact_of_its_name() -> None:
    lists = ("required_keys", "missing_keys")
    row = {c: [_tag(c)] if c in lists else _tag(c) for c in records.HandoffRecord._fields}
    ev = records.handoff_evidence(row)
    assert ev.requested is True
    assert [f for f in records.EVIDENCE_COLUMNS if not _named(getattr(ev, f), f)] == []

    # The engine's merged facts: the handoff's own slots, its wait's slots from the wait.
    h, wait = HandoffState(_tag("handoff_id")), HandoffState(_tag("handoff_id"), "tok")
    h.first_seen_ns = _tag("first_seen_ns")  # type: ignore[assignment]
    wait_fields = {f for f, _ in WAIT_ATTRIBUTES.values()}
    for name, j in F.items():
        (wait if name in wait_fields else h).vals[j] = (
            (_tag(name),) if name in lists else _tag(name)
        )
    wait.wait_first_ns = 1
    ev = h.evidence(_tag("run_id"), wait)
    decided_by_the_run = {"loop", "run_stopped", "run_status", "claims_done"}
    derived = {"outcome_result", "wait_seen"}  # from the verifiers and the wait's presence
    wrong = [f for f in records.EVIDENCE_COLUMNS if not _named(getattr(ev, f), f)]
    assert sorted(wrong) == sorted(decided_by_the_run | derived)
    assert (ev.loop, ev.run_stopped, ev.run_status, ev.claims_done) == (False, False, None, False)
    assert (ev.outcome_result, ev.wait_seen, ev.requested) == (None, True, True)
