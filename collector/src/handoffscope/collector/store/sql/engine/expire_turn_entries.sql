-- Retention: the entry agents declared by the runs expire_runs.sql is about to delete
-- leave turn_entries (each run counted once per agent, as engine/turns.py adds them).
INSERT INTO turn_entries (service, agent, declared, firsts)
SELECT service, agent, -count(*), 0
FROM (
    SELECT DISTINCT coalesce(service, '') AS service, run_id, unnest(entry_agents) AS agent
    FROM runs
    WHERE last_seen_ns < $cutoff
) AS e
WHERE agent IS NOT NULL
GROUP BY service, agent
ON CONFLICT (service, agent) DO UPDATE SET declared = turn_entries.declared + excluded.declared;
