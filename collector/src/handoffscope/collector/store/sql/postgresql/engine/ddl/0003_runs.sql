-- PostgreSQL engine step 3: runs, one row per run: run facts, path, loops, completion and the run's timeline.
-- The same columns, in the same order, as the DuckDB table after every engine step
-- (store/sql/engine/ddl/): the engine's rows are inserted by position.
-- DuckDB finds rows by row-group min/max; PostgreSQL needs indexes for the same reads.
CREATE TABLE runs (
    row_seq                 bigint NOT NULL,
    run_id                  text NOT NULL,
    run_key                 bigint NOT NULL,
    service                 text,
    first_seen_ns           bigint NOT NULL,
    last_seen_ns            bigint NOT NULL,
    min_received_ns         bigint,
    max_received_ns         bigint,
    started_ns              bigint,
    ended_ns                bigint,
    last_handoff_ns         bigint,
    status                  text,
    final_agent             text,
    turns                   bigint,
    current_agent           text,
    handoff_count           integer NOT NULL,
    path                    text[] NOT NULL,
    loop                    boolean NOT NULL,
    loop_cycle              text[] NOT NULL,
    loop_repeats            integer NOT NULL,
    false_complete          boolean NOT NULL,
    failed                  boolean NOT NULL,
    outcome_result          text,
    verifier                text,
    pending_approvals       integer NOT NULL,
    verdict                 text NOT NULL,
    flip1_ns                bigint,
    flip1_verdict           text,
    flip2_ns                bigint,
    flip2_verdict           text,
    delegation_count        integer,
    unverified              boolean,
    verification_expected   boolean,
    unobserved              text[],
    handoffs_capped         boolean,
    source                  text
);
CREATE UNIQUE INDEX runs_row_seq ON runs (row_seq);
CREATE INDEX runs_run_key ON runs (run_key);
CREATE INDEX runs_last_seen ON runs (last_seen_ns);
CREATE INDEX runs_max_received ON runs (max_received_ns);
