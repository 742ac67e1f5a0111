-- Every conversation's turns, told from the stored runs at once (engine/turns.py,
-- `rebuild`: a store upgraded to engine step 25, or a history written without the
-- judge). The same rule as changed_turns.sql, over every conversation.
INSERT INTO turns (
    run_id, run_key, conversation_id, service, first_seen_ns, order_ns, start_agent,
    first_to_agent, final_agent, has_previous, previous_final
)
SELECT
    r.run_id, r.run_key, r.conversation_id, r.service, r.first_seen_ns,
    coalesce(r.started_ns, r.first_seen_ns),
    r.start_agent, r.first_to_agent,
    coalesce(r.final_agent, r.current_agent),
    lag(r.run_id) OVER w IS NOT NULL,
    lag(coalesce(r.final_agent, r.current_agent)) OVER w
FROM runs AS r
WHERE r.conversation_id IS NOT NULL
WINDOW w AS (
    PARTITION BY r.conversation_id
    ORDER BY coalesce(r.started_ns, r.first_seen_ns), r.run_id
);
