-- Notifier, hourly: forget settled notifications older than the retention window. The
-- events they answered have left the derived tables by then, so they cannot recur.
DELETE FROM notifications
WHERE status <> 'pending'
  AND created_ns < $cutoff;
