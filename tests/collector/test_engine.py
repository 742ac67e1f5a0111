"""The health engine as a unit: real store, spans in, derived rows out.

The store is a DuckDB file, or a fresh PostgreSQL database under `--store postgresql`
(the `store_target` fixture, tests/conftest.py): the same assertions on both, with the
tests' own SQL written in what both read alike. The engine is fed exactly as the writer
feeds it — spans inserted by the store and handed over inside the same transaction — and
the derived tables are read back with SQL, judging time-based verdicts through the same `hs_verdict_at` macro the query API
uses. End-to-end coverage over OTLP lives in test_api.py.
"""

from __future__ import annotations

import itertools
import random
import secrets
import time

import pytest
from support import evidence as ev
from support.stores import is_dsn, open_store, pg_sql

from handoffscope.collector.engine import FINISHED_SHARE, HealthEngine
from handoffscope.collector.engine.shards import ShardedEngine
from handoffscope.collector.engine.worker import ProcessEngine
from handoffscope.collector.store.spans import ATTRIBUTE_COLUMNS, SPAN_SCHEMA, build_spans_table
from handoffscope.instrumentation import semconv as sc

S = 10**9
NOW0 = time.time_ns()
T0 = NOW0 - 3600 * S  # spans start an hour ago: far past any grace


def span(
    name: str,
    run: str,
    handoff: str | None = None,
    *,
    at: float = 0.0,
    dur: float = 0.001,
    service: str = "svc",
    **attrs,
) -> dict:
    """One evidence span `at` seconds after T0; contract attributes go in `a={sc.X: value}`."""
    start = T0 + int(at * S)
    row = {
        "name": name,
        "start": start,
        "end": start + int(dur * S),
        "service": service,
        "attrs": {sc.RUN_ID: run, **({sc.HANDOFF_ID: handoff} if handoff else {})},
    }
    row["attrs"].update(attrs.pop("a", {}))
    assert not attrs, attrs
    row["span_id"] = secrets.token_hex(8)
    return row


def request(run, hid, frm, to, *, at=0.0, turn=None, fp="fp1", sv=1, declared=True, a=None):
    attrs = ev.request(
        frm, to, turn=turn, fingerprint=fp, state_version=sv, declared=declared, **(a or {})
    )
    return span(sc.SPAN_REQUEST, run, hid, at=at, a=attrs)


def accept(run, hid, *, at=1.0, started=True, a=None):
    return span(sc.SPAN_ACCEPT, run, hid, at=at, a=ev.accept(started=started, **(a or {})))


def run_span(run, status, *, at=0.0, dur=0.001, a=None):
    return span(sc.SPAN_RUN, run, at=at, dur=dur, a=ev.run_status(status, **(a or {})))


def outcome(run, result, *, hid=None, at=5.0, verifier="tests"):
    return span(sc.SPAN_OUTCOME, run, hid, at=at, a=ev.outcome(result, verifier=verifier))


def wait(run, hid, *, at=2.0, deadline_in: float | None = 6 * 3600.0, a=None):
    """A complete wait checkpoint; the deadline is relative to when the tests started."""
    # NOW0 is taken when the module is collected: a deadline minutes ahead of it would pass
    # while a long suite is still running, and a "future" wait would be judged overdue.
    deadline = None if deadline_in is None else NOW0 + int(deadline_in * S)
    attrs = ev.wait(owner="ops", resume_token="tok1", deadline=deadline, **(a or {}))
    return span(sc.SPAN_WAIT, run, hid, at=at, a=attrs)


def to_table(rows: list[dict]):
    cols = {f.name: [None] * len(rows) for f in SPAN_SCHEMA}
    now = time.time_ns()
    for i, r in enumerate(rows):
        cols["trace_id"][i] = "ab" * 16
        cols["span_id"][i] = r["span_id"]
        cols["name"][i] = r["name"]
        cols["service"][i] = r["service"]
        cols["start_ns"][i] = r["start"]
        cols["end_ns"][i] = r["end"]
        cols["received_ns"][i] = now
        for k, v in r["attrs"].items():
            cols[ATTRIBUTE_COLUMNS[k]][i] = v
    return build_spans_table(cols)


class Collector:
    """The writer's part of the collector: store + engine, one transaction per batch.

    `path`: a DuckDB file, or the DSN of a PostgreSQL database (`store_target`)."""

    def __init__(self, path, *, worker: bool = False, workers: int = 1, **engine_kw):
        self.path = path
        # These tests judge completions where verification is expected (as with
        # `--require-outcome '*'`); the verification policy itself has its own tests.
        engine_kw.setdefault("require_outcome", ("*",))
        self.engine_kw = engine_kw
        self.worker, self.workers = worker, workers
        """The engine in its worker process (`--judge on`), or in `workers` of them
        (`--judge-workers`), not here."""
        self.store = open_store(path)
        self.engine: HealthEngine | ProcessEngine | ShardedEngine
        if workers > 1:
            self.engine = ShardedEngine(workers, **engine_kw)
        elif worker:
            self.engine = ProcessEngine(**engine_kw)
        else:
            self.engine = HealthEngine(**engine_kw)
        self.engine.install(self.store.con)
        if is_dsn(path):
            # As the leased judge loads (engine/leased_judge.py): in a transaction of its
            # own, committed, so the rows a reload rewrites are what readers see. DuckDB's
            # connection autocommits outside begin(), as the server's load does.
            self.store.con.begin()
            self.engine.load(self.store.con)
            self.store.con.commit()
        else:
            self.engine.load(self.store.con)

    def send(self, *rows: dict) -> None:
        con = self.store.con
        con.begin()
        new = self.store.insert_new_spans(to_table(list(rows)))
        self.engine.apply(con, new)
        con.commit()

    def restart(self, **engine_kw) -> None:
        self.close()
        self.__init__(
            self.path, worker=self.worker, workers=self.workers, **(engine_kw or self.engine_kw)
        )

    def close(self) -> None:
        if isinstance(self.engine, ProcessEngine | ShardedEngine):
            self.engine.close()
        self.store.close()

    def _execute(self, cur, sql: str, params):
        if is_dsn(self.path):  # psycopg binds %(name)s
            return cur.execute(pg_sql(sql), params or {})
        return cur.execute(sql, params)

    def q(self, sql: str, params=None) -> list[tuple]:
        cur = self.store.cursor()
        try:
            return [tuple(r) for r in self._execute(cur, sql, params).fetchall()]
        finally:
            cur.close()

    def table(self, table: str, exclude: frozenset[str] = frozenset(), where: str = "true"):
        """The rows of `table` (`where`) without the `exclude` columns, sorted (NULLs
        first): what DuckDB's `SELECT * EXCLUDE (...) ... ORDER BY ALL` gives, in SQL
        PostgreSQL reads too."""
        cur = self.store.cursor()
        try:
            found = self._execute(cur, f"SELECT * FROM {table} WHERE {where}", None)
            names = [d[0] for d in found.description]
            rows = found.fetchall()
        finally:
            cur.close()
        keep = [i for i, name in enumerate(names) if name not in exclude]
        picked = [tuple(r[i] for i in keep) for r in rows]
        return sorted(picked, key=lambda r: [(v is not None, v) for v in r])

    def verdict(self, run: str, hid: str, now: int | None = None) -> str:
        return self.q(
            "SELECT hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) "
            "FROM handoffs WHERE run_id = $r AND handoff_id = $h",
            {"now": now or time.time_ns(), "r": run, "h": hid},
        )[0][0]

    def run_verdict(self, run: str, now: int | None = None) -> str:
        return self.q(
            "SELECT hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) "
            "FROM runs WHERE run_id = $r",
            {"now": now or time.time_ns(), "r": run},
        )[0][0]

    def run(self, run: str) -> dict:
        cur = self.store.cursor()
        try:
            found = self._execute(cur, "SELECT * FROM runs WHERE run_id = $r", {"r": run})
            names = [d[0] for d in found.description]
            rows = found.fetchall()
        finally:
            cur.close()
        assert len(rows) == 1, rows
        return dict(zip(names, rows[0], strict=True))

    def handoff(self, run: str, hid: str) -> dict:
        cur = self.store.cursor()
        try:
            found = self._execute(
                cur,
                "SELECT * FROM handoffs WHERE run_id = $r AND handoff_id = $h",
                {"r": run, "h": hid},
            )
            names = [d[0] for d in found.description]
            rows = found.fetchall()
        finally:
            cur.close()
        assert len(rows) == 1, rows
        return dict(zip(names, rows[0], strict=True))

    def snapshot(self) -> dict:
        """Every derived row without its row_seq: what must not depend on arrival order."""
        out = {}
        for table in ("handoffs", "runs", "waits"):
            exclude = {"row_seq"}
            if table == "runs":  # arrival bookkeeping, not a fact about the run
                exclude |= {"min_received_ns", "max_received_ns"}
            out[table] = self.table(table, frozenset(exclude))
        for table in ("handoff_daily", "edge_hourly"):
            # rollups: a bucket emptied by a -1 delta stays at zero
            out[table] = self.table(table, where="handoffs <> 0")
        return out


