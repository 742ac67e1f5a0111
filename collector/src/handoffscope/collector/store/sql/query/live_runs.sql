-- Live board: runs still in flight (no terminal run.status yet), however old their last
-- evidence, worst first: stuck runs (silent past $stuck_before, not held by a wait)
-- longest-silent first, then looping runs, then the rest by silence. How many there are
-- in all is health_runs.sql's `in_flight` (the same rows, counted): a `count(*) OVER ()`
-- here materialized every in-flight run before the top N (90 of 167 ms with 300k runs
-- in flight at ten million handoffs).
WITH r AS (
    SELECT
        run_id, service, current_agent, last_handoff_ns, last_seen_ns, loop, pending_approvals,
        model_calls, budget_remaining, budget_total,
        coalesce(last_handoff_ns, last_seen_ns) AS last_activity_ns,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict
    FROM runs
    WHERE (status IS NULL OR status = $started)
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
)
SELECT
    *,
    hs_stuck(TRUE, last_activity_ns, pending_approvals, $stuck_before) AS stuck
FROM r
ORDER BY stuck DESC, loop DESC, last_activity_ns, run_id
LIMIT $limit;
