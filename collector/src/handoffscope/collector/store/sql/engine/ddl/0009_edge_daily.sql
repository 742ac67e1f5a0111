-- Engine step 9: the hourly edge rollup (step 7) folded by UTC day, kept with the same
-- deltas. A 30-day window then reads 30 buckets per edge instead of 720; the hourly
-- table still serves the whole hours at the window's ends, and `handoffs` the rest.
-- day = first_seen_ns // 86400e9.
CREATE TABLE edge_daily (
    day        BIGINT NOT NULL,
    service    VARCHAR NOT NULL,
    from_agent VARCHAR NOT NULL,
    to_agent   VARCHAR NOT NULL,
    verdict    VARCHAR NOT NULL,
    undeclared BOOLEAN NOT NULL,
    handoffs   BIGINT NOT NULL,
    PRIMARY KEY (day, service, from_agent, to_agent, verdict, undeclared)
);
