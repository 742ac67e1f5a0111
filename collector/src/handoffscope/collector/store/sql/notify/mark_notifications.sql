-- Notifier: the outcome of one post to one destination (it may carry several events).
-- $sent_ns is NULL unless the destination answered 2xx.
UPDATE notifications
SET status = $status, attempts = $attempts, sent_ns = $sent_ns
WHERE destination = $destination
  AND list_contains($keys, event_key);
