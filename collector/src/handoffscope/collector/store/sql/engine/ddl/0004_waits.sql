-- Engine step 4: waits that are still open (undecided) or expired — what the approvals
-- view lists. A decided wait leaves this table, so it stays small whatever the history
-- and the approvals query needs no time filter. handoff_id is NULL for a run-level wait.
-- The timeline has at most one flip: the deadline turns it into approval_overdue.
CREATE TABLE waits (
    row_seq          BIGINT NOT NULL,
    run_id           VARCHAR NOT NULL,
    run_key          BIGINT NOT NULL,
    handoff_id       VARCHAR,
    service          VARCHAR,
    from_agent       VARCHAR,
    to_agent         VARCHAR,
    owner            VARCHAR,
    reason           VARCHAR,
    deadline_ns      BIGINT,
    resume_token_id  VARCHAR,
    state_persisted  BOOLEAN,
    decision         VARCHAR,
    checkpointed_ns  BIGINT NOT NULL,
    missing          VARCHAR[] NOT NULL,  -- which of the five wait facts are absent
    verdict          VARCHAR NOT NULL,
    flip1_ns         BIGINT,
    flip1_verdict    VARCHAR
);
