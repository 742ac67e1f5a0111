-- PostgreSQL store step 2: every accepted evidence span, one row each — the same columns,
-- names and meaning as the DuckDB table (store/sql/ddl/0002_spans.sql and the steps that
-- added columns): one typed column per contract attribute, and nowhere to put content.
--
-- Partitioned by the day of start_ns (UTC, epoch ns): retention drops whole days, and a
-- re-sent span keeps its start time, so its copy lands in the same partition. That is
-- what lets the primary key — which must contain the partition key — dedupe across
-- collectors: two collectors inserting the same span meet on one unique index, and the
-- later insert skips the row (ON CONFLICT DO NOTHING in insert_spans.sql). Day
-- partitions are created on demand (postgres_store.py); spans older than the oldest day
-- kept go to spans_old, which retention empties by end_ns.
CREATE TABLE spans (
    trace_id                        text NOT NULL,
    span_id                         text NOT NULL,
    name                            text NOT NULL,
    service                         text NOT NULL,
    start_ns                        bigint NOT NULL,
    end_ns                          bigint NOT NULL,
    received_ns                     bigint NOT NULL,
    handoff_run_id                  text,
    run_status                      text,
    run_final_agent                 text,
    run_turns                       bigint,
    run_started                     bigint,
    handoff_id                      text,
    handoff_from_agent              text,
    handoff_to_agent                text,
    handoff_turn                    bigint,
    handoff_fingerprint             text,
    handoff_state_version           bigint,
    handoff_history_items_forwarded bigint,
    handoff_history_items_total     bigint,
    handoff_route_declared          boolean,
    handoff_tool_call_id            text,
    handoff_context_required_keys   text[],
    handoff_contract_version        text,
    handoff_budget_remaining        bigint,
    handoff_reason                  text,
    handoff_route_goto              text,
    handoff_control_before          text,
    handoff_control_after           text,
    handoff_tool_call_closed        boolean,
    handoff_destination_started     boolean,
    handoff_context_missing_keys    text[],
    handoff_verdict                 text,
    handoff_rejection_reason        text,
    handoff_rejection_fields        text[],
    handoff_destination_claims_done boolean,
    wait_owner                      text,
    wait_reason                     text,
    wait_deadline                   bigint,
    wait_resume_token_id            text,
    wait_state_persisted            boolean,
    wait_decision                   text,
    outcome_verifier                text,
    outcome_result                  text,
    outcome_receipt_id              text,
    gen_ai_agent_name               text,
    gen_ai_conversation_id          text,
    run_outcome_required            boolean,
    handoff_kind                    text,
    handoff_unobserved              text[],
    handoff_source                  text,
    commit_seq                      bigint,
    PRIMARY KEY (trace_id, span_id, start_ns)
) PARTITION BY RANGE (start_ns);
CREATE TABLE spans_old PARTITION OF spans DEFAULT;
CREATE INDEX spans_commit_seq ON spans (commit_seq);
CREATE INDEX spans_run_id ON spans (handoff_run_id);
