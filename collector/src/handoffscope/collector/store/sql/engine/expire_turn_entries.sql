-- Retention: the entry agents declared by the runs expire_runs.sql is about to delete
-- leave turn_entries (each run counted once per agent, as engine/turns.py adds them).
INSERT INTO turn_entries BY NAME
SELECT service, agent, -count(*) AS declared, 0 AS firsts
FROM (
    SELECT DISTINCT coalesce(service, '') AS service, run_id, unnest(entry_agents) AS agent
    FROM runs
    WHERE last_seen_ns < $cutoff
) AS e
WHERE agent IS NOT NULL
GROUP BY service, agent
ON CONFLICT DO UPDATE SET declared = turn_entries.declared + excluded.declared;
