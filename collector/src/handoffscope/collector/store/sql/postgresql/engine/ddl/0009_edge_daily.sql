-- PostgreSQL engine step 9: edge_daily, control-flow rollup per day, for windows past the hourly one.
-- The same columns, in the same order, as the DuckDB table after every engine step
-- (store/sql/engine/ddl/): the engine's rows are inserted by position.
CREATE TABLE edge_daily (
    day                     bigint NOT NULL,
    service                 text NOT NULL,
    from_agent              text NOT NULL,
    to_agent                text NOT NULL,
    verdict                 text NOT NULL,
    undeclared              boolean NOT NULL,
    handoffs                bigint NOT NULL,
    PRIMARY KEY (day, service, from_agent, to_agent, verdict, undeclared)
);
