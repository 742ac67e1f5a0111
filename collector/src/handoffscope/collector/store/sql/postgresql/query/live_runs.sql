-- Live board: runs still in flight (no terminal run.status yet), however old their last
-- evidence (health_runs.sql counts the same rows), worst first: stuck runs (silent past
-- $stuck_before, not held by a wait) longest-silent first, then looping runs, then the
-- rest by silence. `total` is how many there are beyond $limit.
WITH r AS (
    SELECT
        run_id, service, current_agent, last_handoff_ns, last_seen_ns, loop, pending_approvals,
        coalesce(last_handoff_ns, last_seen_ns) AS last_activity_ns,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict
    FROM runs
    WHERE (status IS NULL OR status = $started)
      AND ($service::VARCHAR IS NULL OR service = $service)
)
SELECT
    *,
    last_activity_ns < $stuck_before AND pending_approvals = 0 AS stuck,
    count(*) OVER () AS total
FROM r
ORDER BY stuck DESC, loop DESC, last_activity_ns, run_id
LIMIT $limit;
