-- Notifier: the events runs make at $now that are not recorded yet, one row per (run,
-- event). Runs seen since $since that loop, any status ($looping); runs still in flight
-- (no terminal run.status, as in live_runs.sql), silent since before $stuck_before and
-- not waiting on a person ($stuck; pending_approvals > 0 is the wait events' business) —
-- the filter health_runs.sql counts for /metrics. The anti-join against
-- `notifications` returns only new events, so a steady poll stays cheap; $limit bounds
-- one poll's work (the oldest first; the rest are found by the next poll).
-- Fresh events only: a loop whose run was last seen before $fresh_since, or a run that
-- became stuck before then (silent since before $stuck_fresh_since = $fresh_since − the
-- stuck delay), is history — backfill, or a run the notifier never saw while it was
-- down — and pages nobody (--notify-max-age-seconds; $fresh_since is 0 for no bound).
-- PostgreSQL: ARRAY[...] / array_cat for list literals, NOT EXISTS for ANTI JOIN.
-- Acknowledged targets are left out while the acknowledgement is active (docs/alerts.md,
-- "Acknowledge and silence"): not found, so not recorded either, and an event still fresh
-- when the acknowledgement expires or is cleared is found and sent then.
WITH r AS (
    SELECT
        run_id, service, current_agent, status, loop, loop_cycle, pending_approvals, last_seen_ns,
        coalesce(last_handoff_ns, last_seen_ns) AS last_activity_ns,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict_now
    FROM runs
    WHERE last_seen_ns >= $since
),
e AS (
    SELECT
        *,
        unnest(
            array_cat(
                CASE
                    WHEN loop AND last_seen_ns >= $fresh_since THEN ARRAY[$looping::text]
                    ELSE '{}'::text[]
                END,
                CASE
                    WHEN hs_stuck(
                        status IS NULL OR status = $started,
                        last_activity_ns,
                        pending_approvals,
                        $stuck_before
                    )
                     AND last_activity_ns >= $stuck_fresh_since
                    THEN ARRAY[$stuck::text]
                    ELSE '{}'::text[]
                END
            )
        ) AS event
    FROM r
)
SELECT e.*
FROM e
WHERE NOT EXISTS (
    SELECT 1 FROM notifications n
    WHERE n.event = e.event
      AND n.run_id = e.run_id
      AND n.handoff_id IS NULL
)
  AND NOT EXISTS (
    SELECT 1 FROM acknowledgements a
    WHERE a.event = e.event
      AND a.run_id = e.run_id
      AND a.handoff_id IS NULL
      AND a.cleared_ns IS NULL
      AND a.until_ns > $now
)
ORDER BY e.last_activity_ns, e.run_id, e.event
LIMIT $limit;
