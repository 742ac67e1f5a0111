-- Append the turns a step changed (hs_turn_changed: the rows of changed_turns.sql, new_*
-- as they are now).
INSERT INTO turns (
    run_id, run_key, conversation_id, service, first_seen_ns, order_ns, start_agent,
    first_to_agent, final_agent, has_previous, previous_final
)
SELECT
    new_run_id, new_run_key, new_conversation_id, new_service, new_first_seen_ns,
    new_order_ns, new_start_agent, new_first_to_agent, new_final_agent, new_has_previous,
    new_previous_final
FROM hs_turn_changed
WHERE new_run_id IS NOT NULL;
