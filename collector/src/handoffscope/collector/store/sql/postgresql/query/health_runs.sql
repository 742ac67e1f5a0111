-- Runs in flight per service, counted: the figures behind /metrics' run gauges and the
-- Live board's tiles (GET /api/v1/live `board`), so both say the same thing.
-- In flight: no terminal run.status yet, however old the last evidence — a run stuck
-- for an hour is still in flight, and must not fall off the board as it ages.
-- stuck: silent since before $stuck_before (now − grace) and not held by a person (a run
-- with an open or expired wait, pending_approvals > 0, is counted by the approvals
-- figures instead: silence is what a wait looks like).
-- looping: the run's loop fact is set (find_loops over the run).
-- *_new: of those, the ones that became so inside the window [$since, now) — the trend.
-- $service is NULL for every service.
-- PostgreSQL: as DuckDB.
WITH r AS (
    SELECT
        service,
        first_seen_ns,
        coalesce(last_handoff_ns, last_seen_ns) AS last_activity_ns,
        loop,
        pending_approvals
    FROM runs
    WHERE (status IS NULL OR status = $started)
      AND ($service::VARCHAR IS NULL OR service = $service)
)
SELECT
    service,
    count(*) AS in_flight,
    count(*) FILTER (
        WHERE last_activity_ns < $stuck_before AND pending_approvals = 0
    ) AS stuck,
    count(*) FILTER (WHERE loop) AS looping,
    count(*) FILTER (
        WHERE last_activity_ns < $stuck_before AND pending_approvals = 0
          AND last_activity_ns >= $stuck_since
    ) AS stuck_new,
    count(*) FILTER (WHERE loop AND first_seen_ns >= $since) AS looping_new
FROM r
GROUP BY service;
