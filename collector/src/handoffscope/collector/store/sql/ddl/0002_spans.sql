-- Store step 2: every accepted evidence span, one row each, as the allowlist left it.
-- Fixed columns first; then ONE typed column per attribute of the contract
-- (semconv.ATTRIBUTES, '.' -> '_'; str -> VARCHAR, int -> BIGINT, bool -> BOOLEAN,
-- str[] -> VARCHAR[]). NULL means the span did not carry the attribute (or carried a
-- value the allowlist refused). There is no other column: content cannot be stored
-- because there is nowhere to put it.
-- No PRIMARY KEY on (trace_id, span_id): it halves insert speed and doubles the file
-- (docs/architecture.md, Storage). Re-sent spans are found before insert by select_stored_keys.sql.
-- No index either: reads are scans that DuckDB prunes by row-group min/max, and rows
-- arrive roughly in start_ns order, which is what makes that pruning work.
CREATE TABLE spans (
    trace_id                        VARCHAR NOT NULL,  -- 32 lowercase hex
    span_id                         VARCHAR NOT NULL,  -- 16 lowercase hex
    name                            VARCHAR NOT NULL,  -- one of semconv.SPAN_NAMES
    service                         VARCHAR NOT NULL,  -- resource service.name
    start_ns                        BIGINT NOT NULL,   -- epoch ns, sender's clock
    end_ns                          BIGINT NOT NULL,   -- epoch ns, sender's clock
    received_ns                     BIGINT NOT NULL,   -- epoch ns, collector's clock
    handoff_run_id                  VARCHAR,
    run_status                      VARCHAR,
    run_final_agent                 VARCHAR,
    run_turns                       BIGINT,
    run_started                     BIGINT,
    handoff_id                      VARCHAR,
    handoff_from_agent              VARCHAR,
    handoff_to_agent                VARCHAR,
    handoff_turn                    BIGINT,
    handoff_fingerprint             VARCHAR,
    handoff_state_version           BIGINT,
    handoff_history_items_forwarded BIGINT,
    handoff_history_items_total     BIGINT,
    handoff_route_declared          BOOLEAN,
    handoff_tool_call_id            VARCHAR,
    handoff_context_required_keys   VARCHAR[],
    handoff_contract_version        VARCHAR,
    handoff_budget_remaining        BIGINT,
    handoff_reason                  VARCHAR,
    handoff_route_goto              VARCHAR,
    handoff_control_before          VARCHAR,
    handoff_control_after           VARCHAR,
    handoff_tool_call_closed        BOOLEAN,
    handoff_destination_started     BOOLEAN,
    handoff_context_missing_keys    VARCHAR[],
    handoff_verdict                 VARCHAR,
    handoff_rejection_reason        VARCHAR,
    handoff_rejection_fields        VARCHAR[],
    handoff_destination_claims_done BOOLEAN,
    wait_owner                      VARCHAR,
    wait_reason                     VARCHAR,
    wait_deadline                   BIGINT,
    wait_resume_token_id            VARCHAR,
    wait_state_persisted            BOOLEAN,
    wait_decision                   VARCHAR,
    outcome_verifier                VARCHAR,
    outcome_result                  VARCHAR,
    outcome_receipt_id              VARCHAR,
    gen_ai_agent_name               VARCHAR,
    gen_ai_conversation_id          VARCHAR
);
