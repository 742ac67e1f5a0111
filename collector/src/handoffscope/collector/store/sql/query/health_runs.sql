-- /metrics: runs in flight per service — the Live board's filter (live_runs.sql: no
-- terminal run.status, evidence since $since) counted instead of listed.
-- stuck: silent since before $stuck_before (now − grace) and not held by a person (a run
-- with an open or expired wait, pending_approvals > 0, is reported by the approvals
-- gauges instead: silence is what a wait looks like).
-- looping: the run's loop fact is set (find_loops over the run).
WITH r AS (
    SELECT
        service,
        coalesce(last_handoff_ns, last_seen_ns) AS last_activity_ns,
        loop,
        pending_approvals
    FROM runs
    WHERE last_seen_ns >= $since
      AND (status IS NULL OR status = $started)
)
SELECT
    service,
    count(*) AS in_flight,
    count(*) FILTER (
        WHERE last_activity_ns < $stuck_before AND pending_approvals = 0
    ) AS stuck,
    count(*) FILTER (WHERE loop) AS looping
FROM r
GROUP BY service;
