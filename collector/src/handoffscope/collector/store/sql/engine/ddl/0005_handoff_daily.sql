-- Engine step 5: handoffs per day, service, edge and rejection reason — the weekly
-- review's source. Eight weeks over ten million handoffs would be a full scan; this
-- rollup is a few thousand rows. The engine keeps it exact with +1/-1 deltas as a
-- handoff's day, edge or rejection changes (rejections are never time-based, so a
-- stored count does not go stale as time passes).
-- reason: 'route' for route_rejected, the rejection.reason for contract_rejected, ''
-- for every other verdict. Empty strings stand for unknown agents/services because a
-- PRIMARY KEY column cannot be NULL; the table is small, so the key is affordable and
-- lets upsert_daily.sql add deltas in one statement.
CREATE TABLE handoff_daily (
    day        DATE NOT NULL,     -- UTC day of the handoff's first-seen time
    service    VARCHAR NOT NULL,
    from_agent VARCHAR NOT NULL,
    to_agent   VARCHAR NOT NULL,
    reason     VARCHAR NOT NULL,
    handoffs   BIGINT NOT NULL,
    PRIMARY KEY (day, service, from_agent, to_agent, reason)
);
