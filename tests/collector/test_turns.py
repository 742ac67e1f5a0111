"""The weekly review's turn counts, kept by the judge (engine/turns.py), agree with the
conversations as continuity.sql tells them, however the runs arrive.

A REAL collector (two judge worker processes, so a conversation's runs are judged by
different shards) is sent runs of a few conversations over OTLP/HTTP by a real SDK
exporter, in random order: a run's start in one export and its end in another, a later
turn before an earlier one, a run started between two stored ones. After each export
the weekly review's `continuity` (turn_daily and turn_entries) must count, per service
and continuity, exactly the later turns `/api/v1/conversations/{id}` lists (continuity.sql
over the runs themselves), and each run's detail (run_turn.sql, over `turns`) must tell
its turn as its conversation does. Then retention deletes a conversation's first runs: the next
kept run becomes its first, in both. On `--store postgresql` the same, against a real
PostgreSQL server.
"""

from __future__ import annotations

import random
import time
from collections import Counter

import httpx
import pytest
from support import turns as turn_counts
from support.collector import judged
from support.evidence import request
from support.polling import eventually

from handoffscope.collector.engine import HealthEngine, turns
from handoffscope.collector.store.duckdb_store import DuckDBStore
from handoffscope.collector.store.steps import ddl_dir, read_steps
from handoffscope.instrumentation import semconv as sc

S = 10**9
AGENTS = ("triage", "refund", "billing", "sales")
SERVICES = ("desk", "shop")


def _runs(rng: random.Random, t0: int) -> list[dict]:
    """Runs of four conversations (two per service): each starts at some agent (most at
    triage), hands to another, ends at it; some declare their entry agents. Ids are
    tagged per call (several calls may share a store)."""
    tag = rng.randrange(10**6)
    runs = []
    for c in range(4):
        service = SERVICES[c % 2]
        for k in range(rng.randint(3, 6)):
            start = rng.choice(("triage", "triage", *AGENTS))
            to = rng.choice([a for a in AGENTS if a != start])
            runs.append(
                {
                    "run_id": f"run-{tag}-{c}-{k}",
                    "conversation": f"conv-{tag}-{c}",
                    "service": service,
                    "t": t0 + (c * 60 + k * 7 + rng.randint(0, 5)) * S,
                    "start": start,
                    "to": to,
                    "entry": ("triage",) if rng.random() < 0.3 else (),
                }
            )
    return runs


def _pieces(run: dict) -> list[tuple[str, list[tuple]]]:
    """A run's spans in two pieces — start and handoff; end — each (service, spans)."""
    rid, t = run["run_id"], run["t"]
    common = {sc.RUN_ID: rid, sc.GEN_AI_CONVERSATION_ID: run["conversation"]}
    start = {
        **common,
        sc.RUN_STATUS: sc.RUN_STATUS_STARTED,
        sc.GEN_AI_AGENT_NAME: run["start"],
        **({sc.RUN_ENTRY_AGENTS: list(run["entry"])} if run["entry"] else {}),
    }
    handoff = {**common, sc.HANDOFF_ID: f"{rid}-h1", **request(run["start"], run["to"])}
    end = {**common, sc.RUN_STATUS: sc.RUN_STATUS_COMPLETED}
    return [
        (
            run["service"],
            [(sc.SPAN_RUN, start, t), (sc.SPAN_REQUEST, handoff, t + S)],
        ),
        (run["service"], [(sc.SPAN_RUN, end, t + 3 * S)]),
    ]