@pytest.fixture
def col(tmp_path, store_target):
    c = Collector(store_target(tmp_path / "engine.duckdb"), grace_seconds=30)
    yield c
    c.store.close()


# --- every verdict of DESIGN §4 -------------------------------------------------------------

SCENARIOS = {
    sc.ROUTE_REJECTED: [request("r", "h", "A", "B", declared=False), accept("r", "h")],
    "route_goto_mismatch": [
        request("r", "h", "A", "B", a={sc.ROUTE_GOTO: "C"}),
        accept("r", "h"),
    ],
    sc.STALE_CONTROL: [
        request("r", "h", "A", "B"),
        span(
            sc.SPAN_TRANSFER,
            "r",
            "h",
            at=0.5,
            a={sc.CONTROL_BEFORE: "A", sc.CONTROL_AFTER: "A", sc.TOOL_CALL_CLOSED: True},
        ),
        accept("r", "h"),
    ],
    sc.OPEN_TOOL_PROTOCOL: [
        request("r", "h", "A", "B", a={sc.TOOL_CALL_ID: "call_1"}),
        span(sc.SPAN_TRANSFER, "r", "h", at=0.5, a={sc.TOOL_CALL_CLOSED: False}),
        accept("r", "h"),
    ],
    sc.CONTEXT_INCOMPLETE: [
        request("r", "h", "A", "B", a={sc.CONTEXT_REQUIRED_KEYS: ["order_id", "account"]}),
        accept("r", "h", a={sc.CONTEXT_MISSING_KEYS: ["account"]}),
    ],
    sc.CONTRACT_REJECTED: [
        request("r", "h", "A", "B"),
        accept("r", "h", started=False, a={sc.REJECTION_REASON: sc.REJECTION_STALE}),
    ],
    sc.DESTINATION_NOT_STARTED: [request("r", "h", "A", "B")],  # an hour ago, grace 30 s
    sc.LOOP: [
        request("r", "h0", "A", "B", turn=1, fp="same", sv=3),
        accept("r", "h0"),
        request("r", "h", "B", "A", turn=2, fp="same", sv=3, at=2),
        accept("r", "h", at=3),
        request("r", "h2", "A", "B", turn=3, fp="same", sv=3, at=4),
        accept("r", "h2", at=5),
    ],
    sc.FALSE_COMPLETE: [
        run_span("r", sc.RUN_STATUS_COMPLETED, dur=10),
        request("r", "h", "A", "B"),
        accept("r", "h"),
    ],
    sc.APPROVAL_OVERDUE: [
        request("r", "h", "A", "B"),
        accept("r", "h"),
        wait("r", "h", deadline_in=-60),
    ],
    sc.WAIT_UNCERTAIN: [
        request("r", "h", "A", "B"),
        accept("r", "h"),
        wait("r", "h", a={sc.WAIT_OWNER: None}),
    ],
    sc.WAITING_ON_APPROVAL: [request("r", "h", "A", "B"), accept("r", "h"), wait("r", "h")],
    sc.HEALTHY: [request("r", "h", "A", "B"), accept("r", "h")],
}


def _strip_none(rows):
    for r in rows:
        r["attrs"] = {k: v for k, v in r["attrs"].items() if v is not None}
    return rows


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_verdict(col, name):
    col.send(*_strip_none([dict(r, span_id=secrets.token_hex(8)) for r in SCENARIOS[name]]))
    expected = sc.ROUTE_REJECTED if name == "route_goto_mismatch" else name
    assert col.verdict("r", "h") == expected
    h = col.handoff("r", "h")
    assert h["verdict"] in sc.PRECEDENCE
    assert col.run_verdict("r") == expected


def test_in_flight_turns_into_destination_not_started_at_grace(tmp_path, store_target):
    c = Collector(store_target(tmp_path / "g.duckdb"), grace_seconds=30)
    start = time.time_ns()
    row = request("r", "h", "A", "B")
    row["start"], row["end"] = start, start + 1000
    c.send(row)
    assert c.verdict("r", "h", now=start + 29 * S) == sc.IN_FLIGHT
    assert c.verdict("r", "h", now=start + 30 * S + 1) == sc.DESTINATION_NOT_STARTED
    assert c.run_verdict("r", now=start + 29 * S) == sc.IN_FLIGHT
    assert c.run_verdict("r", now=start + 31 * S) == sc.DESTINATION_NOT_STARTED
    # Admission arrives: no flip left, healthy whenever we look.
    c.send(accept("r", "h") | {"start": start + 2 * S, "end": start + 2 * S})
    assert c.verdict("r", "h", now=start + 3600 * S) == sc.HEALTHY
    assert c.handoff("r", "h")["flip1_ns"] is None
    c.store.close()


def test_waiting_turns_into_overdue_at_deadline(col):
    deadline = time.time_ns() + 600 * S
    col.send(
        request("r", "h", "A", "B"),
        accept("r", "h"),
        wait("r", "h", a={sc.WAIT_DEADLINE: deadline}),
    )
    assert col.verdict("r", "h", now=deadline - 1) == sc.WAITING_ON_APPROVAL
    assert col.verdict("r", "h", now=deadline) == sc.APPROVAL_OVERDUE
    assert col.run_verdict("r", now=deadline) == sc.APPROVAL_OVERDUE
    (w,) = col.q("SELECT verdict, flip1_ns, flip1_verdict, missing FROM waits")
    assert w == (sc.WAITING_ON_APPROVAL, deadline, sc.APPROVAL_OVERDUE, [])
    assert col.run("r")["pending_approvals"] == 1
    # The decision closes the wait: it leaves the approvals table, the handoff is healthy.
    col.send(span(sc.SPAN_WAIT, "r", "h", at=9, a={sc.WAIT_DECISION: sc.WAIT_DECISION_APPROVED}))
    assert col.q("SELECT count(*) FROM waits") == [(0,)]
    assert col.verdict("r", "h", now=deadline + S) == sc.HEALTHY
    assert col.run("r")["pending_approvals"] == 0


