-- GET /api/v1/runs: runs first seen in [$since, $until), newest first.
-- The time filter comes first and is a plain range on first_seen_ns: runs are appended
-- in update order, so row-group min/max skips the weeks outside the window.
-- The verdict is judged at $now from the stored timeline (hs_verdict_at), so
-- destination_not_started / approval_overdue appear the moment they become true.
-- $service and $verdict are NULL when not asked for.
WITH r AS (
    SELECT
        run_id, service, status, started_ns, first_seen_ns, last_seen_ns, current_agent,
        handoff_count, loop, false_complete, failed, pending_approvals, turns,
        unverified, delegation_count,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict
    FROM runs
    WHERE first_seen_ns >= $since
      AND first_seen_ns < $until
      AND ($service::VARCHAR IS NULL OR service = $service)
)
SELECT *
FROM r
WHERE $verdict::VARCHAR IS NULL OR verdict = $verdict
ORDER BY first_seen_ns DESC, run_id
LIMIT $limit;
