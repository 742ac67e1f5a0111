-- PostgreSQL engine step 11: indexes for the dashboard's reads that scanned a whole table
-- (found with EXPLAIN ANALYZE over bench/bench_scale_out.py's 1M-handoff history: a
-- parallel sequential scan of runs, 100-130 ms for 300k runs, once per read of the Live
-- board, and of handoffs, ~450 ms, for the control-flow view's 30-day window).
-- DuckDB skips row groups by min/max on these columns and needs none of this.
--
-- Runs by the time they were first seen: the runs list, loops and false completions
-- ask a window of first_seen_ns (runs_last_seen serves other reads).
CREATE INDEX runs_first_seen ON runs (first_seen_ns);
-- Runs still in flight (status NULL or 'started'): the Live board and /metrics read them
-- whatever their age; most runs have ended, so the index finds the few that have not.
CREATE INDEX runs_status ON runs (status);
-- The handoffs the control-flow rollups leave out and edges.sql reads live over the whole
-- window: those whose verdict still depends on time (flip1_ns set) and delegations. A
-- partial index holds only them, so a 30-day window reads a few thousand index entries
-- instead of every handoff of the month.
CREATE INDEX handoffs_live_edges ON handoffs (first_seen_ns)
    WHERE flip1_ns IS NOT NULL OR kind = 'delegation';
