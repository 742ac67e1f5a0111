-- Live board: handoffs first seen since $since, counted per minute and verdict (judged
-- at $now). The endpoint sums the minutes for the per-verdict totals, so one scan
-- serves both. Delegations (agents called as tools) are not handoffs: not counted.
-- PostgreSQL: div() for //, cast back to bigint (div() of two bigints is numeric, which
-- reaches Python as a Decimal), explicit GROUP BY.
SELECT
    div(first_seen_ns, 60000000000)::bigint AS minute,
    hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict,
    count(*) AS count
FROM handoffs
WHERE first_seen_ns >= $since
  AND (kind IS NULL OR kind = 'handoff')
  AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
GROUP BY 1, 2
ORDER BY minute, verdict;
