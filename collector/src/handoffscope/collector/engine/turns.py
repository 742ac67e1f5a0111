"""Each run's turn in its conversation, kept as the judge writes runs, and the weekly
review's turn rollups kept exact beside it.

A run's continuity (docs/semconv.md, "Turns"; `verdicts.continuity` is the definition)
depends on the run before it in its conversation — where that one ended — and on the
service's entry agents. Telling it at query time means ordering every run of every
conversation: 0.75–1.1 s of the weekly review's 5–6 s at ten million handoffs. So each
judge step, in its own transaction, turns again the conversations its runs are in:

- `turns` holds one row per run: what its continuity is told from, its previous run's
  final agent included (engine step 25);
- `turn_daily` counts the later turns per day, service and those inputs;
- `turn_entries` counts, per service and agent, the runs declaring it an entry agent and
  the conversations whose first run started at it.

The weekly review (query/continuity_weekly.sql) then reads two small tables. The rule
is continuity.sql's — conversations ordered by start, then run id — applied to every run
of each touched conversation (changed_turns.sql), and only the rows that differ come
back to be rewritten, with their +1/-1 deltas. Conversations span partitions, so on
PostgreSQL each is locked for the step's transaction first (lock_conversations.sql).

What moves a run's turn is its own row (start, end, conversation) and its neighbours':
a run arriving between two others, or retention deleting a conversation's first runs
(`expire`). The run rows' other columns (verdicts) never do.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable

import pyarrow as pa

from ..store import statements
from ..store.records import RunRecord
from ..store.statements import Connection

log = logging.getLogger(__name__)

NS_PER_DAY = 86_400 * 10**9
REBUILD_KEY = "turns_rebuild"
"""`meta` key set when every turn must be told again from the runs (engine step 25)."""

STR, I64, BOOL = pa.string(), pa.int64(), pa.bool_()
FACTS_SCHEMA = pa.schema(
    [
        ("run_id", STR),
        ("run_key", I64),
        ("conversation_id", STR),
        ("service", STR),
        ("first_seen_ns", I64),
        ("order_ns", I64),
        ("start_agent", STR),
        ("first_to_agent", STR),
        ("final_agent", STR),
    ]
)
"""What a run's turn is told from, as stored: `facts` less the declared entry agents
(counted in turn_entries straight from the engine's facts)."""
TURN_SCHEMA = pa.schema(
    [*FACTS_SCHEMA, pa.field("has_previous", BOOL), pa.field("previous_final", STR)]
)
"""The `turns` table's columns, in order: the facts, then the run before it."""
DECLARED_SCHEMA = pa.schema([("service", STR), ("agent", STR), ("declared", I64)])
"""Deltas of runs declaring an agent an entry agent, per service ('' for none) and agent."""
CHANGED_SCHEMA = pa.schema(
    [
        *(pa.field("new_" + f.name, f.type) for f in TURN_SCHEMA),
        *(
            pa.field("old_" + name, TURN_SCHEMA.field(name).type)
            for name in (
                "run_id",
                "run_key",
                "service",
                "first_seen_ns",
                "start_agent",
                "first_to_agent",
                "has_previous",
                "previous_final",
            )
        ),
    ]
)
"""The rows of changed_turns.sql (what the writing statements read as hs_turn_changed)."""
_KEY, _CONVERSATION, _SERVICE = (
    FACTS_SCHEMA.names.index(name) for name in ("run_key", "conversation_id", "service")
)
_ENTRY_AGENTS = len(FACTS_SCHEMA)
"""Where `facts` puts the declared entry agents: after the stored columns."""


def facts(row: RunRecord) -> tuple:
    """A run row's turn facts (`FACTS_SCHEMA`, in order, then its declared entry agents):
    what its turn and its successor's are told from. The engine keeps each run's last
    written, and reports those that moved."""
    return (
        row.run_id,
        row.run_key,
        row.conversation_id,
        row.service,
        row.first_seen_ns,
        row.first_seen_ns if row.started_ns is None else row.started_ns,
        row.start_agent,
        row.first_to_agent,
        row.current_agent if row.final_agent is None else row.final_agent,
        tuple(row.entry_agents or ()),
    )


def told(turn: tuple | None) -> bool:
    """Whether a run's `facts` count anywhere: it is in a conversation or declares entry
    agents (most runs of an app without conversations do neither: nothing to report)."""
    return turn is not None and (turn[_CONVERSATION] is not None or bool(turn[_ENTRY_AGENTS]))


def _table(rows: Iterable[tuple], schema: pa.Schema) -> pa.Table:
    """Rows as an Arrow table of `schema`, column-wise; a row's items past the schema's
    columns are left out (`facts` carries the declared entry agents last)."""
    cols = list(zip(*rows, strict=True))[: len(schema)] or [()] * len(schema)
    return pa.Table.from_arrays(
        [pa.array(list(c), f.type) for c, f in zip(cols, schema, strict=True)], schema=schema
    )


def refresh(con: Connection, moved: Iterable[tuple], gone: Iterable[tuple] = ()) -> int:
    """After a step, inside its transaction: the runs whose turn facts `moved` — (before,
    after) from the engine, before None for a new run — and the stored turns of runs
    `gone` ((run_id, run_key, conversation_id): deleted by retention) are written into
    the turns and the rollups, with every turn of their conversations that changed with
    them. Returns how many turn rows changed. A step with no run in a conversation reads
    nothing; what changed is written set-based (a step may carry 30k runs)."""
    declared: Counter[tuple] = Counter()
    fresh: list[tuple] = []
    keys: set[int] = set()
    conversations: set[str] = set()
    for _, key, conversation in gone:
        keys.add(key)
        conversations.add(conversation)
    for before, after in moved:
        if before is not None:
            if before[_ENTRY_AGENTS]:
                _declare(declared, before, -1)
            if before[_CONVERSATION] is not None:
                conversations.add(before[_CONVERSATION])
                keys.add(before[_KEY])
        if after[_ENTRY_AGENTS]:
            _declare(declared, after, 1)
        if after[_CONVERSATION] is not None:
            conversations.add(after[_CONVERSATION])
            keys.add(after[_KEY])
            fresh.append(after)
    delta = [(*k, n) for k, n in declared.items() if n]
    if not conversations:
        if delta:
            with statements.registered(con, _entry_tables(delta, CHANGED_SCHEMA.empty_table())):
                statements.run(con, "engine/upsert_turn_entries")
        return 0
    tables = {
        "hs_turn_fresh": _table(fresh, FACTS_SCHEMA),
        "hs_turn_runs": pa.table({"run_key": pa.array(sorted(keys), I64)}),
        "hs_turn_conversations": pa.table(
            {"conversation_id": pa.array(sorted(conversations), STR)}
        ),
    }
    with statements.registered(con, tables):
        statements.rows(con, "engine/lock_conversations")
        changed = statements.arrow(con, "engine/changed_turns")
    if changed.num_rows or delta:
        with statements.registered(con, _entry_tables(delta, changed)):
            if changed.num_rows:
                for name in ("delete_turns", "insert_turns", "upsert_turn_daily"):
                    statements.run(con, f"engine/{name}")
            statements.run(con, "engine/upsert_turn_entries")
    return changed.num_rows


def _declare(declared: Counter[tuple], side: tuple, sign: int) -> None:
    service = side[_SERVICE] or ""
    for agent in {a for a in side[_ENTRY_AGENTS] if a is not None}:
        declared[(service, agent)] += sign


def _entry_tables(delta: list[tuple], changed: pa.Table) -> dict[str, pa.Table]:
    """What upsert_turn_entries.sql reads: the declared entry agents' deltas, and the
    changed turns (their first runs)."""
    return {"hs_turn_declared": _table(delta, DECLARED_SCHEMA), "hs_turn_changed": changed}


def expire(con: Connection) -> int:
    """After retention deleted runs (their declared entry agents went with them:
    expire_turn_entries.sql): drop their turns and tell their conversations again, a
    conversation's next kept run becoming its first. Inside the caller's transaction."""
    return refresh(con, (), statements.rows(con, "engine/orphaned_turns"))


def rebuild(con: Connection) -> None:
    """Tell every turn again from the stored runs and count the rollups afresh, inside the
    caller's transaction (a store just upgraded to engine step 25; a generated history)."""
    for table in ("turns", "turn_daily", "turn_entries"):
        statements.run(con, f"engine/clear_{table}")
    for table in ("turns", "turn_daily", "turn_entries"):
        statements.run(con, f"engine/rebuild_{table}")


def rebuild_if_asked(con: Connection) -> bool:
    """Rebuild, in a transaction of its own, if engine step 25 asked for it (`meta`
    turns_rebuild); return whether it did. Each collector calls it after the engine's
    steps, under the schema lock on PostgreSQL, so one of them does it."""
    con.begin()
    try:
        asked = statements.rows(con, "get_meta", {"key": REBUILD_KEY})
        if not asked or asked[0][0] != "1":
            con.rollback()
            return False
        rebuild(con)
        statements.run(con, "set_meta", {"key": REBUILD_KEY, "value": "0"})
        con.commit()
    except BaseException:
        con.rollback()
        raise
    log.info("turns told again from the stored runs (engine step 25)")
    return True
