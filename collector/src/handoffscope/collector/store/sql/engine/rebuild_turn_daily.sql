-- The later turns per day, service and inputs, counted from turns (engine/turns.py,
-- `rebuild`); '' for NULL and the day as upsert_turn_daily.sql keys them.
INSERT INTO turn_daily (day, service, start_agent, first_to_agent, previous_final, turns)
SELECT
    CAST((first_seen_ns - first_seen_ns % 86400000000000) / 86400000000000 AS BIGINT),
    coalesce(service, ''), coalesce(start_agent, ''), coalesce(first_to_agent, ''),
    coalesce(previous_final, ''), count(*)
FROM turns
WHERE has_previous
GROUP BY 1, 2, 3, 4, 5;
