-- /metrics: settled handoffs per service, edge and verdict over everything retained.
-- From the daily edge rollup (0009_edge_daily.sql), a few rows per edge and day, so a
-- scrape never scans `handoffs`. Settled means the verdict no longer depends on time;
-- handoffs still in flight or waiting are counted when they settle (their time-based
-- state is what the runs and approvals gauges show). '' stands for unknown.
-- PostgreSQL: explicit GROUP BY.
SELECT service, from_agent, to_agent, verdict, sum(handoffs)::BIGINT AS n
FROM edge_daily
GROUP BY 1, 2, 3, 4
HAVING sum(handoffs) <> 0;
