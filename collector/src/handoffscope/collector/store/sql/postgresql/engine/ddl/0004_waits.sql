-- PostgreSQL engine step 4: waits, one row per wait for a person (approval): its facts and timeline.
-- The same columns, in the same order, as the DuckDB table after every engine step
-- (store/sql/engine/ddl/): the engine's rows are inserted by position.
-- DuckDB finds rows by row-group min/max; PostgreSQL needs indexes for the same reads.
CREATE TABLE waits (
    row_seq                 bigint NOT NULL,
    run_id                  text NOT NULL,
    run_key                 bigint NOT NULL,
    handoff_id              text,
    service                 text,
    from_agent              text,
    to_agent                text,
    owner                   text,
    reason                  text,
    deadline_ns             bigint,
    resume_token_id         text,
    state_persisted         boolean,
    decision                text,
    checkpointed_ns         bigint NOT NULL,
    missing                 text[] NOT NULL,
    verdict                 text NOT NULL,
    flip1_ns                bigint,
    flip1_verdict           text
);
CREATE UNIQUE INDEX waits_row_seq ON waits (row_seq);
CREATE INDEX waits_run_key ON waits (run_key);
