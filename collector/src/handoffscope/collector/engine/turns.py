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
DAILY_SCHEMA = pa.schema(
    [
        ("day", I64),
        ("service", STR),
        ("start_agent", STR),
        ("first_to_agent", STR),
        ("previous_final", STR),
        ("turns", I64),
    ]
)
ENTRIES_SCHEMA = pa.schema([("service", STR), ("agent", STR), ("declared", I64), ("firsts", I64)])
_CONVERSATION = FACTS_SCHEMA.names.index("conversation_id")
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


def _table(rows: Iterable[tuple], schema: pa.Schema) -> pa.Table:
    cols = list(zip(*rows, strict=True)) or [()] * len(schema)
    return pa.Table.from_arrays(
        [pa.array(list(c), f.type) for c, f in zip(cols, schema, strict=True)], schema=schema
    )


def refresh(con: Connection, moved: Iterable[tuple], gone: Iterable[tuple] = ()) -> int:
    """After a step, inside its transaction: the runs whose turn facts `moved` — (before,
    after) from the engine, before None for a new run — and the stored turns of runs
    `gone` ((run_id, run_key, conversation_id): deleted by retention) are written into
    the turns and the rollups, with every turn of their conversations that changed with
    them. Returns how many turn rows changed. A step with no run in a conversation reads
    nothing."""
    entries: dict[tuple, list[int]] = {}
    fresh: list[tuple] = []
    keys: dict[str, int] = {}
    conversations: set[str] = set()
    for run_id, key, conversation in gone:
        keys[run_id] = key
        conversations.add(conversation)
    for before, after in moved:
        for side, sign in ((before, -1), (after, 1)):
            if side is None:
                continue
            service = side[3] or ""
            for agent in {a for a in side[_ENTRY_AGENTS] if a is not None}:
                entries.setdefault((service, agent), [0, 0])[0] += sign
            if side[_CONVERSATION] is not None:
                conversations.add(side[_CONVERSATION])
                keys[side[0]] = side[1]
        if after[_CONVERSATION] is not None:
            fresh.append(after[:_ENTRY_AGENTS])
    daily: Counter[tuple] = Counter()
    changed: list[dict] = []
    if conversations:
        tables = {
            "hs_turn_fresh": _table(fresh, FACTS_SCHEMA),
            "hs_turn_runs": pa.table({"run_key": pa.array(sorted(set(keys.values())), I64)}),
            "hs_turn_conversations": pa.table(
                {"conversation_id": pa.array(sorted(conversations), STR)}
            ),
        }
        with statements.registered(con, tables):
            statements.rows(con, "engine/lock_conversations")
            changed = statements.arrow(con, "engine/changed_turns").to_pylist()
    gone_rows: list[tuple] = []
    rows: list[tuple] = []
    for c in changed:
        if c["old_run_id"] is not None:
            gone_rows.append((c["old_run_id"], c["old_run_key"]))
            _count(daily, entries, c, "old_", -1)
        if c["new_run_id"] is not None:
            rows.append(tuple(c["new_" + f] for f in TURN_SCHEMA.names))
            _count(daily, entries, c, "new_", 1)
    if gone_rows:
        with statements.registered(con, {"hs_turn_gone": _table(gone_rows, KEYS_SCHEMA)}):
            statements.run(con, "engine/delete_turns")
    if rows:
        with statements.registered(con, {"hs_turn_rows": _table(rows, TURN_SCHEMA)}):
            statements.run(con, "engine/insert_turns")
    _write_deltas(con, daily, entries)
    return len(changed)


KEYS_SCHEMA = pa.schema([("run_id", STR), ("run_key", I64)])


def _count(
    daily: Counter[tuple], entries: dict[tuple, list[int]], c: dict, side: str, sign: int
) -> None:
    """Add (sign 1) or take back (-1) one turn row's share of the rollups, as
    rebuild_turn_daily.sql and rebuild_turn_entries.sql count them (a run's declared
    entry agents are counted from the engine's facts, in `refresh`)."""
    service = c[side + "service"] or ""
    start = c[side + "start_agent"]
    if c[side + "has_previous"]:
        key = (
            c[side + "first_seen_ns"] // NS_PER_DAY,
            service,
            start or "",
            c[side + "first_to_agent"] or "",
            c[side + "previous_final"] or "",
        )
        daily[key] += sign
    elif start is not None:
        entries.setdefault((service, start), [0, 0])[1] += sign


def _write_deltas(con: Connection, daily: Counter[tuple], entries: dict[tuple, list[int]]) -> None:
    delta = [(*k, n) for k, n in daily.items() if n]
    if delta:
        with statements.registered(con, {"hs_turn_daily_delta": _table(delta, DAILY_SCHEMA)}):
            statements.run(con, "engine/upsert_turn_daily")
    moved = [(*k, *v) for k, v in entries.items() if any(v)]
    if moved:
        with statements.registered(con, {"hs_turn_entries_delta": _table(moved, ENTRIES_SCHEMA)}):
            statements.run(con, "engine/upsert_turn_entries")


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
