-- Engine step 8: the newest runs (up to 20, newest first) with a handoff on each edge in
-- each hour, for "runs behind an edge" without scanning the window's handoffs.
-- Appended as handoffs are first seen; a run may repeat if its handoffs on the same edge
-- and hour arrived in different batches (the API keeps distinct ids).
CREATE TABLE edge_runs (
    hour       BIGINT NOT NULL,
    service    VARCHAR NOT NULL,
    from_agent VARCHAR NOT NULL,
    to_agent   VARCHAR NOT NULL,
    runs       VARCHAR[] NOT NULL,
    PRIMARY KEY (hour, service, from_agent, to_agent)
);
