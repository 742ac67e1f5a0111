-- /metrics: settled handoffs per service, edge and verdict over everything retained.
-- From the daily edge rollup (0009_edge_daily.sql), a few rows per edge and day, so a
-- scrape never scans `handoffs`. Settled means the verdict no longer depends on time;
-- handoffs still in flight or waiting are counted when they settle (their time-based
-- state is what the runs and approvals gauges show). The rollup counts a handoff under
-- the verdict its timeline ends in already (engine step 21), so the few whose last flip
-- is still ahead of $now are taken back out. '' stands for unknown.
-- One text for both databases (GROUP BY by position); on PostgreSQL handoffs_last_flip
-- (engine step 14) finds the flips ahead.
WITH parts AS (
    SELECT service, from_agent, to_agent, verdict, handoffs
    FROM edge_daily
    UNION ALL
    SELECT
        coalesce(service, ''),
        coalesce(from_agent, ''),
        coalesce(to_agent, ''),
        CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict ELSE flip1_verdict END,
        -1
    FROM handoffs
    WHERE coalesce(flip2_ns, flip1_ns) > $now
      -- Implied by the line above (it compares one of the two); it lets DuckDB skip by
      -- row-group min/max the row groups whose flips are all past (the coalesce alone
      -- reads every row).
      AND (flip2_ns > $now OR flip1_ns > $now)
      AND flip1_ns IS NOT NULL
      AND kind IS DISTINCT FROM 'delegation'
)
SELECT service, from_agent, to_agent, verdict, sum(handoffs)::BIGINT AS n
FROM parts
GROUP BY 1, 2, 3, 4
HAVING sum(handoffs) <> 0;
