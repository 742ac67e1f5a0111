-- PostgreSQL engine step 14: the DuckDB engine's step 21 (engine/ddl/
-- 0021_edges_final_verdict.sql): the control-flow rollups count every handoff but
-- delegations under the verdict its timeline ends in; the queries correct the few whose
-- last flip is still ahead. The handoffs the rollups left out are added here.
INSERT INTO edge_hourly (hour, service, from_agent, to_agent, verdict, undeclared, handoffs)
SELECT
    first_seen_ns / 3600000000000,
    coalesce(service, ''),
    coalesce(from_agent, ''),
    coalesce(to_agent, ''),
    CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict ELSE flip1_verdict END,
    coalesce(route_declared = false, false),
    count(*)
FROM handoffs
WHERE flip1_ns IS NOT NULL AND kind IS DISTINCT FROM 'delegation'
GROUP BY 1, 2, 3, 4, 5, 6
ON CONFLICT (hour, service, from_agent, to_agent, verdict, undeclared)
DO UPDATE SET handoffs = edge_hourly.handoffs + excluded.handoffs;

INSERT INTO edge_daily (day, service, from_agent, to_agent, verdict, undeclared, handoffs)
SELECT
    first_seen_ns / 86400000000000,
    coalesce(service, ''),
    coalesce(from_agent, ''),
    coalesce(to_agent, ''),
    CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict ELSE flip1_verdict END,
    coalesce(route_declared = false, false),
    count(*)
FROM handoffs
WHERE flip1_ns IS NOT NULL AND kind IS DISTINCT FROM 'delegation'
GROUP BY 1, 2, 3, 4, 5, 6
ON CONFLICT (day, service, from_agent, to_agent, verdict, undeclared)
DO UPDATE SET handoffs = edge_daily.handoffs + excluded.handoffs;

-- The indexes of the two live reads edges.sql is left with (replacing step 11's one
-- over flips and delegations): delegations by first seen, and the handoffs whose last
-- flip may still be ahead, by that flip. IF [NOT] EXISTS: the test that replays this step
-- (test_engine.py) finds them made.
DROP INDEX IF EXISTS handoffs_live_edges;
CREATE INDEX IF NOT EXISTS handoffs_delegations ON handoffs (first_seen_ns) WHERE kind = 'delegation';
CREATE INDEX IF NOT EXISTS handoffs_last_flip ON handoffs ((coalesce(flip2_ns, flip1_ns)))
    WHERE flip1_ns IS NOT NULL AND kind IS DISTINCT FROM 'delegation';
