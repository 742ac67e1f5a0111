-- GET /api/v1/approvals: open and expired waits, overdue first, then uncertain, then
-- by deadline (soonest first; none last). The waits table holds only undecided and
-- expired waits, so it stays small and needs no time filter.
-- $overdue / $uncertain are the verdict names, bound from semconv; $offset pages through
-- every wait in this order (the answer's `total` counts them all).
WITH w AS (
    SELECT
        *,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, NULL::BIGINT, NULL::VARCHAR, $now) AS verdict_now
    FROM waits
    WHERE ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
)
SELECT *
FROM w
ORDER BY
    CASE verdict_now WHEN $overdue THEN 0 WHEN $uncertain THEN 1 ELSE 2 END,
    deadline_ns NULLS LAST,
    checkpointed_ns,
    run_id,
    handoff_id
LIMIT $limit OFFSET $offset;
