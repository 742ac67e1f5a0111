-- Notifier: record newly found events, one row per destination, in one statement
-- (`new_notifications` is an Arrow table registered by the notifier, in DDL order).
INSERT INTO notifications SELECT * FROM new_notifications;
