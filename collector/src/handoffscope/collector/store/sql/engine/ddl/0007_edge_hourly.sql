-- Engine step 7: settled handoffs per hour, service, edge, verdict and route declaration —
-- the control-flow view's source. Over a 30-day window the handoffs table holds millions
-- of rows; this rollup holds a few per edge and hour.
-- Only handoffs whose verdict no longer depends on time (no flip in their timeline) are
-- counted here; the few still in flight or waiting are read live from `handoffs`
-- (flip1_ns IS NOT NULL), so the rollup never goes stale as time passes. The engine keeps
-- it exact with +1/-1 deltas as a handoff settles or changes.
-- hour = first_seen_ns // 3600e9 (UTC). '' stands for an unknown service/agent (a
-- PRIMARY KEY column cannot be NULL); the table is small, so the key is affordable.
CREATE TABLE edge_hourly (
    hour       BIGINT NOT NULL,
    service    VARCHAR NOT NULL,
    from_agent VARCHAR NOT NULL,
    to_agent   VARCHAR NOT NULL,
    verdict    VARCHAR NOT NULL,
    undeclared BOOLEAN NOT NULL,  -- handoff.route.declared = false
    handoffs   BIGINT NOT NULL,
    PRIMARY KEY (hour, service, from_agent, to_agent, verdict, undeclared)
);
