-- A step's later turns, +1 as they are now and -1 as they were stored (hs_turn_changed:
-- the rows of changed_turns.sql), summed per key (ON CONFLICT may see a key once) and
-- added to turn_daily. '' stands for NULL in the key. The UTC day: the ns a day starts
-- at over a day's ns — exact in PostgreSQL's integer division, and rounded to the whole
-- number it is from DuckDB's double (one statement for both databases).
INSERT INTO turn_daily (day, service, start_agent, first_to_agent, previous_final, turns)
SELECT day, service, start_agent, first_to_agent, previous_final, sum(turns)
FROM (
    SELECT
        CAST((new_first_seen_ns - new_first_seen_ns % 86400000000000) / 86400000000000
            AS BIGINT) AS day,
        coalesce(new_service, '') AS service,
        coalesce(new_start_agent, '') AS start_agent,
        coalesce(new_first_to_agent, '') AS first_to_agent,
        coalesce(new_previous_final, '') AS previous_final,
        1 AS turns
    FROM hs_turn_changed
    WHERE new_has_previous
    UNION ALL
    SELECT
        CAST((old_first_seen_ns - old_first_seen_ns % 86400000000000) / 86400000000000
            AS BIGINT),
        coalesce(old_service, ''), coalesce(old_start_agent, ''),
        coalesce(old_first_to_agent, ''), coalesce(old_previous_final, ''), -1
    FROM hs_turn_changed
    WHERE old_has_previous
) AS d
GROUP BY 1, 2, 3, 4, 5
HAVING sum(turns) <> 0
ON CONFLICT (day, service, start_agent, first_to_agent, previous_final)
DO UPDATE SET turns = turn_daily.turns + excluded.turns;
