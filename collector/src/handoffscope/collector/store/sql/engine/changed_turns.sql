-- The turns a judge step changed (engine/turns.py): the runs of the conversations the
-- step's runs are in (or were in) put in order again — by start, then run id, as
-- continuity.sql orders them — and set beside the rows stored for them; only the rows
-- that differ come back, new_* as they are now (new_run_id NULL: no longer a turn) and
-- old_* as stored (old_run_id NULL: not stored yet). The step's runs come as the engine
-- wrote them; every other run of those conversations from `turns` (only its own row
-- moves its facts, and then the step carries it).
--   hs_turn_fresh          the step's runs in a conversation, their facts as now
--   hs_turn_runs           (run_key): the step's runs, and runs gone: their stored rows
--                          are no members any more
--   hs_turn_conversations  every conversation those runs are or were in
WITH was_turns AS MATERIALIZED (
    SELECT * FROM turns
    WHERE conversation_id IN (SELECT conversation_id FROM hs_turn_conversations)
),
members AS (
    SELECT
        run_id, run_key, conversation_id, service, first_seen_ns, order_ns, start_agent,
        first_to_agent, final_agent
    FROM hs_turn_fresh
    UNION ALL
    SELECT
        run_id, run_key, conversation_id, service, first_seen_ns, order_ns, start_agent,
        first_to_agent, final_agent
    FROM was_turns AS w
    WHERE NOT EXISTS (SELECT 1 FROM hs_turn_runs AS h WHERE h.run_key = w.run_key)
),
now_turns AS (
    SELECT
        *,
        lag(run_id) OVER w IS NOT NULL AS has_previous,
        lag(final_agent) OVER w AS previous_final
    FROM members
    WINDOW w AS (PARTITION BY conversation_id ORDER BY order_ns, run_id)
)
SELECT
    n.run_id AS new_run_id, n.run_key AS new_run_key, n.conversation_id AS new_conversation_id,
    n.service AS new_service, n.first_seen_ns AS new_first_seen_ns, n.order_ns AS new_order_ns,
    n.start_agent AS new_start_agent, n.first_to_agent AS new_first_to_agent,
    n.final_agent AS new_final_agent,
    n.has_previous AS new_has_previous, n.previous_final AS new_previous_final,
    o.run_id AS old_run_id, o.run_key AS old_run_key, o.service AS old_service,
    o.first_seen_ns AS old_first_seen_ns, o.start_agent AS old_start_agent,
    o.first_to_agent AS old_first_to_agent, o.has_previous AS old_has_previous,
    o.previous_final AS old_previous_final
FROM now_turns AS n
FULL JOIN was_turns AS o ON o.run_id = n.run_id
WHERE n.run_id IS NULL OR o.run_id IS NULL
   OR n.conversation_id IS DISTINCT FROM o.conversation_id
   OR n.service IS DISTINCT FROM o.service
   OR n.first_seen_ns IS DISTINCT FROM o.first_seen_ns
   OR n.order_ns IS DISTINCT FROM o.order_ns
   OR n.start_agent IS DISTINCT FROM o.start_agent
   OR n.first_to_agent IS DISTINCT FROM o.first_to_agent
   OR n.final_agent IS DISTINCT FROM o.final_agent
   OR n.has_previous IS DISTINCT FROM o.has_previous
   OR n.previous_final IS DISTINCT FROM o.previous_final;
