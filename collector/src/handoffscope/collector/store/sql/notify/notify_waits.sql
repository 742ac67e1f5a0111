-- Notifier: the events open and expired waits make at $now that are not recorded yet.
-- The waits and verdicts of approvals.sql (what the Approvals page lists), one row per
-- (wait, event): an undecided wait with every fact tells its owner ($checkpointed), an
-- overdue one also escalates ($overdue), an uncertain one says so ($uncertain). Which
-- events a wait makes depends on its evidence only, not on when the notifier looked.
-- The anti-join against `notifications` keeps a steady poll cheap: only new events
-- come back to Python, however many waits stay open; $limit bounds one poll's work
-- (the oldest first; the rest are found by the next poll).
-- Fresh events only (--notify-max-age-seconds): a wait checkpointed before $fresh_since
-- tells nobody it exists (history, backfill), and an overdue one escalates only when its
-- deadline passed since then; $fresh_since is 0 for no bound.
-- Acknowledged waits are left out while the acknowledgement is active (docs/alerts.md,
-- "Acknowledge and silence"): an `approval_overdue` acknowledgement silences that wait's
-- $overdue and $uncertain events (not its $checkpointed one, which only tells the owner it
-- exists). Not found, so not recorded either: an event still fresh when the
-- acknowledgement expires or is cleared is found and sent then.
WITH w AS (
    SELECT
        run_id, handoff_id, service, from_agent, to_agent, owner, reason, deadline_ns,
        checkpointed_ns, missing, decision,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, NULL::BIGINT, NULL::VARCHAR, $now) AS verdict_now
    FROM waits
),
e AS (
    SELECT
        *,
        unnest(
            CASE
                WHEN verdict_now = $waiting_verdict AND decision IS NULL
                 AND checkpointed_ns >= $fresh_since THEN [$checkpointed]
                WHEN verdict_now = $overdue_verdict AND decision IS NULL
                 AND checkpointed_ns >= $fresh_since THEN [$checkpointed, $overdue]
                WHEN verdict_now = $overdue_verdict AND deadline_ns >= $fresh_since
                 THEN [$overdue]
                WHEN verdict_now = $uncertain_verdict AND checkpointed_ns >= $fresh_since
                 THEN [$uncertain]
                ELSE []::VARCHAR[]
            END
        ) AS event
    FROM w
)
SELECT e.*
FROM e
ANTI JOIN notifications n
    ON n.event = e.event
   AND n.run_id = e.run_id
   AND n.handoff_id IS NOT DISTINCT FROM e.handoff_id
WHERE NOT EXISTS (
    SELECT 1 FROM acknowledgements a
    WHERE a.event = $overdue
      AND e.event IN ($overdue, $uncertain)
      AND a.run_id = e.run_id
      AND a.handoff_id = e.handoff_id
      AND a.cleared_ns IS NULL
      AND a.until_ns > $now
)
ORDER BY e.checkpointed_ns, e.run_id, e.handoff_id, e.event
LIMIT $limit;