def test_run_level_wait_without_handoff_id(col):
    col.send(span(sc.SPAN_WAIT, "r", at=1, a={sc.WAIT_OWNER: "ops"}))
    (w,) = col.q("SELECT handoff_id, verdict, missing FROM waits")
    assert w == (
        None,
        sc.WAIT_UNCERTAIN,
        ["reason", "deadline", "resume_token_id", "state_persisted"],
    )
    assert col.run_verdict("r") == sc.WAIT_UNCERTAIN


# --- precedence: an earlier failure is not hidden by a later green signal -----------------

HIDDEN_BY_GREEN = {
    "route_rejected + later pass": (
        sc.ROUTE_REJECTED,
        [
            request("r", "h", "A", "B", declared=False),
            accept("r", "h", at=3),
            run_span("r", sc.RUN_STATUS_COMPLETED, dur=10),
            outcome("r", sc.OUTCOME_PASS, hid="h"),
        ],
    ),
    "route_rejected + later declared restatement": (
        sc.ROUTE_REJECTED,
        [
            request("r", "h", "A", "B", declared=False),
            span(sc.SPAN_TRANSFER, "r", "h", at=2, a={sc.ROUTE_DECLARED: True}),
        ],
    ),
    "stale_control + admission": (
        sc.STALE_CONTROL,
        [
            request("r", "h", "A", "B"),
            span(
                sc.SPAN_TRANSFER,
                "r",
                "h",
                at=0.5,
                a={sc.CONTROL_BEFORE: "Z", sc.CONTROL_AFTER: "B"},
            ),
            accept("r", "h", at=5),
        ],
    ),
    "open tool call + later closed": (
        sc.OPEN_TOOL_PROTOCOL,
        [
            request("r", "h", "A", "B"),
            span(sc.SPAN_TRANSFER, "r", "h", at=0.5, a={sc.TOOL_CALL_CLOSED: False}),
            span(sc.SPAN_TRANSFER, "r", "h", at=1.5, a={sc.TOOL_CALL_CLOSED: True}),
            accept("r", "h", at=3),
        ],
    ),
    "context_incomplete + pass outcome": (
        sc.CONTEXT_INCOMPLETE,
        [
            request("r", "h", "A", "B"),
            accept("r", "h", a={sc.CONTEXT_MISSING_KEYS: ["k"]}),
            outcome("r", sc.OUTCOME_PASS, hid="h"),
        ],
    ),
    "contract_rejected + later started": (
        sc.CONTRACT_REJECTED,
        [
            request("r", "h", "A", "B"),
            accept("r", "h", started=False, a={sc.REJECTION_REASON: sc.REJECTION_UNAUTHORIZED}),
            accept("r", "h", at=8),
        ],
    ),
    "destination said not started + later started": (
        sc.DESTINATION_NOT_STARTED,
        [request("r", "h", "A", "B"), accept("r", "h", started=False), accept("r", "h", at=9)],
    ),
    "loop + pass outcome": (
        sc.LOOP,
        [
            request("r", "h0", "A", "B", turn=1, fp="x", sv=1),
            accept("r", "h0"),
            request("r", "h", "B", "A", turn=2, fp="x", sv=1, at=2),
            accept("r", "h", at=3),
            outcome("r", sc.OUTCOME_PASS, hid="h", at=4),
        ],
    ),
    "false_complete: verifier failed, another passed": (
        sc.FALSE_COMPLETE,
        [
            request("r", "h", "A", "B"),
            accept("r", "h"),
            run_span("r", sc.RUN_STATUS_COMPLETED, dur=10),
            outcome("r", sc.OUTCOME_FAIL, verifier="unit", at=4),
            outcome("r", sc.OUTCOME_PASS, verifier="lint", at=6),
        ],
    ),
    "approval_overdue + later healthy-looking restatement": (
        sc.APPROVAL_OVERDUE,
        [
            request("r", "h", "A", "B"),
            accept("r", "h"),
            wait("r", "h", deadline_in=-5),
            span(sc.SPAN_WAIT, "r", "h", at=1, a={sc.WAIT_STATE_PERSISTED: True}),
        ],
    ),
}


@pytest.mark.parametrize("case", list(HIDDEN_BY_GREEN))
def test_earlier_failure_not_hidden_by_later_green(col, case):
    expected, rows = HIDDEN_BY_GREEN[case]
    col.send(*[dict(r, span_id=secrets.token_hex(8)) for r in rows])
    assert col.verdict("r", "h") == expected
    h = col.handoff("r", "h")
    assert h["verdict"] == expected or h["flip1_verdict"] == expected


# --- order and duplicates -------------------------------------------------------------------


def _mixed_run() -> list[dict]:
    """A run exercising most facts: path, wait, loop, completion, outcomes."""
    return [
        run_span("m", sc.RUN_STATUS_STARTED, at=0),
        request(
            "m",
            "1",
            "triage",
            "billing",
            turn=1,
            fp="a",
            sv=1,
            at=1,
            a={sc.CONTEXT_REQUIRED_KEYS: ["order_id"], sc.TOOL_CALL_ID: "c1"},
        ),
        span(
            sc.SPAN_TRANSFER,
            "m",
            "1",
            at=1.5,
            a={sc.CONTROL_BEFORE: "triage", sc.CONTROL_AFTER: "billing", sc.TOOL_CALL_CLOSED: True},
        ),
        accept("m", "1", at=2),
        request("m", "2", "billing", "refunds", turn=2, fp="b", sv=2, at=3),
        accept("m", "2", at=4),
        wait("m", "2", at=5, deadline_in=6 * 3600),
        span(sc.SPAN_WAIT, "m", "2", at=50, a={sc.WAIT_DECISION: sc.WAIT_DECISION_APPROVED}),
        request("m", "3", "refunds", "billing", turn=3, fp="b", sv=2, at=60),
        accept("m", "3", at=61),
        outcome("m", sc.OUTCOME_FAIL, hid="3", at=62, verifier="refund_check"),
        run_span(
            "m",
            sc.RUN_STATUS_COMPLETED,
            at=0,
            dur=70,
            a={sc.RUN_FINAL_AGENT: "billing", sc.RUN_TURNS: 3},
        ),
    ]


def test_order_and_duplicates_do_not_change_anything(tmp_path, store_target):
    rows = _mixed_run()
    ref = Collector(store_target(tmp_path / "ref.duckdb"))
    ref.send(*rows)
    expected = ref.snapshot()
    ref.store.close()
    assert expected["handoffs"] and expected["runs"]

    rng = random.Random(7)
    for trial in range(3):
        shuffled = rows[:]
        rng.shuffle(shuffled)
        c = Collector(store_target(tmp_path / f"shuffled{trial}.duckdb"))
        # in separate batches, minutes apart in arrival, each re-sent (same span id)
        for i in range(0, len(shuffled), 3):
            c.send(*shuffled[i : i + 3])
            c.send(*shuffled[max(0, i - 2) : i + 3])
        assert c.snapshot() == expected
        c.store.close()


