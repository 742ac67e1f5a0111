-- Engine step 3: one row per run — run facts, the path, loops, completion, and the
-- run's verdict timeline (the worst of its handoffs' timelines and its run-level facts).
-- Rewritten like handoffs (delete by row_seq, append), so it stays in update order.
-- min/max_received_ns bound the run's spans in arrival order: reading a run's spans back
-- (run detail, reloading an evicted run) scans only the row groups of that window.
CREATE TABLE runs (
    row_seq           BIGINT NOT NULL,
    run_id            VARCHAR NOT NULL,
    run_key           BIGINT NOT NULL,
    service           VARCHAR,
    first_seen_ns     BIGINT NOT NULL,
    last_seen_ns      BIGINT NOT NULL,
    min_received_ns   BIGINT,
    max_received_ns   BIGINT,
    started_ns        BIGINT,
    ended_ns          BIGINT,            -- end of the span that carried the terminal status
    last_handoff_ns   BIGINT,
    status            VARCHAR,           -- latest run.status
    final_agent       VARCHAR,
    turns             BIGINT,
    current_agent     VARCHAR,           -- latest control.after / admitted to_agent
    handoff_count     INTEGER NOT NULL,
    path              VARCHAR[] NOT NULL,
    loop              BOOLEAN NOT NULL,
    loop_cycle        VARCHAR[] NOT NULL,
    loop_repeats      INTEGER NOT NULL,
    false_complete    BOOLEAN NOT NULL,
    failed            BOOLEAN NOT NULL,  -- run.status failed or max_turns
    outcome_result    VARCHAR,           -- merged verifier result of the run
    verifier          VARCHAR,
    pending_approvals INTEGER NOT NULL,
    verdict           VARCHAR NOT NULL,
    flip1_ns          BIGINT,
    flip1_verdict     VARCHAR,
    flip2_ns          BIGINT,
    flip2_verdict     VARCHAR
);
