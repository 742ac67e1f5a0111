-- PostgreSQL engine step 5: handoff_daily, the weekly review's rollup: handoffs per day, service, edge and reason.
-- The same columns, in the same order, as the DuckDB table after every engine step
-- (store/sql/engine/ddl/): the engine's rows are inserted by position.
CREATE TABLE handoff_daily (
    day                     date NOT NULL,
    service                 text NOT NULL,
    from_agent              text NOT NULL,
    to_agent                text NOT NULL,
    reason                  text NOT NULL,
    handoffs                bigint NOT NULL,
    PRIMARY KEY (day, service, from_agent, to_agent, reason)
);