def test_duplicates_applied_twice_are_idempotent(col):
    rows = _mixed_run()
    col.send(*rows)
    before = col.snapshot()
    # The store removes re-sent spans; applying a batch twice must not matter either.
    con = col.store.con
    con.begin()
    table = to_table(rows)
    col.engine.apply(con, table)
    col.engine.apply(con, table)
    con.commit()
    assert col.snapshot() == before
    assert col.q("SELECT sum(handoffs) FROM handoff_daily") == [(3,)]


def test_mixed_run_facts(col):
    col.send(*_mixed_run())
    r = col.run("m")
    assert r["path"] == ["triage", "billing", "refunds", "billing"]
    assert r["status"] == sc.RUN_STATUS_COMPLETED and r["final_agent"] == "billing"
    assert r["current_agent"] == "billing"
    assert r["handoff_count"] == 3 and r["turns"] == 3
    # handoff 3 repeats (billing, b, 2)? No: the key is (to_agent, fp, sv) = (billing, b, 2),
    # first seen now; but billing is on the path since the last progress -> a cycle.
    assert r["loop"] is True and r["loop_cycle"] == ["billing", "refunds", "billing"]
    assert r["false_complete"] is True and r["outcome_result"] == sc.OUTCOME_FAIL
    assert r["pending_approvals"] == 0
    assert col.verdict("m", "1") == sc.HEALTHY
    assert col.verdict("m", "2") == sc.HEALTHY  # its wait was approved
    assert col.verdict("m", "3") == sc.LOOP  # loop precedes false_complete
    assert col.handoff("m", "3")["claims_done"] is True
    assert col.run_verdict("m") == sc.LOOP
    assert [h for (h,) in col.q("SELECT handoff_id FROM handoffs ORDER BY seq")] == ["1", "2", "3"]


# --- loops ---------------------------------------------------------------------------------


def test_cycle_of_three_without_progress_is_a_loop(col):
    col.send(
        request("c", "1", "A", "B", turn=1, fp="f", sv=1),
        accept("c", "1"),
        request("c", "2", "B", "C", turn=2, fp="f", sv=1, at=2),
        accept("c", "2", at=3),
        request("c", "3", "C", "A", turn=3, fp="f", sv=1, at=4),
        accept("c", "3", at=5),
    )
    r = col.run("c")
    assert r["loop"] is True
    assert r["loop_cycle"] == ["A", "B", "C", "A"]
    assert r["loop_repeats"] == 1
    assert [col.verdict("c", h) for h in "123"] == [sc.HEALTHY, sc.HEALTHY, sc.LOOP]
    assert col.run_verdict("c") == sc.LOOP


def test_retry_with_state_progress_is_not_a_loop(col):
    col.send(
        request("p", "1", "A", "B", turn=1, fp="f", sv=1),
        accept("p", "1"),
        request("p", "2", "B", "A", turn=2, fp="f", sv=2, at=2),
        accept("p", "2", at=3),
        request("p", "3", "A", "B", turn=3, fp="g", sv=3, at=4),
        accept("p", "3", at=5),
    )
    r = col.run("p")
    assert r["loop"] is False and r["loop_cycle"] == []
    assert col.run_verdict("p") == sc.HEALTHY


def test_loop_found_even_when_turns_arrive_out_of_order(col):
    col.send(request("o", "3", "C", "A", turn=3, fp="f", sv=1, at=4), accept("o", "3", at=5))
    col.send(request("o", "2", "B", "C", turn=2, fp="f", sv=1, at=2), accept("o", "2", at=3))
    assert col.run("o")["loop"] is False  # B -> C -> A is no cycle
    col.send(request("o", "1", "A", "B", turn=1, fp="f", sv=1), accept("o", "1"))
    assert col.run("o")["loop_cycle"] == ["A", "B", "C", "A"]
    assert col.verdict("o", "3") == sc.LOOP


# --- completion ----------------------------------------------------------------------------


def test_false_completion_with_zero_handoffs(col):
    col.send(run_span("z", sc.RUN_STATUS_COMPLETED, dur=3))
    r = col.run("z")
    assert r["false_complete"] is True and r["handoff_count"] == 0
    assert col.run_verdict("z") == sc.FALSE_COMPLETE


def test_completion_with_passing_run_level_outcome_is_healthy(col):
    col.send(
        request("y", "h", "A", "B"),
        accept("y", "h"),
        run_span("y", sc.RUN_STATUS_COMPLETED, dur=10),
        outcome("y", sc.OUTCOME_PASS),
    )
    assert col.run("y")["false_complete"] is False
    assert col.verdict("y", "h") == sc.HEALTHY
    assert col.run_verdict("y") == sc.HEALTHY


def test_destination_claims_done_while_waiting(col):
    col.send(
        request("w", "h", "A", "B"),
        accept("w", "h", a={sc.DESTINATION_CLAIMS_DONE: True}),
        wait("w", "h"),
    )
    assert col.verdict("w", "h") == sc.FALSE_COMPLETE
    assert col.run("w")["false_complete"] is True
    # Once the wait is decided the claim no longer counts as made while waiting.
    col.send(span(sc.SPAN_WAIT, "w", "h", at=30, a={sc.WAIT_DECISION: sc.WAIT_DECISION_APPROVED}))
    assert col.verdict("w", "h") == sc.HEALTHY


@pytest.mark.parametrize("status", [sc.RUN_STATUS_FAILED, sc.RUN_STATUS_MAX_TURNS])
def test_failed_runs_are_marked(col, status):
    col.send(run_span("f", sc.RUN_STATUS_STARTED), run_span("f", status, dur=20))
    r = col.run("f")
    assert r["failed"] is True and r["status"] == status and r["ended_ns"] is not None


def test_status_latest_wins_whatever_the_arrival_order(col):
    col.send(run_span("s", sc.RUN_STATUS_COMPLETED, dur=20), outcome("s", sc.OUTCOME_PASS))
    col.send(run_span("s", sc.RUN_STATUS_STARTED, dur=0.001))
    assert col.run("s")["status"] == sc.RUN_STATUS_COMPLETED


# --- memory bound, reload and restart ---------------------------------------------------------


