-- Append the spans of a group commit not stored yet (`new_spans`, registered by the
-- writer), stamped with the group's number, and return the keys of exactly those: a span
-- another collector (or an earlier try of the same export) stored first meets the
-- primary key and is skipped — counted once, however many collectors receive it.
-- The target columns are named: `new_spans` has the columns of spans.SPAN_SCHEMA (semconv
-- order), while ALTER TABLE appended later steps' columns after commit_seq (step 9).
INSERT INTO spans (
    trace_id, span_id, name, service, start_ns, end_ns, received_ns, handoff_run_id,
    run_status, run_final_agent, run_turns, run_started, handoff_id, handoff_from_agent,
    handoff_to_agent, handoff_turn, handoff_fingerprint, handoff_state_version,
    handoff_history_items_forwarded, handoff_history_items_total,
    handoff_route_declared, handoff_tool_call_id, handoff_context_required_keys,
    handoff_contract_version, handoff_budget_remaining, handoff_reason,
    handoff_route_goto, handoff_control_before, handoff_control_after,
    handoff_tool_call_closed, handoff_destination_started, handoff_context_missing_keys,
    handoff_verdict, handoff_rejection_reason, handoff_rejection_fields,
    handoff_destination_claims_done, wait_owner, wait_reason, wait_deadline,
    wait_resume_token_id, wait_state_persisted, wait_decision, outcome_verifier,
    outcome_result, outcome_receipt_id, gen_ai_agent_name, gen_ai_conversation_id,
    run_outcome_required, handoff_kind, handoff_unobserved, handoff_source,
    gen_ai_usage_input_tokens, gen_ai_usage_output_tokens, usage_model_calls,
    gen_ai_request_model, run_entry_agents, a2a_task_id, a2a_task_state, commit_seq
)
SELECT n.*, $commit_seq::bigint FROM new_spans AS n
ON CONFLICT (trace_id, span_id, start_ns) DO NOTHING
RETURNING trace_id, span_id;
