-- PostgreSQL engine step 8: edge_runs, the newest runs per hour and edge (20 at most).
-- The same columns, in the same order, as the DuckDB table after every engine step
-- (store/sql/engine/ddl/): the engine's rows are inserted by position.
CREATE TABLE edge_runs (
    hour                    bigint NOT NULL,
    service                 text NOT NULL,
    from_agent              text NOT NULL,
    to_agent                text NOT NULL,
    runs                    text[] NOT NULL,
    PRIMARY KEY (hour, service, from_agent, to_agent)
);
