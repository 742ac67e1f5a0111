-- GET /api/v1/review/weekly: the daily rollup folded into ISO weeks since $start
-- (a Monday), one row per (week, edge, reason). The endpoint derives every view from
-- these rows (totals, by reason, by edge, by receiving agent): the rollup has a few
-- thousand rows however many handoffs there are, so one small read serves them all.
-- reason is '' for handoffs that were not rejected.
SELECT
    strftime(day, '%G-W%V') AS week,
    from_agent,
    to_agent,
    reason,
    sum(handoffs) AS handoffs
FROM handoff_daily
WHERE day >= $start
  AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
GROUP BY ALL
HAVING sum(handoffs) <> 0
ORDER BY week, from_agent, to_agent, reason;
