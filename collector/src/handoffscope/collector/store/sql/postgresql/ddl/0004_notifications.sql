-- PostgreSQL store step 4 (DuckDB store step 7): every notification the collector decided to send, one row per
-- (event_key, destination) — the notifier's memory across restarts (docs/alerts.md).
-- event_key names the event (kind, run, handoff), so an event found again on the next
-- poll, or after a restart, is recognised and not sent twice. `payload` is the event's
-- content-free JSON, kept so a delivery still pending at shutdown is resent as it was.
-- Written only by the notifier thread through its own cursor (never inside the
-- writer's transaction, so a slow webhook cannot hold up ingest). Small: a few rows per
-- run that needed a person; sent rows older than the retention window are deleted.
-- No PRIMARY KEY: the notifier keeps the keys it knows in memory and never inserts one
-- twice; updates touch a handful of rows by destination and key.
CREATE TABLE notifications (
    event_key    text NOT NULL,
    destination  text NOT NULL,  -- destination name (routing file), never its URL; '' if unrouted
    event        text NOT NULL,  -- semconv.NOTIFY_EVENTS
    run_id       text NOT NULL,
    handoff_id   text,
    service      text,
    owner        text,
    created_ns   bigint NOT NULL,   -- when the notifier found the event
    status       text NOT NULL,  -- pending / sent / failed (gave up) / unrouted (no route matched)
    attempts     integer NOT NULL,
    sent_ns      bigint,            -- when the destination answered 2xx
    payload      text NOT NULL
);
