-- Notifier: the outcome of one post to one destination (it may carry several events).
-- $sent_ns is NULL unless the destination answered 2xx.
-- PostgreSQL: = ANY for list_contains.
UPDATE notifications
SET status = $status, attempts = $attempts, sent_ns = $sent_ns
WHERE destination = $destination
  AND event_key = ANY($keys::text[]);
