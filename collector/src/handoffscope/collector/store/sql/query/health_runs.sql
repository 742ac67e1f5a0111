-- Runs in flight and runs that looped, per service, counted: the figures behind /metrics'
-- run gauges and the Live board's tiles (GET /api/v1/live `board`), so both say the same.
-- In flight: no terminal run.status yet, however old the last evidence — a run stuck
-- for an hour is still in flight, and must not fall off the board as it ages.
-- stuck: silent since before $stuck_before (now − grace) and not held by a person (a run
-- with an open or expired wait, pending_approvals > 0, is counted by the approvals
-- figures instead: silence is what a wait looks like).
-- looping: the run's loop fact is set (find_loops over the run) and it is in flight or
-- its last evidence came since $looped_since: a loop usually ends within seconds at its
-- turn limit, so "looping now" counting in-flight runs only read 0 while loops ended
-- every minute. looping_in_flight: of those, the ones still in flight. runs.sql's
-- `looping` state is the same rule, so the tile's list holds exactly these runs.
-- *_new: the ones that became so inside the window [$since, now) — the trend.
-- $service is NULL for every service.
WITH r AS (
    SELECT
        service,
        first_seen_ns,
        coalesce(last_handoff_ns, last_seen_ns) AS last_activity_ns,
        loop,
        pending_approvals,
        (status IS NULL OR status = $started) AS in_flight
    FROM runs
    WHERE ((status IS NULL OR status = $started) OR (loop AND last_seen_ns >= $looped_since))
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
)
SELECT
    service,
    count(*) FILTER (WHERE in_flight) AS in_flight,
    count(*) FILTER (
        WHERE hs_stuck(in_flight, last_activity_ns, pending_approvals, $stuck_before)
    ) AS stuck,
    count(*) FILTER (WHERE loop) AS looping,
    count(*) FILTER (
        WHERE hs_stuck(in_flight, last_activity_ns, pending_approvals, $stuck_before)
          AND last_activity_ns >= $stuck_since
    ) AS stuck_new,
    count(*) FILTER (WHERE loop AND first_seen_ns >= $since) AS looping_new,
    count(*) FILTER (WHERE loop AND in_flight) AS looping_in_flight
FROM r
GROUP BY service;
