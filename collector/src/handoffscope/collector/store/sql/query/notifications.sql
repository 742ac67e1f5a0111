-- Notifications recorded for the runs in $run_ids (run detail, approvals): what was sent
-- to whom and when, oldest first. The table is small (a few rows per run that needed a
-- person), so a list filter is enough.
SELECT event_key, destination, event, run_id, handoff_id, status, attempts, created_ns, sent_ns
FROM notifications
WHERE list_contains($run_ids, run_id)
ORDER BY created_ns, event, destination;
