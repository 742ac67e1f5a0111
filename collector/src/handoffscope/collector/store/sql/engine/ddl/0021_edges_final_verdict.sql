-- Engine step 21: the control-flow rollups count every handoff (but delegations) under
-- the verdict its timeline ends in, not only those whose verdict no longer depends on
-- time (steps 7 and 9). The edges query read every handoff with a flip live, over the
-- whole window, and a flip's handoff never left that set once its time had passed:
-- 19k of 10M handoffs, 221 ms of the 30-day edges query on DuckDB and most of its time
-- on PostgreSQL. Now the queries correct only the handoffs whose last flip is still
-- ahead of the asked time (query/edges.sql, query/health_handoffs.sql), a handful.
-- This step adds the handoffs the rollups left out; the engine counts new ones so
-- (engine/__init__.py: edge_key).
INSERT INTO edge_hourly BY NAME
SELECT
    first_seen_ns // 3600000000000 AS hour,
    coalesce(service, '') AS service,
    coalesce(from_agent, '') AS from_agent,
    coalesce(to_agent, '') AS to_agent,
    CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict ELSE flip1_verdict END AS verdict,
    coalesce(route_declared = false, false) AS undeclared,
    count(*) AS handoffs
FROM handoffs
WHERE flip1_ns IS NOT NULL AND kind IS DISTINCT FROM 'delegation'
GROUP BY ALL
ON CONFLICT DO UPDATE SET handoffs = edge_hourly.handoffs + excluded.handoffs;

INSERT INTO edge_daily BY NAME
SELECT
    first_seen_ns // 86400000000000 AS day,
    coalesce(service, '') AS service,
    coalesce(from_agent, '') AS from_agent,
    coalesce(to_agent, '') AS to_agent,
    CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict ELSE flip1_verdict END AS verdict,
    coalesce(route_declared = false, false) AS undeclared,
    count(*) AS handoffs
FROM handoffs
WHERE flip1_ns IS NOT NULL AND kind IS DISTINCT FROM 'delegation'
GROUP BY ALL
ON CONFLICT DO UPDATE SET handoffs = edge_daily.handoffs + excluded.handoffs;