def test_finished_runs_leave_memory_before_open_ones(tmp_path, store_target):
    # Each run here is two units (the run and its handoff); memory holds five runs, of
    # which finished ones a fifth of it (engine.FINISHED_SHARE): one run.
    assert FINISHED_SHARE == 0.2
    c = Collector(store_target(tmp_path / "order.duckdb"), max_hot_handoffs=10)

    def open_run(rid, at):
        c.send(request(rid, "h1", "A", "B", at=at), accept(rid, "h1", at=at + 0.5))

    def finished_run(rid, at):
        c.send(
            request(rid, "h1", "A", "B", at=at),
            accept(rid, "h1", at=at + 0.5),
            run_span(rid, sc.RUN_STATUS_COMPLETED, at=at + 1),
        )

    open_run("o1", 0)
    open_run("o2", 1)
    finished_run("f1", 2)
    finished_run("f2", 3)  # under the bound, over the finished share: f1 goes
    assert set(c.engine.runs) == {"o1", "o2", "f2"}
    assert c.engine.hot_size == 6
    open_run("o3", 4)
    open_run("o4", 5)  # at the bound: everyone stays
    assert set(c.engine.runs) == {"o1", "o2", "f2", "o3", "o4"}
    open_run("o5", 6)  # over it: finished f2 goes before any open run
    assert set(c.engine.runs) == {"o1", "o2", "o3", "o4", "o5"}
    open_run("o6", 7)  # none finished left: the least recently touched open run goes
    assert set(c.engine.runs) == {"o2", "o3", "o4", "o5", "o6"}
    # o2's status comes: it is finished now, so it goes first when memory is short.
    c.send(run_span("o2", sc.RUN_STATUS_COMPLETED, at=8))
    open_run("o7", 9)
    assert set(c.engine.runs) == {"o3", "o4", "o5", "o6", "o7"}
    assert c.engine.hot_size == 10 and c.engine.stats["runs_evicted"] == 4
    # Evidence for an evicted run brings it back, judged as one run.
    c.send(request("o1", "h2", "B", "C", at=8))
    assert c.run("o1")["handoff_count"] == 2


def test_memory_stays_bounded_and_evicted_runs_reload(tmp_path, store_target):
    c = Collector(store_target(tmp_path / "m.duckdb"), max_hot_handoffs=50)
    for i in range(40):
        c.send(
            request(f"run{i}", "h1", "A", "B", turn=1, fp="f", sv=1, at=i),
            accept(f"run{i}", "h1", at=i + 0.5),
        )
        assert c.engine.hot_size <= 50
    assert "run0" not in c.engine.runs
    assert c.engine.stats["runs_evicted"] > 0
    # Late evidence for an evicted run: reloaded, merged, one row per handoff still.
    c.send(
        request("run0", "h2", "B", "A", turn=2, fp="f", sv=2, at=100), accept("run0", "h2", at=101)
    )
    assert c.engine.stats["runs_reloaded"] >= 1
    assert c.q("SELECT count(*) FROM runs WHERE run_id = 'run0'") == [(1,)]
    assert c.q("SELECT count(*) FROM handoffs WHERE run_id = 'run0'") == [(2,)]
    assert c.run("run0")["path"] == ["A", "B", "A"]
    assert c.run("run0")["loop"] is False  # the state moved on (version 1 -> 2)
    # Evicted again by a crowd of new runs, then the back-edge without progress arrives.
    for i in range(40, 70):
        c.send(request(f"run{i}", "h1", "A", "B", at=200 + i))
    assert "run0" not in c.engine.runs
    c.send(
        request("run0", "h3", "A", "B", turn=3, fp="f", sv=2, at=300), accept("run0", "h3", at=301)
    )
    assert c.run("run0")["loop"] is True and c.run("run0")["loop_cycle"] == ["B", "A", "B"]
    assert c.q("SELECT count(*) FROM handoffs") == [(72,)]
    assert c.q("SELECT count(*) FROM runs") == [(70,)]
    assert c.q("SELECT sum(handoffs) FROM handoff_daily") == [(72,)]
    c.store.close()


def test_restart_keeps_verdicts_and_merges_on(tmp_path, store_target):
    c = Collector(store_target(tmp_path / "r.duckdb"))
    c.send(*_mixed_run()[:6])
    before = c.snapshot()
    c.restart()
    assert c.snapshot() == before
    assert "m" in c.engine.runs  # recently active: reloaded
    # Re-judged on reload, found identical, so nothing was rewritten.
    assert c.engine.stats["handoff_rows_written"] == c.engine.stats["run_rows_written"] == 0
    c.send(*_mixed_run()[6:])
    fresh = Collector(store_target(tmp_path / "fresh.duckdb"))
    fresh.send(*_mixed_run())
    assert c.snapshot() == fresh.snapshot()
    c.store.close()
    fresh.store.close()


def test_restart_with_other_grace_rewrites_the_timeline(tmp_path, store_target):
    c = Collector(store_target(tmp_path / "grace.duckdb"), grace_seconds=30)
    start = time.time_ns()
    row = request("r", "h", "A", "B")
    row["start"], row["end"] = start, start + 1
    c.send(row)
    assert c.handoff("r", "h")["flip1_ns"] == start + 30 * S + 1
    c.restart(grace_seconds=5)
    assert c.handoff("r", "h")["flip1_ns"] == start + 5 * S + 1
    assert c.verdict("r", "h", now=start + 6 * S) == sc.DESTINATION_NOT_STARTED
    c.store.close()


def test_rollback_forgets_what_the_failed_batch_touched(col):
    col.send(request("b", "h", "A", "B"))
    con = col.store.con
    con.begin()
    new = col.store.insert_new_spans(to_table([accept("b", "h")]))
    col.engine.apply(con, new)
    con.rollback()
    col.engine.rollback()
    assert "b" not in col.engine.runs
    assert col.verdict("b", "h") == sc.DESTINATION_NOT_STARTED  # committed state
    col.send(outcome("b", sc.OUTCOME_PASS, hid="h"))  # reloads from what was committed
    assert col.handoff("b", "h")["destination_started"] is None


# --- retention and the rollup ------------------------------------------------------------------


def test_retention_drops_old_runs_everywhere(col):
    col.send(
        request("old", "h", "A", "B", declared=False),
        accept("old", "h"),
        wait("old", "h", deadline_in=-1),
    )
    newer = request("new", "h", "A", "B", at=1000)
    col.send(newer, accept("new", "h", at=1001))
    con = col.store.con
    con.begin()  # in a transaction of its own, as both judges run it (engine/judge.py)
    col.engine.retention(con, T0 + 500 * S)
    con.commit()
    assert col.q("SELECT run_id FROM runs") == [("new",)]
    assert col.q("SELECT DISTINCT run_id FROM handoffs") == [("new",)]
    assert col.q("SELECT count(*) FROM waits") == [(0,)]
    assert "old" not in col.engine.runs


def test_daily_rollup_follows_changing_verdicts(col):
    col.send(request("d", "h", "A", "B"))
    assert col.q("SELECT reason, handoffs FROM handoff_daily") == [("", 1)]
    col.send(accept("d", "h", started=False, a={sc.REJECTION_REASON: sc.REJECTION_NO_BUDGET}))
    assert col.q("SELECT reason, handoffs FROM handoff_daily WHERE handoffs <> 0") == [
        (sc.REJECTION_NO_BUDGET, 1)
    ]
    col.send(request("d", "h2", "A", "C", declared=False, at=3))
    got = col.q(
        "SELECT to_agent, reason, handoffs FROM handoff_daily WHERE handoffs <> 0 ORDER BY 1"
    )
    assert got == [("B", sc.REJECTION_NO_BUDGET, 1), ("C", "route", 1)]


def test_services_are_recorded_once(col):
    for i, svc in enumerate(["a", "b", "a"]):
        col.send(span(sc.SPAN_RUN, f"s{i}", service=svc, a={sc.RUN_STATUS: "started"}))
    assert col.q("SELECT service FROM services ORDER BY 1") == [("a",), ("b",)]


