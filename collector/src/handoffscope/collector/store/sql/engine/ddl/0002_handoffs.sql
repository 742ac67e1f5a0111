-- Engine step 2: one row per handoff — its merged evidence and its verdict timeline.
-- Written by the health engine inside the writer's transaction, so it commits with the
-- spans it was derived from. A changed handoff is deleted by `row_seq` and re-appended
-- (DuckDB appends cheaply; rewriting in place would not be), so rows stay roughly in
-- update order and row-group min/max on first_seen_ns keeps time filters cheap.
-- `row_seq` is a per-table counter the engine assigns; row groups hold contiguous
-- ranges of it, which makes delete_handoffs.sql touch only the newest row groups.
-- `run_key` is a stable 64-bit hash of run_id: comparing integers is what makes a
-- lookup by run cheap without an index (indexes cost memory and insert speed).
-- Every column classify() reads is here, so the API can rebuild the evidence and say
-- *why* with the exact time of the query. unhealthy_from_ns turns "is it unhealthy now?"
-- into one integer compare (INT64 minimum when unhealthy from the start).
CREATE TABLE handoffs (
    row_seq                 BIGINT NOT NULL,
    run_id                  VARCHAR NOT NULL,
    run_key                 BIGINT NOT NULL,
    handoff_id              VARCHAR NOT NULL,
    service                 VARCHAR,
    seq                     INTEGER NOT NULL,  -- position in the run, 1-based (turn, then first seen)
    from_agent              VARCHAR,
    to_agent                VARCHAR,
    turn                    BIGINT,
    first_seen_ns           BIGINT NOT NULL,   -- earliest evidence span start: "requested at"
    last_seen_ns            BIGINT NOT NULL,
    fingerprint             VARCHAR,
    state_version           BIGINT,
    history_items_forwarded BIGINT,
    history_items_total     BIGINT,
    route_declared          BOOLEAN,
    route_goto              VARCHAR,
    control_before          VARCHAR,
    control_after           VARCHAR,
    tool_call_id            VARCHAR,
    tool_call_closed        BOOLEAN,
    required_keys           VARCHAR[],
    missing_keys            VARCHAR[],
    destination_started     BOOLEAN,
    rejection_reason        VARCHAR,
    rejection_fields        VARCHAR[],
    reason                  VARCHAR,
    contract_version        VARCHAR,
    loop                    BOOLEAN NOT NULL,  -- set by find_loops over the run
    run_stopped             BOOLEAN NOT NULL,  -- the run ended at its turn limit (max_turns)
    claims_done             BOOLEAN NOT NULL,  -- run completed here, or destination claimed done while waiting
    outcome_result          VARCHAR,           -- the result judged against claims_done
    wait_seen               BOOLEAN NOT NULL,
    wait_owner              VARCHAR,
    wait_reason             VARCHAR,
    wait_deadline_ns        BIGINT,
    wait_resume_token_id    VARCHAR,
    wait_state_persisted    BOOLEAN,
    wait_decision           VARCHAR,
    verdict                 VARCHAR NOT NULL,  -- before any flip
    flip1_ns                BIGINT,
    flip1_verdict           VARCHAR,
    flip2_ns                BIGINT,
    flip2_verdict           VARCHAR,
    unhealthy_from_ns       BIGINT             -- when the timeline first holds a failure verdict (NULL: never)
);
