-- Store step 11: operators' acknowledgements ("silences", docs/alerts.md, "Acknowledge and
-- silence"): someone has a stuck run, a loop or an overdue wait in hand until a time.
-- While one is active (until_ns after now, cleared_ns NULL) the notifier does not send
-- that target's event and /metrics' stuck / looping / overdue gauges leave it out.
-- A new acknowledgement of a target clears the active one (ack/clear_acknowledgement.sql)
-- and adds a row, so the table is also the history `GET /api/v1/acknowledgements?active=false`
-- lists. Nothing here is content: ids, a semconv event, a note code (semconv.ACK_NOTES),
-- and `by_name`, the operator's handle or e-mail (an identity, checked against
-- ^[A-Za-z0-9_.@+ -]{1,64}$ before it is stored). Tiny: rows a person made by hand.
-- No PRIMARY KEY: history keeps several rows per target.
CREATE TABLE acknowledgements (
    event       VARCHAR NOT NULL,  -- semconv.NOTIFY_RUN_STUCK / _RUN_LOOPING / _APPROVAL_OVERDUE
    run_id      VARCHAR NOT NULL,
    handoff_id  VARCHAR,           -- approval_overdue only
    service     VARCHAR,           -- the run's service.name when acknowledged
    by_name     VARCHAR NOT NULL,
    note        VARCHAR NOT NULL,  -- semconv.ACK_NOTES
    created_ns  BIGINT NOT NULL,
    until_ns    BIGINT NOT NULL,
    cleared_ns  BIGINT             -- set by DELETE /api/v1/acknowledgements or a replacement
);