def test_every_permutation_of_a_small_handoff_agrees(tmp_path, store_target):
    rows = [
        request("x", "h", "A", "B", a={sc.TOOL_CALL_ID: "t"}),
        span(
            sc.SPAN_TRANSFER,
            "x",
            "h",
            at=0.5,
            a={sc.CONTROL_BEFORE: "A", sc.CONTROL_AFTER: "B", sc.TOOL_CALL_CLOSED: True},
        ),
        accept("x", "h", a={sc.CONTEXT_MISSING_KEYS: []}),
        run_span("x", sc.RUN_STATUS_COMPLETED, dur=9),
    ]
    snaps = []
    for i, perm in enumerate(itertools.permutations(rows)):
        if i % 5:  # 24 permutations; every fifth keeps the test quick and still mixes
            continue
        c = Collector(store_target(tmp_path / f"p{i}.duckdb"))
        for r in perm:
            c.send(r)
        snaps.append(c.snapshot())
        c.store.close()
    for s in snaps[1:]:
        assert s == snaps[0]
    assert sc.FALSE_COMPLETE in snaps[0]["handoffs"][0]


# --- the edge rollup equals a brute-force count at any time ----------------------------------

BRUTE_EDGES = """
SELECT from_agent, to_agent,
       hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS v,
       coalesce(route_declared = false, false) AS undeclared, count(*) AS n
FROM handoffs GROUP BY 1, 2, 3, 4
"""
ROLLUP_EDGES = """
SELECT from_agent, to_agent, v, undeclared, sum(n)::BIGINT AS n FROM (
    SELECT nullif(from_agent, '') AS from_agent, nullif(to_agent, '') AS to_agent, verdict AS v,
           undeclared, handoffs AS n
    FROM edge_hourly
    UNION ALL  -- the rollup counts the verdict a timeline ends in: the flips ahead, corrected
    SELECT from_agent, to_agent,
           CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict ELSE flip1_verdict END,
           coalesce(route_declared = false, false), -1
    FROM handoffs WHERE coalesce(flip2_ns, flip1_ns) > $now
    UNION ALL
    SELECT from_agent, to_agent,
           hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now),
           coalesce(route_declared = false, false), 1
    FROM handoffs WHERE coalesce(flip2_ns, flip1_ns) > $now
) AS u GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0
"""


def test_edge_rollup_matches_brute_force_as_evidence_and_time_move(tmp_path, store_target):
    c = Collector(store_target(tmp_path / "edges.duckdb"), grace_seconds=30, max_hot_handoffs=20)
    rng = random.Random(3)
    agents = ["A", "B", "C", None]
    base = (NOW0 - T0) / S  # "now" in span() offsets

    def check(now):
        brute = {tuple(r[:4]): r[4] for r in c.q(BRUTE_EDGES, {"now": now})}
        rolled = {tuple(r[:4]): r[4] for r in c.q(ROLLUP_EDGES, {"now": now})}
        assert rolled == brute

    for _step in range(12):
        rows = []
        for _ in range(8):
            run, hid = f"r{rng.randrange(15)}", f"h{rng.randrange(3)}"
            kind = rng.random()
            at = base + rng.uniform(-3600, 5)
            frm, to = rng.choice(agents), rng.choice(agents)
            if kind < 0.4:
                a = {sc.ROUTE_DECLARED: rng.random() > 0.2}
                a.update({k: v for k, v in ((sc.FROM_AGENT, frm), (sc.TO_AGENT, to)) if v})
                rows.append(span(sc.SPAN_REQUEST, run, hid, at=at, a=a))
            elif kind < 0.7:
                rows.append(accept(run, hid, at=at, started=rng.random() > 0.1))
            elif kind < 0.85:
                rows.append(wait(run, hid, at=at, deadline_in=rng.choice([-30, 20, 600])))
            else:
                rows.append(span(sc.SPAN_WAIT, run, hid, at=at, a={sc.WAIT_DECISION: "approved"}))
        c.send(*rows)
        for ahead in (0, 25, 45, 700):  # before and after grace expiries and deadlines
            check(time.time_ns() + ahead * S)
    assert c.engine.stats["runs_evicted"] > 0  # the rollup survived reloads too
    assert c.q("SELECT count(*) FROM edge_hourly WHERE handoffs < 0") == [(0,)]
    runs: dict = {}
    for to_agent, run_ids in c.q("SELECT to_agent, runs FROM edge_runs"):
        runs.setdefault(to_agent, []).extend(run_ids)
    assert runs and all(len(v) >= 1 for v in runs.values())
    c.store.close()


