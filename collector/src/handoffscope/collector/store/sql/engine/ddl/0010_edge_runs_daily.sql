-- Engine step 10: the newest runs per edge and UTC day (step 8 folded by day).
CREATE TABLE edge_runs_daily (
    day        BIGINT NOT NULL,
    service    VARCHAR NOT NULL,
    from_agent VARCHAR NOT NULL,
    to_agent   VARCHAR NOT NULL,
    runs       VARCHAR[] NOT NULL,
    PRIMARY KEY (day, service, from_agent, to_agent)
);
