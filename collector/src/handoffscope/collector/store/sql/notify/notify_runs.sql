-- Notifier: runs seen since $since that loop (any status), or that are still in flight
-- (no terminal run.status, as in live_runs.sql), silent since before $stuck_before and
-- not waiting on a person (pending_approvals = 0; the wait events cover those).
-- The same filter as live_runs.sql and health_runs.sql, so a run the notifier calls
-- stuck is one the Live board and /metrics count too.
SELECT
    run_id, service, current_agent, last_handoff_ns, last_seen_ns, status, loop, loop_cycle,
    pending_approvals,
    coalesce(last_handoff_ns, last_seen_ns) AS last_activity_ns,
    hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict_now
FROM runs
WHERE last_seen_ns >= $since
  AND (
    loop
    OR (
        (status IS NULL OR status = $started)
        AND coalesce(last_handoff_ns, last_seen_ns) < $stuck_before
        AND pending_approvals = 0
    )
  )
ORDER BY last_seen_ns, run_id;
