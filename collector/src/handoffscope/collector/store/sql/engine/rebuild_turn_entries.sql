-- Entry agents per service, counted afresh (engine/turns.py, `rebuild`): the runs
-- declaring each (once a run, whether in a conversation or not), and the conversations'
-- first runs starting at it.
INSERT INTO turn_entries (service, agent, declared, firsts)
SELECT service, agent, sum(declared), sum(firsts)
FROM (
    SELECT DISTINCT coalesce(service, '') AS service, run_id, unnest(entry_agents) AS agent,
        1 AS declared, 0 AS firsts
    FROM runs
    UNION ALL
    SELECT coalesce(service, ''), run_id, start_agent, 0, 1
    FROM turns
    WHERE NOT has_previous AND start_agent IS NOT NULL
) AS e
WHERE agent IS NOT NULL
GROUP BY 1, 2;
