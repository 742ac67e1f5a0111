-- Notifications recorded for the runs in $run_ids (run detail, approvals): what was sent
-- to whom and when, oldest first. The table is small (a few rows per run that needed a
-- person), so a list filter is enough. Events found in the same poll keep the order of
-- $events (semconv.NOTIFY_EVENTS: a wait's checkpoint before its escalation).
-- PostgreSQL: = ANY / array_position.
SELECT event_key, destination, event, run_id, handoff_id, status, attempts, created_ns, sent_ns
FROM notifications
WHERE run_id = ANY($run_ids::text[])
  AND status <> 'unrouted'  -- remembered so it is not found again, never sent
ORDER BY created_ns, array_position($events::text[], event), destination;
