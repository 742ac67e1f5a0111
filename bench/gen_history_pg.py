"""Generate a handoff history inside a PostgreSQL store, set-based (gen_history_pg.sql).

gen_history.py pushes every span through the store and the health engine, which is
right for a DuckDB file and far too slow for ten million handoffs over a network
connection; here PostgreSQL writes the derived tables itself (`INSERT ... SELECT` from
`generate_series`), shaped like gen_history.py's history (same services, agents, run
sizes and verdict mix; see the SQL file's header for what is simplified). The schema is
the collector's own: the store's and the health engine's numbered steps are applied
first (as a collector starting on the database would), then the tables filled and
ANALYZEd. The database must hold no handoffs yet.

    .venv/bin/python bench/gen_history_pg.py --dsn postgresql://u@host:5432/db               # 1M
    .venv/bin/python bench/gen_history_pg.py --dsn postgresql://u@host:5432/db --handoffs 10000000

Prints the rows written per table and the time taken.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from gen_history import statements_of  # bench/ is on sys.path: these scripts run as files

from handoffscope.collector.engine import HealthEngine, turns
from handoffscope.collector.store.postgres_store import PostgresStore

HERE = Path(__file__).resolve().parent
SQL = HERE / "gen_history_pg.sql"
TABLES = (
    "handoffs", "runs", "waits", "handoff_daily", "edge_hourly", "edge_daily",
    "edge_runs", "edge_runs_daily", "run_daily", "services", "turns", "turn_daily",
    "turn_entries",
)  # fmt: skip
S = 10**9


def generate(
    dsn: str, handoffs: int, *, days: float = 28.0, grace_seconds: float = 30.0
) -> dict[str, int]:
    """Fill the derived tables of the store at `dsn`; return rows per table."""
    store = PostgresStore(dsn)
    try:
        HealthEngine(grace_seconds=grace_seconds).install(store.con)
        con = store.con
        if con.execute("SELECT count(*) FROM handoffs").fetchone()[0]:
            raise SystemExit("the store already holds handoffs: generate into an empty database")
        params = {
            "handoffs": handoffs,
            "now_ns": time.time_ns(),
            "span_ns": int(days * 86_400 * S),
            "grace_ns": int(grace_seconds * S),
        }
        con.begin()
        for sql in statements_of(SQL.read_text()):
            con.execute(sql, {k: v for k, v in params.items() if f"%({k})s" in sql})
        # Each run's turn and the weekly review's turn rollups (engine/turns.py).
        turns.rebuild(con)
        con.commit()
        for table in TABLES:
            con.execute(f"ANALYZE {table}")
        con.commit()
        return _counts(con)
    finally:
        store.close()


def counts(dsn: str) -> dict[str, int]:
    """Rows per table of a history generated earlier (bench_scale_out.py --history)."""
    store = PostgresStore(dsn)
    try:
        return _counts(store.con)
    finally:
        store.close()


def _counts(con) -> dict[str, int]:
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dsn", required=True, help="postgresql://... of an empty database")
    p.add_argument("--handoffs", type=int, default=1_000_000, help="handoffs to generate")
    p.add_argument("--days", type=float, default=28.0, help="history spread over this many days")
    p.add_argument("--grace-seconds", type=float, default=30.0)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    rows = generate(args.dsn, args.handoffs, days=args.days, grace_seconds=args.grace_seconds)
    print(f"wrote {args.handoffs:,} handoffs in {time.perf_counter() - t0:.0f} s:")
    for table, n in rows.items():
        print(f"  {table:<16} {n:>11,} rows")


if __name__ == "__main__":
    main()
