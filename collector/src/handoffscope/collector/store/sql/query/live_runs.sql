-- Live board: runs still in flight (no terminal run.status yet) that saw evidence
-- since $since, with the agent holding the work; most recent handoff first.
-- last_seen_ns tracks the newest evidence, and runs are appended as they change, so
-- the newest row groups hold these rows and the range filter skips the rest.
SELECT
    run_id, service, current_agent, last_handoff_ns, last_seen_ns,
    hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict
FROM runs
WHERE last_seen_ns >= $since
  AND (status IS NULL OR status = $started)
  AND ($service::VARCHAR IS NULL OR service = $service)
ORDER BY coalesce(last_handoff_ns, last_seen_ns) DESC, run_id
LIMIT $limit;
