-- Of the items /metrics' gauges and the Live board's tiles count (query/health_runs.sql,
-- query/health_waits.sql), the ones with an active acknowledgement at $now, per service
-- and event: stuck runs ($stuck), looping runs ($looping), overdue waits ($overdue), and
-- uncertain waits ($uncertain: an approval_overdue acknowledgement of a wait silences
-- its wait_uncertain too).
-- /metrics subtracts them (its gauges count only unacknowledged items, so alert rules
-- stop firing for silenced ones); GET /api/v1/live reports them next to its counts.
-- The filters are health_runs.sql's and health_waits.sql's, word for word, so the
-- numbers subtract exactly. $service is NULL for every service.
WITH a AS (
    SELECT DISTINCT event, run_id, handoff_id
    FROM acknowledgements
    WHERE cleared_ns IS NULL
      AND until_ns > $now
),
r AS (
    SELECT
        run_id,
        service,
        coalesce(last_handoff_ns, last_seen_ns) AS last_activity_ns,
        loop,
        pending_approvals,
        (status IS NULL OR status = $started) AS in_flight
    FROM runs
    WHERE ((status IS NULL OR status = $started) OR (loop AND last_seen_ns >= $looped_since))
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
      AND run_id IN (SELECT run_id FROM a)
)
SELECT r.service, CAST($stuck AS VARCHAR) AS event, count(*) AS n
FROM r
JOIN a ON a.event = $stuck AND a.run_id = r.run_id AND a.handoff_id IS NULL
WHERE hs_stuck(r.in_flight, r.last_activity_ns, r.pending_approvals, $stuck_before)
GROUP BY r.service
UNION ALL
SELECT r.service, CAST($looping AS VARCHAR) AS event, count(*) AS n
FROM r
JOIN a ON a.event = $looping AND a.run_id = r.run_id AND a.handoff_id IS NULL
WHERE r.loop
GROUP BY r.service
UNION ALL
SELECT service, event, count(*) AS n
FROM (
    SELECT
        w.service,
        CASE
            WHEN hs_verdict_at(
                w.verdict, w.flip1_ns, w.flip1_verdict, NULL::BIGINT, NULL::VARCHAR, $now
            ) = $overdue_verdict THEN CAST($overdue AS VARCHAR)
            WHEN hs_verdict_at(
                w.verdict, w.flip1_ns, w.flip1_verdict, NULL::BIGINT, NULL::VARCHAR, $now
            ) = $uncertain_verdict THEN CAST($uncertain AS VARCHAR)
        END AS event
    FROM waits w
    JOIN a ON a.event = $overdue AND a.run_id = w.run_id AND a.handoff_id = w.handoff_id
    WHERE ($service::VARCHAR IS NULL OR w.service = $service) AND ($scope::VARCHAR[] IS NULL OR w.service = ANY($scope::VARCHAR[]))
) acked_waits
WHERE event IS NOT NULL
GROUP BY service, event;