def test_rollups_written_before_final_verdicts_are_brought_up_to_them(tmp_path, store_target):
    """Engine step 21 (PostgreSQL: 14) on a store whose rollups left the handoffs with a
    flip out, as the engine counted them before it: they are added under the verdict
    their timeline ends in, and the rollups then equal what the engine writes now."""
    from handoffscope.collector.engine import edge_key
    from handoffscope.collector.store import statements
    from handoffscope.collector.store.steps import ddl_dir, read_steps

    c = Collector(store_target(tmp_path / "upgrade.duckdb"), grace_seconds=30)
    rng = random.Random(5)
    rows = []
    for i in range(60):
        run, at = f"u{i}", -rng.uniform(0, 2 * 86_400)
        rows.append(request(run, "h", rng.choice("AB"), rng.choice("CD"), at=at))
        if rng.random() < 0.7:
            rows.append(accept(run, "h", at=at + 1, started=rng.random() > 0.2))
        if rng.random() < 0.4:
            rows.append(wait(run, "h", at=at + 2, deadline_in=rng.choice([-600, 3 * 86_400])))
    c.send(*rows)
    rollups = ("edge_hourly", "edge_daily")
    now_rows = {t: c.table(t, where="handoffs <> 0") for t in rollups}
    flips = c.q(
        "SELECT first_seen_ns, service, from_agent, to_agent, flip1_ns, flip1_verdict,"
        " flip2_ns, flip2_verdict, route_declared FROM handoffs"
        " WHERE flip1_ns IS NOT NULL AND kind IS DISTINCT FROM 'delegation'"
    )
    assert len(flips) > 10  # the step has something to add
    # Back to what the engine wrote before step 21: the flips' handoffs not counted.
    dialect = statements.dialect(c.store.con)
    step = next(s for s in read_steps(ddl_dir("engine", dialect)) if "final_verdict" in s.file)
    con = c.store.con
    con.begin()
    for first, svc, frm, to, f1, v1, f2, v2, declared in flips:
        hour, *key = edge_key(
            _Row(first, svc, frm, to, "ok", f1, v1, f2, v2, declared)  # type: ignore[arg-type]
        )
        for table, bucket, at in (("edge_hourly", "hour", hour), ("edge_daily", "day", hour // 24)):
            c._execute(
                con,
                f"UPDATE {table} SET handoffs = handoffs - 1 WHERE {bucket} = $b AND service = $s"
                " AND from_agent = $f AND to_agent = $t AND verdict = $v AND undeclared = $u",
                dict(zip("bsftvu", [at, *key], strict=True)),
            )
    c._execute(
        con, "UPDATE meta SET value = $v WHERE key = 'engine_version'", {"v": str(step.version - 1)}
    )
    con.commit()
    assert {t: c.table(t, where="handoffs <> 0") for t in rollups} != now_rows
    c.restart()
    assert {t: c.table(t, where="handoffs <> 0") for t in rollups} == now_rows
    c.store.close()


class _Row:
    """The columns of a handoff row edge_key reads."""

    kind = None

    def __init__(self, first, svc, frm, to, verdict, f1, v1, f2, v2, declared) -> None:
        self.first_seen_ns, self.service, self.from_agent, self.to_agent = first, svc, frm, to
        self.verdict, self.flip1_ns, self.flip1_verdict = verdict, f1, v1
        self.flip2_ns, self.flip2_verdict, self.route_declared = f2, v2, declared


def test_edges_endpoint_equals_brute_force_for_any_window(tmp_path, store_target):
    """/api/v1/edges reads days, hours and live rows; whatever the window, the sum is exact."""
    from handoffscope.collector.config import CollectorConfig
    from handoffscope.collector.query.api import QueryAPI
    from handoffscope.collector.query.models import WindowParams

    c = Collector(store_target(tmp_path / "windows.duckdb"), grace_seconds=30, max_hot_handoffs=50)
    rng = random.Random(11)
    rows = []
    for i in range(160):
        run, at = f"w{i}", -rng.uniform(0, 3 * 86_400)  # over three days back from T0
        frm, to = rng.choice("ABC"), rng.choice("BCD")
        rows.append(request(run, "h", frm, to, at=at, declared=rng.random() > 0.1))
        if rng.random() < 0.8:
            rows.append(accept(run, "h", at=at + 1, started=rng.random() > 0.1))
        if rng.random() < 0.2:
            # deadlines passed, soon, and days ahead: some flips still ahead of any now
            rows.append(wait(run, "h", at=at + 2, deadline_in=rng.choice([-600, 900, 4 * 86_400])))
    for i in range(0, len(rows), 40):
        c.send(*rows[i : i + 40])
    api = QueryAPI(c.store, c.engine, CollectorConfig(grace_seconds=30))
    now = time.time_ns()

    def via_api(now: int, **params) -> dict:
        query = WindowParams.model_validate({k: str(v) for k, v in params.items()})
        with api.cursor() as cur:
            body = api.edges(cur, now, query).model_dump()
        return {
            (e["from_agent"], e["to_agent"]): (
                e["count"],
                e["unhealthy"],
                e["undeclared"],
                e["verdicts"],
            )
            for e in body["edges"]
        }

    def brute(now: int, since: int, until: int) -> dict:
        got: dict = {}
        for frm, to, v, undeclared, n in c.q(
            "SELECT from_agent, to_agent, hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns,"
            " flip2_verdict, $now), coalesce(route_declared = false, false), count(*) FROM handoffs"
            " WHERE first_seen_ns >= $since AND first_seen_ns < $until GROUP BY 1, 2, 3, 4",
            {"now": now, "since": since, "until": until},
        ):
            count, unhealthy, und, verdicts = got.get((frm, to), (0, 0, 0, {}))
            verdicts = {**verdicts, v: verdicts.get(v, 0) + n}
            got[(frm, to)] = (
                count + n,
                unhealthy + n * (v in sc.FAILURE_VERDICTS),
                und + n * undeclared,
                verdicts,
            )
        return got

    day = 86_400
    for since_s, until_s in [
        (T0 / S - 3 * day - 60, None),  # everything
        (T0 / S - 1.5 * day, None),  # a partial day, whole days, today
        (T0 / S - 2.3 * day, T0 / S - 0.6 * day),  # partial ends on both sides
        (T0 / S - 5000.5, T0 / S - 1234.25),  # inside one day: hours and partial hours
        (T0 / S - 100, T0 / S - 50),  # inside one hour: all live
    ]:
        params = {"since": f"{since_s:.3f}"}
        until_ns = 2**63 - 1
        if until_s is not None:
            params["until"] = f"{until_s:.3f}"
            until_ns = int(round(until_s * 1000)) * 10**6
        since_ns = int(round(since_s * 1000)) * 10**6
        # Asked now, and as of earlier times: the rollups count each handoff under the
        # verdict its timeline ends in, and the flips still ahead of the asked time are
        # corrected (engine step 21), whichever those are.
        for now in (time.time_ns(), T0 - 86_400 * S, T0 - 2 * 86_400 * S):
            got = via_api(now, **params)
            want = brute(now, since_ns, until_ns)
            assert {k: v[:3] for k, v in got.items()} == {k: v[:3] for k, v in want.items()}, (
                params,
                now,
            )
            assert {k: v[3] for k, v in got.items()} == {k: v[3] for k, v in want.items()}
    assert c.q("SELECT count(*) FROM edge_daily") != [(0,)]
    c.store.close()


def test_turn_limit_cut_loop_is_a_loop_not_a_failed_admission(col):
    col.send(
        request("t", "1", "A", "B", turn=1, fp="x", sv=1),
        accept("t", "1"),
        request("t", "2", "B", "A", turn=2, fp="x", sv=1, at=2),
        accept("t", "2", at=3),
        request("t", "3", "A", "B", turn=3, fp="x", sv=1, at=4),  # never gets its turn
    )
    assert col.verdict("t", "3") == sc.DESTINATION_NOT_STARTED  # the run is still going
    col.send(run_span("t", sc.RUN_STATUS_MAX_TURNS, dur=9))
    assert col.verdict("t", "3") == sc.LOOP  # the turn limit stopped the ping-pong
    assert col.handoff("t", "3")["run_stopped"] is True
    assert col.run_verdict("t") == sc.LOOP and col.run("t")["failed"] is True


def test_a_completed_run_cut_while_cycling_is_a_loop_not_a_failed_admission(col):
    """A source that never reports its limit (AutoGen's Swarm(max_turns=...)) ends a cut
    ping-pong as completed, its last request never admitted (no fingerprints, no state)."""
    col.send(
        request("u", "1", "A", "B", fp=None, sv=None, turn=1),
        accept("u", "1"),
        request("u", "2", "B", "A", fp=None, sv=None, turn=2, at=2),
        accept("u", "2", at=3),
        request("u", "3", "A", "B", fp=None, sv=None, turn=3, at=4),
        accept("u", "3", at=5),
        request("u", "4", "B", "A", fp=None, sv=None, turn=4, at=6),  # never gets its turn
    )
    col.send(run_span("u", sc.RUN_STATUS_COMPLETED, dur=9))
    assert [col.verdict("u", h) for h in "1234"] == [sc.HEALTHY, *[sc.LOOP] * 3]
    assert col.run_verdict("u") == sc.LOOP and col.run("u")["failed"] is False
    # The same run onward to a new agent that never ran is a failed admission.
    col.send(
        request("v", "1", "A", "B", fp=None, sv=None, turn=1),
        accept("v", "1"),
        request("v", "2", "B", "A", fp=None, sv=None, turn=2, at=2),
        accept("v", "2", at=3),
        request("v", "3", "A", "C", fp=None, sv=None, turn=3, at=4),
        run_span("v", sc.RUN_STATUS_COMPLETED, dur=9),
    )
    assert col.verdict("v", "3") == sc.DESTINATION_NOT_STARTED
    assert col.run_verdict("v") == sc.DESTINATION_NOT_STARTED


# --- real topologies (issue 10) ---------------------------------------------------------------


def test_a_second_wait_does_not_inherit_the_first_ones_decision(col):
    """Sequential approvals in one run, told apart by their resume token."""
    decided = {sc.WAIT_DECISION: sc.WAIT_DECISION_APPROVED, sc.WAIT_RESUME_TOKEN_ID: "tok1"}
    col.send(
        run_span("q", sc.RUN_STATUS_STARTED),
        wait("q", None, at=1),
        span(sc.SPAN_WAIT, "q", at=2, a=decided),
    )
    assert col.run("q")["pending_approvals"] == 0
    col.send(wait("q", None, at=3, a={sc.WAIT_RESUME_TOKEN_ID: "tok2"}))
    r = col.run("q")
    assert r["pending_approvals"] == 1
    assert col.run_verdict("q") == sc.WAITING_ON_APPROVAL
    (token,) = col.q("SELECT resume_token_id FROM waits")
    assert token == ("tok2",)


def test_verification_is_expected_once_the_service_reported_an_outcome(tmp_path, store_target):
    c = Collector(store_target(tmp_path / "policy.duckdb"), require_outcome=())
    # Never verified: completed runs are unverified (not a failure).
    c.send(request("u1", "h", "A", "B"), accept("u1", "h"), run_span("u1", "completed", at=2))
    assert c.run_verdict("u1") == sc.UNVERIFIED
    assert c.run("u1")["unverified"] is True and c.run("u1")["false_complete"] is False
    assert c.verdict("u1", "h") == sc.HEALTHY
    # The service starts verifying; a later run that completes without proof is false.
    c.send(run_span("v1", "completed", at=10), outcome("v1", sc.OUTCOME_PASS, at=11))
    assert c.run_verdict("v1") == sc.HEALTHY
    c.send(run_span("f1", "completed", at=20))
    assert c.run_verdict("f1") == sc.FALSE_COMPLETE
    # The run that ended before any verifier existed stays unverified, across a restart.
    c.restart()
    assert c.run_verdict("u1") == sc.UNVERIFIED
    c.send(run_span("f2", "completed", at=30))
    assert c.run_verdict("f2") == sc.FALSE_COMPLETE
    # A failing verifier is a false completion whatever the policy.
    d = Collector(store_target(tmp_path / "fail.duckdb"), require_outcome=())
    d.send(run_span("x", "completed"), outcome("x", sc.OUTCOME_FAIL))
    assert d.run_verdict("x") == sc.FALSE_COMPLETE
    c.store.close()
    d.store.close()


def test_delegations_stay_out_of_handoff_counts_and_the_review(col):
    col.send(
        request("d", "t1", "lead", "researcher", turn=1, a={sc.KIND: sc.KIND_DELEGATION}),
        accept("d", "t1"),
        request("d", "h1", "lead", "writer", turn=2, sv=2),
        accept("d", "h1", at=3),
    )
    r = col.run("d")
    assert (r["handoff_count"], r["delegation_count"]) == (1, 1)
    assert r["path"] == ["lead", "writer"]
    assert col.q("SELECT sum(handoffs) FROM handoff_daily") == [(1,)]
    assert col.q("SELECT sum(handoffs) FROM edge_hourly") == [(1,)]


def test_crashed_and_limited_runs_are_run_failed(col):
    col.send(
        request("c", "h", "A", "B"), accept("c", "h"), run_span("c", sc.RUN_STATUS_FAILED, at=3)
    )
    assert col.run_verdict("c") == sc.RUN_FAILED and col.verdict("c", "h") == sc.HEALTHY
    # A handoff whose destination the crash cut off: the run's failure, no grace to wait.
    col.send(request("k", "h", "A", "B"), run_span("k", sc.RUN_STATUS_FAILED, at=1))
    assert col.verdict("k", "h") == sc.RUN_FAILED
    # A dropped parallel destination of a completed run: never started.
    col.send(
        request("p", "h1", "A", "B", turn=1, a={sc.REASON: sc.REASON_SEND}),
        accept("p", "h1"),
        request("p", "h2", "A", "C", turn=1, a={sc.REASON: sc.REASON_SEND}),
        run_span("p", sc.RUN_STATUS_COMPLETED, at=2),
        outcome("p", sc.OUTCOME_PASS),
    )
    assert col.verdict("p", "h2") == sc.DESTINATION_NOT_STARTED
    assert col.run("p")["path"] == ["A", "B"]


# --- across services (A2A) and turns ------------------------------------------------------


def _task(run, hid, state, *, at, started=None):
    a = {sc.A2A_TASK_STATE: state, sc.A2A_TASK_ID: "task-1"}
    if started is not None:
        a[sc.DESTINATION_STARTED] = started
    return span(sc.SPAN_ACCEPT, run, hid, at=at, a=a)


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        # The remote agent refused the task: A2A states no reason code.
        ([(sc.A2A_SUBMITTED, None), (sc.A2A_REJECTED, None)], sc.CONTRACT_REJECTED),
        # It started, then failed or was canceled: that leg failed.
        ([(sc.A2A_WORKING, True), (sc.A2A_FAILED, None)], sc.RUN_FAILED),
        ([(sc.A2A_WORKING, True), (sc.A2A_CANCELED, None)], sc.RUN_FAILED),
        # The receiver's clock is behind: its `failed` carries an earlier time than the
        # `working` the sender saw, and still ends the task (a terminal state wins).
        ([(sc.A2A_FAILED, None), (sc.A2A_WORKING, True)], sc.RUN_FAILED),
        ([(sc.A2A_WORKING, True), (sc.A2A_COMPLETED, None)], sc.HEALTHY),
    ],
)
def test_a_task_sent_to_another_service_is_judged_by_its_latest_state(col, states, expected):
    spans = [request("a2a", "h", "triage", "remote")]
    spans += [_task("a2a", "h", s, at=1 + i, started=st) for i, (s, st) in enumerate(states)]
    col.send(*spans)
    assert col.verdict("a2a", "h") == expected
    h = col.handoff("a2a", "h")
    terminal = [s for s, _ in states if s not in (sc.A2A_SUBMITTED, sc.A2A_WORKING)]
    assert (h["task_id"], h["task_state"]) == ("task-1", terminal[-1])


def test_a_run_says_where_it_started_and_which_conversation_it_is_a_turn_of(col):
    col.send(
        run_span(
            "t",
            sc.RUN_STATUS_STARTED,
            a={
                sc.GEN_AI_AGENT_NAME: "triage",
                sc.GEN_AI_CONVERSATION_ID: "c-1",
                sc.RUN_ENTRY_AGENTS: ["triage", "Front desk"],
            },
        ),
        request("t", "h1", "triage", "refund", at=1),
        accept("t", "h1", at=2),
        request("t", "h2", "refund", "billing", at=3),
        accept("t", "h2", at=4),
        # The end names the final agent, not where the run started.
        run_span("t", sc.RUN_STATUS_COMPLETED, at=5, a={sc.RUN_FINAL_AGENT: "billing"}),
    )
    r = col.run("t")
    assert (r["start_agent"], r["first_to_agent"], r["final_agent"]) == (
        "triage",
        "refund",
        "billing",
    )
    assert r["conversation_id"] == "c-1"
    assert list(r["entry_agents"]) == ["Front desk", "triage"]
    # Without a start span naming it: the first handoff's sender.
    col.send(request("u", "h1", "refund", "billing"), accept("u", "h1"))
    assert col.run("u")["start_agent"] == "refund"
