-- PostgreSQL engine step 6: services, every service seen, and when it first reported an outcome.
-- The same columns, in the same order, as the DuckDB table after every engine step
-- (store/sql/engine/ddl/): the engine's rows are inserted by position.
CREATE TABLE services (
    service                 text NOT NULL,
    first_outcome_ns        bigint,
    PRIMARY KEY (service)
);
