-- The later turns per day, service and inputs, counted from turns (engine/turns.py,
-- `rebuild`); '' for NULL, as the judge's deltas key them.
INSERT INTO turn_daily (day, service, start_agent, first_to_agent, previous_final, turns)
SELECT
    first_seen_ns // 86400000000000, coalesce(service, ''), coalesce(start_agent, ''),
    coalesce(first_to_agent, ''), coalesce(previous_final, ''), count(*)
FROM turns
WHERE has_previous
GROUP BY 1, 2, 3, 4, 5;
