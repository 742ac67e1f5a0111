-- GET /api/v1/review/weekly: the daily rollup folded into ISO weeks since $start
-- (a Monday), one row per (week, edge, reason). The endpoint derives every view from
-- these rows (totals, by reason, by edge, by receiving agent): the rollup has a few
-- thousand rows however many handoffs there are, so one small read serves them all.
-- reason is '' for handoffs that were not rejected.
-- PostgreSQL: to_char for strftime (ISO week), sum() cast back to BIGINT (PostgreSQL sums to numeric).
SELECT
    to_char(day, 'IYYY-"W"IW') AS week,
    from_agent,
    to_agent,
    reason,
    sum(handoffs)::BIGINT AS handoffs
FROM handoff_daily
WHERE day >= $start
  AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
GROUP BY 1, 2, 3, 4
HAVING sum(handoffs) <> 0
ORDER BY week, from_agent, to_agent, reason;
