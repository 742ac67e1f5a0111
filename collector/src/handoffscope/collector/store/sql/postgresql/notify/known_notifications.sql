-- Notifier start-up: every event key already decided per destination (sent, failed or
-- pending), so nothing found again is queued twice; pending rows come back with their
-- payload and attempts to be delivered.
SELECT event_key, destination, status, attempts, payload
FROM notifications
ORDER BY created_ns, event_key;
