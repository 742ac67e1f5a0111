-- A step's entry agents: the declared ones the engine's facts moved (hs_turn_declared,
-- per service and agent), and the conversations' first runs, +1 as they are now and -1
-- as they were stored (hs_turn_changed: the rows of changed_turns.sql); summed per key
-- and added to turn_entries.
INSERT INTO turn_entries (service, agent, declared, firsts)
SELECT service, agent, sum(declared), sum(firsts)
FROM (
    SELECT service, agent, declared, 0 AS firsts FROM hs_turn_declared
    UNION ALL
    SELECT coalesce(new_service, ''), new_start_agent, 0, 1
    FROM hs_turn_changed
    WHERE new_run_id IS NOT NULL AND NOT new_has_previous AND new_start_agent IS NOT NULL
    UNION ALL
    SELECT coalesce(old_service, ''), old_start_agent, 0, -1
    FROM hs_turn_changed
    WHERE old_run_id IS NOT NULL AND NOT old_has_previous AND old_start_agent IS NOT NULL
) AS e
GROUP BY 1, 2
HAVING sum(declared) <> 0 OR sum(firsts) <> 0
ON CONFLICT (service, agent) DO UPDATE SET
    declared = turn_entries.declared + excluded.declared,
    firsts = turn_entries.firsts + excluded.firsts;