def _send(senders: dict, piece: tuple[str, list[tuple]]) -> None:
    service, spans = piece
    for name, attrs, at in spans:
        senders[service].emit(name, attrs, start_time=at, end_time=at + S // 10)


def _weekly(api: str) -> Counter:
    body = httpx.get(f"{api}/api/v1/review/weekly", params={"weeks": 2}, timeout=30).json()
    got: Counter = Counter()
    for w in body["continuity"]:
        for key in ("continued", "rerouted", "diverted", "unknown"):
            got[(w["service"], key)] += w[key]
    return +got


TURN_FIELDS = {
    "continuity": "continuity",
    "position": "conversation_position",
    "previous_run_id": "previous_run_id",
    "previous_final_agent": "previous_final_agent",
}
"""A conversation's run (continuity.sql, over the runs) and that run's detail (run_turn.sql,
over the judge's `turns`): the same turn, field by field."""


def _told(api: str, conversations: list[str]) -> Counter:
    """The later turns of every conversation as continuity.sql tells them, counted; each
    run's detail must tell its turn the same."""
    told: Counter = Counter()
    for cid in conversations:
        r = httpx.get(f"{api}/api/v1/conversations/{cid}", timeout=30)
        if r.status_code == 404:
            continue
        for run in r.json()["runs"]:
            if run["continuity"] != sc.CONTINUITY_FIRST:
                told[(run["service"], run["continuity"] or "unknown")] += 1
            detail = httpx.get(f"{api}/api/v1/runs/{run['run_id']}", timeout=30).json()
            assert {k: detail[d] for k, d in TURN_FIELDS.items()} == {
                k: run[k] for k in TURN_FIELDS
            }, run["run_id"]
    return +told


def _deliver(
    rng: random.Random, collectors: list, otlp_sender_factory, judged_all, earlier=()
) -> list[str]:
    """Send runs in random pieces, export by export (each to the next collector); after
    each, the weekly review must count what the conversations tell (these and those of
    `earlier` rounds on the same store). Returns every conversation so far."""
    senders = [{s: otlp_sender_factory(c, service=s) for s in SERVICES} for c in collectors]
    runs = _runs(rng, time.time_ns() - 3600 * S)
    pieces = [p for run in runs for p in _pieces(run)]
    rng.shuffle(pieces)
    conversations = sorted({r["conversation"] for r in runs})
    every = [*earlier, *conversations]
    before = sum(_told(collectors[0].http_endpoint, list(earlier)).values())
    exports = 0
    told: Counter = Counter()
    while pieces:
        to = senders[exports % len(senders)]
        for _ in range(rng.randint(1, 6)):
            if pieces:
                _send(to, pieces.pop())
        for sender in to.values():
            if sender.pending():
                sender.send()
        exports += 1
        judged_all()
        for c in collectors:
            told = _told(c.http_endpoint, every)
            assert _weekly(c.http_endpoint) == told, f"after export {exports}"
    # Every run has arrived: every conversation's later turns are counted.
    assert sum(told.values()) - before == len(runs) - len(conversations)
    assert {c for (_, c) in told} - {"unknown"}, told  # some turns were told something
    return every


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_weekly_turns_agree_with_the_conversations_however_runs_arrive(
    collector_factory, otlp_sender_factory, seed: int
) -> None:
    proc = collector_factory(args=("--judge-workers", "2"))
    _deliver(random.Random(seed), [proc], otlp_sender_factory, lambda: judged(proc.http_endpoint))


def test_on_postgresql_two_collectors_keep_the_turns_of_conversations_they_share(
    postgres_dsn: str, collector_factory, otlp_sender_factory
) -> None:
    """Each collector judges its partitions; a conversation's runs fall in both, so both
    re-tell its turns (lock_conversations.sql keeps them from overwriting each other)."""
    import psycopg

    pg = [collector_factory(args=("--store", postgres_dsn)) for _ in range(2)]

    def judged_all() -> None:
        def listed() -> int:
            with psycopg.connect(postgres_dsn, autocommit=True) as con:
                return con.execute("SELECT count(*) FROM judge_work").fetchone()[0]

        eventually(listed, lambda n: n == 0, timeout=60, every=0.05, what="judged")

    eventually(
        lambda: [c.raw_healthz()["judge_partitions_held"] for c in pg],
        lambda held: all(held) and sum(held) == 16,
        timeout=60,
        what="partitions shared",
    )
    seen: list[str] = []
    for seed in (4, 5):
        seen = _deliver(random.Random(seed), pg, otlp_sender_factory, judged_all, seen)


@pytest.mark.duckdb_only("it reads the DuckDB file in-process after the collector stopped")
def test_retention_makes_the_next_kept_run_a_conversations_first(
    collector_factory, otlp_sender_factory
) -> None:
    rng = random.Random(7)
    proc = collector_factory()
    senders = {s: otlp_sender_factory(proc, service=s) for s in SERVICES}
    t0 = time.time_ns() - 3600 * S
    runs = _runs(rng, t0)
    for run in runs:
        for piece in _pieces(run):
            _send(senders, piece)
    for sender in senders.values():
        sender.send()
    judged(proc.http_endpoint)
    db = proc.db_path
    proc.stop()

    store = DuckDBStore(str(db))
    try:
        engine = HealthEngine()
        engine.install(store.con)
        engine.load(store.con)
        con = store.con
        # The first two runs of each conversation end before the cutoff; the rest after.
        cutoff = t0 + 15 * S
        con.begin()
        con.execute("UPDATE runs SET last_seen_ns = first_seen_ns")
        con.commit()
        con.begin()
        engine.retention(con, cutoff)
        turns.expire(con)
        con.commit()
        weekly = turn_counts.weekly(con)
        told = turn_counts.told(con, time.time_ns())
        assert weekly == told
        kept = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        kept_conversations = con.execute(
            "SELECT count(DISTINCT conversation_id) FROM runs"
        ).fetchone()[0]
        assert 0 < kept < len(runs)
        assert sum(told.values()) == kept - kept_conversations
        # Rebuilt from nothing, the tables hold what the deltas made of them.
        kept_rows = _tables(con)
        con.begin()
        turns.rebuild(con)
        con.commit()
        assert _tables(con) == kept_rows
        # A store from before engine step 25: the step, then every turn told at install.
        con.execute("DROP TABLE turns; DROP TABLE turn_daily; DROP TABLE turn_entries")
        con.execute("UPDATE meta SET value = '24' WHERE key = 'engine_version'")
        latest = len(read_steps(ddl_dir("engine")))
        assert HealthEngine().install(con) == (24, latest)
        assert _tables(con) == kept_rows
        assert HealthEngine().install(con) == (latest, latest)  # once
        assert _tables(con) == kept_rows
    finally:
        store.close()


def _tables(con) -> dict[str, list[tuple]]:
    return {
        "turns": sorted(con.execute("SELECT * FROM turns").fetchall()),
        "turn_daily": sorted(con.execute("SELECT * FROM turn_daily WHERE turns <> 0").fetchall()),
        "turn_entries": sorted(
            con.execute("SELECT * FROM turn_entries WHERE declared <> 0 OR firsts <> 0").fetchall()
        ),
    }
